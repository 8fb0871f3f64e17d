"""Length-prefixed strings (``str``: a u64 byte count, then the bytes)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..ksy_base import Untranslatable
from ..model import RField
from .base import FieldKind

if TYPE_CHECKING:
    from ..ksy_base import KsyField
    from .emitters import FastEmitter as StructEmitter
    from .emitters import KsyEmitterLike as KsyEmitter


class Str(FieldKind):
    """TVM's stream string: text with ``encoding``, bytes without."""

    has_length = True

    def has_len(self, f: RField) -> bool:
        return True

    def options(self, f: RField) -> frozenset[str]:
        return frozenset({"const", "encoding"})

    def length_checked(self, f: RField) -> bool:
        return True

    def selects_by_name(self, f: RField) -> bool:
        return True

    def ksy_value(self, path: str, inline: bool) -> str | None:
        return path if inline else f"{path}.value"  # an inline string is decoded where it is read

    def ksy_length(self, path: str, inline: bool) -> str | None:
        if not inline:
            return f"{path}.len_value"
        head, _, last = path.rpartition(".")
        if last == "_":
            raise Untranslatable("len() of the validated string inside its own rule")
        return f"{head + '.' if head else ''}len_{last}"

    def min_size(self, f: RField) -> int:
        return 8

    def read(self, em: StructEmitter, f: RField, slot: str) -> None:
        em.read_str_into(f.name, repr(f.name), f.spec.encoding, append=False)
        em.slots.append((f.name, "str" if f.spec.encoding else "bytes"))

    def write(self, em: StructEmitter, f: RField) -> None:
        c, name = em.c, f.name
        c(f"_b = {name}.encode('utf-8', 'surrogateescape') if isinstance({name}, str) else {name}")
        c("append(_U64P(len(_b)))")
        c("append(_b)")

    def ksy_type(self, km: KsyEmitter, kf: KsyField) -> Any:
        return km.value_type(kf)

    def ksy_layout(self, km: KsyEmitter, kf: KsyField, vtype: Any) -> list[dict[str, Any]]:
        if kf.inline_str:  # it selects what follows: read inline, decoded while parsing
            return km.inline_str_entries(kf)
        return km.value_entries(kf, vtype, None)
