"""The objects of a migration: the plan (its steps and operations, the losses and derived
values found) and the result of applying it, with writing a result out."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from mlf_spec._internal.lean_dataclass import dataclass, field
from mlf_spec._io import atomic_write_bytes
from mlf_spec.errors import MigrationError, MlfError

from . import archive as _archive
from . import check as _check
from . import metadata as _md

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
        write_result(self, Path(path), overwrite)

def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def write_result(result: Result, path: Path, overwrite: bool) -> None:
    """Write ``result`` to ``path`` atomically; never over (or into) the input."""
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
