"""Emit the hypothesis entry points of a binary spec: valid files and the named kinds of
broken ones, derived from what the spec says about each field."""

from __future__ import annotations

from .common import header
from .emit_fast import Code
from .fields import kind_of
from .model import Binary, Model, RField, RStruct


def broken_kinds(binary: Binary) -> list[str]:
    """Every way to break a file that the spec makes nameable, in spec order."""
    kinds = ["truncated"]
    seen: set[str] = set()
    structs = _all_structs(binary)

    def visit(rs: RStruct) -> None:
        if rs.name in seen:
            return
        seen.add(rs.name)
        for f in rs.fields:
            where = f"{rs.name}.{f.name}"
            if f.spec.const is not None:
                kinds.append(f"bad_const:{where}")
            if f.spec.equals:
                kinds.append(f"count_mismatch:{where}")
            if f.spec.derive:
                kinds.append(f"bad_derived:{where}")
            if (kind_of(f).has_length or f.spec.sized) and not f.is_array:
                kinds.append(f"lying_length:{where}")
            if f.spec.constraint and _breakable(f):
                kinds.append(f"constraint:{where}")
            if f.spec.table:
                kinds.append(f"unknown_code:{where}")
            for sub in (f.struct, f.elem_struct, f.value_struct):
                if sub is not None:
                    visit(sub)
            if f.spec.switch is not None:
                for type_name in [*f.spec.switch.cases.values(), f.spec.switch.default]:
                    if type_name in structs:
                        visit(structs[type_name])

    for rs in binary.structs.values():
        if rs.spec.root:
            visit(rs)
    return kinds


def _breakable(f: RField) -> bool:
    """Whether the generic strategy can write a value that breaks the field's constraint:
    integer bounds on a scalar, an integer array or an inline struct's members."""
    e = f.exprs["constraint"]
    subject = "each" if "each" in e.names else f.name
    if kind_of(f).bounded_values(f):
        return e.int_bounds(subject) != (None, None)
    return f.struct is not None and any(n.startswith(f.name + ".") for n in e.names)


def _all_structs(binary: Binary) -> dict[str, RStruct]:
    out: dict[str, RStruct] = {}

    def add(rs: RStruct | None) -> None:
        if rs is None or rs.name in out:
            return
        out[rs.name] = rs
        for f in rs.fields:
            for sub in (f.struct, f.elem_struct, f.value_struct):
                add(sub)

    for rs in binary.structs.values():
        add(rs)
    return out


def _generic(rs: RStruct, seen: set[str] | None = None) -> bool:
    """Whether the generic valid_tree strategy yields only valid values of ``rs``: no rules
    over several fields and no constraint it cannot satisfy by construction."""
    seen = seen if seen is not None else set()
    if rs.name in seen:
        return True
    seen.add(rs.name)
    if rs.invariants:
        return False
    for f in rs.fields:
        if f.spec.constraint and not (f.is_scalar or f.struct is not None) and not _breakable(f):
            return False
        if f.spec.switch is not None:
            return False
        for sub in (f.struct, f.elem_struct, f.value_struct):
            if sub is not None and not _generic(sub, seen):
                return False
    return True


def emit_strategies(model: Model, binary: Binary) -> str:
    """Python source of ``<name>_strategies.py``."""
    c = Code()
    c.lines.append(header(model, [binary.doc]).rstrip("\n"))
    c(f'"""Hypothesis strategies: {binary.spec.title}, valid and broken by named kind."""')
    c()
    c("from __future__ import annotations")
    c()
    c("from typing import Any")
    c()
    c(f"from .{binary.name}_ir import STRUCTS")
    c()
    c(f"BROKEN_KINDS = {tuple(broken_kinds(binary))!r}")
    for rs in binary.structs.values():
        if rs.owner != binary.name or not rs.spec.root:
            continue
        if not _generic(rs):
            c()
            c(f"# valid {rs.name} values need rules across fields: see mlf_spec.strategies")
            continue
        c()
        c()
        c(f"def valid_{rs.name}(era: tuple[int, ...] | None = None, **hints: Any) -> Any:")
        c.indent()
        c(f'"""Strategy for the bytes of valid {rs.name} values (``era`` None = any era)."""')
        c("from mlf_spec._internal.spec_strategies import valid_bytes")
        c()
        c(f"return valid_bytes(STRUCTS, {rs.name!r}, era, **hints)")
        c.dedent()
        c()
        c()
        c(f"def broken_{rs.name}(kinds: tuple[str, ...] | None = None, era: tuple[int, ...] | None = None) -> Any:")
        c.indent()
        c(f'"""Strategy for (kind, bytes) of {rs.name} values broken in one named way."""')
        c("from mlf_spec._internal.spec_strategies import broken_bytes")
        c()
        c(f"return broken_bytes(STRUCTS, {rs.name!r}, kinds or BROKEN_KINDS, era)")
        c.dedent()
    return c.text()
