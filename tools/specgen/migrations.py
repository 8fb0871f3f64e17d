"""Migration specs: the operations between consecutive versions of a versioned records spec
and its archive layout, in both directions.

A ``migration`` spec (spec/migrations/v<N>_v<N+1>.yaml) lists operations on the metadata
(by record and key path) and on the archive members (by layout entry). Each operation is a
pair: ``up`` turns version N into N+1, ``down`` turns N+1 back into N, and each side is the
other's inverse. Losses, derivations and refusals are named and documented in the file.

:func:`check_migrations` checks them against the projections of the records spec and the
layout (every path, key and entry exists in the versions it connects, every pair is a
valid inverse, every key or entry that differs between the two versions is handled in both
directions, every loss and derivation is declared, documented and used); :func:`emit_data`
and :func:`emit_pages` write the data the engine (mlf_spec.migrate) reads and the changelog
pages.
"""

from __future__ import annotations

from pprint import pformat
from typing import Any

from .code import Code, header
from .ir import MIGRATION_LAYOUT_OPS, MIGRATION_METADATA_OPS, MigrationItem, MigrationOp, MigrationSpec
from .versioned import Projection, TypeNode, layout_versions, project, records_timeline
from .yamlload import SpecDocument

DIRECTIONS = ("up", "down")
# op -> the ops its inverse may be
METADATA_INVERSES: dict[str, tuple[str, ...]] = {
    "rename": ("rename",), "move": ("move",), "wrap": ("unwrap",), "unwrap": ("wrap",), "add": ("drop",),
    "derive": ("drop",), "drop": ("add", "derive", "leave_out"), "leave_out": ("drop",),
    "convert": ("convert", "keep"), "keep": ("convert",),
}
LAYOUT_INVERSES: dict[str, tuple[str, ...]] = {
    "move": ("move", "keep", "leave_out"), "keep": ("move",), "add": ("drop",), "drop": ("add", "leave_out"),
    "leave_out": ("drop", "move"),
}
WHOLESALE = ("add", "derive", "convert", "leave_out")


def parts(path: str | None) -> list[str]:
    """A dotted key path as its segments."""
    return path.split(".") if path else []


class _Step:
    """A migration spec with the projections and layouts of the two versions it connects."""

    def __init__(self, model: Any, spec: MigrationSpec, doc: SpecDocument) -> None:
        self.model, self.spec, self.doc = model, spec, doc
        projections = {p.version: p for p in project(model, spec.records)}
        self.proj = {"up": (projections[spec.source], projections[spec.target]),
                     "down": (projections[spec.target], projections[spec.source])}
        versions = layout_versions(model, spec.layout)
        self.entries = {e.id: e for e in model.layouts[spec.layout][0].entries}
        self.layout = {"up": (versions[spec.source], versions[spec.target]),
                       "down": (versions[spec.target], versions[spec.source])}
        self.losses = {x.name: x for x in spec.losses}
        self.derivations = {x.name: x for x in spec.derivations}
        self.refusals = {x.name: x for x in spec.refusals}

    def error(self, loc: tuple, message: str) -> Exception:
        return self.doc.error(loc, message)


# --------------------------------------------------------------------------- paths


def resolve(proj: Projection, record: str, path: list[str]) -> tuple[list[tuple[str, str]], TypeNode] | str:
    """The (record, field) pairs a key path crosses inside ``record`` in one version, and the
    type at its end; an error message when a key does not exist there."""
    if record not in proj.records:
        return f"record {record!r} does not exist in version {proj.version}"
    t = TypeNode("ref", record)
    chain: list[tuple[str, str]] = []
    for i, part in enumerate(path):
        where = ".".join(path[:i]) or record
        if part == "*":
            if t.kind not in ("list", "map", "intmap"):
                return f"`*` after {where} needs a list or map, version {proj.version} has {t.text()}"
            t = t.args[0]
            continue
        if t.kind != "ref" or t.name not in proj.records:
            return f"{where} is {t.text()} in version {proj.version}, not a record with key {part!r}"
        field = next((f for f in proj.records[t.name].fields if f.name == part), None)
        if field is None:
            return f"{t.name} has no key {part!r} in version {proj.version}"
        chain.append((t.name, part))
        t = field.type
    return chain, t


def _field(proj: Projection, record: str, name: str) -> Any:
    rec = proj.records.get(record)
    return next((f for f in rec.fields if f.name == name), None) if rec else None


def _resolved(proj: Projection, record: str, path: list[str]) -> tuple[list[tuple[str, str]], TypeNode]:
    """:func:`resolve` of a key path the step's checks found in ``proj`` (ValueError otherwise)."""
    got = resolve(proj, record, path)
    if isinstance(got, str):
        raise ValueError(got)
    return got


def _named(value: str | None) -> str:
    """A name the operation's kind requires (an entry, a target, a root's style), which the
    step's checks have found by the time it is read (ValueError otherwise)."""
    if value is None:
        raise ValueError("an operation lacks a name its kind requires")
    return value


def _roots(proj: Projection) -> dict[str, str]:
    return {r.style: r.record for r in proj.roots}


# --------------------------------------------------------------------------- checks


def check_migrations(model: Any) -> None:
    """Check every migration spec (raises SpecError with file and line)."""
    by_records: dict[str, list[tuple[MigrationSpec, SpecDocument]]] = {}
    for spec, doc in model.migrations.values():
        if spec.records not in model.records or model.records[spec.records][0].timeline is None:
            raise doc.error(("records",), f"{spec.records!r} is not a records spec with a timeline")
        if spec.layout not in model.layouts or model.layouts[spec.layout][0].metadata != spec.records:
            raise doc.error(("layout",), f"{spec.layout!r} is not a layout spec of {spec.records!r}")
        tl = records_timeline(model, model.records[spec.records][0])
        versions = tl.versions()
        if spec.source not in versions or spec.target not in versions:
            raise doc.error(("from",), f"versions {spec.source} and {spec.target} must both be in {versions}")
        if versions.index(spec.target) != versions.index(spec.source) + 1:
            raise doc.error(("to",), f"a migration connects consecutive versions; after {spec.source} comes "
                            f"{versions[versions.index(spec.source) + 1] if spec.source != versions[-1] else 'none'}")
        if spec.name != f"v{spec.source}_v{spec.target}":
            raise doc.error(("name",), f"the name of the {spec.source} -> {spec.target} step is "
                            f"'v{spec.source}_v{spec.target}'")
        by_records.setdefault(spec.records, []).append((spec, doc))
        _check_step(_Step(model, spec, doc))
    for records, steps in by_records.items():
        versions = records_timeline(model, model.records[records][0]).versions()
        have = {s.source for s, _ in steps}
        missing = [f"v{a}_v{b}" for a, b in zip(versions, versions[1:]) if a not in have]
        if missing:
            spec, doc = steps[0]
            raise doc.error((), f"the migrations of {records!r} must cover every step; missing: {', '.join(missing)}")


def _check_step(step: _Step) -> None:
    spec = step.spec
    for kind, items in (("losses", spec.losses), ("derivations", spec.derivations), ("refusals", spec.refusals),
                        ("metadata", spec.metadata), ("files", spec.layout_ops)):
        seen: set[str] = set()
        for i, x in enumerate(items):
            name = getattr(x, "name", None) or getattr(x, "id")  # noqa: B009
            if name in seen:
                raise step.error((kind, i), f"{name!r} appears twice in {kind}")
            seen.add(name)
    for i, loss in enumerate(spec.losses):
        if loss.up is None and loss.down is None:
            raise step.error(("losses", i), "a loss says what the upgrade (`up`) or the downgrade (`down`) loses")
    for i, d in enumerate(spec.derivations):
        if d.deriver is not None and not d.deriver.isidentifier():
            raise step.error(("derivations", i, "deriver"), "a deriver is a Python identifier")
    used_losses: set[tuple[str, str]] = set()
    used_derivations: set[str] = set()
    used_refusals: set[str] = set()
    for i, item in enumerate(spec.metadata):
        _check_metadata_item(step, i, item, used_losses, used_derivations, used_refusals)
    for i, item in enumerate(spec.layout_ops):
        _check_layout_item(step, i, item, used_losses, used_refusals)
    for d in DIRECTIONS:
        seen_entries: dict[str, int] = {}
        for i, item in enumerate(spec.layout_ops):
            op = getattr(item, d)
            if op.op in ("move", "drop", "keep"):
                if op.entry in seen_entries:
                    raise step.error(("files", i, d, "entry"), f"entry {op.entry!r} is already handled by "
                                     f"{spec.layout_ops[seen_entries[op.entry]].id} in this direction")
                seen_entries[_named(op.entry)] = i
    _check_styles(step, used_refusals)
    for i, loss in enumerate(spec.losses):
        for d in DIRECTIONS:
            if getattr(loss, d) is not None and (loss.name, d) not in used_losses:
                raise step.error(("losses", i, d), f"no {d} operation incurs loss {loss.name!r}")
    for i, d in enumerate(spec.derivations):
        if d.name not in used_derivations:
            raise step.error(("derivations", i), f"no operation uses derivation {d.name!r}")
    for i, r in enumerate(spec.refusals):
        if r.name not in used_refusals:
            raise step.error(("refusals", i), f"no operation or style raises refusal {r.name!r}")
    _check_metadata_complete(step)
    _check_layout_complete(step)


def _check_refs(step: _Step, loc: tuple, op: MigrationOp, d: str, used_losses: set, used_refusals: set) -> None:
    for j, name in enumerate(op.losses):
        loss = step.losses.get(name)
        if loss is None:
            raise step.error(loc + ("losses", j), f"loss {name!r} is not declared in `losses`")
        if getattr(loss, d) is None:
            raise step.error(loc + ("losses", j), f"loss {name!r} does not say what the {d} direction loses")
        used_losses.add((name, d))
    for j, name in enumerate(op.refusals):
        r = step.refusals.get(name)
        if r is None or r.direction != d:
            raise step.error(loc + ("refusals", j), f"refusal {name!r} is not declared for direction {d}")
        used_refusals.add(name)


_META_KEYS = {
    "rename": {"path", "to"}, "move": {"path", "to", "omit_empty", "default"}, "wrap": {"into", "key"},
    "unwrap": {"source"}, "add": {"path", "value"}, "derive": {"path", "derivation"},
    "convert": {"path", "converter", "table", "derivation"}, "drop": {"path"}, "keep": {"path"},
    "leave_out": {"path"},
}
_LAYOUT_KEYS = {"move": {"entry", "to", "set", "only"}, "add": {"entry"}, "drop": {"entry"}, "keep": {"entry"},
                "leave_out": {"entry"}}
_ALWAYS = {"op", "losses", "refusals"}
_DEFAULTS: dict[str, Any] = {"omit_empty": False, "set": {}, "only": {}, "losses": [], "refusals": []}


def _extra_keys(op: MigrationOp, allowed: set[str]) -> list[str]:
    out = []
    for name in MigrationOp.model_fields:
        value = getattr(op, name)
        if name not in allowed | _ALWAYS and value is not None and value != _DEFAULTS.get(name, None):
            out.append(MigrationOp.model_fields[name].alias or name)
    return out


def _check_metadata_item(step: _Step, i: int, item: MigrationItem, used_losses: set, used_derivations: set,
                         used_refusals: set) -> None:
    loc = ("metadata", i)
    if not item.records:
        raise step.error(loc, "a metadata operation names the `records` whose instances it acts on")
    for d in DIRECTIONS:
        op: MigrationOp = getattr(item, d)
        oloc = loc + (d,)
        if op.op not in MIGRATION_METADATA_OPS:
            raise step.error(oloc + ("op",), f"unknown metadata operation {op.op!r}; known: {list(MIGRATION_METADATA_OPS)}")
        extra = _extra_keys(op, _META_KEYS[op.op])
        if extra:
            raise step.error(oloc, f"{op.op} takes no {', '.join(extra)}")
        _check_refs(step, oloc, op, d, used_losses, used_refusals)
        src, dst = step.proj[d]
        for record in item.records:
            _check_metadata_op(step, oloc, op, record, src, dst, d, used_derivations)
        if op.op == "drop":
            other: MigrationOp = getattr(item, "down" if d == "up" else "up")
            lossless = other.op == "add" and other.value is None
            if not op.losses and not lossless:
                raise step.error(oloc, "a drop that the other direction cannot undo exactly declares its `losses`")
        if op.op == "convert" and getattr(item, "down" if d == "up" else "up").op == "keep" and not op.losses:
            raise step.error(oloc, "a one-way convert (the inverse keeps the value) declares its `losses`")
        if op.op in ("unwrap",) and not op.refusals:
            raise step.error(oloc, "unwrap needs exactly one record: declare the refusal for several")
    up, down = item.up, item.down
    if down.op not in METADATA_INVERSES[up.op] or up.op not in METADATA_INVERSES[down.op]:
        raise step.error(loc + ("down", "op"), f"{down.op} is not an inverse of {up.op} "
                         f"(an inverse of {up.op} is {' or '.join(METADATA_INVERSES[up.op])})")
    same = {"rename": (up.path, up.to) == (down.to, down.path), "move": (up.path, up.to) == (down.to, down.path),
            "wrap": up.into == down.source, "unwrap": up.source == down.into}
    if up.op in same and not same[up.op]:
        raise step.error(loc + ("down",), f"the inverse of {up.op} goes back the same way")
    if up.op not in same and up.path != down.path:
        raise step.error(loc + ("down", "path"), f"{up.op} and its inverse {down.op} act on the same path")


def _check_metadata_op(step: _Step, loc: tuple, op: MigrationOp, record: str, src: Projection, dst: Projection,
                       d: str, used_derivations: set) -> None:
    def need(proj: Projection, path: str | None, key: str) -> tuple[list[tuple[str, str]], TypeNode]:
        if not path:
            raise step.error(loc, f"{op.op} needs `{key}`")
        r = resolve(proj, record, parts(path))
        if isinstance(r, str):
            raise step.error(loc + (key,), r)
        return r

    def absent(proj: Projection, path: str | None, key: str) -> None:
        if not isinstance(resolve(proj, record, parts(path)), str):
            raise step.error(loc + (key,), f"{path} exists in version {proj.version} already; nothing to {op.op}")

    kind = op.op
    if kind in ("rename", "move") and "*" in parts(op.path) + parts(op.to):
        raise step.error(loc, f"{kind} takes paths without `*`")
    if kind in ("rename", "move"):
        _, t1 = need(src, op.path, "path")
        _, t2 = need(dst, op.to, "to")
        if t1.text() != t2.text():
            raise step.error(loc + ("to",), f"{kind} keeps the value: {op.path} is {t1.text()} in version "
                             f"{src.version} but {op.to} is {t2.text()} in version {dst.version}; use convert")
        if kind == "rename":
            if len(parts(op.path)) != 1 or len(parts(op.to)) != 1:
                raise step.error(loc, "rename changes one key of the record; use move for paths")
            absent(dst, op.path, "path")
            absent(src, op.to, "to")
    elif kind == "wrap":
        if _roots(src).get(_style_of(src, record)) != record:
            raise step.error(loc, f"wrap acts on a root record; {record} is not one in version {src.version}")
        root = _roots(dst).get(_style_of(src, record))
        f = _field(dst, root, op.into or "") if root else None
        if f is None or f.type.kind != "map" or f.type.args[0].text() != record or f.spec.keyed_by != op.key:
            raise step.error(loc + ("into",), f"the version {dst.version} root needs a map of {record} keyed by "
                             f"{op.key!r} in {op.into!r}")
        if _field(src, record, op.key or "") is None:
            raise step.error(loc + ("key",), f"{record} has no key {op.key!r}")
    elif kind == "unwrap":
        root = _roots(src).get(_style_of(dst, record))
        f = _field(src, root, op.source or "") if root else None
        if f is None or f.type.kind != "map" or f.type.args[0].text() != record:
            raise step.error(loc + ("from",), f"the version {src.version} root has no map of {record} in {op.source!r}")
        if _roots(dst).get(_style_of(dst, record)) != record:
            raise step.error(loc, f"unwrap gives a root record; {record} is not one in version {dst.version}")
    elif kind in ("add", "derive", "leave_out"):
        chain, _ = need(dst, op.path, "path")
        absent(src, op.path, "path")
        field = _field(dst, *chain[-1])
        if kind == "add" and op.value is None and field.const is None:
            raise step.error(loc, f"add needs a `value`: {op.path} has no const in version {dst.version}")
        if kind in ("derive", "leave_out") and field.required:
            raise step.error(loc + ("path",), f"{kind} may leave {op.path} out, but version {dst.version} requires it")
        if kind == "derive":
            dv = step.derivations.get(op.derivation or "")
            if dv is None or dv.deriver is None:
                raise step.error(loc + ("derivation",), "derive names a derivation (with a deriver) declared in the file")
            used_derivations.add(dv.name)
    elif kind == "drop":
        need(src, op.path, "path")
        absent(dst, op.path, "path")
    elif kind in ("convert", "keep"):
        need(src, op.path, "path")
        need(dst, op.path, "path")
        if kind == "convert":
            if not op.converter or not op.converter.isidentifier():
                raise step.error(loc + ("converter",), "convert names a converter (a Python identifier)")
            if op.table is not None and op.table not in step.model.tables:
                raise step.error(loc + ("table",), f"unknown table {op.table!r}")
            if op.derivation is not None:
                if op.derivation not in step.derivations:
                    raise step.error(loc + ("derivation",), f"derivation {op.derivation!r} is not declared")
                used_derivations.add(op.derivation)
    if kind == "move" and op.default is not None and not _is_default_for(op.default):
        raise step.error(loc + ("default",), "a move default is an empty list or object")


def _is_default_for(value: Any) -> bool:
    return value == [] or value == {}


def _style_of(proj: Projection, record: str) -> str | None:
    for style, root in _roots(proj).items():
        if root == record:
            return style
    for r in proj.roots:  # a record nested in a root (the version 7 modules)
        for f in proj.records[r.record].fields:
            if record in f.type.refs():
                return r.style
    return None


def _check_layout_item(step: _Step, i: int, item: MigrationItem, used_losses: set, used_refusals: set) -> None:
    loc = ("files", i)
    if item.records:
        raise step.error(loc + ("records",), "layout operations act on entries, not records")
    for d in DIRECTIONS:
        op: MigrationOp = getattr(item, d)
        oloc = loc + (d,)
        if op.op not in MIGRATION_LAYOUT_OPS:
            raise step.error(oloc + ("op",), f"unknown layout operation {op.op!r}; known: {list(MIGRATION_LAYOUT_OPS)}")
        extra = _extra_keys(op, _LAYOUT_KEYS[op.op])
        if extra:
            raise step.error(oloc, f"{op.op} takes no {', '.join(extra)}")
        _check_refs(step, oloc, op, d, used_losses, used_refusals)
        src, dst = step.layout[d]
        in_src = {e for ids in src.values() for e in ids}
        in_dst = {e for ids in dst.values() for e in ids}
        if op.entry not in step.entries:
            raise step.error(oloc + ("entry",), f"unknown layout entry {op.entry!r}")
        e = step.entries[op.entry]
        v_src, v_dst = (step.spec.source, step.spec.target) if d == "up" else (step.spec.target, step.spec.source)
        if op.op in ("move", "drop", "keep") and op.entry not in in_src:
            raise step.error(oloc + ("entry",), f"entry {op.entry!r} is not in the layout of version {v_src}")
        if op.op in ("add", "leave_out") and op.entry in in_src:
            raise step.error(oloc + ("entry",), f"entry {op.entry!r} is in version {v_src} already")
        if op.op in ("add", "leave_out", "keep") and op.entry not in in_dst:
            raise step.error(oloc + ("entry",), f"entry {op.entry!r} is not in the layout of version {v_dst}")
        if op.op == "drop" and op.entry in in_dst:
            raise step.error(oloc + ("entry",), f"entry {op.entry!r} is in version {v_dst} too; nothing to drop")
        if op.op == "drop" and e.kind != "directory" and not op.losses:
            raise step.error(oloc, "dropping files is a loss: declare `losses`")
        if op.op == "add" and (e.kind != "directory" or "{" in e.path):
            raise step.error(oloc + ("entry",), "add creates a directory without placeholders")
        if op.op == "move":
            _check_layout_move(step, oloc, op, in_dst, v_dst)
    up, down = item.up, item.down
    if down.op not in LAYOUT_INVERSES[up.op] or up.op not in LAYOUT_INVERSES[down.op]:
        raise step.error(loc + ("down", "op"), f"{down.op} is not an inverse of {up.op}")
    pairs_ok = {
        ("move", "move"): up.entry == down.to and up.to == down.entry,
        ("move", "keep"): down.entry == up.to, ("keep", "move"): up.entry == down.to,
        ("move", "leave_out"): down.entry == up.to, ("leave_out", "move"): up.entry == down.entry,
    }
    if not pairs_ok.get((up.op, down.op), up.entry == down.entry):
        raise step.error(loc + ("down",), f"{down.op} does not undo {up.op} (entries differ)")


def _check_layout_move(step: _Step, loc: tuple, op: MigrationOp, in_dst: set, v_dst: int) -> None:
    if op.to not in step.entries or op.to not in in_dst:
        raise step.error(loc + ("to",), f"entry {op.to!r} is not in the layout of version {v_dst}")
    a, b = step.entries[_named(op.entry)], step.entries[_named(op.to)]
    if a.kind != b.kind:
        raise step.error(loc + ("to",), f"{a.id} holds {a.kind}, {b.id} holds {b.kind}")
    layout = step.model.layouts[step.spec.layout][0]
    roles = {p.name: p.role for p in layout.placeholders}
    pa, pb = _placeholders(a.path), _placeholders(b.path)
    for k in op.set:
        if k not in pb:
            raise step.error(loc + ("set", k), f"{b.id} has no placeholder {{{k}}}")
    for k in op.only:
        if k not in pa:
            raise step.error(loc + ("only", k), f"{a.id} has no placeholder {{{k}}}")
    for k in pb - pa:
        if k not in op.set and roles.get(k) not in ("module", "module_lower"):
            raise step.error(loc + ("to",), f"{{{k}}} of {b.id} has no value: give it in `set`")
    for k in pa - pb:
        if k not in op.only and roles.get(k) not in ("module", "module_lower"):
            raise step.error(loc, f"{{{k}}} of {a.id} would be lost: keep only one value with `only`")
    if op.only and not op.losses:
        raise step.error(loc + ("only",), "members that `only` leaves behind are dropped: declare `losses`")


def _placeholders(path: str) -> set[str]:
    import re

    return set(re.findall(r"\{([a-z_][a-z0-9_]*)\}", path))


def _check_styles(step: _Step, used_refusals: set) -> None:
    a, b = step.proj["up"]
    for d, src, dst in (("up", a, b), ("down", b, a)):
        for style in set(_roots(src)) - set(_roots(dst)):
            hit = [r for r in step.spec.refusals if r.direction == d and r.style == style]
            if not hit:
                raise step.error(("refusals",), f"{style} documents of version {src.version} have no form in "
                                 f"version {dst.version}: declare a refusal (direction {d}, style {style})")
            used_refusals.add(hit[0].name)
    for i, r in enumerate(step.spec.refusals):
        if r.style is not None:
            src = a if r.direction == "up" else b
            if r.style not in _roots(src):
                raise step.error(("refusals", i, "style"), f"version {src.version} has no {r.style} documents")


def _touched(step: _Step, d: str) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    """(record, field) pairs the operations of direction ``d`` handle, and those they write
    wholesale (a whole value of the target version: add, derive, convert, or left out)."""
    src, dst = step.proj[d]
    touched: set[tuple[str, str]] = set()
    wholesale: set[tuple[str, str]] = set()
    for item in step.spec.metadata:
        op: MigrationOp = getattr(item, d)
        for record in item.records:
            chains = []
            if op.op == "wrap":
                touched.add((_roots(dst)[_named(_style_of(src, record))], _named(op.into)))
                continue
            if op.op == "unwrap":
                touched.add((_roots(src)[_named(_style_of(dst, record))], _named(op.source)))
                continue
            for proj, path in ((src, op.path), (dst, op.path), (dst, op.to)):
                if path:
                    r = resolve(proj, record, parts(path))
                    if not isinstance(r, str):
                        chains.append(r[0])
            for chain in chains:
                touched.update(chain)
                if op.op in WHOLESALE and chain:
                    wholesale.add(chain[-1])
    return touched, wholesale


def _check_metadata_complete(step: _Step) -> None:
    for d in DIRECTIONS:
        src, dst = step.proj[d]
        touched, wholesale = _touched(step, d)
        styles = set(_roots(src)) & set(_roots(dst))
        if not styles:
            continue
        common = _reachable(src, [r for st, r in _roots(src).items() if st in styles])
        for rname in sorted(set(src.records) & set(dst.records) & common):
            fa = {f.name: f for f in src.records[rname].fields if f.spec.role != "version"}
            fb = {f.name: f for f in dst.records[rname].fields if f.spec.role != "version"}
            for name in sorted(set(fa) | set(fb)):
                ta = fa[name].type.text() if name in fa else None
                tb = fb[name].type.text() if name in fb else None
                if ta != tb and (rname, name) not in touched:
                    raise step.error(("metadata",), f"{rname}.{name} is {ta or 'absent'} in version {src.version} "
                                     f"and {tb or 'absent'} in version {dst.version}, but no {d} operation handles it")
        reach = _reachable(dst, [r for st, r in _roots(dst).items() if st in styles])
        new = [r for r in dst.records if r not in src.records and r in reach]
        produced: set[str] = set()
        changed = True
        while changed:
            changed = False
            for rname in new:
                if rname in produced:
                    continue
                refs = [(r, f.name) for r, rec in dst.records.items() for f in rec.fields if rname in f.type.refs()]
                if refs and all(ref in wholesale or ref[0] in produced for ref in refs):
                    produced.add(rname)
                    changed = True
        for rname in new:
            if rname in produced:
                continue
            for f in dst.records[rname].fields:
                if f.required and f.spec.role != "version" and (rname, f.name) not in touched:
                    raise step.error(("metadata",), f"version {dst.version} needs {rname}.{f.name}, which version "
                                     f"{src.version} does not have, but no {d} operation produces it")


def _reachable(proj: Projection, roots: list[str]) -> set[str]:
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        r = todo.pop()
        if r in seen or r not in proj.records:
            continue
        seen.add(r)
        todo += [ref for f in proj.records[r].fields for ref in f.type.refs()]
    return seen


def _check_layout_complete(step: _Step) -> None:
    for d in DIRECTIONS:
        src, dst = step.layout[d]
        mentioned_src: set[str] = set()
        mentioned_dst: set[str] = set()
        for item in step.spec.layout_ops:
            op: MigrationOp = getattr(item, d)
            if op.op in ("move", "drop", "keep"):
                mentioned_src.add(_named(op.entry))
            if op.op == "move":
                mentioned_dst.add(_named(op.to))
            if op.op in ("add", "leave_out", "keep"):
                mentioned_dst.add(_named(op.entry))
            other: MigrationOp = getattr(item, "down" if d == "up" else "up")
            if op.op == "keep" and other.op == "move":
                mentioned_dst.add(_named(other.entry))  # kept under the newer name, never produced
        for style in set(src) & set(dst):
            a, b = set(src[style]), set(dst[style])
            v_src = step.spec.source if d == "up" else step.spec.target
            v_dst = step.spec.target if d == "up" else step.spec.source
            for e in sorted(a - b):
                if e not in mentioned_src:
                    raise step.error(("files",), f"entry {e!r} ({style}) of version {v_src} is not in version "
                                     f"{v_dst}, but no {d} operation moves or drops it")
            for e in sorted(b - a):
                if e not in mentioned_dst:
                    raise step.error(("files",), f"entry {e!r} ({style}) of version {v_dst} is not in version "
                                     f"{v_src}, but no {d} operation produces it or says it is left out")


# --------------------------------------------------------------------------- data


def _op_data(op: MigrationOp) -> dict[str, Any]:
    out: dict[str, Any] = {"op": op.op}
    layout = op.entry is not None
    for name, f in MigrationOp.model_fields.items():
        value = getattr(op, name)
        if name == "op" or value is None or (name in _DEFAULTS and value == _DEFAULTS[name]):
            continue
        if name == "path" or (name == "to" and not layout):
            value = parts(value)
        out[f.alias or name] = value
    return out


def _with_const(model: Any, spec: MigrationSpec, item: MigrationItem, d: str) -> dict[str, Any]:
    """The operation's data; an ``add`` without a value gets the field's constant."""
    op: MigrationOp = getattr(item, d)
    out = _op_data(op)
    if op.op == "add" and op.value is None:
        target = spec.target if d == "up" else spec.source
        proj = next(p for p in project(model, spec.records) if p.version == target)
        chain, _ = _resolved(proj, item.records[0], parts(op.path))
        out["value"] = _field(proj, *chain[-1]).const
        out["constant"] = True
    return out


def _summarized(op: dict[str, Any]) -> dict[str, Any]:
    """The operation's data with its one-line description (``summary``: what plans print)."""
    return {**op, "summary": _describe(op).replace("`", "")}


def _text(s: str | None) -> str | None:
    return " ".join(s.split()) if s is not None else None


def step_data(model: Any, spec: MigrationSpec) -> dict[str, Any]:
    """One migration spec as plain data (what generated/<records>_migrations.py holds)."""
    return {
        "name": spec.name, "from": spec.source, "to": spec.target, "title": spec.title, "doc": _text(spec.doc),
        "losses": {x.name: {"doc": _text(x.doc), "up": _text(x.up), "down": _text(x.down)} for x in spec.losses},
        "derivations": {x.name: {"doc": _text(x.doc), "deriver": x.deriver} for x in spec.derivations},
        "refusals": {x.name: {"doc": _text(x.doc), "direction": x.direction, "style": x.style} for x in spec.refusals},
        "metadata": [{"id": x.id, "doc": _text(x.doc), "records": list(x.records),
                      "up": _summarized(_with_const(model, spec, x, "up")),
                      "down": _summarized(_with_const(model, spec, x, "down"))}
                     for x in spec.metadata],
        "files": [{"id": x.id, "doc": _text(x.doc), "up": _summarized(_op_data(x.up)),
                   "down": _summarized(_op_data(x.down))}
                  for x in spec.layout_ops],
    }


def _steps(model: Any, records: str) -> list[tuple[MigrationSpec, SpecDocument]]:
    return sorted(((s, d) for s, d in model.migrations.values() if s.records == records), key=lambda x: x[0].source)


def emit_data(model: Any, records: str) -> str:
    """Python source of ``<records>_migrations.py``."""
    steps = _steps(model, records)
    docs = [d for _, d in steps]
    c = Code()
    c.lines.append(header(model, docs).rstrip("\n"))
    c(f'"""Migrations of {records} between consecutive versions, as data for mlf_spec.migrate."""')
    c()
    c(f"RECORDS = {records!r}")
    c(f"LAYOUT = {steps[0][0].layout!r}")
    c("#: The operation kinds the spec language allows (the engine checks its table against them).")
    c(f"METADATA_OPS = {MIGRATION_METADATA_OPS!r}")
    c(f"LAYOUT_OPS = {MIGRATION_LAYOUT_OPS!r}")
    data = [step_data(model, s) for s, _ in steps]
    c("#: One step per pair of consecutive versions, oldest first: losses, derivations, refusals and the")
    c("#: operations (metadata by record and key path, files by layout entry), each with `up` and `down`.")
    c(f"STEPS = {pformat(data, width=110, sort_dicts=False)}")
    c("#: Every loss by its full name (step.loss).")
    losses = {f"{s['name']}.{n}": {"step": s["name"], **x} for s in data for n, x in s["losses"].items()}
    c(f"LOSSES = {pformat(losses, width=110, sort_dicts=False)}")
    names = sorted({op["converter"] for s in data for it in s["metadata"] for op in (it["up"], it["down"])
                    if "converter" in op})
    c(f"CONVERTERS = {names!r}")
    derivers = sorted({x["deriver"] for s in data for x in s["derivations"].values() if x["deriver"]})
    c(f"DERIVERS = {derivers!r}")
    return c.text()


# --------------------------------------------------------------------------- pages


def _describe(op: dict[str, Any] | MigrationOp, records: list[str] | None = None) -> str:
    """A one-line description of an operation (also used by the engine's plans)."""
    o = op if isinstance(op, dict) else _op_data(op)
    path = ".".join(o.get("path", []))
    kind = o["op"]
    if "entry" in o:
        if kind == "move":
            extra = "".join(f", {{{k}}} = {v}" for k, v in o.get("set", {}).items())
            only = "".join(f" (only {{{k}}} = {v})" for k, v in o.get("only", {}).items())
            return f"move `{o['entry']}` to `{o['to']}`{extra}{only}"
        return {"add": "add directory", "drop": "drop", "keep": "keep", "leave_out": "leave out"}[kind] + \
            f" `{o['entry']}`"
    if kind == "rename":
        return f"rename `{path}` to `{'.'.join(o['to'])}`"
    if kind == "move":
        return f"move `{path}` to `{'.'.join(o['to'])}`" + (" (left out when empty)" if o.get("omit_empty") else "") \
            + (f" (`{o['default']}` when absent)" if "default" in o else "")
    if kind == "wrap":
        return f"wrap into `{o['into']}.<{o['key']}>`"
    if kind == "unwrap":
        return f"unwrap the one value of `{o['from']}`"
    if kind == "add":
        return f"add `{path}`" + (f" = `{o['value']}`" if "value" in o else " (its constant)")
    if kind == "derive":
        return f"derive `{path}` ({o['derivation']})"
    if kind == "convert":
        return f"convert `{path}` with `{o['converter']}`" + (f" (table {o['table']})" if "table" in o else "")
    return {"drop": "drop", "keep": "keep", "leave_out": "leave out"}[kind] + f" `{path}`"


def emit_pages(model: Any, records: str) -> dict[str, str]:
    """The changelog page of every step (``docs/migrate_v<N>_v<N+1>.md``) and the overview
    (``docs/<records>_migrations.md``)."""
    files: dict[str, str] = {}
    steps = _steps(model, records)
    for spec, doc in steps:
        files[f"docs/migrate_{spec.name}.md"] = _step_page(model, spec, doc)
    rspec, rdoc = model.records[records]
    out = [f"<!-- {line.lstrip('# ')} -->" for line in header(model, [d for _, d in steps]).splitlines()]
    out += ["", f"# {rspec.title}: migrations between versions", "",
            "Generated from spec/migrations/. `mlf-spec upgrade` and `mlf-spec downgrade` (and "
            "`mlf_spec.migrate`) chain these steps. A loss is refused unless the caller accepts it by its "
            "name (`--accept-loss step.name`); derived values are marked in the result.", "",
            "| Step | Upgrade loses or invents | Downgrade loses or invents | Refused |", "|---|---|---|---|"]
    for spec, _ in steps:
        up = [f"`{spec.name}.{x.name}`" for x in spec.losses if x.up]
        down = [f"`{spec.name}.{x.name}`" for x in spec.losses if x.down]
        ref = [f"`{spec.name}.{x.name}` ({x.direction})" for x in spec.refusals]
        out.append(f"| [{spec.source} ↔ {spec.target}](migrate_{spec.name}.md) | {', '.join(up) or '—'} | "
                   f"{', '.join(down) or '—'} | {', '.join(ref) or '—'} |")
    files[f"docs/{records}_migrations.md"] = "\n".join(out) + "\n"
    return files


def _step_page(model: Any, spec: MigrationSpec, doc: SpecDocument) -> str:
    out = [f"<!-- {line.lstrip('# ')} -->" for line in header(model, [doc]).splitlines()]
    out += ["", f"# {spec.title}", "", _text(spec.doc) or "", ""]
    for d, a, b, word in (("up", spec.source, spec.target, "Upgrade"), ("down", spec.target, spec.source, "Downgrade")):
        out += [f"## {word}: version {a} → {b}", ""]
        refusals = [r for r in spec.refusals if r.direction == d]
        if refusals:
            out += ["Refused:", ""] + [f"- `{spec.name}.{r.name}`"
                                       + (f" (every {r.style} document)" if r.style else "")
                                       + f": {_text(r.doc)}" for r in refusals] + [""]
        items = spec.metadata if d == "up" else list(reversed(spec.metadata))
        if items:
            out += ["### Metadata", "", "| Operation | Records | Losses | Meaning |", "|---|---|---|---|"]
            for it in items:
                op = getattr(it, d)
                out.append(f"| {_describe(op)} | {', '.join(it.records)} | "
                           f"{', '.join(f'`{spec.name}.{x}`' for x in op.losses) or '—'} | {_text(it.doc)} |")
            out.append("")
        items = spec.layout_ops if d == "up" else list(reversed(spec.layout_ops))
        if items:
            out += ["### Files", "", "| Operation | Losses | Meaning |", "|---|---|---|"]
            for it in items:
                op = getattr(it, d)
                out.append(f"| {_describe(op)} | {', '.join(f'`{spec.name}.{x}`' for x in op.losses) or '—'} | "
                           f"{_text(it.doc)} |")
            out.append("")
        if not spec.metadata and not spec.layout_ops:
            out += ["Only `version` changes.", ""]
        losses = [x for x in spec.losses if getattr(x, d)]
        out += ["### Losses", ""]
        out += [f"- `{spec.name}.{x.name}`: {_text(x.doc)} {_text(getattr(x, d))}" for x in losses] or ["None."]
        out.append("")
        derived = [x for x in spec.derivations if any(
            getattr(it, d).derivation == x.name for it in spec.metadata)]
        if derived:
            out += ["### Derived values", ""]
            out += [f"- `{spec.name}.{x.name}`: {_text(x.doc)}" for x in derived]
            out.append("")
    return "\n".join(out).rstrip() + "\n"


__all__ = ["check_migrations", "emit_data", "emit_pages", "parts", "resolve", "step_data"]
