"""Blobs drawn at the edges of the spec's rules (re-exported by :mod:`mlf_spec.strategies`).

A valid blob and a refused one are often one value apart, and that value is where readers
differ: a length that is right in its low 32 bits, a count whose least-size elements fill
exactly what remains, an import tree one row short, two ``_lib`` modules at the first era that
refuses them, a 0.21 payload read as 0.20. :func:`edge_blob_bytes` draws such inputs from the
traced fields of a drawn blob (the spec engine's spans: no layout is restated here) with the
values the conformance vectors also use (:mod:`mlf_spec.edge_values`). Which side of the rule
an edge lands on is left to the reference's reading: generated cases compare a reader with it.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from hypothesis import assume
from hypothesis import strategies as st

from mlf_spec._internal.drawn import Data, Edge
from mlf_spec._internal.spec_engine import build, trace
from mlf_spec._internal.spec_strategies import Drawn, value_tree
from mlf_spec.edge_values import WIDTH, edge_values, length_lies, raw, rooms, unpack

from . import codec as _blob
from .strategies import (
    _PAYLOAD_STRUCTS,
    _ROOTS,
    BLOB_ERAS,
    _build,
    _kinds,
    _label,
    era_tuple,
    place,
    rewrite_import_tree,
    set_import_tree,
    tree_of,
)

#: The edges :func:`edge_blob_bytes` draws, each with its weight (how many of 22 draws):
#: ``length`` a count or length prefix lying (right in its low half, one element or byte past
#: what remains, off by one, at the sign bit); ``value`` a checked integer at its edges;
#: ``tree`` the import tree reshaped (a row short or long, one row, a middle row past the
#: child indices, child indices after the last row, a child at the row count, no edge at all,
#: the ``_lib`` alone or beside up to 9 modules nothing imports); ``era`` a blob of one writer read as its neighbouring era (two ``_lib``
#: at 0.7 and 0.8, a 0.21 function table read as 0.20); ``fill`` a module whose lists hold
#: least-size elements that end the payload or the body; ``tail`` bytes after the blob (or
#: the last bytes of the last kind left after the size prefix's end).
EDGE_KINDS: dict[str, int] = {"length": 5, "value": 2, "tree": 7, "era": 4, "fill": 3, "tail": 1}

#: (written by, read as): neighbouring eras whose rules differ
_ERA_PAIRS = {"legacy": (("0.8", "0.14"), ("0.14", "0.8"), ("0.6", "0.7"), ("0.7", "0.6"), ("0.7", "0.8")),
              "ffi": (("0.23", "0.24"), ("0.24", "0.23"))}
#: eras that read two ``_lib`` modules (0.7), the first that refuses them (0.8) and a later one; eras that
#: write and read function tables of 3 fields (0.20) and of 4 (0.21)
_LIB_ERAS, _TABLE_ERAS = ("0.7", "0.8", "0.14"), ("0.20", "0.21")
_TREE_EDITS = ("rows-short", "children-uncovered", "middle-row-past", "child-at-bound", "child-high", "row-high",
               "rows-long", "no-edges", "flat", "one-row")


class _Least(Drawn):
    """Choices for a payload of least-size elements: empty texts, and lists of one of three
    shapes drawn once per payload (many elements in the outer lists and none inside them,
    one outside and many inside, or a few sizes anywhere), so that a count's elements fill
    what remains with the least bytes each."""

    def __init__(self, draw: Any) -> None:
        super().__init__(draw)
        self.depth = 0
        self.shape = draw(st.sampled_from(("many-outside", "many-inside", "mixed")))

    def text(self, f: dict, era: tuple[int, ...]) -> str | bytes:
        return "" if f.get("encoding") or f.get("strategy", {}).get("alphabet") == "text" else b""

    def rest(self, f: dict, ns: dict) -> bytes:
        return b""

    def elements(self, f: dict, make: Any, ns: dict, limit: int) -> list:
        sizes = {"many-outside": ((9, 17), (0,)), "many-inside": ((1,), (25, 40)),
                 "mixed": ((1, 2, 9, 17), (0, 0, 1, 25))}[self.shape]
        k = self.draw(st.sampled_from(sizes[min(self.depth, 1)]))
        self.depth += 1
        try:
            return [make() for _ in range(k)]
        finally:
            self.depth -= 1


def _eras(fmt: str, eras: tuple[str, ...] | None) -> tuple[str, ...]:
    return tuple(e for e in BLOB_ERAS[fmt] if eras is None or e in eras) or BLOB_ERAS[fmt]


def _edge(kind: str, data: bytes, fmt: str, e: tuple[int, ...], where: str = "") -> Edge:
    return Edge(kind, Data(data), _label(e), fmt, where)


@st.composite
def edge_blob_bytes(draw: Any, format: str | None = None, kinds: tuple[str, ...] | None = None,  # noqa: A002
                    eras: tuple[str, ...] | None = None) -> Edge:
    """A blob at the edge of one rule (:data:`EDGE_KINDS`), of ``format`` (default: either
    layout), with modules of ``kinds`` only (default: every kind), read as one of ``eras``
    (names of :data:`BLOB_ERAS`): an :class:`Edge`; read it with ``blob.parse(e.data,
    format=e.format, era=e.era)``, which decides whether it is valid."""
    fmt = format or draw(st.sampled_from(_blob.FORMATS))
    which = draw(st.sampled_from([k for k, w in EDGE_KINDS.items() for _ in range(w)]))
    allowed = _eras(fmt, eras)
    if which == "era":
        rule = draw(st.sampled_from(("libs", "neighbours", "tables"))) if fmt == "legacy" else "neighbours"
        written: tuple[int, ...]
        if rule == "libs" and set(_LIB_ERAS) & set(allowed):  # two _lib, as 0.7 writes them
            written, read = (0, 7), era_tuple(draw(st.sampled_from([x for x in _LIB_ERAS if x in allowed])))
            data = _build(draw, fmt, written, kinds)
            data = rewrite_import_tree(data, fmt, written, "duplicate_lib_legacy") or data
        elif rule == "tables" and set(_TABLE_ERAS) & set(allowed):  # one module with a function table
            written = era_tuple(draw(st.sampled_from(_TABLE_ERAS)))
            read = era_tuple(draw(st.sampled_from([x for x in _TABLE_ERAS if x in allowed])))
            data = _one_module(draw, fmt, written, kinds, device_first=True)
        else:
            pairs = [p for p in _ERA_PAIRS[fmt] if p[1] in allowed] or [(x, x) for x in allowed]
            pair = draw(st.sampled_from(pairs))
            written, read = era_tuple(pair[0]), era_tuple(pair[1])
            data = _build(draw, fmt, written, kinds)
        return _edge(f"era.{rule}.{_label(written)}-as-{_label(read)}", data, fmt, read)
    e = era_tuple(draw(st.sampled_from(allowed)))
    if which == "tree":
        if fmt == "legacy" and e < (0, 7):
            e = era_tuple(draw(st.sampled_from([x for x in allowed if era_tuple(x) >= (0, 7)] or ["0.8"])))
        return _tree_edge(draw, fmt, e, kinds)
    if which == "fill":
        if fmt == "legacy" and "0.6" in allowed and draw(st.booleans()):  # no import tree: the payload ends the body
            e = (0, 6)
        return _fill_edge(draw, fmt, e, kinds)
    if which == "tail":
        tail = draw(st.binary(min_size=1, max_size=9))
        if fmt == "legacy" and "0.6" in allowed and "metadata_module" in _kinds(fmt, kinds) and draw(st.booleans()):
            # the last kind ends a 0.6 body; the size prefix leaves its last bytes after the blob
            data = _blob.build(_blob.Module.lib(_blob.Module("metadata_module", _least_payload(
                draw, "metadata_module", fmt, (0, 6)))), format=fmt, era=(0, 6))
            cut = draw(st.integers(1, 4))
            return _edge("tail.kind", _set(data, 0, (len(data) - 8 - cut).to_bytes(8, "little")), fmt, (0, 6))
        return _edge("tail", _build(draw, fmt, e, kinds) + tail, fmt, e)
    data = _build(draw, fmt, e, kinds)
    structs, root = _ROOTS[fmt]
    tree, spans = trace(structs, root, data, e)
    body = tree["body"]
    if which == "length":
        room = rooms(data, spans)
        # the size prefix, a kind's length, another length, a count: each read at its own place in a reader
        groups = [[s for s in spans if s.role in ("count", "length") and _group(s) == g] for g in range(4)]
        span = draw(st.sampled_from(_by_place(draw(st.sampled_from([g for g in groups if g])), body)))
        n = int.from_bytes(data[span.offset:span.offset + 8], "little")
        rem = room(span)
        value = draw(st.sampled_from([n + (1 << 32)] * 3 + [rem + 1, rem // 8 + 1, rem // 4 + 1, *length_lies(n)]))
        return _edge("length", _set(data, span.offset, value.to_bytes(8, "little")), fmt, e, place(span.path, body))
    places = [s for s in spans if s.role == "value" and _typed(s.field) in WIDTH
              and (set(s.field) & {"const", "constraint", "equals", "derive"})]
    assume(bool(places))
    span = draw(st.sampled_from(_by_place(places, body)))
    type_name = _typed(span.field)
    good = unpack(type_name, data, span.offset)
    lo, hi = span.field.get("bounds", (None, None))
    high = [good + (1 << (8 * WIDTH[type_name] // 2))] if WIDTH[type_name] >= 4 else []
    value = draw(st.sampled_from(high * 2 + edge_values(type_name, good, lo, hi) + list(range(9))))
    return _edge("value", _set(data, span.offset, raw(type_name, value)), fmt, e, place(span.path, body))


def _typed(f: dict) -> str:
    return str(f.get("elem") if f["kind"] == "vec" else f.get("type"))


def _group(s: Any) -> int:
    if s.path == ("body", "#count"):
        return 0
    if s.path[-2:] == ("kind", "#count"):
        return 1
    return 2 if s.role == "length" else 3


def _set(data: bytes, offset: int, raw: bytes) -> bytes:
    return data[:offset] + raw + data[offset + len(raw):]


def _by_place(spans: list, body: dict) -> list:
    """One span per place (a field of a struct or of a module kind's payload), so that every
    field is drawn as often whatever its number of occurrences."""
    first: dict[str, Any] = defaultdict(list)
    for s in spans:
        first[place(s.path, body)].append(s)
    return [v[0] for _, v in sorted(first.items())] + [v[-1] for _, v in sorted(first.items()) if len(v) > 1]


def _tree_edge(draw: Any, fmt: str, e: tuple[int, ...], kinds: tuple[str, ...] | None) -> Edge:
    edit = draw(st.sampled_from(_TREE_EDITS))
    if edit == "flat":  # modules that nothing imports, a row each: up to 9 rows of 0
        pool = [k for k in _kinds(fmt, kinds) if k in _blob.known_kinds(fmt)]
        kind = "metadata_module" if "metadata_module" in pool else draw(st.sampled_from(pool))
        payload = _least_payload(draw, kind, fmt, e)
        lib = _blob.Module.lib()
        mods = [lib] + [_blob.Module(kind, payload) for _ in range(draw(st.sampled_from((0, 1, 7, 8, 9))))]
        return _edge("tree.flat", _blob.build(lib, format=fmt, era=e, order=mods), fmt, e)
    data = _build(draw, fmt, e, kinds)
    structs, root = _ROOTS[fmt]
    node = tree_of(trace(structs, root, data, e)[0], fmt)
    if node is None:  # no import tree (the legacy layout before 0.7): nothing to reshape
        assume(False)
        raise AssertionError("unreachable: assume(False) stops the draw")
    rp, ch = list(node["row_ptr"]), list(node["child_indices"])
    n = len(rp) - 1
    if edit == "rows-short":  # the last module loses its row and every edge to it (else a child names no row)
        rows = [[x for x in ch[rp[i]:rp[i + 1]] if x < n - 1] for i in range(n - 1)]
        rp, ch = [0], []
        for row in rows:
            ch += row
            rp.append(len(ch))
    elif edit == "rows-long":
        rp.append(rp[-1])
    elif edit in ("one-row", "no-row"):  # and no module, so that the rows fit the modules
        out = set_import_tree(data, fmt, e, [0] if edit == "one-row" else [], [], keep=0)
        return _edge(f"tree.{edit}", out or b"", fmt, e)  # the tree exists (node above): never b""
    elif edit == "middle-row-past":
        assume(n >= 2)
        rp[draw(st.integers(1, n - 1))] = len(ch) + draw(st.integers(1, 2))
    elif edit == "last-row-past":
        rp[-1] += draw(st.integers(1, 2))
    elif edit == "children-uncovered":
        ch += [draw(st.integers(0, max(n - 1, 0))) for _ in range(draw(st.integers(1, 2)))]
    elif edit in ("child-at-bound", "child-high"):
        assume(bool(ch))
        j = draw(st.integers(0, len(ch) - 1))
        ch[j] = draw(st.sampled_from((n, n - 1, n + 1))) if edit == "child-at-bound" else ch[j] + (1 << 32)
    elif edit == "row-high":
        rp[draw(st.integers(0, n))] += 1 << 32
    else:  # no-edges: every module a root of its own (unreachable from the first)
        rp, ch = [0] * (n + 1), []
    out = set_import_tree(data, fmt, e, rp, ch)
    return _edge(f"tree.{edit}", out or b"", fmt, e)  # the tree exists (node above): never b""


def _least_payload(draw: Any, kind: str, fmt: str, e: tuple[int, ...]) -> _blob.Payload:
    struct = _blob.known_kinds(fmt)[kind]
    tree = value_tree(_Least(draw), _PAYLOAD_STRUCTS, struct, e)
    return _blob.parse_payload(kind, build(_PAYLOAD_STRUCTS, struct, tree, e), format=fmt, era=e)


def _fill_edge(draw: Any, fmt: str, e: tuple[int, ...], kinds: tuple[str, ...] | None) -> Edge:
    """One module whose lists hold least-size elements; in the legacy layout at 0.6 (no import
    tree) its payload ends the body, elsewhere the payload's own length bounds it."""
    data = _one_module(draw, fmt, e, kinds)
    kind = _blob.parse(data, format=fmt, era=e).modules()[-1].kind
    return _edge(f"fill.{kind if kind.isidentifier() else 'other'}", data, fmt, e)


def _one_module(draw: Any, fmt: str, e: tuple[int, ...], kinds: tuple[str, ...] | None,
                device_first: bool = False) -> bytes:
    """A blob of the ``_lib`` and one module of least-size elements: a module with an empty payload
    (its kind then ends a 0.6 body) or a device module (function tables) at both ends of the draw."""
    known = _blob.known_kinds(fmt)
    pool = [k for k in _kinds(fmt, kinds) if k in known]
    device = [k for k in pool if known[k] == "device_binary"]
    empty = [k for k in pool if known[k] == "empty_payload"]
    ordered = (device + empty if device_first else empty + device) + [k for k in pool if k not in device + empty]
    kind = draw(st.sampled_from(ordered[:1] + ordered[1:][::-1]))
    payload = _least_payload(draw, kind, fmt, e)
    return _blob.build(_blob.Module.lib(_blob.Module(kind, payload)), format=fmt, era=e)


__all__ = ["EDGE_KINDS", "edge_blob_bytes"]
