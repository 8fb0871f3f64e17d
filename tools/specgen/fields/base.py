"""What every field kind provides, and the helpers the kinds share.

A field kind (Construct's idea of one class per field kind with parse / build / sizeof side by
side) knows how the fast reader reads a field of its kind (:meth:`FieldKind.read`), how the fast
writer writes it (:meth:`FieldKind.write`), how a Kaitai spec states it (:meth:`FieldKind.ksy_type`,
:meth:`FieldKind.ksy_entries`) and the fewest bytes it takes (:meth:`FieldKind.min_size`). What all
fields share (since/until and ``if`` conditions, ``sized`` framing, checks of const / equals /
derive / constraint) stays with the emitters, which call the kind for the rest.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..ir import SCALARS
from ..model import RField, RStruct

if TYPE_CHECKING:
    from ..expr import Expr
    from ..ksy_base import KsyField
    from .emitters import FastEmitter as StructEmitter
    from .emitters import KsyEmitterLike as KsyEmitter


# kind name -> the kind; filled by the package (specgen.fields), which imports every kind's module
KINDS: dict[str, FieldKind] = {}


def kind_of(f: RField) -> FieldKind:
    """The kind that reads, writes, states and sizes ``f`` (a counted field: an array kind)."""
    if f.kind == "scalar":
        return KINDS["scalar_array" if f.is_array else "scalar"]
    if f.kind in ("bytes", "vec", "map") or not f.is_array:
        return KINDS[f.kind]
    return KINDS["array"]


def value_kind(f: RField) -> FieldKind:
    """The kind of one value of ``f`` (a counted field: the kind of its elements)."""
    return KINDS[f.kind]


#: field kind -> the class of the run-time IR (mlf_spec._internal.ir) that ``<binary>_ir.py`` instantiates
IR_CLASSES = {"scalar": "Scalar", "str": "Str", "bytes": "Bytes", "vec": "Vec", "map": "Map", "struct": "Nested",
              "switch": "Switch"}


def ir_class(f: RField) -> str:
    """The run-time IR class of ``f`` (a counted array: the class of its elements' kind)."""
    return IR_CLASSES[f.kind]


def ir_kind_attrs(f: RField) -> list[tuple[str, str]]:
    """(attribute, Python source) of what only ``f``'s kind has in the run-time IR."""
    s = f.spec
    if f.kind == "scalar":
        return [("fmt", repr(SCALARS[s.type][1])), ("size", repr(SCALARS[s.type][0]))]
    if f.kind == "struct" and f.struct is not None:
        return [("struct", repr(f.struct.name))]
    if f.kind == "vec":
        return [("elem", repr(f.elem))]
    if f.kind == "map":
        return [("key", repr(f.key)), ("value", repr(f.value))]
    if f.kind == "switch" and s.switch is not None:
        switch: dict[str, object] = {"on": s.switch.on, "cases": dict(s.switch.cases), "default": s.switch.default}
        if s.switch.extensible:
            switch["extensible"] = s.switch.extensible
        return [("switch", repr(switch))]
    return []


def struct_min_size(rs: RStruct) -> int:
    """Fewest bytes any instance of the struct can take."""
    return sum(0 if f.conditional or f.is_array else kind_of(f).min_size(f) for f in rs.fields)


def type_min_size(type_name: str, struct: RStruct | None) -> int:
    """Fewest bytes of one element of type ``type_name`` (a scalar, str, or the struct ``struct``)."""
    if type_name in SCALARS:
        return SCALARS[type_name][0]
    if type_name == "str":
        return 8
    assert struct is not None
    return struct_min_size(struct)


def has_many(rs: RStruct) -> bool:
    """Structs that end in lazy bytes get a bulk reader for runs of identical headers."""
    last = rs.fields[-1] if rs.fields else None
    return bool(last is not None and last.kind == "bytes" and last.spec.lazy and not last.conditional
                and not any(f.kind == "bytes" and f.spec.lazy for f in rs.fields[:-1]))


def read_struct(em: StructEmitter, type_name: str, target: str, path: str) -> None:
    """Read one ``type_name`` struct into ``target``; errors inside get the field path ``path``."""
    c = em.c
    c("try:")
    c.indent()
    c(f"{target}, pos = read_{type_name}(buf, pos, end, era)")
    c.dedent()
    c("except MlfError as _e:")
    c.indent()
    c(f"raise _e.prefixed({path}) from None")
    c.dedent()


class FieldKind:
    """One kind of field: how it is read, written, stated in Kaitai and Construct, and sized."""

    #: an ``equals`` rule states the number of elements (vec, map), not the value
    len_equals = False
    #: a u64 length or count precedes the value (str, vec, map): a strategy can make it lie
    has_length = False

    def bounded_values(self, f: RField) -> bool:
        """Whether the generic strategy draws the values a constraint's integer bounds apply to
        (a scalar, or the integer elements of a vec), so it can break them."""
        return False

    def lazy(self, f: RField) -> bool:
        """Whether the field is kept by offset (lazy bytes), never copied."""
        return False

    def takes_rest(self, f: RField) -> bool:
        """Whether the field runs to the end of its region (``size: remaining()``)."""
        return False

    def each_elements(self, f: RField) -> bool:
        """Whether a constraint over ``each`` applies to the elements of the value."""
        return f.is_array

    def each_layout(self, f: RField, offset: str) -> tuple[int | None, str]:
        """(bytes of one element, offset of the first) of a value checked ``each`` by ``each``."""
        return (SCALARS[f.spec.type][0] if f.spec.type in SCALARS else None), offset

    def construct(self, f: RField, ctx: Callable[[Expr], str], typ: Callable[[str, str | None], str]) -> str:
        """The Construct of the value (before arrays, ``sized``, checks and conditions wrap it);
        ``ctx`` spells an expression over ``ctx``, ``typ`` a type name."""
        return typ(f.spec.type, f.spec.encoding)

    def min_size(self, f: RField) -> int:
        """Fewest bytes the field takes when present (0 when that depends on the data)."""
        return 0

    def has_len(self, f: RField) -> bool:
        """Whether the value has a length (an empty one loses nothing where the field has no place)."""
        return False

    def read(self, em: StructEmitter, f: RField, slot: str) -> None:
        """Emit the fast reader's code that reads the field into the local ``slot``."""
        raise NotImplementedError

    def write(self, em: StructEmitter, f: RField) -> None:
        """Emit the fast writer's code that appends the field's bytes."""
        raise NotImplementedError

    def options(self, f: RField) -> frozenset[str]:
        """The spec options (``size``, ``lazy``, ``const``, ``encoding``, ``sized``) a value of this
        kind may have; the checker refuses the others."""
        return frozenset()

    def doc_type(self, f: RField) -> str:
        """The reference pages' name of the value's type (before a count or a ``sized`` length)."""
        return f.spec.type

    def fixed_size(self, f: RField) -> int | None:
        """Bytes one value always takes (None when that depends on the data)."""
        return None

    def nested(self, f: RField) -> RStruct | None:
        """The struct whose fields the value holds (a struct field), else None."""
        return None

    def length_checked(self, f: RField) -> bool:
        """Whether the reader checks the field's stated length or count against the bytes that
        remain before it reads the value."""
        return f.is_array

    def list_like(self, f: RField) -> bool:
        """Whether the value is a list of elements (a vec, a map, a counted array)."""
        return f.is_array

    def selects_by_name(self, f: RField) -> bool:
        """Whether a switch on the field selects by a name (the case keys are strings)."""
        return False

    def wide_int(self, f: RField) -> bool:
        """Whether the value is a 64-bit integer (JavaScript reads it as a double)."""
        return False

    def ksy_valid_form(self, f: RField) -> bool:
        """Whether Kaitai's ``valid`` forms (min / max, any-of) can state a rule on the value."""
        return False

    def ksy_sized(self, f: RField) -> bool:
        """Whether a ``sized`` field of this kind has a Kaitai form (a substream it must fill)."""
        return False

    def ksy_value(self, path: str, inline: bool) -> str | None:
        """The Kaitai expression of the value of the field at ``path`` (``inline``: the field is
        read inline), or None when the kind has no form of its own (the path, or ``_`` in an
        element rule, stands for the value)."""
        return None

    def ksy_length(self, path: str, inline: bool) -> str | None:
        """The Kaitai expression of ``len()`` of the field at ``path`` (None: it has no length)."""
        return None

    def ksy_type(self, km: KsyEmitter, kf: KsyField) -> Any:
        """The Kaitai ``type`` of the field's value (or of each element)."""
        return None

    def ksy_entries(self, km: KsyEmitter, kf: KsyField, vtype: Any) -> list[dict[str, Any]]:
        """The Kaitai ``seq`` entries of the field (a sized field: its length, value and check)."""
        if kf.f.spec.sized:
            return km.sized_entries(kf, vtype)
        return self.ksy_layout(km, kf, vtype)

    def ksy_layout(self, km: KsyEmitter, kf: KsyField, vtype: Any) -> list[dict[str, Any]]:
        """The Kaitai ``seq`` entries of a field that is not ``sized``."""
        return km.value_entries(kf, vtype, None)
