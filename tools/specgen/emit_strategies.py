"""Emit the hypothesis entry points of a binary spec: valid files and the named kinds of
broken ones, derived from what the spec says about each field."""

from __future__ import annotations

from .common import header
from .emit_fast import Code
from .load import Binary, Model, RStruct


def broken_kinds(binary: Binary) -> list[str]:
    """Every way to break a file that the spec makes nameable, in spec order."""
    kinds = ["truncated"]
    seen: set[str] = set()

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
            if f.kind in ("vec", "map", "str") and not f.is_array:
                kinds.append(f"lying_length:{where}")
            if f.spec.constraint:
                kinds.append(f"constraint:{where}")
            if f.spec.table:
                kinds.append(f"unknown_code:{where}")
            for sub in (f.struct, f.elem_struct, f.value_struct):
                if sub is not None:
                    visit(sub)

    for rs in binary.structs.values():
        if rs.spec.root:
            visit(rs)
    return kinds


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
        c()
        c()
        c(f"def valid_{rs.name}(era: tuple[int, ...] | None = None, **hints: Any) -> Any:")
        c.indent()
        c(f'"""Strategy for the bytes of valid {rs.name} values (``era`` None = any era)."""')
        c("from mlf_spec.spec_strategies import valid_bytes")
        c()
        c(f"return valid_bytes(STRUCTS, {rs.name!r}, era, **hints)")
        c.dedent()
        c()
        c()
        c(f"def broken_{rs.name}(kinds: tuple[str, ...] | None = None, era: tuple[int, ...] | None = None) -> Any:")
        c.indent()
        c(f'"""Strategy for (kind, bytes) of {rs.name} values broken in one named way."""')
        c("from mlf_spec.spec_strategies import broken_bytes")
        c()
        c(f"return broken_bytes(STRUCTS, {rs.name!r}, kinds or BROKEN_KINDS, era)")
        c.dedent()
    return c.text()
