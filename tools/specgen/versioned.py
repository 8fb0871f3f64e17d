"""Versioned specs: timelines, records projected per version, layouts and findings.

A ``timeline`` spec lists the revisions of a writer in order, each with the format version
it wrote. A ``records`` spec with ``timeline:`` describes every version's documents at once:
records, fields and roots carry ``since``/``until`` revision ids, and :func:`project` turns
the spec into one concrete model per version (a field is in version N if it exists in any
revision of N; it is required in N only if it is required in every revision of N). A
``layout`` spec describes the members of an archive the same way. This module checks them
(every reference resolves, every type parses, every range is a known revision) and
computes the projections the emitters print.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .ir import FindingsSpec, LayoutSpec, RecordField, RecordSpec, RecordsSpec, TimelineSpec
from .yamlload import SpecDocument

BASIC = ("str", "int", "bool", "float", "null", "any")


# --------------------------------------------------------------------------- types


@dataclass(frozen=True)
class TypeNode:
    """A parsed records type expression."""

    kind: str  # basic | lit | list | map | intmap | tuple | ref | union
    name: str = ""  # basic name, literal value or referenced record/alias
    args: tuple[TypeNode, ...] = ()

    def refs(self) -> list[str]:
        """Record and alias names used by this type."""
        out = [self.name] if self.kind == "ref" else []
        for a in self.args:
            out += a.refs()
        return out

    def text(self) -> str:
        """The canonical spelling."""
        if self.kind in ("basic", "ref"):
            return self.name
        if self.kind == "lit":
            return repr(self.name)
        if self.kind == "list":
            return f"list[{self.args[0].text()}]"
        if self.kind == "map":
            return f"map[{self.args[0].text()}]"
        if self.kind == "intmap":
            return f"map[int, {self.args[0].text()}]"
        if self.kind == "tuple":
            return "tuple[" + ", ".join(a.text() for a in self.args) + "]"
        return "|".join(a.text() for a in self.args)


class TypeError_(ValueError):
    pass


def parse_type(text: str) -> TypeNode:
    """Parse ``str``, ``'lit'``, ``list[T]``, ``map[T]``, ``map[int, T]``, ``tuple[A, B]``,
    names and unions ``A|B``."""
    node, rest = _parse_union(text.strip(), text)
    if rest.strip():
        raise TypeError_(f"unexpected {rest.strip()!r} in type {text!r}")
    return node


def _split_top(text: str, sep: str) -> list[str]:
    depth, cur, out, quote = 0, "", [], False
    for ch in text:
        if ch == "'":
            quote = not quote
        if not quote:
            if ch == "[":
                depth += 1
            elif ch == "]":
                depth -= 1
            if ch == sep and depth == 0:
                out.append(cur)
                cur = ""
                continue
        cur += ch
    out.append(cur)
    return [p.strip() for p in out]


def _parse_union(text: str, whole: str) -> tuple[TypeNode, str]:
    parts = _split_top(text, "|")
    nodes = [_parse_one(p, whole) for p in parts]
    if len(nodes) == 1:
        return nodes[0], ""
    return TypeNode("union", args=tuple(nodes)), ""


_NAME = re.compile(r"^[a-z_][a-z0-9_]*$")


def _parse_one(text: str, whole: str) -> TypeNode:
    if not text:
        raise TypeError_(f"empty type in {whole!r}")
    if text.startswith("'"):
        if not text.endswith("'") or len(text) < 2:
            raise TypeError_(f"unterminated literal in {whole!r}")
        return TypeNode("lit", text[1:-1])
    if text in BASIC:
        return TypeNode("basic", text)
    m = re.match(r"^(list|map|tuple)\[(.*)\]$", text)
    if m:
        inner = _split_top(m.group(2), ",")
        if m.group(1) == "list":
            if len(inner) != 1:
                raise TypeError_(f"list takes one type in {whole!r}")
            return TypeNode("list", args=(_parse_union(inner[0], whole)[0],))
        if m.group(1) == "map":
            if len(inner) == 1:
                return TypeNode("map", args=(_parse_union(inner[0], whole)[0],))
            if len(inner) == 2 and inner[0] == "int":
                return TypeNode("intmap", args=(_parse_union(inner[1], whole)[0],))
            raise TypeError_(f"map takes one value type (or `int, T`) in {whole!r}")
        return TypeNode("tuple", args=tuple(_parse_union(p, whole)[0] for p in inner))
    if _NAME.match(text):
        return TypeNode("ref", text)
    raise TypeError_(f"cannot parse type {text!r} in {whole!r}")


# --------------------------------------------------------------------------- timeline


@dataclass
class Timeline:
    spec: TimelineSpec
    doc: SpecDocument
    ids: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.spec.name

    def index(self, rid: str) -> int:
        return self.ids.index(rid)

    def versions(self) -> list[int]:
        out: list[int] = []
        for r in self.spec.revisions:
            if r.version not in out:
                out.append(r.version)
        return out

    def revs_of(self, version: int) -> list[int]:
        """Indices of the revisions that wrote ``version``."""
        return [i for i, r in enumerate(self.spec.revisions) if r.version == version]

    def span(self, since: str | None, until: str | None) -> set[int]:
        lo = self.index(since) if since else 0
        hi = self.index(until) if until else len(self.ids)
        return set(range(lo, hi))


def timeline(model: Any, name: str) -> Timeline:
    spec, doc = model.timelines[name]
    return Timeline(spec, doc, [r.id for r in spec.revisions])


def records_timeline(model: Any, spec: RecordsSpec) -> Timeline:
    """The timeline of a timed records spec (ValueError for one without)."""
    if spec.timeline is None:
        raise ValueError(f"records spec {spec.name!r} has no timeline")
    return timeline(model, spec.timeline)


# --------------------------------------------------------------------------- projection


@dataclass
class PField:
    """A field of a record in one version."""

    name: str
    type: TypeNode
    required: bool
    doc: str
    spec: RecordField
    present_in: list[str]  # revision ids of this version that have the key
    required_in: list[str]
    const: Any = None

    def constraints(self) -> dict[str, Any]:
        s = self.spec
        out: dict[str, Any] = {}
        for key in ("pattern", "key_pattern", "minimum", "min_items", "max_items", "item_enum", "enum",
                    "discriminator", "keyed_by", "role"):
            v = getattr(s, key)
            if v is not None:
                out[key] = v
        return out


@dataclass
class PRecord:
    name: str
    doc: str
    spec: RecordSpec
    fields: list[PField]
    present_in: list[str]


@dataclass
class PRoot:
    style: str
    record: str
    doc: str
    match: dict[str, Any] | None
    json_dump: dict[str, Any]
    present_in: list[str]


@dataclass
class Projection:
    """One version of a versioned records spec."""

    version: int
    revisions: list[str]
    roots: list[PRoot]
    records: dict[str, PRecord]


def _applicable(tl: Timeline, since: str | None, until: str | None, revs: list[int]) -> list[int]:
    span = tl.span(since, until)
    return [i for i in revs if i in span]


def project(model: Any, name: str) -> list[Projection]:
    """Every version of the records spec ``name`` (which has a timeline), oldest first."""
    spec, doc = model.records[name]
    tl = timeline(model, spec.timeline)
    by_name = {r.name: r for r in spec.records}
    aliases = {a.name for a in spec.aliases}
    out: list[Projection] = []
    for version in tl.versions():
        revs = tl.revs_of(version)
        roots: list[PRoot] = []
        for root in spec.roots:
            present = _applicable(tl, root.since, root.until, revs)
            if present:
                roots.append(PRoot(root.style, root.record, root.doc,
                                   root.match.model_dump() if root.match else None,
                                   root.json_dump.model_dump(exclude={"doc"}), [tl.ids[i] for i in present]))
        records: dict[str, PRecord] = {}
        todo: list[tuple[str, list[str] | None]] = [(r.record, r.present_in) for r in roots]
        while todo:
            rname, _ = todo.pop(0)
            if rname in records or rname in aliases:
                continue
            rs = by_name[rname]
            rrevs = _applicable(tl, rs.since, rs.until, revs)
            fields: list[PField] = []
            names: list[str] = []
            for f in rs.fields:
                if f.name not in names:
                    names.append(f.name)
            for fname in names:
                entries = [f for f in rs.fields if f.name == fname]
                applicable = [(f, _applicable(tl, f.since, f.until, rrevs)) for f in entries]
                applicable = [(f, a) for f, a in applicable if a]
                if not applicable:
                    continue
                types: list[TypeNode] = []
                for f, _ in applicable:
                    for t in _flatten_union(parse_type(f.type)):
                        if t not in types:
                            types.append(t)
                t = types[0] if len(types) == 1 else TypeNode("union", args=tuple(types))
                present = sorted({i for _, a in applicable for i in a})
                required_in = sorted({i for f, a in applicable if f.required for i in a})
                required = set(required_in) == set(rrevs)
                first = applicable[-1][0]
                const = version if first.role == "version" else first.const
                fields.append(PField(fname, t, required, first.doc, first, [tl.ids[i] for i in present],
                                     [tl.ids[i] for i in required_in], const))
                for ref in t.refs():
                    todo.append((ref, None))
            records[rname] = PRecord(rname, rs.doc, rs, fields, [tl.ids[i] for i in rrevs])
        out.append(Projection(version, [tl.ids[i] for i in revs], roots, records))
    return out


def _flatten_union(t: TypeNode) -> list[TypeNode]:
    if t.kind == "union":
        out: list[TypeNode] = []
        for a in t.args:
            out += _flatten_union(a)
        return out
    return [t]


# --------------------------------------------------------------------------- layout


_PLACEHOLDER = re.compile(r"\{([a-z_][a-z0-9_]*)\}")


def path_regex(path: str, placeholders: dict[str, str]) -> str:
    """The full-match regular expression of a layout path pattern."""
    out, pos, seen = "", 0, set()
    for m in _PLACEHOLDER.finditer(path):
        out += re.escape(path[pos:m.start()])
        name = m.group(1)
        if name in seen:
            out += f"(?P={name})"
        else:
            out += f"(?P<{name}>{placeholders[name]})"
            seen.add(name)
        pos = m.end()
    out += re.escape(path[pos:])
    return "^" + out + "$"


def layout_versions(model: Any, name: str) -> dict[int, dict[str, list[str]]]:
    """version -> style -> ids of the entries that some revision of the version has."""
    spec, _ = model.layouts[name]
    tl = timeline(model, spec.timeline)
    out: dict[int, dict[str, list[str]]] = {}
    for version in tl.versions():
        revs = tl.revs_of(version)
        styles = _styles(model, spec, version)
        out[version] = {}
        for style in styles:
            out[version][style] = [
                e.id for e in spec.entries
                if e.style in (style, "both") and _applicable(tl, e.since, e.until, revs)
            ]
    return out


def _styles(model: Any, spec: LayoutSpec, version: int) -> list[str]:
    rspec, _ = model.records[spec.metadata]
    for p in project(model, spec.metadata):
        if p.version == version:
            return [r.style for r in p.roots]
    return []


# --------------------------------------------------------------------------- checks


def check_versioned(model: Any) -> None:
    """Semantic checks of timelines, records, layouts and findings (raises SpecError)."""
    for spec, doc in model.timelines.values():
        _check_timeline(spec, doc)
    for spec, doc in model.records.values():
        _check_records(model, spec, doc)
    for spec, doc in model.layouts.values():
        _check_layout(model, spec, doc)
    for spec, doc in model.findings.values():
        seen: set[str] = set()
        for i, f in enumerate(spec.findings):
            if f.code in seen:
                raise doc.error(("findings", i, "code"), f"code {f.code!r} appears twice")
            seen.add(f.code)
            if f.provable is False and f.severity != "info":
                raise doc.error(("findings", i, "severity"), "a rule the writer's code does not prove is info at most")
            if (f.provable is not None or f.basis or f.was) and f.rule is None:
                raise doc.error(("findings", i), "`provable`, `basis` and `was` belong to a cross-check with a `rule`")
            if f.rule is not None and (f.provable is None or not f.basis):
                raise doc.error(("findings", i), "a cross-check `rule` states whether it is `provable` and its `basis`")
            for k, ref in enumerate(f.invariants):
                _check_invariant_ref(model, doc, ("findings", i, "invariants", k), ref)


def _check_invariant_ref(model: Any, doc: SpecDocument, loc: tuple, ref: str) -> None:
    struct, _, name = ref.partition(".")
    for binary in model.binaries.values():
        for s in binary.spec.structs:
            if s.name != struct:
                continue
            for inv in s.invariants:
                if inv.name == name:
                    if inv.severity != "warning":
                        raise doc.error(loc, f"invariant {ref!r} is an error invariant (the reader raises); "
                                        "only warning invariants are findings")
                    return
    raise doc.error(loc, f"no binary spec has a struct {struct!r} with an invariant {name!r}")


def _check_timeline(spec: TimelineSpec, doc: SpecDocument) -> None:
    seen: set[str] = set()
    last_version, last_date = 0, ""
    for i, r in enumerate(spec.revisions):
        if r.id in seen:
            raise doc.error(("revisions", i, "id"), f"revision {r.id!r} appears twice")
        seen.add(r.id)
        if int(r.id[1:].split(".")[0]) != r.version:
            raise doc.error(("revisions", i, "id"), f"id {r.id!r} does not start with its version v{r.version}")
        if r.version < last_version:
            raise doc.error(("revisions", i, "version"), "versions must not decrease along the timeline")
        if r.date < last_date:
            raise doc.error(("revisions", i, "date"), "revisions must be in date order")
        if "." not in r.id and r.version == last_version:
            raise doc.error(("revisions", i, "id"), f"only the first revision of version {r.version} is named v{r.version}")
        last_version, last_date = r.version, r.date


def _check_range(tl: Timeline | None, doc: SpecDocument, loc: tuple, since: str | None, until: str | None) -> None:
    for key, v in (("since", since), ("until", until)):
        if v is None:
            continue
        if tl is None:
            continue  # TVM versions; checked against eras elsewhere if ever used
        if v not in tl.ids:
            raise doc.error(loc + (key,), f"{v!r} is not a revision of timeline {tl.name!r}; known: {tl.ids}")
    if tl is not None and since and until and tl.index(since) >= tl.index(until):
        raise doc.error(loc + ("until",), f"until {until!r} is not after since {since!r}")


def _check_records(model: Any, spec: RecordsSpec, doc: SpecDocument) -> None:
    tl = None
    if spec.timeline is not None:
        if spec.timeline not in model.timelines:
            raise doc.error(("timeline",), f"unknown timeline {spec.timeline!r}")
        tl = timeline(model, spec.timeline)
        if not spec.roots:
            raise doc.error(("roots",), "a records spec with a timeline needs `roots`")
    elif spec.root is None:
        raise doc.error(("root",), "required key 'root' is missing")
    names = {r.name for r in spec.records}
    alias_names = {a.name for a in spec.aliases}
    known = _check_uses(model, spec, doc, names, names | alias_names)
    if spec.root is not None:
        for part in spec.root.split("|"):
            if part.strip() not in names:
                raise doc.error(("root",), f"unknown record {part.strip()!r}")
        if "|" in spec.root and not spec.lenient:
            raise doc.error(("root",), "a union of roots needs lenient: true")
    for i, root in enumerate(spec.roots):
        if root.record not in names:
            raise doc.error(("roots", i, "record"), f"unknown record {root.record!r}")
        _check_range(tl, doc, ("roots", i), root.since, root.until)
    for i, a in enumerate(spec.aliases):
        try:
            t = parse_type(a.type)
        except TypeError_ as exc:
            raise doc.error(("aliases", i, "type"), str(exc)) from None
        for ref in t.refs():
            if ref not in known:
                raise doc.error(("aliases", i, "type"), f"unknown type {ref!r}")
    for i, r in enumerate(spec.records):
        _check_range(tl, doc, ("records", i), r.since, r.until)
        if r.extra_type is not None and r.extra != "allow":
            raise doc.error(("records", i, "extra_type"), "extra_type needs extra: allow")
        for j, f in enumerate(r.fields):
            _check_field(spec, doc, tl, r, f, ("records", i, "fields", j), names, known)
    if tl is not None:
        _check_projections(model, spec, doc, tl, names)


def _check_uses(model: Any, spec: RecordsSpec, doc: SpecDocument, names: set[str], known: set[str]) -> set[str]:
    """Check the specs ``spec`` uses (kinds that join, no clashes, no cycle); returns ``known``
    with the record and alias names they bring."""
    for i, used in enumerate(spec.uses):
        other = model.records.get(used)
        if other is None or used == spec.name:
            raise doc.error(("uses", i), f"unknown records spec {used!r}")
        if spec.lenient and spec.timeline is None:  # lenient specs import lenient ones (which may use others)
            if not other[0].lenient or other[0].timeline is not None:
                raise doc.error(("uses", i), f"a lenient spec uses lenient specs without a timeline; {used!r} is not one")
        elif other[0].timeline is not None or other[0].lenient or other[0].uses or spec.timeline is not None:
            raise doc.error(("uses", i), "`uses` joins plain records specs (no timeline, not lenient, no uses of "
                            "their own)")
        clash = names & {r.name for r in other[0].records}
        if clash:
            raise doc.error(("uses", i), f"record(s) {sorted(clash)} are also defined in {used!r}")
        known = known | {r.name for r in other[0].records} | {a.name for a in other[0].aliases}
    seen: set[str] = set()
    todo = list(spec.uses)
    while todo:
        used = todo.pop()
        if used == spec.name:
            raise doc.error(("uses",), f"{spec.name} uses itself through {sorted(seen)}")
        if used not in seen and used in model.records:
            seen.add(used)
            todo.extend(model.records[used][0].uses)
    return known


def _check_field(spec: RecordsSpec, doc: SpecDocument, tl: Any, r: Any, f: Any, loc: tuple[Any, ...],
                 names: set[str], known: set[str]) -> None:
    """Check one field of record ``r`` (at ``loc``): its type, range, compare rules, role,
    patterns, ``keyed_by`` and that no other entry of the same name overlaps it."""
    try:
        t = parse_type(f.type)
    except TypeError_ as exc:
        raise doc.error(loc + ("type",), str(exc)) from None
    for ref in t.refs():
        if ref not in known:
            raise doc.error(loc + ("type",), f"unknown type {ref!r}")
    _check_range(tl, doc, loc, f.since, f.until)
    if f.compare and (tl is not None or not spec.lenient):
        raise doc.error(loc + ("compare",), "compare rules need a lenient records spec without a timeline")
    if "may_omit" in f.compare and f.required:
        raise doc.error(loc + ("compare",), "a key a testee may omit is not required (required: false)")
    if "unordered" in f.compare and "writer_order" in f.compare:
        raise doc.error(loc + ("compare",), "unordered and writer_order exclude each other")
    if ({"unordered", "writer_order"} & set(f.compare)) and t.kind != "list":
        raise doc.error(loc + ("compare",), "unordered and writer_order apply to lists")
    if tl is None and (f.role is not None):
        raise doc.error(loc + ("role",), "role: version needs a timeline")
    for key in ("pattern", "key_pattern"):
        v = getattr(f, key)
        if v is not None:
            try:
                re.compile(v)
            except re.error as exc:
                raise doc.error(loc + (key,), f"bad regular expression: {exc}") from None
    if f.keyed_by is not None:
        if t.kind != "map" or t.args[0].kind != "ref" or t.args[0].name not in names:
            raise doc.error(loc + ("keyed_by",), "keyed_by needs a map of records")
        target = next(x for x in spec.records if x.name == t.args[0].name)
        if f.keyed_by not in {x.name for x in target.fields}:
            raise doc.error(loc + ("keyed_by",), f"{t.args[0].name} has no field {f.keyed_by!r}")
    if tl is not None:
        same = [g for g in r.fields if g.name == f.name]
        if len(same) > 1:
            spans = [tl.span(g.since, g.until) for g in same]
            for j in range(len(spans)):
                for k in range(j + 1, len(spans)):
                    if spans[j] & spans[k]:
                        raise doc.error(loc + ("name",), f"entries of field {f.name!r} overlap in revisions")
    elif sum(1 for g in r.fields if g.name == f.name) > 1:
        raise doc.error(loc + ("name",), f"field {f.name!r} appears twice in {r.name}")


def _check_projections(model: Any, spec: RecordsSpec, doc: SpecDocument, tl: Any, names: set[str]) -> None:
    """Every projection of a timed spec refers only to records present in its version, and
    every example names a version of the timeline and a style of the roots."""
    styles = {r.style for r in spec.roots}
    for p in project(model, spec.name):
        for rname, rec in p.records.items():
            for pf in rec.fields:
                for ref in pf.type.refs():
                    if ref in names and ref not in p.records:
                        raise doc.error(("records",), f"v{p.version}: {rname}.{pf.name} uses {ref}, absent in v{p.version}")
    for i, ex in enumerate(spec.examples):
        if ex.version is None or ex.style not in styles:
            raise doc.error(("examples", i), "an example needs `version` and a `style` of the roots")
        if ex.version not in tl.versions():
            raise doc.error(("examples", i, "version"), f"no version {ex.version} in the timeline")


def _check_layout(model: Any, spec: LayoutSpec, doc: SpecDocument) -> None:
    if spec.timeline not in model.timelines:
        raise doc.error(("timeline",), f"unknown timeline {spec.timeline!r}")
    if spec.metadata not in model.records or model.records[spec.metadata][0].timeline != spec.timeline:
        raise doc.error(("metadata",), f"{spec.metadata!r} is not a records spec on timeline {spec.timeline!r}")
    tl = timeline(model, spec.timeline)
    kinds = {k.name for k in spec.kinds}
    places = {p.name: p.regex for p in spec.placeholders}
    conds = {c.name for c in spec.conditions}
    groups = {g.name for g in spec.groups}
    for key in ("root", "directory", "file"):
        if key not in spec.tar.modes:
            raise doc.error(("tar", "modes"), f"mode {key!r} is missing")
    names = [f.name for f in spec.tar.formats]
    if spec.tar.formats and spec.tar.format not in names:
        raise doc.error(("tar", "format"), f"format {spec.tar.format!r} is not one of the writer's formats {names}")
    for i, f in enumerate(spec.tar.formats):
        if (f.unsorted is not None) != (f.siblings == "any"):
            raise doc.error(("tar", "formats", i), "`unsorted` says who wrote unsorted listings, with siblings: any")
    for key in spec.tar.member_types:
        if key not in ("file", "directory"):
            raise doc.error(("tar", "member_types", key), "member types are given for file and directory")
    for i, u in enumerate(spec.tar.umasks):
        if not 0 <= u <= 0o777:
            raise doc.error(("tar", "umasks", i), "a umask is 0 to 0o777")
        if spec.tar.modes["file"] == 0o666 & ~u and spec.tar.modes["directory"] != 0o777 & ~u:
            raise doc.error(("tar", "modes"), "the file and directory modes come from different umasks")
    ids: set[str] = set()
    for i, e in enumerate(spec.entries):
        loc = ("entries", i)
        if e.id in ids:
            raise doc.error(loc + ("id",), f"entry {e.id!r} appears twice")
        ids.add(e.id)
        if e.kind not in kinds:
            raise doc.error(loc + ("kind",), f"unknown kind {e.kind!r}")
        if e.when is not None and e.when not in conds:
            raise doc.error(loc + ("when",), f"unknown condition {e.when!r}")
        if e.group not in groups:
            raise doc.error(loc + ("group",), f"unknown group {e.group!r}")
        for m in _PLACEHOLDER.finditer(e.path):
            if m.group(1) not in places:
                raise doc.error(loc + ("path",), f"unknown placeholder {{{m.group(1)}}}")
        if e.path.startswith("/") or ".." in e.path.split("/"):
            raise doc.error(loc + ("path",), "paths are relative to the archive root")
        try:
            re.compile(path_regex(e.path, places))
        except re.error as exc:
            raise doc.error(loc + ("path",), f"bad pattern: {exc}") from None
        _check_range(tl, doc, loc, e.since, e.until)


def findings_spec(model: Any, name: str) -> FindingsSpec:
    return model.findings[name][0]
