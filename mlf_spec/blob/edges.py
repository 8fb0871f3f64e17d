"""Blobs drawn at the edges of the spec's rules (re-exported by :mod:`mlf_spec.strategies`).

A valid blob and a refused one are often one value apart, and that value is where readers
differ: a length that is right in its low 32 bits, a count whose least-size elements fill
exactly what remains, an import tree one row short, two ``_lib`` modules at the first era that
refuses them, a 0.21 payload read as 0.20. :func:`edge_blob_bytes` draws such inputs from the
traced fields of a drawn blob (the spec engine's spans: no layout is restated here) with the
values the conformance vectors also use (:mod:`mlf_spec.edge_values`). Which side of the rule
an edge lands on is left to the reference's reading: generated cases compare a reader with it.
The tvm-ffi layout has edges of its own (:data:`FFI_EDGE_KINDS`): every payload there has a
length, so a payload's grammar can end before its length does, a count can fill its payload
exactly, and a kind that is not quite a known name is still read (as opaque bytes).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from hypothesis import assume
from hypothesis import strategies as st

from mlf_spec._internal.drawn import Data, Edge
from mlf_spec._internal.ir import Field
from mlf_spec._internal.spec_engine import Builder, build, trace
from mlf_spec._internal.spec_strategies import Drawn, bounds, value_tree
from mlf_spec.edge_values import WIDTH, edge_values, length_lies, raw, rooms, unpack

from . import codec as _blob
from .strategies import (
    BLOB_ERAS,
    PAYLOAD_STRUCTS,
    ROOTS,
    build_blob,
    era_label,
    era_tuple,
    kinds_of,
    place,
    rewrite_import_tree,
    set_import_tree,
    tree_of,
)

#: The edges :func:`edge_blob_bytes` draws, each with its weight (how many of 30 draws):
#: ``length`` a count or length prefix lying (right in its low half, one element or byte past
#: what remains, off by one, at the sign bit); ``value`` a checked integer at its edges;
#: ``tree`` the import tree reshaped (a row short or long, one row, a middle row past the
#: child indices, child indices after the last row, a child at the row count, no edge at all,
#: the ``_lib`` alone or beside up to 9 modules nothing imports); ``era`` a blob of one writer read as its neighbouring era (two ``_lib``
#: at 0.7 and 0.8, a 0.21 function table read as 0.20); ``fill`` a module whose lists hold
#: least-size elements that end the payload or the body; ``tail`` bytes after the blob (or
#: the last 0-4 bytes of the last kind left after the size prefix's end: at 0 the kind ends the body exactly);
#: ``bound`` as in :data:`FFI_EDGE_KINDS`, at 0.6 (no import tree, no ``_lib``), where the one module's payload
#: ends the body (read as any other era, it becomes a ``fill`` edge).
EDGE_KINDS: dict[str, int] = {"length": 6, "value": 2, "tree": 9, "era": 5, "fill": 3, "bound": 3, "tail": 2}
#: The edges of the tvm-ffi layout, with their weights: those of :data:`EDGE_KINDS` and ``kind`` a
#: module kind one byte away from a name readers dispatch on (``_lib`` or a kind of the payload
#: switch: one byte short, and then the byte after it in the blob is the one cut off; one byte
#: long; its last byte changed; its case swapped; ``c`` cut to the empty kind); ``bound`` one
#: module, the last of the blob, whose payload holds one list of least-size elements (the others
#: empty), its count as built (the elements fill the payload but for a few bytes), one element
#: past what remains, wrapping to the right byte size in 64 bits, or right in its low half;
#: ``inner`` bytes after a payload's grammar inside its stated length (or after the body inside the
#: size prefix), every length around it grown to hold them.
#: (Hypothesis favours the first entries of a list it samples: the edges the ffi layout needs most
#: come first.)
FFI_EDGE_KINDS: dict[str, int] = {"bound": 8, "kind": 3, "tree": 7, "length": 7, "inner": 3, "value": 3, "fill": 1,
                                  "tail": 2, "era": 1}
_WEIGHTS = {"legacy": EDGE_KINDS, "ffi": FFI_EDGE_KINDS}

#: (written by, read as): neighbouring eras whose rules differ
_ERA_PAIRS = {"legacy": (("0.8", "0.14"), ("0.14", "0.8"), ("0.6", "0.7"), ("0.7", "0.6"), ("0.7", "0.8")),
              "ffi": (("0.23", "0.24"), ("0.24", "0.23"))}
#: eras that read two ``_lib`` modules (0.7), the first that refuses them (0.8) and a later one; eras that
#: write and read function tables of 3 fields (0.20) and of 4 (0.21)
_LIB_ERAS, _TABLE_ERAS = ("0.7", "0.8", "0.14"), ("0.20", "0.21")
#: the eras a blob with two ``_lib`` is read as, the bound (0.8) drawn most
_LIB_BOUND = ("0.8", "0.7", "0.8", "0.14")
_TREE_EDITS = ("rows-short", "one-row", "children-uncovered", "rows-long", "child-at-bound", "flat", "middle-row-past",
               "child-high", "row-high", "no-edges")
#: the tvm-ffi layout's tree edits: those above and the ``_lib`` alone with many child indices after its
#: empty row (never read, so valid), more 8-byte indices than the module entries after them have bytes
_FFI_TREE_EDITS = ("child-at-bound", "children-many", "one-row", "children-many", *_TREE_EDITS)
#: the legacy layout's: those above, one row and the flat trees (up to 10 rows, no child) drawn twice as often
_LEGACY_TREE_EDITS = ("one-row", "flat", *_TREE_EDITS)
#: elements of the one long list of a ``bound`` edge: more than the bytes after the list in each
#: payload grammar's least form (the 24 after a function's ``arg_types``, 16 after its tags, ...), so
#: that counting them at one byte more each claims more than remains
_LONG = (33, 40)
#: the places of a ``length`` edge, by group (:func:`_group`): a string's length, a kind's, the size prefix, a
#: payload's length, a count; a string's length, a kind's and a count twice as often as the others
_LENGTH_GROUPS = (3, 1, 0, 2, 4, 3, 1, 4)


class _Least(Drawn):
    """Choices for a payload of least-size elements: empty texts, and lists of one of three
    shapes drawn once per payload (many elements in the outer lists and none inside them,
    one outside and many inside, or a few sizes anywhere), so that a count's elements fill
    what remains with the least bytes each."""

    def __init__(self, draw: Any, inside: bool = False) -> None:
        super().__init__(draw)
        self.depth = 0
        self.shape = draw(st.sampled_from(("many-inside", "mixed") if inside else ("many-outside", "many-inside", "mixed")))

    def text(self, f: Field, era: tuple[int, ...]) -> str | bytes:
        return "" if f.get("encoding") or f.get("strategy", {}).get("alphabet") == "text" else b""

    def rest(self, f: Field, ns: dict) -> bytes:
        return b""

    def elements(self, f: Field, make: Any, ns: dict, limit: int) -> list:
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
    return Edge(kind, Data(data), era_label(e), fmt, where)


@st.composite
def edge_blob_bytes(draw: Any, format: str | None = None, kinds: tuple[str, ...] | None = None,  # noqa: A002
                    eras: tuple[str, ...] | None = None) -> Edge:
    """A blob at the edge of one rule (:data:`EDGE_KINDS`, :data:`FFI_EDGE_KINDS` for the tvm-ffi
    layout), of ``format`` (default: either
    layout), with modules of ``kinds`` only (default: every kind), read as one of ``eras``
    (names of :data:`BLOB_ERAS`): an :class:`Edge`; read it with ``blob.parse(e.data,
    format=e.format, era=e.era)``, which decides whether it is valid."""
    fmt = format or draw(st.sampled_from(_blob.FORMATS))
    which = draw(st.sampled_from([k for k, w in _WEIGHTS[fmt].items() for _ in range(w)]))
    allowed = _eras(fmt, eras)
    if which == "era":
        rule = draw(st.sampled_from(("libs", "neighbours", "libs", "tables"))) if fmt == "legacy" else "neighbours"
        written: tuple[int, ...]
        if rule == "libs" and set(_LIB_ERAS) & set(allowed):  # two _lib, as 0.7 writes them
            written, read = (0, 7), era_tuple(draw(st.sampled_from([x for x in _LIB_BOUND if x in allowed])))
            data = build_blob(draw, fmt, written, kinds)
            data = rewrite_import_tree(data, fmt, written, "duplicate_lib_legacy") or data
        elif rule == "tables" and set(_TABLE_ERAS) & set(allowed):  # one module with a function table
            written = era_tuple(draw(st.sampled_from(_TABLE_ERAS)))
            read = era_tuple(draw(st.sampled_from([x for x in _TABLE_ERAS if x in allowed])))
            data = _one_module(draw, fmt, written, kinds, device_first=True)
        else:
            pairs = [p for p in _ERA_PAIRS[fmt] if p[1] in allowed] or [(x, x) for x in allowed]
            pair = draw(st.sampled_from(pairs))
            written, read = era_tuple(pair[0]), era_tuple(pair[1])
            data = build_blob(draw, fmt, written, kinds)
        return _edge(f"era.{rule}.{era_label(written)}-as-{era_label(read)}", data, fmt, read)
    e = era_tuple(draw(st.sampled_from(allowed)))
    if which == "tree":
        if fmt == "legacy" and e < (0, 7):
            e = era_tuple(draw(st.sampled_from([x for x in allowed if era_tuple(x) >= (0, 7)] or ["0.8"])))
        return _tree_edge(draw, fmt, e, kinds)
    if which == "fill":
        if fmt == "legacy" and "0.6" in allowed and draw(st.integers(0, 2)) < 2:  # no import tree: the payload ends the body
            e = (0, 6)
        return _fill_edge(draw, fmt, e, kinds)
    if which == "kind":
        return _kind_edge(draw, fmt, e, kinds)
    if which == "bound" and (fmt == "ffi" or "0.6" in allowed):
        return _bound_edge(draw, fmt, e, kinds)
    if which == "bound":
        return _fill_edge(draw, fmt, e, kinds)
    if which == "inner":
        return _inner_edge(draw, fmt, e, kinds)
    if which == "tail":
        tail = draw(st.binary(min_size=1, max_size=9))
        if fmt == "legacy" and "0.6" in allowed and "metadata_module" in kinds_of(fmt, kinds) and draw(st.booleans()):
            # the last kind ends a 0.6 body; the size prefix leaves its last 0-4 bytes after the blob
            data = _blob.build(_blob.Module.lib(_blob.Module("metadata_module", _least_payload(
                draw, "metadata_module", fmt, (0, 6)))), format=fmt, era=(0, 6))
            cut = draw(st.integers(0, 4))  # 0: the kind ends the body exactly
            return _edge("tail.kind", _set(data, 0, (len(data) - 8 - cut).to_bytes(8, "little")), fmt, (0, 6))
        return _edge("tail", build_blob(draw, fmt, e, kinds) + tail, fmt, e)
    data = build_blob(draw, fmt, e, kinds)
    structs, root = ROOTS[fmt]
    tree, spans = trace(structs, root, data, e)
    body = tree["body"]
    if which == "length":
        room = rooms(data, spans)
        # the size prefix, a kind's length, a payload's length (tvm-ffi), another length, a count: each
        # read at its own place in a reader
        # a string's length and a count (the most places, in every payload grammar) drawn twice as often as the others
        groups = [[s for s in spans if s.role in ("count", "length") and _group(s) == g] for g in _LENGTH_GROUPS]
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


def _typed(f: Field) -> str:
    return str(f.get("elem") if f["kind"] == "vec" else f.get("type"))


def _group(s: Any) -> int:
    if s.path == ("body", "#count"):
        return 0
    if s.path[-2:] == ("kind", "#count"):
        return 1
    if s.role == "length" and s.field.get("sized"):
        return 2
    return 3 if s.role == "length" else 4


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
    edit = draw(st.sampled_from(_FFI_TREE_EDITS if fmt == "ffi" else _LEGACY_TREE_EDITS))
    if edit == "children-many":  # the _lib alone (12 bytes of entry), 13 or more child indices after its row
        alone = _blob.build(_blob.Module.lib(), format=fmt, era=e)
        k = draw(st.sampled_from((13, 17, 33)))
        out = set_import_tree(alone, fmt, e, [0, 0], [0] * k)
        return _edge(f"tree.{edit}", out or b"", fmt, e)  # the ffi layout always has a tree: never b""
    if edit == "flat":  # modules that nothing imports, a row each: up to 9 rows of 0
        pool = [k for k in kinds_of(fmt, kinds) if k in _blob.known_kinds(fmt)]
        kind = "metadata_module" if "metadata_module" in pool else draw(st.sampled_from(pool))
        payload = _least_payload(draw, kind, fmt, e)
        lib = _blob.Module.lib()
        mods = [lib] + [_blob.Module(kind, payload) for _ in range(draw(st.sampled_from((0, 1, 7, 8, 9, 8, 9))))]
        return _edge("tree.flat", _blob.build(lib, format=fmt, era=e, order=mods), fmt, e)
    data = build_blob(draw, fmt, e, kinds)
    structs, root = ROOTS[fmt]
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
        ch[j] = draw(st.sampled_from((n, n, n - 1, n + 1) if fmt == "ffi" else (n, n - 1, n + 1))) \
            if edit == "child-at-bound" else ch[j] + (1 << 32)
    elif edit == "row-high":
        rp[draw(st.integers(0, n))] += 1 << 32
    else:  # no-edges: every module a root of its own (unreachable from the first)
        rp, ch = [0] * (n + 1), []
    out = set_import_tree(data, fmt, e, rp, ch)
    return _edge(f"tree.{edit}", out or b"", fmt, e)  # the tree exists (node above): never b""


def _least_payload(draw: Any, kind: str, fmt: str, e: tuple[int, ...], inside: bool = False) -> _blob.Payload:
    struct = _blob.known_kinds(fmt)[kind]
    tree = value_tree(_Least(draw, inside), PAYLOAD_STRUCTS, struct, e)
    return _blob.parse_payload(kind, build(PAYLOAD_STRUCTS, struct, tree, e), format=fmt, era=e)


def _fill_edge(draw: Any, fmt: str, e: tuple[int, ...], kinds: tuple[str, ...] | None) -> Edge:
    """One module whose lists hold least-size elements; in the legacy layout at 0.6 (no import
    tree) its payload ends the body, elsewhere the payload's own length bounds it."""
    data = _one_module(draw, fmt, e, kinds)
    kind = _blob.parse(data, format=fmt, era=e).modules()[-1].kind
    return _edge(f"fill.{kind if kind.isidentifier() else 'other'}", data, fmt, e)


def _one_module(draw: Any, fmt: str, e: tuple[int, ...], kinds: tuple[str, ...] | None,
                device_first: bool = False) -> bytes:
    """A blob of the ``_lib`` and one module of least-size elements: a module with an empty payload
    (its kind then ends a 0.6 body) or a device module (function tables) at both ends of the draw;
    with ``device_first``, a device module if ``kinds`` has one, its inner lists (a function's
    arguments and tags) not empty, so that a table of the wrong era's shape is misread."""
    known = _blob.known_kinds(fmt)
    pool = [k for k in kinds_of(fmt, kinds) if k in known]
    device = [k for k in pool if known[k] == "device_binary"]
    empty = [k for k in pool if known[k] == "empty_payload"]
    # a grammar, then a kind of it: the seven device-binary kinds share one grammar
    grammars = list(dict.fromkeys(known[k] for k in (device + empty if device_first else empty + device) + pool))
    grammar = "device_binary" if device_first and device else draw(st.sampled_from(grammars))
    kind = draw(st.sampled_from([k for k in pool if known[k] == grammar]))
    payload = _least_payload(draw, kind, fmt, e, inside=device_first and bool(device))
    return _blob.build(_blob.Module.lib(_blob.Module(kind, payload)), format=fmt, era=e)


def _structs_of(name: str) -> list[str]:
    """``name`` and the payload structs its fields hold, at any depth."""
    out, todo = [], [name]
    while todo:
        n = todo.pop()
        if n in out or n not in PAYLOAD_STRUCTS:
            continue
        out.append(n)
        todo += [str(f.get(k)) for f in PAYLOAD_STRUCTS[n]["fields"] for k in ("type", "elem", "key", "value", "struct")
                 if f.get(k)]
    return out


def _lists(name: str) -> int:
    """How many lists (vec, map) the grammar ``name`` has, at any depth (each struct counted once)."""
    return sum(f["kind"] in ("vec", "map") for n in _structs_of(name) for f in PAYLOAD_STRUCTS[n]["fields"])


def _fixed_lists(name: str) -> bool:
    return any(f["kind"] == "vec" and _fixed(str(f.get("elem"))) for n in _structs_of(name)
               for f in PAYLOAD_STRUCTS[n]["fields"])


def _has_lists(name: str) -> bool:
    return _lists(name) > 0


def _list_kind(draw: Any, fmt: str, kinds: tuple[str, ...] | None, fixed: bool = False) -> str:
    """A module kind of ``kinds`` whose grammar has lists (with ``fixed``, lists of fixed-size
    elements if any grammar has them), each grammar drawn as often as it has lists (the seven
    device-binary kinds count as one grammar)."""
    known = _blob.known_kinds(fmt)
    pool = [k for k in kinds_of(fmt, kinds) if k in known and _has_lists(known[k])]
    assume(bool(pool))
    if fixed:
        pool = [k for k in pool if _fixed_lists(known[k])] or pool
    structs = sorted({known[k] for k in pool}, key=lambda n: (-_lists(n), n))
    struct = draw(st.sampled_from([n for n in structs for _ in range(_lists(n))]))
    return draw(st.sampled_from([k for k in pool if known[k] == struct]))


def _near_names(name: str) -> list[tuple[str, str]]:
    """(how, kind) for the kinds one byte away from ``name``: cut short, one byte long (three
    ways), its last byte changed up and down, its case swapped."""
    last = name[-1]
    return [("short", name[:-1]), ("long", name + "_"), ("long", name + "x"), ("long", name + last),
            ("changed", name[:-1] + chr(ord(last) + 1)), ("changed", name[:-1] + chr(ord(last) - 1)),
            ("case", name.swapcase())]


def _kind_edge(draw: Any, fmt: str, e: tuple[int, ...], kinds: tuple[str, ...] | None) -> Edge:
    """The ``_lib`` and the modules whose kinds are one byte away from names readers dispatch on
    (``_lib`` and a kind of each of 1-3 grammars: :func:`_near_names`), in a drawn order (and, in half of them, a
    module of a drawn kind after them, which a reader that takes a near name for ``_lib`` or for a
    grammar reads from the wrong place). Their payloads are opaque bytes; where a name is cut
    short, its payload's length begins with the byte cut off, so that a reader comparing a fixed
    width sees the whole name. One in three is a single module of the empty kind instead."""
    known = _blob.known_kinds(fmt)
    grammars = sorted({known[k] for k in kinds_of(fmt, kinds) if k in known})
    if draw(st.integers(0, 2)) == 0:
        near = [("", draw(st.binary(max_size=24)))]
        how = "empty"
    else:
        names = [_blob.LIB]  # and up to three grammars, a kind of each
        for g in draw(st.lists(st.sampled_from(grammars), min_size=1, max_size=3, unique=True)) if grammars else []:
            names.append(draw(st.sampled_from([k for k in kinds_of(fmt, kinds) if known.get(k) == g])))
        near = []
        for name in dict.fromkeys(names):
            for way, kind in _near_names(name):
                if kind and kind not in known and kind not in (_blob.LIB, _blob.IMPORT_TREE):
                    size = ord(name[-1]) if way == "short" else draw(st.integers(0, 24))
                    near.append((kind, draw(st.binary(min_size=size, max_size=size))))
        near = draw(st.permutations(list(dict(near).items())))
        how = "near"
    after = []
    if draw(st.booleans()):
        k = draw(st.sampled_from(kinds_of(fmt, kinds)))
        after = [_blob.Module(k, _least_payload(draw, k, fmt, e) if k in known else _opaque(fmt, e, b"\x00" * 8))]
    root = _blob.Module.lib()
    placeholders = [_blob.Module("x", _opaque(fmt, e, b"")) for _ in near]
    data = _blob.build(root, format=fmt, era=e, order=[root, *placeholders, *after])
    structs, top = ROOTS[fmt]
    tree = trace(structs, top, data, e)[0]
    for i, (kind, payload) in enumerate(near, 1):
        tree["body"]["modules"][i] = {"kind": kind, "payload": {"data": payload}}
    return _edge(f"kind.{how}", Builder(structs, e).build(top, tree), fmt, e)


def _opaque(fmt: str, e: tuple[int, ...], data: bytes) -> _blob.Payload:
    return _blob.parse_payload("x", data, format=fmt, era=e)


class _OneLong(_Least):
    """Choices for a payload of least size whose ``target``-th list (in the order the grammar reads
    them) holds ``k`` elements; the other lists hold none, except that a list of records that
    hold lists holds one, so that the lists inside it exist."""

    def __init__(self, draw: Any, target: int, k: int) -> None:
        super().__init__(draw)
        self.target, self.k = target, k
        self.fixed: list[bool] = []  # per list met: whether its elements have a fixed size

    def integer(self, f: Field, pin: tuple[int | None, int | None] | None = None, each: bool = False) -> int:
        return bounds(f, pin)[0]  # no draw: the values of the least-size elements do not matter, their number does

    def elements(self, f: Field, make: Any, ns: dict, limit: int) -> list:
        i = len(self.fixed)
        held = f.get("elem") or f.get("value")
        self.fixed.append(f["kind"] == "vec" and _fixed(str(held)))
        n = self.k if i == self.target else int(isinstance(held, str) and _has_lists(held))
        return [make() for _ in range(n)]


def _fixed(type_name: str) -> bool:
    """Whether a value of ``type_name`` has one size (an integer, or a struct of integers)."""
    if type_name in WIDTH:
        return True
    fields = PAYLOAD_STRUCTS.get(type_name, {}).get("fields")
    return bool(fields) and all(f["kind"] == "scalar" and f.get("type") in WIDTH for f in fields)


def _long_list(draw: Any, fmt: str, e: tuple[int, ...], kinds: tuple[str, ...] | None,
               fixed: bool = False) -> tuple[_blob.Module, int]:
    """A module of a drawn grammar with lists whose payload holds one long list of least-size
    elements (drawn among its lists; with ``fixed``, among its lists of fixed-size elements if it
    has any: there a reader multiplies the count by the size instead of reading each element
    with its own bound), and that list's length."""
    kind = _list_kind(draw, fmt, kinds, fixed)
    struct = _blob.known_kinds(fmt)[kind]
    counting = _OneLong(draw, -1, 0)
    value_tree(counting, PAYLOAD_STRUCTS, struct, e)
    lists = [i for i, x in enumerate(counting.fixed) if x or not fixed] or list(range(len(counting.fixed)))
    first = next((j for j, i in enumerate(lists) if counting.fixed[i]), 0)
    lists = lists[first:] + lists[:first]  # from the first list of fixed-size elements on (drawn most)
    assume(bool(lists))  # a grammar whose lists all come at later eras has none here
    target, k = draw(st.sampled_from(lists)), draw(st.sampled_from(_LONG))
    tree = value_tree(_OneLong(draw, target, k), PAYLOAD_STRUCTS, struct, e)
    return _blob.Module(kind, _blob.parse_payload(kind, build(PAYLOAD_STRUCTS, struct, tree, e), format=fmt,
                                                  era=e)), k


def _bound_edge(draw: Any, fmt: str, e: tuple[int, ...], kinds: tuple[str, ...] | None) -> Edge:
    """The ``_lib`` and 1-3 modules whose payloads each hold one long list of least-size elements
    (so that each list's elements fill its payload but for a few bytes); the last module ends the
    blob, and its list's count is as built, one element past what remains, a count whose byte
    size wraps in 64 bits to the built one, or the count plus 2^32. In the legacy layout, one module
    at 0.6: its payload (no length of its own) ends the body."""
    how = draw(st.sampled_from(("fill", "fill", "past", "past", "wrap", "high")))
    if fmt == "legacy":  # at 0.6 (no import tree, no _lib): one module, its payload ends the body
        e = (0, 6)
        drawn = [_long_list(draw, fmt, e, kinds, fixed=how in ("past", "wrap"))]
        data = _blob.build(_blob.Module.lib(drawn[0][0]), format=fmt, era=e)
    else:
        drawn = [_long_list(draw, fmt, e, kinds) for _ in range(draw(st.integers(0, 2)))]
        drawn.append(_long_list(draw, fmt, e, kinds, fixed=how in ("past", "wrap")))
        lib = _blob.Module.lib(*[m for m, _ in drawn])
        data = _blob.build(lib, format=fmt, era=e, order=[lib, *[m for m, _ in drawn]])
    structs, root = ROOTS[fmt]
    tree, spans = trace(structs, root, data, e)
    body, k = tree["body"], drawn[-1][1]
    key = "modules" if "modules" in body else "entries"  # the tvm-ffi layout's, the legacy layout's
    last = ("body", key, len(body[key]) - 1)
    mine = [s for s in spans if s.path[:3] == last and len(s.path) > 4]
    # the long list's own count (a list whose count is another field, or that drew fewer, has none)
    counts = [s for s in mine if s.role == "count" and int.from_bytes(data[s.offset:s.offset + 8], "little") == k]
    assume(bool(counts))
    span, n = counts[0], k
    starts = [min((s.offset for s in mine if s.path[:len(span.path)] == (*span.path[:-1], i)), default=None)
              for i in (0, 1)]
    first, second = starts
    size = second - first if first is not None and second is not None else 0
    if how == "past" and size:
        n = rooms(data, spans)(span) // size + 1
    elif how == "wrap" and size and not size & (size - 1):
        n += (1 << 64) // size
    elif how == "high":
        n += 1 << 32
    else:
        how = "fill"
    return _edge(f"bound.{how}", _set(data, span.offset, n.to_bytes(8, "little")), fmt, e, place(span.path, body))


def _inner_edge(draw: Any, fmt: str, e: tuple[int, ...], kinds: tuple[str, ...] | None) -> Edge:
    """1-9 bytes after the end of a payload's grammar inside its stated length (or after the
    body's last entry inside the size prefix), the length and every length around it grown by as
    many."""
    data = build_blob(draw, fmt, e, kinds)
    structs, root = ROOTS[fmt]
    tree, spans = trace(structs, root, data, e)
    sized = [s for s in spans if s.role == "length" and s.field.get("sized")]
    payloads = [s for s in sized if s.path != ("body", "#count")]
    # a payload in 3 draws of 4 (hypothesis favours the first place, the body)
    span = draw(st.sampled_from(_by_place(payloads, tree["body"]) if payloads and draw(st.integers(0, 3)) else sized))
    extra = draw(st.binary(min_size=1, max_size=9))
    end = span.offset + 8 + int.from_bytes(data[span.offset:span.offset + 8], "little")
    out = data[:end] + extra + data[end:]
    for s in sized:  # the region itself and those holding it: their prefixes lie before the insertion
        if span.path[:len(s.path) - 1] == s.path[:-1]:
            grown = int.from_bytes(out[s.offset:s.offset + 8], "little") + len(extra)
            out = _set(out, s.offset, grown.to_bytes(8, "little"))
    return _edge("inner", out, fmt, e, place(span.path, tree["body"]))


__all__ = ["EDGE_KINDS", "FFI_EDGE_KINDS", "edge_blob_bytes"]
