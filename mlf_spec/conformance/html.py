"""The HTML results page: one self-contained file (no request leaves it: styles and script are
inline) over the result entries of one or more implementations (:mod:`.results`).

It shows the matrix of implementations against formats, features and rules (passed/run per
cell), filters (implementations, format, outcome, text), and every case that did not pass,
with its reason, its diff and, for a page made from a user's report, the command that
reproduces it. The rows are written by Python; the script only hides and shows them, so
the page reads without it.
"""

from __future__ import annotations

from collections import defaultdict
from html import escape
from typing import Any

from .report import WORDS

_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em}
table{border-collapse:collapse;margin:.5em 0}th,td{border:1px solid #ccc;padding:2px 8px;text-align:left}
th{background:#f3f3f3}td.cell{text-align:right;font-variant-numeric:tabular-nums}
.all{background:#dff5d8}.some{background:#fff2c4}.none{background:#f8d3cc}.na{color:#999}
#filters{position:sticky;top:0;background:#fff;padding:.5em 0;border-bottom:1px solid #ddd}
#filters label{margin-right:1em}details{border:1px solid #ddd;margin:.3em 0;padding:.2em .6em}
summary{cursor:pointer}pre{background:#f7f7f7;padding:.4em;overflow-x:auto;white-space:pre-wrap}
.outcome{font-weight:600}.fail,.error,.xpass{color:#b00}.xfail,.flaky{color:#a60}
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
  }
  q('#filters input, #filters select').forEach(function(el){el.addEventListener('input',apply);
    el.addEventListener('change',apply);});
  apply();
})();
"""


def _cell(counts: tuple[int, int] | None) -> str:
    if counts is None:
        return '<td class="cell na">—</td>'
    passed, run = counts
    cls = "all" if passed == run else "none" if passed == 0 else "some"
    return f'<td class="cell {cls}">{passed}/{run}</td>'


def _matrix(title: str, rows: list[tuple[str, str, str]], cells: dict[tuple[str, str, str], dict[str, tuple[int, int]]],
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
    """The HTML page of result entries (:func:`mlf_spec.conformance.results.entry`)."""
    names = [e["name"] for e in entries]
    formats: dict[tuple[str, str, str], dict[str, tuple[int, int]]] = defaultdict(dict)
    features: dict[tuple[str, str, str], dict[str, tuple[int, int]]] = defaultdict(dict)
    rules: dict[tuple[str, str, str], dict[str, tuple[int, int]]] = defaultdict(dict)
    for e in entries:
        for fmt, c in e["formats"].items():
            run = sum(c.values()) - c.get("skip", 0)
            if run:
                formats[(fmt, "", "")][e["name"]] = (c.get("pass", 0), run)
        for r in e["coverage"]:
            table = rules if r["feature"] == "rule" else features
            key = (r["format"], r["value"], "") if r["feature"] == "rule" else (r["format"], r["feature"], r["value"])
            table[key][e["name"]] = (r["passed"], r["total"])
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           f"<title>{escape(title)}</title><style>{_STYLE}</style></head><body>",
           "<!-- Generated by `mlf-spec conformance report --html` from JSON reports of conformance runs: do not edit. -->",
           f"<h1>{escape(title)}</h1>",
           '<div id="filters"><strong>Implementations:</strong> '
           + "".join(f'<label><input type="checkbox" class="impl" value="{escape(n)}" checked> {escape(n)}</label>'
                     for n in names)
           + '<br><label>Format <select id="f-format"><option value="">all</option>'
           + "".join(f'<option value="{escape(f)}">{escape(f)}</option>' for f in sorted({k[0] for k in formats}))
           + '</select></label><label>Outcome <select id="f-outcome"><option value="">all</option>'
           + "".join(f'<option value="{o}">{escape(WORDS[o])}</option>' for o in ("fail", "error", "xfail", "flaky", "xpass"))
           + '</select></label><label>Text <input id="f-text" type="search" placeholder="case id, rule, reason"></label>'
           + ' <span><span id="shown">0</span> failures shown</span></div>',
           "<h2>Implementations</h2>", '<table id="summary"><thead><tr><th>implementation</th><th>version</th>'
           "<th>driven</th><th>passed / applicable</th><th>cases</th><th>known failures</th><th>failed</th>"
           "<th>errors</th><th>unexpected passes</th><th>skipped</th></tr></thead><tbody>"]
    for e in entries:
        c = e["counts"]
        out.append(f'<tr data-impl="{escape(e["name"])}"><td>{escape(e["name"])}</td><td>{escape(e["version"])}</td>'
                   f'<td>{escape(e["mode"])}</td>{_cell((e["passed"], e["applicable"]))}<td class="cell">{e["cases"]}</td>'
                   + "".join(f'<td class="cell">{c.get(k, 0) + (c.get("flaky", 0) if k == "xfail" else 0)}</td>'
                             for k in ("xfail", "fail", "error", "xpass", "skip")) + "</tr>")
    out.append("</tbody></table>")
    out += _matrix("Formats", sorted(formats), formats, names, ("format",), "m-formats")
    out += _matrix("Features", sorted(features), features, names, ("format", "feature", "value"), "m-features")
    if rules:
        out += _matrix("Rules", sorted(rules), rules, names, ("format", "rule"), "m-rules")
    out.append("<h2>Cases that did not pass</h2>")
    count = 0
    for e in entries:
        for d in e["divergences"]:
            count += 1
            outcome = "flaky" if d.get("flaky") else d["outcome"]
            why = d.get("message", "")
            seen = d.get("note", "") if outcome in ("xfail", "flaky") else ""
            text = " ".join([e["name"], d["id"], why, seen, *d.get("diff", [])])
            body = [f"<p>{escape(d['format'])} {escape(d['role'])}; reason: {escape(why) or '—'}</p>"]
            if seen:
                body.append(f"<p>seen: {escape(seen)}</p>")
            if d.get("error_kind"):
                body.append(f"<p>error: {escape(d['error_kind'])}"
                            + (f" ({escape(d['signal'])})" if d.get("signal") else "") + "</p>")
            if d.get("diff"):
                body.append('<pre class="diff">' + escape("\n".join(d["diff"])) + "</pre>")
            if d.get("reproduce"):
                body.append('<p>reproduce:</p><pre class="reproduce">' + escape(d["reproduce"]) + "</pre>")
            out.append(f'<details data-row="failure" data-impl="{escape(e["name"])}" data-format="{escape(d["format"])}" '
                       f'data-outcome="{outcome}" data-text="{escape(text)}"><summary>{escape(e["name"])} · '
                       f'<code>{escape(d["id"])}</code> · <span class="outcome {outcome}">{escape(WORDS[outcome])}</span>'
                       f"</summary>{''.join(body)}</details>")
    if not count:
        out.append("<p>None: every case in scope passed.</p>")
    out += [f"<script>{_SCRIPT}</script>", "</body></html>", ""]
    return "\n".join(out)


__all__ = ["page"]
