"""Emit plain validators of a versioned records spec: one function per version and record,
dict in, issues out, with no pydantic.

They state the same rules as the pydantic models (``emit_versioned``) from the same
projections, in strict mode: exact JSON types (no coercion, no bool for int), required
keys, unknown keys refused, constants, enums, patterns (anchored as pydantic-core's
regex engine anchors them: ``$`` is the end of the text), minimums, item counts, int-keyed
maps and keyed maps. A test checks that both back ends accept and refuse the same
documents. The read path (``mlf_spec.mlf.metadata``) uses them where it only needs the
verdict, so reading needs no pydantic start-up.
"""

from __future__ import annotations

from typing import Any

from .code import Code
from .common import header
from .versioned import PField, Projection, TypeNode, project

_INT_KEY = r"0|[1-9][0-9]*"


def _rust_pattern(pattern: str) -> str:
    """A pattern for Python's ``re.search`` that matches what pydantic-core's Rust regex
    matches: a final ``$`` is the end of the text (Python's also matches before a final
    newline)."""
    if pattern.endswith("$") and not pattern.endswith("\\$"):
        return pattern[:-1] + r"\Z"
    return pattern


class _Emitter:
    def __init__(self, c: Code) -> None:
        self.c = c
        self.patterns: dict[str, str] = {}  # pattern -> constant name
        self.tmp = 0

    def pattern(self, p: str) -> str:
        name = self.patterns.get(p)
        if name is None:
            name = self.patterns[p] = f"_P{len(self.patterns)}"
        return name

    def var(self) -> str:
        self.tmp += 1
        return f"_v{self.tmp}"

    def check(self, t: TypeNode, c: dict[str, Any], const: Any, v: str, path: str, version: int) -> None:
        """Code appending the issues of value ``v`` (at JSON path tuple ``path``) of type ``t``."""
        out = self.c
        if const is not None:
            out(f"if type({v}) is not {type(const).__name__} or {v} != {const!r}:")
            out(f"    add(({path}, {f'must be {const!r}'!r}))")
            return
        if "enum" in c:
            vals = c["enum"]
            types = ", ".join(sorted({type(x).__name__ for x in vals}))
            out(f"if type({v}) not in ({types},) or {v} not in {tuple(vals)!r}:")
            out(f"    add(({path}, {f'must be one of {list(vals)!r}'!r}))")
            return
        k = t.kind
        if k == "basic":
            self.basic(t.name, c, v, path)
        elif k == "union":
            if not all(a.kind == "basic" for a in t.args):
                raise NotImplementedError(f"plain validators: a union of {[a.kind for a in t.args]}")
            conds = [self.basic_ok(a.name, c, v) for a in t.args]
            names = " or ".join(a.name for a in t.args)
            out(f"if not ({' or '.join(f'({x})' for x in conds)}):")
            out(f"    add(({path}, {f'must be {names}'!r}))")
        elif k == "ref":
            out(f"_v{version}_{t.name}({v}, {path}, add)")
        elif k == "list":
            out(f"if type({v}) is not list:")
            out(f"    add(({path}, 'must be a list'))")
            out("else:")
            out.indent()
            if "min_items" in c:
                out(f"if len({v}) < {c['min_items']}:")
                out(f"    add(({path}, {'needs at least ' + str(c['min_items']) + ' item(s)'!r}))")
            if "max_items" in c:
                out(f"if len({v}) > {c['max_items']}:")
                out(f"    add(({path}, {'takes at most ' + str(c['max_items']) + ' item(s)'!r}))")
            i, item = self.var(), self.var()
            out(f"for {i}, {item} in enumerate({v}):")
            out.indent()
            inner = {"enum": c["item_enum"]} if "item_enum" in c else {}
            self.check(t.args[0], inner, None, item, f"{path} + ({i},)", version)
            out.dedent()
            out.dedent()
        elif k in ("map", "intmap"):
            out(f"if type({v}) is not dict:")
            out(f"    add(({path}, 'must be an object'))")
            out("else:")
            out.indent()
            if "min_items" in c:
                out(f"if len({v}) < {c['min_items']}:")
                out(f"    add(({path}, {'needs at least ' + str(c['min_items']) + ' key(s)'!r}))")
            if "max_items" in c:
                out(f"if len({v}) > {c['max_items']}:")
                out(f"    add(({path}, {'takes at most ' + str(c['max_items']) + ' key(s)'!r}))")
            key, item = self.var(), self.var()
            out(f"for {key}, {item} in {v}.items():")
            out.indent()
            key_pattern = _INT_KEY if k == "intmap" else c.get("key_pattern")
            if key_pattern is not None:
                full = f"^({key_pattern})$" if k == "intmap" else key_pattern
                out(f"if type({key}) is not str or not {self.pattern(_rust_pattern(full))}.search({key}):")
                out(f"    add(({path} + ({key},), 'key does not match {full}'))")
            self.check(t.args[0], {}, None, item, f"{path} + ({key},)", version)
            out.dedent()
            out.dedent()
        else:
            raise NotImplementedError(f"plain validators: type kind {k!r}")

    def basic_ok(self, name: str, c: dict[str, Any], v: str) -> str:
        if name == "str":
            cond = f"type({v}) is str"
            if "pattern" in c:
                cond += f" and {self.pattern(_rust_pattern(c['pattern']))}.search({v}) is not None"
            return cond
        if name == "int":
            cond = f"type({v}) is int"
            if "minimum" in c:
                cond += f" and {v} >= {c['minimum']!r}"
            return cond
        if name == "null":
            return f"{v} is None"
        if name == "bool":
            return f"type({v}) is bool"
        if name == "float":
            return f"type({v}) is float"
        if name == "any":
            return "True"
        raise NotImplementedError(f"plain validators: basic type {name!r}")

    def basic(self, name: str, c: dict[str, Any], v: str, path: str) -> None:
        what = {"str": "a string", "int": "an integer", "null": "null", "bool": "a boolean", "float": "a number"}
        if name == "any":
            return
        ok = self.basic_ok(name, c, v)
        simple = ok.startswith(f"type({v}) is ") and " and " not in ok
        self.c(f"if {ok.replace(' is ', ' is not ', 1)}:" if simple else f"if not ({ok}):")
        rules = []
        if "pattern" in c:
            rules.append(f"matching {c['pattern']}")
        if "minimum" in c:
            rules.append(f">= {c['minimum']}")
        self.c(f"    add(({path}, {('must be ' + what[name] + (' ' + ', '.join(rules) if rules else ''))!r}))")


def _record(em: _Emitter, p: Projection, rname: str) -> None:
    c = em.c
    rec = p.records[rname]
    if rec.spec.extra != "forbid" or rec.spec.extra_type:
        raise NotImplementedError(f"plain validators: record {rname} with extra={rec.spec.extra!r}")
    keys = tuple(f.name for f in rec.fields)
    c()
    c()
    c(f"def _v{p.version}_{rname}(d: Any, p: tuple, add: Any) -> None:")
    c.indent()
    c(f'"""{rname} of version {p.version}."""')
    c("if type(d) is not dict:")
    c("    add((p, 'must be an object'))")
    c("    return")
    c("for k in d:")
    c(f"    if k not in {keys!r}:")
    c("        add((p + (k,), 'unknown key'))")
    for f in rec.fields:
        _field(em, p, f)
    c.dedent()


def _field(em: _Emitter, p: Projection, f: PField) -> None:
    c = em.c
    cons = f.constraints()
    c(f"if {f.name!r} in d:")
    c.indent()
    v = em.var()
    c(f"{v} = d[{f.name!r}]")
    path = f"p + ({f.name!r},)"
    em.check(f.type, cons, f.const, v, path, p.version)
    key_field = cons.get("keyed_by")
    if key_field is not None:
        if f.type.kind not in ("map", "intmap") or f.type.args[0].kind != "ref":
            raise NotImplementedError("plain validators: keyed_by on a map of records only")
        target = p.records[f.type.args[0].name]
        declared = any(x.name == key_field for x in target.fields)
        c(f"if type({v}) is dict:")
        c(f"    for _key, _item in {v}.items():")
        got = f"_item.get({key_field!r})" if declared else "_key"
        c(f"        if type(_item) is dict and {got} != _key:")
        c(f"            add(({path} + (_key, {key_field!r}), 'key differs from its {key_field}'))")
    c.dedent()
    if f.required:
        c("else:")
        c(f"    add(({'p + (' + repr(f.name) + ',)'}, 'required key is missing'))")


def emit_plain(model: Any, name: str) -> str:
    """Python source of ``generated/<name>_plain.py``."""
    spec, doc = model.records[name]
    tl_doc = model.timelines[spec.timeline][1]
    projections = project(model, name)
    body = Code()
    em = _Emitter(body)
    for p in projections:
        for rname in p.records:
            _record(em, p, rname)
    c = Code()
    c.lines.append(header(model, [doc, tl_doc]).rstrip("\n"))
    c(f'"""Plain validators: {spec.title}, every version (dict in, issues out; no pydantic).')
    c()
    c("``validate(doc, version, style)`` lists the issues of a parsed document as (JSON path")
    c("tuple, message): the rules of the pydantic models of ``" + name + "_v<N>_models`` in strict")
    c('mode (a test checks that both accept and refuse the same documents)."""')
    c()
    c("from __future__ import annotations")
    c()
    c("import re")
    c("from typing import Any")
    c()
    for pat, const in em.patterns.items():
        c(f"{const} = re.compile({pat!r})")
    c.lines.extend(body.lines)
    c()
    c()
    c("#: version -> style -> the validator of the whole document")
    c("ROOTS = {")
    for p in projections:
        c(f"    {p.version}: {{" + ", ".join(f"{r.style!r}: _v{p.version}_{r.record}" for r in p.roots) + "},")
    c("}")
    c()
    c()
    c("def validate(doc: Any, version: int, style: str) -> list[tuple[tuple, str]]:")
    c('    """The issues of ``doc`` as a ``version`` document of ``style`` (empty: valid)."""')
    c("    out: list[tuple[tuple, str]] = []")
    c("    ROOTS[version][style](doc, (), out.append)")
    c("    return out")
    return c.text()


__all__ = ["emit_plain"]
