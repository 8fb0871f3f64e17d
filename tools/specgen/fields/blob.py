"""Raw bytes of a size given by an expression (``bytes``), kept by offset when ``lazy``."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..model import RField
from .base import FieldKind

if TYPE_CHECKING:
    from ..expr import Expr
    from ..ksy_base import KsyField
    from .emitters import FastEmitter as StructEmitter
    from .emitters import KsyEmitterLike as KsyEmitter


class Bytes(FieldKind):
    """``size`` bytes; a lazy field records its offset and is never copied."""

    def has_len(self, f: RField) -> bool:
        return not f.spec.lazy

    def options(self, f: RField) -> frozenset[str]:
        return frozenset({"size", "lazy"})

    def doc_type(self, f: RField) -> str:
        return f"bytes[{f.spec.size}]"

    def length_checked(self, f: RField) -> bool:
        return True

    def ksy_length(self, path: str, inline: bool) -> str | None:
        return f"{path}.size"

    def lazy(self, f: RField) -> bool:
        return bool(f.spec.lazy)

    def takes_rest(self, f: RField) -> bool:
        return "remaining" in f.exprs["size"].helpers

    def construct(self, f: RField, ctx: Callable[[Expr], str], typ: Callable[[str, str | None], str]) -> str:
        if self.takes_rest(f):
            return "GreedyBytes"  # size: remaining() -- the rest of the enclosing region
        return f"Bytes(lambda ctx: {ctx(f.exprs['size'])})"

    def read(self, em: StructEmitter, f: RField, slot: str) -> None:
        c, name = em.c, f.name
        c(f"_n = {em.py(f.exprs['size'])}")
        c("if _n < 0:")
        c.indent()
        c(f"raise ConstraintError(f\"{name} size is {{_n}}\", field={name!r}, offset=pos)")
        c.dedent()
        c("if _n > end - pos:")
        c.indent()
        c(f"raise TruncatedError(f\"input ends inside {name}: {{_n}} bytes needed, {{end - pos}} remain\", field={name!r}, offset=pos)")
        c.dedent()
        if f.spec.lazy:
            c(f"{slot} = pos")
            em.slots.append((slot, "int"))
        else:
            c(f"{name} = bytes(buf[pos:pos + _n])")
            em.slots.append((name, "bytes"))
        c("pos += _n")

    def write(self, em: StructEmitter, f: RField) -> None:
        if f.spec.lazy:
            em.c(f"append(lazy({f.name!r}, rec) if lazy is not None else b'')")
        else:
            em.c(f"append({f.name})")

    def ksy_layout(self, km: KsyEmitter, kf: KsyField, vtype: Any) -> list[dict[str, Any]]:
        return km.bytes_entries(kf)
