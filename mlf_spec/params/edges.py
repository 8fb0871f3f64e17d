""".params files drawn at the edges of the spec's rules (re-exported by :mod:`mlf_spec.strategies`).

A valid file and a refused one are often one value apart, and that value is where readers
differ: a names count right in its low 32 bits, a name one byte longer than what remains, a
float8 code with 16 bits, lanes 0 or 65535, 64 dimensions and 65, extents whose product wraps
around 2^64 to the stored size, a zero extent beside a huge one, a data size that differs from
numel x ceil(bits / 8) in its high bytes only, a file cut at a field boundary. :func:`edge_params_bytes`
draws such files from a drawn valid file: its value tree (the spec engine builds the bytes,
counts and derived sizes) or its traced fields (the spec engine's spans: no layout is restated
here), with the values the conformance vectors also use (:mod:`mlf_spec.edge_values`). Which
side of the rule an edge lands on is left to the reference's reading: generated cases compare a
reader with it.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from hypothesis import strategies as st

from mlf_spec._internal.drawn import Data, Edge
from mlf_spec._internal.spec_engine import Span, build, trace
from mlf_spec._internal.spec_strategies import ERAS, TABLES, valid_tree
from mlf_spec.edge_values import WIDTH, edge_values, length_lies, patch, raw, rooms, unpack
from mlf_spec.errors import MlfError
from mlf_spec.generated import params_ir
from mlf_spec.versions import label, public

from .codec import loads
from .dtypes import of_version

#: The edges :func:`edge_params_bytes` draws, each with its weight (how many of 30 draws):
#: ``length`` the names count, a name's length or the tensor count lying (right in its low 32
#: bits, one past what remains, off by one, counts that would allocate terabytes or whose
#: 8-byte minimum wraps to 0); ``value`` a checked integer (a magic, the device type, ndim, an
#: extent, the data size, the tensor count; the reserved words) at its edges; ``dtype`` one of
#: code / bits / lanes moved to a value of another row of the dialect's table or of no row
#: (a float8 code with 16 bits, a float4 code with 8, codes 128-130, lanes 0 and 65535), the
#: data size following; ``shape`` 64 and 65 dimensions, negative extents, a zero extent beside
#: a huge one, extents whose product (or product x bytes per element) wraps around 2^64 to 0 or
#: to a small size that the data holds; ``size`` the data size off numel x ceil(bits / 8) by
#: one, by 2^32, in its high byte, floor instead of ceil, times lanes, negative; ``cut`` the
#: file cut at a field boundary or inside a name or a tensor's data; ``names`` names of no
#: byte, ill-formed UTF-8, NUL, long or repeated; ``tail`` bytes after the last tensor.
EDGE_KINDS: dict[str, int] = {"value": 6, "dtype": 6, "length": 5, "shape": 5, "cut": 4, "size": 2, "names": 1,
                              "tail": 1}

_STRUCTS = params_ir.STRUCTS
_ROOT = "params_file"
_TENSOR = "tensor_record"
#: bytes of tensor data written in full; a larger claimed size is left without its data
_DATA_CAP = 1 << 13
#: (struct field, member) -> the bounds the enclosing struct puts on a member (device.device_type == 1)
_MEMBER_BOUNDS = {(f["name"], m): b for s in _STRUCTS.values() for f in s["fields"]
                  for m, b in (f.get("member_bounds") or {}).items()}
_DERIVED = next(f for f in _STRUCTS[_TENSOR]["fields"] if "derive" in f)
_CHECKS = ("const", "constraint", "equals", "derive", "canonical")
_PATTERN = bytes(range(256))


@st.composite
def edge_params_bytes(draw: Any, era: str | None = None, kinds: tuple[str, ...] | None = None) -> Edge:
    """A .params file at the edge of one rule, of one of ``kinds`` (default: every kind of
    :data:`EDGE_KINDS`, by weight), its dtype codes numbered as TVM ``era`` numbers them
    (default: the first version of any dialect): an :class:`Edge` (``format`` "params", ``kind``
    the edge's kind and edit, ``where`` the field it moved); read it in the dialect of ``era``,
    whose reading decides whether it is valid."""
    unknown = sorted(set(kinds or ()) - set(EDGE_KINDS))
    if unknown:
        raise ValueError(f"unknown edge kinds {unknown}; known: {sorted(EDGE_KINDS)}")
    e = public(era, "era") or _pick(draw, ERAS)
    which = _pick(draw, [k for k, w in EDGE_KINDS.items() if kinds is None or k in kinds for _ in range(w)])
    tree = draw(valid_tree(_STRUCTS, _ROOT, e))
    if which in ("dtype", "shape", "size") or (which == "names" and not tree["names"]) or _pick(draw, (False, True)):
        _add_tensor(draw, tree, e)
    if which == "dtype" and _pick(draw, range(3)) == 0:
        _accepted_edge(draw, tree, e)
        return _edge("dtype.accepted", build(_STRUCTS, _ROOT, tree, e), e)
    if which in ("dtype", "shape", "size"):
        i = _pick(draw, range(len(tree["arrays"])))
        rec = dict(tree["arrays"][i])
        edit = {"dtype": _dtype_edge, "shape": _shape_edge, "size": _size_edge}[which](draw, rec, e)
        tree["arrays"][i] = rec
        return _edge(f"{which}.{edit}", build(_STRUCTS, _ROOT, tree, e), e)
    if which == "names":
        edit = _names_edge(draw, tree)
        return _edge(f"names.{edit}", build(_STRUCTS, _ROOT, tree, e), e)
    data = build(_STRUCTS, _ROOT, tree, e)
    if which == "tail":
        tail = _pick(draw, (raw("u64", _STRUCTS[_TENSOR]["fields"][0]["const"]), bytes(8), b"\0", b"\xff" * 3))
        return _edge("tail", data + tail, e)
    spans = trace(_STRUCTS, _ROOT, data, e)[1]
    if which == "cut":
        return _cut_edge(draw, data, spans, e)
    if which == "length":
        return _length_edge(draw, data, spans, e)
    return _value_edge(draw, data, spans, e)


def _pick(draw: Any, options: Any) -> Any:
    """One of ``options`` (a sequence; hypothesis shrinks towards the first)."""
    return draw(st.sampled_from(options))


def _edge(kind: str, data: bytes, e: tuple[int, ...], where: str = "") -> Edge:
    return Edge(kind, Data(data), label(e), "params", where)


def _place(path: tuple) -> str:
    """A field's place whatever its element index: ('arrays', 2, 'shape', 0) -> 'arrays[].shape[]'."""
    return "".join("[]" if isinstance(p, int) else ("." if i else "") + str(p) for i, p in enumerate(path))


def _by_place(draw: Any, spans: list[Span], rank: Any = None) -> Span:
    """One span, every place (field) as likely whatever its number of occurrences; of a place,
    its first occurrence, its last one or any. Places come in file order, or by ``rank`` (a
    span's sort key): the first one is drawn a little more often (hypothesis favours it)."""
    places: dict[str, list[Span]] = defaultdict(list)
    for s in spans:
        places[_place(s.path)].append(s)
    order = sorted(places, key=lambda p: (rank(places[p][0]) if rank else 0, places[p][0].offset))
    group = places[_pick(draw, order)]
    return _pick(draw, (group[0], group[-1], *group))


def _add_tensor(draw: Any, tree: dict, e: tuple[int, ...]) -> None:
    """One more named tensor, at a drawn position (the edges move one of its fields)."""
    at = _pick(draw, range(len(tree["names"]) + 1))
    tree["names"].insert(at, draw(st.text(max_size=4)))
    tree["arrays"].insert(at, draw(valid_tree(_STRUCTS, _TENSOR, e)))
    tree["count"] = None  # the builder counts again


def _i64(v: int) -> int:
    """``v`` as a 64-bit reader holds it: reduced modulo 2^64, signed."""
    v %= 1 << 64
    return v - (1 << 64) if v >= 1 << 63 else v


def _true_size(rec: dict) -> int:
    """numel(shape) x ceil(bits / 8) as the spec derives it, in unbounded integers."""
    return int(_DERIVED["derive"][1](rec))


def _resize(draw: Any, rec: dict, stored: int | None = None, held: int | None = None) -> None:
    """Set the record's data size to ``stored`` (default: the true size wrapped to 64 bits as a
    reader that overflows computes it) and its data to ``held`` bytes (default: what the stored
    size claims, if the input can hold it, else none); ndim follows the shape."""
    size = _i64(_true_size(rec)) if stored is None else stored
    n = held if held is not None else (size if 0 <= size <= _DATA_CAP else 0)
    rec["ndim"] = None
    rec["data_byte_size"] = size
    fill = _pick(draw, (0, 1))
    rec["data"] = bytes(n) if fill == 0 else (_PATTERN * (n // 256 + 1))[:n]


def _widths(rows: list[dict], code: int) -> frozenset[int] | None:
    """The bits the dialect's rows allow for ``code``: None for any width, else the fixed ones
    (empty: no row defines the code)."""
    mine = [r for r in rows if r["code"] <= code <= (r["code_max"] if r["code_max"] is not None else r["code"])]
    if any(r["bits"] is None for r in mine):
        return None
    return frozenset(r["bits"] for r in mine)


def _dtype_edge(draw: Any, rec: dict, e: tuple[int, ...]) -> str:
    """Move the dtype to a triple readers confuse. Mostly at a boundary of the dialect's table,
    two neighbouring codes whose rows allow different widths (bool and the first float8, the
    last float8 and the first float6, float6 and float4, the last code and the one after, the
    last undefined code and the first custom one): either code with either side's width or one
    off (a float8 code with 16 bits, a float4 code with 8 or 3). Else one of code, bits, lanes
    moved to any value of the table or of no row (lanes 0, 256, 65535)."""
    dt = dict(rec["dtype"])
    rows = [r for r in TABLES["dtype_codes"].ROWS if (r["since"] is None or tuple(r["since"]) <= e)
            and (r["until"] is None or e < tuple(r["until"]))]
    codes = sorted({c for r in rows for c in (r["code"], r["code_max"]) if c is not None})
    edges = [(c, c + 1) for c in range(codes[0], 256) if c + 1 <= max(codes) + 1 and c + 1 < 256
             and _widths(rows, c) != _widths(rows, c + 1)]
    which = _pick(draw, ("boundary",) * 4 + ("code", "bits", "lanes", "lanes"))
    if which == "boundary" and edges:
        pair = _pick(draw, edges)
        dt["code"] = _pick(draw, pair)
        # a code of fixed widths: one below and one above them (a reader that checks bits <= w) or the
        # other side's; a code of any width (or none): the other side's widths and their neighbours, or any
        mine, other = (sorted(_widths(rows, c) or ()) for c in (dt["code"], sum(pair) - dt["code"]))
        widths = [b + d for d in (-1, 1) for b in mine] + other if mine else \
            [b + d for b in other for d in (0, -1, 1)] + [1, 16, 32]
        dt["bits"] = _pick(draw, [b for b in dict.fromkeys(widths) if 0 <= b <= 255])
        dt["lanes"] = 1
    elif which == "lanes":
        # 257 and 256: 1 and 0 in the low byte
        dt["lanes"] = _pick(draw, (0, (1 << 16) - 1, 257, 256, 0, (1 << 16) - 1, 2, 255, 257, 1 << 15))
    else:
        near = {v for c in codes for v in (c - 1, c, c + 1)} | {127, 255} if which == "code" else \
            {b + d for r in rows if r["bits"] is not None for b in (r["bits"],) for d in (-1, 0, 1)} | \
            {0, 1, 2, 3, 4, 7, 8, 9, 16, 32, 33, 64, 65, 255}
        dt[which] = _pick(draw, sorted(v for v in near if 0 <= v <= 255 and v != dt[which]))
    rec["dtype"] = dt
    _resize(draw, rec)
    return which


def _accepted_edge(draw: Any, tree: dict, e: tuple[int, ...]) -> None:
    """Tensors on the accepted side of every dtype bound at once: one per code of the dialect's
    table, each with a width its rows allow (the fixed one, or one of a few for a row of any
    width), the first and the last custom code, and one tensor of 64 dimensions. A reader whose
    table is narrower by one code or one width refuses the file. A tensor the reference refuses
    alone (a width a row's other rules forbid) is left out, so that the file stays valid."""
    rows = [r for r in TABLES["dtype_codes"].ROWS if (r["since"] is None or tuple(r["since"]) <= e)
            and (r["until"] is None or e < tuple(r["until"]))]
    dialect = of_version(e).id
    dtypes = []
    for r in rows:
        for code in sorted({r["code"], r["code_max"] if r["code_max"] is not None else r["code"]}):
            bits = r["bits"] if r["bits"] is not None else _pick(draw, (8, 16, 32, *(r["numpy_bits"] or ())))
            dtypes.append({"code": code, "bits": bits, "lanes": 1})
    base = draw(valid_tree(_STRUCTS, _TENSOR, e))
    records = []
    for d in [*dtypes, None]:
        rec = dict(base)
        if d is None:  # 64 dimensions (the bound), one extent of 2
            rec["shape"] = [1] * 64
            rec["shape"][_pick(draw, range(64))] = 2
        else:
            rec["dtype"], rec["shape"] = d, [_pick(draw, (1, 2, 3))]
        rec["ndim"], rec["data_byte_size"] = None, _true_size(rec)
        rec["data"] = bytes(rec["data_byte_size"])
        one = {**tree, "names": [""], "arrays": [rec], "count": None}
        try:
            loads(build(_STRUCTS, _ROOT, one, e), dialect=dialect)
        except MlfError:
            continue
        records.append(rec)
    for rec in draw(st.permutations(records)):
        at = _pick(draw, range(len(tree["names"]) + 1))
        tree["names"].insert(at, f"t{len(tree['names'])}")
        tree["arrays"].insert(at, rec)
    tree["count"] = None


#: extents whose product wraps around 2^64: to 0, or to 4 ([2^62 + 1, 4] loads as 4 elements in TVM)
_WRAPS = ([1 << 32, 1 << 32], [1 << 33, 1 << 31], [(1 << 62) + 1, 4], [1 << 32, 3, 1 << 32], [(1 << 32) + 1, (1 << 32) - 1],
          [1 << 62, 4, 1], [(1 << 61) + 1, 8])
_HUGE = (1 << 31, 1 << 32, (1 << 32) + 1, 1 << 40, (1 << 56) + 1, 1 << 62, (1 << 63) - 1)
_NEGATIVE = (-1, -2, -(1 << 31), -(1 << 32), -(1 << 63), -(1 << 63) + 1)


def _shape_edge(draw: Any, rec: dict, e: tuple[int, ...]) -> str:
    """Extents at the rules' edges; the data size follows as a 64-bit reader computes it."""
    shape = list(rec["shape"])
    edit = _pick(draw, ("ndim", "ndim", "negative", "zero-huge", "wrap", "wrap-bytes", "high"))
    if edit == "ndim":  # 64 dimensions (the bound) and 65, extents of 1 and one of 2
        shape = [1] * _pick(draw, (63, 64, 64, 65, 65))
        shape[_pick(draw, range(len(shape)))] = _pick(draw, (1, 2))
    elif edit == "negative":  # one extent, a pair whose product is positive, or one beside a 0
        pair = _pick(draw, ([], [-2, -3], [0, -5], [-5, 0]))
        if pair:
            shape = pair
        else:  # beside a 0 in half of them (numel 0: only the extent's own rule refuses the file)
            shape = shape or [1]
            shape[_pick(draw, range(len(shape)))] = _pick(draw, _NEGATIVE)
            if _pick(draw, (False, True)):
                shape.insert(_pick(draw, range(len(shape) + 1)), 0)
    elif edit == "zero-huge":  # numel 0 whatever the other extents
        shape = shape[:3]
        shape.insert(_pick(draw, range(len(shape) + 1)), _pick(draw, _HUGE))
        shape.insert(_pick(draw, range(len(shape) + 1)), 0)
    elif edit == "wrap":
        shape = list(_pick(draw, _WRAPS))
    elif edit == "wrap-bytes":  # numel fits in 64 bits, numel x bytes per element wraps to a few bytes
        per = -(-rec["dtype"]["bits"] // 8)
        if per < 2:  # a float (DLPack's code 2 in every dialect) of 2, 4 or 8 bytes
            rec["dtype"] = {"code": 2, "bits": _pick(draw, (16, 32, 64)), "lanes": 1}
            per = -(-rec["dtype"]["bits"] // 8)
        base = -(-(1 << 64) // per) + _pick(draw, (0, 1))  # numel x per = 2^64 + less than 2 x per
        shape = [base] if base < 1 << 63 else [base // 2, 2]
    else:  # an extent that differs in its high half only (beside a 0: the file stays valid)
        shape = shape or [1]
        j = _pick(draw, range(len(shape)))
        shape[j] += _pick(draw, (1 << 32, 1 << 31, 1 << 48))
        if _pick(draw, (False, True)):
            shape.insert(_pick(draw, range(len(shape) + 1)), 0)
    rec["shape"] = shape
    _resize(draw, rec, None if _pick(draw, range(4)) else 0)  # 1 in 4: a stored size of 0
    return edit


def _size_edge(draw: Any, rec: dict, e: tuple[int, ...]) -> str:
    """The data size beside numel x ceil(bits / 8); the data holds what the size claims or the true size."""
    true = _true_size(rec)
    numel = 1
    for x in rec["shape"]:
        numel *= x
    bits, lanes = rec["dtype"]["bits"], rec["dtype"]["lanes"]
    cands = {true + 1, true - 1, true + (1 << 32), true + (1 << 56), true | (1 << 63), true + (1 << 31), 0, -1, -true,
             2 * true, (numel * bits) // 8, numel * bits, numel * lanes * -(-bits // 8), (1 << 63) - 1}
    cands.discard(true)
    stored = _i64(_pick(draw, sorted(cands)))
    held = _pick(draw, (None, true))
    _resize(draw, rec, stored, held)
    return "data_byte_size"


def _names_edge(draw: Any, tree: dict) -> str:
    """One name at an edge: no byte, ill-formed UTF-8 (a lone lead, an overlong, a surrogate,
    a partial sequence), NUL, 255 or 256 bytes, or another name's."""
    i = _pick(draw, range(len(tree["names"])))
    cands = [b"", b"\xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf0\x9f\x98", b"a\x00b", b"\x00", b"\xe2\x82a",
             b"n" * 255, b"n" * 256, b"\xf4\x90\x80\x80"]
    if len(tree["names"]) > 1:
        cands.append(tree["names"][(i + 1) % len(tree["names"])])
    tree["names"][i] = _pick(draw, cands)
    return "name"


def _length_edge(draw: Any, data: bytes, spans: list[Span], e: tuple[int, ...]) -> Edge:
    """The names count, a name's length or the tensor count lying."""
    counts = [s for s in spans if s.role in ("count", "length") or (s.role == "value" and "equals" in s.field)]
    span = _by_place(draw, counts, lambda s: -len(s.path))  # a name's length, then the counts
    n = int.from_bytes(data[span.offset:span.offset + 8], "little")
    rem = rooms(data, spans)(span)
    value = _pick(draw, [n + (1 << 32)] * 3 + [rem + 1, *([n - 1] if n else []), rem, rem // 8, rem // 8 + 1,
                        1 << 61, (1 << 61) + n,
                                                       *length_lies(n)])
    return _edge("length", patch(data, span.offset, raw("u64", value)), e, _place(span.path))


def _value_edge(draw: Any, data: bytes, spans: list[Span], e: tuple[int, ...]) -> Edge:
    """A checked integer (or a word readers keep: the reserved ones) at its edges."""
    places = [s for s in spans if s.role == "value" and s.field.get("type") in WIDTH
              and (set(s.field) & set(_CHECKS) or tuple(s.path[-2:]) in _MEMBER_BOUNDS)]
    span = _by_place(draw, places, _rule_rank)
    type_name = str(span.field["type"])
    good = unpack(type_name, data, span.offset)
    lo, hi = _MEMBER_BOUNDS.get(tuple(span.path[-2:])) or span.field.get("bounds") or (None, None)
    high = [good + (1 << (8 * WIDTH[type_name] // 2))] if WIDTH[type_name] >= 4 else []
    near = [good - 1, good + 1, good - 2, good + 2]
    value = _pick(draw, high * 3 + edge_values(type_name, good, lo, hi) + near)
    return _edge("value", patch(data, span.offset, raw(type_name, value)), e, _place(span.path))


def _rule_rank(s: Span) -> int:
    """Bounded values first (the device type, ndim, extents), then constants, then counts and
    derived sizes, then the words readers only keep."""
    if tuple(s.path[-2:]) in _MEMBER_BOUNDS or "bounds" in s.field:
        return 0
    return 1 if "const" in s.field else 2 if {"equals", "derive"} & set(s.field) else 3


def _cut_edge(draw: Any, data: bytes, spans: list[Span], e: tuple[int, ...]) -> Edge:
    """The file cut at the start or the end of a field, or inside a name or a tensor's data."""
    span = _by_place(draw, spans, lambda s: s.role != "payload")  # names' and data's bytes first (sized by a field)
    cuts = {span.offset, span.offset + span.size}
    if span.size > 1:
        cuts |= {span.offset + 1, span.offset + span.size // 2, span.offset + span.size - 1}
    cut = _pick(draw, sorted(c for c in cuts if c < len(data)) or [0])
    return _edge("cut", data[:cut], e, _place(span.path))


__all__ = ["EDGE_KINDS", "edge_params_bytes"]
