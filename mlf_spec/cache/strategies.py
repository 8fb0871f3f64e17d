"""Hypothesis strategies for tensor caches: valid caches as TVM's writer makes them (any
tensors, encodings, shard caps, cache versions) and precisely broken ones (one rule broken,
named by its finding code), as in-memory folders (file name -> bytes).

    >>> from hypothesis import given
    >>> from mlf_spec.cache import strategies as cs
    >>> @given(cs.caches())
    ... def test_reads(cache): ...
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import strategies as st

from .codec import render
from .index import INDEX_NAMES, LATEST

#: dtypes dump_tensor_cache writes from NumPy / ml_dtypes arrays.
DTYPES = ("float32", "float16", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
          "uint64", "bool", "bfloat16", "float8_e4m3fn", "float8_e5m2")


@dataclass(frozen=True)
class CacheDraw:
    """A drawn cache: its ``files``, the ``arrays`` written and the options used."""

    files: dict[str, bytes]
    arrays: dict[str, np.ndarray]
    encode_format: str
    shard_cap_mb: float
    version: int


def _np(name: str) -> np.dtype:
    from .dtypes import parse

    dt = parse(name)
    assert dt is not None and dt.numpy is not None
    return dt.numpy


@st.composite
def arrays(draw: Any, dtypes: tuple[str, ...] = DTYPES, max_dims: int = 3, max_side: int = 5) -> np.ndarray:
    """An array of one of ``dtypes`` (any bit patterns, NaNs included)."""
    t = _np(draw(st.sampled_from(dtypes)))
    shape = tuple(draw(st.lists(st.integers(0, max_side), max_size=max_dims)))
    n = int(np.prod(shape)) if shape else 1
    raw = draw(st.binary(min_size=n * t.itemsize, max_size=n * t.itemsize))
    a = np.frombuffer(raw, dtype=np.uint8).view(t).reshape(shape).copy()
    return np.asarray(a != 0) if t.kind == "b" else a


@st.composite
def caches(draw: Any, max_tensors: int = 6, versions: tuple[int, ...] | None = None, max_dims: int = 3,
           max_side: int = 5) -> CacheDraw:
    """A valid cache as dump_tensor_cache writes it (with mlf-spec's writer), in one of the
    index ``versions`` (default: every version mlf-spec writes), of at most ``max_tensors``
    arrays of at most ``max_dims`` extents of at most ``max_side``."""
    names = draw(st.lists(st.text(min_size=1, max_size=8), max_size=max_tensors, unique=True))
    params = {n: draw(arrays(max_dims=max_dims, max_side=max_side)) for n in names}
    fmt = draw(st.sampled_from(("raw", "f32-to-bf16")))
    cap = draw(st.sampled_from((1 / 8192, 1 / 1024, 32)))
    version = draw(st.sampled_from(sorted(versions or INDEX_NAMES)))
    meta = draw(st.one_of(st.none(), st.dictionaries(st.text(max_size=4), st.integers(), max_size=2)))
    return CacheDraw(render(params, encode_format=fmt, shard_cap_mb=cap, version=version, metadata=meta),
                     params, fmt, cap, version)


#: The finding codes :func:`broken_caches` can produce.
BROKEN_KINDS = ("shard.size", "shard.md5", "shard.format", "shard.missing", "tensor.out-of-shard", "tensor.nbytes",
                "tensor.duplicate-name", "tensor.negative-extent", "tensor.dtype", "cache.metadata-missing")


@dataclass(frozen=True)
class BrokenCache:
    """A cache with one rule broken: ``kind`` is the finding code ``check`` must report."""

    files: dict[str, bytes]
    kind: str
    version: int = LATEST


@st.composite
def broken_caches(draw: Any, kinds: tuple[str, ...] = BROKEN_KINDS, versions: tuple[int, ...] = (LATEST,)) -> BrokenCache:
    """A valid cache with at least one tensor of data, in one of the index ``versions``, then
    one rule of ``kinds`` broken."""
    names = draw(st.lists(st.text(min_size=1, max_size=6), min_size=2, max_size=4, unique=True))
    params = {n: draw(arrays(dtypes=("float32", "int32", "float16"), max_dims=2).filter(lambda a: a.size > 0))
              for n in names}
    version = draw(st.sampled_from(versions))
    files = render(params, encode_format=draw(st.sampled_from(("raw", "f32-to-bf16"))),
                   shard_cap_mb=draw(st.sampled_from((1 / 8192, 32))), version=version)
    index_name = next(n for n in INDEX_NAMES.values() if n in files)
    doc = json.loads(files[index_name])
    kind = draw(st.sampled_from(kinds))
    s = draw(st.integers(0, len(doc["records"]) - 1))
    shard = doc["records"][s]
    rec = shard["records"][draw(st.integers(0, len(shard["records"]) - 1))]
    path = shard["dataPath"]
    if kind == "shard.size":
        extra = draw(st.integers(1, 8))
        files[path] = files[path][:-extra] if draw(st.booleans()) and len(files[path]) >= extra \
            else files[path] + b"\0" * extra
    elif kind == "shard.md5":
        data = bytearray(files[path])
        i = draw(st.integers(0, len(data) - 1))
        data[i] ^= draw(st.integers(1, 255))
        files[path] = bytes(data)
    elif kind == "shard.format":
        shard["format"] = draw(st.sampled_from(("raw", "zip-shard", "")))
    elif kind == "shard.missing":
        del files[path]
    elif kind == "tensor.out-of-shard":
        rec["byteOffset"] = shard["nbytes"] - rec["nbytes"] + draw(st.integers(1, 1 << 40))
    elif kind == "tensor.nbytes":
        rec["nbytes"] += draw(st.sampled_from((-1, 1, 2, -2))) if rec["nbytes"] > 2 else 3
    elif kind == "tensor.duplicate-name":
        others = [r for sh in doc["records"] for r in sh["records"] if r is not rec]
        rec["name"] = others[0]["name"]
    elif kind == "tensor.negative-extent":
        rec["shape"] = [-max(1, d) for d in rec["shape"]] or [-1]
    elif kind == "tensor.dtype":
        rec["dtype"] = draw(st.sampled_from(("float", "int0", "complex", "floatx", "q4f16_1")))
    elif kind == "cache.metadata-missing":
        doc.pop("metadata")
    files[index_name] = json.dumps(doc, indent=4).encode()
    if kind == "shard.md5" and hashlib.md5(files[path], usedforsecurity=False).hexdigest() == shard["md5sum"]:
        raise AssertionError("unreachable: a flipped byte changes the MD5")
    return BrokenCache(files, kind, version)
