"""The metadata half of a migration step: where records sit in a document, the state being
migrated, one small function per metadata operation kind, and a step's run with its loss check
(each operation's inverse applied to a copy)."""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from mlf_spec._internal.lean_dataclass import dataclass, field
from mlf_spec._records import json_path
from mlf_spec.errors import MigrationError
from mlf_spec.generated import mlf_ir as _ir

from . import archive as _archive
from . import metadata as _md
from . import migrate_ir as _mir
from .migrate_ir import Direction, FileOp, MetadataItem, MetadataOp, StepSpec
from .migrate_plans import Derived, Loss, Operation
from .migrate_registry import CONVERTERS, DERIVERS, Context, ModuleFiles, Note

# ----------------------------------------------------------------- document paths


def version_key(version: int, style: str) -> str | None:
    """The key of the root record of ``style`` in ``version`` that holds the version number."""
    root = next(r for r in _ir.PROJECTIONS[version]["roots"] if r["style"] == style)
    rec = _ir.PROJECTIONS[version]["records"][root["record"]]
    return next((f["name"] for f in rec["fields"] if f.get("role") == "version"), None)


@functools.lru_cache(maxsize=256)
def _record_paths(version: int, style: str, record: str) -> list[list[Any]]:
    """Path patterns (``*`` = every element) from the root to every instance of ``record``."""
    proj = _ir.PROJECTIONS[version]
    root = next(r for r in proj["roots"] if r["style"] == style)["record"]
    out: list[list[Any]] = []
    todo: list[tuple[str, list[Any], frozenset]] = [(root, [], frozenset())]
    while todo:
        rname, path, seen = todo.pop(0)
        if rname == record:
            out.append(path)
            continue
        if rname in seen:
            continue
        for f in proj["records"][rname]["fields"]:
            for sub, nested in f["nested"]:
                todo.append((nested, path + [f["name"], *sub], seen | {rname}))
    return out


def _expand(value: Any, pattern: list[Any], prefix: tuple = ()) -> Iterator[tuple[tuple, Any]]:
    """(concrete path, value) of every existing location matching ``pattern``."""
    if not pattern:
        yield prefix, value
        return
    head, rest = pattern[0], pattern[1:]
    if head == "*":
        if isinstance(value, list):
            for i, v in enumerate(value):
                yield from _expand(v, rest, prefix + (i,))
        elif isinstance(value, dict):
            for k, v in value.items():
                yield from _expand(v, rest, prefix + (k,))
    elif isinstance(value, dict) and head in value:
        yield from _expand(value[head], rest, prefix + (head,))


def _get(root: Any, path: tuple) -> Any:
    for p in path:
        root = root[p]
    return root


def _module_of(doc: dict[str, Any], path: tuple) -> str | None:
    """The module a location belongs to: the ``modules`` key, else the document's model_name."""
    if len(path) >= 2 and path[0] == "modules" and isinstance(doc.get("modules"), dict):
        return str(path[1])
    name = doc.get("model_name") if isinstance(doc, dict) else None
    return name if isinstance(name, str) else None


def diff(a: Any, b: Any, path: tuple = ()) -> list[tuple]:
    """Paths where two JSON values differ (objects compared key by key, lists by length and
    element)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[tuple] = []
        for k in list(a) + [k for k in b if k not in a]:
            if k not in a or k not in b:
                out.append(path + (k,))
            else:
                out += diff(a[k], b[k], path + (k,))
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [p for i, (x, y) in enumerate(zip(a, b)) for p in diff(x, y, path + (i,))]
    return [] if a == b and type(a) is type(b) else [path]


def _overlaps(p: tuple, q: tuple) -> bool:
    n = min(len(p), len(q))
    return p[:n] == q[:n]


# ----------------------------------------------------------------- the state of a migration


class State:
    """The document (without its version key) and archive being migrated."""

    def __init__(self, doc: dict[str, Any], style: str, archive: _archive.Archive | None,
                 files: dict[str, ModuleFiles] | None) -> None:
        self.doc = doc
        self.style = style
        self.archive = archive
        self.files = files
        self.shape = 0  # the version whose shape the document has (changes with wrap/unwrap)

    def clone(self) -> State:
        s = State(copy.deepcopy(self.doc), self.style, None, self.files)
        s.shape = self.shape
        return s


@dataclass
class Events:
    """The losses and derived values found so far."""

    losses: list[Loss] = field(default_factory=list)
    derived: list[Derived] = field(default_factory=list)


def loss_at(step: StepSpec, d: Direction, name: str, kind: str, part: str, module: str | None, where: str,
          path: tuple, detail: str) -> Loss:
    """The loss ``name`` of ``step`` (going ``d``) at one place, with the spec's text for it."""
    return Loss(f"{step.name}.{name}", kind, step.name, d, part, module, where, path, detail,
                step.losses[name].text(d))


# ----------------------------------------------------------------- metadata operations
#
# One small function per operation kind, in two tables checked against the spec language's
# list of kinds at import: document operations act on the whole document (and change its
# shape), record operations on every instance of the item's records.


@dataclass(frozen=True)
class _Run:
    """One operation being applied: the step and direction it belongs to, the item, the
    operation (the item's own direction or, for the loss check, its inverse), the state,
    where losses and derivations go (None: a trial run) and the target's ``sort_keys``."""

    step: StepSpec
    d: Direction
    item: MetadataItem
    op: MetadataOp
    state: State
    events: Events | None
    sort_keys: bool
    target: int


#: (location in the document, module, path inside the record) of each place an operation acted on.
_Acted = list[tuple[tuple, str | None, tuple]]


def _roots_the_item(r: _Run, shape: int) -> bool:
    """Whether the root record of the document's style (in version ``shape``) is one of the
    item's records (wrap and unwrap act only then)."""
    roots = {x["style"]: x["record"] for x in _ir.PROJECTIONS[shape]["roots"]}
    return roots.get(r.state.style) in r.item.records


def _nothing(r: _Run) -> _Acted:
    """keep, leave_out: declared for the changelog, nothing to do."""
    return []


def _wrap(r: _Run) -> _Acted:
    """The document becomes the one value of ``into``, keyed by its ``key``."""
    if not _roots_the_item(r, r.state.shape):
        return []
    assert r.op.into is not None and r.op.key is not None
    doc = r.state.doc
    r.state.doc = {r.op.into: {doc[r.op.key]: doc}}
    r.state.shape = r.target
    return [((), doc.get(r.op.key), ())]


def _unwrap(r: _Run) -> _Acted:
    """The one value of ``source`` becomes the document (refused for none or several)."""
    if not _roots_the_item(r, r.target):
        return []
    assert r.op.source is not None
    mods = r.state.doc.get(r.op.source)
    if not isinstance(mods, dict) or len(mods) != 1:
        raise Refused(r.step, r.op.refusals[0], f"the document has {len(mods or {})} modules "
                       f"({', '.join(map(repr, mods or {}))})")
    (module, inner), = mods.items()
    r.state.doc = inner
    r.state.shape = r.target
    return [((r.op.source, module), module, ())]


DOCUMENT_OPS: dict[str, Callable[[_Run], _Acted]] = {
    "keep": _nothing, "leave_out": _nothing, "wrap": _wrap, "unwrap": _unwrap}


def _rename(r: _Run, inst: dict[str, Any], module: str | None, ipath: tuple) -> list[tuple]:
    """One key gets another name (both present: an error)."""
    (a,), (b,) = r.op.path, r.op.to
    if a not in inst:
        return []
    if b in inst:
        raise MigrationError(f"cannot rename {a!r} to {b!r}: both keys are present", field=json_path(ipath))
    inst[b] = inst.pop(a)
    return [(a,)]


def _move(r: _Run, inst: dict[str, Any], module: str | None, ipath: tuple) -> list[tuple]:
    """A value moves to another key path (``default`` when absent, left out when empty with
    ``omit_empty``); a target that holds a value is an error."""
    op = r.op
    src, dst = op.path, op.to
    try:
        value = _get(inst, src)
        present = True
    except (KeyError, IndexError, TypeError):
        present = False
    if not present:
        if not op.has_default:
            return []
        value = copy.deepcopy(op.default)
    else:
        del _get(inst, src[:-1])[src[-1]]
    parent = inst
    for p in dst[:-1]:
        if not isinstance(parent.get(p), dict):
            if p in parent and parent[p] not in ([], {}):
                raise MigrationError(f"cannot move into {p!r}: it holds a value", field=json_path(ipath + dst))
            parent[p] = {}
        parent = parent[p]
    if op.omit_empty and value in ([], {}):
        return [src]
    if dst[-1] in parent and parent[dst[-1]] != {}:
        raise MigrationError(f"cannot move to {'.'.join(map(str, dst))}: it holds a value",
                             field=json_path(ipath + dst))
    parent[dst[-1]] = value
    return [src]


def _add(r: _Run, inst: dict[str, Any], module: str | None, ipath: tuple) -> list[tuple]:
    """A key with a stated value is written where absent (each write of a declared loss is
    ``invented``); present with another value: an error."""
    path, op = r.op.path, r.op
    out = []
    for ppath, parent in _parents(inst, path, create=True):
        key = path[-1]
        if key in parent:
            if parent[key] != op.value:
                raise MigrationError(f"{key!r} is present already with another value",
                                     field=json_path(ipath + ppath + (key,)))
            continue
        parent[key] = copy.deepcopy(op.value)
        out.append(ppath + (key,))
        if r.events is not None:
            for name in op.losses:
                where = ipath + ppath + (key,)
                r.events.losses.append(loss_at(r.step, r.d, name, "invented", "metadata", module, json_path(where),
                                             ppath + (key,), f"written as {json.dumps(op.value)}"))
    return out


def _derive(r: _Run, inst: dict[str, Any], module: str | None, ipath: tuple) -> list[tuple]:
    """A key is rebuilt by the derivation's deriver where absent (and where it gives a value)."""
    path = r.op.path
    assert r.op.derivation is not None
    decl = r.step.derivations[r.op.derivation]
    assert decl.deriver is not None
    fn = DERIVERS[decl.deriver]
    out = []
    for ppath, parent in _parents(inst, path, create=False):
        key = path[-1]
        if key in parent:
            continue
        ctx = Context(module, inst, (r.state.files or {}).get(module or ""), None, r.sort_keys)
        value = fn(ctx, parent)
        if value is None:
            continue
        parent[key] = value
        out.append(ppath + (key,))
        if r.events is not None:
            r.events.derived.append(Derived(f"{r.step.name}.{decl.name}", r.step.name, module,
                                            json_path(ipath + ppath + (key,)), ppath + (key,), value,
                                            f"derived by {decl.deriver}", decl.doc))
    return out


def _drop(r: _Run, inst: dict[str, Any], module: str | None, ipath: tuple) -> list[tuple]:
    """A key is removed."""
    path = r.op.path
    out = []
    for ppath, parent in _parents(inst, path, create=False):
        if path[-1] in parent:
            del parent[path[-1]]
            out.append(ppath + (path[-1],))
    return out


def _convert(r: _Run, inst: dict[str, Any], module: str | None, ipath: tuple) -> list[tuple]:
    """A value is replaced by what the named converter makes of it (with the rows of the
    named table); the converter's notes become losses and derived values."""
    path, op = r.op.path, r.op
    assert op.converter is not None
    fn = CONVERTERS[op.converter]
    table = None
    if op.table is not None:
        from importlib import import_module

        table = import_module(f"mlf_spec.generated.{op.table}_table").ROWS
    out = []
    for ppath, parent in _parents(inst, path, create=False):
        key = path[-1]
        if key not in parent:
            continue
        ctx = Context(module, inst, (r.state.files or {}).get(module or ""), table, r.sort_keys)
        new, notes = fn(parent[key], ctx)
        changed = new != parent[key] or type(new) is not type(parent[key])
        parent[key] = new
        if changed:
            out.append(ppath + (key,))
        if r.events is not None:
            _notes(r, r.events, notes, module, ipath + ppath + (key,), ppath + (key,))
    return out


def _notes(r: _Run, events: Events, notes: list[Note], module: str | None, where: tuple, rel: tuple) -> None:
    """A converter's notes as derived values and losses (each must be declared for it)."""
    op = r.op
    for n in notes:
        if n.kind == "derived":
            name = op.derivation
            if name is None:
                raise MigrationError(f"converter {op.converter} derived a value but the spec names no "
                                     "derivation for it")
            events.derived.append(Derived(f"{r.step.name}.{name}", r.step.name, module, json_path(where), rel,
                                          n.value, n.detail, r.step.derivations[name].doc))
            continue
        if n.name not in op.losses:
            raise MigrationError(f"converter {op.converter} reports loss {n.name!r}, which "
                                 f"{r.step.name} does not declare for it")
        events.losses.append(loss_at(r.step, r.d, n.name, n.kind, "metadata", module, json_path(where), rel, n.detail))


RECORD_OPS: dict[str, Callable[[_Run, dict[str, Any], str | None, tuple], list[tuple]]] = {
    "rename": _rename, "move": _move, "add": _add, "derive": _derive, "drop": _drop, "convert": _convert}


def check_tables(document: Iterable[str], record: Iterable[str], declared: Iterable[str]) -> None:
    """Every metadata operation kind the spec language declares has exactly one function
    (raised at import, so that a kind added to the spec cannot be silently skipped)."""
    document, record, declared = set(document), set(record), set(declared)
    problems = []
    if document & record:
        problems.append(f"in both tables: {sorted(document & record)}")
    if declared - document - record:
        problems.append(f"declared by the spec, without a function: {sorted(declared - document - record)}")
    if (document | record) - declared:
        problems.append(f"not declared by the spec: {sorted((document | record) - declared)}")
    if problems:
        raise RuntimeError("mlf_spec.migrate's operation table does not match the spec's metadata operations: "
                           + "; ".join(problems))


check_tables(DOCUMENT_OPS, RECORD_OPS, _mir.METADATA_OPS)


def _run(r: _Run) -> _Acted:
    """Apply ``r.op``; returns (location, module, path in record) of every place it acted on,
    in the document as it was before."""
    whole = DOCUMENT_OPS.get(r.op.op)
    if whole is not None:
        return whole(r)
    fn = RECORD_OPS[r.op.op]
    state = r.state
    acted: _Acted = []
    for record in r.item.records:
        style_roots = {x["style"]: x["record"] for x in _ir.PROJECTIONS[state.shape]["roots"]}
        if state.style not in style_roots:
            continue
        for pattern in _record_paths(state.shape, state.style, record):
            for ipath, inst in list(_expand(state.doc, pattern)):
                if not isinstance(inst, dict):
                    continue
                module = _module_of(state.doc, ipath)
                for rel in fn(r, inst, module, ipath):
                    acted.append((ipath + rel, module, rel))
    return acted


def _parents(inst: dict[str, Any], path: Sequence[Any], *, create: bool) -> list[tuple[tuple, dict[str, Any]]]:
    """(path, object) of every object that holds (or would hold) the last key of ``path``."""
    if len(path) == 1:
        return [((), inst)]
    head = list(path[:-1])
    if create and "*" not in head:
        parent: Any = inst
        for p in head:
            if p not in parent:
                parent[p] = {}
            parent = parent[p]
            if not isinstance(parent, dict):
                return []
        return [(tuple(head), parent)]
    return [(p, v) for p, v in _expand(inst, head) if isinstance(v, dict)]


class Refused(Exception):
    """A refusal the spec declares (``name`` of ``step``) met by this source."""

    def __init__(self, step: StepSpec, name: str, detail: str) -> None:
        self.step, self.name, self.detail = step, name, detail
        super().__init__(detail)


def metadata_step(state: State, step: StepSpec, d: Direction, source: int, target: int, events: Events,
                   operations: list[Operation]) -> None:
    """Carry out the metadata operations of ``step`` going ``d`` on ``state``, appending each
    operation to ``operations`` and the losses found by the inverse check to ``events``."""
    items = step.metadata if d == "up" else tuple(reversed(step.metadata))
    sort_keys = bool(_md.json_options(target, state.style)["sort_keys"])
    back_sort_keys = bool(_md.json_options(source, state.style)["sort_keys"])
    for item in items:
        op, inverse = item.way(d)
        before = copy.deepcopy(state.doc)
        shape_before = state.shape
        first = len(events.losses)
        acted = _run(_Run(step, d, item, op, state, events, sort_keys, target))
        operations.append(Operation(item.id, "metadata", op.op, describe(op), item.doc, list(item.records),
                                    [f"{step.name}.{x}" for x in op.losses], len(acted)))
        if not acted:
            continue
        # The inverse on a copy must give back what was there; where it does not, this
        # operation lost something (reported unless a converter already named it).
        trial = state.clone()
        back: Direction = "down" if d == "up" else "up"
        _run(_Run(step, back, item, inverse, trial, None, back_sort_keys, source))
        trial.shape = shape_before
        lost = diff(before, trial.doc)
        if not lost:
            continue
        reported = events.losses[first:]
        for where, module, rel in acted:
            hits = [p for p in lost if _overlaps(p, where)]
            if not hits:
                continue
            wj = json_path(where)
            if any(x.where == wj or x.where.startswith(wj) for x in reported):
                continue
            declared = op.losses
            if len(declared) != 1:
                raise MigrationError(f"{step.name}.{item.id} ({d}) cannot be undone at {wj} and the spec "
                                     f"declares {'no loss' if not declared else 'several losses'} for it: a spec bug")
            was = _get_or(before, where)
            events.losses.append(loss_at(step, d, declared[0], "dropped", "metadata", module, wj, rel,
                                       f"{_short(was)} is not restored by the inverse ({describe(inverse)})"))


def _get_or(doc: Any, path: tuple) -> Any:
    try:
        return _get(doc, path)
    except (KeyError, IndexError, TypeError):
        return None


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 80 else text[:77] + "..."


def describe(op: MetadataOp | FileOp) -> str:
    """The operation's one-line summary."""
    return op.summary  # written by the generator from the spec, as in the changelog pages
