"""Load spec/ into the IR: parse YAML, validate against the meta-schema, resolve references.

Resolution adds what emitters need but the spec need not say: the kind of every field,
which structs are fixed-size (and so can be read with one ``struct`` call), and the
checked expressions.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ValidationError

from .expr import Expr, ExprError
from .ir import (
    BUILTINS,
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
from .ir import SPEC_KINDS as KINDS
from .versions import check_version_known as _check_version_known
from .versions import vkey
from .yamlload import SpecDocument, SpecError

EXPR_KEYS = ("count", "size", "equals", "derive", "constraint", "when")


@dataclass
class RField:
    """A resolved struct field."""

    spec: FieldSpec
    loc: tuple
    kind: str  # scalar | str | bytes | vec | map | struct | switch
    exprs: dict[str, Expr] = field(default_factory=dict)
    struct: RStruct | None = None  # for kind == struct
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
    def scalar_size(self) -> int | None:
        return SCALARS[self.spec.type][0] if self.kind == "scalar" else None


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
            if f.kind == "scalar":
                continue
            if f.kind == "struct" and f.struct is not None and f.struct.inline:
                continue
            return False
        return True

    @property
    def fixed_size(self) -> int | None:
        if not self.inline:
            return None
        total = 0
        for f in self.fields:
            total += f.scalar_size if f.kind == "scalar" else f.struct.fixed_size  # type: ignore[union-attr,operator]
        return total


@dataclass
class Binary:
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


def _validate(doc: SpecDocument) -> BaseModel:
    data = doc.data
    if not isinstance(data, dict):
        raise doc.error((), "a spec file must be a mapping")
    kind = data.get("spec")
    if kind not in KINDS:
        raise doc.error(("spec",), f"'spec' must be one of {sorted(KINDS)}, got {kind!r}")
    try:
        return KINDS[kind].model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = f"unknown key {loc[-1]!r}"
        elif err["type"] == "missing":
            msg = f"required key {loc[-1]!r} is missing"
        raise doc.error(loc, msg) from None


def load(root: Path) -> Model:
    """Load and check every spec file under ``root`` (the spec/ directory)."""
    model = Model(root=root)
    files = sorted(p for p in root.rglob("*.yaml"))
    for path in files:
        doc = SpecDocument(path, root)
        model.documents.append(doc)
        spec = _validate(doc)
        if isinstance(spec, BinarySpec):
            if spec.name in model.binaries:
                raise doc.error(("name",), f"binary spec {spec.name!r} is defined twice")
            model.binaries[spec.name] = Binary(spec, doc)
        elif isinstance(spec, TableSpec):
            model.tables[spec.name] = (spec, doc)
        elif isinstance(spec, ErasSpec):
            model.eras, model.eras_doc = spec, doc
        elif isinstance(spec, RecordsSpec):
            model.records[spec.name] = (spec, doc)
        elif isinstance(spec, TimelineSpec):
            model.timelines[spec.name] = (spec, doc)
        elif isinstance(spec, LayoutSpec):
            model.layouts[spec.name] = (spec, doc)
        elif isinstance(spec, FindingsSpec):
            model.findings[spec.name] = (spec, doc)
        elif isinstance(spec, VerdictsSpec):
            model.verdicts[spec.name] = (spec, doc)
        elif isinstance(spec, MigrationSpec):
            if spec.name in model.migrations:
                raise doc.error(("name",), f"migration {spec.name!r} is defined twice")
            model.migrations[spec.name] = (spec, doc)
    _check_tables(model)
    for binary in model.binaries.values():
        _resolve_binary(model, binary)
    from .versioned import check_versioned

    check_versioned(model)
    from .migrations import check_migrations

    check_migrations(model)
    from .verdicts import check as check_verdicts

    for vspec, vdoc in model.verdicts.values():
        check_verdicts(model, vspec, vdoc)
    return model


def _check_tables(model: Model) -> None:
    for table, doc in model.tables.values():
        names = {c.name for c in table.columns}
        for i, row in enumerate(table.rows):
            for key in row:
                if key not in names | {"since", "until", "doc"}:
                    raise doc.error(("rows", i, key), f"unknown column {key!r}")
            if "doc" not in row:
                raise doc.error(("rows", i), "every row needs a 'doc'")
            for col in table.columns:
                if col.name not in row and not col.type.endswith("_or_null"):
                    raise doc.error(("rows", i), f"column {col.name!r} is missing")
            for key in ("since", "until"):
                if key in row:
                    _check_version_known(model, doc, ("rows", i, key), str(row[key]))


def _all_structs(model: Model, binary: Binary) -> dict[str, tuple[StructSpec, str, tuple]]:
    out: dict[str, tuple[StructSpec, str, tuple]] = {}
    for used in binary.spec.uses:
        if used not in model.binaries:
            raise binary.doc.error(("uses",), f"unknown binary spec {used!r}")
        for i, s in enumerate(model.binaries[used].spec.structs):
            out[s.name] = (s, used, ("structs", i))
    for i, s in enumerate(binary.spec.structs):
        if s.name in out and out[s.name][1] == binary.name:
            raise binary.doc.error(("structs", i, "name"), f"struct {s.name!r} is defined twice")
        out[s.name] = (s, binary.name, ("structs", i))
    return out


def _resolve_binary(model: Model, binary: Binary) -> None:
    doc = binary.doc
    available = _all_structs(model, binary)
    resolved: dict[str, RStruct] = {}
    constants = {c.name for c in binary.spec.constants}
    for used in binary.spec.uses:
        constants |= {c.name for c in model.binaries[used].spec.constants}

    def struct(name: str, loc: tuple) -> RStruct:
        if name in resolved:
            return resolved[name]
        if name not in available:
            raise doc.error(loc, f"unknown type {name!r}")
        spec, owner, sloc = available[name]
        rs = RStruct(spec, owner, sloc)
        resolved[name] = rs
        owner_doc = model.binaries[owner].doc
        _resolve_fields(model, owner_doc, rs, struct, constants)
        return rs

    for i, s in enumerate(binary.spec.structs):
        binary.structs[s.name] = struct(s.name, ("structs", i))
    for j, ex in enumerate(binary.spec.examples):
        if ex.struct not in binary.structs:
            raise doc.error(("examples", j, "struct"), f"unknown struct {ex.struct!r}")


def _resolve_fields(model: Model, doc: SpecDocument, rs: RStruct, struct, constants: set[str]) -> None:  # noqa: ANN001
    seen: dict[str, RField] = {}
    for j, f in enumerate(rs.spec.fields):
        loc = rs.loc + ("fields", j)
        if f.name in seen:
            raise doc.error(loc + ("name",), f"field {f.name!r} appears twice in {rs.name}")
        t = f.type
        rf = RField(spec=f, loc=loc, kind="scalar")
        if f.switch is not None:
            rf.kind = "switch"
            for case_value, case_type in f.switch.cases.items():
                if case_type not in SCALARS and case_type not in BUILTINS:
                    struct(case_type, loc + ("switch", "cases", case_value))
            if f.switch.default and f.switch.default not in SCALARS and f.switch.default not in BUILTINS:
                struct(f.switch.default, loc + ("switch", "default"))
            try:
                rf.switch_on = Expr(f.switch.on)
            except ExprError as exc:
                raise doc.error(loc + ("switch", "on"), str(exc)) from None
        elif t in SCALARS:
            rf.kind = "scalar"
        elif t == "str":
            rf.kind = "str"
        elif t == "bytes":
            rf.kind = "bytes"
            if f.size is None:
                raise doc.error(loc, "a bytes field needs 'size'")
        elif t == "vec":
            rf.kind = "vec"
            if not f.of:
                raise doc.error(loc, "a vec field needs 'of' (its element type)")
            rf.elem = f.of
            if f.of not in SCALARS and f.of != "str":
                rf.elem_struct = struct(f.of, loc + ("of",))
        elif t == "map":
            rf.kind = "map"
            if not f.key or not f.value:
                raise doc.error(loc, "a map field needs 'key' and 'value'")
            if f.key not in SCALARS and f.key != "str":
                raise doc.error(loc + ("key",), "map keys must be scalars or str")
            rf.key, rf.value = f.key, f.value
            if f.value not in SCALARS and f.value != "str":
                rf.value_struct = struct(f.value, loc + ("value",))
        else:
            rf.kind = "struct"
            rf.struct = struct(t, loc + ("type",))
        if f.size is not None and rf.kind != "bytes":
            raise doc.error(loc + ("size",), "'size' is only for bytes fields")
        if f.lazy and rf.kind != "bytes":
            raise doc.error(loc + ("lazy",), "'lazy' is only for bytes fields")
        if f.const is not None and rf.kind not in ("scalar", "str"):
            raise doc.error(loc + ("const",), "'const' is only for scalars and str")
        if f.encoding and rf.kind != "str" and rf.elem != "str" and not (rf.kind == "map" and "str" in (rf.key, rf.value)):
            raise doc.error(loc + ("encoding",), "'encoding' is only for str fields")
        if f.sized and (rf.kind not in ("struct", "switch", "vec", "map") or f.count is not None):
            raise doc.error(loc + ("sized",), "'sized' is only for a single struct, switch, vec or map field")
        if f.keep_span and f.count is not None:
            raise doc.error(loc + ("keep_span",), "'keep_span' is not for arrays")
        if f.table and f.table not in model.tables:
            raise doc.error(loc + ("table",), f"unknown table {f.table!r}")
        for key in ("since", "until"):
            _check_version_known(model, doc, loc + (key,), getattr(f, key))
        for key in EXPR_KEYS:
            source = getattr(f, key)
            if source is None:
                continue
            try:
                e = Expr(source)
            except ExprError as exc:
                raise doc.error(loc + ("if" if key == "when" else key,), str(exc)) from None
            for name in e.names:
                head = name.split(".")[0]
                if head in seen or head in constants:
                    continue
                if head == "each" and key == "constraint":
                    continue
                if head == f.name and key in ("constraint",):
                    continue
                raise doc.error(loc + (key,), f"{name!r} is not an earlier field of {rs.name}")
            if "remaining" in e.helpers and key != "size":
                raise doc.error(loc + (key,), "remaining() is only allowed in 'size'")
            _check_at_least(model, doc, loc + ("if" if key == "when" else key,), e)
            rf.exprs[key] = e
        seen[f.name] = rf
        rs.fields.append(rf)
    for k, inv in enumerate(rs.spec.invariants):
        loc = rs.loc + ("invariants", k)
        for key in ("since", "until"):
            _check_version_known(model, doc, loc + (key,), getattr(inv, key))
        try:
            e = Expr(inv.rule)
        except ExprError as exc:
            raise doc.error(loc + ("rule",), str(exc)) from None
        for name in e.names:
            if name.split(".")[0] not in seen and name.split(".")[0] not in constants:
                raise doc.error(loc + ("rule",), f"{name!r} is not a field of {rs.name}")
        if "remaining" in e.helpers:
            raise doc.error(loc + ("rule",), "remaining() is only allowed in 'size'")
        _check_at_least(model, doc, loc + ("rule",), e)
        rs.invariants.append((inv, e, loc))


def _check_at_least(model: Model, doc: SpecDocument, loc: tuple, e: Expr) -> None:
    """at_least(x, "0.14"): the version must be a string literal listed in eras.yaml."""
    import ast

    for node in ast.walk(e.tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "at_least":
            arg = node.args[1] if len(node.args) == 2 else None
            if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
                raise doc.error(loc, "at_least(x, version) needs a version string literal, e.g. at_least(version, '0.14')")
            _check_version_known(model, doc, loc, arg.value)


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


__all__ = ["Model", "RStruct", "RField", "Binary", "SpecError", "load", "table_dialects", "active", "vkey"]
