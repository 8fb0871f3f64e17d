"""Sequences: ``vec`` (a u64 count, then the elements), ``map`` (a u64 count, then key/value
pairs) and counted arrays of strings or structs (``count``: an expression of earlier fields)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..ir import SCALARS
from ..ksy_base import Untranslatable
from ..model import RField, RStruct
from .base import FieldKind, has_many, type_min_size

if TYPE_CHECKING:
    from ..expr import Expr
    from ..ksy_base import KsyField
    from .emitters import FastEmitter as StructEmitter
    from .emitters import KsyEmitterLike as KsyEmitter


def count_length(path: str) -> str:
    """Kaitai's ``len()`` of the vec or map at ``path``: its ``num_<x>`` count."""
    head, _, last = path.rpartition(".")
    if last == "_":
        raise Untranslatable("len() of the validated list inside its own rule")
    return f"{head + '.' if head else ''}num_{last}"


class Sequence(FieldKind):
    """What vec, map and counted arrays share: the count, the room check, the element loop."""

    def has_len(self, f: RField) -> bool:
        return True

    def length_checked(self, f: RField) -> bool:
        return True

    def list_like(self, f: RField) -> bool:
        return True

    def ksy_length(self, path: str, inline: bool) -> str | None:
        return f"{path}.size"

    def element(self, f: RField) -> tuple[str | None, RStruct | None]:
        """The element type's name and struct (None for a map, whose elements are pairs)."""
        raise NotImplementedError

    def element_size(self, f: RField) -> int:
        """Fewest bytes of one element."""
        elem, struct = self.element(f)
        return type_min_size(elem or "", struct)

    def read_count(self, em: StructEmitter, f: RField) -> None:
        """Emit the code that sets ``_n`` to the number of elements."""
        em.read_u64("_n", f.name, "count")

    def read(self, em: StructEmitter, f: RField, slot: str) -> None:
        c, name = em.c, f.name
        self.read_count(em, f)
        elem_type, elem_struct = self.element(f)
        count_off = "pos" if f.is_array else "pos - 8"
        em.check_room("_n", max(self.element_size(f), 1), name, "elements", count_off)
        if elem_type in SCALARS:
            size, code = SCALARS[elem_type]
            c(f"{name} = _arr({code!r}, _n).unpack_from(buf, pos)")
            c(f"pos += _n * {size}")
        elif elem_type == "str" or (elem_struct is not None and has_many(elem_struct)):
            self.read_bulk(em, f, elem_type, elem_struct)
        else:
            c(f"{name} = []")
            c("for _i in range(_n):")
            c.indent()
            self.read_item(em, f, f"f\"{name}[{{_i}}]\"")
            c.dedent()
        em.slots.append((name, "tuple" if elem_type in SCALARS else "list"))

    def read_bulk(self, em: StructEmitter, f: RField, elem_type: str | None, elem_struct: RStruct | None) -> None:
        """Bulk readers: runs of equal-length strings / identical record headers in one go."""
        c, name = em.c, f.name
        c("try:")
        c.indent()
        if elem_type == "str":
            c(f"{name}, pos = _read_strs(buf, pos, end, _n, {bool(f.spec.encoding)!r})")
        elif f is em.rs.fields[-1] and not any(inv.severity == "error" for inv, _, _ in em.rs.invariants):
            # the last field: a caller may take the records as runs (read_<s>(..., runs=True))
            em.takes_runs = True
            assert elem_struct is not None
            es = elem_struct.name
            # ``runs`` may also be a reader of the runs with read_<s>_runs's signature (one that
            # reads the headers another way, e.g. from a file by pread)
            c(f"_rr = runs if callable(runs) else read_{es}_runs if runs else read_{es}_many")
            c(f"{name}, pos = _rr(buf, pos, end, _n, era)")
        else:
            assert elem_struct is not None
            c(f"{name}, pos = read_{elem_struct.name}_many(buf, pos, end, _n, era)")
        c.dedent()
        c("except MlfError as _e:")
        c.indent()
        c(f"raise _e.prefixed({name!r}) from None")
        c.dedent()

    def read_item(self, em: StructEmitter, f: RField, path: str) -> None:
        """Emit the loop body that reads element ``_i`` (field path ``path``) into the list."""
        elem_type, elem_struct = self.element(f)
        em.read_element(elem_type or "", f.name, path, f.spec.encoding, elem_struct)

    def write_count(self, em: StructEmitter, f: RField) -> None:
        """Emit the code that writes the count (none for an array: an earlier field holds it)."""
        em.c(f"append(_U64P(len({f.name})))")

    def write(self, em: StructEmitter, f: RField) -> None:
        c, name = em.c, f.name
        self.write_count(em, f)
        elem, struct = self.element(f)
        if elem in SCALARS:
            c(f"append(_arr({SCALARS[elem][1]!r}, len({name})).pack(*{name}))")
        elif struct is not None and has_many(struct):
            c(f"write_{struct.name}_many(append, {name}, lazy, era)")
        else:
            c(f"for _v in {name}:")
            c.indent()
            em.write_element(elem or "", "_v", struct)
            c.dedent()

    def ksy_layout(self, km: KsyEmitter, kf: KsyField, vtype: Any) -> list[dict[str, Any]]:
        """``num_<x>`` (the u64 count), then the elements repeated that many times."""
        count_entry = km.count_entry(kf, self.element_size(kf.f))
        return km.value_entries(kf, vtype, f"num_{kf.fid}", [count_entry])


class Vec(Sequence):
    """``vec`` of ``of``: a u64 count, then the elements."""

    len_equals = True
    has_length = True

    def each_elements(self, f: RField) -> bool:
        return True

    def options(self, f: RField) -> frozenset[str]:
        return frozenset({"sized", "encoding"} if f.elem == "str" else {"sized"})

    def doc_type(self, f: RField) -> str:
        return f"vec<{f.elem}>"

    def ksy_length(self, path: str, inline: bool) -> str | None:
        return count_length(path)

    def bounded_values(self, f: RField) -> bool:
        return f.elem in ("u8", "u16", "u32", "u64", "i8", "i16", "i32", "i64")

    def each_layout(self, f: RField, offset: str) -> tuple[int | None, str]:
        if f.is_array:
            return super().each_layout(f, offset)
        # elements follow the u64 count
        return (SCALARS[f.elem][0] if f.elem in SCALARS else None), f"{offset} + 8"

    def construct(self, f: RField, ctx: Callable[[Expr], str], typ: Callable[[str, str | None], str]) -> str:
        return f"PrefixedArray(Int64ul, {typ(f.elem or '', f.spec.encoding)})"

    def min_size(self, f: RField) -> int:
        return 8

    def element(self, f: RField) -> tuple[str | None, RStruct | None]:
        return f.elem, f.elem_struct

    def write(self, em: StructEmitter, f: RField) -> None:
        if f.elem == "str":
            em.c(f"_write_strs(append, {f.name}, {bool(f.spec.encoding)!r})")
        else:
            super().write(em, f)

    def ksy_type(self, km: KsyEmitter, kf: KsyField) -> Any:
        vtype, needs = km.element_type(kf.f.elem or "", kf.f.spec.encoding, kf.rs, kf.b.name)
        kf.needs |= needs
        return vtype


class Map(Sequence):
    """``map`` of ``key`` to ``value``: a u64 count, then the pairs (a list of 2-tuples)."""

    len_equals = True
    has_length = True

    def options(self, f: RField) -> frozenset[str]:
        return frozenset({"sized", "encoding"} if "str" in (f.key, f.value) else {"sized"})

    def doc_type(self, f: RField) -> str:
        return f"map<{f.key}, {f.value}>"

    def ksy_length(self, path: str, inline: bool) -> str | None:
        return count_length(path)

    def construct(self, f: RField, ctx: Callable[[Expr], str], typ: Callable[[str, str | None], str]) -> str:
        enc = f.spec.encoding
        return f"PrefixedArray(Int64ul, Struct('key' / {typ(f.key or '', enc)}, 'value' / {typ(f.value or '', enc)}))"

    def min_size(self, f: RField) -> int:
        return 8

    def element(self, f: RField) -> tuple[str | None, RStruct | None]:
        return None, None

    def element_size(self, f: RField) -> int:
        key = SCALARS[f.key][0] if f.key in SCALARS else 8
        assert f.value is not None
        return key + type_min_size(f.value, f.value_struct)

    def read_item(self, em: StructEmitter, f: RField, path: str) -> None:
        c = em.c
        c("_pair = []")
        em.read_element(f.key or "", "_pair", path + " + '.key'", f.spec.encoding, None)
        em.read_element(f.value or "", "_pair", path + " + '.value'", f.spec.encoding, f.value_struct)
        c(f"{f.name}.append(tuple(_pair))")

    def write(self, em: StructEmitter, f: RField) -> None:
        c = em.c
        self.write_count(em, f)
        c(f"for _k, _v in {f.name}:")
        c.indent()
        em.write_element(f.key or "", "_k")
        em.write_element(f.value or "", "_v", f.value_struct)
        c.dedent()

    def ksy_type(self, km: KsyEmitter, kf: KsyField) -> Any:
        vtype, needs = km.map_entry(kf.b, kf.rs, kf.f)
        kf.needs |= needs
        return vtype


class Array(Sequence):
    """``count`` strings or structs (the count is an expression of earlier fields)."""

    def element(self, f: RField) -> tuple[str | None, RStruct | None]:
        return f.spec.type, f.struct if f.kind == "struct" else None

    def read_count(self, em: StructEmitter, f: RField) -> None:
        em.c(f"_n = {em.py(f.exprs['count'])}")

    def write_count(self, em: StructEmitter, f: RField) -> None:
        pass

    def ksy_type(self, km: KsyEmitter, kf: KsyField) -> Any:
        return km.switch_type(kf) if kf.f.kind == "switch" else km.value_type(kf)

    def ksy_layout(self, km: KsyEmitter, kf: KsyField, vtype: Any) -> list[dict[str, Any]]:
        return km.value_entries(kf, vtype, km.array_count(kf))
