"""``mlf-spec check``: conformance findings for any artifact, dispatched by kind.

``check PATH... [--json] [--version N]`` recognises each input by its content and runs the
check of its kind: MLF archives (tars or extracted directories) against the metadata
version they declare (or ``--version N``). Exit status: 0 conformant, 1 an error-severity
finding, 2 an input that cannot be read; with several inputs, the worst. JSON form (one
object per input): generated/schemas/mlf_check_output.schema.json.
"""

from __future__ import annotations

import argparse
import io
from collections.abc import Callable
from typing import Any

from . import _batch
from .archive import VERSIONS, add_member_size, member_limit

#: kind name -> the function that checks one input of that kind.
CHECKERS: dict[str, Callable[[_batch.Input, argparse.Namespace], _batch.Outcome]] = {}


def register(sub: Any) -> None:
    """Add the ``check`` command to the CLI."""
    c = sub.add_parser("check", help="check artifacts (MLF archives) for conformance",
                       description="Check each input against the spec of its kind, recognised by content. "
                       "Exit status: 0 conformant, 1 an error finding, 2 unreadable input (the worst over all inputs).")
    _batch.add_arguments(c, what="artifacts to check")
    c.add_argument("--json", action="store_true", help="one JSON object per input (JSON Lines)")
    c.add_argument("--version", type=int, choices=VERSIONS, dest="check_version",
                   help="check MLF archives against this metadata version instead of the declared one")
    add_member_size(c)
    c.set_defaults(handler=_check)


def _check(args: argparse.Namespace) -> int:
    return _batch.run(args, _check_one, accept=frozenset(CHECKERS), what="an artifact mlf-spec checks")


def _check_one(inp: _batch.Input, args: argparse.Namespace) -> _batch.Outcome:
    checker = CHECKERS.get(inp.kind.name)
    if checker is None:
        _batch.guard(inp, frozenset(CHECKERS), "an artifact mlf-spec checks")
        checker = _check_archive  # unrecognised content: the archive reader says what is wrong
    return checker(inp, args)


def _check_archive(inp: _batch.Input, args: argparse.Namespace) -> _batch.Outcome:
    from mlf_spec.mlf import check as _mlf_check

    report = _mlf_check.check(inp.source, version=args.check_version, **member_limit(args))
    report.path = inp.name
    status = 0 if report.conformant else 1
    if args.json:
        return _batch.Outcome(status, doc=report.to_dict())
    return _batch.Outcome(status, text=report_text(report.path, report.version, report.style, report.conformant,
                                                    [f.to_dict() for f in report.findings]))


def report_text(path: str, version: int | None, style: str | None, conformant: bool,
                findings: list[dict[str, Any]]) -> str:
    """The text form of a check report: a verdict line, then one line per finding."""
    from ._text import printable

    out = io.StringIO()
    where = f"version {version}, {style}" if version is not None else "version unknown"
    errors = sum(f["severity"] == "error" for f in findings)
    warnings = sum(f["severity"] == "warning" for f in findings)
    verdict = "conformant" if conformant else "NOT conformant"
    out.write(f"{path}: {where}: {verdict} ({errors} error(s), {warnings} warning(s))\n")
    for f in findings:
        loc = ":".join(printable(x) for x in (f.get("member") or "", f.get("path") or "") if x)
        out.write(f"  {f['severity']}: {f['code']}: {loc + ': ' if loc else ''}{printable(f['message'])}\n")
    return out.getvalue()


CHECKERS["mlf-archive"] = _check_archive
