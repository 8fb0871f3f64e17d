"""Helpers shared by the emitters: headers, identifiers, flattening of inline structs."""

from __future__ import annotations

from dataclasses import dataclass

from .code import header as header  # the emitters take it from here
from .model import Model, RField, RStruct
from .versions import vkey


def camel(name: str) -> str:
    """tensor_record -> TensorRecord."""
    return "".join(p.capitalize() for p in name.split("_"))


def version_tuple(v: str) -> tuple[int, ...]:
    return vkey(v)


@dataclass
class Slot:
    """One member of the flat record a fast reader returns."""

    name: str  # attribute name in the record class
    dotted: str  # name in expressions: dtype.bits
    field: RField  # the field (or nested scalar field) it comes from
    offset_in_parent: int | None = None


def flat_name(parent: str, child: str) -> str:
    """Flattened attribute name of an inline struct member: dtype.bits -> dtype_bits,
    device.device_type -> device_type (no stutter)."""
    return child if child.startswith(parent + "_") else f"{parent}_{child}"


def inline_scalars(rs: RStruct, prefix: str = "", dotted: str = "") -> list[tuple[str, str, RField]]:
    """(flat name, dotted name, scalar field) for every scalar of an inline struct, in order."""
    out: list[tuple[str, str, RField]] = []
    for f in rs.fields:
        fname = flat_name(prefix, f.name) if prefix else f.name
        dname = f"{dotted}.{f.name}" if dotted else f.name
        if f.kind == "scalar":
            out.append((fname, dname, f))
        else:
            assert f.struct is not None
            out.extend(inline_scalars(f.struct, fname, dname))
    return out


def min_size(rs: RStruct) -> int:
    """Fewest bytes any instance of the struct can take."""
    total = 0
    for f in rs.fields:
        if f.conditional or f.is_array or f.kind in ("bytes", "switch"):
            continue
        if f.kind == "scalar":
            total += f.scalar_size or 0
        elif f.kind in ("str", "vec", "map"):
            total += 8
        elif f.kind == "struct" and f.struct is not None:
            total += min_size(f.struct)
    return total


def element_min_size(model: Model, type_name: str, owner: RStruct | None) -> int:
    from .ir import SCALARS

    if type_name in SCALARS:
        return SCALARS[type_name][0]
    if type_name == "str":
        return 8
    assert owner is not None
    return min_size(owner)
