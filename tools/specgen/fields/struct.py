"""A nested struct (``type: <struct>``), read and written by its own functions."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..common import camel
from ..model import RField, RStruct
from .base import FieldKind, read_struct, struct_min_size

if TYPE_CHECKING:
    from ..ksy_base import KsyField
    from .emitters import FastEmitter as StructEmitter
    from .emitters import KsyEmitterLike as KsyEmitter


class Struct(FieldKind):
    """One struct: ``read_<struct>`` / ``write_<struct>`` (inline structs are read in runs instead)."""

    def min_size(self, f: RField) -> int:
        assert f.struct is not None
        return struct_min_size(f.struct)

    def options(self, f: RField) -> frozenset[str]:
        return frozenset({"sized"})

    def fixed_size(self, f: RField) -> int | None:
        return f.struct.fixed_size if f.struct is not None else None

    def nested(self, f: RField) -> RStruct | None:
        return f.struct

    def ksy_sized(self, f: RField) -> bool:
        return True

    def read(self, em: StructEmitter, f: RField, slot: str) -> None:
        assert f.struct is not None
        read_struct(em, f.struct.name, f.name, repr(f.name))
        em.slots.append((f.name, camel(f.struct.name)))

    def write(self, em: StructEmitter, f: RField) -> None:
        assert f.struct is not None
        em.c(f"write_{f.struct.name}(append, {f.name}, lazy, era)")

    def ksy_type(self, km: KsyEmitter, kf: KsyField) -> Any:
        return km.value_type(kf)
