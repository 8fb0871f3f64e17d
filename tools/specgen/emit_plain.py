"""Emit the plain read path of a records spec: validators (dict in, issues out) and typed
records (slotted classes built from a document the validators accept), with no pydantic.

They state the same rules as the pydantic models (``emit_versioned``) from the same
projections, in strict mode: exact JSON types (no coercion, no bool for int), required
keys, unknown keys refused, constants, literals, enums, patterns (anchored as
pydantic-core's regex engine anchors them: ``$`` is the end of the text), minimums, item
counts, tuples, int-keyed maps, keyed maps, aliases and unions of records told apart by a
discriminator. A test checks that both back ends accept and refuse the same documents. The
read path (``mlf_spec.mlf.metadata``, ``mlf_spec.graph_json``) validates with them and reads
the typed records, so checking and inspecting an archive needs no pydantic start-up.

A versioned spec (with a timeline) gets one validator and one class per version and record;
a record whose rules are the same in several versions (and whose records are too) is
emitted once, under the first version that has it, and the later versions use it. A
lenient spec without a timeline (graph JSON) is emitted as one unversioned projection.
"""

from __future__ import annotations

from typing import Any

from .code import Code
from .common import camel, header
from .versioned import PField, PRecord, Projection, PRoot, TypeNode, parse_type, project

_INT_KEY = r"0|[1-9][0-9]*"
#: attribute names of :class:`PlainRecord` that no key may take
_OWN = {"extra", "fields_set", "RECORD", "KEYS", "IDENTS", "INT_KEYED"}


def _rust_pattern(pattern: str) -> str:
    """A pattern for Python's ``re.search`` that matches what pydantic-core's Rust regex
    matches: a final ``$`` is the end of the text (Python's also matches before a final
    newline)."""
    if pattern.endswith("$") and not pattern.endswith("\\$"):
        return pattern[:-1] + r"\Z"
    return pattern


def _ident(name: str) -> str:
    """The attribute name of a key, as the pydantic models name it."""
    import keyword

    import pydantic

    ident = name.replace("-", "_")
    if not ident.isidentifier() or keyword.iskeyword(ident) or ident in dir(pydantic.BaseModel) or ident.startswith("_"):
        ident = ident.strip("_") + "_"
    if ident in _OWN:
        raise NotImplementedError(f"plain records: key {name!r} would hide PlainRecord.{ident}")
    return ident


class _Emitter:
    """Emits the code of one record at a time; record references are written through
    ``names`` (record -> emitted name of its validator / class in this projection)."""

    def __init__(self, aliases: dict[str, tuple[TypeNode, dict[str, Any]]]) -> None:
        self.patterns: dict[str, str] = {}  # pattern -> constant name
        self.aliases = aliases
        self.c = Code()
        self.tmp = 0
        self.names: dict[str, str] = {}  # record -> its validator's name
        self.classes: dict[str, str] = {}  # record -> its class name
        self.tags: dict[str, dict[str, Any]] = {}  # record -> key -> const value
        self.fields_of: dict[str, set[str]] = {}  # record -> its keys
        self.dispatch: dict[TypeNode, tuple[str, str]] = {}  # union of records -> (table name, discriminator)

    def pattern(self, p: str) -> str:
        name = self.patterns.get(p)
        if name is None:
            name = self.patterns[p] = f"_P{len(self.patterns)}"
        return name

    def var(self) -> str:
        self.tmp += 1
        return f"_v{self.tmp}"

    # ------------------------------------------------------------- validators

    def check(self, t: TypeNode, c: dict[str, Any], const: Any, v: str, path: str) -> None:
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
        elif k == "lit":
            out(f"if type({v}) is not str or {v} != {t.name!r}:")
            out(f"    add(({path}, {f'must be {t.name!r}'!r}))")
        elif k == "union" and all(a.kind == "ref" and a.name not in self.aliases for a in t.args):
            self.tagged(t, c, v, path)
        elif k == "union":
            if not all(a.kind == "basic" for a in t.args):
                raise NotImplementedError(f"plain validators: a union of {[a.kind for a in t.args]}")
            conds = [self.basic_ok(a.name, c, v) for a in t.args]
            names = " or ".join(a.name for a in t.args)
            out(f"if not ({' or '.join(f'({x})' for x in conds)}):")
            out(f"    add(({path}, {f'must be {names}'!r}))")
        elif k == "ref" and t.name in self.aliases:
            at, ac = self.aliases[t.name]
            self.check(at, {**ac, **c}, None, v, path)
        elif k == "ref":
            out(f"{self.names[t.name]}({v}, {path}, add)")
        elif k == "list":
            out(f"if type({v}) is not list:")
            out(f"    add(({path}, 'must be a list'))")
            out("else:")
            out.indent()
            self.counts(c, v, path, "item(s)")
            i, item = self.var(), self.var()
            out(f"for {i}, {item} in enumerate({v}):")
            out.indent()
            inner = {"enum": c["item_enum"]} if "item_enum" in c else {}
            if "discriminator" in c:
                inner["discriminator"] = c["discriminator"]
            self.check(t.args[0], inner, None, item, f"{path} + ({i},)")
            out.dedent()
            out.dedent()
        elif k == "tuple":
            n = len(t.args)
            out(f"if type({v}) not in (list, tuple) or len({v}) != {n}:")
            out(f"    add(({path}, {f'must be an array of {n}'!r}))")
            out("else:")
            out.indent()
            for k_arg, a in enumerate(t.args):
                item = self.var()
                out(f"{item} = {v}[{k_arg}]")
                self.check(a, {}, None, item, f"{path} + ({k_arg},)")
            out.dedent()
        elif k in ("map", "intmap"):
            out(f"if type({v}) is not dict:")
            out(f"    add(({path}, 'must be an object'))")
            out("else:")
            out.indent()
            self.counts(c, v, path, "key(s)")
            key, item = self.var(), self.var()
            out(f"for {key}, {item} in {v}.items():")
            out.indent()
            key_pattern = _INT_KEY if k == "intmap" else c.get("key_pattern")
            if key_pattern is not None:
                full = f"^({key_pattern})$" if k == "intmap" else key_pattern
                out(f"if type({key}) is not str or not {self.pattern(_rust_pattern(full))}.search({key}):")
                out(f"    add(({path} + ({key},), 'key does not match {full}'))")
            self.check(t.args[0], {}, None, item, f"{path} + ({key},)")
            out.dedent()
            out.dedent()
        else:
            raise NotImplementedError(f"plain validators: type kind {k!r}")

    def counts(self, c: dict[str, Any], v: str, path: str, what: str) -> None:
        if "min_items" in c:
            self.c(f"if len({v}) < {c['min_items']}:")
            self.c(f"    add(({path}, {'needs at least ' + str(c['min_items']) + ' ' + what!r}))")
        if "max_items" in c:
            self.c(f"if len({v}) > {c['max_items']}:")
            self.c(f"    add(({path}, {'takes at most ' + str(c['max_items']) + ' ' + what!r}))")

    def tagged(self, t: TypeNode, c: dict[str, Any], v: str, path: str) -> None:
        """A union of records told apart by the const value of their ``discriminator`` key."""
        disc = c.get("discriminator")
        if disc is None:
            raise NotImplementedError("plain validators: a union of records without a discriminator")
        out = self.c
        out(f"if type({v}) is not dict:")
        out(f"    add(({path}, 'must be an object'))")
        tags = []
        for a in t.args:
            tag = self.tags[a.name][disc]
            tags.append(tag)
            out(f"elif {v}.get({disc!r}) == {tag!r}:")
            out(f"    {self.names[a.name]}({v}, {path}, add)")
        out("else:")
        out(f"    add(({path} + ({disc!r},), {f'must be one of {tags!r}'!r}))")

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

    def validator(self, rec: PRecord, fname: str) -> None:
        c = self.c
        spec = rec.spec
        open_type = parse_type(spec.extra_type) if spec.extra == "allow" and spec.extra_type else None
        if spec.extra != "forbid" and open_type is None:
            raise NotImplementedError(f"plain validators: record {rec.name} with extra={spec.extra!r} and no extra_type")
        keys = tuple(f.name for f in rec.fields)
        c()
        c()
        c(f"def {fname}(d: Any, p: tuple, add: Any) -> None:")
        c.indent()
        c(f'"""The issues of a {rec.name} record."""')
        c("if type(d) is not dict:")
        c("    add((p, 'must be an object'))")
        c("    return")
        c("for k in d:")
        c(f"    if k not in {keys!r}:")
        if open_type is None:
            c("        add((p + (k,), 'unknown key'))")
        else:
            c.indent()
            c.indent()
            self.check(open_type, {}, None, "d[k]", "p + (k,)")
            c.dedent()
            c.dedent()
        for f in rec.fields:
            self.field(rec, f)
        c.dedent()

    def field(self, rec: PRecord, f: PField) -> None:
        c = self.c
        cons = f.constraints()
        c(f"if {f.name!r} in d:")
        c.indent()
        v = self.var()
        c(f"{v} = d[{f.name!r}]")
        path = f"p + ({f.name!r},)"
        self.check(f.type, cons, f.const, v, path)
        key_field = cons.get("keyed_by")
        if key_field is not None:
            if f.type.kind not in ("map", "intmap") or f.type.args[0].kind != "ref":
                raise NotImplementedError("plain validators: keyed_by on a map of records only")
            declared = key_field in self.fields_of[f.type.args[0].name]
            c(f"if type({v}) is dict:")
            c(f"    for _key, _item in {v}.items():")
            got = f"_item.get({key_field!r})" if declared else "_key"
            c(f"        if type(_item) is dict and {got} != _key:")
            c(f"            add(({path} + (_key, {key_field!r}), 'key differs from its {key_field}'))")
        c.dedent()
        if f.required:
            c("else:")
            c(f"    add(({'p + (' + repr(f.name) + ',)'}, 'required key is missing'))")

    # ------------------------------------------------------------- typed records

    def convert(self, t: TypeNode, x: str, depth: int = 0) -> str | None:
        """An expression making the typed value of ``x`` (of type ``t``, valid), or None when
        the value is used as it is."""
        k = t.kind
        if k == "ref" and t.name in self.aliases:
            return self.convert(self.aliases[t.name][0], x, depth)
        if k == "ref":
            return f"{self.classes[t.name]}({x})"
        if k == "union" and all(a.kind == "ref" and a.name not in self.aliases for a in t.args):
            table, disc = self.dispatch[t]
            return f"{table}[{x}[{disc!r}]]({x})"
        if k == "list":
            y = f"_x{depth}"
            inner = self.convert(t.args[0], y, depth + 1)
            return None if inner is None else f"[{inner} for {y} in {x}]"
        if k in ("map", "intmap"):
            key, y = f"_k{depth}", f"_x{depth}"
            inner = self.convert(t.args[0], y, depth + 1)
            return None if inner is None else f"{{{key}: {inner} for {key}, {y} in {x}.items()}}"
        if k == "tuple":
            parts = [self.convert(a, f"{x}[{i}]", depth + 1) for i, a in enumerate(t.args)]
            if all(p is None for p in parts):
                return f"tuple({x})"
            return "(" + ", ".join(p or f"{x}[{i}]" for i, p in enumerate(parts)) + ",)"
        return None

    def record_class(self, rec: PRecord, cname: str, doc: str) -> None:
        c = self.c
        idents = tuple(_ident(f.name) for f in rec.fields)
        int_keyed = tuple(_ident(f.name) for f in rec.fields if f.type.kind == "intmap")
        c()
        c()
        c(f"class {cname}(PlainRecord):")
        c.indent()
        c(f'"""{doc}"""')
        c()
        c(f"__slots__ = {idents!r}")
        c(f"RECORD = {rec.name!r}")
        c(f"KEYS = {tuple(f.name for f in rec.fields)!r}")
        c(f"IDENTS = {idents!r}")
        if int_keyed:
            c(f"INT_KEYED = {int_keyed!r}")
        c()
        c("def __init__(self, d: dict[str, Any]) -> None:")
        c.indent()
        c("self._doc = d")
        for f, ident in zip(rec.fields, idents):
            conv = self.convert(f.type, f"d[{f.name!r}]")
            if conv is None:
                c(f"self.{ident} = d.get({f.name!r})")
            elif f.required:
                c(f"self.{ident} = {conv}")
            else:
                c(f"self.{ident} = {conv} if {f.name!r} in d else None")
        c.dedent()
        c.dedent()


_RUNTIME = '''

class PlainRecord:
    """Base of the typed records: built from a document the validators accept (its values
    are used as they are, not copied: read them, do not change them). Attributes are the
    keys (absent optional keys are None); ``fields_set`` names the keys present, ``extra``
    holds unknown keys (kept by lenient reading) and :func:`to_data` gives the document back
    in spec key order."""

    __slots__ = ("_doc",)
    #: the spec's record name, JSON keys in spec order, their attribute names, int-keyed maps
    RECORD = ""
    KEYS: tuple[str, ...] = ()
    IDENTS: tuple[str, ...] = ()
    INT_KEYED: tuple[str, ...] = ()

    @property
    def fields_set(self) -> frozenset[str]:
        """The attribute names of the keys the document has."""
        return frozenset(i for k, i in zip(self.KEYS, self.IDENTS) if k in self._doc)

    @property
    def extra(self) -> dict[str, Any]:
        """Keys the record does not declare, with their values."""
        return {k: v for k, v in self._doc.items() if k not in self.KEYS}

    def __eq__(self, other: object) -> bool:  # by value, so not hashable (as the pydantic models)
        return type(other) is type(self) and to_data(self) == to_data(other)

    def __repr__(self) -> str:
        inner = ", ".join(f"{i}={getattr(self, i)!r}" for k, i in zip(self.KEYS, self.IDENTS) if k in self._doc)
        return f"{type(self).__name__}({inner})"


def to_data(value: Any, numeric_keys: bool = False, _int_keys: bool = False) -> Any:
    """Plain JSON data of a typed record: declared keys that are set, in spec order, then
    unknown keys. With ``numeric_keys``, maps declared with int keys get int keys (as the
    writer's dicts had: Python's sort_keys then orders them numerically)."""
    if isinstance(value, PlainRecord):
        out: dict[Any, Any] = {}
        cls = type(value)
        doc = value._doc
        for key, ident in zip(cls.KEYS, cls.IDENTS):
            if key in doc:
                out[key] = to_data(getattr(value, ident), numeric_keys, numeric_keys and ident in cls.INT_KEYED)
        for k, v in doc.items():
            if k not in cls.KEYS:
                out[k] = to_data(v, numeric_keys)
        return out
    if isinstance(value, dict):
        return {(int(k) if _int_keys and isinstance(k, str) and k.isdigit() else k): to_data(v, numeric_keys)
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_data(v, numeric_keys) for v in value]
    return value


def dump_json(value: Any, indent: int | None = None, sort_keys: bool = False, ensure_ascii: bool = True,
              trailing_newline: bool = False) -> str:
    """``json.dumps`` with a writer's options; records go through :func:`to_data` first."""
    import json

    text = json.dumps(to_data(value, numeric_keys=True), indent=indent, sort_keys=sort_keys, ensure_ascii=ensure_ascii)
    return text + "\\n" if trailing_newline else text
'''


def _order(p: Projection, aliases: set[str]) -> list[str]:
    """The records of a projection, each after the records it refers to."""
    out: list[str] = []
    visiting: set[str] = set()

    def visit(r: str) -> None:
        if r in out:
            return
        if r in visiting:
            raise NotImplementedError(f"plain validators: records refer to each other in a cycle ({r})")
        visiting.add(r)
        for f in p.records[r].fields:
            for ref in f.type.refs():
                if ref not in aliases:
                    visit(ref)
        visiting.discard(r)
        out.append(r)

    for r in p.records:
        visit(r)
    return out


def _tags(p: Projection) -> dict[str, dict[str, Any]]:
    """record -> key -> const value, for the records a discriminator tells apart."""
    return {r: {f.name: f.const for f in rec.fields if f.const is not None} for r, rec in p.records.items()}


def _emit(projections: list[Projection], aliases: dict[str, tuple[TypeNode, dict[str, Any]]],
          versioned: bool) -> tuple[_Emitter, dict[int, dict[str, tuple[str, str]]]]:
    """Emit every projection's records, sharing the code of records that are the same in
    several projections. Returns the emitter and version -> record -> (validator, class)."""
    em = _Emitter(aliases)
    seen: dict[str, tuple[str, str]] = {}  # code with placeholder names -> (validator, class)
    table: dict[int, dict[str, tuple[str, str]]] = {}
    for p in projections:
        em.names, em.classes = {}, {}
        em.tags = _tags(p)
        em.fields_of = {r: {f.name for f in rec.fields} for r, rec in p.records.items()}
        em.dispatch = {}
        table[p.version] = {}
        for rname in _order(p, set(aliases)):
            rec = p.records[rname]
            for f in rec.fields:  # unions of records need a dispatch table (emitted after the classes)
                for t in _unions(f.type):
                    disc = f.constraints().get("discriminator")
                    if disc is None:
                        raise NotImplementedError(f"plain records: {rname}.{f.name} has a union of records "
                                                  "and no discriminator")
                    if t not in em.dispatch:
                        em.dispatch[t] = (f"_BY_{disc.upper()}_{p.version}_{len(em.dispatch)}", disc)
            main = em.c
            em.c = Code()
            em.tmp = 0
            suffix = f"_v{p.version}" if versioned else ""
            em.validator(rec, "{VALIDATOR}")
            em.record_class(rec, "{CLASS}", (f"{camel(rname)}: " + " ".join(rec.doc.split()))
                            .replace("\\", "\\\\").replace('"""', "'''"))
            text = em.c.text()
            em.c = main
            if text in seen:
                vname, cname = seen[text]
            else:
                vname = f"_v{p.version}_{rname}" if versioned else f"_{rname}"
                cname = f"{camel(rname)}{suffix.upper().replace('_', '')}"
                seen[text] = (vname, cname)
                main.lines.extend(text.replace("{VALIDATOR}", vname).replace("{CLASS}", cname).rstrip("\n").split("\n"))
            em.names[rname] = vname
            em.classes[rname] = cname
            table[p.version][rname] = (vname, cname)
        for t, (dname, disc) in em.dispatch.items():
            by_tag = ", ".join(f"{em.tags[a.name][disc]!r}: {em.classes[a.name]}" for a in t.args)
            em.c()
            em.c()
            em.c(f"#: {disc} -> the record class of an element of {t.text()}")
            em.c(f"{dname} = {{{by_tag}}}")
    return em, table


def _unions(t: TypeNode) -> list[TypeNode]:
    out = [t] if t.kind == "union" and all(a.kind == "ref" for a in t.args) else []
    for a in t.args:
        out += _unions(a)
    return out


def _aliases(spec: Any) -> dict[str, tuple[TypeNode, dict[str, Any]]]:
    out = {}
    for a in spec.aliases:
        c = {k: getattr(a, k) for k in ("pattern", "minimum", "min_items", "max_items") if getattr(a, k) is not None}
        out[a.name] = (parse_type(a.type), c)
    return out


def _unversioned(spec: Any) -> Projection:
    """A records spec without a timeline as one projection (version 0, style ``document``)."""
    records = {}
    for r in spec.records:
        fields = [PField(f.name, parse_type(f.type), f.required, f.doc, f, [], [], f.const) for f in r.fields]
        records[r.name] = PRecord(r.name, r.doc, r, fields, [])
    return Projection(0, [], [PRoot("document", spec.root, "", None, {}, [])], records)


def _head(c: Code, model: Any, docs: list[Any], title: str, em: _Emitter) -> None:
    c.lines.append(header(model, docs).rstrip("\n"))
    c(f'"""{title}')
    c()
    c("``validate`` lists the issues of a parsed document as (JSON path tuple, message): the")
    c("rules of the pydantic models in strict mode (a test checks that both accept and refuse")
    c("the same documents); ``typed`` builds the typed records of a document ``validate``")
    c('accepts (unknown keys aside). No pydantic."""')
    c()
    c("from __future__ import annotations")
    c()
    c("import re")
    c("from typing import Any")
    c()
    for pat, const in em.patterns.items():
        c(f"{const} = re.compile({pat!r})")
    c.lines.extend(_RUNTIME.rstrip("\n").split("\n"))


def emit_plain(model: Any, name: str) -> str:
    """Python source of ``generated/<name>_plain.py``."""
    spec, doc = model.records[name]
    if spec.timeline is None:
        return _emit_unversioned(model, name)
    tl_doc = model.timelines[spec.timeline][1]
    projections = project(model, name)
    em, table = _emit(projections, _aliases(spec), versioned=True)
    c = Code()
    _head(c, model, [doc, tl_doc], f"Plain validators and typed records: {spec.title}, every version.", em)
    c.lines.extend(em.c.lines)
    c()
    c()
    c("#: version -> style -> (validator, typed record class) of the whole document")
    c("ROOTS = {")
    for p in projections:
        c(f"    {p.version}: {{" + ", ".join(f"{r.style!r}: ({table[p.version][r.record][0]}, "
                                             f"{table[p.version][r.record][1]})" for r in p.roots) + "},")
    c("}")
    c("#: version -> record name -> its typed record class")
    c("CLASSES = {")
    for p in projections:
        c(f"    {p.version}: {{" + ", ".join(f"{r!r}: {cls}" for r, (_, cls) in table[p.version].items()) + "},")
    c("}")
    c()
    c()
    c("def validate(doc: Any, version: int, style: str) -> list[tuple[tuple, str]]:")
    c('    """The issues of ``doc`` as a ``version`` document of ``style`` (empty: valid)."""')
    c("    out: list[tuple[tuple, str]] = []")
    c("    ROOTS[version][style][0](doc, (), out.append)")
    c("    return out")
    c()
    c()
    c("def typed(doc: dict[str, Any], version: int, style: str) -> PlainRecord:")
    c('    """The typed records of ``doc``, a ``version`` document of ``style`` that :func:`validate`')
    c('    accepts (unknown keys aside)."""')
    c("    return ROOTS[version][style][1](doc)")
    return c.text()


def _emit_unversioned(model: Any, name: str) -> str:
    spec, doc = model.records[name]
    p = _unversioned(spec)
    em, table = _emit([p], _aliases(spec), versioned=False)
    c = Code()
    _head(c, model, [doc], f"Plain validators and typed records: {spec.title}.", em)
    c.lines.extend(em.c.lines)
    vname, cname = table[0][spec.root]
    c()
    c()
    c("#: record name -> its typed record class")
    c("CLASSES = {" + ", ".join(f"{r!r}: {cls}" for r, (_, cls) in table[0].items()) + "}")
    c(f"ROOT = {cname}")
    c()
    c()
    c("def validate(doc: Any) -> list[tuple[tuple, str]]:")
    c('    """The issues of ``doc`` (empty: valid); unknown keys are issues too."""')
    c("    out: list[tuple[tuple, str]] = []")
    c(f"    {vname}(doc, (), out.append)")
    c("    return out")
    c()
    c()
    c(f"def typed(doc: dict[str, Any]) -> {cname}:")
    c('    """The typed records of a document :func:`validate` accepts (unknown keys aside)."""')
    c(f"    return {cname}(doc)")
    return c.text()


__all__ = ["emit_plain"]
