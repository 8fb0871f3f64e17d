#!/bin/bash -eu
# OSS-Fuzz / ClusterFuzzLite build script (runs in gcr.io/oss-fuzz-base/base-builder-python,
# which provides $SRC, $WORK, $OUT, atheris and compile_python_fuzzer).
#
# Installs mlf-spec, packages every fuzz/<target>_fuzzer.py with compile_python_fuzzer
# (PyInstaller: the readers are imported dynamically, so the whole package is collected),
# and gives each fuzzer its seed corpus (<name>_seed_corpus.zip, made deterministically from
# the hypothesis strategies and vectors/ when present), its dictionary (<name>.dict, from
# the spec) and its options (<name>.options: max_len).
cd "$(dirname "$0")/.."

pip3 install .

python3 -m mlf_spec.fuzzing seeds "$WORK/seeds"
python3 -m mlf_spec.fuzzing dicts "$WORK/dicts"

for fuzzer in fuzz/*_fuzzer.py; do
  name=$(basename -s .py "$fuzzer")
  target=${name%_fuzzer}
  compile_python_fuzzer "$fuzzer" --collect-submodules=mlf_spec --collect-data=mlf_spec
  (cd "$WORK/seeds/$target" && zip -q -r "$OUT/${name}_seed_corpus.zip" .)
  cp "$WORK/dicts/$target.dict" "$OUT/$name.dict"
  max_len=$(python3 -c "from mlf_spec.fuzzing.targets import TARGETS; print(TARGETS['$target'].max_len)")
  printf '[libfuzzer]\nmax_len = %s\ndict = %s.dict\n' "$max_len" "$name" > "$OUT/$name.options"
done
