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
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

from mlf_spec._records import load_json
from mlf_spec.errors import LossRefusedError, MigrationError, MlfError, ValidationError
from mlf_spec.generated import mlf_migrations as _spec

from . import archive as _archive
from . import check as _check
from . import metadata as _md
from . import migrate_ir as _mir
from .migrate_ir import Direction, StepSpec
from .migrate_layout import layout_step
from .migrate_metadata import Events, Refused, State, metadata_step, version_key
from .migrate_plans import Derived, Loss, Operation, Plan, Result, Step, group_losses, write_result
from .migrate_registry import ModuleFiles

#: Every step as the spec's data (generated ``mlf_migrations.STEPS``) by (older, newer)
#: version; the engine runs the typed form, :data:`mlf_spec.mlf.migrate_ir.STEPS`.
STEPS: dict[tuple[int, int], dict[str, Any]] = {(s["from"], s["to"]): s for s in _spec.STEPS}
#: Every loss a step may incur, by full name (``v5_v6.target_device_type``), with its docs.
LOSSES: dict[str, dict[str, Any]] = dict(_spec.LOSSES)
Source = str | os.PathLike | bytes | bytearray | dict | _archive.Archive | _md.Metadata | IO[bytes]



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
    state = State(json.loads(md.dumps()), md.style, arc.copy() if arc is not None else None,
                   _module_files(arc) if arc is not None else None)
    state.shape = md.version
    meta = arc.member(_archive.METADATA) if arc is not None else None
    mtime = meta.mtime if meta is not None else 0.0  # _source made sure an archive has one
    events = Events()
    current = md
    for spec, d, a, b in _path_of(chain):
        for rname, r in spec.refusals.items():
            if r.direction == d and r.style == md.style:
                raise _refusal(spec, rname, f"the document is {md.style}")
        s = Step(spec.name, a, b, d)
        key_a = version_key(a, md.style)
        if key_a is not None:
            state.doc.pop(key_a, None)
        state.shape = a
        try:
            metadata_step(state, spec, d, a, b, events, s.operations)
        except Refused as exc:
            raise _refusal(exc.step, exc.name, exc.detail) from None
        key_b = version_key(b, md.style)
        if key_b is not None:
            state.doc[key_b] = b
        try:
            nxt = _md.from_document(state.doc, version=b, style=md.style, file=p.source, plain=True)
        except ValidationError as exc:
            raise MigrationError(f"step {spec.name} ({d}) made an invalid version {b} document: {exc}; "
                                 "a spec or engine bug") from None
        if state.archive is not None:
            layout_step(state, spec, d, a, b, list(current.modules), events, s.operations, mtime)
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
        write_result(result, Path(output), overwrite)
    return result




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
