"""Run conformance cases against a testee: skip what its handshake does not cover, ask it,
check its answers, apply the known failures, and report.

    >>> from mlf_spec.conformance import runner, testee, vectors
    >>> result = runner.run(testee.Persistent(["my-reader"]), vectors.load_suite(), jobs=4)
    >>> result.exit_status, result.counts
"""

from __future__ import annotations

import datetime
import os
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from mlf_spec.errors import MlfError

from .judge import Answer, judge
from .known_failures import KnownFailures
from .report import UNEXPECTED, JsonLines, Progress, coverage, summary_record
from .testee import Testee
from .vectors import Case, format_support, scope_list


class TesteeStartError(MlfError):
    """The testee could not be started or did not answer its handshake (exit status 2)."""


@dataclass
class RunResult:
    """The outcome of a run."""

    results: list[dict[str, Any]]
    counts: Counter
    seconds: float
    coverage: list[dict[str, Any]]
    info: dict[str, Any]
    unused_known: list[Any] = field(default_factory=list)
    stopped: str = ""  # why the run stopped early (``maxfail``); "" when every case ran
    not_run: int = 0  # the cases left unrun when it stopped

    @property
    def exit_status(self) -> int:
        """0 when nothing failed unexpectedly, 1 otherwise."""
        return 1 if any(self.counts[o] for o in UNEXPECTED) else 0


def skip_reason(case: Case, info: dict[str, Any]) -> str | None:
    """Why the testee's handshake excludes ``case`` (None: it is in scope)."""
    reason = out_of_scope(case.format, case.role, case.scope, info)
    if reason is None and case.expected.get("outcome") == "reject":
        not_checked = (format_support(info, case.format) or {}).get("not_checked") or []
        cls = case.expected.get("error_class")
        if cls in not_checked:
            return f"the testee does not check {cls} (its handshake says so)"
        reason = opaque_skip(case, info)
    return reason


def opaque_skip(case: Case, info: dict[str, Any]) -> str | None:
    """Why a tvm-ffi blob case the reference rejects is a skip: its fault lies inside a
    length-consistent payload of a kind whose grammar the handshake's ``payloads`` leaves out
    (the testee reads it as opaque bytes, :mod:`.opaque`). None: the case is in scope."""
    if case.format != "blob" or case.options.get("layout") != "ffi" or case.expected.get("outcome") != "reject":
        return None
    declared = (format_support(info, case.format) or {}).get("payloads")
    if declared is None or case.is_folder:
        return None
    from .opaque import hidden_in

    try:
        kinds = hidden_in(case.input(), case.options, frozenset(declared))
    except MlfError:  # an unreadable input: the run reports it
        return None
    if not kinds:
        return None
    return (f"its fault lies inside a payload of {', '.join(kinds)}, whose grammar the handshake's `payloads` does "
            "not declare (read as opaque bytes)")


def out_of_scope(fmt: str, role: str, scope: dict[str, Any], info: dict[str, Any]) -> str | None:
    """Why the testee's handshake excludes a request of this format, role and scope (a scope
    value may be a list of values: the request is in scope if the testee supports one)."""
    support = format_support(info, fmt)
    if support is None:
        return f"the testee does not support {fmt}"
    if role not in support.get("roles", []):
        return f"the testee does not {role} {fmt}"
    for key, value in scope.items():
        allowed = (support.get("scope") or {}).get(key)
        values = scope_list(value)
        if allowed is not None and not any(v in allowed for v in values):
            return f"{key} {', '.join(values)} is outside what the testee supports ({', '.join(allowed)})"
    return None


def reads_of(info: dict[str, Any], fmt: str) -> list[str] | None:
    """The top-level reading keys a partial reader declares for ``fmt`` (None: the whole reading)."""
    reads = (format_support(info, fmt) or {}).get("reads")
    return list(reads) if reads is not None else None


def payloads_needed(case: Case) -> set[str]:
    """The module kinds whose payload grammar reading ``case`` needs: a legacy blob's payloads
    carry no length, so every kind in it ("*": some kind the vector does not name)."""
    if case.format != "blob" or case.options.get("layout") != "legacy":
        return set()
    reading = case.expected.get("reading")
    if isinstance(reading, dict):
        return {m["kind"] for m in reading.get("modules", []) if m.get("kind") not in ("_lib", "_import_tree")}
    return set(case.features.get("payload_kind", [])) or {"*"}


def unsupported_skip(case: Case, answer: Answer, info: dict[str, Any]) -> str | None:
    """Why an ``unsupported`` refusal is a skip: the case needs payload grammars the testee's
    handshake (``payloads``) says it does not parse. None: judge the answer as usual."""
    if answer.status != "rejected" or answer.error_class != "unsupported":
        return None
    declared = (format_support(info, case.format) or {}).get("payloads")
    if declared is None:
        return None
    missing = sorted(k for k in payloads_needed(case) if k not in declared)
    if not missing:
        return None
    kinds = "payloads of some kind" if missing == ["*"] else "the payload grammar of " + ", ".join(missing)
    return f"needs {kinds}, which the handshake's `payloads` does not declare (answered unsupported)"


#: the largest request line a report keeps (the reproduce command rebuilds longer ones)
REQUEST_KEPT = 64 << 10


def run_case(testee: Testee, case: Case, info: dict[str, Any], known: KnownFailures,
             strict_errors: bool = False) -> dict[str, Any]:
    """The report record of one case."""
    rec: dict[str, Any] = {"type": "case", "id": case.id, "format": case.format, "role": case.role}
    t0 = time.perf_counter()
    reason = skip_reason(case, info)
    if reason is not None:
        rec.update(outcome="skip", seconds=0.0, message=reason)
        return rec
    sent = case.retarget(info)
    changed = sent.retargeted(case)
    if changed:
        rec["retargeted"] = changed
    answer = testee.ask(sent)
    rec["seconds"] = round(time.perf_counter() - t0, 4)
    reason = unsupported_skip(sent, answer, info)
    if reason is not None:
        rec.update(outcome="skip", message=reason)
        return rec
    judged = judge(sent, answer, strict_errors=strict_errors, reads=reads_of(info, case.format))
    outcome = judged.outcome
    entry = known.match(case.id)
    if entry is not None:
        if entry.flaky:
            rec["flaky"] = True
        if outcome == "pass":
            outcome = "pass" if entry.flaky else "xpass"
            rec["message"] = entry.reason if entry.flaky else \
                f"listed as a known failure ({known.source}:{entry.line}) but passed: {entry.reason}"
        else:
            rec["note"] = f"{outcome}: {judged.message}"[:500]
            outcome = "xfail"
            rec["message"] = entry.reason
    rec["outcome"] = outcome
    if outcome in ("fail", "error"):
        rec.update(judged.details())
    if outcome in ("fail", "error", "xpass", "xfail"):
        repro = testee.reproduce(sent)
        if repro:
            rec["reproduce"] = repro
        line = testee.request_line(sent) if testee.mode == "persistent" else ""
        if line and len(line) <= REQUEST_KEPT:
            rec["request"] = line
    if judged.note and "note" not in rec:
        rec["note"] = judged.note
    return rec


def run(testee: Testee, cases: list[Case], *, known: KnownFailures | None = None, jobs: int = 1,
        report: JsonLines | None = None, strict_errors: bool = False, vectors: str = "",
        on_result: Callable[[dict[str, Any]], None] | None = None, progress: bool = True,
        write_summary: bool = True, suite_ids: set[str] | None = None, suite_sha256: str = "",
        choose: Callable[[list[Case], dict[str, Any]], list[Case]] | None = None, maxfail: int = 0,
        label: str = "") -> RunResult:
    """Run ``cases`` against ``testee``; TesteeStartError if its handshake fails. The report
    gets the run line, a line per case as it finishes and (``write_summary``) the summary.
    ``suite_ids``: the ids of the whole suite the cases were selected from (default: the
    cases); a known failure matching none of them is reported as unused. ``suite_sha256``:
    the suite's digest (:func:`vectors.suite_digest`), kept on the run line. ``choose``: what
    of ``cases`` to run once the handshake is known (a sample, :mod:`.sampling`). ``maxfail``
    N > 0: stop after N unexpected outcomes (fail, error, xpass; pytest's ``--maxfail``), the
    cases not yet started left unrun and the summary saying so. ``label``: kept on the run line
    (the results page names the run by it)."""
    known = known or KnownFailures()
    try:
        info = testee.info()
    except MlfError as exc:
        raise TesteeStartError(exc.message) from None
    offered = len(cases)
    if choose is not None:
        cases = choose(cases, info)
    started = time.perf_counter()
    if report is not None:
        report.write(run_line(testee, info, len(cases), vectors=vectors, suite_sha256=suite_sha256, label=label,
                              sampled_from=offered if choose is not None else None))
    bar = Progress(len(cases)) if progress else None

    def finished(rec: dict[str, Any]) -> None:
        if report is not None:
            report.write(rec)
        if bar is not None:
            bar.step(rec["outcome"])
        if on_result is not None:
            on_result(rec)

    try:
        results, stopped = _run_cases(testee, cases, info, known, strict_errors, jobs, maxfail, finished)
    finally:
        if bar is not None:
            bar.finish()
        testee.close()
    seconds = time.perf_counter() - started
    counts = Counter(r["outcome"] for r in results)
    rows = coverage(results, {c.id: c.features for c in cases})
    unused = [e for e in known.unused(suite_ids if suite_ids is not None else {c.id for c in cases})
              if not e.pattern.startswith("gen.")]
    result = RunResult(results, counts, seconds, rows, info, unused)
    if stopped:
        result.not_run = len(cases) - len(results)
        result.stopped = stopped_text(maxfail)
    if report is not None and write_summary:
        report.write(summary_of(result, known))
    return result


def run_line(testee: Testee, info: dict[str, Any], cases: int, *, vectors: str = "", suite_sha256: str = "",
             label: str = "", sampled_from: int | None = None) -> dict[str, Any]:
    """The ``run`` line a report starts with (conformance_report.run)."""
    from mlf_spec import __version__

    line: dict[str, Any] = {
        "type": "run", "mlf_spec": __version__, "testee": testee.describe(), "testee_info": info, "vectors": vectors,
        "started": datetime.datetime.now(datetime.timezone.utc).isoformat(), "cases": cases, "mode": testee.mode}
    if suite_sha256:
        line["suite_sha256"] = suite_sha256
    if label:
        line["label"] = label
    if sampled_from is not None:
        line["sampled_from"] = sampled_from
    return line


def _run_cases(testee: Testee, cases: list[Case], info: dict[str, Any], known: KnownFailures, strict_errors: bool,
               jobs: int, maxfail: int, finished: Callable[[dict[str, Any]], None]) -> tuple[list[dict[str, Any]], bool]:
    """The records of the cases run (``jobs`` at once; ``finished`` called with each as it ends)
    and whether the run stopped after ``maxfail`` unexpected outcomes (the rest not started)."""
    stop = threading.Event()
    lock = threading.Lock()
    unexpected = [0]

    def one(case: Case) -> dict[str, Any] | None:
        if stop.is_set():
            return None
        try:
            rec = run_case(testee, case, info, known, strict_errors)
        except MlfError as exc:  # the case itself is unusable (its input is missing or altered)
            rec = {"type": "case", "id": case.id, "format": case.format, "role": case.role, "outcome": "error",
                   "seconds": 0.0, "error_kind": "protocol", "message": f"the case cannot be run: {exc}"}
        finished(rec)
        if maxfail > 0 and rec["outcome"] in UNEXPECTED:
            with lock:
                unexpected[0] += 1
                if unexpected[0] >= maxfail:
                    stop.set()
        return rec

    if jobs > 1:
        with ThreadPoolExecutor(jobs) as pool:
            ran = list(pool.map(one, cases))
    else:
        ran = [one(c) for c in cases]
    return [r for r in ran if r is not None], stop.is_set()


def stopped_text(maxfail: int) -> str:
    """Why a run stopped early: ``stopped after 1 unexpected outcome (-x / --maxfail 1)``."""
    return f"stopped after {maxfail} unexpected outcome{'s' if maxfail != 1 else ''} (-x / --maxfail {maxfail})"


def summary_of(result: RunResult, known: KnownFailures, results: list[dict[str, Any]] | None = None,
               seconds: float | None = None) -> dict[str, Any]:
    """The summary line of ``result`` (``results``/``seconds``: with generated cases added),
    saying when it stopped early and how many cases were left unrun."""
    rec = summary_record(result.results if results is None else results,
                         result.seconds if seconds is None else seconds, result.coverage,
                         unused_lines(known, result.unused_known))
    if result.stopped:
        rec.update(stopped=result.stopped, not_run=result.not_run)
    return rec


def unused_lines(known: KnownFailures, unused: list[Any]) -> list[str]:
    """``file:line pattern`` of each unused known-failure entry (the file's name only, so a
    report or page written from another checkout says the same)."""
    return [f"{os.path.basename(str(e.source or known.source))}:{e.line} {e.pattern}" for e in unused]


__all__ = ["RunResult", "TesteeStartError", "opaque_skip", "out_of_scope", "payloads_needed", "reads_of", "run", "run_case",
           "run_line",
           "skip_reason", "stopped_text", "summary_of", "unsupported_skip", "unused_lines"]
