"""Scalars (``u8`` ... ``f64``) and counted arrays of them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..ir import SCALARS
from ..model import RField
from .base import FieldKind

if TYPE_CHECKING:
    from ..ksy_base import KsyField
    from .emitters import FastEmitter as StructEmitter
    from .emitters import KsyEmitterLike as KsyEmitter


class Scalar(FieldKind):
    """One fixed-size number, little-endian."""

    def bounded_values(self, f: RField) -> bool:
        return True

    def options(self, f: RField) -> frozenset[str]:
        return frozenset({"const"})

    def fixed_size(self, f: RField) -> int | None:
        return SCALARS[f.spec.type][0]

    def wide_int(self, f: RField) -> bool:
        return f.spec.type in ("u64", "i64")

    def ksy_valid_form(self, f: RField) -> bool:
        return True

    def min_size(self, f: RField) -> int:
        return SCALARS[f.spec.type][0]

    def read(self, em: StructEmitter, f: RField, slot: str) -> None:
        c, name = em.c, f.name
        size, code = SCALARS[f.spec.type]
        c(f"if end - pos < {size}:")
        c.indent()
        c(f"raise TruncatedError(\"input ends inside {name}\", field={name!r}, offset=pos)")
        c.dedent()
        c(f"{name} = _arr({code!r}, 1).unpack_from(buf, pos)[0]")
        c(f"pos += {size}")
        em.slots.append((name, "float" if code in "fd" else "int"))

    def write(self, em: StructEmitter, f: RField) -> None:
        em.c(f"append(_arr({SCALARS[f.spec.type][1]!r}, 1).pack({f.name}))")

    def ksy_type(self, km: KsyEmitter, kf: KsyField) -> Any:
        return km.value_type(kf)

    def ksy_layout(self, km: KsyEmitter, kf: KsyField, vtype: Any) -> list[dict[str, Any]]:
        if kf.read_as_bytes:  # compared with values beyond 2^53, which JavaScript cannot tell apart
            return [km.u64_bytes_entry(kf)]
        return km.value_entries(kf, vtype, None)


class ScalarArray(FieldKind):
    """``count`` scalars, read with one ``unpack`` into a tuple."""

    def bounded_values(self, f: RField) -> bool:
        return True

    def has_len(self, f: RField) -> bool:
        return True

    def ksy_length(self, path: str, inline: bool) -> str | None:
        return f"{path}.size"

    def read(self, em: StructEmitter, f: RField, slot: str) -> None:
        c, name = em.c, f.name
        size, code = SCALARS[f.spec.type]
        c(f"_n = {em.py(f.exprs['count'])}")
        c("if _n < 0:")
        c.indent()
        c(f"raise ConstraintError(f\"{name} count is {{_n}}\", field={name!r}, offset=pos)")
        c.dedent()
        c(f"if _n * {size} > end - pos:")
        c.indent()
        c(f"raise TruncatedError(f\"input ends inside {name}: {{_n}} x {size} bytes needed, {{end - pos}} remain\", field={name!r}, offset=pos)")
        c.dedent()
        c(f"{name} = _arr({code!r}, _n).unpack_from(buf, pos)")
        c(f"pos += _n * {size}")
        em.slots.append((name, "tuple"))

    def write(self, em: StructEmitter, f: RField) -> None:
        code = SCALARS[f.spec.type][1]
        em.c(f"append(_arr({code!r}, len({f.name})).pack(*{f.name}))")

    def ksy_type(self, km: KsyEmitter, kf: KsyField) -> Any:
        return km.value_type(kf)

    def ksy_layout(self, km: KsyEmitter, kf: KsyField, vtype: Any) -> list[dict[str, Any]]:
        count = km.array_count(kf)
        if kf.read_as_bytes:
            return [km.u64_bytes_entry(kf)]
        return km.value_entries(kf, vtype, count)
