"""Load spec/ into the model (:mod:`specgen.model`): parse YAML, validate against the meta-schema,
resolve references, and run the checks of :mod:`specgen.checks` and of the versioned, migration and
verdict specs.

Resolution adds what emitters need but the spec need not say: the kind of every field,
which structs are fixed-size (and so can be read with one ``struct`` call), and the
checked expressions.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ValidationError

from .checks import (
    EXPR_KEYS,
    check_field_expr,
    check_field_options,
    check_invariant_rule,
    check_invariant_versions,
    check_tables,
)
from .expr import Expr, ExprError
from .findings import check as check_finding_rows
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
from .migrations import check_migrations
from .model import Binary, Model, RField, RStruct, active, table_dialects
from .verdicts import check as check_verdicts
from .versioned import check_versioned
from .versions import vkey
from .yamlload import SpecDocument, SpecError


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
    check_tables(model)
    resolve_enums_from_tables(model)
    for binary in model.binaries.values():
        _resolve_binary(model, binary)
    check_versioned(model)
    check_migrations(model)
    for vspec, vdoc in model.verdicts.values():
        check_verdicts(model, vspec, vdoc)
    for fspec, fdoc in model.findings.values():
        check_finding_rows(model, fspec, fdoc)
    return model


def resolve_enums_from_tables(model: Model) -> None:
    """Fill in the ``enum`` of every record field with ``enum_from: TABLE.COLUMN`` (that column's
    values, in the table's order), so the emitters see one enum, written once in the table."""
    for spec, doc in model.records.values():
        for i, record in enumerate(spec.records):
            for j, f in enumerate(record.fields):
                if f.enum_from is None:
                    continue
                loc = ("records", i, "fields", j, "enum_from")
                table, _, column = f.enum_from.partition(".")
                if table not in model.tables:
                    raise doc.error(loc, f"unknown table {table!r}")
                tspec = model.tables[table][0]
                if column not in {c.name for c in tspec.columns}:
                    raise doc.error(loc, f"table {table!r} has no column {column!r}")
                values = [row[column] for row in tspec.rows]
                if f.enum is not None and f.enum != values:  # (resolving twice is no error)
                    raise doc.error(loc, "give 'enum' or 'enum_from', not both")
                f.enum = values


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


def _parse(doc: SpecDocument, loc: tuple, source: str) -> Expr:
    try:
        return Expr(source)
    except ExprError as exc:
        raise doc.error(loc, str(exc)) from None


def _resolve_kind(doc: SpecDocument, loc: tuple, f: FieldSpec, struct) -> RField:  # noqa: ANN001
    """The field with its kind and the structs it refers to (``struct(name, loc)`` resolves one)."""
    t = f.type
    rf = RField(spec=f, loc=loc, kind="scalar")
    if f.switch is not None:
        rf.kind = "switch"
        for case_value, case_type in f.switch.cases.items():
            if case_type not in SCALARS and case_type not in BUILTINS:
                struct(case_type, loc + ("switch", "cases", case_value))
        if f.switch.default and f.switch.default not in SCALARS and f.switch.default not in BUILTINS:
            struct(f.switch.default, loc + ("switch", "default"))
        rf.switch_on = _parse(doc, loc + ("switch", "on"), f.switch.on)
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
    return rf


def _resolve_fields(model: Model, doc: SpecDocument, rs: RStruct, struct, constants: set[str]) -> None:  # noqa: ANN001
    seen: dict[str, RField] = {}
    for j, f in enumerate(rs.spec.fields):
        loc = rs.loc + ("fields", j)
        if f.name in seen:
            raise doc.error(loc + ("name",), f"field {f.name!r} appears twice in {rs.name}")
        rf = _resolve_kind(doc, loc, f, struct)
        check_field_options(model, doc, rf)
        for key in EXPR_KEYS:
            source = getattr(f, key)
            if source is None:
                continue
            e = _parse(doc, loc + ("if" if key == "when" else key,), source)
            check_field_expr(model, doc, rf, rs.name, key, e, set(seen) | constants)
            rf.exprs[key] = e
        seen[f.name] = rf
        rs.fields.append(rf)
    for k, inv in enumerate(rs.spec.invariants):
        loc = rs.loc + ("invariants", k)
        check_invariant_versions(model, doc, loc, inv)
        e = _parse(doc, loc + ("rule",), inv.rule)
        check_invariant_rule(model, doc, loc, e, rs.name, set(seen) | constants)
        rs.invariants.append((inv, e, loc))


__all__ = ["Model", "RStruct", "RField", "Binary", "SpecError", "load", "table_dialects", "active", "vkey"]
