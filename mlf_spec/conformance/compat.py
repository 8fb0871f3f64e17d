"""Compatibility pages: one Markdown page per implementation, made from the JSON Lines report
of a conformance run (``mlf-spec conformance report REPORT.jsonl -o PAGE.md``).

A page says what the testee declared (formats, roles, scope, what a partial reader reads, what
it does not check), its results per format, the coverage table (which dtypes, dialects,
payload kinds, versions passed), and every case it does not pass with the reason (the line
of its known-failures file) and what was seen, one line each with the vector id. Cases found
by ``--generate`` get their own section, between ``<!-- generated cases -->`` markers: they
depend on the seed and the time budget, the rest of the page only on the implementation and
the suite (:func:`stable_part` is what a check compares).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from .report import count_words, generated_line, shown, tally

GENERATED_BEGIN = "<!-- generated cases -->"
GENERATED_END = "<!-- end of generated cases -->"
_WORDS = {"pass": "passed", "xfail": "known failure", "fail": "FAILED", "error": "ERROR", "xpass": "unexpected pass",
          "skip": "skipped", "flaky": "known failure (flaky)"}

_shown = shown


def _cell(text: Any, limit: int = 160) -> str:
    """One table cell: one line, pipes escaped, cut to ``limit`` characters."""
    s = " ".join(str(text).split()).replace("|", "\\|")
    return s if len(s) <= limit else s[: limit - 1] + "…"


def _seen(rec: dict[str, Any]) -> str:
    if rec.get("flaky"):
        return "passes or fails from run to run"
    note = rec.get("note") or ""
    if rec["outcome"] == "xfail" and note:
        return note.split(": ", 1)[1] if note.split(": ", 1)[0] in ("fail", "error") else note
    if rec["outcome"] in ("fail", "error"):
        return rec.get("message", "")
    return note


def _declared(info: dict[str, Any]) -> list[str]:
    lines = ["| format | roles | scope | compared | not required to reject |", "|---|---|---|---|---|"]
    for f in info.get("formats", []):
        scope = "; ".join(f"{k}: {', '.join(v)}" for k, v in sorted((f.get("scope") or {}).items())) or "all"
        reads = "the whole reading" if f.get("reads") is None else \
            ", ".join(f["reads"]) or "no reading (accepted or refused)"
        if f.get("payloads") is not None:
            reads += "; payloads of " + (", ".join(f["payloads"]) or "no kind") + " parsed"
        not_checked = ", ".join(f.get("not_checked") or []) or "—"
        lines.append(f"| {f['format']} | {', '.join(f.get('roles', []))} | {_cell(scope)} | {reads} | {not_checked} |")
    return lines


def _results(cases: list[dict[str, Any]]) -> list[str]:
    by: dict[str, Counter] = defaultdict(Counter)
    for r in cases:
        by[r["format"]][_shown(r)] += 1
    lines = ["| format | run | passed | known failures | failed | errors | unexpected passes | skipped |",
             "|---|---|---|---|---|---|---|---|"]
    total: Counter = Counter()
    for fmt in sorted(by):
        total += by[fmt]
    for fmt, c in [*((f, by[f]) for f in sorted(by)), ("**all**", total)]:
        lines.append(f"| {fmt} | {sum(c.values()) - c['skip']} | {c['pass']} | {c['xfail'] + c['flaky']} | {c['fail']} | "
                     f"{c['error']} | {c['xpass']} | {c['skip']} |")
    return lines


def _coverage(rows: list[dict[str, Any]]) -> list[str]:
    by: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by[(r["format"], r["feature"])].append(r)
    lines = ["| format | feature | every case passed | not every case passed (passed/run) |", "|---|---|---|---|"]
    for (fmt, feature), items in sorted(by.items()):
        good = [r["value"] for r in items if r["passed"] == r["total"]]
        bad = [f"{r['value']} ({r['passed']}/{r['total']})" for r in items if r["passed"] != r["total"]]
        lines.append(f"| {fmt} | {feature} | {_cell(', '.join(good) or '—', 2000)} | {_cell(', '.join(bad) or '—', 2000)} |")
    return lines


def _divergences(cases: list[dict[str, Any]]) -> list[str]:
    bad = [r for r in cases if _shown(r) not in ("pass", "skip")]
    if not bad:
        return ["None: every case in scope passed."]
    lines = ["| vector | outcome | why | seen |", "|---|---|---|---|"]
    for r in sorted(bad, key=lambda r: r["id"]):
        why = r.get("message", "") if _shown(r) in ("xfail", "xpass", "flaky") else "not in the known failures"
        lines.append(f"| `{r['id']}` | {_WORDS[_shown(r)]} | {_cell(why, 300)} | {_cell(_seen(r))} |")
    return lines


def page(records: list[dict[str, Any]], title: str | None = None) -> str:
    """The Markdown compatibility page of one run's report records (read_report's output)."""
    run = records[0]
    info = run.get("testee_info") or {}
    summary = next((r for r in records if r["type"] == "summary"), None)
    cases = [r for r in records if r["type"] == "case" and not r["id"].startswith("gen.")]
    generated = [r for r in records if r["type"] == "case" and r["id"].startswith("gen.")]
    gen = next((r for r in records if r["type"] == "generated"), None)
    name = title or f"{info.get('name', run['testee'])}"
    out = [
        "<!-- Generated by `mlf-spec conformance report` from the JSON report of a conformance run: do not edit. -->",
        "",
        f"# Compatibility: {name}",
        "",
        f"Tested: {info.get('name', '?')} {info.get('version', '?')}, as `{run['testee']}` ({run['mode']}), "
        f"against the conformance vectors of mlf-spec {run['mlf_spec']}.",
        "",
        f"{len(cases)} cases: {count_words(tally(cases))}."
        + ("" if len(cases) == run["cases"] else f" (The run selected {run['cases']}; it did not finish.)"),
        "",
        *([f"Known-failure lines that match no case of the suite: {', '.join(f'`{u}`' for u in summary['unused_known'])}.",
           ""] if summary and summary.get("unused_known") else []),
        "## What it declares",
        "",
        "Its handshake (`info`): cases outside these formats, roles and scope are skipped; a partial reader is "
        "compared on the keys it reads; a rejection it does not claim to make is not required of it.",
        "",
        *_declared(info),
        "",
        "## Results",
        "",
        *_results(cases),
        "",
        "## Coverage",
        "",
        "Per format and feature, the values whose cases all passed, and the others with passed/run (known "
        "failures count as not passed; skipped cases are not counted).",
        "",
        *(_coverage(summary["coverage"]) if summary else ["(the run did not finish: no summary)"]),
        "",
        "## Divergences",
        "",
        "Every case in scope that did not pass, with the reason (the line of the adapter's known-failures file) "
        "and what the runner saw.",
        "",
        *_divergences(cases),
        "",
        GENERATED_BEGIN,
        "## Found by generated cases",
        "",
    ]
    if gen is not None:
        out += [generated_line(gen, generated) + ".", "", "Kinds drawn: " + ", ".join(
            f"{k} {n}" for k, n in gen["kinds"].items()) + ".", ""]
    if generated:
        out += ["Disagreements `--generate` found (shrunk to minimal inputs; which ones a run finds depends on its seed "
                "and time budget), with the reason they are expected.", "", "| case | outcome | why | seen |",
                "|---|---|---|---|"]
        for r in sorted(generated, key=lambda r: r["id"]):
            why = r.get("message", "") if r["outcome"] == "xfail" else "not in the known failures"
            out.append(f"| `{r['id']}` | {_WORDS[r['outcome']]} | {_cell(why, 300)} | {_cell(_seen(r))} |")
    else:
        out.append("No generated cases in this run." if gen is None else "None disagreed.")
    out += ["", GENERATED_END, ""]
    return "\n".join(out)


def stable_part(text: str) -> str:
    """A page without what changes from run to run of the same implementation on the same
    suite: the generated-cases section and the line naming versions."""
    if GENERATED_BEGIN in text and GENERATED_END in text:
        head, rest = text.split(GENERATED_BEGIN, 1)
        text = head + rest.split(GENERATED_END, 1)[1]
    return "\n".join(line for line in text.splitlines() if not line.startswith("Tested: "))


__all__ = ["GENERATED_BEGIN", "GENERATED_END", "page", "stable_part"]
