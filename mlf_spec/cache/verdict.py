"""``--tvm VERSION`` for tensor caches: the facts of each part of an opened cache for the
rules of spec/verdicts/cache_read_rules.yaml (the engine, mlf_spec.verdict, knows no rule)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, overload

from . import dtypes, encodings, rules

if TYPE_CHECKING:
    from mlf_spec.verdict.engine import Verdict

    from .codec import LazyCache

RULES = "cache_read_rules"
# TVM's C++ DataType string parser (String2DLDataType to 0.20, tvm-ffi's StringToDLDataType from
# 0.21) starts from 32 bits (bfloat: 16) and keeps it when the spelling's bits are absent or 0
_CPP_DEFAULT = re.compile(r"(?P<kind>u?int|b?float)(?P<bits>0*)(?P<lanes>x[0-9]+)?")
_CPP_DEFAULT_BITS = {"int": 32, "uint": 32, "float": 32, "bfloat": 16}


def cpp_default_spelling(text: str) -> str | None:
    """The dtype the C++ loaders read a spelling without bits (``float``, ``int0``, ``uintx2``) as
    (``float32``, ``int32``, ``uint32x2``); None when ``text`` is not such a spelling."""
    m = _CPP_DEFAULT.fullmatch(text)
    if m is None:
        return None
    spelled = f"{m['kind']}{_CPP_DEFAULT_BITS[m['kind']]}{m['lanes'] or ''}"
    return spelled if dtypes.parse(spelled) is not None else None


def parts(lazy: LazyCache) -> Sequence[Any]:
    """The parts of the cache in the loaders' order (index, then each shard and its tensors):
    the index's and the shards' made here (each shard's MD5 read once), the tensors' made
    again on each pass (a reader's pass over a million records holds none of them)."""
    from mlf_spec.verdict.engine import Part

    idx = lazy.index
    out = [Part("index", {"named": idx.version or 0, "has_metadata": int(idx.has_metadata),
                                     "lone_surrogate": int(idx.surrogates), "nonfinite": int(idx.nonfinite > 0)}, lazy.index_name)]
    shards: list[Any] = []
    for i, shard in enumerate(idx.shards):
        size = lazy.shard_size(i)
        md5_bad = 0
        if shard.md5sum is not None and shard.md5_comparable and size is not None:
            h = hashlib.md5(usedforsecurity=False)
            for block in lazy.shard_blocks(i):
                h.update(block)
            md5_bad = int(h.hexdigest() != shard.md5sum.lower())
        shards.append(Part("shard", {"exists": int(size is not None), "format_ok": int(shard.format == "raw-shard"),
                                  "size_ok": int(size == shard.nbytes), "md5_bad": md5_bad}, shard.path, shard.data_path))
    return _Parts(out[0], shards, lazy)


class _Parts(Sequence[Any]):
    def __init__(self, index: Any, shards: list[Any], lazy: LazyCache) -> None:
        self._index, self._shards, self._lazy = index, shards, lazy

    def __iter__(self) -> Iterator[Any]:
        yield self._index
        # a repeated name's records but its last: the loaders keep the last
        dropped = self._lazy.index.tensors.by_name().dropped()
        for shard, part in zip(self._lazy.index.shards, self._shards):
            yield part
            yield from _tensor_parts(shard, dropped)

    def __len__(self) -> int:
        return 1 + len(self._shards) + len(self._lazy.tensors)

    @overload
    def __getitem__(self, i: int) -> Any: ...

    @overload
    def __getitem__(self, i: slice) -> list[Any]: ...

    def __getitem__(self, i: int | slice) -> Any:
        return list(self)[i]


def _tensor_parts(shard: Any, dropped: set[int]) -> Iterator[Any]:
    """The parts of ``shard``'s tensors, read off the columns: the facts of a record's dtype,
    format, shape and size made once per distinct combination, no record object made."""
    from mlf_spec.verdict.engine import Part

    cols, lo, hi = shard.tensors.columns()
    if hi == lo:
        return
    shapes, dtypes_, formats = cols.kind_tables()
    shape_ids, dtype_ids, format_ids = (ids.tolist() for ids in cols.kind_ids(lo, hi))
    kinds: dict[tuple[int, int, int, int], dict[str, int]] = {}
    path, end = shard.path, shard.nbytes
    for k, (name, sh, d, f, nb, off) in enumerate(zip(cols.names_of(lo, hi), shape_ids, dtype_ids, format_ids,
                                                      cols.nbytes[lo:hi].tolist(), cols.offsets[lo:hi].tolist())):
        key = (sh, d, f, nb)
        base = kinds.get(key)
        if base is None:
            if len(kinds) > 1 << 16:  # distinct kinds are few in a model; a hostile index cannot grow it
                kinds.clear()
            base = kinds[key] = _kind_facts(shapes[sh], dtypes_[d], formats[f], nb)
        yield Part("tensor", {**base, "past_end": int(off + nb > end), "negative_offset": int(off < 0),
                              "dropped": int(lo + k in dropped)}, f"{path}.records[{k}]", name)


def _kind_facts(shape: tuple[int, ...], dtype: str, fmt: str, nbytes: int) -> dict[str, int]:
    """The facts of a tensor record that depend on its shape, dtype, format and size alone."""
    dt = dtypes.parse(dtype)
    cpp_text = cpp_default_spelling(dtype) if dt is None else None
    cpp_dt = dtypes.parse(cpp_text) if cpp_text else None
    nbytes_ok = bytewise_ok = cpp_nbytes_ok = 0
    if cpp_dt is not None and all(d >= 0 for d in shape):
        cpp_nbytes_ok = int(rules.expected_nbytes(cpp_dt, fmt, shape) == nbytes)
    if dt is not None and all(d >= 0 for d in shape):
        nbytes_ok = int(rules.expected_nbytes(dt, fmt, shape) == nbytes)
        bits = encodings.stored_bits(fmt, dtype, dt.bits) * dt.lanes
        bytewise_ok = int(rules.numel(shape) * ((bits + 7) // 8) == nbytes)
    return {
        "parsed": int(dt is not None),
        "since_minor": dt.since[1] if dt is not None and dt.since else 0,
        "until_minor": dt.until[1] if dt is not None and dt.until else 0,
        "cpp_default": int(cpp_dt is not None),
        "cpp_default_bfloat": int(cpp_dt is not None and dtype.startswith("bfloat")),
        "cpp_default_nbytes_ok": cpp_nbytes_ok,
        "python_numpy": int(dtypes.python_reads(dtype)),
        "nbytes_ok": nbytes_ok,
        "nbytes_ok_bytewise": bytewise_ok,
        "format_known": int(fmt in encodings.ENCODINGS),
        "empty_encoded": int(encodings.applies(fmt, dtype) and rules.numel(shape) == 0),
        "numpy_shape_bad": int(rules.numpy_shape_bad(shape, dt)),
        "scalar_encoded": int(encodings.applies(fmt, dtype) and len(shape) == 0),
    }


def verdict(lazy: LazyCache, version: str) -> Verdict:
    """What TVM ``version``'s Python and C++ loaders do with the cache (worst first)."""
    from mlf_spec.verdict import engine

    spec = engine.rules(RULES)
    ev = engine.Evaluator(engine.reader_version(version), None, spec=spec)
    return ev.read(parts(lazy), None, "not needed: the cache layout has no writer-dependent meaning")
