#!/usr/bin/env python3
"""libFuzzer entry point (atheris) for the cache_check target of mlf_spec.fuzzing.targets.

Run: python fuzz/cache_check_fuzzer.py [libFuzzer options] [corpus directories]
(OSS-Fuzz and ClusterFuzzLite build it with fuzz/build.sh; see docs/fuzzing.md).
"""

from mlf_spec.fuzzing.engine import fuzz


def main() -> None:
    """Fuzz cache_check with the options and corpora given on the command line."""
    fuzz("cache_check")


if __name__ == "__main__":
    main()
