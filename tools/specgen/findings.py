"""Findings as rows: each finding of a `spec: findings` document that names a subject is a
condition over that subject's facts, with templates for its field path and message and
expressions for its byte offset and file, compiled to Python at generation time.

The subjects and their facts are those of the verdicts spec the findings spec names
(``facts_from``), plus the facts only findings use (offsets, message texts) that the
findings spec declares under ``subjects``. A fact with ``derive`` is an expression over
other facts: the generator writes it where a condition names it, so a rule stated once
(``align_bad``) serves both the verdict rules and the findings. Upper-case names are the
constants of the binary specs (``MAX_NDIM``). The generator emits ``<name>_rows.py``: per
subject a function of a facts mapping returning the findings of one part, in the rows'
order; the check modules extract the facts and call it.
"""

from __future__ import annotations

import ast
import string
from typing import Any

from .code import Code, header
from .expr import Expr, ExprError
from .ir import FactSpec, FindingSpec, FindingsSpec
from .yamlload import SpecDocument

ALLOWED_FUNCTIONS = {"len", "min", "max", "ceil_div", "numel"}


def constants(model: Any) -> dict[str, int]:
    """The constants of every binary spec, by name."""
    out: dict[str, int] = {}
    for binary in model.binaries.values():
        for c in binary.spec.constants:
            out[c.name] = c.value
    return out


def subject_facts(model: Any, spec: FindingsSpec, doc: SpecDocument) -> dict[str, dict[str, FactSpec]]:
    """subject -> {fact name: fact}: the verdicts spec's subjects, with the findings' own facts."""
    out: dict[str, dict[str, FactSpec]] = {}
    if spec.facts_from is not None:
        if spec.facts_from not in model.verdicts:
            raise doc.error(("facts_from",), f"unknown verdicts spec {spec.facts_from!r}")
        for s in model.verdicts[spec.facts_from][0].subjects:
            out[s.name] = {f.name: f for f in s.facts}
    for i, s in enumerate(spec.subjects):
        own = out.setdefault(s.name, {})
        for k, f in enumerate(s.facts):
            if f.name in own:
                raise doc.error(("subjects", i, "facts", k), f"fact {f.name!r} of {s.name!r} is declared twice")
            own[f.name] = f
    return out


def derived_source(facts: dict[str, FactSpec], consts: dict[str, int], name: str, local: str = "f") -> str:
    """Python source of a fact: ``f['name']``, or its ``derive`` expression written out."""
    fact = facts.get(name)
    if fact is not None and fact.derive is not None:
        return f"({_translate(Expr(fact.derive), facts, consts, local)})"
    if name in consts:
        return repr(consts[name])
    return f"{local}[{name!r}]"


def _translate(e: Expr, facts: dict[str, FactSpec], consts: dict[str, int], local: str = "f",
               each: bool = False) -> str:
    def name(n: str) -> str:
        if each and (n == "each" or n.startswith("each.")):
            return n
        return derived_source(facts, consts, n, local)

    return e.translate(name, inline=True)


def check_expr(text: str, names: set[str], where: str, loc: tuple, doc: SpecDocument) -> Expr:
    """Parse an expression and check that it names only ``names`` and allowed functions."""
    try:
        e = Expr(text)
    except ExprError as exc:
        raise doc.error(loc, str(exc)) from None
    for node in ast.walk(e.tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id not in ALLOWED_FUNCTIONS:
            raise doc.error(loc, f"{node.func.id}() is not available in {where}; use {sorted(ALLOWED_FUNCTIONS)}")
    for n in e.names:
        if n not in names:
            raise doc.error(loc, f"{n!r} is not a fact of the subject; facts: {sorted(names)}")
    return e


def _template_fields(text: str, loc: tuple, doc: SpecDocument) -> list[tuple[str, str | None, str | None, str | None]]:
    try:
        return list(string.Formatter().parse(text))
    except ValueError as exc:
        raise doc.error(loc, f"bad template: {exc}") from None


def check(model: Any, spec: FindingsSpec, doc: SpecDocument) -> None:
    """Semantic checks of the rows: known subjects, facts, constants and functions, list facts
    for ``each``, an error class exactly where the strict reader refuses."""
    subjects = subject_facts(model, spec, doc)
    consts = constants(model)
    for facts in subjects.values():
        for fact in facts.values():
            if fact.derive is not None:
                check_expr(fact.derive, set(facts) | set(consts), "facts", ("subjects",), doc)
    classes = any(f.error_class for f in spec.findings)
    for i, finding in enumerate(spec.findings):
        loc = ("findings", i)
        f = finding
        if classes and bool(f.error_class) != f.strict_refuses:
            raise doc.error(loc, "a finding the strict reader refuses has an error class, and only such a finding")
        if f.subject is None:
            for key in ("when", "each", "path", "message", "offset", "file"):
                if getattr(f, key) is not None:
                    raise doc.error(loc + (key,), f"`{key}` belongs to a row with a `subject`")
        for rloc, row in _rows_of(f, loc):
            _check_row(row, rloc, subjects, consts, doc)
    for i, s in enumerate(spec.subjects):
        if s.order is None:
            continue
        have = [code for code, row in all_rows(spec) if row.subject == s.name]
        if sorted(set(have)) != sorted(s.order) or len(set(s.order)) != len(s.order):
            raise doc.error(("subjects", i, "order"), f"order must name each code with a row of {s.name!r} once: "
                            f"{sorted(set(have))}")


def _rows_of(f: FindingSpec, loc: tuple) -> list[tuple[tuple, Any]]:
    rows: list[tuple[tuple, Any]] = [(loc, f)] if f.subject is not None else []
    return rows + [(loc + ("rows", k), r) for k, r in enumerate(f.rows)]


def all_rows(spec: FindingsSpec) -> list[tuple[str, Any]]:
    """(code, row) of every row, in the findings' order."""
    return [(f.code, row) for f in spec.findings for _, row in _rows_of(f, ())]


def _check_row(f: Any, loc: tuple, subjects: dict[str, dict[str, FactSpec]], consts: dict[str, int],
               doc: SpecDocument) -> None:
    if f.subject not in subjects:
        raise doc.error(loc + ("subject",), f"unknown subject {f.subject!r}; declared: {sorted(subjects)}")
    facts = subjects[f.subject]
    names = set(facts) | set(consts)
    if f.each is not None:
        if facts.get(f.each) is None or facts[f.each].type != "list":
            raise doc.error(loc + ("each",), f"{f.each!r} is not a list fact of {f.subject!r}")
        names.add("each")
    if f.when is None and f.each is None:
        raise doc.error(loc, "a row has a `when`, or an `each` (then it holds for every element)")
    if f.path is None or f.message is None:
        raise doc.error(loc, "a row has a `path` and a `message` template")
    for key in ("when", "offset", "file"):
        text = getattr(f, key)
        if text is not None:
            check_expr(text, names, "findings", loc + (key,), doc)
    for key in ("path", "message"):
        for _, field, _, conv in _template_fields(getattr(f, key), loc + (key,), doc):
            if field is None:
                continue
            if conv not in (None, "r"):
                raise doc.error(loc + (key,), f"conversion !{conv}: only !r")
            check_expr(field, names, "templates", loc + (key,), doc)


def _template(text: str, facts: dict[str, FactSpec], consts: dict[str, int], each: bool) -> str:
    parts = []
    for literal, field, spec, conv in string.Formatter().parse(" ".join(text.split()) if "\n" in text else text):
        if literal:
            parts.append(repr(literal))
        if field is None:
            continue
        src = _translate(Expr(field), facts, consts, each=each)
        if conv == "r":
            src = f"repr({src})"
        parts.append(f"format({src}, {spec!r})" if spec else f"str({src})")
    return " + ".join(parts) if parts else "''"


def _row_code(code: str, f: Any, facts: dict[str, FactSpec], consts: dict[str, int]) -> list[str]:
    each = f.each is not None
    cond = _translate(Expr(f.when), facts, consts, each=each) if f.when is not None else None
    path = _template(f.path or "", facts, consts, each)
    message = _template(f.message or "", facts, consts, each)
    offset = _translate(Expr(f.offset), facts, consts, each=each) if f.offset is not None else "None"
    file = _translate(Expr(f.file), facts, consts, each=each) if f.file is not None else "None"
    add = f"out.append(({code!r}, {path}, {message}, {offset}, {file}))"
    body: list[str] = []
    indent = ""
    if each:
        body.append(f"for each in f[{f.each!r}]:")
        indent = "    "
    if cond is not None:
        body.append(f"{indent}if {cond}:")
        indent += "    "
    body.append(indent + add)
    if f.stop:
        body.append(indent + "return out")
    return body


def emit(model: Any, name: str) -> dict[str, str]:
    """``<name>_rows.py``: per subject, the function that gives a part's findings."""
    spec, doc = model.findings[name]
    subjects = subject_facts(model, spec, doc)
    consts = constants(model)
    c = Code()
    docs = [doc] + ([model.verdicts[spec.facts_from][1]] if spec.facts_from else [])
    c.lines.append(header(model, docs).rstrip("\n"))
    c(f'"""{spec.title}: the rows, per subject a function of a facts mapping that returns the findings of one '
      'part as (code, path, message, offset, file) tuples, in the rows\' order."""')
    c()
    c("from collections.abc import Mapping")
    c("from math import prod as _prod  # noqa: F401")
    c("from typing import Any")
    c()
    c("Row = tuple[str, str, str, 'int | None', 'str | None']")
    rows = all_rows(spec)
    order: list[str] = []
    for _, row in rows:
        if row.subject not in order:
            order.append(row.subject)
    declared = {s.name: s.order for s in spec.subjects if s.order is not None}
    used: dict[str, list[str]] = {}
    for subject in order:
        facts = subjects[subject]
        mine = [(code, row) for code, row in rows if row.subject == subject]
        if subject in declared:
            rank = {code: k for k, code in enumerate(declared[subject])}
            mine.sort(key=lambda x: rank[x[0]])  # stable: a code's rows keep their order
        codes = list(dict.fromkeys(code for code, _ in mine))
        c()
        c()
        c(f"def {subject}(f: Mapping[str, Any]) -> list[Row]:")
        c(f'    """The findings of one {subject}: rows {", ".join(codes)}."""')
        c("    out: list[Row] = []")
        for code, r in mine:
            for line in _row_code(code, r, facts, consts):
                c("    " + line)
        c("    return out")
        names: set[str] = set()
        for _, r in mine:
            for text in (r.when, r.offset, r.file):
                if text is not None:
                    names |= _fact_names(Expr(text), facts)
            for text in (r.path, r.message):
                for _, field, _, _ in string.Formatter().parse(text or ""):
                    if field is not None:
                        names |= _fact_names(Expr(field), facts)
            if r.each is not None:
                names.add(r.each)
        used[subject] = sorted(names)
    c()
    c()
    c("#: subject -> the facts its rows read (what the check module computes for a part)")
    c(f"FACTS = {used!r}")
    c("#: The codes of the findings the strict reader refuses.")
    c(f"STRICT_REFUSES = frozenset({sorted(f.code for f in spec.findings if f.strict_refuses)!r})")
    return {f"{name}_rows.py": c.text()}


def _fact_names(e: Expr, facts: dict[str, FactSpec]) -> set[str]:
    out: set[str] = set()
    for n in e.names:
        if n == "each" or n.startswith("each.") or n not in facts:
            continue
        fact = facts[n]
        if fact.derive is not None:
            out |= _fact_names(Expr(fact.derive), facts)
        else:
            out.add(n)
    return out


def when_cell(f: FindingSpec) -> str:
    """The condition of a row for the findings page (`-` for a finding the check module writes)."""
    cells = []
    for _, row in _rows_of(f, ()):
        cond = " ".join((row.when or "").split())
        head = f"{row.subject}" + (f", each {row.each}" if row.each else "")
        cells.append(f"{head}: `{cond}`" if cond else head)
    return "; ".join(cells) or "-"


def finding_rows_intro(spec: FindingsSpec) -> list[str]:
    """The lines before the findings table that say what its `When` and `Strict reader` columns mean."""
    facts = f" (the facts of the subjects of {spec.facts_from}.md, and those below)" if spec.facts_from else ""
    page = [f"`When` is the condition over the facts of the part{facts} under which the finding is reported "
            "(a finding with `-` is written by the check module); `Strict reader`: mlf-spec's strict reader "
            "refuses an input with the finding, the check reads further and reports it.", ""]
    for s in spec.subjects:
        if not s.facts:
            continue
        page += [f"Facts of `{s.name}` that only the findings read: "
                 + "; ".join(f"`{f.name}` ({' '.join(f.doc.split()).rstrip('.')})" for f in s.facts) + ".", ""]
    return page
