"""Boundary caches: every rule a tensor cache reader applies, probed at its bound (accepted)
and one step past it (refused), as issue 16's vectors probe ``.params`` and blobs.

A rule is named ``<record>.<field>.<aspect>`` for the keys of spec/records/tensor_cache.yaml
(``type``, ``required``, ``const``, ``range``, ``int64``, ``derive``, ``within``, ``table``,
``safe``), ``shard.<aspect>`` for a shard file against its record, and ``cache.<aspect>`` for
the index text and file (:data:`RULES` states each). :func:`bound_caches` yields each probe
as a folder (file name -> bytes) with the rule it stands on; which side it lands on is the
reference's reading (mlf_spec.conformance.suite.cache decides and records it): a probe meant
for the accepted side sits at the bound, one for the refused side exactly one step past it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from .index import INT64_MAX

#: rule id -> what it states (both sides of each are probed by :func:`bound_caches`)
RULES: dict[str, str] = {
    "cache_index.records.required": "the index has the key records",
    "cache_index.records.type": "records is a JSON array",
    "cache_index.keys": "the index has records; metadata may be missing or of any type, other keys are ignored",
    "cache_index.layout": "the index is a JSON object of shard records (not a layout before 663c8211a4)",
    "shard_record.dataPath.required": "a shard record has dataPath",
    "shard_record.dataPath.type": "dataPath is a JSON string",
    "shard_record.dataPath.safe": "dataPath names a regular file inside the folder (relative, no '..', no NUL)",
    "shard_record.format.required": "a shard record has format",
    "shard_record.format.const": "the shard format is raw-shard (exactly)",
    "shard_record.nbytes.required": "a shard record has nbytes",
    "shard_record.nbytes.type": "the shard's nbytes is a JSON integer",
    "shard_record.nbytes.range": "the shard's nbytes is >= 0",
    "shard_record.records.required": "a shard record has records",
    "shard_record.records.type": "a shard's records is a JSON array",
    "shard_record.keys": "a shard record has dataPath, format, nbytes and records; md5sum may hold any value "
                         "(no loader reads it), other keys are ignored",
    "shard.missing": "the shard file exists",
    "shard.size": "the shard file holds exactly nbytes bytes",
    "tensor_record.name.type": "a tensor's name is a JSON string (any string)",
    "tensor_record.name.required": "a tensor record has name",
    "tensor_record.shape.required": "a tensor record has shape",
    "tensor_record.shape.type": "shape is a JSON array of JSON integers",
    "tensor_record.shape.int64": "each extent fits in int64",
    "tensor_record.shape.each": "each extent is >= 0",
    "tensor_record.shape.overflow": "numel x stored bits / 8 fits in int64 (a zero extent makes it 0)",
    "tensor_record.dtype.required": "a tensor record has dtype",
    "tensor_record.dtype.type": "dtype is a JSON string",
    "tensor_record.dtype.table": "dtype spells a row of the dtype table, bits and lanes in their bounds",
    "tensor_record.format.required": "a tensor record has format",
    "tensor_record.format.type": "a tensor's format is a JSON string (any label: an unknown one is read raw)",
    "tensor_record.nbytes.required": "a tensor record has nbytes",
    "tensor_record.nbytes.type": "a tensor's nbytes is a JSON integer",
    "tensor_record.nbytes.int64": "a tensor's nbytes fits in int64",
    "tensor_record.nbytes.derive": "nbytes = numel x stored bits x lanes / 8, rounded up, under the record's encoding",
    "tensor_record.byteOffset.required": "a tensor record has byteOffset",
    "tensor_record.byteOffset.type": "byteOffset is a JSON integer",
    "tensor_record.byteOffset.range": "byteOffset is >= 0",
    "tensor_record.byteOffset.within": "byteOffset + nbytes <= the shard's size",
    "cache.index-name": "the folder holds tensor-cache.json or ndarray-cache.json; with both, tensor-cache.json is read",
    "cache.text.utf8": "the index is UTF-8",
    "cache.text.bom": "no byte order mark before the index",
    "cache.text.syntax": "the index is one JSON value (RFC 8259), nothing after it",
    "cache.text.constant": "NaN, Infinity and -Infinity are read (as null); no other non-JSON literal",
    "cache.text.duplicate-key": "of a key repeated in an object the last value counts",
    "cache.text.digits": "no integer of more than 4,300 digits (Python's limit)",
    "cache.text.surrogate": "a \\u escape has four hex digits; a lone surrogate is read (U+FFFD), not in a dataPath",
    "cache.text.depth": "arrays and objects nest at most 64 levels (the top-level object is level 1)",
}

Doc = dict[str, Any]


@dataclass
class Bound:
    """One probe: the ``rule`` it stands on, a ``label`` naming the edit, the ``files`` of the
    folder, and ``doc`` (what is at the bound or past it)."""

    rule: str
    label: str
    files: dict[str, bytes]
    doc: str


def _folder(rule: str, label: str) -> str:
    """The folder (vector) name of a probe (mlf_spec.conformance.suite.cache names them so)."""
    from mlf_spec.conformance.suite.common import slug

    return slug(f"bound.{rule}.{label}")


def _md5(data: bytes) -> str:
    return hashlib.md5(data, usedforsecurity=False).hexdigest()


def _fill(n: int, seed: int) -> bytes:
    """``n`` bytes that differ from tensor to tensor (a record pointing at another tensor's
    bytes reads another hash)."""
    out = bytearray()
    k = seed
    while len(out) < n:
        k = (k * 1103515245 + 12345) & 0x7FFFFFFF
        out += (k >> 8).to_bytes(3, "little")
    return bytes(out[:n])


#: a tensor of the base shards: name, dtype, shape, format, nbytes
Tensor = tuple[str, str, list[int], str, int]


def layout(shards: list[list[Tensor]], *, metadata: Any = ..., index: str = "tensor-cache.json") -> dict[str, bytes]:
    """A cache of the tensors ``shards`` lists, laid out as the writer lays them out (each
    tensor's bytes after the previous one's, shard n in params_shard_<n>.bin, sizes and md5sum
    right), of any dtype, shape, format and nbytes (the bytes are a pattern)."""
    files: dict[str, bytes] = {}
    records = []
    seed = 1
    for i, tensors in enumerate(shards):
        data = b""
        recs = []
        for name, dtype, shape, fmt, nbytes in tensors:
            recs.append({"name": name, "shape": shape, "dtype": dtype, "format": fmt, "nbytes": nbytes,
                         "byteOffset": len(data)})
            data += _fill(nbytes, seed)
            seed += 1
        path = f"params_shard_{i}.bin"
        files[path] = data
        records.append({"dataPath": path, "format": "raw-shard", "nbytes": len(data), "records": recs,
                        "md5sum": _md5(data)})
    doc: Doc = {"metadata": {"model": "bound"} if metadata is ... else metadata, "records": records}
    files[index] = _dump(doc)
    return files


def _base_tensors() -> list[list[Tensor]]:
    return [[("w", "float32", [2, 3], "f32-to-bf16", 12), ("i", "int32", [3], "raw", 12)],
            [("h", "float16", [4], "raw", 8)]]


def base() -> dict[str, bytes]:
    """The cache every probe edits: a float32 under f32-to-bf16 and an int32 in shard 0, a
    float16 in shard 1."""
    return layout(_base_tensors())


def _dump(doc: Any) -> bytes:
    """An index as compact JSON (the writer indents by 4; every loader reads either, and the
    suite stays small)."""
    return json.dumps(doc, separators=(",", ":")).encode()


def _doc(files: dict[str, bytes]) -> Doc:
    return json.loads(files["tensor-cache.json"])


def edit(files: dict[str, bytes], fn: Callable[[Doc], Any]) -> dict[str, bytes]:
    """``files`` with the index edited by ``fn`` (written back as the writer writes it)."""
    doc = _doc(files)
    fn(doc)
    return {**files, "tensor-cache.json": _dump(doc)}


def _text(files: dict[str, bytes], text: bytes) -> dict[str, bytes]:
    return {**files, "tensor-cache.json": text}


def _t(doc: Doc, k: int = 0, s: int = 0) -> Doc:
    return doc["records"][s]["records"][k]


def _set(k: int, s: int = 0, **kv: Any) -> Callable[[Doc], None]:
    return lambda d: _t(d, k, s).update(kv)


def _top(**kv: Any) -> Callable[[Doc], None]:
    return lambda d: d.update(kv)


def _shard(s: int, **kv: Any) -> Callable[[Doc], None]:
    return lambda d: d["records"][s].update(kv)


def _pop(key: str, k: int | None = 0, s: int = 0) -> Callable[[Doc], None]:
    return lambda d: (d["records"][s] if k is None else _t(d, k, s)).pop(key)


def _one(dtype: str, shape: list[int], fmt: str, nbytes: int, data: int | None = None) -> dict[str, bytes]:
    """A cache of one tensor (its record says ``nbytes``; the shard holds ``data`` bytes,
    default ``nbytes``) beside the int32 of the base."""
    files = layout([[("t", dtype, shape, fmt, max(nbytes, 0) if data is None else data), ("i", "int32", [3], "raw", 12)]])
    if data is not None or nbytes < 0:
        files = edit(files, _set(0, nbytes=nbytes))
    return files


def _reference_size(dtype: str, fmt: str, shape: list[int]) -> int:
    """Bytes the reference says a record stores (numel x stored bits x lanes / 8, rounded up)."""
    from . import dtypes, rules

    dt = dtypes.parse(dtype)
    assert dt is not None, dtype
    return rules.expected_nbytes(dt, fmt, tuple(shape))


def _stored(bits: int, lanes: int, numel: int) -> int:
    return (numel * bits * lanes + 7) // 8


#: spellings of the dtype table (generated/docs/dtype_codes.md) and their stored bits; every
#: version's float8 names among them; handle with its bits, and the void type (0 bits, 0 lanes)
TABLE_SPELLINGS: dict[str, int] = {
    "int8": 8, "int16": 16, "int32": 32, "int64": 64, "int1": 1, "int4": 4, "int9": 9, "int255": 255, "uint9": 9,
    "uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64, "uint1": 1, "uint4": 4,
    "float16": 16, "float32": 32, "float64": 64, "float8": 8, "float032": 32, "int0008": 8,
    "bfloat16": 16, "bool": 8, "bool8": 8, "handle": 64, "handle64": 64, "handle32": 32, "handle1": 1, "handle9": 9,
    "handle255": 255, "handle064": 64, "void": 0,
    "e4m3_float8": 8, "e5m2_float8": 8, "float8_e4m3fn": 8, "float8_e5m2": 8, "float8_e3m4": 8,
    "float8_e4m3": 8, "float8_e4m3b11fnuz": 8, "float8_e4m3fnuz": 8, "float8_e5m2fnuz": 8,
    "float8_e8m0fnu": 8, "float6_e2m3fn": 6, "float6_e3m2fn": 6, "float4_e2m1fn": 4,
}
#: spellings one step past the grammar: bits 0 or 256, lanes 0 or 32768, a kind without bits,
#: a row without a width, a near name, a custom code
PAST_SPELLINGS = {"int0": "int0", "int256": "int256", "uint0": "uint0", "float0": "float0", "float256": "float256",
                  "float32x0": "float32x0", "float32x65536": "float32x65536", "float32x": "float32x", "float": "float",
                  "complex64": "complex64", "complex128": "complex128", "handle0": "handle0", "handle256": "handle256",
                  "handlex0": "handlex0",
                  "int1000000": "int1000000",
                  "int": "int", "uint": "uint", "bfloat": "bfloat", "float8_e4m3fnx": "float8_e4m3fnx",
                  "float8_e4m3fn_": "float8_e4m3fn_", "upper-case": "Float32", "trailing-space": "float32 ",
                  "leading-space": " float32", "custom": "custom[129]8", "float8_e6m2": "float8_e6m2",
                  "float4_e2m1": "float4_e2m1", "minus": "int-8", "plus": "int+8", "void-lanes": "voidx2", "void-near": "voit",
                  "one-letter": "b",
                  "lanes-letter": "float32x2a", "lanes-minus": "float32x-1", "lanes-plus": "float32x+2",
                  "lanes-after-letter": "float32a4", "lanes-y": "float32y4", "bits-letter": "int8a",
                  "float8-lanes-letter": "float8_e5m2a", "fixed-then-bits": "float8_e5m28",
                  "handle-last-letter": "handlf"}


def bound_caches() -> Iterator[Bound]:
    """Every probe of every rule of :data:`RULES`, in a fixed order."""
    b = base()
    yield from _index_probes(b)
    yield from _shard_probes(b)
    yield from _data_path_probes(b)
    yield from _tensor_probes(b)
    yield from _size_probes(b)
    yield from _index_file_probes(b)
    yield from _text_probes(b)


def probe(rule: str, label: str, files: dict[str, bytes], doc: str) -> Bound:
    """A probe of rule ``rule`` (one of :data:`RULES`)."""
    assert rule in RULES, rule
    return Bound(rule, label, files, doc)


def _index_probes(b: dict[str, bytes]) -> Iterator[Bound]:
    """Keys of the index and their JSON types; the layouts."""
    v: Any
    d0 = _doc(b)
    # -- keys every record must have, and their JSON types -------------------------------
    yield probe("cache_index.records.required", "present", b, "the index has records")
    yield probe("cache_index.records.required", "missing", edit(b, lambda d: d.pop("records")), "no records key")
    yield probe("cache_index.keys", "metadata-missing", edit(b, lambda d: d.pop("metadata")), "no metadata key")
    yield probe("cache_index.keys", "unknown", edit(b, lambda d: d.update(note=1)), "a key the writer never writes")
    yield probe("cache_index.keys", "records-missing", edit(b, lambda d: d.pop("records")), "metadata, no records")
    for label, v in (("object", {}), ("string", "records"), ("null", None), ("number", 0)):
        yield probe("cache_index.records.type", label, edit(b, _top(records=v)),
                    f"records is a JSON {label}")
    yield probe("cache_index.records.type", "empty", edit(b, lambda d: d.update(records=[])), "no shard at all")
    for label, v in (("object", {}), ("list", [1, "a"]), ("null", None), ("number", -1.5), ("string", "m"),
                     ("nested", {"a": [{"b": {"c": [None, True, 2 ** 70]}}]}), ("huge-int", 2 ** 64)):
        yield probe("cache_index.keys", f"metadata-{label}", edit(b, _top(metadata=v)),
                    f"metadata as a JSON {label}")
    yield probe("cache_index.layout", "shards", b, "an object of shard records")
    yield probe("cache_index.layout", "no-md5", edit(b, lambda d: [s.pop("md5sum") for s in d["records"]]),
                "shard records without md5sum (before 835bc82665)")
    yield probe("cache_index.layout", "list", _text(b, json.dumps(d0["records"][0]["records"]).encode()),
                "a list of per-tensor records (c1f304497e)")
    yield probe("cache_index.layout", "per-tensor", _text(b, json.dumps({"metadata": {}, "records": [
        {"name": "w", "shape": [1], "dtype": "float32", "dataPath": "params_shard_0.bin", "format": "raw"}]}).encode()),
        "per-tensor records with dataPath (279317d4cd)")
    for label, text in (("string", b'"records"'), ("number", b"1"), ("null", b"null"), ("array", b"[]")):
        yield probe("cache_index.layout", f"top-{label}", _text(b, text), f"the index is a JSON {label}")



def _shard_probes(b: dict[str, bytes]) -> Iterator[Bound]:
    """The shard records' keys and their JSON types."""
    v: Any
    md5: Any
    shard0 = b["params_shard_0.bin"]
    d0 = _doc(b)
    shard_keys = {"dataPath": (7, "str"), "format": (1, "str"), "nbytes": ("24", "int"), "records": ({}, "list")}
    for key, (wrong, _) in shard_keys.items():
        yield probe(f"shard_record.{key}.required", "present", b, f"every shard record has {key}")
        yield probe(f"shard_record.{key}.required", "missing", edit(b, _pop(key, None, 1)), f"shard 1 without {key}")
        rid = f"shard_record.{key}.type" if key != "format" else "shard_record.format.const"
        yield probe(rid, "wrong-type", edit(b, _shard(1, **{key: wrong})),
                    f"shard 1's {key} is {json.dumps(wrong)}")
    yield probe("shard_record.dataPath.type", "string", b, "dataPath is a string")
    yield probe("shard_record.records.type", "empty", edit(b, lambda d: d["records"].append(
        {"dataPath": "params_shard_0.bin", "format": "raw-shard", "nbytes": len(shard0), "records": []})),
        "a third shard record of no tensor (the first shard's file again)")
    for label, v in (("float", 24.0), ("exponent", "2.4e1"), ("true", True), ("null", None)):
        value = json.loads(v) if isinstance(v, str) else v
        yield probe("shard_record.nbytes.type", label, edit(b, _shard(1, nbytes=value)),
                    f"shard 1's nbytes is {json.dumps(value)}")
    yield probe("shard_record.nbytes.type", "integer", b, "nbytes integers")
    for label, v in (("raw-shard", "raw-shard"), ("upper", "Raw-shard"), ("underscore", "raw_shard"),
                     ("space", "raw-shard "), ("prefix", "raw-shar"), ("raw", "raw"), ("empty", "")):
        yield probe("shard_record.format.const", label, edit(b, _shard(1, format=v)),
                    f"shard 1's format {v!r}")
    empty = edit(b, lambda d: d["records"].append({"dataPath": "params_shard_2.bin", "format": "raw-shard",
                                                  "nbytes": 0, "records": [], "md5sum": _md5(b"")}))
    yield probe("shard_record.nbytes.range", "0", {**empty, "params_shard_2.bin": b""}, "an empty shard of 0 bytes")
    yield probe("shard_record.nbytes.range", "-1", {**edit(empty, lambda d: d["records"][2].update(nbytes=-1)),
                                                    "params_shard_2.bin": b""}, "an empty shard of nbytes -1")
    for label, md5 in (("lower", d0["records"][0]["md5sum"]), ("upper", d0["records"][0]["md5sum"].upper()),
                       ("31-digits", d0["records"][0]["md5sum"][:31]), ("33-digits", d0["records"][0]["md5sum"] + "0"),
                       ("other", "0" * 32), ("short", "abc"), ("empty", ""), ("null", None)):
        yield probe("shard_record.keys", f"md5-{label}", edit(b, _shard(0, md5sum=md5)),
                    f"md5sum {json.dumps(md5)}")
    for label, md5 in (("number", 0), ("list", [d0["records"][0]["md5sum"]]), ("true", True)):
        yield probe("shard_record.keys", f"md5-{label}", edit(b, _shard(0, md5sum=md5)),
                    f"md5sum {json.dumps(md5)}")
    yield probe("shard_record.keys", "unknown", edit(b, lambda d: d["records"][1].update(note="x")), "an unknown key")
    yield probe("shard_record.keys", "datapath-missing", edit(b, _pop("dataPath", None, 1)), "shard 1 without dataPath")



def _data_path_probes(b: dict[str, bytes]) -> Iterator[Bound]:
    """dataPath, and the shard files against their records."""
    n: Any
    shard0 = b["params_shard_0.bin"]
    # -- dataPath -----------------------------------------------------------------------
    moved = {k: v for k, v in b.items() if k != "params_shard_0.bin"}
    # where a reader that skips a check would find the shard: inside the folder, or in the folder
    # itself reached by climbing out and back in (the private copy keeps the folder's name)
    back = f"../{_folder('shard_record.dataPath.safe', 'dot-dot-back')}/a.bin"
    for label, path, where in (("plain", "params_shard_0.bin", None), ("dot-slash", "./a.bin", "a.bin"),
                               ("sub-folder", "sub/a.bin", "sub/a.bin"), ("sub-sub-folder", "sub/deep/a.bin", "sub/deep/a.bin"), ("dot-dot-in", "sub/../a.bin", "a.bin"),
                               ("dot-dot", "..", None), ("dot-dot-back", back, "a.bin"),
                               ("sub-dot-dot-back", "sub/../" + back, "a.bin"),
                               ("absolute", "/a.bin", "a.bin"), ("nul", "a.bin\u0000", "a.bin"),
                               ("nul-then-dir", "a.bin\u0000/x", "a.bin"),
                               ("backslash-dot-dot", "..\\a.bin", "a.bin"),
                               ("dot-dot-file", "..a.bin", "..a.bin"), ("dots-3", ".../a.bin", ".../a.bin"),
                               ("drive", "c:a.bin", "c:a.bin"), ("drive-only", "c:", "c:"),
                               ("colon-second", "ab:c.bin", "ab:c.bin"), ("dot-name", ".a", ".a"),
                               ("dash-dot", "-./a.bin", "-./a.bin"), ("dot-dash", ".-/a.bin", ".-/a.bin"),
                               ("dot-dot-end", "sub/..", "sub/a.bin"),
                               ("trailing-slash", "a.bin/", "a.bin"), ("folder", "sub", "sub/a.bin"),
                               ("folder-slash", "sub/", "sub/a.bin"), ("dot", ".", "a.bin"), ("empty", "", "a.bin"),
                               ("double-slash", "sub//a.bin", "sub/a.bin"), ("not-utf8", "a\udcff.bin", "a.bin")):
        files = dict(b) if where is None else {**moved, where: shard0}
        if label.startswith(("dot-dot-in", "sub-dot-dot")):
            files["sub/other.bin"] = b""
        yield probe("shard_record.dataPath.safe", label, edit(files, _shard(0, dataPath=path)),
                    f"dataPath {path!r}" + (f", the shard stored as {where}" if where else ""))
    yield probe("shard.missing", "present", b, "every shard file is there")
    yield probe("shard.missing", "missing", {k: v for k, v in b.items() if k != "params_shard_1.bin"},
                "params_shard_1.bin is not there")
    yield probe("shard.missing", "other-case", {**{k: v for k, v in b.items() if k != "params_shard_1.bin"},
                                                "Params_shard_1.bin": b["params_shard_1.bin"]},
                "the shard is there under another case")
    shard1 = b["params_shard_1.bin"]
    for label, data in (("exact", shard1), ("one-short", shard1[:-1]), ("one-more", shard1 + b"\0"), ("empty", b"")):
        yield probe("shard.size", label, {**b, "params_shard_1.bin": data}, f"shard 1 holds {len(data)} of 8 bytes")
    for label, n in (("nbytes-plus-1", 9), ("nbytes-minus-1", 7)):
        yield probe("shard.size", label, edit(b, _shard(1, nbytes=n)), f"shard 1's nbytes {n}")



def _tensor_probes(b: dict[str, bytes]) -> Iterator[Bound]:
    """The tensor records' keys, types and shapes."""
    v: Any
    w: Any
    shape: Any
    raw: Any
    n: Any
    # -- tensor records -----------------------------------------------------------------
    wrong = {"name": 7, "shape": "2", "dtype": 32, "format": None, "nbytes": "12", "byteOffset": [0]}
    for key, w in wrong.items():
        yield probe(f"tensor_record.{key}.required", "present", b, f"every tensor record has {key}")
        yield probe(f"tensor_record.{key}.required", "missing", edit(b, _pop(key, 1)), f"the int32 without {key}")
        yield probe(f"tensor_record.{key}.type", "right-type", b, f"every tensor's {key} of its type")
        yield probe(f"tensor_record.{key}.type", "wrong-type", edit(b, _set(1, **{key: w})),
                    f"the int32's {key} is {json.dumps(w)}")
    for label, name in (("empty", ""), ("non-ascii", "w\u00e9\u4e2d"), ("pair", "\U0001f600"), ("nul", "a\u0000b"),
                        ("quote", 'a"\\b'), ("control", "a\u001fb"), ("long", "n" * 300)):
        yield probe("tensor_record.name.type", label, edit(b, _set(1, name=name)), f"name {name[:20]!r}")
    yield probe("tensor_record.name.type", "duplicate", edit(b, _set(1, name="w")), "two tensors named w (the last kept)")
    for label, fmt in (("unknown", "q4f16"), ("empty", ""), ("bf16-on-int", "f32-to-bf16"), ("raw-on-int", "raw")):
        yield probe("tensor_record.format.type", label, edit(b, _set(1, format=fmt)), f"the int32 under {fmt!r}")
    for label, v in (("float", 12.0), ("true", True), ("null", None)):
        for key in ("nbytes", "byteOffset"):
            yield probe(f"tensor_record.{key}.type", label, edit(b, _set(1, **{key: v})), f"the int32's {key} {json.dumps(v)}")
    one_extent = b'"shape":[3]'
    assert b["tensor-cache.json"].count(one_extent) == 1
    for label, raw in (("text-exponent", b"[3e0]"), ("text-exponent-upper", b"[3E0]"),
                       ("text-fraction-exponent", b"[0.3e1]"), ("text-fraction", b"[3.0]")):
        yield probe("tensor_record.shape.type", label, _text(b, b["tensor-cache.json"].replace(one_extent, b'"shape":' + raw)),
                    f"the int32's shape {raw.decode()}")
    yield probe("tensor_record.shape.type", "integers", b, "extents are integers")
    for label, shape in (("float", [3.0]), ("exponent", [3e0]), ("true", [True]), ("string", ["3"]), ("null", [None]),
                         ("nested", [[3]]), ("object", {"0": 3})):
        yield probe("tensor_record.shape.type", label, edit(b, _set(1, shape=shape)), f"shape {json.dumps(shape)}")
    yield probe("tensor_record.shape.int64", "max-beside-zero", _one("int8", [INT64_MAX, 0], "raw", 0),
                "extents [2^63 - 1, 0] (no element)")
    yield probe("tensor_record.shape.int64", "2-63-beside-zero", _one("int8", [1 << 63, 0], "raw", 0),
                "extents [2^63, 0]: 2^63 does not fit in int64")
    yield probe("tensor_record.shape.int64", "min-beside-zero", _one("int8", [-(1 << 63) - 1, 0], "raw", 0),
                "extents [-2^63 - 1, 0]")
    yield probe("tensor_record.shape.int64", "2-64-beside-zero", _one("int8", [1 << 64, 0], "raw", 0),
                "extents [2^64, 0] (wraps to 0 in 64 bits)")
    for label, shape in (("zero", [0]), ("zero-of-two", [3, 0]), ("scalar", [])):
        n = 0 if 0 in shape else 1
        yield probe("tensor_record.shape.each", label, _one("int8", shape, "raw", n), f"int8 shape {shape}")
    # nbytes as a reader that forgets the sign computes it (the product, or 0 beside a zero)
    for label, shape, nb in (("minus-1", [-1], 1), ("minus-1-beside-zero", [-1, 0], 0), ("zero-beside-minus-1", [0, -1], 0),
                             ("minus-1-times-minus-1", [-1, -1], 1), ("min", [-(1 << 63)], 1)):
        yield probe("tensor_record.shape.each", label, _one("int8", shape, "raw", nb), f"int8 shape {shape}, nbytes {nb}")
    for label, dtype, shape in (("zero-then-max", "float32", [0, INT64_MAX]), ("max-then-zero", "float64", [INT64_MAX, 0]),
                                ("max-max-zero", "int8", [INT64_MAX, INT64_MAX, 0]),
                                ("overflow-then-zero", "int32", [1 << 62, 1 << 62, 0])):
        yield probe("tensor_record.shape.overflow", label, _one(dtype, shape, "raw", 0),
                    f"{dtype} {shape}: no element, nbytes 0")
    yield probe("tensor_record.shape.overflow", "bytes-at-int64-max", _one("int8", [INT64_MAX], "raw", INT64_MAX, 12),
                "int8 [2^63 - 1], nbytes 2^63 - 1: fits (past the shard)")
    for label, dtype, shape, fmt in (("numel-2-64", "int8", [1 << 32, 1 << 32], "raw"),
                                     ("numel-2-128", "int8", [1 << 43, 1 << 43, 1 << 42], "raw"),
                                     ("numel-2-64-then-1", "int8", [1 << 32, 1 << 32, 1], "raw"),
                                     ("bytes-2-64", "float32", [1 << 62], "raw"),
                                     ("bytes-2-63", "int8", [1 << 61, 4], "raw"),
                                     ("bf16-bytes-2-64", "float32", [1 << 63 - 1], "f32-to-bf16"),
                                     ("bits-2-64", "int4", [1 << 62, 8], "raw"),
                                     ("lanes-2-64", "float32x4", [1 << 60], "raw")):
        yield probe("tensor_record.shape.overflow", label, _one(dtype, shape, fmt, 0),
                    f"{dtype} {shape} under {fmt}: the byte size wraps to 0 past 64 bits")
    for key in ("nbytes", "byteOffset"):
        for label, v in (("2-63", 1 << 63), ("2-64", 1 << 64), ("2-64-plus-12", (1 << 64) + 12), ("min-minus-1", -(1 << 63) - 1)):
            yield probe("tensor_record.nbytes.int64" if key == "nbytes" else "tensor_record.byteOffset.range" if v < 0
                        else "tensor_record.byteOffset.within",
                        f"{key}-{label}", edit(b, _set(1, **{key: v})), f"the int32's {key} {v}")
    yield probe("tensor_record.nbytes.int64", "fits", b, "nbytes fit")


def _size_probes(b: dict[str, bytes]) -> Iterator[Bound]:
    """nbytes against the shape and encoding, byteOffset against the shard, dtype spellings."""
    shape: Any
    lanes: Any
    n: Any
    shard0 = b["params_shard_0.bin"]
    # nbytes under each encoding: at numel x stored bits / 8 and one away
    for label, dtype, shape, fmt in (("float32-raw", "float32", [5], "raw"), ("float32-bf16", "float32", [5], "f32-to-bf16"),
                                     ("int32-bf16", "int32", [5], "f32-to-bf16"), ("float16-bf16", "float16", [5], "f32-to-bf16"),
                                     ("int8", "int8", [5], "raw"), ("uint8", "uint8", [2, 3], "raw"),
                                     ("int64", "int64", [3], "raw"), ("float64", "float64", [3], "f32-to-bf16"),
                                     ("bool", "bool", [5], "raw"), ("int4", "int4", [5], "raw"), ("uint1", "uint1", [9], "raw"),
                                     ("int1", "int1", [17], "raw"), ("float6", "float6_e2m3fn", [5], "raw"),
                                     ("float8", "float8_e4m3fn", [5], "raw"), ("float8-bf16", "float8_e5m2", [5], "f32-to-bf16"),
                                     ("bfloat16", "bfloat16", [5], "raw"), ("lanes", "float32x4", [3], "raw"),
                                     ("int4-lanes", "int4x3", [3], "raw"), ("float32x4-bf16", "float32x4", [2], "f32-to-bf16"),
                                     ("scalar-bf16", "float32", [], "f32-to-bf16"),
                                     ("bfloat32-bf16", "bfloat32", [5], "f32-to-bf16"),
                                     ("bool32-bf16", "bool32", [5], "f32-to-bf16"),
                                     ("float32x1-bf16", "float32x1", [5], "f32-to-bf16"),
                                     ("float032-bf16", "float032", [5], "f32-to-bf16"), ("unknown-format", "float32", [3], "q4")):
        want = _reference_size(dtype, fmt, shape)  # where the bound is; the reading decides each side
        for delta, side in ((0, "exact"), (1, "plus-1"), (-1, "minus-1")):
            yield probe("tensor_record.nbytes.derive", f"{label}.{side}", _one(dtype, shape, fmt, want + delta),
                        f"{dtype} {shape} under {fmt}: nbytes {want + delta} ({want} stored)")
    yield probe("tensor_record.nbytes.derive", "zero-under-bf16", _one("float32", [0], "f32-to-bf16", 0),
                "an empty float32 under f32-to-bf16")
    yield probe("tensor_record.nbytes.derive", "minus-1-empty", _one("float32", [0], "raw", -1), "nbytes -1 on no element")
    # byteOffset against the shard's end
    end = len(shard0)
    for label, off, nb in (("at-0", 0, 12), ("end-exact", end - 12, 12), ("end-plus-1", end - 11, 12),
                           ("empty-at-end", end, 0), ("empty-past-end", end + 1, 0), ("minus-1", -1, 12),
                           ("far", 1 << 40, 12), ("wraps", (1 << 63) - 4, 12)):
        files = edit(b, _set(1, byteOffset=off, nbytes=nb, shape=[nb // 4]))
        rid = "tensor_record.byteOffset.range" if off < 0 or label == "at-0" else "tensor_record.byteOffset.within"
        yield probe(rid, label, files, f"the int32 at byteOffset {off} of {nb} bytes in a {end}-byte shard")
    yield probe("tensor_record.byteOffset.within", "overlap", edit(b, _set(1, byteOffset=0)),
                "the int32 reads the float32's bytes (overlap)")
    yield probe("tensor_record.byteOffset.within", "gap", {**edit(b, lambda d: d["records"][0].update(
        nbytes=end + 4, md5sum=_md5(shard0 + b"\0" * 4))), "params_shard_0.bin": shard0 + b"\0" * 4},
        "4 bytes after the last tensor")
    # dtype spellings
    for spelling, bits in TABLE_SPELLINGS.items():  # 8 elements: a width one off stores other bytes
        yield probe("tensor_record.dtype.table", spelling, _one(spelling, [8], "raw", _stored(bits, 1, 8)),
                    f"dtype {spelling} [8]")
    # the empty string is the void type, as "void" is: no stored bytes whatever the shape
    yield probe("tensor_record.dtype.table", "empty", _one("", [8], "raw", 0), "dtype '' [8]")
    for spelling in ("float32x1", "float32x32767", "float32x65535", "int8x2", "boolx4", "int255x32767", "float16x2", "float32x9",
                     "float32x10", "float8_e4m3fnx2", "float4_e2m1fnx3", "handlex2"):
        base_name, lanes = spelling.split("x")
        n = 0 if int(lanes) > 100 else 3
        yield probe("tensor_record.dtype.table", spelling,
                    _one(spelling, [n], "raw", _stored(TABLE_SPELLINGS[base_name], int(lanes), n)),
                    f"dtype {spelling} [{n}]")
    for label, spelling in PAST_SPELLINGS.items():
        yield probe("tensor_record.dtype.table", f"past.{label}", _one(spelling, [0], "raw", 0), f"dtype {spelling!r} [0]")
    for spelling in ("int08", "float16x02", "float32x01"):
        yield probe("tensor_record.dtype.table", f"leading-zero.{spelling}", _one(spelling, [0], "raw", 0),
                    f"dtype {spelling!r} [0] (a leading zero)")



def _index_file_probes(b: dict[str, bytes]) -> Iterator[Bound]:
    """The index's file name."""
    # -- the index file and its text ----------------------------------------------------
    v1 = {("ndarray-cache.json" if k == "tensor-cache.json" else k): v for k, v in b.items()}
    broken = edit(b, _set(1, nbytes=13))
    yield probe("cache.index-name", "both-v2-read", {**v1, "tensor-cache.json": b["tensor-cache.json"],
                                                      "ndarray-cache.json": broken["tensor-cache.json"]},
                "both index names, ndarray-cache.json broken: tensor-cache.json is read")
    yield probe("cache.index-name", "both-v2-broken", {**v1, "tensor-cache.json": broken["tensor-cache.json"]},
                "both index names, tensor-cache.json broken")
    yield probe("cache.index-name", "v2-folder", {**v1, "tensor-cache.json/x": b"{}"},
                "tensor-cache.json is a folder: ndarray-cache.json is read")
    yield probe("cache.index-name", "v2-folder-v1-broken", {**{k: v for k, v in v1.items() if k != "ndarray-cache.json"},
                                                             "ndarray-cache.json": broken["tensor-cache.json"],
                                                             "tensor-cache.json/x": b"{}"},
                "tensor-cache.json is a folder, ndarray-cache.json broken")
    yield probe("cache.index-name", "neither", {**{k: v for k, v in b.items() if k != "tensor-cache.json"},
                                                 "tensor-cache.json.bak": b["tensor-cache.json"]},
                "no index by either name")
    yield probe("cache.index-name", "b16-only", {**{k: v for k, v in b.items() if k != "tensor-cache.json"},
                                                  "tensor-cache-b16.json": b["tensor-cache.json"]},
                "only the bf16 copy of the index")


def _text_probes(b: dict[str, bytes]) -> Iterator[Bound]:
    """The index's text: UTF-8, JSON syntax, constants, duplicate keys, depth, digits, surrogates."""
    raw: Any
    shard0 = b["params_shard_0.bin"]
    moved = {k: v for k, v in b.items() if k != "params_shard_0.bin"}
    text = b["tensor-cache.json"]
    meta = b'"metadata":{"model":"bound"}'
    assert meta in text

    def with_meta(raw: bytes) -> dict[str, bytes]:
        return _text(b, text.replace(meta, b'"metadata": ' + raw, 1))

    yield probe("cache.text.utf8", "non-ascii", with_meta('{"m": "caf\u00e9 \u4e2d"}'.encode()), "raw UTF-8 in metadata")
    yield probe("cache.text.utf8", "four-byte", with_meta('"\U0001f600"'.encode()), "a 4-byte UTF-8 character")
    for label, raw in (("ff", b'"\xff"'), ("overlong", b'"\xc0\xaf"'), ("surrogate-bytes", b'"\xed\xa0\x80"'),
                       ("past-10ffff", b'"\xf4\x90\x80\x80"'), ("cut", b'"\xe4\xb8"')):
        yield probe("cache.text.utf8", label, with_meta(raw), f"metadata holds the bytes {raw!r}")
    yield probe("cache.text.bom", "none", b, "no byte order mark")
    yield probe("cache.text.bom", "utf8-bom", _text(b, b"\xef\xbb\xbf" + text), "a UTF-8 byte order mark")
    yield probe("cache.text.syntax", "whitespace", _text(b, b" \t\r\n" + text + b"\n\t "), "whitespace around the index")
    for label, raw in (("trailing-comma", text.replace(b'"bound"}', b'"bound",}', 1)), ("second-value", text + b" {}"),
                       ("single-quotes", text.replace(b'"model"', b"'model'", 1)), ("comment", text + b" //"),
                       ("control-in-string", text.replace(b'"bound"', b'"bo\tund"', 1)),
                       ("bad-escape", text.replace(b'"bound"', b'"bo\\und"', 1)),
                       ("leading-zero", text.replace(meta, b'"metadata": 01', 1)),
                       ("plus", text.replace(meta, b'"metadata": +1', 1)),
                       ("dot", text.replace(meta, b'"metadata": 1.', 1)), ("cut", text[:-1]),
                       ("empty", b""), ("true-typo", text.replace(meta, b'"metadata": tru', 1))):
        yield probe("cache.text.syntax", label, _text(b, raw), f"not JSON: {label}")
    for label, raw in (("numbers", b'[0, -0, 1.5, -2e-3, 1E+2, 123456789012345678901234567890]'),
                       ("escapes", b'"\\"\\\\\\/\\b\\f\\n\\r\\t\\u0041\\u00e9"')):
        yield probe("cache.text.constant" if label == "numbers" else "cache.text.syntax", label, with_meta(raw),
                    f"metadata {raw.decode()}")
    for label, raw in (("nan", b"NaN"), ("infinity", b"Infinity"), ("minus-infinity", b"-Infinity"),
                       ("nan-in-list", b"[1, NaN]"), ("lower-nan", b"nan"), ("minus-nan", b"-NaN"),
                       ("plus-infinity", b"+Infinity"), ("inf", b"Inf"), ("lower-infinity", b"infinity"),
                       ("nan-then-letter", b"NaNa"), ("minus-inf", b"-Inf")):
        yield probe("cache.text.constant", label, with_meta(raw), f"metadata {raw.decode()}")
    yield probe("cache.text.duplicate-key", "siblings", b, "the same keys in sibling records")
    yield probe("cache.text.duplicate-key", "last-right", _text(b, text.replace(
        b'"nbytes":12,"byteOffset":12', b'"nbytes":13,"nbytes":12,"byteOffset":12', 1)),
        "the int32's nbytes twice, the last right")
    yield probe("cache.text.duplicate-key", "last-wrong", _text(b, text.replace(
        b'"nbytes":12,"byteOffset":12', b'"nbytes":12,"nbytes":13,"byteOffset":12', 1)),
        "the int32's nbytes twice, the last wrong")
    yield probe("cache.text.duplicate-key", "metadata-twice", _text(b, text.replace(meta, meta + b',"metadata":5', 1)),
                "metadata twice (the last is read)")
    # metadata is level 2: n nested arrays in it reach level n + 1
    yield probe("cache.text.depth", "64", with_meta(b"[" * 63 + b"]" * 63), "metadata nested to level 64")
    yield probe("cache.text.depth", "65", with_meta(b"[" * 64 + b"]" * 64), "metadata nested to level 65")
    yield probe("cache.text.depth", "65-objects", with_meta(b'{"a": ' * 64 + b"1" + b"}" * 64), "objects to level 65")
    yield probe("cache.text.depth", "far", with_meta(b"[" * 5000 + b"]" * 5000), "metadata nested 5,000 levels")
    yield probe("cache.text.digits", "4300", with_meta(b"9" * 4300), "an integer of 4,300 digits in metadata")
    yield probe("cache.text.digits", "4301", with_meta(b"9" * 4301), "an integer of 4,301 digits in metadata")
    yield probe("cache.text.digits", "4301-negative", with_meta(b"-" + b"9" * 4301), "-(4,301 digits) in metadata")
    yield probe("cache.text.digits", "float-4301", with_meta(b"0." + b"9" * 4301), "a fraction of 4,301 digits")
    for label, raw in (("pair", b'"\\ud83d\\ude00"'), ("pair-upper", b'"\\uD83D\\uDE00"')):
        yield probe("cache.text.surrogate", label, with_meta(raw), f"metadata {raw.decode()}")
    for label, raw in (("lone-high", b'"\\ud800"'), ("lone-low", b'"\\udc00"'), ("reversed", b'"\\ude00\\ud83d"'),
                       ("high-then-char", b'"\\ud83da"')):
        yield probe("cache.text.surrogate", label, with_meta(raw), f"metadata {raw.decode()}")
    for label, raw in (("short-escape", b'"\\ud80"'), ("bad-hex", b'"\\ud80g"'), ("upper-u", b'"\\U0041"')):
        yield probe("cache.text.surrogate", label, with_meta(raw), f"metadata {raw.decode()}")
    yield probe("cache.text.surrogate", "data-path-lone", edit({**moved, "a.bin": shard0},
                lambda d: d["records"][0].update(dataPath="a\ud800.bin")), "a dataPath with a lone surrogate")
    yield probe("cache.text.surrogate", "data-path-pair", edit({**moved, "a\U0001f600.bin": shard0},
                lambda d: d["records"][0].update(dataPath="a\U0001f600.bin")), "a dataPath with a surrogate pair")
    for label, raw in (("name-lone-high", b'"\\ud800"'), ("name-pair", b'"\\ud83d\\ude00"'),
                       ("name-lone-then-char", b'"\\ud800x"'), ("format-lone", None)):
        if raw is None:
            yield probe("cache.text.surrogate", label, edit(b, _set(1, format="r\udc00w")), "a format label with a lone surrogate")
            continue
        yield probe("cache.text.surrogate", label, _text(b, text.replace(b'"name":"i"', b'"name":' + raw, 1)),
                    f"the int32's name {raw.decode()}")


__all__ = ["RULES", "Bound", "base", "bound_caches", "edit", "layout"]
