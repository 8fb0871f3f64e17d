"""What a run leaves behind: the JSON Lines report (written as the run goes), a JUnit XML file,
the coverage table, the one summary line and a progress bar on a terminal.

The JSON report's lines follow generated/schemas/conformance_report.schema.json: a ``run``
line, one ``case`` line per finished case (flushed at once, so a killed runner leaves every
finished case readable), and a ``summary`` line at the end.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any
from xml.sax.saxutils import escape, quoteattr

from mlf_spec._io import atomic_write_bytes, read_limited
from mlf_spec.errors import MlfError

OUTCOMES = ("pass", "fail", "error", "xfail", "xpass", "skip")
UNEXPECTED = ("fail", "error", "xpass")


class JsonLines:
    """A JSON Lines report file, one flushed line per record."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        try:
            self.f: IO[str] = open(self.path, "w", encoding="utf-8")  # noqa: SIM115
        except OSError as exc:
            raise MlfError(f"cannot write the report: {exc.strerror}", file=str(self.path)) from None
        self._lock = threading.Lock()

    def write(self, record: dict[str, Any]) -> None:
        """Append one record and flush it."""
        with self._lock:
            try:
                self.f.write(json.dumps(record, ensure_ascii=False) + "\n")
            except UnicodeEncodeError:  # a testee's string with a lone surrogate: escaped, still JSON
                self.f.write(json.dumps(record) + "\n")
            self.f.flush()

    def close(self) -> None:
        """Close the file."""
        self.f.close()


def read_report(path: str | os.PathLike) -> list[dict[str, Any]]:
    """The records of a JSON Lines report, each validated against its schema; a report cut
    short (a killed run) reads up to its last whole line. MlfError for a malformed one."""
    from pydantic import ValidationError

    from mlf_spec.generated import conformance_report_models as models

    kinds = {"run": models.ReportRun, "case": models.ReportCase, "generated": models.ReportGenerated,
             "summary": models.ReportSummary}
    p = Path(path)
    try:
        lines = read_limited(p).decode("utf-8").split("\n")
    except UnicodeDecodeError as exc:
        raise MlfError(f"cannot read the report: {exc}", file=str(p)) from None
    complete = lines[:-1]  # what follows the last newline is a line the run did not finish
    out = []
    for n, line in enumerate(complete, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            if not isinstance(rec, dict) or rec.get("type") not in kinds:
                raise MlfError(f"line {n} is not a report record: not a JSON object whose 'type' is one of "
                               f"{', '.join(kinds)}", file=str(p), field=f"line {n}")
            kinds[rec["type"]].model_validate(rec)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(x) for x in first.get("loc", ()))
            raise MlfError(f"line {n} is not a report record: {where}: {first.get('msg')}", file=str(p),
                           field=f"line {n}" + (f": {where}" if where else "")) from None
        except (ValueError, RecursionError) as exc:
            raise MlfError(f"line {n} is not a report record: not JSON ({str(exc).splitlines()[0]})", file=str(p),
                           field=f"line {n}") from None
        out.append(rec)
    if not out or out[0]["type"] != "run":
        raise MlfError("a report starts with its run line", file=str(p))
    return out


def coverage(results: list[dict[str, Any]], features: dict[str, dict[str, list[str]]]) -> list[dict[str, Any]]:
    """Rows (format, feature, value, passed, total, unexpected) over the cases that ran (not
    skipped); a flaky known failure that passed is not counted as passed; a retargeted case
    counts under the option values it ran with; ``unexpected`` counts fail, error and xpass."""
    table: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0, 0])
    for r in results:
        if r["outcome"] == "skip":
            continue
        ran_with = r.get("retargeted") or {}
        for feature, values in features.get(r["id"], {}).items():
            for v in ([ran_with[feature]] if feature in ran_with else values):
                cell = table[(r["format"], feature, v)]
                cell[1] += 1
                cell[0] += r["outcome"] == "pass" and not r.get("flaky")
                cell[2] += r["outcome"] in UNEXPECTED
    return [{"format": f, "feature": k, "value": v, "passed": p, "total": t, "unexpected": u}
            for (f, k, v), (p, t, u) in sorted(table.items())]


def shown(rec: dict[str, Any]) -> str:
    """The category a case is counted under everywhere (summary line, report, pages): its
    outcome, or ``flaky`` for a flaky known failure whether it passed this time or not."""
    return "flaky" if rec.get("flaky") else rec["outcome"]


def tally(results: list[dict[str, Any]]) -> Counter:
    """Cases per category of :func:`shown`."""
    return Counter(shown(r) for r in results)


def coverage_lines(rows: list[dict[str, Any]], width: int = 100) -> list[str]:
    """The coverage table for a terminal: per format and feature, passed/total and what failed."""
    out = []
    by: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by[(r["format"], r["feature"])].append(r)
    last = None
    for (fmt, feature), items in sorted(by.items()):
        if fmt != last:
            out.append(f"{fmt}:")
            last = fmt
        full = sum(1 for r in items if r["passed"] == r["total"])
        text = f"  {feature:<14} {full}/{len(items)} values all passed"
        partial = [f"{r['value']} ({r['passed']}/{r['total']})" for r in items if r["passed"] != r["total"]]
        if partial:
            shown = ", ".join(partial)
            text += "; not: " + (shown if len(shown) <= width else shown[:width] + f"... ({len(partial)} values)")
        out.append(text)
    return out


def summary_record(results: list[dict[str, Any]], seconds: float, rows: list[dict[str, Any]],
                   unused: list[str] | None = None) -> dict[str, Any]:
    """The ``summary`` line of the JSON report."""
    counts = Counter(r["outcome"] for r in results)
    rec: dict[str, Any] = {"type": "summary", "counts": dict(counts), "seconds": round(seconds, 3),
                           "exit_status": 1 if any(counts[o] for o in UNEXPECTED) else 0, "coverage": rows,
                           "flaky": sum(1 for r in results if r.get("flaky"))}
    if unused:
        rec["unused_known"] = list(unused)
    return rec


WORDS = {"pass": "passed", "fail": "failed", "error": "errors", "xfail": "known failures",
         "xpass": "unexpected passes", "skip": "skipped", "flaky": "flaky known failures"}
#: the order categories are named in
CATEGORIES = ("pass", "fail", "error", "xfail", "xpass", "skip", "flaky")


def count_words(counts: Counter) -> str:
    """``790 passed, 3 failed, 2 flaky known failures`` (categories of :func:`shown`)."""
    return ", ".join(f"{counts[o]} {WORDS[o]}" for o in CATEGORIES if counts[o]) or "none run"


def summary_line(results: list[dict[str, Any]], seconds: float) -> str:
    """``802 cases: 790 passed, 3 failed, ... in 4.2 s`` (the vectors; generated cases are
    summed up by :func:`generated_line`)."""
    return f"{len(results)} cases: {count_words(tally(results))} in {seconds:.1f} s"


def generated_line(gen: dict[str, Any], results: list[dict[str, Any]]) -> str:
    """``generated: --generate 100 --seed 1 (budget 20 s): 131 requests asked, shrinking included, in 3.1 s: 2 kinds
    of disagreement (1 failed, 1 known failures)``."""
    head = (f"generated: --generate {gen['requested']} --seed {gen['seed']} (budget {gen['budget']:g} s): "
            f"{gen['drawn']} requests asked, shrinking included, in {gen['seconds']:.1f} s")
    if not results:
        return head + ": no disagreement"
    return head + f": {len(results)} kinds of disagreement ({count_words(tally(results))})"


#: the unexpected outcomes a terminal shows one by one (the rest: "... and N more")
SHOWN_FAILURES = 50


def write_results(out: IO[str], result: Any, results: list[dict[str, Any]], known: Any, *, quiet: bool = False,
                  generated: dict[str, Any] | None = None, generated_results: Sequence[dict[str, Any]] = (),
                  generating: bool = False) -> None:
    """What ``conformance run`` prints when it is done: each unexpected outcome (up to
    :data:`SHOWN_FAILURES`, with its first diff lines and how to reproduce it), the coverage
    table and unused known failures (not ``quiet``), why the run stopped early, the summary
    line and, with generated cases (the ``generated`` record), their line. ``result``: the
    runner's RunResult; ``results``: its case records and the generated ones."""
    if not quiet:
        _write_failures(out, results)
        if result.coverage:
            out.write("coverage (values of each feature whose cases all passed):\n")
            for line in coverage_lines(result.coverage):
                out.write(line + "\n")
        for e in result.unused_known:
            out.write(f"note: known failure {e.pattern!r} ({e.source or known.source}:{e.line}) matches no case "
                      "of the suite\n")
    if result.stopped:
        out.write(f"{result.stopped}: {result.not_run} of {len(result.results) + result.not_run} cases not run"
                  + (", no generated case" if generating else "") + "\n")
    out.write(summary_line(result.results, result.seconds) + "\n")
    if generated is not None:
        out.write(generated_line(generated, list(generated_results)) + "\n")


def _write_failures(out: IO[str], results: list[dict[str, Any]]) -> None:
    n = 0
    for r in results:
        if r["outcome"] not in UNEXPECTED:
            continue
        n += 1
        if n > SHOWN_FAILURES:
            continue
        out.write(f"{r['outcome'].upper()} {r['id']}: {r.get('message', '')}\n")
        for line in r.get("diff", [])[:3]:
            out.write(f"    {line}\n")
        if r.get("reproduce"):
            out.write(f"    reproduce: {r['reproduce']}\n")
    if n > SHOWN_FAILURES:
        out.write(f"... and {n - SHOWN_FAILURES} more (see --report-json)\n")


def _xml_safe(text: Any) -> str:
    """``text`` with what XML 1.0 cannot hold (C0 controls but tab and newline, lone
    surrogates, U+FFFE/U+FFFF) and what a terminal acts on (ANSI escapes, BEL) written as
    ``\\uNNNN``: a testee's coloured stderr still gives a JUnit file that parses."""
    from mlf_spec._text import terminal_safe

    return terminal_safe(str(text)).replace("\ufffe", "\\ufffe").replace("\uffff", "\\uffff")


def write_junit(path: str | os.PathLike, results: list[dict[str, Any]], name: str, seconds: float) -> None:
    """A JUnit XML file: one testsuite, one testcase per case (written atomically)."""
    counts = Counter(r["outcome"] for r in results)
    failures = counts["fail"] + counts["xpass"]

    def _attr(v: Any) -> str:
        return quoteattr(_xml_safe(v))

    def _text(v: Any) -> str:
        return escape(_xml_safe(v))

    lines = ['<?xml version="1.0" encoding="utf-8"?>',
             f'<testsuites><testsuite name={_attr(name)} tests="{len(results)}" failures="{failures}" '
             f'errors="{counts["error"]}" skipped="{counts["skip"] + counts["xfail"]}" time="{seconds:.3f}">']
    for r in sorted(results, key=lambda r: r["id"]):
        head = (f'<testcase classname={_attr("conformance." + r["format"])} name={_attr(r["id"])} '
                f'time="{r.get("seconds", 0):.3f}"')
        msg = r.get("message", "")
        detail = "\n".join(r.get("diff", []) + ([f"reproduce: {r['reproduce']}"] if r.get("reproduce") else []))
        if r["outcome"] in ("fail", "xpass"):
            body = f"<failure message={_attr(msg or 'unexpected pass')}>{_text(detail)}</failure>"
        elif r["outcome"] == "error":
            body = f"<error message={_attr(msg)} type={_attr(r.get('error_kind', 'error'))}>{_text(detail)}</error>"
        elif r["outcome"] in ("skip", "xfail"):
            body = f"<skipped message={_attr(msg)}/>"
        else:
            lines.append(head + "/>")
            continue
        lines.append(head + ">" + body + "</testcase>")
    lines.append("</testsuite></testsuites>")
    atomic_write_bytes(Path(path), ("\n".join(lines) + "\n").encode("utf-8"))


class Progress:
    """A one-line progress bar on stderr, only when stderr is a terminal. The bar's own
    carriage returns go to the stream under the CLI's escaping one (``unescaped``): escaped,
    a terminal shows them as the text ``\\u000d``."""

    def __init__(self, total: int, stream: IO[str] | None = None) -> None:
        self.stream = stream or sys.stderr
        self.total = total
        self.done = 0
        self.counts: Counter = Counter()
        self.active = self.stream.isatty() and total > 0
        self._out: IO[str] = getattr(self.stream, "unescaped", self.stream)
        self._lock = threading.Lock()
        self._last = 0.0

    def step(self, outcome: str) -> None:
        """Count one finished case and redraw."""
        with self._lock:
            self.done += 1
            self.counts[outcome] += 1
            if not self.active:
                return
            bad = sum(self.counts[o] for o in UNEXPECTED)
            self._draw(self.done, "" if not bad else f"  {bad} unexpected")

    def generated(self, asked: int, found: int) -> None:
        """Redraw for the ``--generate`` phase: requests asked of ``total``, kinds of disagreement found."""
        with self._lock:
            self.done = asked
            if self.active:
                self._draw(asked, f"  generated, {found} kind(s) of disagreement")

    def _draw(self, done: int, tail: str) -> None:
        now = time.monotonic()
        if done < self.total and now - self._last < 0.1:
            return  # at most ten redraws a second: thousands of fast cases write no megabytes
        self._last = now
        width = 30
        filled = width * min(done, self.total) // self.total
        self._out.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{self.total}{tail} ")
        self._out.flush()

    def finish(self) -> None:
        """Clear the bar."""
        if self.active:
            self._out.write("\r\x1b[K")
            self._out.flush()


__all__ = ["CATEGORIES", "JsonLines", "OUTCOMES", "Progress", "SHOWN_FAILURES", "UNEXPECTED", "WORDS", "count_words",
           "coverage", "coverage_lines", "generated_line", "read_report", "shown", "summary_line", "summary_record",
           "tally", "write_junit", "write_results"]
