"""``mlf-spec conformance ...``: the conformance kit (vectors, the reference testee, the runner)."""

from __future__ import annotations

import argparse
import shlex
import sys
from typing import Any

FORMATS = ("params", "blob", "graph-json", "mlf-metadata", "mlf-archive")


def register(sub: Any) -> None:
    """Add the ``conformance`` command group to the CLI."""
    from . import add_command

    p = add_command(sub, "conformance",
                    description="Conformance kit: vectors made from the spec, a testee protocol, a runner "
                    "(docs/conformance/guide.md).")
    csub = p.add_subparsers(dest="conformance_command", metavar="ACTION")
    csub.required = True

    vec = csub.add_parser("vectors", help="write the conformance vectors to a directory")
    vec.add_argument("out_dir", help="where to write them (created if needed)")
    vec.add_argument("--format", action="append", choices=FORMATS, help="only these formats (repeatable)")
    vec.set_defaults(handler=_vectors)

    tee = csub.add_parser("testee", help="mlf-spec as a testee: info | decode FORMAT | encode FORMAT | migrate "
                          "FORMAT to=N | serve", description="The reference testee, speaking the protocol of "
                          "docs/conformance/protocol.md.")
    tee.add_argument("args", nargs=argparse.REMAINDER, help="info | decode FORMAT [k=v ...] | encode FORMAT | "
                     "migrate FORMAT to=N | serve")
    tee.set_defaults(handler=_testee)

    run = csub.add_parser("run", help="run the vectors (and generated cases) against a testee",
                          description="Exit status: 0 no unexpected failure or error, 1 some, 2 the testee cannot "
                          "be started or an input cannot be read.")
    who = run.add_mutually_exclusive_group(required=True)
    who.add_argument("--testee", metavar="CMD", help="the testee command (shell words), e.g. \"./my-reader\"")
    who.add_argument("--adapter", metavar="NAME", help="a built-in or registered adapter (mlf-spec, tvm) or "
                     "module:Class")
    run.add_argument("--format", action="append", choices=FORMATS, help="only these formats (repeatable)")
    run.add_argument("--role", action="append", choices=("decode", "encode", "migrate"), help="only these roles")
    run.add_argument("--id", action="append", metavar="ID", help="only these case ids (ID* for a prefix)")
    run.add_argument("--vectors", metavar="DIR", help="another suite (default: the installed one)")
    run.add_argument("--known-failures", action="append", metavar="FILE", help="known failures (repeatable; an "
                     "adapter's own list is used too unless --no-known-failures)")
    run.add_argument("--no-known-failures", action="store_true", help="ignore the adapter's known-failures file")
    run.add_argument("--report-json", metavar="FILE", help="write the JSON Lines report here (as the run goes)")
    run.add_argument("--junit", metavar="FILE", help="write a JUnit XML report here")
    run.add_argument("-j", "--jobs", type=int, default=1, help="cases run at once (default 1)")
    run.add_argument("--timeout", type=float, default=60.0, help="seconds per case (default 60)")
    run.add_argument("--max-output", type=int, default=64 << 20, help="bytes a testee may print per case")
    run.add_argument("--memory-limit", type=int, default=0, metavar="MB",
                     help="address-space limit of testee processes (default: none)")
    run.add_argument("--one-shot", action="store_true", help="start the testee once per case even if it can serve")
    run.add_argument("--strict-errors", action="store_true", help="a rejection of another error class fails")
    run.add_argument("--generate", type=int, default=0, metavar="N",
                     help="also draw N cases from the spec's strategies and shrink every disagreement")
    run.add_argument("--seed", type=int, default=0, help="seed of --generate (default 0)")
    run.add_argument("--generate-budget", type=float, default=120.0, metavar="S",
                     help="seconds --generate may spend asking the testee, shrinking included (default 120); "
                     "each generated case gets at most 10 s")
    run.add_argument("--save-dir", metavar="DIR", default="conformance-failures",
                     help="where --generate saves the shrunk disagreements as vectors (default ./conformance-failures)")
    run.add_argument("--quiet", action="store_true", help="print only the summary line")
    run.set_defaults(handler=_run)

    rep = csub.add_parser("report", help="a Markdown compatibility page per run report",
                          description="Compatibility pages (docs/conformance/compat/): what the testee declares, "
                          "its results and coverage per format, and every case it does not pass with the reason and "
                          "what was seen, from the JSON Lines report of `conformance run --report-json`.")
    rep.add_argument("reports", nargs="+", metavar="REPORT", help="JSON Lines reports of conformance runs")
    rep.add_argument("-o", "--out", metavar="PATH",
                     help="the page file (one report), or a directory that gets <adapter>.md per report; "
                     "default: standard output")
    rep.add_argument("--title", help="the page title (default: the testee's name)")
    rep.set_defaults(handler=_report)


def _vectors(args: argparse.Namespace) -> int:
    from mlf_spec.conformance.vectors import write_suite

    n = write_suite(args.out_dir, args.format)
    print(f"wrote {n} cases to {args.out_dir}", file=sys.stderr)
    return 0


def _testee(args: argparse.Namespace) -> int:
    from mlf_spec.conformance.adapters.mlf_spec import MlfSpecAdapter
    from mlf_spec.conformance.protocol import one_shot

    return one_shot(MlfSpecAdapter(), list(args.args))


def _page_name(run: dict[str, Any]) -> str:
    """The file name of a run's page: the adapter's name, else the testee's name."""
    from mlf_spec.conformance.suite.common import slug

    testee = run.get("testee", "")
    name = testee.split(":", 1)[1] if testee.startswith("adapter:") else (run.get("testee_info") or {}).get("name", testee)
    return slug(name) + ".md"


def _report(args: argparse.Namespace) -> int:
    from pathlib import Path

    from mlf_spec._io import atomic_write_bytes
    from mlf_spec.conformance import compat
    from mlf_spec.conformance.report import read_report
    from mlf_spec.errors import MlfError

    runs = [read_report(p) for p in args.reports]
    out = Path(args.out) if args.out else None
    if out is not None and len(runs) > 1 and not out.is_dir():
        raise MlfError("several reports need a directory for their pages", file=str(out))
    for records in runs:
        text = compat.page(records, args.title)
        if out is None:
            sys.stdout.write(text)
            continue
        target = out / _page_name(records[0]) if out.is_dir() else out
        atomic_write_bytes(target, text.encode("utf-8"))
        print(f"wrote {target}", file=sys.stderr)
    return 0


def make_testee(args: argparse.Namespace) -> tuple[Any, Any]:
    """(testee, known failures) for the run options."""
    from mlf_spec.conformance import adapters
    from mlf_spec.conformance.known_failures import KnownFailures
    from mlf_spec.conformance.testee import Limits, OneShot, Persistent

    limits = Limits(args.timeout, args.max_output, args.memory_limit)
    known = KnownFailures()
    if args.adapter:
        adapter = adapters.load(args.adapter)
        adapter.setup(progress=True)  # a peer in a venv of its own is made on first use
        path = None if args.no_known_failures else adapter.known_failures_path()
        if path is not None:
            known = KnownFailures.load(path)
        testee: Any = adapters.testee(args.adapter, adapter, limits, one_shot=args.one_shot)
    else:
        cmd = shlex.split(args.testee)
        if not cmd:
            from mlf_spec.errors import MlfError

            raise MlfError("--testee needs a command")
        testee = OneShot(cmd, limits)
        if not args.one_shot:
            from mlf_spec.conformance.runner import TesteeStartError

            try:
                serves = bool(testee.info().get("serve"))
            except Exception as exc:  # MlfError: reported by the runner's own handshake
                raise TesteeStartError(str(exc)) from None
            if serves:
                testee = Persistent(cmd, limits)
    for f in args.known_failures or []:
        known = known.merged(KnownFailures.load(f))
    return testee, known


def _run(args: argparse.Namespace) -> int:
    from mlf_spec.conformance import report as _report
    from mlf_spec.conformance.runner import TesteeStartError, run
    from mlf_spec.conformance.vectors import load_suite

    cases = load_suite(args.vectors, formats=args.format, roles=args.role, ids=args.id)
    try:
        testee, known = make_testee(args)
    except TesteeStartError as exc:
        print(f"mlf-spec: error: {exc.message}", file=sys.stderr)
        return 2
    jsonl = _report.JsonLines(args.report_json) if args.report_json else None
    try:
        try:
            result = run(testee, cases, known=known, jobs=max(1, args.jobs), report=jsonl,
                         strict_errors=args.strict_errors, vectors=args.vectors or "installed",
                         progress=not args.quiet, write_summary=not args.generate)
        except TesteeStartError as exc:
            print(f"mlf-spec: error: {exc.message}", file=sys.stderr)
            return 2
        results, counts, seconds = result.results, result.counts, result.seconds
        if args.generate:
            from mlf_spec.conformance.generated_cases import explore

            gen_testee, known = make_testee(argparse.Namespace(**{**vars(args), "timeout": min(args.timeout, 10.0)}))
            try:
                gen = explore(gen_testee, args.generate, seed_value=args.seed, save_dir=args.save_dir,
                              formats=args.format, info=result.info, known=known, strict_errors=args.strict_errors,
                              quiet=args.quiet, budget=args.generate_budget)
            finally:
                gen_testee.close()
            results, counts, seconds = results + gen.results, counts + gen.counts, seconds + gen.seconds
            if jsonl is not None:
                for r in gen.results:
                    jsonl.write(r)
                jsonl.write(_report.summary_record(counts, seconds, result.coverage))
    finally:
        if jsonl is not None:
            jsonl.close()
    if args.junit:
        _report.write_junit(args.junit, results, testee.describe(), seconds)
    out = sys.stdout
    if not args.quiet:
        shown = 0
        for r in results:
            if r["outcome"] not in _report.UNEXPECTED:
                continue
            shown += 1
            if shown > 50:
                continue
            out.write(f"{r['outcome'].upper()} {r['id']}: {r.get('message', '')}\n")
            for line in r.get("diff", [])[:3]:
                out.write(f"    {line}\n")
            if r.get("reproduce"):
                out.write(f"    reproduce: {r['reproduce']}\n")
        if shown > 50:
            out.write(f"... and {shown - 50} more (see --report-json)\n")
        rows = _report.coverage(results, {c.id: c.features for c in cases})
        if rows:
            out.write("coverage (values of each feature whose cases all passed):\n")
            for line in _report.coverage_lines(rows):
                out.write(line + "\n")
        for e in result.unused_known if not (args.format or args.role or args.id or args.vectors) else []:
            out.write(f"note: known failure {e.pattern!r} (line {e.line}) matches no case of this run\n")
    out.write(_report.summary_line(counts, seconds) + "\n")
    return 1 if any(counts[o] for o in _report.UNEXPECTED) else 0
