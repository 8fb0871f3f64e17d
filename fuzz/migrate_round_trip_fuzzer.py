#!/usr/bin/env python3
"""libFuzzer entry point (atheris) for the migrate_round_trip target of mlf_spec.fuzzing.targets.

Run: python fuzz/migrate_round_trip_fuzzer.py [libFuzzer options] [corpus directories]
(OSS-Fuzz and ClusterFuzzLite build it with fuzz/build.sh; see docs/fuzzing.md).
"""

from mlf_spec.fuzzing.engine import fuzz


def main() -> None:
    """Fuzz migrate_round_trip with the options and corpora given on the command line."""
    fuzz("migrate_round_trip")


if __name__ == "__main__":
    main()
