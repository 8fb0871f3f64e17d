"""Named tensor caches, valid and broken, made deterministically from the rules: every
finding of spec/findings/cache_check.yaml from the side that breaks it and from the side that
keeps it, and every way an input is unreadable. They are the conformance vectors of the cache
(vectors/tensor-cache/, written by tools/generate.py), the seeds of the fuzz target, and the
cases the tests load with TVM's loaders."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .codec import render
from .index import INDEX_NAMES


@dataclass
class Case:
    """One cache: ``files`` (name -> bytes), the finding codes ``check`` must report
    (``findings``) and must not (``absent``), or the error class of an unreadable input
    (``error``); ``rule`` is the finding or rule exercised, ``doc`` says how."""

    id: str
    doc: str
    files: dict[str, bytes]
    rule: str
    findings: list[str] = field(default_factory=list)
    absent: list[str] = field(default_factory=list)
    error: str | None = None

    @property
    def strict_ok(self) -> bool:
        """Whether the codec's strict open accepts it (no fatal finding, readable)."""
        from .rules import FATAL

        return self.error is None and not FATAL.intersection(self.findings)

    def descriptor(self) -> dict[str, Any]:
        """The vector file's JSON (``<id>.vector.json`` beside the folder ``<id>/``)."""
        return {"id": self.id, "format": "tensor-cache", "input": f"{self.id}/", "rule": self.rule,
                "doc": self.doc, "files": sorted(self.files),
                "expected": ({"outcome": "unreadable", "error_class": self.error} if self.error else
                             {"outcome": "accept" if self.strict_ok else "reject",
                              "findings": sorted(set(self.findings)), "absent": sorted(set(self.absent))})}


def _params() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(22)
    return {"w": rng.standard_normal((4, 6)).astype("<f4"), "b": np.arange(6, dtype="<i4"),
            "h": rng.standard_normal(5).astype("<f2"), "flag": np.array([True, False, True])}


def base(**kw: Any) -> dict[str, bytes]:
    """The base cache: four tensors in one shard, f32-to-bf16 (as dump_tensor_cache's default)."""
    return render(_params(), metadata={"model": "case"}, **kw)


def _edit(files: dict[str, bytes], fn: Callable[[dict], None], name: str | None = None) -> dict[str, bytes]:
    out = dict(files)
    name = name or next(n for n in INDEX_NAMES.values() if n in out)
    doc = json.loads(out[name])
    fn(doc)
    out[name] = json.dumps(doc, indent=4).encode()
    return out


def _t(doc: dict, k: int, s: int = 0) -> dict:
    return doc["records"][s]["records"][k]


def _with(files: dict[str, bytes], **changes: bytes | None) -> dict[str, bytes]:
    out = dict(files)
    for k, v in changes.items():
        k = k.replace("__", ".").replace("_0", "_0")
        if v is None:
            out.pop(k, None)
        else:
            out[k] = v
    return out


def all_cases() -> list[Case]:
    """Every case, in a fixed order."""
    b = base()
    shard = b["params_shard_0.bin"]
    return _writer_cases(b) + _shard_and_record_cases(b, shard) + _warning_cases(b, shard) + _unreadable_cases(b)


def _writer_cases(b: dict[str, bytes]) -> list[Case]:
    """dump_tensor_cache's outputs (default, raw, sharded, version 1, dtypes, encoded empty and
    scalar tensors) and the info findings of a written cache."""
    return [
        Case("valid.base", "dump_tensor_cache's default output: f32-to-bf16 on the float32 tensor, the label on all",
             b, "tensor.format-ignored", findings=["tensor.format-ignored"],
             absent=["tensor.nbytes", "shard.md5", "shard.size", "tensor.out-of-shard", "shard.md5-syntax",
                     "tensor.shape-numpy", "cache.json-nonfinite", "cache.lone-surrogate", "cache.two-indexes"]),
        Case("valid.raw", "encode_format raw: no label is ignored", base(encode_format="raw"), "tensor.format-ignored",
             absent=["tensor.format-ignored", "shard.md5"]),
        Case("valid.sharded", "a 1 KiB shard cap over 5 tensors, one of them out of band",
             render({**_params(), "big": np.arange(200, dtype="<f4")}, shard_cap_mb=1 / 1024, encode_format="raw"),
             "shard.size", absent=["shard.size", "shard.gap", "tensor.overlap"]),
        Case("valid.version1", "ndarray-cache.json (TVM 0.16 to 0.21)", base(version=1), "cache.index-name",
             absent=["cache.index-name"]),
        Case("valid.dtypes", "bfloat16, float8_e4m3fn, bool, a scalar and an empty tensor",
             render({"bf": np.arange(4, dtype="<f4").astype(_ml("bfloat16")),
                     "f8": np.arange(4, dtype="<f4").astype(_ml("float8_e4m3fn")),
                     "s": np.array(2.5, dtype="<f4"), "e": np.zeros((0, 2), dtype="<f4"),
                     "t": np.array([True])}, encode_format="raw"),
             "tensor.nbytes", absent=["tensor.nbytes", "tensor.dtype", "tensor.dtype-numpy"]),
        Case("valid.empty-encoded", "an empty float32 tensor under f32-to-bf16 (stores nothing)",
             render({"e": np.zeros((0,), dtype="<f4"), "w": np.ones(2, dtype="<f4")}), "tensor.empty-encoded",
             findings=["tensor.empty-encoded"]),
        Case("valid.scalar-encoded", "a 0-d float32 tensor under f32-to-bf16, as dump_tensor_cache writes it "
             "(TVM 0.16's Python loader refuses it under NumPy 1.x)",
             render({"s": np.array(2.5, dtype="<f4"), "w": np.ones(2, dtype="<f4")}), "tensor.nbytes",
             absent=["tensor.nbytes", "tensor.empty-encoded"]),
        Case("info.md5-missing", "a shard record without md5sum (before 835bc82665)",
             _edit(b, lambda d: d["records"][0].pop("md5sum")), "shard.md5-missing", findings=["shard.md5-missing"]),
        Case("info.unknown-key", "a key the writer never writes", _edit(b, lambda d: _t(d, 0).update(note="x")),
             "cache.unknown-key", findings=["cache.unknown-key"]),
    ]


def _shard_and_record_cases(b: dict[str, bytes], shard: bytes) -> list[Case]:
    """One shard's or record's rule broken: format, missing, size, md5, bytes past the shard,
    nbytes, extents, dtypes."""
    return [
        Case("broken.shard-format", "shard format zip-shard",
             _edit(b, lambda d: d["records"][0].update(format="zip-shard")), "shard.format", findings=["shard.format"]),
        Case("broken.shard-missing", "the shard file is not there", _with(b, params_shard_0__bin=None),
             "shard.missing", findings=["shard.missing"]),
        Case("broken.shard-shorter", "the shard is one byte short", _with(b, params_shard_0__bin=shard[:-1]),
             "shard.size", findings=["shard.size"]),
        Case("broken.shard-longer", "the shard has one byte more", _with(b, params_shard_0__bin=shard + b"\0"),
             "shard.size", findings=["shard.size"]),
        Case("broken.md5", "md5sum of other bytes",
             _edit(b, lambda d: d["records"][0].update(md5sum="0" * 32)), "shard.md5", findings=["shard.md5"]),
        Case("broken.out-of-shard", "a byteOffset past the shard's end",
             _edit(b, lambda d: _t(d, 1).update(byteOffset=len(shard))), "tensor.out-of-shard",
             findings=["tensor.out-of-shard"]),
        Case("broken.out-of-shard-last-byte", "a record that ends one byte past the shard",
             _edit(b, lambda d: _t(d, 3).update(byteOffset=len(shard) - _t(d, 3)["nbytes"] + 1)), "tensor.out-of-shard",
             findings=["tensor.out-of-shard"]),
        Case("valid.out-of-shard-exact", "the last record ends exactly at the shard's end", b, "tensor.out-of-shard",
             absent=["tensor.out-of-shard"]),
        Case("broken.negative-offset", "a negative byteOffset",
             _edit(b, lambda d: _t(d, 1).update(byteOffset=-4)), "tensor.out-of-shard", findings=["tensor.out-of-shard"]),
        Case("broken.nbytes", "nbytes 4 bytes short of shape x dtype",
             _edit(b, lambda d: _t(d, 1).update(nbytes=_t(d, 1)["nbytes"] - 4)), "tensor.nbytes",
             findings=["tensor.nbytes"]),
        Case("broken.nbytes-raw-label", "bf16 data relabelled raw: nbytes is half of float32's",
             _edit(b, lambda d: _t(d, 0).update(format="raw")), "tensor.nbytes", findings=["tensor.nbytes"]),
        Case("broken.shape-overflow", "extents whose byte size overflows int64",
             _edit(b, lambda d: _t(d, 1).update(shape=[1 << 40, 1 << 40])), "tensor.nbytes",
             findings=["tensor.nbytes"]),
        Case("broken.negative-extent", "a negative extent",
             _edit(b, lambda d: _t(d, 1).update(shape=[-6])), "tensor.negative-extent",
             findings=["tensor.negative-extent"]),
        Case("broken.dtype", "a dtype TVM cannot parse",
             _edit(b, lambda d: _t(d, 1).update(dtype="int33x")), "tensor.dtype", findings=["tensor.dtype"]),
        Case("broken.dtype-no-bits", "dtype float (no bits) on a float32 under f32-to-bf16: TVM's C++ loaders read it "
             "as float32 (their parser's default width), the Python loader and the table do not",
             _edit(b, lambda d: _t(d, 0).update(dtype="float")), "tensor.dtype", findings=["tensor.dtype"]),
    ]


def _warning_cases(b: dict[str, bytes], shard: bytes) -> list[Case]:
    """What the loaders read with a finding: TVM-only dtypes, format labels, names, metadata,
    NaN, surrogates, md5 syntax, shapes NumPy cannot hold, a dataPath form, two indexes,
    overlaps, gaps, empty shards."""
    return [
        Case("warning.dtype-numpy", "int4: TVM's Python loader cannot read it, the C++ loader can",
             _edit(b, lambda d: _t(d, 1).update(dtype="int4", shape=[48], format="raw")), "tensor.dtype-numpy",
             findings=["tensor.dtype-numpy"]),
        Case("warning.format-unknown", "a format label no loader knows, on raw bytes",
             _edit(b, lambda d: _t(d, 1).update(format="q4f16")), "tensor.format-unknown",
             findings=["tensor.format-unknown"]),
        Case("warning.duplicate-name", "two records named w",
             _edit(b, lambda d: _t(d, 1).update(name="w")), "tensor.duplicate-name",
             findings=["tensor.duplicate-name"]),
        Case("broken.metadata-missing", "no metadata key",
             _edit(b, lambda d: d.pop("metadata")), "cache.metadata-missing", findings=["cache.metadata-missing"]),
        Case("warning.json-nonfinite", "NaN in metadata (Python's json and tvm-ffi read it, JSON.parse does not)",
             _edit(b, lambda d: d["metadata"].update(scale=float("nan"))), "cache.json-nonfinite",
             findings=["cache.json-nonfinite"]),
        Case("warning.lone-surrogate", "a tensor name holding a lone surrogate escape (the C++ loader refuses it)",
             _edit(b, lambda d: _t(d, 1).update(name="\ud800b")), "cache.lone-surrogate",
             findings=["cache.lone-surrogate"]),
        Case("warning.md5-syntax", "md5sum in upper case (compared case-insensitively: it matches)",
             _edit(b, lambda d: d["records"][0].update(md5sum=d["records"][0]["md5sum"].upper())), "shard.md5-syntax",
             findings=["shard.md5-syntax"], absent=["shard.md5"]),
        Case("warning.shape-numpy", "an empty float32 of shape [0, 2^63-1]: NumPy cannot hold it, the C++ loader reads it",
             _edit(b, lambda d: d["records"][0]["records"].append(
                 {"name": "e", "shape": [0, (1 << 63) - 1], "dtype": "float32", "format": "raw", "nbytes": 0,
                  "byteOffset": len(shard)})), "tensor.shape-numpy", findings=["tensor.shape-numpy"]),
        Case("broken.data-path-slash", "a dataPath ending in / (the loaders' open fails: not a directory)",
             _edit(b, lambda d: d["records"][0].update(dataPath="params_shard_0.bin/")), "shard.missing",
             findings=["shard.missing"]),
        Case("warning.two-indexes", "tensor-cache.json and ndarray-cache.json in one folder (0.22 on reads the first)",
             {**b, "ndarray-cache.json": b["tensor-cache.json"]}, "cache.two-indexes", findings=["cache.two-indexes"]),
        Case("warning.overlap", "two records share bytes",
             _edit(b, lambda d: _t(d, 3).update(byteOffset=_t(d, 2)["byteOffset"])), "tensor.overlap",
             findings=["tensor.overlap"]),
        Case("info.gap", "bytes no tensor covers",
             _edit(_with(b, params_shard_0__bin=shard + b"\0" * 4), lambda d: d["records"][0].update(
                 nbytes=len(shard) + 4, md5sum=_md5(shard + b"\0" * 4))), "shard.gap", findings=["shard.gap"]),
        Case("warning.data-path", "a shard named other than params_shard_0.bin",
             _edit(_with(b, params_shard_0__bin=None, **{"weights.bin": shard}),
                   lambda d: d["records"][0].update(dataPath="weights.bin")), "shard.data-path",
             findings=["shard.data-path"]),
        Case("warning.shard-empty", "a shard record with no tensors",
             _edit(_with(b, params_shard_1__bin=b""), lambda d: d["records"].append(
                 {"dataPath": "params_shard_1.bin", "format": "raw-shard", "nbytes": 0, "records": [],
                  "md5sum": _md5(b"")})), "shard.empty", findings=["shard.empty"]),
    ]


def _unreadable_cases(b: dict[str, bytes]) -> list[Case]:
    """Inputs no loader reads: not JSON, not UTF-8, not a cache, the pre-release layouts,
    keys missing or of another type, unsafe dataPaths."""
    return [
        Case("unreadable.not-json", "the index is not JSON", _with(b, **{"tensor-cache.json": b"{\"records\": ["}),
             "index", error="MalformedError"),
        Case("unreadable.not-utf8", "the index is not UTF-8", _with(b, **{"tensor-cache.json": b"{\"a\": \"\xff\"}"}),
             "index", error="MalformedError"),
        Case("unreadable.not-cache", "a JSON object without records",
             _with(b, **{"tensor-cache.json": b"{\"metadata\": {}}"}), "index", error="ValidationError"),
        Case("unreadable.per-tensor-list", "the pre-release layout of c1f304497e: a list of per-tensor records",
             _with(b, **{"tensor-cache.json": json.dumps([{"name": "w", "shape": [1], "dtype": "float32",
                                                           "dataPath": "w.bin", "format": "raw"}]).encode()}),
             "cache.legacy-layout", error="ValidationError"),
        Case("unreadable.per-tensor-records", "the pre-release layout of 279317d4cd: per-tensor dataPath records",
             _with(b, **{"tensor-cache.json": json.dumps({"metadata": {}, "records": [
                 {"name": "w", "shape": [1], "dtype": "float32", "dataPath": "w.bin", "format": "raw"}]}).encode()}),
             "cache.legacy-layout", error="ValidationError"),
        Case("unreadable.key-missing", "a shard record without dataPath",
             _edit(b, lambda d: d["records"][0].pop("dataPath")), "index", error="ValidationError"),
        Case("unreadable.nbytes-string", "nbytes as a string", _edit(b, lambda d: _t(d, 1).update(nbytes="24")),
             "index", error="ValidationError"),
        Case("unreadable.extent-float", "an extent 6.0", _edit(b, lambda d: _t(d, 1).update(shape=[6.0])),
             "index", error="ValidationError"),
        Case("unreadable.nbytes-overflow", "nbytes 2^70", _edit(b, lambda d: _t(d, 1).update(nbytes=1 << 70)),
             "index", error="ValidationError"),
        Case("unreadable.data-path-absolute", "an absolute dataPath",
             _edit(b, lambda d: d["records"][0].update(dataPath="/etc/hostname")), "dataPath", error="UnsafePathError"),
        Case("unreadable.data-path-dotdot", "a dataPath that climbs out with ..",
             _edit(b, lambda d: d["records"][0].update(dataPath="../params_shard_0.bin")), "dataPath",
             error="UnsafePathError"),
        Case("unreadable.data-path-dotdot-back", "a dataPath that climbs out with .. and back into the folder "
             "(a loader that follows it finds the shard)",
             _edit(b, lambda d: d["records"][0].update(
                 dataPath="../unreadable.data-path-dotdot-back/params_shard_0.bin")), "dataPath",
             error="UnsafePathError"),
    ]


def _md5(data: bytes) -> str:
    import hashlib

    return hashlib.md5(data, usedforsecurity=False).hexdigest()


def _ml(name: str) -> Any:
    import ml_dtypes

    return getattr(ml_dtypes, name)


def vector_files() -> dict[str, bytes]:
    """The files of vectors/tensor-cache/ (relative paths under it -> bytes)."""
    files: dict[str, bytes] = {}
    cases = all_cases()
    for c in cases:
        for name, data in c.files.items():
            files[f"{c.id}/{name}"] = data
        files[f"{c.id}.vector.json"] = (json.dumps(c.descriptor(), indent=1) + "\n").encode()
    return files
