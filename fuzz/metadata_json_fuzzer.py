#!/usr/bin/env python3
"""libFuzzer entry point (atheris) for the metadata_json target of mlf_spec.fuzzing.targets.

Run: python fuzz/metadata_json_fuzzer.py [libFuzzer options] [corpus directories]
(OSS-Fuzz and ClusterFuzzLite build it with fuzz/build.sh; see docs/fuzzing.md).
"""

from mlf_spec.fuzzing.engine import fuzz


def main() -> None:
    """Fuzz metadata_json with the options and corpora given on the command line."""
    fuzz("metadata_json")


if __name__ == "__main__":
    main()
