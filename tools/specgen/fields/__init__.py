"""One class per field kind (scalar, scalar array, str, bytes, vec, map, counted array, struct,
switch), each with its fast read / write, its Kaitai form and its minimum size side by side
(:mod:`specgen.fields.base` says what a kind provides). :func:`kind_of` picks a field's kind."""

from __future__ import annotations

from .base import KINDS, FieldKind, has_many, ir_class, ir_kind_attrs, kind_of, struct_min_size, type_min_size
from .blob import Bytes
from .scalar import Scalar, ScalarArray
from .seq import Array, Map, Sequence, Vec
from .struct import Struct
from .switch import Switch
from .text import Str

KINDS.update(scalar=Scalar(), scalar_array=ScalarArray(), str=Str(), bytes=Bytes(), vec=Vec(), map=Map(), array=Array(),
             struct=Struct(), switch=Switch())


__all__ = ["FieldKind", "Scalar", "ScalarArray", "Str", "Bytes", "Sequence", "Vec", "Map", "Array", "Struct",
           "Switch", "ir_class", "ir_kind_attrs", "kind_of", "has_many", "struct_min_size", "type_min_size"]
