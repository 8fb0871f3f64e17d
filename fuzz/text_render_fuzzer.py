#!/usr/bin/env python3
"""libFuzzer entry point (atheris) for the text_render target of mlf_spec.fuzzing.targets.

Run: python fuzz/text_render_fuzzer.py [libFuzzer options] [corpus directories]
(OSS-Fuzz and ClusterFuzzLite build it with fuzz/build.sh; see docs/fuzzing.md).
"""

from mlf_spec.fuzzing.engine import fuzz


def main() -> None:
    """Fuzz text_render with the options and corpora given on the command line."""
    fuzz("text_render")


if __name__ == "__main__":
    main()
