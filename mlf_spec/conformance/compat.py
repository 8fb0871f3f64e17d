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


def _md(text: Any) -> str:
    """Text from a testee or a report made safe for Markdown, as the HTML report escapes it:
    ``&``, ``<`` and ``>`` as HTML entities (a renderer that keeps raw HTML runs no
    ``<script>`` and shows no ``<img onerror>``), ``](`` and backticks escaped (no link
    or image, no code span opened), control characters (ANSI escapes, BEL) as ``\\uNNNN``."""
    from mlf_spec._text import terminal_safe

    s = terminal_safe(str(text)).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return s.replace("](", "]\\(").replace("`", "\\`")


def _code(text: Any) -> str:
    """``text`` as a Markdown code span (no HTML is read inside one): control characters as
    ``\\uNNNN``, a fence longer than any run of backticks in it."""
    from mlf_spec._text import terminal_safe

    s = " ".join(terminal_safe(str(text)).split())
    fence = "`"
    while fence in s:
        fence += "`"
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    return f"{fence}{pad}{s}{pad}{fence}"


def _cell(text: Any, limit: int = 160) -> str:
    """One table cell: one line, escaped (:func:`_md`), pipes escaped, cut to ``limit``
    characters (before escaping, so an entity is never cut)."""
    s = " ".join(str(text).split())
    s = s if len(s) <= limit else s[: limit - 1] + "…"
    return _md(s).replace("|", "\\|")


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
        lines.append(f"| {_cell(f['format'])} | {_cell(', '.join(f.get('roles', [])))} | {_cell(scope)} | "
                     f"{_cell(reads, 2000)} | {_cell(not_checked, 2000)} |")
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
        lines.append(f"| {_code(r['id'])} | {_WORDS[_shown(r)]} | {_cell(why, 300)} | {_cell(_seen(r))} |")
    return lines


#: how a page names the digest of the suite it was made from (:func:`suite_of`)
SUITE_PREFIX = "Suite: content digest "


def _suite_line(run: dict[str, Any]) -> list[str]:
    """The line naming the suite's digest, and what a sample was drawn from (none for older reports)."""
    if not run.get("suite_sha256"):
        return []
    line = f"{SUITE_PREFIX}`{run['suite_sha256']}`"
    if run.get("sampled_from") is not None:
        line += f"; a stratified sample of {run['cases']} of its {run['sampled_from']} selected cases"
    return [line + ".", ""]


def suite_of(text: str) -> str | None:
    """The suite digest a page names (None: it names none)."""
    for line in text.splitlines():
        if line.startswith(SUITE_PREFIX):
            return line[len(SUITE_PREFIX):].split("`")[1]
    return None


def page(records: list[dict[str, Any]], title: str | None = None) -> str:
    """The Markdown compatibility page of one run's report records (read_report's output)."""
    run = records[0]
    info = run.get("testee_info") or {}
    summary = next((r for r in records if r["type"] == "summary"), None)
    cases = [r for r in records if r["type"] == "case" and not r["id"].startswith("gen.")]
    generated = [r for r in records if r["type"] == "case" and r["id"].startswith("gen.")]
    gen = next((r for r in records if r["type"] == "generated"), None)
    name = _md(" ".join(str(title or info.get("name", run["testee"])).split()))
    out = [
        "<!-- Generated by `mlf-spec conformance report` from the JSON report of a conformance run: do not edit. -->",
        "",
        f"# Compatibility: {name}",
        "",
        f"Tested: {_cell(info.get('name', '?'), 2000)} {_cell(info.get('version', '?'), 2000)}, as "
        f"{_code(run['testee'])} ({_md(run['mode'])}), "
        f"against the conformance vectors of mlf-spec {run['mlf_spec']}.",
        "",
        *_suite_line(run),
        f"{len(cases)} cases: {count_words(tally(cases))}."
        + ("" if len(cases) == run["cases"] else f" (The run selected {run['cases']}; it did not finish.)"),
        "",
        *([f"Known-failure lines that match no case of the suite: {', '.join(_code(u) for u in summary['unused_known'])}.",
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
            out.append(f"| {_code(r['id'])} | {_WORDS[r['outcome']]} | {_cell(why, 300)} | {_cell(_seen(r))} |")
    else:
        out.append("No generated cases in this run." if gen is None else "None disagreed.")
    out += ["", GENERATED_END, ""]
    return "\n".join(out)


def declared_part(text: str) -> str:
    """The section of a page saying what the testee declares (its handshake)."""
    return text.split("## What it declares", 1)[-1].split("## Results", 1)[0]


def stable_part(text: str) -> str:
    """A page without what changes from run to run of the same implementation on the same
    suite: the generated-cases section and the line naming versions."""
    if GENERATED_BEGIN in text and GENERATED_END in text:
        head, rest = text.split(GENERATED_BEGIN, 1)
        text = head + rest.split(GENERATED_END, 1)[1]
    return "\n".join(line for line in text.splitlines() if not line.startswith("Tested: "))


__all__ = ["GENERATED_BEGIN", "GENERATED_END", "SUITE_PREFIX", "declared_part", "page", "stable_part", "suite_of"]
