"""``mlf-spec diff A B``: what differs between two artifacts of one kind.

Both inputs are recognised by content: two .params files, two MLF archives (tars or
directories), two files holding module blobs (ELF libraries, devc.c, export tars, raw
blobs), two GraphExecutor JSON or two metadata.json documents. Text: one line per change
(``+`` added, ``-`` removed, ``~`` changed) and a verdict; ``--json``: one object,
generated/schemas/diff_output.schema.json. Exit status 0 same, 1 different, 2 an input
cannot be read or the two are not of one kind.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from mlf_spec.errors import MlfError

from . import add_command


def register(sub: Any) -> None:
    """Add the ``diff`` command to the CLI."""
    p = add_command(sub, "diff", description=(
        "Compare two artifacts of one kind, recognised by content: .params files (tensors added or removed, "
        "dtype, shape, data with the largest absolute and relative difference), MLF archives (members, "
        "metadata keys by JSON path, the parameters and graph of each module), module blobs (module trees, "
        "payload fields), GraphExecutor JSON or metadata.json. Exit status: 0 same, 1 different, "
        "2 unreadable or of different kinds."))
    p.add_argument("a", metavar="A", help="the first artifact ('-' reads standard input)")
    p.add_argument("b", metavar="B", help="the second artifact ('-' reads standard input)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--ignore-times", action="store_true",
                   help="leave out archive member mtimes and metadata export_datetime values (they differ "
                   "between any two builds)")
    p.set_defaults(handler=_diff)


def _source(name: str) -> Any:
    from ._batch import read_named, read_stdin

    if name == "-":
        return read_stdin()
    data = read_named(name)
    return name if data is None else data


def _diff(args: argparse.Namespace) -> int:
    from mlf_spec import diff as _diff_mod

    if args.a == "-" and args.b == "-":
        print("mlf-spec: error: only one of A and B can be standard input", file=sys.stderr)
        return 2
    na = "<stdin>" if args.a == "-" else args.a
    nb = "<stdin>" if args.b == "-" else args.b
    try:
        d = _diff_mod.diff(_source(args.a), _source(args.b), ignore_times=args.ignore_times, a_name=na, b_name=nb)
    except MlfError as exc:
        from ._batch import error_doc, error_line

        if args.json:
            sys.stdout.write(json.dumps(error_doc(exc.file if exc.file in (na, nb) else na, exc),
                                        ensure_ascii=False, separators=(",", ":")) + "\n")
        print(error_line(exc), file=sys.stderr)
        return 2
    if args.json:
        sys.stdout.write(json.dumps(d.to_dict(), ensure_ascii=False, separators=(",", ":"), allow_nan=False,
                                    default=str) + "\n")
    else:
        sys.stdout.write(str(d) + "\n")
    return 0 if d.same else 1
