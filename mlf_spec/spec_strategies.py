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

from .generated import dtype_codes_table as _dtype_table
from .spec_engine import Builder, build

TABLES = {"dtype_codes": _dtype_table}
_INT_RANGE = {"u8": (0, 2**8 - 1), "u16": (0, 2**16 - 1), "u32": (0, 2**32 - 1), "u64": (0, 2**64 - 1),
              "i8": (-(2**7), 2**7 - 1), "i16": (-(2**15), 2**15 - 1), "i32": (-(2**31), 2**31 - 1),
              "i64": (-(2**63), 2**63 - 1)}
ERAS = tuple(tuple(d["since"]) for d in _dtype_table.DIALECTS)


def _bounds(f: dict) -> tuple[int, int]:
    lo, hi = _INT_RANGE.get(f["type"], (0, 2**8 - 1))
    if "bounds" in f:
        blo, bhi = f["bounds"]
        lo = max(lo, blo) if blo is not None else lo
        hi = min(hi, bhi) if bhi is not None else hi
    hint = f.get("strategy", {})
    lo = max(lo, hint.get("min", lo))
    hi = min(hi, hint.get("max", hi))
    return lo, max(lo, hi)


def _row_active(row: dict, era: tuple[int, ...]) -> bool:
    return (row["since"] is None or tuple(row["since"]) <= era) and (row["until"] is None or era < tuple(row["until"]))


@st.composite
def _table_row(draw: Any, table: str, era: tuple[int, ...]) -> dict:
    rows = [r for r in TABLES[table].ROWS if _row_active(r, era)]
    return draw(st.sampled_from(rows))


@st.composite
def valid_tree(draw: Any, structs: dict, name: str, era: tuple[int, ...], max_elems: int = 4,
               pins: dict[str, tuple[int | None, int | None]] | None = None) -> dict:
    """A value tree of struct ``name`` that the spec accepts in ``era``; ``pins`` bounds
    members that a constraint of the enclosing struct restricts."""
    spec = structs[name]
    pins = pins or {}
    ns: dict[str, Any] = {}
    fields = spec["fields"]
    table_fields = [f for f in fields if "table" in f]
    row = draw(_table_row(table_fields[0]["table"], era)) if table_fields else None
    counted = {f["count"][0] for f in fields if "count" in f}
    for f in fields:
        n = f["name"]
        if ("since" in f and era < tuple(f["since"])) or ("until" in f and era >= tuple(f["until"])):
            ns[n] = None
            continue
        if "when" in f and not f["when"][1](ns):
            ns[n] = None
            continue
        kind = f["kind"]
        hint = f.get("strategy", {})
        if "const" in f:
            ns[n] = f["const"]
        elif "choices" in f and kind == "scalar":
            ns[n] = draw(st.sampled_from(f["choices"]))
        elif n in pins and kind == "scalar":
            lo, hi = _bounds({**f, "bounds": pins[n]})
            ns[n] = draw(st.integers(lo, hi))
        elif "equals" in f and kind in ("vec", "map"):  # exactly that many elements
            size = f["equals"][1](ns)
            elem = _element(structs, f, f["elem"], era, max_elems) if kind == "vec" else st.tuples(
                _element(structs, f, f["key"], era, max_elems), _element(structs, f, f["value"], era, max_elems))
            ns[n] = draw(st.lists(elem, min_size=size, max_size=size))
        elif "equals" in f:
            ns[n] = f["equals"][1](ns)
        elif "derive" in f:
            ns[n] = f["derive"][1](ns)
        elif row is not None and "table" in f:
            lo = row["code"]
            hi = row["code_max"] if row["code_max"] is not None else lo
            ns[n] = draw(st.integers(lo, hi))
        elif row is not None and n in row and row[n] is not None and kind == "scalar":
            ns[n] = row[n]
        elif row is not None and n == "bits" and row.get("numpy_bits") and kind == "scalar":
            ns[n] = draw(st.sampled_from(row["numpy_bits"]) | st.integers(*_bounds(f)))
        elif "count" in f:
            count = f["count"][1](ns)
            assume(0 <= count <= 64)
            ns[n] = [draw(_element(structs, f, f["type"], era, max_elems, each=True)) for _ in range(count)]
        elif kind == "scalar":
            if "canonical" in f and "bounds" not in f:
                lo, hi = _bounds(f)
                ns[n] = draw(st.just(f["canonical"]) | st.integers(lo, hi))
            elif n in counted:
                ns[n] = draw(st.integers(*_bounds(f)))
            else:
                ns[n] = draw(_element(structs, f, f["type"], era, max_elems))
        elif kind == "str":
            ns[n] = draw(_element(structs, f, "str", era, max_elems))
        elif kind == "bytes" and "remaining" in f["size"][0]:  # the rest of its region: any bytes
            ns[n] = draw(st.binary(max_size=hint.get("max_size", 16)))
        elif kind == "bytes":
            size = f["size"][1](ns)
            ns[n] = draw(st.binary(min_size=size, max_size=size))
        elif kind == "vec":
            unique = f.get("constraint", ("",))[0] == f"unique({n})"
            ns[n] = draw(st.lists(_element(structs, f, f["elem"], era, max_elems), max_size=hint.get("max_size", max_elems),
                                  unique=unique))
        elif kind == "map":
            ns[n] = draw(st.lists(st.tuples(_element(structs, f, f["key"], era, max_elems),
                                            _element(structs, f, f["value"], era, max_elems)),
                                  max_size=hint.get("max_size", max_elems)))
        elif kind == "struct":
            ns[n] = draw(valid_tree(structs, f["struct"], era, max_elems, f.get("member_bounds")))
        elif kind == "switch":
            key = f["switch_on"](ns)
            type_name = f["switch"]["cases"].get(key, f["switch"]["default"])
            assume(type_name is not None)
            ns[n] = draw(_element(structs, f, type_name, era, max_elems))
        if "constraint" in f and kind in ("vec", "map", "str") and "each" not in f["constraint"][0]:
            assume(f["constraint"][1](ns))  # rules the drawing above does not enforce by construction
    return ns


def _element(structs: dict, f: dict, type_name: str, era: tuple[int, ...], max_elems: int, each: bool = False) -> Any:
    if type_name in _INT_RANGE:
        return st.integers(*_bounds(f))
    if type_name in ("f32", "f64"):
        return st.floats(allow_nan=False, width=32 if type_name == "f32" else 64)
    if type_name == "str":
        hint = f.get("strategy", {})
        if hint.get("alphabet") == "decimal":
            return st.integers(0, 3).map(str)
        if hint.get("alphabet") == "tvm_version":
            return st.sampled_from(["0.8.0", "0.9.0", "0.13.0", "0.14.dev0", "0.16.0", "0.19.0"])
        size = hint.get("max_size", 12) if f["kind"] == "str" else 12  # a vec's max_size counts elements
        if f.get("encoding") or hint.get("alphabet") == "text":
            return st.text(max_size=size)
        return st.binary(max_size=size)
    return valid_tree(structs, type_name, era, max_elems)


@st.composite
def valid_bytes(draw: Any, structs: dict, name: str, era: tuple[int, ...] | None = None, **hints: Any) -> bytes:
    """Bytes of a valid ``name`` (era drawn from the dtype dialects when None)."""
    era = era if era is not None else draw(st.sampled_from(ERAS))
    tree = draw(valid_tree(structs, name, era, **hints))
    return build(structs, name, tree, era)


def _find_field(structs: dict, where: str) -> tuple[str, dict]:
    struct_name, field_name = where.split(".", 1)
    for f in structs[struct_name]["fields"]:
        if f["name"] == field_name:
            return struct_name, f
    raise KeyError(where)


@st.composite
def broken_bytes(draw: Any, structs: dict, name: str, kinds: tuple[str, ...], era: tuple[int, ...] | None = None) -> tuple[str, bytes]:
    """(kind, bytes) of a ``name`` value broken in one of the named ``kinds``."""
    era = era if era is not None else draw(st.sampled_from(ERAS))
    kind = draw(st.sampled_from(kinds))
    tree = draw(valid_tree(structs, name, era))
    if kind == "truncated":
        data = build(structs, name, tree, era)
        cut = draw(st.integers(0, max(len(data) - 1, 0)))
        return kind, data[:cut]
    what, where = kind.split(":", 1)
    struct_name, f = _find_field(structs, where)
    probe = Builder(structs, era)
    probe.build(name, tree)
    places = [path for s, path in probe.occurrences if s == struct_name]
    assume(bool(places))  # that struct does not occur in this tree
    path = draw(st.sampled_from(places)) + (f["name"],)
    overrides: dict[tuple, Any] = {}
    if what == "bad_const":
        lo, hi = _INT_RANGE.get(f["type"], (0, 255))
        overrides[path] = draw(st.integers(lo, hi).filter(lambda v: v != f["const"]))
    elif what in ("count_mismatch", "bad_derived"):
        current = _value_at(structs, name, tree, era, path)
        lo, hi = _INT_RANGE[f["type"]]
        overrides[path] = draw(st.integers(max(lo, current - 3), min(hi, current + 3)).filter(lambda v: v != current))
    elif what == "lying_length":
        overrides[path + ("#count",)] = draw(st.sampled_from([2**64 - 1, 2**62, 2**40]) | st.integers(10**6, 2**63))
    elif what == "constraint":
        if f["kind"] == "struct":
            member, bounds = next(iter(f["member_bounds"].items()))
            member_type = next(m for m in structs[f["struct"]]["fields"] if m["name"] == member)["type"]
            target, type_name = path + (member,), member_type
        else:
            bounds, target, type_name = f.get("bounds", (None, None)), path, f["type"]
        lo, hi = bounds
        type_lo, type_hi = _INT_RANGE[type_name]
        outside = []
        if lo is not None and lo > type_lo:
            outside.append(st.integers(type_lo, lo - 1))
        if hi is not None and hi < type_hi:
            outside.append(st.integers(hi + 1, type_hi))
        assume(bool(outside))
        bad = draw(st.one_of(outside))
        if "count" in f:  # an element constraint: break one element
            n = len(_value_at(structs, name, tree, era, path))
            assume(n > 0)
            target = path + (draw(st.integers(0, n - 1)),)
        overrides[target] = bad
    elif what == "unknown_code":
        table = TABLES[f["table"]]
        known = set()
        for r in table.ROWS:
            known.update(range(r["code"], (r["code_max"] if r["code_max"] is not None else r["code"]) + 1))
        lo, hi = _INT_RANGE[f["type"]]
        overrides[path] = draw(st.integers(lo, min(hi, 255)).filter(lambda v: v not in known))
    return kind, build(structs, name, tree, era, overrides)


def _value_at(structs: dict, name: str, tree: dict, era: tuple[int, ...], path: tuple) -> Any:
    from .spec_engine import trace

    node: Any = trace(structs, name, build(structs, name, tree, era), era)[0]
    for p in path:
        node = node[p]
    return node


__all__ = ["ERAS", "broken_bytes", "valid_bytes", "valid_tree"]
