"""Hypothesis strategies driven by the spec-as-data (``mlf_spec.generated.*_ir``).

``valid_tree`` draws a value tree field by field: constants, counts and derived sizes are
computed, constrained integers are drawn inside the bounds the constraint states, fields
linked to a table take a row valid in the drawn TVM era, and ``strategy`` hints keep
sizes small. ``broken_bytes`` then writes one named thing wrong: a truncation, a wrong
constant, a count that disagrees, a length that claims more than remains, a value that
breaks its constraint, or a table code that no era defines.
"""

from __future__ import annotations

from typing import Any

from hypothesis import assume
from hypothesis import strategies as st

from mlf_spec.generated import dtype_codes_table as _dtype_table

from .ir import Field, Struct
from .spec_engine import Builder, build

TABLES = {"dtype_codes": _dtype_table}
INT_RANGE = {"u8": (0, 2**8 - 1), "u16": (0, 2**16 - 1), "u32": (0, 2**32 - 1), "u64": (0, 2**64 - 1),
              "i8": (-(2**7), 2**7 - 1), "i16": (-(2**15), 2**15 - 1), "i32": (-(2**31), 2**31 - 1),
              "i64": (-(2**63), 2**63 - 1)}
ERAS = tuple(tuple(d["since"]) for d in _dtype_table.DIALECTS)


def _bounds(f: Field, pin: tuple[int | None, int | None] | None = None) -> tuple[int, int]:
    lo, hi = INT_RANGE.get(f.type, (0, 2**8 - 1))
    given = pin if pin is not None else f.bounds
    if given is not None:
        blo, bhi = given
        lo = max(lo, blo) if blo is not None else lo
        hi = min(hi, bhi) if bhi is not None else hi
    hint = f.hint()
    lo = max(lo, hint.get("min", lo))
    hi = min(hi, hint.get("max", hi))
    return lo, max(lo, hi)


def _row_active(row: dict, era: tuple[int, ...]) -> bool:
    return (row["since"] is None or tuple(row["since"]) <= era) and (row["until"] is None or era < tuple(row["until"]))


def bounds(f: Field, pin: tuple[int | None, int | None] | None = None) -> tuple[int, int]:
    """The integers a scalar field may hold: its type's range, its constraint's bounds, a
    bound the enclosing struct puts on it (``pin``) and its strategy hint."""
    return _bounds(f, pin)


class Choices:
    """What a valid value tree leaves open. :func:`value_tree` states the rules (which fields
    exist in an era, constants, counts, derived sizes, table rows, constraints) and asks an
    implementation for every free value: :class:`Drawn` draws them with hypothesis, a
    deterministic one (the conformance vectors' Sampler) picks them."""

    def row(self, rows: list[dict]) -> dict:
        """A table row (of those active in the era)."""
        raise NotImplementedError

    def pick(self, options: list[Any]) -> Any:
        """One of a field's ``choices``."""
        raise NotImplementedError

    def integer(self, f: Field, pin: tuple[int | None, int | None] | None = None, each: bool = False) -> int:
        """An integer of field ``f`` (within :func:`bounds`); ``each`` for an array element."""
        raise NotImplementedError

    def code(self, lo: int, hi: int) -> int:
        """A table code in [lo, hi]."""
        raise NotImplementedError

    def bits(self, f: Field, numpy_bits: list[int]) -> int:
        """The bits of a table row with NumPy widths."""
        raise NotImplementedError

    def canonical(self, f: Field) -> int:
        """A field with a canonical value and no bounds."""
        raise NotImplementedError

    def number(self, type_name: str) -> float:
        """A float of ``type_name`` (f32 or f64)."""
        raise NotImplementedError

    def text(self, f: Field, era: tuple[int, ...]) -> str | bytes:
        """A string of field ``f`` (text, or bytes without an encoding)."""
        raise NotImplementedError

    def rest(self, f: Field, ns: dict) -> bytes:
        """A bytes field that runs to the end of its region."""
        raise NotImplementedError

    def sized(self, size: int) -> bytes:
        """A bytes field of a known size."""
        raise NotImplementedError

    def elements(self, f: Field, make: Any, ns: dict, limit: int) -> list:
        """The elements of a vec or map of free length (``make()`` gives one), meeting the
        field's constraint where it can."""
        raise NotImplementedError

    def require(self, ok: bool) -> None:
        """A rule the choices made break: this tree is not valid."""
        raise NotImplementedError


class Drawn(Choices):
    """Choices drawn with hypothesis' ``draw``."""

    def __init__(self, draw: Any) -> None:
        self.draw = draw

    def row(self, rows: list[dict]) -> dict:
        return self.draw(st.sampled_from(rows))

    def pick(self, options: list[Any]) -> Any:
        return self.draw(st.sampled_from(options))

    def integer(self, f: Field, pin: tuple[int | None, int | None] | None = None, each: bool = False) -> int:
        return self.draw(st.integers(*bounds(f, pin)))

    def code(self, lo: int, hi: int) -> int:
        return self.draw(st.integers(lo, hi))

    def bits(self, f: Field, numpy_bits: list[int]) -> int:
        return self.draw(st.sampled_from(numpy_bits) | st.integers(*_bounds(f)))

    def canonical(self, f: Field) -> int:
        return self.draw(st.just(f.canonical) | st.integers(*_bounds(f)))

    def number(self, type_name: str) -> float:
        return self.draw(st.floats(allow_nan=False, width=32 if type_name == "f32" else 64))

    def text(self, f: Field, era: tuple[int, ...]) -> str | bytes:
        hint = f.hint()
        if hint.get("alphabet") == "decimal":
            return self.draw(st.integers(0, 3).map(str))
        if hint.get("alphabet") == "tvm_version":
            return self.draw(st.sampled_from(["0.8.0", "0.9.0", "0.13.0", "0.14.dev0", "0.16.0", "0.19.0"]))
        size = f.text_size()
        if f.encoding or hint.get("alphabet") == "text":
            return self.draw(st.text(max_size=size))
        return self.draw(st.binary(max_size=size))

    def rest(self, f: Field, ns: dict) -> bytes:
        return self.draw(st.binary(max_size=f.hint().get("max_size", 16)))

    def sized(self, size: int) -> bytes:
        return self.draw(st.binary(min_size=size, max_size=size))

    def elements(self, f: Field, make: Any, ns: dict, limit: int) -> list:
        out = [make() for _ in range(self.draw(st.integers(0, f.hint().get("max_size", limit))))]
        if f.constraint is not None and f.constraint.text == f"unique({f.name})":  # keep the first of equal elements
            kept: dict[str, Any] = {}
            for x in out:
                kept.setdefault(repr(x), x)
            out = list(kept.values())
        return out

    def require(self, ok: bool) -> None:
        assume(ok)


class TreeDraw:
    """One struct being drawn: what its field kinds ask for (:meth:`ir.Field.draw`)."""

    def __init__(self, c: Choices, structs: dict[str, Struct], era: tuple[int, ...], max_elems: int,
                 pins: dict[str, tuple[int | None, int | None]], row: dict | None, counted: set[str]) -> None:
        self.c, self.structs, self.era, self.max_elems = c, structs, era, max_elems
        self.pins, self.row, self.counted = pins, row, counted
        self.ns: dict[str, Any] = {}

    def element(self, f: Field, type_name: str | None, each: bool = False) -> Any:
        """One value of ``type_name`` (a scalar, ``str`` or a struct) for field ``f``."""
        c = self.c
        if type_name in INT_RANGE:
            return c.integer(f, each=each)
        if type_name in ("f32", "f64"):
            return c.number(type_name)
        if type_name == "str":
            return c.text(f, self.era)
        c.require(type_name is not None)
        assert type_name is not None  # Choices.require raised where it is None
        return self.subtree(type_name, None)

    def subtree(self, name: str, pins: dict | None) -> dict:
        """A value tree of the struct ``name``."""
        return value_tree(self.c, self.structs, name, self.era, self.max_elems, pins)

    def elements(self, f: Field, make: Any) -> list:
        """The elements of a vec or map of free length."""
        return self.c.elements(f, make, self.ns, self.max_elems)


def value_tree(c: Choices, structs: dict[str, Struct], name: str, era: tuple[int, ...], max_elems: int = 4,
               pins: dict[str, tuple[int | None, int | None]] | None = None) -> dict:
    """A value tree of struct ``name`` that the spec accepts in ``era``, its free values
    chosen by ``c``; ``pins`` bounds members that a constraint of the enclosing struct
    restricts."""
    fields = structs[name].fields
    table_fields = [f for f in fields if f.table is not None]
    row = c.row([r for r in TABLES[str(table_fields[0].table)].ROWS if _row_active(r, era)]) if table_fields else None
    counted = {f.count.text for f in fields if f.count is not None}
    d = TreeDraw(c, structs, era, max_elems, pins or {}, row, counted)
    ns = d.ns
    for f in fields:
        n = f.name
        if not f.present(ns, era):
            ns[n] = None
            continue
        ns[n] = f.const if f.const is not None else f.draw(d)
        if f.constraint is not None and f.checks_drawn and "each" not in f.constraint.text:
            c.require(f.constraint(ns))  # rules the choices above do not meet by construction
    return ns


@st.composite
def valid_tree(draw: Any, structs: dict[str, Struct], name: str, era: tuple[int, ...], max_elems: int = 4,
               pins: dict[str, tuple[int | None, int | None]] | None = None) -> dict:
    """A value tree of struct ``name`` that the spec accepts in ``era`` (see :func:`value_tree`)."""
    return value_tree(Drawn(draw), structs, name, era, max_elems, pins)


@st.composite
def valid_bytes(draw: Any, structs: dict[str, Struct], name: str, era: tuple[int, ...] | None = None, **hints: Any) -> bytes:
    """Bytes of a valid ``name`` (era drawn from the dtype dialects when None)."""
    era = era if era is not None else draw(st.sampled_from(ERAS))
    tree = draw(valid_tree(structs, name, era, **hints))
    return build(structs, name, tree, era)


def find_field(structs: dict[str, Struct], where: str) -> tuple[str, Field]:
    struct_name, field_name = where.split(".", 1)
    for f in structs[struct_name].fields:
        if f.name == field_name:
            return struct_name, f
    raise KeyError(where)


@st.composite
def broken_bytes(draw: Any, structs: dict[str, Struct], name: str, kinds: tuple[str, ...], era: tuple[int, ...] | None = None) -> tuple[str, bytes]:
    """(kind, bytes) of a ``name`` value broken in one of the named ``kinds``."""
    era = era if era is not None else draw(st.sampled_from(ERAS))
    kind = draw(st.sampled_from(kinds))
    tree = draw(valid_tree(structs, name, era))
    if kind == "truncated":
        data = build(structs, name, tree, era)
        cut = draw(st.integers(0, max(len(data) - 1, 0)))
        return kind, data[:cut]
    what, where = kind.split(":", 1)
    struct_name, f = find_field(structs, where)
    probe = Builder(structs, era)
    probe.build(name, tree)
    places = [path for s, path in probe.occurrences if s == struct_name]
    assume(bool(places))  # that struct does not occur in this tree
    path = draw(st.sampled_from(places)) + (f.name,)
    overrides: dict[tuple, Any] = {}
    if what == "bad_const":
        lo, hi = INT_RANGE.get(f.type, (0, 255))
        overrides[path] = draw(edge_integers(lo, hi, f.const).filter(lambda v: v != f.const))
    elif what == "bad_derived" and f.derive is not None and draw(st.booleans()):
        # the fields the size is derived from, changed so that the true size wraps around 2^64 to the
        # stored one (a [2^32, 2^32] shape with 0 bytes): only a reader that checks overflow refuses
        wrapped = _wrapping_overrides(structs, name, tree, era, path, f)
        assume(bool(wrapped))
        overrides.update(draw(st.sampled_from(wrapped)))
    elif what in ("count_mismatch", "bad_derived"):
        current = value_at(structs, name, tree, era, path)
        lo, hi = INT_RANGE[f.type]
        near = st.integers(max(lo, current - 3), min(hi, current + 3))
        far = st.sampled_from(sorted({v for v in (current + 2**32, current + 2**16, current * 2 + 1, 2**63 - 1, hi, lo, 0)
                                      if lo <= v <= hi}))
        overrides[path] = draw((near | far).filter(lambda v: v != current))
    elif what == "lying_length":
        overrides[path + ("#count",)] = draw(st.sampled_from([2**64 - 1, 2**62, 2**40]) | st.integers(10**6, 2**63))
    elif what == "constraint":
        target, (lo, hi), type_name = f.constraint_target(structs, path)
        type_lo, type_hi = INT_RANGE[type_name]
        outside = []
        if lo is not None and lo > type_lo:
            outside.append(st.integers(type_lo, lo - 1))
        if hi is not None and hi < type_hi:
            outside.append(st.integers(hi + 1, type_hi))
        assume(bool(outside))
        edges = [v for v in (lo - 1 if lo is not None else None, hi + 1 if hi is not None else None, type_lo, type_hi,
                             -(2**31), 2**31, 2**32, 2**63, 0x101, 1 + 2**24)
                 if v is not None and type_lo <= v <= type_hi and ((lo is not None and v < lo) or (hi is not None and v > hi))]
        bad = draw(st.sampled_from(edges) | st.one_of(outside)) if edges else draw(st.one_of(outside))
        if f.count is not None:  # an element constraint: break one element
            n = len(value_at(structs, name, tree, era, path))
            assume(n > 0)
            target = path + (draw(st.integers(0, n - 1)),)
        overrides[target] = bad
    elif what == "unknown_code":
        table = TABLES[str(f.table)]
        known: set[Any] = set()
        for r in table.ROWS:
            known.update(range(r["code"], (r["code_max"] if r["code_max"] is not None else r["code"]) + 1))
        lo, hi = INT_RANGE[f.type]
        overrides[path] = draw(st.integers(lo, min(hi, 255)).filter(lambda v: v not in known))
    return kind, build(structs, name, tree, era, overrides)


def edge_integers(lo: int, hi: int, near: int = 0) -> st.SearchStrategy[int]:
    """Integers in [lo, hi], half of them at the places readers get wrong: the bounds, 0, 1,
    the sign bits and powers 2^31, 2^32, 2^63, and ``near`` differing in its lowest or only
    its highest byte."""
    width = max(8, (max(abs(lo), abs(hi)).bit_length() + 7) // 8 * 8)
    cands = {lo, lo + 1, hi, hi - 1, 0, 1, 2**31 - 1, 2**31, 2**32, 2**63 - 1, 2**63, -(2**31), -(2**63),
             near ^ 1, near ^ (0xFF << (width - 8)), near + (1 << (width - 8))}
    edges = sorted(v for v in cands if lo <= v <= hi)
    return st.sampled_from(edges) | st.integers(lo, hi)


def _wrapping_overrides(structs: dict[str, Struct], name: str, tree: dict, era: tuple[int, ...], path: tuple,
                        f: Field) -> list[dict[tuple, int]]:
    """Overrides of one integer element of a list beside the derived field ``path`` (the
    extents a size is derived from) that leave the derived value unchanged modulo 2^64 but
    not in truth: the size a 64-bit reader computes wraps around to the stored one."""
    from .spec_engine import trace

    node: Any = trace(structs, name, build(structs, name, tree, era), era)[0]
    for p in path[:-1]:
        node = node[p]
    current = node[f.name]
    out = []
    for key, values in node.items():
        if key == f.name or not isinstance(values, list) or not all(isinstance(v, int) for v in values):
            continue
        for i, v in enumerate(values):
            for j in range(62, 31, -1):
                nv = v + 2**j
                if nv >= 2**63:
                    continue
                ns = dict(node)
                ns[key] = values[:i] + [nv] + values[i + 1:]
                try:
                    assert f.derive is not None
                    new = f.derive(ns)
                except Exception:  # noqa: BLE001 - a formula that cannot take this value: not a candidate
                    continue
                if new != current and new % 2**64 == current % 2**64:
                    out.append({path[:-1] + (key, i): nv})
                    break
    return out


def value_at(structs: dict[str, Struct], name: str, tree: dict, era: tuple[int, ...], path: tuple) -> Any:
    from .spec_engine import trace

    node: Any = trace(structs, name, build(structs, name, tree, era), era)[0]
    for p in path:
        node = node[p]
    return node


__all__ = ["ERAS", "Choices", "Drawn", "bounds", "broken_bytes", "edge_integers", "valid_bytes", "valid_tree", "value_tree"]
