"""Helpers shared by the emitters: headers, identifiers, flattening of inline structs."""

from __future__ import annotations

from typing import Any

from .code import header as header  # the emitters take it from here
from .model import RField, RStruct


def camel(name: str) -> str:
    """tensor_record -> TensorRecord."""
    return "".join(p.capitalize() for p in name.split("_"))


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
        if f.struct is None:  # an inline struct holds scalars and inline structs
            out.append((fname, dname, f))
        else:
            out.extend(inline_scalars(f.struct, fname, dname))
    return out


def page_head(model: Any, docs: list, title: str, doc: str) -> list[str]:
    """The first lines of a reference page: the generated-from header as an HTML comment, the
    title and the spec's text."""
    out = ["<!-- " + line.lstrip("# ") + " -->" for line in header(model, docs).splitlines()]
    return out + ["", f"# {title}", "", doc.strip(), ""]
