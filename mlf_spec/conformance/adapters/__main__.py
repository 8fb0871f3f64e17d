"""``python -m mlf_spec.conformance.adapters NAME ARGS...``: the testee protocol for an adapter."""

from __future__ import annotations

import sys

from ..protocol import one_shot
from . import load


def main(argv: list[str] | None = None) -> int:
    """Serve the adapter named by the first argument."""
    args = sys.argv[1:] if argv is None else argv
    if not args:
        print("usage: python -m mlf_spec.conformance.adapters NAME (info | decode FORMAT ... | serve)", file=sys.stderr)
        return 2
    return one_shot(load(args[0]), args[1:])


if __name__ == "__main__":
    raise SystemExit(main())
