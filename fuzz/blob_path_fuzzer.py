#!/usr/bin/env python3
"""libFuzzer entry point (atheris) for the blob_path target of mlf_spec.fuzzing.targets.

Run: python fuzz/blob_path_fuzzer.py [libFuzzer options] [corpus directories]
(OSS-Fuzz and ClusterFuzzLite build it with fuzz/build.sh; see docs/fuzzing.md).
"""

from mlf_spec.fuzzing.engine import fuzz


def main() -> None:
    """Fuzz blob_path with the options and corpora given on the command line."""
    fuzz("blob_path")


if __name__ == "__main__":
    main()
