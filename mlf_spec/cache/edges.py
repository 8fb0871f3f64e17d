"""Tensor caches drawn at the edges of the cache's rules (re-exported by :mod:`mlf_spec.strategies`).

A valid cache and a refused one are often one value apart, and that value is where readers
differ: an extent of -1 beside a zero, extents whose product wraps around 2^64 to the nbytes
the record gives, nbytes one byte off numel x stored bits / 8 under the record's encoding,
a record that ends one byte past its shard, a shard file one byte short, a dtype spelling
one step past the table (bits 0 or 256, lanes 0 or 32768, a near float8 name), a dataPath
that climbs out and back in, an integer past int64, a key given twice, NaN in the metadata,
a byte order mark. :func:`edge_caches` draws such a folder from a drawn valid cache: its
tensors (drawn dtypes, shapes, encodings) are laid out as the writer lays them out, then one
traced field of the index (a shard's or tensor's key, an extent, the index text) is moved
one step past a rule of :data:`mlf_spec.cache.bounds.RULES`, with the values the boundary
vectors also use. Which side of the rule an edge lands on is left to the reference's
reading: generated cases compare a reader with it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from . import bounds
from .index import INT64_MAX

#: The edges :func:`edge_caches` draws, each with its weight (how many of 44 draws):
#: ``value`` an integer key (a shard's or tensor's nbytes, a byteOffset, an extent) at its
#: edges (one off, -1, 2^63 - 1, 2^63, 2^64 + v, v + 2^32); ``type`` a key of another JSON type
#: (the same number as a float, a string, null, true, a list); ``key`` a required key removed,
#: given twice (the last value counts), spelled with an escape, or an unknown key added;
#: ``dtype`` one record's spelling of the table or one step past it (the empty string, a near
#: handle, bits 0 and 256, lanes 0 and 65536, digits after the lanes, prefixes of the kinds, case),
#: nbytes following, the other records at spellings the version's loaders read (``x1``, handle,
#: bfloat32 under f32-to-bf16, float6/float4, leading zeros, the old float8 names); ``shape`` negative
#: extents, a zero beside huge ones, products that wrap around 2^64 (and 2^128) to the nbytes
#: given; ``size`` nbytes one off under the record's encoding, a record ending at its shard's
#: end or one byte past it; ``shard`` the shard file one byte short or long, missing, its
#: format or md5sum changed; ``path`` a dataPath form (``./``, a sub-folder, ``..`` out and back
#: in, absolute, NUL, a lone surrogate, a trailing ``/``, a folder); ``text`` the index text (a byte order mark,
#: NaN and Infinity, 4,300 and 4,301 digits, surrogate escapes, bytes after the value, not
#: UTF-8); ``index`` the index names (both present, one a folder, none).
EDGE_KINDS: dict[str, int] = {"value": 3, "shape": 4, "size": 3, "dtype": 12, "type": 3, "key": 2, "shard": 2,
                              "path": 7, "text": 6, "index": 2}

_FORMATS = ("raw", "f32-to-bf16", "q4f16")
_DTYPES = tuple(bounds.TABLE_SPELLINGS) + ("float32x4", "int4x2", "boolx3")
_EDGE_INTS = (-1, 0, 1, INT64_MAX, 1 << 63, -(1 << 63), -(1 << 63) - 1, (1 << 64) - 1, 1 << 64, 1 << 32, 1 << 31)


@dataclass(frozen=True)
class CacheEdge:
    """A drawn cache folder at a rule's edge: ``files`` (name -> bytes), ``kind`` and the
    edit, ``where`` the key it moved, ``version`` the index version it is named for."""

    files: dict[str, bytes]
    kind: str
    where: str
    version: int

    def __repr__(self) -> str:
        size = sum(len(v) for v in self.files.values())
        return f"CacheEdge(kind={self.kind!r}, where={self.where!r}, version={self.version}, {size} bytes)"


def _pick(draw: Any, options: Any) -> Any:
    return draw(st.sampled_from(list(options)))


def stored(dtype: str, fmt: str, shape: list[int]) -> int | None:
    """Bytes a record of ``dtype`` and ``shape`` stores under ``fmt`` (None: not a dtype)."""
    from . import dtypes, rules

    dt = dtypes.parse(dtype)
    return None if dt is None else rules.expected_nbytes(dt, fmt, tuple(shape))


@st.composite
def _tensors(draw: Any) -> list[list[bounds.Tensor]]:
    names = draw(st.lists(st.text(alphabet="abcwxyz_0", min_size=1, max_size=3), min_size=1, max_size=4, unique=True))
    n_shards = _pick(draw, (1, 2)) if len(names) > 1 else 1
    shards: list[list[bounds.Tensor]] = [[] for _ in range(n_shards)]
    for k, name in enumerate(names):
        dtype = _pick(draw, ("float32", "int32", "float16", "int8") + _DTYPES)
        shape = draw(st.lists(st.integers(0, 4), max_size=3))
        fmt = _pick(draw, _FORMATS)
        nb = stored(dtype, fmt, shape)
        shards[k % n_shards].append((name, dtype, shape, fmt, nb if nb is not None else 0))
    return shards


def _relayout(shards: list[list[bounds.Tensor]], data_cap: int = 1 << 12) -> dict[str, bytes]:
    """The cache of ``shards``; a tensor claiming more than ``data_cap`` bytes (or a negative
    size) keeps its claim in the index but stores nothing."""
    kept = [[(n, d, s, f, nb if 0 <= nb <= data_cap else 0) for n, d, s, f, nb in sh] for sh in shards]
    files = bounds.layout(kept)
    doc = json.loads(files["tensor-cache.json"])
    for i, sh in enumerate(shards):
        for j, (_, _, _, _, nb) in enumerate(sh):
            doc["records"][i]["records"][j]["nbytes"] = nb
    files["tensor-cache.json"] = json.dumps(doc, indent=4).encode()
    return files


def _wrap(v: int) -> int:
    """``v`` as a reader computing in 64 bits sees it (as a signed int64 where it fits)."""
    v %= 1 << 64
    return v - (1 << 64) if v >= 1 << 63 else v


@st.composite
def edge_caches(draw: Any, versions: tuple[int, ...] = (2,), kinds: tuple[str, ...] | None = None) -> CacheEdge:
    """A cache folder at the edge of one rule, of one of ``kinds`` (default: every kind of
    :data:`EDGE_KINDS`, by weight), its index named for one of ``versions`` (1:
    ndarray-cache.json, 2: tensor-cache.json); the reference's reading decides its side."""
    unknown = sorted(set(kinds or ()) - set(EDGE_KINDS))
    if unknown:
        raise ValueError(f"unknown edge kinds {unknown}; known: {sorted(EDGE_KINDS)}")
    which = _pick(draw, [k for k, w in EDGE_KINDS.items() if kinds is None or k in kinds for _ in range(w)])
    version = _pick(draw, versions)
    shards = draw(_tensors())
    s = _pick(draw, range(len(shards)))
    k = _pick(draw, range(len(shards[s])))
    name, dtype, shape, fmt, nb = shards[s][k]
    where = ""
    files: dict[str, bytes]
    if which == "dtype":
        # the other records hold spellings some loader of the version reads: a reader that
        # refuses one of them (or sizes it otherwise) refuses the folder
        for i, sh in enumerate(shards):
            for j, t in enumerate(sh):
                if (i, j) != (s, k):
                    shards[i][j] = (t[0], *draw(_dtype_edge(t[3], version, read=True)))
        spelling, shape, fmt, nb = draw(_dtype_edge(fmt, version))
        shards[s][k] = (name, spelling, shape, fmt, nb)
        files, what = _relayout(shards), f"dtype.{_spelling_class(spelling)}"
        where = "dtype"
    elif which == "shape":
        edit = _pick(draw, ("bytes-2-64", "wrap-2-128", "minus-1-beside-zero", "zero-beside-max", "minus-1", "wrap-2-64",
                            "wrap-bytes", "max", "max-max-zero", "minus-1-twice", "zero-beside-minus-1"))
        new = {"minus-1": [-1] + shape, "minus-1-beside-zero": [-1, 0], "zero-beside-max": [0, INT64_MAX],
               "max-max-zero": [INT64_MAX, INT64_MAX, 0], "bytes-2-64": [1 << 62], "minus-1-twice": [-1, -1], "zero-beside-minus-1": [0, -1],
               "wrap-2-64": [1 << 32, 1 << 32], "wrap-2-128": [1 << 43, 1 << 43, 1 << 42],
               "wrap-bytes": [1 << 62, 4], "max": [INT64_MAX]}[edit]
        if edit in ("bytes-2-64", "wrap-bytes"):  # 2^62 extents of 4 bytes: the byte size is 2^64 (x 4)
            dtype, fmt = "float32", "raw"
        true = stored(dtype, fmt, [abs(e) for e in new])  # as a reader that drops the sign sizes it
        nb = _wrap(true) if true is not None else 0
        shards[s][k] = (name, dtype, new, fmt, nb)
        files, what, where = _relayout(shards), f"shape.{edit}", "shape"
    elif which == "size":
        edit = _pick(draw, ("nbytes-plus-1", "nbytes-minus-1", "nbytes-bytewise", "raw-label", "end-plus-1", "end-exact"))
        if edit.startswith("nbytes"):
            delta = {"nbytes-plus-1": 1, "nbytes-minus-1": -1}.get(edit)
            if delta is None:  # one byte per element, as readers before 0.21 store sub-byte types
                n = 1
                for e in shape:
                    n *= e
                delta = n - nb
            shards[s][k] = (name, dtype, shape, fmt, nb + delta)
            files = _relayout(shards)
        elif edit == "raw-label":
            shards[s][k] = (name, dtype, shape, "raw" if fmt != "raw" else "f32-to-bf16", nb)
            files = _relayout(shards)
        else:
            files = _relayout(shards)
            doc = json.loads(files["tensor-cache.json"])
            size = doc["records"][s]["nbytes"]
            rec = doc["records"][s]["records"][k]
            rec["byteOffset"] = size - rec["nbytes"] + (1 if edit == "end-plus-1" else 0)
            files["tensor-cache.json"] = json.dumps(doc, indent=4).encode()
        what, where = f"size.{edit}", "nbytes"
    else:
        files = _relayout(shards)
        what, where, files = _index_edge(draw, which, files, s, k)
    if version == 1 and "tensor-cache.json" in files and "ndarray-cache.json" not in files:
        files = {("ndarray-cache.json" if n == "tensor-cache.json" else n): v for n, v in files.items()}
    return CacheEdge(files, what, where, version)


#: the parts of a dtype spelling, each at its bound and one step past it
#: (hypothesis draws the first elements of a list more often: the parts a reader gets wrong come first)
_KIND_PARTS = ("float", "int", "uint", "bfloat", "bool", "handl", "handle", "complex", "Float", "floa")
_BITS_PARTS = ("9", "256", "255", "8a", "0", "1000000", "32", "8", "1", "4", "08", "16", "64", "", "-8", "+8")
_FIXED_PARTS = ("handle", "float4_e2m1fn", "e4m3_float8", "handlf", "float6_e2m3fn", "bool", "float8_e4m3fn",
                "float8_e5m2", "e5m2_float8", "float8_e8m0fnu", "float8_e4m3", "float8_e4m3f", "float6_e2m3f")
_LANES_PARTS = ("", "x0", "a4", "x65536", "x2a", "x9", "x1", "x2", "", "x01", "x65535", "x", "y4", "x-1", "x+2", "x3")
#: whole spellings one step past the table's grammar (generated/docs/cache_dtypes.md), the ones a
#: reader gets wrong first: a near handle or void, bits 0 and 256, lanes 0 and 65536,
#: digits after the lanes, prefixes of the kinds, then case, signs, spaces, names TVM never had
_PAST_SPELLINGS = ("handl", "handle0", "int0", "int256", "float32x0", "float32x2a", "float32x65536", "in", "floa",
                   "handle256", "handlex0", "voit", "b", "voidx2", "i", "uin", "bfloa", "boo", "Float32", "INT8", "Bool", "float6_e2m3", "float4_e2m1",
                   "float8_e6m2", "float8_e4m3f", "handlf", "int-8", "int+8", "float32x-1", "float32x+2", "float32 ",
                   " float32", "float32a4", "float8_e5m28", "float8_e5m2a", "complex64", "custom[129]8", "int1000000",
                   "float", "int", "uint", "bfloat", "x4")
#: spellings the loaders of an index version read that a reader gets wrong (one lane spelled x1,
#: handle's 64 bits and handle with bits or lanes, the void type (the empty string, void), 32 bits that are not float32, 6 and 4 bits, leading zeros, the largest bits)
_READ_SPELLINGS = ("float32x1", "handle", "", "handle1", "handle255", "handle9", "handle064", "handlex2", "void", "bfloat32", "float6_e2m3fn", "float4_e2m1fn", "int255", "float6_e3m2fnx3",
                   "float4_e2m1fnx3", "e4m3_float8", "e5m2_float8", "int08", "float032", "float16x02", "uint0008x0002",
                   "bool", "bool8", "boolx2", "bool1", "uint1x8", "int4x2", "float8x4", "float8_e4m3fnx2",
                   "float8_e8m0fnu", "int9", "bfloat16x2", "float32")
#: extents of 8 and 9 elements: a width one off stores other bytes (ceil(n x bits / 8) differs)
_SHAPES = ([8], [9], [2, 4], [3, 3], [16])


@st.composite
def _spellings(draw: Any) -> str:
    """A dtype spelling: one of :data:`_PAST_SPELLINGS` or :data:`_READ_SPELLINGS`, one of the
    table (with lanes or not), or one built part by
    part (a kind and its bits, or a fixed-width name, then lanes), each part at its bound or one
    step past it."""
    how = _pick(draw, ("past", "read", "table", "parts"))
    if how == "past":
        return _pick(draw, _PAST_SPELLINGS)
    if how == "read":  # the old float8 names are past the table of a tensor-cache.json
        return _pick(draw, _READ_SPELLINGS)
    if how == "table":
        return _pick(draw, bounds.TABLE_SPELLINGS) + _pick(draw, ("", "", "x2", "x1", "x3"))
    if _pick(draw, (False, True)):
        head = _pick(draw, _KIND_PARTS) + _pick(draw, _BITS_PARTS)
    else:
        head = _pick(draw, _FIXED_PARTS)
    return head + _pick(draw, _LANES_PARTS)


@st.composite
def _dtype_edge(draw: Any, fmt: str, version: int, read: bool = False) -> tuple[str, list[int], str, int]:
    """A record's dtype, shape, format and nbytes around a drawn spelling (``read``: one of
    :data:`_READ_SPELLINGS` the loaders of index ``version`` read): a spelling some TVM version
    parses gets 8 or 9 elements (a width one off stores other bytes) and its exact size under a
    drawn encoding (f32-to-bf16 on what has 32 bits, bfloat32 included); one no version parses
    gets a zero extent and nbytes 0, so a reader that takes it for any dtype accepts it."""
    from . import dtypes

    if read:
        spelling = _pick(draw, [t for t in _READ_SPELLINGS if dtypes.parse(t, version) is not None])
    else:
        spelling = draw(_spellings())
    dt = dtypes.parse(spelling)
    if dt is None:
        return spelling, _pick(draw, ([0], [0, 8])), "raw", 0
    shape = [0] if dt.lanes > 64 else _pick(draw, _SHAPES)
    if dt.bits == 32 and dt.lanes == 1:
        fmt = _pick(draw, ("f32-to-bf16", "raw"))
    want = stored(spelling, fmt, shape)
    return spelling, shape, fmt, want if want is not None else 0


def _spelling_class(spelling: str) -> str:
    if spelling in bounds.TABLE_SPELLINGS:
        return "table"
    if spelling in bounds.PAST_SPELLINGS.values():
        return "past"
    return "lanes" if "x" in spelling else "bits"


class _Index:
    """The index of a drawn folder being edited: its document, the shard and tensor record
    the edge moves, and the folder's files."""

    def __init__(self, files: dict[str, bytes], s: int, k: int) -> None:
        self.files = files
        self.doc = json.loads(files["tensor-cache.json"])
        self.shard = self.doc["records"][s]
        self.rec = self.shard["records"][k]
        self.path = self.shard["dataPath"]

    def write(self, d: Any) -> dict[str, bytes]:
        """The folder with ``d`` as its index."""
        return {**self.files, "tensor-cache.json": json.dumps(d, indent=4).encode()}


_Edit = tuple[str, str, dict[str, bytes]]


def _value_edge(draw: Any, ix: _Index) -> _Edit:
    """An integer key (a shard's or tensor's nbytes, a byteOffset, the first extent) at its edges."""
    shard, rec = ix.shard, ix.rec
    target, key = _pick(draw, ((shard, "nbytes"), (rec, "nbytes"), (rec, "byteOffset"), (rec, "shape")))
    old = target[key][0] if key == "shape" and target[key] else target[key] if key != "shape" else 1
    value = _pick(draw, (old + 1, old - 1, old + (1 << 32), old + (1 << 64), old - (1 << 64)) + _EDGE_INTS)
    if key == "shape":
        target[key] = [value] + target[key][1:]
    else:
        target[key] = value
    place = "shard" if target is shard else "tensor"
    return f"value.{place}.{key}", key, ix.write(ix.doc)


def _type_edge(draw: Any, ix: _Index) -> _Edit:
    """A key of another JSON type: the same number as a float or a string, null, true, a list."""
    doc, shard, rec = ix.doc, ix.shard, ix.rec
    target, key = _pick(draw, ((shard, "nbytes"), (shard, "dataPath"), (shard, "records"), (shard, "format"),
                               (rec, "name"), (rec, "dtype"), (rec, "format"), (rec, "nbytes"), (rec, "byteOffset"),
                               (rec, "shape"), (doc, "records"), (shard, "md5sum")))
    old = target.get(key)
    options: list[Any] = [None, True, "x", [old], {"v": old}, 0]
    if isinstance(old, int) and not isinstance(old, bool):
        options += [float(old), str(old)]
    if key == "shape":
        first, rest = (old[0], old[1:]) if old else (1, [])
        options = [[float(first)] + rest, [str(first)] + rest, [True] + rest, [None] + rest, [0.0] + rest, *options]
    target[key] = _pick(draw, options)
    if key == "shape" and _pick(draw, (True, False)):  # as a reader that reads what is not an integer as 0 sizes it
        rec["nbytes"] = 0
    return f"type.{key}", key, ix.write(doc)


def _key_edge(draw: Any, ix: _Index) -> _Edit:
    """A required key removed, given twice (the last value counts), spelled with an escape, or an
    unknown key added."""
    doc, files = ix.doc, ix.files
    edit = _pick(draw, ("missing", "unknown", "twice-last-wrong", "twice-last-right", "escaped"))
    target = _pick(draw, (doc, ix.shard, ix.rec))
    key = _pick(draw, sorted(target))
    if edit == "missing":
        target.pop(key)
        return f"key.missing.{key}", key, ix.write(doc)
    if edit == "unknown":
        target[_pick(draw, ("note", "Records", "name ", "md5"))] = 1
        return "key.unknown", "", ix.write(doc)
    if edit == "escaped":  # the same key spelled with a \\u escape: every JSON reader reads it as the key
        raw = json.dumps(doc, indent=4).encode()
        esc = b'"\\u00' + f"{ord(key[0]):02x}".encode() + key[1:].encode() + b'"'
        return "key.escaped", key, {**files, "tensor-cache.json": raw.replace(f'"{key}"'.encode(), esc)}
    right = json.dumps(target[key]).encode()
    wrong = json.dumps(_pick(draw, (None, 0, "x", -1))).encode()
    raw = json.dumps(doc, indent=4).encode()
    first, last = (right, wrong) if edit == "twice-last-wrong" else (wrong, right)
    marker = f'"{key}": '.encode() + right
    # only the first occurrence: the record the key belongs to may not be the first one
    text = raw.replace(marker, f'"{key}": '.encode() + first + b", " + f'"{key}": '.encode() + last, 1)
    return f"key.{edit}", key, {**files, "tensor-cache.json": text}


def _shard_edge(draw: Any, ix: _Index) -> _Edit:
    """The shard file one byte short or long, missing, an empty shard, its format or md5sum changed."""
    doc, shard, files, path = ix.doc, ix.shard, ix.files, ix.path
    edit = _pick(draw, ("short", "long", "missing", "format", "md5-upper", "md5-short", "md5-number", "md5-null",
                        "empty-shard"))
    data = files.get(path, b"")
    if edit in ("short", "long"):
        return f"shard.{edit}", "nbytes", {**files, path: data[:-1] if edit == "short" else data + b"\0"}
    if edit == "missing":
        return "shard.missing", "dataPath", {n: v for n, v in files.items() if n != path}
    if edit == "format":
        shard["format"] = _pick(draw, ("raw", "Raw-shard", "raw-shard ", "", "zip-shard"))
    elif edit == "empty-shard":
        doc["records"].append({"dataPath": "empty.bin", "format": "raw-shard", "nbytes": 0, "records": []})
        return "shard.empty", "records", {**ix.write(doc), "empty.bin": b""}
    else:
        md5 = shard.get("md5sum", "0" * 32)
        shard["md5sum"] = {"md5-upper": md5.upper(), "md5-short": md5[:31], "md5-number": 0, "md5-null": None}[edit]
    return f"shard.{edit}", "md5sum" if edit.startswith("md5") else "format", ix.write(doc)


def _path_edge(draw: Any, ix: _Index) -> _Edit:
    """A dataPath form; the shard is put where a reader that skips the rule would find it."""
    folder = "generated"  # the folder name generated cases are copied under
    form = _pick(draw, ("", "c:", ".-/a.bin", "-./a.bin", "\udc00.bin", "a.bin\u0000", "sub/../a.bin", "/a.bin", "sub//a.bin",
                        "\u00e9.bin", "c:a.bin", "./a.bin", "sub/a.bin", "a.bin/", "sub", "..", ".a",
                        "sub/deep/a.bin", "sub/..", "a\u0000/b", "..a", "a..", "x/.../a.bin", "a:b", f"../{folder}/a.bin"))
    where = {"sub/../a.bin": "a.bin", f"../{folder}/a.bin": "a.bin", "/a.bin": "a.bin", "a.bin\u0000": "a.bin",
             "a.bin/": "a.bin", "sub": "sub/a.bin", "..": "a.bin", "": "a.bin", "sub/..": "sub/a.bin",
             "a\u0000/b": "a", "./a.bin": "a.bin", "sub//a.bin": "sub/a.bin",
             "\udc00.bin": "a.bin"}.get(form, form)  # (no file is named with a lone surrogate)
    ix.shard["dataPath"] = form
    moved = {n: v for n, v in ix.write(ix.doc).items() if n != ix.path}
    moved[where] = ix.files.get(ix.path, b"")
    if form.startswith("sub/.."):
        moved["sub/other.bin"] = b""
    label = {f"../{folder}/a.bin": "out-and-back", "a.bin\u0000": "nul", "a\u0000/b": "nul-dir", "": "empty",
             "\udc00.bin": "surrogate"}.get(
        form, form.strip("/") or "root")
    return "path." + label.replace("/", "-").replace(".", "dot").replace(":", "colon"), "dataPath", moved


def _text_edge(draw: Any, ix: _Index) -> _Edit:
    """The index text: a byte order mark, NaN and Infinity, 4,300 and 4,301 digits, surrogate
    escapes, bytes after the value, not UTF-8, nesting at and past the limit."""
    text = ix.files["tensor-cache.json"]
    meta = text.index(b'"metadata": ') + len(b'"metadata": ')
    end = text.index(b'"records"')
    value = text[meta:end].rstrip().rstrip(b",")

    def metadata(raw: bytes) -> bytes:
        return text[:meta] + raw + text[meta + len(value):]

    edit = _pick(draw, ("depth-64", "digits-4300", "after", "no-records", "depth-65", "digits-4301", "bom", "nan",
                        "infinity", "minus-infinity", "lone-surrogate", "not-utf8", "big-int", "nan-lower",
                        "short-escape"))
    raw = {"bom": b"\xef\xbb\xbf" + text, "nan": metadata(b"NaN"), "infinity": metadata(b"[Infinity]"),
           "minus-infinity": metadata(b"-Infinity"), "digits-4300": metadata(b"9" * 4300),
           "digits-4301": metadata(b"9" * 4301), "lone-surrogate": metadata(b'"\\udc00"'),
           "pair": metadata(b'"\\ud83d\\ude00"'), "after": text + b" 0", "whitespace": b"\r\n " + text + b"\t",
           "not-utf8": metadata(b'"\xc3"'), "big-int": metadata(b"18446744073709551616"),
           "float-exponent": metadata(b"1e400"), "control": metadata(b'"\x01"'),
           # metadata is level 2 of the index: n arrays in it reach level n + 1
           "depth-64": metadata(b"[" * 63 + b"]" * 63), "depth-65": metadata(b"[" * 64 + b"]" * 64),
           "nan-lower": metadata(b"nan"), "short-escape": metadata(b'"\\ud80"'),
           "digits-4301-negative": metadata(b"-" + b"9" * 4301),
           "no-records": text.replace(b'"records"', b'"Records"', 1)}[edit]
    return f"text.{edit}", "", {**ix.files, "tensor-cache.json": raw}


def _names_edge(draw: Any, ix: _Index) -> _Edit:
    """The index names: both present (one broken), the newer one a folder, none."""
    files = ix.files
    edit = _pick(draw, ("both", "both-v2-broken", "v2-folder", "none"))
    text = files["tensor-cache.json"]
    rest = {n: v for n, v in files.items() if n != "tensor-cache.json"}
    broken = text.replace(b'"raw-shard"', b'"raw"', 1)
    out = {"both": {**files, "ndarray-cache.json": broken}, "both-v2-broken": {**rest, "tensor-cache.json": broken,
                                                                              "ndarray-cache.json": text},
           "v2-folder": {**rest, "ndarray-cache.json": text, "tensor-cache.json/x": b"{}"},
           "none": {**rest, "index.json": text}}[edit]
    return f"index.{edit}", "", out


_INDEX_EDGES = {"value": _value_edge, "type": _type_edge, "key": _key_edge, "shard": _shard_edge,
                "path": _path_edge, "text": _text_edge, "index": _names_edge}


def _index_edge(draw: Any, which: str, files: dict[str, bytes], s: int, k: int) -> _Edit:
    """An edit of the index (its keys, values, text) or of the folder's files."""
    return _INDEX_EDGES[which](draw, _Index(files, s, k))


__all__ = ["EDGE_KINDS", "CacheEdge", "edge_caches", "stored"]
