"""One class per field kind (scalar, scalar array, str, bytes, vec, map, counted array, struct,
switch), each with its fast read / write, its Kaitai form and its minimum size side by side
(:mod:`specgen.fields.base` says what a kind provides). :func:`kind_of` picks a field's kind."""

from __future__ import annotations

from ..model import RField
from .base import FieldKind, has_many, struct_min_size, type_min_size
from .blob import Bytes
from .scalar import Scalar, ScalarArray
from .seq import Array, Map, Sequence, Vec
from .struct import Struct
from .switch import Switch
from .text import Str

_SCALAR, _SCALAR_ARRAY, _STR, _BYTES = Scalar(), ScalarArray(), Str(), Bytes()
_VEC, _MAP, _ARRAY, _STRUCT, _SWITCH = Vec(), Map(), Array(), Struct(), Switch()


def kind_of(f: RField) -> FieldKind:
    """The kind that reads, writes, states and sizes ``f`` (a counted field: an array kind)."""
    if f.kind == "bytes":
        return _BYTES
    if f.kind == "scalar":
        return _SCALAR_ARRAY if f.is_array else _SCALAR
    if f.kind == "vec":
        return _VEC
    if f.kind == "map":
        return _MAP
    if f.is_array:
        return _ARRAY
    return {"str": _STR, "struct": _STRUCT, "switch": _SWITCH}[f.kind]


__all__ = ["FieldKind", "Scalar", "ScalarArray", "Str", "Bytes", "Sequence", "Vec", "Map", "Array", "Struct",
           "Switch", "kind_of", "has_many", "struct_min_size", "type_min_size"]
