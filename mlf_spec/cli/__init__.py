"""The ``mlf-spec`` command line.

Exit status: 0 success; 1 a check found an error-severity finding, or a migration was
refused (a loss not accepted, an impossible migration, an existing output without
--force); 2 the input could not be read (a one-line error on stderr names the file, field
and byte offset).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence

from mlf_spec.errors import MlfError

Handler = Callable[[argparse.Namespace], int]

#: The command modules of this package, in the order their commands are listed.
COMMAND_MODULES = ("params", "blob", "archive", "check", "migrate", "export")


def _build_parser() -> argparse.ArgumentParser:
    from mlf_spec import __version__

    parser = argparse.ArgumentParser(
        prog="mlf-spec",
        description="Read, write, check and convert Apache TVM deployment artifacts "
        "(MLF archives, .params files, module blobs, GraphExecutor JSON).",
    )
    parser.add_argument("--version", action="version", version=f"mlf-spec {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for module in COMMAND_MODULES:
        importlib.import_module(f"mlf_spec.cli.{module}").register(sub)
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

