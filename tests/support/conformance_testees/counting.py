"""The reference testee (``mlf-spec conformance testee``) that also counts its handshakes: each
``info`` appends a line to the file named by $MLF_COUNT_INFO (tests/conformance/test_handshake.py)."""

from __future__ import annotations

import os
import sys

from mlf_spec.cli import main

if __name__ == "__main__":
    if sys.argv[1:2] == ["info"]:
        with open(os.environ["MLF_COUNT_INFO"], "a", encoding="utf-8") as f:
            f.write("info\n")
    sys.exit(main(["conformance", "testee", *sys.argv[1:]]))
