"""The HTML results page: one self-contained file (no request leaves it: styles and script are
inline) over the result entries of one or more implementations (:mod:`.results`).

What failed comes first: a summary per run (labelled by implementation, version, --label and,
where two would look the same, start time; the passed/applicable cell coloured by unexpected
failures: known failures are not failures), links to each run's unexpected and known failures,
near-identical cases grouped (one format, role, outcome and reason, numbers aside), each with
its reason, its diff and, for a page made from a user's report, the command that reproduces it.
Then the matrices of runs against formats, features and rules (passed/run per cell), with
filters (runs, format, outcome, text). The rows are written by Python; the script only hides and shows them, so
the page reads without it.
"""

from __future__ import annotations

import re
from collections import defaultdict
from html import escape as _entities
from typing import Any

from mlf_spec._text import terminal_safe

from .report import UNEXPECTED, WORDS
from .results import known, plural, unexpected


def escape(text: str, quote: bool = True) -> str:
    """Text from a testee or a report for the page: control characters (ANSI escapes, BEL,
    NUL, bidi overrides) as ``\\uNNNN``, as the Markdown page and the terminal show them,
    then ``&``, ``<``, ``>`` (and quotes) as entities."""
    return _entities(terminal_safe(text), quote)


_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em}
table{border-collapse:collapse;margin:.5em 0}th,td{border:1px solid #ccc;padding:2px 8px;text-align:left}
th{background:#f3f3f3}td.cell{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
th,td{overflow-wrap:anywhere}#summary td:nth-child(-n+2),th[data-impl]{max-width:18em}
.all{background:#dff5d8}.some{background:#fff2c4}.none{background:#f8d3cc}.na{color:#999}
#filters{position:sticky;top:0;background:#fff;padding:.5em 0;border-bottom:1px solid #ddd}
#filters label{margin-right:1em}details{border:1px solid #ddd;margin:.3em 0;padding:.2em .6em}
summary{cursor:pointer}pre{background:#f7f7f7;padding:.4em;overflow-x:auto;white-space:pre-wrap}
.outcome{font-weight:600}.fail,.error,.xpass{color:#b00}.xfail,.flaky{color:#a60}
td.bad a,td.bad{color:#b00;font-weight:600}h3{font-size:1.05em;margin:.8em 0 .3em}
[hidden]{display:none!important}
"""

_SCRIPT = """
(function(){
  var q=function(s){return Array.prototype.slice.call(document.querySelectorAll(s));};
  function apply(){
    var impls={};q('input.impl').forEach(function(b){impls[b.value]=b.checked;});
    var fmt=document.getElementById('f-format').value, out=document.getElementById('f-outcome').value;
    var text=document.getElementById('f-text').value.toLowerCase();
    q('[data-impl]').forEach(function(el){
      if(!el.hasAttribute('data-row')) el.hidden=!impls[el.getAttribute('data-impl')];});
    q('[data-row]').forEach(function(el){
      var ok=true, f=el.getAttribute('data-format'), i=el.getAttribute('data-impl'), o=el.getAttribute('data-outcome');
      if(fmt && f && f!==fmt) ok=false;
      if(i && !impls[i]) ok=false;
      if(out && o && o!==out) ok=false;
      if(out && !o && el.getAttribute('data-row')==='failure') ok=false;
      if(text && el.getAttribute('data-text').toLowerCase().indexOf(text)<0) ok=false;
      el.hidden=!ok;});
    var shown=q('[data-row="failure"]').filter(function(el){return !el.hidden;}).length;
    document.getElementById('shown').textContent=String(shown);
    document.getElementById('shown-noun').textContent=shown===1?'group':'groups';
  }
  q('#filters input, #filters select').forEach(function(el){el.addEventListener('input',apply);
    el.addEventListener('change',apply);});
  apply();
})();
"""


def _cell(counts: tuple[int, ...] | None) -> str:
    """A passed/run cell; with a third number (the unexpected outcomes among them) coloured by
    that: green when none (known failures are not failures), else yellow or red."""
    if counts is None:
        return '<td class="cell na">—</td>'
    passed, run = counts[0], counts[1]
    if len(counts) > 2:
        bad = counts[2]
        cls = "all" if not bad and run else "none" if bad > 0.1 * run or not passed else "some"
        title = f' title="{bad} unexpected, {run - passed - bad} known failures or skipped"'
        return f'<td class="cell {cls}"{title}>{passed}/{run}</td>'
    cls = "all" if passed == run else "none" if passed == 0 else "some"
    return f'<td class="cell {cls}">{passed}/{run}</td>'


def _columns(entries: list[dict[str, Any]]) -> list[str]:
    """One label per run: the implementation, its version, the run's --label, and the start
    time where two runs would otherwise look the same."""
    base = []
    for e in entries:
        parts = [e["name"]] + ([e["version"]] if e.get("version") else []) + ([e["label"]] if e.get("label") else [])
        base.append(" ".join(parts))
    out = []
    for i, (b, e) in enumerate(zip(base, entries)):
        label = b
        if base.count(b) > 1 and e.get("started"):
            label = f"{b} @ {e['started'][:19].replace('T', ' ')}"
        while label in out:  # still the same: number them
            label = f"{label} #{i + 1}"
        out.append(label)
    return out


_DIGITS = re.compile(r"\d+")
#: what one case (or one group of cases) is called on its row: WORDS counts, these name
_ONE = {"fail": "failed", "error": "error", "xfail": "known failure", "xpass": "unexpected pass",
        "flaky": "flaky known failure"}


def _groups(divergences: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Cases that did not pass, grouped when near-identical: one format, role and outcome and
    the same reason once numbers are set aside (59 rows of one rule become one group)."""
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for d in divergences:
        outcome = "flaky" if d.get("flaky") else d["outcome"]
        key = (outcome, d["format"], d["role"], _DIGITS.sub("N", d.get("message", "")), d.get("error_kind") or "")
        groups.setdefault(key, []).append(d)
    return sorted(groups.values(), key=lambda g: (-len(g), g[0]["id"]))


def _matrix(title: str, rows: list[tuple[str, str, str]], cells: dict[tuple[str, str, str], dict[str, tuple[int, ...]]],
            names: list[str], head: tuple[str, ...], matrix_id: str) -> list[str]:
    out = [f"<h2>{escape(title)}</h2>", f'<table id="{matrix_id}"><thead><tr>'
           + "".join(f"<th>{escape(h)}</th>" for h in head)
           + "".join(f'<th data-impl="{escape(n)}">{escape(n)}</th>' for n in names) + "</tr></thead><tbody>"]
    for row in rows:
        fmt = row[0]
        labels = list(row[: len(head)])
        text = " ".join(row)
        out.append(f'<tr data-row="matrix" data-format="{escape(fmt)}" data-text="{escape(text)}">'
                   + "".join(f"<td>{escape(x)}</td>" for x in labels)
                   + "".join(_cell(cells[row].get(n)).replace("<td ", f'<td data-impl="{escape(n)}" ', 1) for n in names)
                   + "</tr>")
    out.append("</tbody></table>")
    return out


def page(entries: list[dict[str, Any]], title: str = "Conformance results") -> str:
    """The HTML page of result entries (:func:`mlf_spec.conformance.results.entry`): what
    failed first (a summary per run with links, then the unexpected failures, then the known
    ones, near-identical cases grouped), then the matrices of formats, features and rules."""
    names = _columns(entries)
    formats: dict[tuple[str, str, str], dict[str, tuple[int, ...]]] = defaultdict(dict)
    features: dict[tuple[str, str, str], dict[str, tuple[int, ...]]] = defaultdict(dict)
    rules: dict[tuple[str, str, str], dict[str, tuple[int, ...]]] = defaultdict(dict)
    for col, e in zip(names, entries):
        for fmt, c in e["formats"].items():
            run = sum(c.values()) - c.get("skip", 0)
            if run:
                formats[(fmt, "", "")][col] = (c.get("pass", 0), run, sum(c.get(k, 0) for k in UNEXPECTED))
        for r in e["coverage"]:
            table = rules if r["feature"] == "rule" else features
            key = (r["format"], r["value"], "") if r["feature"] == "rule" else (r["format"], r["feature"], r["value"])
            # a report older than the unexpected count is coloured by passed/total
            table[key][col] = (r["passed"], r["total"]) + ((r["unexpected"],) if "unexpected" in r else ())
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           f"<title>{escape(title)}</title><style>{_STYLE}</style></head><body>",
           "<!-- Generated by `mlf-spec conformance report --html` from JSON reports of conformance runs: do not edit. -->",
           f"<h1>{escape(title)}</h1>"]
    out += _summary(entries, names)
    out += _filters(names, sorted({k[0] for k in formats}))
    out += _failures(entries, names)
    out += _matrix("Formats", sorted(formats), formats, names, ("format",), "m-formats")
    out += _matrix("Features", sorted(features), features, names, ("format", "feature", "value"), "m-features")
    if rules:
        out += _matrix("Rules", sorted(rules), rules, names, ("format", "rule"), "m-rules")
    out += [f"<script>{_SCRIPT}</script>", "</body></html>", ""]
    return "\n".join(out)


def _summary(entries: list[dict[str, Any]], names: list[str]) -> list[str]:
    out = ['<table id="summary"><thead><tr><th>run</th><th>implementation</th><th>version</th><th>label</th>'
           "<th>started (UTC)</th><th>driven</th><th>passed / applicable</th><th>unexpected failures</th>"
           "<th>known failures</th><th>skipped</th><th>cases</th></tr></thead><tbody>"]
    for i, (col, e) in enumerate(zip(names, entries)):
        bad, expected = unexpected(e), known(e)
        link = f'<a href="#unexpected-{i}">{bad}</a>' if bad else "0"
        klink = f'<a href="#known-{i}">{expected}</a>' if expected else "0"
        out.append(f'<tr data-impl="{escape(col)}"><td>{escape(col)}</td><td>{escape(e["name"])}</td>'
                   f'<td>{escape(e["version"])}</td><td>{escape(e.get("label", ""))}</td>'
                   f'<td>{escape(e.get("started", "")[:19].replace("T", " "))}</td><td>{escape(e["mode"])}</td>'
                   f'{_cell((e["passed"], e["applicable"], bad))}'
                   f'<td class="cell{" bad" if bad else ""}">{link}</td><td class="cell">{klink}</td>'
                   f'<td class="cell">{e["counts"].get("skip", 0)}</td><td class="cell">{e["cases"]}</td></tr>')
    out.append("</tbody></table>")
    return out


def _filters(names: list[str], formats: list[str]) -> list[str]:
    return ['<div id="filters"><strong>Runs:</strong> '
            + "".join(f'<label><input type="checkbox" class="impl" value="{escape(n)}" checked> {escape(n)}</label>'
                      for n in names)
            + '<br><label>Format <select id="f-format"><option value="">all</option>'
            + "".join(f'<option value="{escape(f)}">{escape(f)}</option>' for f in formats)
            + '</select></label><label>Outcome <select id="f-outcome"><option value="">all</option>'
            + "".join(f'<option value="{o}">{escape(WORDS[o])}</option>'
                      for o in ("fail", "error", "xfail", "flaky", "xpass"))
            + '</select></label><label>Text <input id="f-text" type="search" placeholder="case id, rule, reason">'
            + '</label> <span><span id="shown">0</span> <span id="shown-noun">groups</span> of failures shown</span></div>']


def _failures(entries: list[dict[str, Any]], names: list[str]) -> list[str]:
    out = []
    for title, wanted, anchor in (("Unexpected failures", set(UNEXPECTED), "unexpected"),
                                  ("Known failures", {"xfail", "flaky"}, "known")):
        out.append(f'<h2 id="{anchor}">{title}</h2>')
        shown = 0
        for i, (col, e) in enumerate(zip(names, entries)):
            mine = [d for d in e["divergences"] if ("flaky" if d.get("flaky") else d["outcome"]) in wanted]
            if not mine:
                continue
            shown += len(mine)
            out.append(f'<h3 id="{anchor}-{i}" data-impl="{escape(col)}">{escape(col)}: '
                       f'{plural(len(mine), "case")}</h3>')
            out += [_group(col, g) for g in _groups(mine)]
        if not shown:
            out.append("<p>None.</p>" if anchor == "known" else "<p>None: every case in scope passed or is a known "
                       "failure.</p>")
    return out


def _group(col: str, group: list[dict[str, Any]]) -> str:
    d = group[0]
    outcome = "flaky" if d.get("flaky") else d["outcome"]
    why = d.get("message", "")
    seen = d.get("note", "") if outcome in ("xfail", "flaky") else ""
    ids = [g["id"] for g in group]
    text = " ".join([col, *ids, why, seen, *d.get("diff", [])])
    body = [f"<p>{escape(d['format'])} {escape(d['role'])}; reason: {escape(why) or '—'}</p>"]
    if len(group) > 1:
        body.append(f"<p>{len(group)} cases with this reason (numbers aside); the first is shown:</p>"
                    '<pre class="ids">' + escape("\n".join(ids[:200])) + ("\n…" if len(ids) > 200 else "") + "</pre>")
    if seen:
        body.append(f"<p>seen: {escape(seen)}</p>")
    if d.get("error_kind"):
        body.append(f"<p>error: {escape(d['error_kind'])}" + (f" ({escape(d['signal'])})" if d.get("signal") else "")
                    + "</p>")
    if d.get("diff"):
        body.append('<pre class="diff">' + escape("\n".join(d["diff"])) + "</pre>")
    if d.get("reproduce"):
        body.append('<p>reproduce:</p><pre class="reproduce">' + escape(d["reproduce"]) + "</pre>")
    what = f"<code>{escape(d['id'])}</code>" if len(group) == 1 else \
        f"{len(group)} cases like <code>{escape(d['id'])}</code>"
    short = why if len(why) <= 120 else why[:119] + "…"
    return (f'<details data-row="failure" data-impl="{escape(col)}" '
            f'data-format="{escape(d["format"])}" data-outcome="{outcome}" data-text="{escape(text)}"><summary>'
            f'<span class="outcome {outcome}">{escape(_ONE[outcome])}</span> · {what} · {escape(short)}</summary>'
            f"{''.join(body)}</details>")


__all__ = ["page"]
