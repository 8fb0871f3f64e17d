"""Migrations of MLF archives and ``metadata.json`` documents between any two versions.

    >>> from mlf_spec import migrate
    >>> with migrate.plan("old.tar", 7) as p:           # an archive, a directory, a document, JSON text
    ...     print(p)                                    # steps, operations, losses, derived values
    ...     p.loss_names()                              # ['v5_v6.target_device_type'] (if any)
    ...     result = migrate.apply(p, accept_loss=p.loss_names(), output="new.tar")

Every step between two consecutive versions is declared in spec/migrations/ (through the
generated ``mlf_migrations``): operations on the metadata (by record and key path) and on the
archive members (by layout entry), each with its inverse, and the losses, derivations and
refusals of each direction. This engine only carries them out; converters and derivers that
need code are in :mod:`mlf_spec.migrate_registry`, keyed by the names the spec uses.

How losses are found: after every operation the engine applies its inverse (the other
direction of the same declared operation) to a copy of the result. Where that does not give
back what was there, the operation has lost something and reports the loss it declares, at
that place (a converter may name which of its declared losses). An operation that writes a
placeholder for something the source never had (``add`` with a loss) reports it as
``invented``. So a plan lists exactly the losses that happen to *this* source: a version 5
archive written by TVM goes to version 6 and back without any, a hand-made one with a
target TVM could not have keyed does not. Derived values (rebuilt from the archive, such as
main's inputs from the graph JSON) are listed as such.

:func:`plan` does all of it in memory (nothing is written, the input is only read) and
refuses what is impossible (:class:`~mlf_spec.errors.MigrationError`: a version 7 document
with several modules has no version 6 form, an operator document none before version 4).
:func:`apply` refuses a plan with losses the caller did not accept by name
(:class:`~mlf_spec.errors.LossRefusedError`), validates the result against the model of the
target version and, for archives, checks it (:func:`mlf_spec.check.check_archive`: no error
finding, nothing the source did not have), and only then writes it, atomically.
"""

from __future__ import annotations

import copy
import functools
import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from mlf_spec._internal.lean_dataclass import dataclass, field
from mlf_spec._io import atomic_write_bytes
from mlf_spec._records import json_path, load_json
from mlf_spec.errors import LossRefusedError, MigrationError, MlfError, ValidationError
from mlf_spec.generated import mlf_ir as _ir
from mlf_spec.generated import mlf_migrations as _spec

from . import archive as _archive
from . import check as _check
from . import layout as _layout
from . import metadata as _md
from . import migrate_ir as _mir
from .migrate_ir import Direction, FileOp, MetadataItem, MetadataOp, StepSpec
from .migrate_registry import CONVERTERS, DERIVERS, Context, ModuleFiles, Note

#: Every step as the spec's data (generated ``mlf_migrations.STEPS``) by (older, newer)
#: version; the engine runs the typed form, :data:`mlf_spec.mlf.migrate_ir.STEPS`.
STEPS: dict[tuple[int, int], dict[str, Any]] = {(s["from"], s["to"]): s for s in _spec.STEPS}
#: Every loss a step may incur, by full name (``v5_v6.target_device_type``), with its docs.
LOSSES: dict[str, dict[str, Any]] = dict(_spec.LOSSES)
Source = str | os.PathLike | bytes | bytearray | dict | _archive.Archive | _md.Metadata | IO[bytes]


# ----------------------------------------------------------------- plan objects


@dataclass(frozen=True)
class Loss:
    """A loss that happens to this source: ``name`` (``step.loss``, what ``accept_loss``
    takes), ``kind`` (``dropped``: the source holds it, the target cannot; ``invented``: the
    target needs it, the source never had it and a stated placeholder is written), the
    ``step`` and ``direction``, ``part`` (``metadata`` or ``files``), the ``module``, where
    (``where``: a JSON path in the document as the step had it, or a member path; ``path``:
    the key path inside the module's record), a ``detail`` and the spec's ``doc``."""

    name: str
    kind: str
    step: str
    direction: str
    part: str
    module: str | None
    where: str
    path: tuple[Any, ...]
    detail: str
    doc: str

    def to_dict(self) -> dict[str, Any]:
        """This one place as JSON data (``mlf-spec upgrade --json`` groups places by loss:
        :func:`group_losses`)."""
        return {"name": self.name, "kind": self.kind, "step": self.step, "direction": self.direction,
                "part": self.part, "module": self.module, "where": self.where, "detail": self.detail,
                "doc": self.doc}


def group_losses(losses: Iterable[Loss]) -> list[dict[str, Any]]:
    """Each loss once, in the order it first occurs, with every place it occurs at
    (``where``: a list of ``{module, path, detail}``): the JSON form of
    ``mlf-spec upgrade --json`` (record ``loss`` of spec/records/mlf_migrate_output.yaml)."""
    out: dict[str, dict[str, Any]] = {}
    for x in losses:
        g = out.get(x.name)
        if g is None:
            g = out[x.name] = {"name": x.name, "kind": x.kind, "step": x.step, "direction": x.direction,
                               "part": x.part, "doc": x.doc, "where": []}
        g["where"].append({"module": x.module, "path": x.where, "detail": x.detail})
    return list(out.values())


@dataclass(frozen=True)
class Derived:
    """A value the migration rebuilt from other data (marked as derived in the result):
    the derivation ``name`` (``step.derivation``), the ``module``, ``where`` it is (a JSON
    path in the document after the step; ``path``: the key path inside the module's
    record), its ``value`` and the spec's ``doc``."""

    name: str
    step: str
    module: str | None
    where: str
    path: tuple[Any, ...]
    value: Any
    detail: str
    doc: str

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {"name": self.name, "step": self.step, "module": self.module, "where": self.where,
                "value": self.value, "detail": self.detail, "doc": self.doc}


@dataclass
class Operation:
    """One declared operation as a step applies it: ``id``, ``part`` (metadata or files),
    ``op`` (its kind), a ``description``, the ``records`` it acts on, the losses it may
    incur, and ``changes``: how many places (keys, members) it changed in this source."""

    id: str
    part: str
    op: str
    description: str
    doc: str
    records: list[str] = field(default_factory=list)
    losses: list[str] = field(default_factory=list)
    changes: int = 0

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {"id": self.id, "part": self.part, "op": self.op, "description": self.description,
                "records": list(self.records), "losses": list(self.losses), "changes": self.changes}


@dataclass
class Step:
    """One step between consecutive versions: ``name`` of the spec file (``v5_v6``),
    ``source`` and ``target`` versions, ``direction`` (up or down) and its operations in the
    order they apply."""

    name: str
    source: int
    target: int
    direction: str
    operations: list[Operation] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {"name": self.name, "from_version": self.source, "to_version": self.target,
                "direction": self.direction, "operations": [o.to_dict() for o in self.operations]}


class Plan:
    """What migrating one source to a version does: ``steps`` (with their operations and
    how much each changed), ``losses`` and ``derived`` values, computed in memory. Print it,
    :meth:`to_dict` it, then :func:`apply` it. Close it (or use ``with``) when it opened the
    source itself."""

    def __init__(self, *, source: str, kind: str, style: str, source_version: int, target_version: int) -> None:
        self.source = source
        self.kind = kind
        self.style = style
        self.source_version = source_version
        self.target_version = target_version
        self.steps: list[Step] = []
        self.losses: list[Loss] = []
        self.derived: list[Derived] = []
        self.source_findings: list[_check.Finding] = []
        self.metadata: _md.Metadata | None = None
        self.archive: _archive.Archive | None = None
        self.report: _check.Report | None = None
        self._source_archive: _archive.Archive | None = None
        self._owned: _archive.Archive | None = None
        self._input_path: Path | None = None

    @property
    def direction(self) -> str:
        """``upgrade``, ``downgrade`` or ``none`` (same version)."""
        if self.target_version == self.source_version:
            return "none"
        return "upgrade" if self.target_version > self.source_version else "downgrade"

    def new_findings(self) -> list[_check.Finding]:
        """Findings of checking the migrated archive that the source did not have (only
        warnings: a result with an error finding is never produced), e.g. ``codegen.none``
        when a downgrade dropped a module's only (C++) sources."""
        had = {f.code for f in self.source_findings}
        return [f for f in (self.report.findings if self.report else []) if f.code not in had]

    def loss_names(self) -> list[str]:
        """The names of the losses, each once, in the order they occur."""
        return list(dict.fromkeys(x.name for x in self.losses))

    def unaccepted(self, accept_loss: Iterable[str] = ()) -> list[str]:
        """The loss names not in ``accept_loss``."""
        ok = set(accept_loss)
        return [n for n in self.loss_names() if n not in ok]

    @property
    def document(self) -> dict[str, Any]:
        """The migrated metadata document as plain JSON data."""
        assert self.metadata is not None
        return json.loads(self.metadata.dumps())

    def to_dict(self) -> dict[str, Any]:
        """The plan as JSON data (the ``plan`` part of ``mlf-spec upgrade --json``)."""
        return {"input": self.source, "kind": self.kind, "style": self.style, "from_version": self.source_version,
                "to_version": self.target_version, "direction": self.direction,
                "steps": [s.to_dict() for s in self.steps], "losses": group_losses(self.losses),
                "derived": [x.to_dict() for x in self.derived],
                "source_findings": [f.to_dict() for f in self.source_findings],
                "result_findings": [f.to_dict() for f in self.report.findings] if self.report else []}

    def __str__(self) -> str:
        out = [f"{self.source}: MLF version {self.source_version}, {self.style} {self.kind} -> version "
               f"{self.target_version} ({self.direction}, {len(self.steps)} step(s))"]
        for f in self.source_findings:
            out.append(f"  note: the source has a {f.severity} finding {f.code}: {f.message}")
        for s in self.steps:
            word = "upgrade" if s.direction == "up" else "downgrade"
            out.append(f"  step {s.source} -> {s.target} ({word}, spec/migrations/{s.name}.yaml):")
            idle = 0
            for o in s.operations:
                if not o.changes:
                    idle += 1
                    continue
                on = f" [{', '.join(o.records)}]" if o.records else ""
                unit = "member" if o.part == "files" else "place"
                out.append(f"    {o.part:<8} {o.description}{on}: {o.changes} {unit}{'s' if o.changes != 1 else ''}")
            if idle:
                out.append(f"    ({idle} declared operation(s) with nothing to do here)")
            if not s.operations:
                out.append("    only the version changes")
        if self.derived:
            out.append("derived values (rebuilt from the archive, marked as derived):")
            for d in self.derived:
                out.append(f"  {d.name} at {d.where}: {json.dumps(d.value, sort_keys=True)}")
        for f in self.new_findings():
            out.append(f"note: the result will have a {f.severity} finding {f.code}: "
                       f"{(f.member or '') + ': ' if f.member else ''}{f.message}")
        if self.losses:
            out.append("losses (refused unless accepted by name):")
            for name in self.loss_names():
                hits = [x for x in self.losses if x.name == name]
                out.append(f"  {name} ({hits[0].kind}): {hits[0].doc}")
                for x in hits[:8]:
                    out.append(f"    at {x.where}: {x.detail}")
                if len(hits) > 8:
                    out.append(f"    ... and {len(hits) - 8} more")
        else:
            out.append("no losses")
        return "\n".join(out)

    def close(self) -> None:
        """Release the source archive if the plan opened it."""
        if self._owned is not None:
            self._owned.close()
            self._owned = None

    def __enter__(self) -> Plan:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"<Plan {self.kind} v{self.source_version} -> v{self.target_version} {self.style}, "
                f"{len(self.steps)} steps, losses={self.loss_names()}>")


@dataclass
class Result:
    """An applied plan: the migrated ``metadata`` (and ``archive`` for archives), the
    ``derived`` values and the ``losses`` accepted, the ``report`` of checking the result
    (archives), and the ``output`` path if it was written."""

    plan: Plan
    metadata: _md.Metadata
    archive: _archive.Archive | None
    derived: list[Derived]
    losses: list[Loss]
    report: _check.Report | None
    output: str | None = None

    @property
    def version(self) -> int:
        """The version migrated to."""
        return self.metadata.version

    @property
    def document(self) -> dict[str, Any]:
        """The migrated metadata document as plain JSON data."""
        return json.loads(self.metadata.dumps())

    def to_bytes(self) -> bytes:
        """The migrated archive (tar) or metadata.json bytes."""
        return self.archive.to_bytes() if self.archive is not None else self.metadata.dumps()

    def write(self, path: str | os.PathLike, *, overwrite: bool = False) -> None:
        """Write the result to ``path`` atomically (a temporary file renamed into place);
        an existing file is replaced only with ``overwrite``."""
        _write(self, Path(path), overwrite)


# ----------------------------------------------------------------- loading sources


def _load(source: Source) -> tuple[str, dict[str, Any] | None, _archive.Archive | None, bool, Path | None]:
    """(name, document, archive, owned, input path): a bare document or an archive."""
    if isinstance(source, _archive.Archive):
        return source.file, None, source, False, Path(source.file) if os.path.exists(source.file) else None
    if isinstance(source, _md.Metadata):
        return source.file or "<metadata>", json.loads(source.dumps()), None, False, None
    if isinstance(source, dict):
        return "<document>", copy.deepcopy(source), None, False, None
    if isinstance(source, str) and source.lstrip().startswith("{"):
        return "<json>", load_json(source, "<json>", "metadata.json"), None, False, None
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        if data.lstrip()[:1] == b"{":
            return "<json>", load_json(data, "<json>", "metadata.json"), None, False, None
        return "<bytes>", None, _archive.open(data), True, None
    if isinstance(source, (str, os.PathLike)):
        p = Path(source)
        name = os.fspath(source)
        if p.is_file():
            try:
                with open(p, "rb") as f:
                    head = f.read(512)
            except OSError as exc:
                raise MlfError(f"cannot read: {exc.strerror}", file=name) from None
            if head.lstrip()[:1] == b"{":
                data = p.read_bytes()
                return name, load_json(data, name, "metadata.json"), None, False, p
        # never mapped: a source truncated meanwhile is an MlfError, not SIGBUS
        return name, None, _archive.open(p, mapped=False), True, p
    if hasattr(source, "read"):
        return getattr(source, "name", "<stream>"), None, _archive.open(source, mapped=False), True, None
    raise TypeError(f"cannot migrate a {type(source).__name__}")


# ----------------------------------------------------------------- document paths


def _version_key(version: int, style: str) -> str | None:
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


def _diff(a: Any, b: Any, path: tuple = ()) -> list[tuple]:
    """Paths where two JSON values differ (objects compared key by key, lists by length and
    element)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[tuple] = []
        for k in list(a) + [k for k in b if k not in a]:
            if k not in a or k not in b:
                out.append(path + (k,))
            else:
                out += _diff(a[k], b[k], path + (k,))
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [p for i, (x, y) in enumerate(zip(a, b)) for p in _diff(x, y, path + (i,))]
    return [] if a == b and type(a) is type(b) else [path]


def _overlaps(p: tuple, q: tuple) -> bool:
    n = min(len(p), len(q))
    return p[:n] == q[:n]


# ----------------------------------------------------------------- the state of a migration


class _State:
    """The document (without its version key) and archive being migrated."""

    def __init__(self, doc: dict[str, Any], style: str, archive: _archive.Archive | None,
                 files: dict[str, ModuleFiles] | None) -> None:
        self.doc = doc
        self.style = style
        self.archive = archive
        self.files = files
        self.shape = 0  # the version whose shape the document has (changes with wrap/unwrap)

    def clone(self) -> _State:
        s = _State(copy.deepcopy(self.doc), self.style, None, self.files)
        s.shape = self.shape
        return s


@dataclass
class _Events:
    losses: list[Loss] = field(default_factory=list)
    derived: list[Derived] = field(default_factory=list)


def _loss(step: StepSpec, d: Direction, name: str, kind: str, part: str, module: str | None, where: str,
          path: tuple, detail: str) -> Loss:
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
    state: _State
    events: _Events | None
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
        raise _Refused(r.step, r.op.refusals[0], f"the document has {len(mods or {})} modules "
                       f"({', '.join(map(repr, mods or {}))})")
    (module, inner), = mods.items()
    r.state.doc = inner
    r.state.shape = r.target
    return [((r.op.source, module), module, ())]


_DOCUMENT_OPS: dict[str, Callable[[_Run], _Acted]] = {
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
                r.events.losses.append(_loss(r.step, r.d, name, "invented", "metadata", module, json_path(where),
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


def _notes(r: _Run, events: _Events, notes: list[Note], module: str | None, where: tuple, rel: tuple) -> None:
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
        events.losses.append(_loss(r.step, r.d, n.name, n.kind, "metadata", module, json_path(where), rel, n.detail))


_RECORD_OPS: dict[str, Callable[[_Run, dict[str, Any], str | None, tuple], list[tuple]]] = {
    "rename": _rename, "move": _move, "add": _add, "derive": _derive, "drop": _drop, "convert": _convert}


def _check_tables(document: Iterable[str], record: Iterable[str], declared: Iterable[str]) -> None:
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


_check_tables(_DOCUMENT_OPS, _RECORD_OPS, _mir.METADATA_OPS)


def _run(r: _Run) -> _Acted:
    """Apply ``r.op``; returns (location, module, path in record) of every place it acted on,
    in the document as it was before."""
    whole = _DOCUMENT_OPS.get(r.op.op)
    if whole is not None:
        return whole(r)
    fn = _RECORD_OPS[r.op.op]
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


class _Refused(Exception):
    def __init__(self, step: StepSpec, name: str, detail: str) -> None:
        self.step, self.name, self.detail = step, name, detail
        super().__init__(detail)


def _metadata_step(state: _State, step: StepSpec, d: Direction, source: int, target: int, events: _Events,
                   operations: list[Operation]) -> None:
    items = step.metadata if d == "up" else tuple(reversed(step.metadata))
    sort_keys = bool(_md.json_options(target, state.style)["sort_keys"])
    back_sort_keys = bool(_md.json_options(source, state.style)["sort_keys"])
    for item in items:
        op, inverse = item.way(d)
        before = copy.deepcopy(state.doc)
        shape_before = state.shape
        first = len(events.losses)
        acted = _run(_Run(step, d, item, op, state, events, sort_keys, target))
        operations.append(Operation(item.id, "metadata", op.op, _describe(op), item.doc, list(item.records),
                                    [f"{step.name}.{x}" for x in op.losses], len(acted)))
        if not acted:
            continue
        # The inverse on a copy must give back what was there; where it does not, this
        # operation lost something (reported unless a converter already named it).
        trial = state.clone()
        back: Direction = "down" if d == "up" else "up"
        _run(_Run(step, back, item, inverse, trial, None, back_sort_keys, source))
        trial.shape = shape_before
        lost = _diff(before, trial.doc)
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
            events.losses.append(_loss(step, d, declared[0], "dropped", "metadata", module, wj, rel,
                                       f"{_short(was)} is not restored by the inverse ({_describe(inverse)})"))


def _get_or(doc: Any, path: tuple) -> Any:
    try:
        return _get(doc, path)
    except (KeyError, IndexError, TypeError):
        return None


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 80 else text[:77] + "..."


def _describe(op: MetadataOp | FileOp) -> str:
    return op.summary  # written by the generator from the spec, as in the changelog pages


# ----------------------------------------------------------------- layout operations


def _entry_path(entry: dict[str, Any], values: dict[str, str], module: str | None, fixed: Mapping[str, str]) -> str:
    filled: dict[str, str] = {}
    for ph in entry["placeholders"]:
        role = _layout.ROLES.get(ph)
        if ph in fixed:
            filled[ph] = fixed[ph]
        elif ph in values:
            filled[ph] = values[ph]
        elif role == "module" and module is not None:
            filled[ph] = module
        elif role == "module_lower" and module is not None:
            filled[ph] = _layout.ascii_lower(module)
        else:
            raise MigrationError(f"no value for {{{ph}}} of layout entry {entry['id']}")
    return _layout.template(entry, **filled)


#: The layout operation kinds :func:`_layout_step` carries out: on existing members (by
#: entry), adding a directory, and declared only for the changelog (checked at import).
_MEMBER_OPS = frozenset({"move", "drop", "keep"})
_LAYOUT_OPS = _MEMBER_OPS | {"add", "leave_out"}
if _LAYOUT_OPS != set(_mir.LAYOUT_OPS):
    raise RuntimeError(f"mlf_spec.migrate carries out the layout operations {sorted(_LAYOUT_OPS)}, the spec "
                       f"declares {sorted(_mir.LAYOUT_OPS)}")


def _layout_step(state: _State, step: StepSpec, d: Direction, source: int, target: int, names: list[str],
                 events: _Events, operations: list[Operation], mtime: float) -> None:
    a = state.archive
    assert a is not None
    ops = [(it, *it.way(d)) for it in step.files]
    by_entry = {op.entry: (it, op, inv) for it, op, inv in ops if op.op in _MEMBER_OPS}
    counts: dict[str, int] = {it.id: 0 for it in step.files}
    moves: dict[str, str | None] = {}
    dropped: dict[tuple[str, str | None], list[str]] = {}
    for m in list(a.members):
        pl = _layout.classify(m.path, source, state.style, names)
        if pl is None or pl.unknown_module is not None:
            raise MigrationError(f"{m.name} is not a member of a version {source} {state.style} archive",
                                 file=a.file)
        hit = by_entry.get(pl.entry["id"])
        if hit is None:
            continue
        it, op, inv = hit
        if op.op == "keep":
            continue
        if op.op == "drop" or any(pl.values.get(k) != v for k, v in op.only.items()):
            moves[m.path] = None
            counts[it.id] += 1
            if not m.is_dir:
                dropped.setdefault((pl.kind, pl.module), []).extend(op.losses)
                for name in op.losses:
                    events.losses.append(_loss(step, d, name, "dropped", "files", pl.module, m.name, (),
                                               f"{m.size} bytes dropped"))
            continue
        assert op.to is not None
        new = _entry_path(_layout.ENTRIES[op.to], pl.values, pl.module, op.set)
        if new == m.path:
            continue
        moves[m.path] = new
        counts[it.id] += 1
        back = _inverse_path(inv, op, new, pl.module)
        if back != m.path:
            declared = op.losses
            if len(declared) != 1:
                raise MigrationError(f"{step.name}.{it.id} ({d}) cannot be undone for {m.name} and the spec "
                                     f"declares {'no loss' if not declared else 'several losses'} for it: a spec bug")
            events.losses.append(_loss(step, d, declared[0], "dropped", "files", pl.module, m.name, (),
                                       f"{m.name} becomes ./{new} (the inverse gives ./{back})"))
    a.relocate(moves)
    _renumber(a, target, state.style, names, dropped, step, d, events)
    for it, op, _inv in ops:
        if op.op == "add":
            path = _layout.ENTRIES[op.entry]["path"]
            if path not in a:
                a.add(path, None, mtime=mtime)
                counts[it.id] += 1
    for it, op, _inv in ops:
        operations.append(Operation(it.id, "files", op.op, _describe(op), it.doc, [],
                                    [f"{step.name}.{x}" for x in op.losses], counts[it.id]))
    a.reorder()


def _renumber(a: _archive.Archive, version: int, style: str, names: list[str],
              dropped: dict[tuple[str, str | None], list[str]], step: StepSpec, d: Direction,
              events: _Events) -> None:
    """Close the gaps that dropped members left in a counter sequence (``lib<n>``: one
    per module and content kind, 0, 1, ... as the writer numbered them), keeping the order;
    each renamed member is reported under the loss of the drop that made the gap."""
    groups: dict[tuple[str, str | None], list[tuple[int, str, _layout.Placement, str]]] = {}
    for m in a.members:
        pl = None if m.is_dir else _layout.classify(m.path, version, style, names)
        if pl is None:
            continue
        for ph, value in pl.values.items():
            if _layout.ROLES.get(ph) == "counter":
                groups.setdefault((pl.kind, pl.module), []).append((int(value), m.path, pl, ph))
    moves: dict[str, str | None] = {}
    for key, items in groups.items():
        items.sort(key=lambda x: x[0])
        if [n for n, *_ in items] == list(range(len(items))):
            continue
        losses = dropped.get(key)
        if not losses:
            raise MigrationError(f"{step.name} ({d}) left a gap in the {key[0]} counters of module {key[1]!r} "
                                 "without dropping anything: a spec or engine bug")
        for i, (n, path, pl, ph) in enumerate(items):
            if n != i:
                moves[path] = _layout.template(pl.entry, **{**pl.values, ph: str(i)})
                events.losses.append(_loss(step, d, losses[0], "dropped", "files", pl.module, "./" + path, (),
                                           f"renumbered ./{moves[path]} to close the gap the dropped members left"))
    if moves:
        a.relocate(moves)


def _inverse_path(inv: FileOp, op: FileOp, new: str, module: str | None) -> str | None:
    """Where the inverse operation puts a member that ``op`` moved to ``new``."""
    if inv.op == "keep":
        return new
    if inv.op != "move" or op.to is None or inv.to is None:
        return None
    entry = _layout.ENTRIES[op.to]
    import re

    m = re.match(entry["regex"], new)
    if m is None:
        return None
    values = {k: v for k, v in m.groupdict().items() if v is not None}
    return _entry_path(_layout.ENTRIES[inv.to], values, module, inv.set)


# ----------------------------------------------------------------- planning


def _module_files(a: _archive.Archive) -> dict[str, ModuleFiles]:
    out: dict[str, ModuleFiles] = {}
    tir = []
    for pl in a.placements().values():
        if pl is not None and pl.kind == "tir_text" and pl.values.get("device_type", "").isdigit():
            tir.append(int(pl.values["device_type"]))
    for name, mod in a.modules.items():
        files = ModuleFiles(tir_device_types=sorted(tir))
        try:
            files.graph = mod.graph
        except MlfError:
            files.graph = None
        try:
            lazy = mod.params
            files.params = [i.name for i in lazy.index] if lazy is not None else None
        except MlfError:
            files.params = None
        out[name] = files
    return out


def _path_of(steps: Iterable[tuple[int, int]]) -> list[tuple[StepSpec, Direction, int, int]]:
    out: list[tuple[StepSpec, Direction, int, int]] = []
    for a, b in steps:
        key = (min(a, b), max(a, b))
        if key not in _mir.STEPS:
            raise MigrationError(f"no migration between versions {a} and {b} is declared")
        out.append((_mir.STEPS[key], "up" if b > a else "down", a, b))
    return out


def plan(source: Source, to: int | None = None) -> Plan:
    """Plan migrating ``source`` (an MLF archive: a tar, a directory, bytes, a file object or
    an :class:`~mlf_spec.archive.Archive`; or a bare metadata document: a dict, JSON text, a
    path to a metadata.json, a :class:`~mlf_spec.metadata.Metadata`) to version ``to``
    (default: the latest). The whole migration is carried out in memory; nothing is
    written. Raises ValidationError when the source is not a valid document of the version
    it declares, MigrationError when an archive does not conform to it (its check has error
    findings) or when the migration is impossible (the error names the refusal)."""
    to = _md.LATEST if to is None else to
    if to not in _md.VERSIONS:
        raise MigrationError(f"no MLF metadata version {to!r}; known: {list(_md.VERSIONS)}")
    name, doc, arc, owned, input_path = _load(source)
    try:
        md, findings = _source(name, doc, arc)
        p = Plan(source=name, kind="archive" if arc is not None else "document", style=md.style,
                 source_version=md.version, target_version=to)
        p.source_findings = findings
        p._input_path = input_path
        p._owned = arc if owned else None
        p._source_archive = arc
        try:
            _build(p, md, arc, to)
        except MigrationError as exc:
            exc.of_source(md.version, md.style, p.kind)
            raise
        return p
    except BaseException:
        if owned and arc is not None:
            arc.close()
        raise


def _deviates(name: str, exc: ValidationError) -> MigrationError:
    """A document that is JSON but departs from its version's model: readable (inspect and
    check show it), but there is nothing declared to migrate it by, so it is refused."""
    issues = exc.issues
    where = f" at {issues[0].path}" if issues and issues[0].path else (f" at {exc.field}" if exc.field else "")
    err = MigrationError(f"the metadata departs from the model of its version{where}: {exc.message}; only "
                         "documents that fit their version are migrated (spec/migrations/ declares no repair for "
                         "this); `mlf-spec inspect` shows it and `mlf-spec check` lists every departure", file=name)
    return err


def _source(name: str, doc: dict[str, Any] | None,
            arc: _archive.Archive | None) -> tuple[_md.Metadata, list[_check.Finding]]:
    """The validated metadata of the source and (archives) the findings of checking it;
    a document that departs from its version's model (MigrationError, a refusal) or an
    archive with an error finding is refused. Text that is not JSON stays unreadable."""
    if arc is None:
        try:
            return _md.from_document(doc, file=name, plain=True), []
        except ValidationError as exc:
            if not isinstance(doc, dict):
                raise
            raise _deviates(name, exc) from None
    meta = arc.member(_archive.METADATA)
    if meta is None or meta.is_dir:
        raise MigrationError("the archive has no metadata.json: nothing says which version it is; `mlf-spec inspect` "
                             "shows its members", file=name)
    arc.metadata_document()  # not JSON: unreadable (ValidationError)
    try:
        md = arc.metadata
    except ValidationError as exc:
        if not isinstance(arc.metadata_document(), dict):
            raise
        raise _deviates(name, exc) from None
    if md.unknown:
        raise _deviates(name, ValidationError(f"unknown key(s) {', '.join(md.unknown)}", file=name,
                                              field=md.unknown[0]))
    report = _check.check_archive(arc)
    errors = [f for f in report.findings if f.severity == "error"]
    if errors:
        first = errors[0]
        raise MigrationError(f"the archive does not conform to version {md.version} ({len(errors)} error "
                             f"finding(s), first {first.code}: {first.member or ''} {first.path} "
                             f"{first.message}); run `mlf-spec check`: only conformant archives are "
                             "migrated", file=name)
    return md, report.findings


def _build(p: Plan, md: _md.Metadata, arc: _archive.Archive | None, to: int) -> None:
    """Carry out every step in memory, filling the plan."""
    step = 1 if to > md.version else -1
    chain = [(v, v + step) for v in range(md.version, to, step)]
    state = _State(json.loads(md.dumps()), md.style, arc.copy() if arc is not None else None,
                   _module_files(arc) if arc is not None else None)
    state.shape = md.version
    meta = arc.member(_archive.METADATA) if arc is not None else None
    mtime = meta.mtime if meta is not None else 0.0  # _source made sure an archive has one
    events = _Events()
    current = md
    for spec, d, a, b in _path_of(chain):
        for rname, r in spec.refusals.items():
            if r.direction == d and r.style == md.style:
                raise _refusal(spec, rname, f"the document is {md.style}")
        s = Step(spec.name, a, b, d)
        key_a = _version_key(a, md.style)
        if key_a is not None:
            state.doc.pop(key_a, None)
        state.shape = a
        try:
            _metadata_step(state, spec, d, a, b, events, s.operations)
        except _Refused as exc:
            raise _refusal(exc.step, exc.name, exc.detail) from None
        key_b = _version_key(b, md.style)
        if key_b is not None:
            state.doc[key_b] = b
        try:
            nxt = _md.from_document(state.doc, version=b, style=md.style, file=p.source, plain=True)
        except ValidationError as exc:
            raise MigrationError(f"step {spec.name} ({d}) made an invalid version {b} document: {exc}; "
                                 "a spec or engine bug") from None
        if state.archive is not None:
            _layout_step(state, spec, d, a, b, list(current.modules), events, s.operations, mtime)
        state.doc = json.loads(nxt.dumps())  # the document as the file will hold it
        current = nxt
        p.steps.append(s)
    p.losses, p.derived = events.losses, events.derived
    p.metadata = current
    if state.archive is not None:
        state.archive.set_metadata(current)
        state.archive.reorder()
        p.archive = state.archive
        p.report = _check.check_archive(state.archive)
        errors = [f for f in p.report.findings if f.severity == "error"]
        if errors:
            raise MigrationError(f"the migrated archive would not conform to version {to} ({errors[0].code}: "
                                 f"{errors[0].member or ''} {errors[0].path} {errors[0].message}): a spec or "
                                 "engine bug")


def _refusal(step: StepSpec, name: str, detail: str) -> MigrationError:
    return MigrationError(f"impossible: {step.name}.{name}: {detail}. {step.refusals[name].doc}",
                          refusal=f"{step.name}.{name}")


# ----------------------------------------------------------------- applying


def apply(p: Plan, accept_loss: Iterable[str] = (), *, output: str | os.PathLike | None = None,
          overwrite: bool = False) -> Result:
    """Carry out a plan: refuse it (LossRefusedError) unless every loss is named in
    ``accept_loss``, validate the result against the model of the target version and (for
    archives) check it, then, if ``output`` is given, write it atomically (an existing file
    only with ``overwrite``; never over the input). All or nothing: a failure leaves the
    output path as it was."""
    accept = list(accept_loss)
    check_loss_names(accept)
    missing = p.unaccepted(accept)
    if missing:
        lines = []
        for name in missing:
            x = next(x for x in p.losses if x.name == name)
            lines.append(f"{name} ({x.kind}, at {x.where}): {x.doc}")
        raise LossRefusedError(f"migrating to version {p.target_version} loses what is not accepted: "
                               + "; ".join(lines) + " -- accept each by name to proceed", losses=missing)
    assert p.metadata is not None
    md = _md.from_document(json.loads(p.metadata.dumps()), version=p.target_version, style=p.style,
                            plain=True)
    result = Result(p, md, p.archive, list(p.derived), list(p.losses), p.report)
    if output is not None:
        _write(result, Path(output), overwrite)
    return result


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def _write(result: Result, path: Path, overwrite: bool) -> None:
    src = result.plan._input_path
    if src is not None and (_same_file(src, path) or src.resolve() == path.resolve()):
        raise MigrationError("the output is the input; mlf-spec never modifies its input", file=os.fspath(path))
    if path.is_dir():
        raise MigrationError("the output is a directory; name a file", file=os.fspath(path))
    if src is not None and src.is_dir() and src.resolve() in path.resolve().parents:
        raise MigrationError("the output is inside the input directory; mlf-spec never modifies its input",
                             file=os.fspath(path))
    try:
        if result.archive is not None:
            result.archive.write(path, overwrite=overwrite)
        else:
            atomic_write_bytes(path, result.metadata.dumps(), overwrite=overwrite)
    except OSError as exc:
        raise MlfError(f"cannot write: {exc.strerror or exc}", file=os.fspath(path)) from None
    result.output = os.fspath(path)


def migrate(source: Source, to: int | None = None, *, accept_loss: Iterable[str] = (),
            output: str | os.PathLike | None = None, overwrite: bool = False) -> Result:
    """:func:`plan` then :func:`apply` (see both). The source archive stays open only while
    this runs, so write the result with ``output`` (or pass an opened Archive and keep it
    open while using the result)."""
    return _migrate(None, source, to, accept_loss, output, overwrite)


def _migrate(wanted: str | None, source: Source, to: int | None, accept_loss: Iterable[str],
             output: str | os.PathLike | None, overwrite: bool) -> Result:
    with plan(source, to) as p:
        if wanted is not None:
            check_direction(wanted, p.source_version, p.target_version)
        result = apply(p, accept_loss, output=output, overwrite=overwrite)
        if p._owned is not None and result.archive is not None and output is None:
            data = result.archive.to_bytes()
            result.archive = _archive.open(data)
        return result


def upgrade(source: Source, to: int | None = None, **kw: Any) -> Result:
    """:func:`migrate` to a later version (default: the latest); MigrationError (refusal
    ``direction``) for a source already above ``to``."""
    return _directed("upgrade", source, to, **kw)


def downgrade(source: Source, to: int, **kw: Any) -> Result:
    """:func:`migrate` to an earlier version; MigrationError (refusal ``direction``) for a
    source already below ``to``."""
    return _directed("downgrade", source, to, **kw)


def _directed(wanted: str, source: Source, to: int | None, *, accept_loss: Iterable[str] = (),
              output: str | os.PathLike | None = None, overwrite: bool = False) -> Result:
    return _migrate(wanted, source, to, accept_loss, output, overwrite)


def direction(source_version: int, to: int) -> str:
    """``upgrade`` (``to`` is a later version), ``downgrade`` (an earlier one) or ``none``."""
    return "none" if to == source_version else "upgrade" if to > source_version else "downgrade"


def check_direction(wanted: str, source_version: int, to: int) -> None:
    """Refuse (MigrationError, refusal ``direction``) a migration from ``source_version`` to
    ``to`` that goes the other way than ``wanted`` (``upgrade`` or ``downgrade``); staying
    at the same version goes neither way and passes."""
    if wanted not in ("upgrade", "downgrade"):
        raise ValueError(f"a direction is upgrade or downgrade, not {wanted!r}")
    if direction(source_version, to) not in (wanted, "none"):
        other = "downgrade" if wanted == "upgrade" else "upgrade"
        raise MigrationError(f"this is version {source_version}, already {'below' if wanted == 'downgrade' else 'above'}"
                             f" {to}; {wanted} to {to} goes the other way ({other} does that)", refusal="direction",
                             source_version=source_version)


def check_loss_names(names: Iterable[str]) -> None:
    """Refuse (MigrationError) a name that is no loss of any step (:func:`loss_names`)."""
    unknown = [n for n in names if n not in LOSSES]
    if unknown:
        raise MigrationError(f"no loss is called {unknown[0]!r}; losses are named step.loss, e.g. "
                             f"{', '.join(sorted(LOSSES)[:3])} (see generated/docs/mlf_migrations.md)")


def loss_names() -> list[str]:
    """Every loss any step may incur, by full name."""
    return sorted(LOSSES)


__all__ = ["LOSSES", "STEPS", "Derived", "Loss", "Operation", "Plan", "Result", "Step", "apply", "check_direction",
           "check_loss_names", "direction", "downgrade", "group_losses", "loss_names", "migrate", "plan", "upgrade"]
