"""`spec: verdicts` — what versions of a reader do with an artifact, as rules over facts.

A verdicts spec declares the verdicts (best first), the subjects a rule can be about (a
tensor record, a blob, a module...) with the facts an engine computes for each, and the
rules: a condition over one subject's facts (the spec's expression language), the reader
versions and, where the meaning depends on them, the writer versions it applies to, a
verdict, a reason (``{fact}`` placeholders are filled in) and the evidence. The generator
checks every name, version and placeholder and emits ``<name>_rules.py`` (the rules with
their conditions as functions of a facts mapping) and ``docs/<name>.md``; the engine
(mlf_spec.verdict) only evaluates them.
"""

from __future__ import annotations

import ast
import string
from pprint import pformat
from typing import Any

from .common import header
from .emit_fast import Code
from .expr import Expr, ExprError
from .ir import VerdictsSpec
from .yamlload import SpecDocument

ALLOWED_FUNCTIONS = {"len", "min", "max", "ceil_div", "numel"}


def check(model: Any, spec: VerdictsSpec, doc: SpecDocument) -> None:
    """Semantic checks: unique ids, known subjects, facts, functions, verdicts, versions and placeholders."""
    from .load import _check_version_known, vkey

    verdicts = {v.name for v in spec.verdicts}
    subjects = {s.name: {f.name: f.type for f in s.facts} for s in spec.subjects}
    seen: set[str] = set()
    for i, r in enumerate(spec.rules):
        loc = ("rules", i)
        if r.id in seen:
            raise doc.error(loc + ("id",), f"rule id {r.id!r} appears twice")
        seen.add(r.id)
        if r.subject not in subjects:
            raise doc.error(loc + ("subject",), f"unknown subject {r.subject!r}; declared: {sorted(subjects)}")
        if r.verdict not in verdicts:
            raise doc.error(loc + ("verdict",), f"unknown verdict {r.verdict!r}; declared: {sorted(verdicts)}")
        facts = subjects[r.subject]
        try:
            e = Expr(r.when)
        except ExprError as exc:
            raise doc.error(loc + ("when",), str(exc)) from None
        for node in ast.walk(e.tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id not in ALLOWED_FUNCTIONS:
                raise doc.error(loc + ("when",), f"{node.func.id}() is not available in rules; use {sorted(ALLOWED_FUNCTIONS)}")
        for n in e.names:
            if n not in facts:
                raise doc.error(loc + ("when",), f"{n!r} is not a fact of subject {r.subject!r}; facts: {sorted(facts)}")
        for _, field, _, _ in string.Formatter().parse(r.reason):
            if field is not None and field not in facts:
                raise doc.error(loc + ("reason",), f"placeholder {{{field}}} is not a fact of subject {r.subject!r}")
        for key in ("since", "until", "writer_since", "writer_until"):
            _check_version_known(model, doc, loc + (key,), getattr(r, key))
        for lo, hi, what in ((r.since, r.until, "since/until"), (r.writer_since, r.writer_until, "writer_since/writer_until")):
            if lo is not None and hi is not None and vkey(lo) >= vkey(hi):
                raise doc.error(loc, f"{what}: {lo} is not before {hi}")


def emit(model: Any, name: str) -> dict[str, str]:
    """``<name>_rules.py`` and ``docs/<name>.md``."""
    from .load import vkey

    spec, doc = model.verdicts[name]
    c = Code()
    c.lines.append(header(model, [doc, model.eras_doc]).rstrip("\n"))
    c(f'"""{spec.title}: the rules, with their conditions as functions of a facts mapping."""')
    c()
    c("from collections.abc import Mapping")
    c("from math import prod as _prod  # noqa: F401")
    c("from typing import Any")
    c()
    c(f"NAME = {name!r}")
    c(f"TITLE = {spec.title!r}")
    c("#: Verdicts, best first.")
    c(f"VERDICTS = {[v.name for v in spec.verdicts]!r}")
    c("#: subject -> {fact: type}")
    c(f"SUBJECTS = {pformat({s.name: {f.name: f.type for f in s.facts} for s in spec.subjects}, width=110, sort_dicts=False)}")
    c()
    for i, r in enumerate(spec.rules):
        src = Expr(r.when).translate(lambda n: f"f[{n!r}]", inline=True)
        c()
        c(f"def _when_{i}(f: Mapping[str, Any]) -> bool:  # {r.id}")
        c(f"    return bool({src})")
    c()
    c()
    rows = []
    for i, r in enumerate(spec.rules):
        rows.append("    {" + ", ".join([
            f"'id': {r.id!r}", f"'subject': {r.subject!r}", f"'when': _when_{i}", f"'condition': {' '.join(r.when.split())!r}",
            f"'since': {vkey(r.since) if r.since else None!r}", f"'until': {vkey(r.until) if r.until else None!r}",
            f"'writer_since': {vkey(r.writer_since) if r.writer_since else None!r}",
            f"'writer_until': {vkey(r.writer_until) if r.writer_until else None!r}",
            f"'verdict': {r.verdict!r}", f"'reason': {' '.join(r.reason.split())!r}",
            f"'evidence': {' '.join(r.evidence.split())!r}"]) + "},")
    c("RULES = [")
    c.lines.extend(rows)
    c("]")
    page = ["<!-- " + line.lstrip("# ") + " -->" for line in header(model, [doc]).splitlines()]
    page += ["", f"# {spec.title}", "", spec.doc.strip(), "", "## Verdicts", "", "| Verdict | Meaning |", "|---|---|"]
    page += [f"| `{v.name}` | {' '.join(v.doc.split())} |" for v in spec.verdicts]
    for s in spec.subjects:
        page += ["", f"## Subject `{s.name}`", "", " ".join(s.doc.split()), "", "| Fact | Type | Meaning |", "|---|---|---|"]
        page += [f"| `{f.name}` | {f.type} | {' '.join(f.doc.split())} |" for f in s.facts]
        page += ["", "| Rule | Readers | Writers | When | Verdict | Reason | Evidence |", "|---|---|---|---|---|---|---|"]
        for r in spec.rules:
            if r.subject != s.name:
                continue
            page.append(f"| `{r.id}` | {_range(r.since, r.until)} | {_range(r.writer_since, r.writer_until)} | "
                        f"`{' '.join(r.when.split())}` | {r.verdict} | {' '.join(r.reason.split())} | "
                        f"{' '.join(r.evidence.split())} |")
    return {f"{name}_rules.py": c.text(), f"docs/{name}.md": "\n".join(page) + "\n"}


def _range(since: str | None, until: str | None) -> str:
    if since is None and until is None:
        return "all"
    if until is None:
        return f"{since} on"
    if since is None:
        return f"before {until}"
    return f"{since} to before {until}"
