#!/usr/bin/env python3
"""libFuzzer entry point (atheris) for the params_npz target of mlf_spec.fuzzing.targets.

Run: python fuzz/params_npz_fuzzer.py [libFuzzer options] [corpus directories]
(OSS-Fuzz and ClusterFuzzLite build it with fuzz/build.sh; see docs/fuzzing.md).
"""

from mlf_spec.fuzzing.engine import fuzz


def main() -> None:
    """Fuzz params_npz with the options and corpora given on the command line."""
    fuzz("params_npz")


if __name__ == "__main__":
    main()
