"""The generator's model of spec/: the resolved structs and fields of the binary specs, and
:class:`Model`, everything under spec/ once loaded (:mod:`specgen.load` builds it; the checks in
:mod:`specgen.checks` and the emitters read it). Plain data and the questions asked of it: no
parsing, no checks, no output."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from .expr import Expr
from .ir import (
    SCALARS,
    BinarySpec,
    ErasSpec,
    FieldSpec,
    FindingsSpec,
    LayoutSpec,
    MigrationSpec,
    RecordsSpec,
    StructSpec,
    TableSpec,
    TimelineSpec,
    VerdictsSpec,
)
from .versions import vkey
from .yamlload import SpecDocument


@dataclass
class RField:
    """A resolved struct field."""

    spec: FieldSpec
    loc: tuple
    kind: str  # scalar | str | bytes | vec | map | struct | switch
    exprs: dict[str, Expr] = field(default_factory=dict)
    struct: RStruct | None = None  # the struct of a struct field
    elem: str | None = None  # vec element type name
    elem_struct: RStruct | None = None
    key: str | None = None
    value: str | None = None
    value_struct: RStruct | None = None
    switch_on: Expr | None = None

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def is_array(self) -> bool:
        return self.spec.count is not None

    @property
    def conditional(self) -> bool:
        return self.spec.when is not None or self.spec.since is not None or self.spec.until is not None

    @property
    def is_scalar(self) -> bool:
        """A scalar (or a counted array of scalars): its type is a scalar type and no switch picks it."""
        return self.switch_on is None and self.spec.type in SCALARS

    @property
    def scalar_size(self) -> int | None:
        """Bytes of one value of a scalar field (None for the other kinds)."""
        return SCALARS[self.spec.type][0] if self.is_scalar else None

    @property
    def inline_struct(self) -> RStruct | None:
        """The struct of a struct field whose struct is inline (fixed-size, read in one unpack)."""
        return self.struct if self.struct is not None and self.struct.inline else None


@dataclass
class RStruct:
    """A resolved struct of one binary spec."""

    spec: StructSpec
    owner: str
    loc: tuple
    fields: list[RField] = field(default_factory=list)
    invariants: list[tuple] = field(default_factory=list)  # (InvariantSpec, Expr, loc)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def inline(self) -> bool:
        """Fixed-size, unconditional, scalars and inline structs only: read with one unpack."""
        for f in self.fields:
            if f.conditional or f.is_array or f.spec.sized:
                return False
            if f.is_scalar or f.inline_struct is not None:
                continue
            return False
        return True

    @property
    def fixed_size(self) -> int | None:
        if not self.inline:
            return None
        total = 0
        for f in self.fields:  # each a scalar or an inline struct (self.inline)
            inner = f.inline_struct
            size = f.scalar_size if inner is None else inner.fixed_size
            assert size is not None
            total += size
        return total


@dataclass
class Binary:
    """One binary spec: its validated spec, its file and its resolved structs by name."""

    spec: BinarySpec
    doc: SpecDocument
    structs: dict[str, RStruct] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.spec.name


@dataclass
class Model:
    """Everything under spec/, validated and resolved."""

    root: Path
    documents: list[SpecDocument] = field(default_factory=list)
    binaries: dict[str, Binary] = field(default_factory=dict)
    tables: dict[str, tuple[TableSpec, SpecDocument]] = field(default_factory=dict)
    eras: ErasSpec | None = None
    eras_doc: SpecDocument | None = None
    records: dict[str, tuple[RecordsSpec, SpecDocument]] = field(default_factory=dict)
    timelines: dict[str, tuple[TimelineSpec, SpecDocument]] = field(default_factory=dict)
    layouts: dict[str, tuple[LayoutSpec, SpecDocument]] = field(default_factory=dict)
    findings: dict[str, tuple[FindingsSpec, SpecDocument]] = field(default_factory=dict)
    migrations: dict[str, tuple[MigrationSpec, SpecDocument]] = field(default_factory=dict)
    verdicts: dict[str, tuple[VerdictsSpec, SpecDocument]] = field(default_factory=dict)

    def digest(self, doc: SpecDocument) -> str:
        """Content hash of one spec file (goes into generated headers)."""
        return hashlib.sha256(doc.text.encode("utf-8")).hexdigest()[:16]

    def boundaries(self) -> list[str]:
        """Every TVM version named in spec/eras.yaml, oldest first."""
        return sorted((e.version for e in self.eras.eras), key=vkey) if self.eras else []


def active(row: dict, version: str) -> bool:
    """Whether a row (or field) with since/until applies to TVM ``version``."""
    since = row.get("since")
    until = row.get("until")
    if since is not None and vkey(version) < vkey(str(since)):
        return False
    return until is None or vkey(version) < vkey(str(until))


def table_dialects(model: Model, table: str) -> list[tuple[str, str | None, list[int]]]:
    """Maximal version ranges over which the active rows of ``table`` stay the same:
    (since, until or None, indices of the active rows), oldest first."""
    spec, _ = model.tables[table]
    bounds = model.boundaries()
    out: list[tuple[str, str | None, list[int]]] = []
    for i, version in enumerate(bounds):
        rows = [k for k, row in enumerate(spec.rows) if active(row, version)]
        until = bounds[i + 1] if i + 1 < len(bounds) else None
        if out and out[-1][2] == rows:
            out[-1] = (out[-1][0], until, rows)
        else:
            out.append((version, until, rows))
    return out
