"""The ``mlf-spec`` command line.

Exit status: 0 success; 1 a check found an error-severity finding, or a migration was
refused (a loss not accepted, an impossible migration, an existing output without
--force); 2 the input could not be read (a one-line error on stderr names the file, field
and byte offset).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from .errors import MlfError

Handler = Callable[[argparse.Namespace], int]


def _build_parser() -> argparse.ArgumentParser:
    from . import __version__, cli_params

    parser = argparse.ArgumentParser(
        prog="mlf-spec",
        description="Read, write, check and convert Apache TVM deployment artifacts "
        "(MLF archives, .params files, module blobs, GraphExecutor JSON).",
    )
    parser.add_argument("--version", action="version", version=f"mlf-spec {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    cli_params.register(sub)
    for name in ("cli_blob", "cli_archive", "cli_migrate"):
        try:
            module = __import__(f"mlf_spec.{name}", fromlist=["register"])
        except ModuleNotFoundError:
            continue
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status."""
    parser = _build_parser()
    args = parser.parse_args(argv)
    handler: Handler = args.handler
    try:
        return handler(args)
    except MlfError as exc:
        # one line, whatever the message embeds (e.g. tarfile's per-method list)
        line = "; ".join(part.strip(" -") for part in str(exc).splitlines() if part.strip())
        print(f"mlf-spec: error: {line}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. piped into head
        return 0
    except KeyboardInterrupt:
        print("mlf-spec: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
