"""``mlf-spec check``: conformance findings for any artifact, dispatched by kind.

``check PATH... [--json] [--version N] [--tvm VERSION [--from VERSION]]`` recognises each
input by its content and runs the check of its kind: MLF archives (tars or extracted
directories) against the metadata version they declare (or ``--version N``), .params files,
module blobs (libraries, devc.c, export tars, raw .bin), GraphExecutor JSON and tensor caches
(a folder with tensor-cache.json or ndarray-cache.json, or that index). ``--tvm``
adds, for .params files and blobs, the verdict of that TVM version's reader. Exit status:
0 conformant, 1 an error-severity finding, 2 an input that cannot be read; with several
inputs, the worst. JSON form (one object per input): generated/schemas/mlf_check_output
(archives) and generated/schemas/artifact_check_output (the other kinds).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from . import _batch, add_command
from ._options import add_fail_on, dialect, tvm_version, verdict_fails
from .archive import VERSIONS, add_member_size, member_limit

#: kind name -> the function that checks one input of that kind.
CHECKERS: dict[str, Callable[[_batch.Input, argparse.Namespace], _batch.Outcome]] = {}


def register(sub: Any) -> None:
    """Add the ``check`` command to the CLI."""
    c = add_command(sub, "check", description="Check each input against the spec of its kind, recognised by content. "
                       "Exit status: 0 conformant, 1 an error finding, 2 unreadable input (the worst over all inputs).")
    _batch.add_arguments(c, what="artifacts to check")
    c.add_argument("--json", action="store_true", help="one JSON object per input (JSON Lines)")
    c.add_argument("-v", "--verbose", action="store_true", help="the details of informational findings too")
    c.add_argument("--version", type=int, choices=VERSIONS, dest="check_version",
                   help="check MLF archives against this metadata version instead of the declared one")
    add_member_size(c)
    add_tvm_arguments(c)
    from ._remote import add_arguments as add_remote_arguments

    add_remote_arguments(c)
    c.add_argument("--dialect", type=dialect, help=".params: the TVM version whose dtype codes apply "
                   "(default: detected)")
    c.set_defaults(handler=_check)


def add_kind_check(sub: Any, *, help: str, findings: str, question: str,  # noqa: A002
                   what: str) -> argparse.ArgumentParser:
    """The ``check`` action of a command group (``params check``, ``blob check``): inputs,
    --json, --tvm and --from; the caller adds its own options."""
    chk = sub.add_parser("check", help=help, description=f"Findings with stable codes (generated/docs/{findings}); "
                         f"with --tvm VERSION {question} (generated/docs/tvm_read_rules.md). "
                         "Exit status: 0 conformant, 1 an error finding, 2 unreadable input (the worst over all inputs).")
    _batch.add_arguments(chk, what=what)
    chk.add_argument("--json", action="store_true", help="one JSON object per input (JSON Lines)")
    chk.add_argument("-v", "--verbose", action="store_true", help="the details of informational findings too")
    add_tvm_arguments(chk)
    return chk


def add_tvm_arguments(parser: argparse.ArgumentParser) -> None:
    """--tvm VERSION and --from VERSION (the verdict of a TVM version's reader)."""
    parser.add_argument("--tvm", metavar="VERSION", type=tvm_version,
                        help="also say whether TVM VERSION's readers take each input as it was meant: loads, misreads, "
                        "rejects (or crashes: .params and blobs), with the reasons (e.g. 0.12, 0.27)")
    parser.add_argument("--from", dest="writer", type=tvm_version, metavar="VERSION",
                        help="the TVM version that wrote the artifact (default: detected from it)")
    add_fail_on(parser)


def tvm_options_apply(args: argparse.Namespace) -> None:
    """Refuse (MlfError: one line, exit 2) --from and --fail-on without --tvm: they qualify a
    TVM verdict, and without one they would do nothing, silently."""
    from mlf_spec.errors import MlfError

    given = [opt for opt, value in (("--from", getattr(args, "writer", None)),
                                    ("--fail-on", getattr(args, "fail_on", None))) if value is not None]
    if given and getattr(args, "tvm", None) is None:
        raise MlfError(f"option{'s' if len(given) > 1 else ''} {' and '.join(given)} only "
                       f"qualif{'y' if len(given) > 1 else 'ies'} the verdict of --tvm VERSION; give --tvm too")


def _no_writer(args: argparse.Namespace, kind: str) -> None:
    """Refuse --from for a kind whose verdict does not take the writer's version."""
    from mlf_spec.errors import MlfError

    if getattr(args, "writer", None) is not None:
        raise MlfError(f"--from applies to .params files and module blobs; the verdict on {kind} reads what it "
                       "needs from the input itself (leave --from out)")


def run_kind(args: argparse.Namespace, kind: str, accept: frozenset[str], what: str) -> int:
    """``params check`` / ``blob check``: the check of ``kind`` over every input, each of
    which must be ``what`` (one of the kinds in ``accept``); exit 2 first for a --tvm that
    names no version the rules describe."""
    import functools

    tvm_options_apply(args)
    one = functools.partial(_check_kind, kind=kind, accept=accept, what=what)  # picklable for -j N
    return _batch.run(args, one, accept=accept, what=what)


def _check_kind(inp: _batch.Input, args: argparse.Namespace, *, kind: str, accept: frozenset[str],
                what: str) -> _batch.Outcome:
    _batch.guard(inp, accept, what)
    return CHECKERS[kind](inp, args)


def artifact_outcome(report: Any, args: argparse.Namespace) -> _batch.Outcome:
    """The outcome of a check report of any kind (status 1 on an error finding)."""
    from mlf_spec.findings import text

    status = 0 if report.conformant else 1
    if verdict_fails(args, getattr(report.tvm, "verdict", None)):
        status = 1
    if getattr(args, "json", False):
        return _batch.Outcome(status, doc=report.to_dict())
    return _batch.Outcome(status, text=text(report, verbose=getattr(args, "verbose", False)))


def _check_params(inp: _batch.Input, args: argparse.Namespace) -> _batch.Outcome:
    from mlf_spec.params import check as _pcheck

    # read into memory, never mapped: a file truncated meanwhile is an error, not SIGBUS
    return artifact_outcome(_pcheck.check(inp.source, dialect=getattr(args, "dialect", None), tvm=args.tvm,
                                          writer=args.writer, name=inp.name, mapped=False), args)


def _check_blob(inp: _batch.Input, args: argparse.Namespace) -> _batch.Outcome:

    from mlf_spec.blob import check as _bcheck

    if inp.path is not None:
        _batch.require_file(inp.path, inp.name)
    return artifact_outcome(_bcheck.check(inp.source, tvm=args.tvm, writer=args.writer,
                                          era=getattr(args, "era", None), name=inp.name), args)


def _check_graph(inp: _batch.Input, args: argparse.Namespace) -> _batch.Outcome:
    from mlf_spec.graph import check as graph_check

    out = artifact_outcome(graph_check.check(inp.source, name=inp.name), args)
    return _no_verdict(out, args, "the verdict rules cover MLF archives, .params files and module blobs; a "
                       "GraphExecutor JSON is judged inside its MLF archive or library (check that)")


def _no_verdict(out: _batch.Outcome, args: argparse.Namespace, why: str) -> _batch.Outcome:
    """Say why --tvm gives no verdict for this kind (text: a line; JSON: ``tvm`` stays null)."""
    if args.tvm is not None and not args.json:
        out.text = out.text.rstrip("\n") + f"\n  TVM {args.tvm}: no verdict: {why}\n"
    return out


def _check(args: argparse.Namespace) -> int:
    tvm_options_apply(args)
    return _batch.run(args, _check_one, accept=frozenset(CHECKERS), what="an artifact mlf-spec checks")


def _check_one(inp: _batch.Input, args: argparse.Namespace) -> _batch.Outcome:
    from mlf_spec import sniff

    checker = CHECKERS.get(inp.kind.name)
    if checker is None and inp.kind.name == "tar" and sniff.claimed_kind(inp.name) == "params":
        checker = _check_params  # a file of zeros named x.params: read as one (its magic is wrong)
    if checker is None and inp.kind.name in ("tar", "compressed"):
        checker = _check_archive  # perhaps a damaged MLF archive: the reader says what is wrong
    if checker is None:
        _batch.guard(inp, frozenset(CHECKERS), "an artifact mlf-spec checks")
        # content of no known kind under a name that claims a kind (sniff.CLAIMED_BY_NAME): that kind's reader
        checker = CHECKERS.get(sniff.claimed_kind(inp.name) or "", _check_archive)
    return checker(inp, args)


def _check_metadata(inp: _batch.Input, args: argparse.Namespace) -> _batch.Outcome:
    from mlf_spec.mlf import check as _mlf_check

    report = _mlf_check.check_metadata(inp.source, version=args.check_version, name=inp.name)
    return _no_verdict(artifact_outcome(report, args), args, "TVM's readers take the whole MLF archive, not a bare "
                       "metadata.json (check the archive)")


def _check_archive(inp: _batch.Input, args: argparse.Namespace) -> _batch.Outcome:
    from mlf_spec.mlf import check as _mlf_check

    _no_writer(args, "an MLF archive (its metadata revision)")
    # read by pread, never mapped: a file truncated meanwhile is an error, not SIGBUS
    report = _mlf_check.check(inp.source, version=args.check_version, tvm=args.tvm, mapped=False,
                              **member_limit(args))
    report.path = inp.name
    return artifact_outcome(report, args)


CHECKERS["mlf-archive"] = _check_archive
CHECKERS["params"] = _check_params
for _kind in ("library", "c-source", "export-tar", "blob"):
    CHECKERS[_kind] = _check_blob
CHECKERS["graph-json"] = _check_graph
CHECKERS["mlf-metadata"] = _check_metadata


def _check_cache(inp: _batch.Input, args: argparse.Namespace) -> _batch.Outcome:
    from mlf_spec.cache import check as _ccheck
    from mlf_spec.errors import MlfError

    _no_writer(args, "a tensor cache")
    path = inp.path
    if path is None:
        raise MlfError("a tensor cache is a folder: name it (standard input cannot hold one)", file=inp.name)
    if "://" in path:
        from mlf_spec.remote import is_remote

        if is_remote(path):
            from ._remote import annotate, remote_report

            report, info = remote_report(inp, args)
            return annotate(artifact_outcome(report, args), info)
    report = _ccheck.check(path, tvm=getattr(args, "tvm", None), name=inp.name)
    if getattr(args, "manifest", None):
        from ._remote import local_manifest

        local_manifest(report, path, args)
    return artifact_outcome(report, args)


CHECKERS["tensor-cache"] = _check_cache
