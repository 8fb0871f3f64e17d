"""`spec: verdicts` — what versions of a reader do with an artifact, as rules over facts.

A verdicts spec declares the verdicts (best first), the subjects a rule can be about (a
tensor record, a blob, a module, an MLF archive...) with the facts an engine computes for
each or the named tests it implements, optionally the readers of a version (several pieces
of code that read the artifact, each with its own verdict), and the rules: a condition over
one subject's facts (the spec's expression language) or a test the part must pass, the
readers it describes, the reader versions and, where the meaning depends on them, the writer
versions it applies to, a verdict, a reason (``{fact}`` placeholders are filled in) and the
evidence. The generator checks every name, version and placeholder and emits
``<name>_rules.py`` (the rules with their conditions as functions of a facts mapping) and
``docs/<name>.md``; the engine (mlf_spec.verdict) only evaluates them.
"""

from __future__ import annotations

import ast
import string
from functools import partial
from pprint import pformat
from typing import Any

from .code import Code, header
from .expr import Expr, ExprError
from .findings import check_expr, constants, derived_source
from .ir import VerdictsSpec
from .versions import check_version_known, vkey
from .yamlload import SpecDocument

ALLOWED_FUNCTIONS = {"len", "min", "max", "ceil_div", "numel"}


def check(model: Any, spec: VerdictsSpec, doc: SpecDocument) -> None:
    """Semantic checks: unique ids, known subjects, facts, tests, readers, functions,
    verdicts, versions and placeholders."""
    verdicts = {v.name for v in spec.verdicts}
    subjects = {s.name: {f.name: f.type for f in s.facts} for s in spec.subjects}
    consts = constants(model)
    _check_derived(spec, subjects, consts, doc)
    tests = {s.name: {t.name: t for t in s.tests} for s in spec.subjects}
    readers = {r.name for r in spec.readers}
    for i, s in enumerate(spec.subjects):
        if not s.facts and not s.tests:
            raise doc.error(("subjects", i), f"subject {s.name!r} has neither facts nor tests")
    for i, reader in enumerate(spec.readers):
        for key in ("since", "until"):
            check_version_known(model, doc, ("readers", i, key), getattr(reader, key))
    if spec.without_reader and not spec.readers:
        raise doc.error(("without_reader",), "without_reader needs declared readers")
    for i, w in enumerate(spec.without_reader):
        if w.verdict not in verdicts:
            raise doc.error(("without_reader", i, "verdict"), f"unknown verdict {w.verdict!r}; declared: {sorted(verdicts)}")
        for key in ("since", "until"):
            check_version_known(model, doc, ("without_reader", i, key), getattr(w, key))
        for _, name, _, _ in string.Formatter().parse(w.reason):
            if name is not None and name not in ("version", "first", "last"):
                raise doc.error(("without_reader", i, "reason"), f"placeholder {{{name}}}: only version, first, last")
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
        if readers and not r.readers:
            raise doc.error(loc, f"the spec declares readers: say which of {sorted(readers)} the rule describes")
        if r.readers is not None:
            if not readers:
                raise doc.error(loc + ("readers",), "the spec declares no readers")
            for name in r.readers:
                if name not in readers:
                    raise doc.error(loc + ("readers",), f"unknown reader {name!r}; declared: {sorted(readers)}")
        facts = subjects[r.subject]
        if (r.when is None) == (r.requires is None):
            raise doc.error(loc, "a rule has either `when` (a condition over facts) or `requires` (a test)")
        if r.requires is not None:
            test = tests[r.subject].get(r.requires)
            if test is None:
                raise doc.error(loc + ("requires",), f"{r.requires!r} is not a test of subject {r.subject!r}; "
                                f"tests: {sorted(tests[r.subject])}")
            if (test.argument is None) != (r.argument is None):
                raise doc.error(loc + ("argument",), f"test {test.name!r} takes "
                                + ("no argument" if test.argument is None else f"an argument: {test.argument}"))
        else:
            if r.argument is not None:
                raise doc.error(loc + ("argument",), "an argument goes with `requires`")
            try:
                e = Expr(r.when or "")
            except ExprError as exc:
                raise doc.error(loc + ("when",), str(exc)) from None
            for node in ast.walk(e.tree):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                        and node.func.id not in ALLOWED_FUNCTIONS):
                    raise doc.error(loc + ("when",), f"{node.func.id}() is not available in rules; use "
                                    f"{sorted(ALLOWED_FUNCTIONS)}")
            for n in e.names:
                if n not in facts and n not in consts:
                    raise doc.error(loc + ("when",), f"{n!r} is not a fact of subject {r.subject!r}; facts: {sorted(facts)}")
        derived = {f.name for s in spec.subjects if s.name == r.subject for f in s.facts if f.derive is not None}
        for _, name, _, _ in string.Formatter().parse(r.reason):
            if name is not None and (name not in facts or name in derived):
                raise doc.error(loc + ("reason",), f"placeholder {{{name}}} is not a stored fact of subject {r.subject!r}")
        for key in ("since", "until", "writer_since", "writer_until"):
            check_version_known(model, doc, loc + (key,), getattr(r, key))
        for lo, hi, what in ((r.since, r.until, "since/until"), (r.writer_since, r.writer_until, "writer_since/writer_until")):
            if lo is not None and hi is not None and vkey(lo) >= vkey(hi):
                raise doc.error(loc, f"{what}: {lo} is not before {hi}")


def _check_derived(spec: VerdictsSpec, subjects: dict[str, dict[str, Any]], consts: dict[str, int],
                   doc: SpecDocument) -> None:
    """A derived fact names only the subject's facts and the binary specs' constants."""
    for i, s in enumerate(spec.subjects):
        for k, fact in enumerate(s.facts):
            if fact.derive is not None:
                check_expr(fact.derive, set(subjects[s.name]) | set(consts), "facts", ("subjects", i, "facts", k), doc)


def emit(model: Any, name: str) -> dict[str, str]:
    """``<name>_rules.py`` and ``docs/<name>.md``."""
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
    c("#: subject -> {fact: type} (the facts a part carries; derived ones are written into the conditions)")
    c(f"SUBJECTS = {pformat({s.name: {f.name: f.type for f in s.facts if f.derive is None} for s in spec.subjects}, width=110, sort_dicts=False)}")
    c("#: subject -> {test: what its argument is, or None}")
    c(f"TESTS = {pformat({s.name: {t.name: t.argument for t in s.tests} for s in spec.subjects}, width=110, sort_dicts=False)}")
    c("#: The readers of a version, each with its own verdict (none: the artifact has one reader).")
    c(f"READERS = {pformat([_reader_row(r) for r in spec.readers], width=110, sort_dicts=False)}")
    c("#: What a version in which no declared reader exists gets.")
    c(f"WITHOUT_READER = {pformat([_without_row(w) for w in spec.without_reader], width=110, sort_dicts=False)}")
    consts = constants(model)
    facts_of = {s.name: {f.name: f for f in s.facts} for s in spec.subjects}
    for i, r in enumerate(spec.rules):
        if r.when is None:
            continue
        src = Expr(r.when).translate(partial(_source, facts_of[r.subject], consts), inline=True)
        c()
        c()
        c(f"def _when_{i}(f: Mapping[str, Any]) -> bool:  # {r.id}")
        c(f"    return bool({src})")
    c()
    c()
    rows = []
    for i, r in enumerate(spec.rules):
        rows.append("    {" + ", ".join([
            f"'id': {r.id!r}", f"'readers': {r.readers!r}", f"'subject': {r.subject!r}",
            f"'when': {f'_when_{i}' if r.when is not None else None}",
            f"'condition': {_condition(r)!r}", f"'requires': {r.requires!r}", f"'argument': {r.argument!r}",
            f"'since': {_v(r.since)!r}", f"'until': {_v(r.until)!r}",
            f"'writer_since': {_v(r.writer_since)!r}", f"'writer_until': {_v(r.writer_until)!r}",
            f"'verdict': {r.verdict!r}", f"'machine': {r.machine!r}", f"'reason': {' '.join(r.reason.split())!r}",
            f"'evidence': {' '.join(r.evidence.split())!r}"]) + "},")
    c("RULES = [")
    c.lines.extend(rows)
    c("]")
    return {f"{name}_rules.py": c.text(), f"docs/{name}.md": _page(model, spec, doc)}


def _source(facts: dict[str, Any], consts: dict[str, int], name: str) -> str:
    return derived_source(facts, consts, name)


def _v(v: str | None) -> tuple[int, ...] | None:
    return vkey(v) if v else None


def _reader_row(r: Any) -> dict[str, Any]:
    return {"reader": r.name, "source": r.source, "commit": r.commit, "general": r.general,
            "since": _v(r.since), "until": _v(r.until), "doc": " ".join(r.doc.split())}


def _without_row(w: Any) -> dict[str, Any]:
    return {"since": _v(w.since), "until": _v(w.until), "verdict": w.verdict, "reason": " ".join(w.reason.split()),
            "evidence": " ".join(w.evidence.split())}


def _condition(r: Any) -> str:
    if r.when is not None:
        return " ".join(r.when.split())
    return f"fails {r.requires}({r.argument})" if r.argument is not None else f"fails {r.requires}"


def _page(model: Any, spec: VerdictsSpec, doc: SpecDocument) -> str:
    page = ["<!-- " + line.lstrip("# ") + " -->" for line in header(model, [doc]).splitlines()]
    page += ["", f"# {spec.title}", "", spec.doc.strip(), "", "## Verdicts", "", "| Verdict | Meaning |", "|---|---|"]
    page += [f"| `{v.name}` | {' '.join(v.doc.split())} |" for v in spec.verdicts]
    if spec.readers:
        page += ["", "## Readers", "", "| Reader | Versions | Counts for the verdict | Source | Commit | What it does |",
                 "|---|---|---|---|---|---|"]
        page += [f"| `{r.name}` | {_range(r.since, r.until)} | {'yes' if r.general else 'no'} | {r.source} | {r.commit} | "
                 f"{' '.join(r.doc.split())} |" for r in spec.readers]
    if spec.without_reader:
        page += ["", "Versions without a reader:", "", "| Versions | Verdict | Reason | Evidence |", "|---|---|---|---|"]
        page += [f"| {_range(w.since, w.until)} | {w.verdict} | {' '.join(w.reason.split())} | "
                 f"{' '.join(w.evidence.split())} |" for w in spec.without_reader]
    writers = any(r.writer_since or r.writer_until for r in spec.rules)
    for s in spec.subjects:
        page += ["", f"## Subject `{s.name}`", "", " ".join(s.doc.split())]
        if s.facts:
            page += ["", "| Fact | Type | Meaning |", "|---|---|---|"]
            page += [f"| `{f.name}` | {f.type} | {' '.join(f.doc.split())}"
                     + (f" Derived: `{' '.join(f.derive.split())}`." if f.derive else "") + " |" for f in s.facts]
        if s.tests:
            page += ["", "| Test | Argument | What it checks |", "|---|---|---|"]
            page += [f"| `{t.name}` | {t.argument or '-'} | {' '.join(t.doc.split())} |" for t in s.tests]
        head = ["Rule"] + (["Readers"] if spec.readers else []) + [
            "Reader versions" if spec.readers else "Readers"] + (["Writers"] if writers else []) + [
            "When", "Verdict", "Reason", "Evidence"]
        page += ["", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for r in spec.rules:
            if r.subject != s.name:
                continue
            cells = [f"`{r.id}`"] + ([", ".join(r.readers or [])] if spec.readers else []) + [_range(r.since, r.until)]
            cells += [_range(r.writer_since, r.writer_until)] if writers else []
            verdict = r.verdict + (f" {r.machine}" if r.machine else "")
            cells += [f"`{_condition(r)}`", verdict, " ".join(r.reason.split()), " ".join(r.evidence.split())]
            page.append("| " + " | ".join(cells) + " |")
    return "\n".join(page) + "\n"


def _range(since: str | None, until: str | None) -> str:
    if since is None and until is None:
        return "all"
    if until is None:
        return f"{since} on"
    if since is None:
        return f"before {until}"
    return f"{since} to before {until}"
