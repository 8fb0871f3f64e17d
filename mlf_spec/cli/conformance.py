"""``mlf-spec conformance ...``: the conformance kit (vectors, the reference testee, the runner)."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any

from mlf_spec.generated.formats import FORMATS, MAX_INPUT, OPS

#: what --format also takes: "cache" names the tensor cache, as the `cache` command does
_FORMAT_HELP = "only these formats (repeatable; cache = tensor-cache)"


def _format(name: str) -> str:
    """A --format value: a format's name, or ``cache`` for ``tensor-cache``."""
    return "tensor-cache" if name == "cache" else name


def _add_format(p: argparse.ArgumentParser) -> None:
    """--format FORMAT (repeatable), one of the registry's formats (or ``cache``)."""
    p.add_argument("--format", action="append", type=_format, choices=FORMATS, metavar="FORMAT",
                   help=f"{_FORMAT_HELP}: {', '.join(FORMATS)}")


def register(sub: Any) -> None:
    """Add the ``conformance`` command group to the CLI."""
    from . import add_command

    p = add_command(sub, "conformance",
                    description="Conformance kit: vectors made from the spec, a testee protocol, a runner "
                    "(docs/conformance/guide.md).")
    csub = p.add_subparsers(dest="conformance_command", metavar="ACTION")
    csub.required = True
    for add in (_add_vectors, _add_testee, _add_run, _add_request, _add_report, _add_mutate):
        add(csub)


def _add_vectors(csub: Any) -> None:
    vec = csub.add_parser("vectors", help="write the conformance vectors to a directory")
    vec.add_argument("out_dir", help="where to write them (created if needed)")
    _add_format(vec)
    vec.set_defaults(handler=_vectors)


def _add_testee(csub: Any) -> None:
    tee = csub.add_parser("testee", help="mlf-spec as a testee: info | decode FORMAT | encode FORMAT | migrate "
                          "FORMAT to=N | serve", description="The reference testee, speaking the protocol of "
                          f"docs/conformance/protocol.md. A request holds at most {MAX_INPUT >> 20} MiB ({MAX_INPUT} "
                          "bytes on stdin, or as a serve line's base64 input); more is a bad request (exit 2; serve: "
                          "a protocol error).")
    tee.add_argument("args", nargs=argparse.REMAINDER, help="info | decode FORMAT [k=v ...] | encode FORMAT | "
                     "migrate FORMAT to=N | serve")
    tee.set_defaults(handler=_testee)


def _add_run(csub: Any) -> None:
    run = csub.add_parser("run", help="run the vectors (and generated cases) against a testee",
                          description="Exit status: 0 no unexpected failure or error, 1 some, 2 the testee cannot "
                          "be started or an input cannot be read.")
    who = run.add_mutually_exclusive_group(required=True)
    who.add_argument("--testee", metavar="CMD", help="the testee command (shell words), e.g. \"./my-reader\"")
    from mlf_spec.conformance.adapters import BUILTIN

    who.add_argument("--adapter", metavar="NAME", help=f"a built-in adapter ({', '.join(BUILTIN)}), one registered "
                     "under the entry-point group mlf_spec.conformance.adapters, or module:Class")
    _add_format(run)
    run.add_argument("--role", action="append", choices=OPS, help="only these roles")
    run.add_argument("--id", action="append", metavar="ID", help="only these case ids (ID* for a prefix)")
    run.add_argument("--sample", action="store_true",
                     help="run a deterministic stratified sample of the selected cases: each rule and feature value "
                     "on each side (accept, reject) in the testee's scope, each known failure's case, and the cases "
                     "outside its handshake (skipped); see mlf_spec/conformance/sampling.py")
    run.add_argument("--sample-keep", action="append", metavar="ID",
                     help="with --sample, also run these case ids (ID* for a prefix; repeatable)")
    run.add_argument("--vectors", metavar="DIR", help="another suite (default: the installed one)")
    run.add_argument("--known-failures", action="append", metavar="FILE", help="known failures (repeatable; an "
                     "adapter's own list is used too unless --no-known-failures)")
    run.add_argument("--no-known-failures", action="store_true", help="ignore the adapter's known-failures file")
    run.add_argument("--report-json", metavar="FILE", help="write the JSON Lines report here (as the run goes)")
    run.add_argument("--junit", metavar="FILE", help="write a JUnit XML report here")
    run.add_argument("--report-html", metavar="FILE", help="write the HTML results page of the run here (what "
                     "`conformance report --html` makes of its JSON report)")
    run.add_argument("-j", "--jobs", type=int, default=1, help="cases run at once (default 1)")
    run.add_argument("--timeout", type=float, default=60.0, help="seconds per case (default 60)")
    run.add_argument("--max-output", type=int, default=None, help="bytes a testee may print per case")
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
    run.add_argument("--no-shrink", action="store_true",
                     help="with --generate, report each disagreement as first drawn, unshrunk (the kinds met then "
                     "depend on the seed and the answers to the drawn cases only: for CI)")
    run.add_argument("--save-dir", metavar="DIR", default="conformance-failures",
                     help="where --generate saves the shrunk disagreements as vectors (default ./conformance-failures)")
    _add_maxfail(run, "cases")
    run.add_argument("--allow-empty", action="store_true", help="a selection of no case is not an error (exit 0)")
    run.add_argument("--quiet", action="store_true", help="print only the summary line")
    run.add_argument("--label", metavar="TEXT", help="a label kept on the report's run line: the results page and "
                     "report --compare name the run by it (beside its implementation, version and time)")
    run.set_defaults(handler=_run)


def _add_request(csub: Any) -> None:
    req = csub.add_parser("request", help="print a case's request line of the persistent protocol (pipe it into "
                          "CMD serve)", description="The request line of a vector case (the reproducer of a "
                          "persistent run: `mlf-spec conformance request CASE.case.json k=v | CMD serve`).")
    req.add_argument("case", metavar="CASE", help="a <id>.case.json file")
    req.add_argument("options", nargs="*", metavar="KEY=VALUE", help="options it ran with instead of its own")
    req.add_argument("--id", dest="request_id", type=int, default=1, help="the request id (default 1)")
    req.set_defaults(handler=_request)


def _add_report(csub: Any) -> None:
    rep = csub.add_parser("report", help="compatibility pages, an HTML results page, a badge, or the comparison of "
                          "two runs, from run reports",
                          description="Compatibility pages (docs/conformance/compat/): what the testee declares, "
                          "its results and coverage per format, and every case it does not pass with the reason and "
                          "what was seen, from the JSON Lines report of `conformance run --report-json`. --html writes "
                          "one self-contained page over every report given; --badge an SVG badge (passed/applicable); "
                          "--index the JSON index of their results; --compare OLD NEW what changed (exit 1 when a case "
                          "newly fails).")
    rep.add_argument("reports", nargs="*", metavar="REPORT", help="JSON Lines reports of conformance runs")
    rep.add_argument("-o", "--out", metavar="PATH",
                     help="the page file (one report), or a directory that gets <adapter>.md per report; "
                     "default: standard output (unless --html, --badge or --index is given)")
    rep.add_argument("--title", help="the page title (default: the testee's name)")
    rep.add_argument("--html", metavar="FILE", help="write the HTML results page over all the reports here")
    rep.add_argument("--badge", metavar="FILE", help="write an SVG badge (passed/applicable) of the one report here")
    rep.add_argument("--index", metavar="FILE", help="write the JSON index of the reports' results here")
    rep.add_argument("--compare", nargs=2, metavar=("OLD", "NEW"),
                     help="compare two reports: newly failing, newly passing, changed reasons")
    rep.set_defaults(handler=_report)


def _add_mutate(csub: Any) -> None:
    mut = csub.add_parser("mutate", help="mutation analysis: how many mutants of a C reader the suite kills",
                          description="Instrument a C reader once as a mutant schema (relational, arithmetic and "
                          "constant operators, dropped checks, narrowed reads; MLF_MUTANT=<id> selects one), build it "
                          "once (ASan + UBSan by default) in a temporary folder, refuse it if it fails the suite "
                          "unmutated, then run every mutant through the kit in persistent mode. Exit 1 below "
                          "--fail-under. See docs/conformance/mutation.md.")
    mut.add_argument("source", help="the reader's C source (mutated between /* MUTATE BEGIN */ and /* MUTATE END */)")
    mut.add_argument("--build", default=None, metavar="CMD",
                     help="build command with {src}, {out} and {dir} (the source's folder), default: gcc with "
                     "-fsanitize=address,undefined")
    mut.add_argument("--testee", default="{bin}", metavar="CMD", help="testee command with {bin} (default: {bin})")
    mut.add_argument("--equivalent", metavar="FILE", help="equivalent mutants: 'signature :: reason' per line")
    _add_format(mut)
    mut.add_argument("--known-failures", metavar="FILE", help="cases the reader is known to fail: left out")
    mut.add_argument("--vectors", metavar="DIR", help="another suite (default: the installed one)")
    mut.add_argument("-j", "--jobs", type=int, default=2, help="mutants run at once (default 2)")
    mut.add_argument("--generate", type=int, default=0, metavar="N",
                     help="also draw N generated cases against each survivor")
    mut.add_argument("--seed", type=int, default=0, help="seed of --generate (default 0)")
    mut.add_argument("--generate-alone", action="store_true",
                     help="also run the first N cases the --seed draws, drawn once, against every mutant: "
                          "the score of the generated cases alone")
    mut.add_argument("--generate-budget", type=float, default=30.0, metavar="S",
                     help="seconds of generated cases per mutant (default 30)")
    mut.add_argument("--fail-under", type=float, default=0.0, metavar="PCT",
                     help="exit 1 when fewer than PCT %% of the non-equivalent mutants are killed by the vectors")
    mut.add_argument("--json", action="store_true", help="print the report as JSON")
    mut.add_argument("--maxfail", type=int, default=0, metavar="N",
                     help="stop the check of the unmutated reader after N failing cases (each mutant always stops at "
                     "its first killing case)")
    mut.add_argument("-x", "--exitfirst", dest="maxfail", action="store_const", const=1,
                     help="stop the check of the unmutated reader at its first failing case (--maxfail 1)")
    mut.set_defaults(handler=_mutate)


def _add_maxfail(p: argparse.ArgumentParser, what: str) -> None:
    """-x / --maxfail N (pytest's convention): stop after N unexpected outcomes."""
    p.add_argument("--maxfail", type=int, default=0, metavar="N",
                   help=f"stop after N unexpected outcomes (fail, error, xpass): the {what} not yet run are left "
                   "out and the report says so (default: run all)")
    p.add_argument("-x", "--exitfirst", dest="maxfail", action="store_const", const=1,
                   help="stop at the first unexpected outcome (--maxfail 1)")


def _mutate(args: argparse.Namespace) -> int:
    import json

    from mlf_spec.conformance.mutation.harness import DEFAULT_BUILD, mutate
    from mlf_spec.conformance.vectors import load_suite

    cases = load_suite(args.vectors, formats=args.format)
    report = mutate(args.source, cases, build_cmd=args.build or DEFAULT_BUILD, testee_cmd=args.testee,
                    equivalents=args.equivalent, jobs=args.jobs, generate=args.generate, seed=args.seed,
                    formats=args.format, known_failures=args.known_failures, generate_alone=args.generate_alone,
                    generate_budget=args.generate_budget, maxfail=max(0, args.maxfail))
    print(json.dumps(report.as_dict(), indent=1) if args.json else "\n".join(report.lines()))
    return 1 if 100 * report.score() < args.fail_under else 0


def _vectors(args: argparse.Namespace) -> int:
    from mlf_spec._io import check_output
    from mlf_spec.conformance.vectors import write_suite

    check_output(args.out_dir, directory=True)
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
    from mlf_spec._io import atomic_write_bytes
    from mlf_spec.conformance import compat, results
    from mlf_spec.conformance.report import read_report
    from mlf_spec.errors import MlfError

    if args.compare:
        if args.reports or args.html or args.badge or args.index or args.out:
            raise MlfError("--compare OLD NEW takes no other report or output")
        old, new = (read_report(p) for p in args.compare)
        diff = results.compare(old, new)
        for line in results.compare_lines(diff, args.compare[0], args.compare[1]):
            print(line)
        return 1 if diff["newly_failing"] else 0
    if not args.reports:
        raise MlfError("give the reports (or --compare OLD NEW)")
    runs = [read_report(p) for p in args.reports]
    entries = [results.entry(r, reproduce=True, source=p) for r, p in zip(runs, args.reports)]
    if args.badge:
        if len(runs) != 1:
            raise MlfError("--badge takes one report", file=args.badge)
        atomic_write_bytes(Path(args.badge), results.badge(entries[0]).encode("utf-8"))
        print(f"wrote {args.badge}", file=sys.stderr)
    if args.html:
        from mlf_spec.conformance import html

        atomic_write_bytes(Path(args.html), html.page(entries, args.title or "Conformance results").encode("utf-8"))
        print(f"wrote {args.html}", file=sys.stderr)
    if args.index:
        doc = results.index([results.entry(r, source=p) for r, p in zip(runs, args.reports)])
        atomic_write_bytes(Path(args.index), results.index_text(doc).encode("utf-8"))
        print(f"wrote {args.index}", file=sys.stderr)
    if (args.html or args.badge or args.index) and not args.out:
        return 0
    out = Path(args.out) if args.out else None
    if out is not None and not out.is_dir():
        from mlf_spec._io import check_output

        check_output(out, inputs=args.reports)
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


def make_testee(args: argparse.Namespace, info: dict[str, Any] | None = None) -> tuple[Any, Any]:
    """(testee, known failures) for the run options; ``info``: the testee's handshake when this
    run has asked it already (a testee asks it once: whether it serves is told by it too)."""
    from mlf_spec.conformance import adapters
    from mlf_spec.conformance.known_failures import KnownFailures
    from mlf_spec.conformance.testee import Limits, OneShot, Persistent

    limits = Limits(args.timeout, Limits.max_output if args.max_output is None else args.max_output,
                    args.memory_limit)
    known = KnownFailures()
    if args.adapter:
        adapter = adapters.load(args.adapter)
        adapter.setup(progress=True)  # a peer in a venv of its own is made on first use
        path = None if args.no_known_failures else adapter.known_failures_path()
        if path is not None:
            known = KnownFailures.load(path)
        testee: Any = adapters.testee(args.adapter, adapter, limits, one_shot=args.one_shot, info=info)
    else:
        cmd = shlex.split(args.testee)
        if not cmd:
            from mlf_spec.errors import MlfError

            raise MlfError("--testee needs a command")
        testee = OneShot(cmd, limits, info=info)
        if not args.one_shot:
            from mlf_spec.conformance.runner import TesteeStartError

            try:
                serves = bool(testee.info().get("serve"))
            except Exception as exc:  # MlfError: reported by the runner's own handshake
                raise TesteeStartError(str(exc)) from None
            if serves:
                testee = Persistent(cmd, limits, info=testee.info())  # the handshake asked above, kept
    for f in args.known_failures or []:
        known = known.merged(KnownFailures.load(f))
    return testee, known


def _sampler(known: Any, keep: list[str]) -> Any:
    """The ``choose`` of a ``--sample`` run: the stratified sample once the handshake is known."""
    from mlf_spec.conformance.sampling import stratified

    def choose(cases: list[Any], info: dict[str, Any]) -> list[Any]:
        return stratified(cases, info, known, keep)

    return choose


def _run(args: argparse.Namespace) -> int:
    from mlf_spec.conformance import report as _report
    from mlf_spec.conformance.runner import TesteeStartError, run
    from mlf_spec.conformance.vectors import suite_digest

    if not _run_outputs_ok(args):
        return 2
    selected = _selected(args)
    if selected is None:
        return 2
    suite, cases = selected
    try:
        testee, known = make_testee(args)
    except TesteeStartError as exc:
        print(f"mlf-spec: error: {exc.message}", file=sys.stderr)
        return 2
    choose = _sampler(known, args.sample_keep or []) if args.sample else None
    report_path, scratch = args.report_json, None
    if args.report_html and not report_path:  # the page is made from the JSON report: keep one aside
        scratch = _scratch_report(args.report_html)
        report_path = str(scratch)
    jsonl = _report.JsonLines(report_path) if report_path else None
    gen_record: dict[str, Any] | None = None
    gen_results: list[dict[str, Any]] = []
    try:
        try:
            result = run(testee, cases, known=known, jobs=max(1, args.jobs), report=jsonl,
                         strict_errors=args.strict_errors, vectors=args.vectors or "installed",
                         progress=not args.quiet, write_summary=not args.generate, suite_ids={c.id for c in suite},
                         suite_sha256=suite_digest(suite), choose=choose, maxfail=max(0, args.maxfail),
                         label=args.label or "")
        except TesteeStartError as exc:
            print(f"mlf-spec: error: {exc.message}", file=sys.stderr)
            return 2
        seconds = result.seconds
        if args.generate:
            gen_results, seconds, gen_record, known = _generated(args, result, known, jsonl)
        if jsonl is not None:
            jsonl.close()
        results = result.results + gen_results
        if args.junit:
            _report.write_junit(args.junit, results, testee.describe(), seconds)
        if args.report_html:
            _write_page(args.report_html, report_path, args.label, kept=bool(args.report_json))
    finally:
        if jsonl is not None:
            jsonl.close()
        if scratch is not None:
            scratch.unlink(missing_ok=True)
    _report.write_results(sys.stdout, result, results, known, quiet=args.quiet, generated=gen_record,
                          generated_results=gen_results, generating=bool(args.generate))
    return 1 if any(r["outcome"] in _report.UNEXPECTED for r in results) else 0


def _scratch_report(page: str) -> Path:
    """A file beside the page for the JSON report a ``--report-html`` run without
    ``--report-json`` is made from (removed after the run)."""
    import os
    import tempfile

    fd, name = tempfile.mkstemp(prefix=".mlf-spec-run-", suffix=".jsonl", dir=Path(page).resolve().parent)
    os.close(fd)
    return Path(name)


def _write_page(page: str, report_path: str, label: str | None, *, kept: bool) -> None:
    """The HTML results page of one run's JSON report, written atomically (``kept``: the
    report is the user's --report-json, named in errors; else a scratch file)."""
    from mlf_spec._io import atomic_write_bytes
    from mlf_spec.conformance import html, results
    from mlf_spec.conformance.report import read_report

    entry = results.entry(read_report(report_path), reproduce=True, source=report_path if kept else "")
    title = "Conformance results" + (f": {label}" if label else "")
    atomic_write_bytes(Path(page), html.page([entry], title).encode("utf-8"))
    print(f"wrote {page}", file=sys.stderr)


def _run_outputs_ok(args: argparse.Namespace) -> bool:
    """The report files and the --generate save folder can be written, --sample-keep goes with
    --sample (False: the error is printed)."""
    from mlf_spec._io import check_output

    for out in (args.report_json, args.junit, args.report_html):
        if out:
            check_output(out)
    if args.generate:
        check_output(args.save_dir, directory=True)
    if args.sample_keep and not args.sample:
        print("mlf-spec: error: --sample-keep goes with --sample", file=sys.stderr)
        return False
    return True


def _selected(args: argparse.Namespace) -> tuple[list[Any], list[Any]] | None:
    """(the suite, the cases --format/--role/--id select), or None when none is (the error printed)."""
    from mlf_spec.conformance.vectors import load_suite, select

    suite = load_suite(args.vectors)
    cases = select(suite, formats=args.format, roles=args.role, ids=args.id)
    if not cases and not args.allow_empty:
        where = f"the vectors in {args.vectors}" if args.vectors else "the installed vectors"
        chosen = " ".join(f"--{k} {v}" for k in ("format", "role", "id") for v in getattr(args, k) or [])
        print(f"mlf-spec: error: no case of {where} ({len(suite)} cases) is selected"
              + (f" by {chosen}" if chosen else "") + " (--allow-empty to run none)", file=sys.stderr)
        return None
    return suite, cases


def _generated(args: argparse.Namespace, result: Any, known: Any,
               jsonl: Any) -> tuple[list[dict[str, Any]], float, dict[str, Any] | None, Any]:
    """--generate after the vectors: (the generated cases' records, the run's seconds with them,
    the ``generated`` record, the known failures); the report gets them and the summary. A run
    stopped by --maxfail draws none."""
    from mlf_spec.conformance import report as _report
    from mlf_spec.conformance.generated_cases import explore
    from mlf_spec.conformance.runner import summary_of

    if result.stopped:
        if jsonl is not None:
            jsonl.write(summary_of(result, known))
        return [], result.seconds, None, known
    gen_testee, known = make_testee(argparse.Namespace(**{**vars(args), "timeout": min(args.timeout, 10.0)}),
                                    info=result.info)
    try:
        bar = _report.Progress(args.generate) if not args.quiet else None
        try:
            gen = explore(gen_testee, args.generate, seed_value=args.seed, save_dir=args.save_dir,
                          formats=args.format, info=result.info, known=known,
                          strict_errors=args.strict_errors, quiet=True, budget=args.generate_budget,
                          shrink=not args.no_shrink,
                          progress=(lambda asked, _n, found: bar.generated(asked, found)) if bar else None)
        finally:
            if bar:
                bar.finish()
    finally:
        gen_testee.close()
    seconds = result.seconds + gen.seconds
    record = gen.record(args.generate, args.seed, args.generate_budget)
    if jsonl is not None:
        for r in gen.results:
            jsonl.write(r)
        jsonl.write(record)
        jsonl.write(summary_of(result, known, result.results + gen.results, seconds))
    return gen.results, seconds, record, known


def _request(args: argparse.Namespace) -> int:
    import json

    from mlf_spec.conformance.protocol import parse_options
    from mlf_spec.conformance.vectors import load_case
    from mlf_spec.errors import MlfError

    case = load_case(Path(args.case))
    try:
        options = parse_options(args.options)
    except ValueError as exc:
        raise MlfError(str(exc)) from None
    for key, value in options.items():
        if key not in case.options:
            raise MlfError(f"the case has no option {key!r} (its options: {', '.join(case.options) or 'none'})",
                           file=args.case)
        case = case.with_option(key, value)
    request = case.request()
    if "output_dir" in request:  # a folder-shaped encode: a new empty folder the testee writes into
        print(f"the testee writes into {request['output_dir']}", file=sys.stderr)
    sys.stdout.write(json.dumps({"id": args.request_id, **request}, ensure_ascii=False) + "\n")
    return 0
