#!/bin/bash -eu
# ClusterFuzzLite runs this in the image of .clusterfuzzlite/Dockerfile; the work is in
# fuzz/build.sh, which OSS-Fuzz's build.sh for the project would call the same way.
"$SRC/mlf-spec/fuzz/build.sh"
