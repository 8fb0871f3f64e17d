"""A cache as its loaders read it, as a JSON document: what ``mlf-spec cache dump --json``
prints (spec/records/cache_dump.yaml) and, without ``path``, the canonical reading of the
conformance kit (spec/records/canonical_tensor_cache.yaml).

A large cache is never a tree of per-tensor dicts: :func:`scan` reads every tensor once and
keeps 32 bytes of digest (and the value statistics as numbers) per tensor beside the index's
columns; :func:`json_pieces` and the text table are made from the two, a batch at a time."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from mlf_spec.errors import UnsupportedError

from .codec import LazyCache
from .index import TensorEntry

#: the keys of a tensor's value statistics (mlf_spec.cache.stats.value_stats), numbers then counts
STAT_VALUES = ("min", "max", "mean", "std")
STAT_COUNTS = ("nan", "inf")
_PIECE = 1 << 20  # characters of JSON text per piece


def array_sha256(arr: np.ndarray) -> str:
    """SHA-256 (hex) of an array's C-contiguous bytes."""
    return hashlib.sha256(np.ascontiguousarray(arr).reshape(-1).view(np.uint8).data).hexdigest()


def _array_digest(arr: np.ndarray) -> bytes:
    return hashlib.sha256(np.ascontiguousarray(arr).reshape(-1).view(np.uint8).data).digest()


class Scan:
    """What reading every tensor of a cache gave, in stored order: the SHA-256 of the array
    the loader returns (of the stored bytes for a dtype without a NumPy type: ``decoded``
    false) and, when asked for, the value statistics (numbers; None where a statistic is)."""

    def __init__(self, n: int, stats: bool) -> None:
        self.digests = bytearray(32 * n)
        self.decoded = bytearray(n)
        self.values = np.zeros((n, len(STAT_VALUES)), np.float64) if stats else None
        self.absent = np.zeros((n, len(STAT_VALUES)), np.bool_) if stats else None
        self.counts = np.zeros((n, len(STAT_COUNTS)), np.int64) if stats else None

    def sha256(self, k: int) -> str:
        """Tensor ``k``'s digest in hex."""
        return self.digests[32 * k:32 * k + 32].hex()

    def stats(self, k: int) -> dict[str, Any] | None:
        """Tensor ``k``'s value statistics as value_stats gives them (None: none taken)."""
        if self.values is None or self.absent is None or self.counts is None or not self.decoded[k]:
            return None
        out: dict[str, Any] = {key: None if self.absent[k, i] else float(self.values[k, i])
                               for i, key in enumerate(STAT_VALUES)}
        out.update((key, int(self.counts[k, i])) for i, key in enumerate(STAT_COUNTS))
        return out

    def _keep(self, k: int, stats: dict[str, Any]) -> None:
        assert self.values is not None and self.absent is not None and self.counts is not None
        if list(stats) != [*STAT_VALUES, *STAT_COUNTS]:
            raise ValueError(f"statistics with the keys of value_stats are expected, not {list(stats)}")
        for i, key in enumerate(STAT_VALUES):
            if stats[key] is None:
                self.absent[k, i] = True
            else:
                self.values[k, i] = stats[key]
        for i, key in enumerate(STAT_COUNTS):
            self.counts[k, i] = stats[key]


def scan(lazy: LazyCache, *, stats: Callable[[np.ndarray], dict[str, Any]] | None = None) -> Scan:
    """Read every tensor of ``lazy`` once (any MlfError comes here, before any output)."""
    out = Scan(len(lazy.tensors), stats is not None)
    for k, t in enumerate(lazy.tensors):
        try:
            arr = lazy.flat(t)  # 1-D: any shape, also one NumPy cannot hold (tensor.shape-numpy)
        except UnsupportedError:  # no NumPy type (int4, vectors): the stored bytes, as the C++ loader copies them
            h = hashlib.sha256()
            for block in lazy.raw_blocks(t):  # by pread, never mapped: no SIGBUS if the shard is cut
                h.update(block)
            out.digests[32 * k:32 * k + 32] = h.digest()
        else:
            out.digests[32 * k:32 * k + 32] = _array_digest(arr)
            out.decoded[k] = 1
            if stats is not None:
                out._keep(k, stats(arr))
            del arr
    return out


def head(lazy: LazyCache) -> dict[str, Any]:
    """The document without its tensors (``tensors`` is an empty list, last)."""
    from .index import shown_value

    metadata = shown_value(lazy.metadata) if lazy.index.surrogates else lazy.metadata
    return {"format": "tensor-cache", "index": lazy.index_name, "version": lazy.index.version,
            "shards": len(lazy.index.shards), "metadata": metadata, "tensors": []}


def entries(lazy: LazyCache, found: Scan) -> Iterator[dict[str, Any]]:
    """Per tensor record in stored order its name, dtype, shape, format, shard, offset, stored
    size, its SHA-256 and what it is of (and the value statistics where they were taken)."""
    from .index import is_unicode, shown, wtf8

    shards = [shown(s.data_path) for s in lazy.index.shards]
    t: TensorEntry
    for k, t in enumerate(lazy.tensors):
        entry: dict[str, Any] = {"name": shown(t.name)}
        if not is_unicode(t.name):
            entry["name_hex"] = wtf8(t.name).hex()
        entry.update(dtype=shown(t.dtype), shape=list(t.shape), format=shown(t.format), shard=shards[t.shard],
                     offset=t.offset, nbytes=t.nbytes, sha256=found.sha256(k),
                     sha256_of="decoded" if found.decoded[k] else "stored")
        s = found.stats(k)
        if s is not None:
            entry["stats"] = s
        yield entry


def document(lazy: LazyCache, *, stats: Callable[[np.ndarray], dict[str, Any]] | None = None) -> dict[str, Any]:
    """The whole document (small caches; :func:`json_pieces` streams a large one): per tensor
    record its entry (:func:`entries`); ``stats(array)`` adds a ``stats`` entry where the
    array decodes (it must give value_stats' keys)."""
    found = scan(lazy, stats=stats)
    return {**head(lazy), "tensors": list(entries(lazy, found))}


def json_pieces(lazy: LazyCache, found: Scan, first: dict[str, Any]) -> Iterator[str]:
    """The JSON text of ``{**first, **document}`` exactly as ``json.dumps(doc,
    ensure_ascii=False, separators=(",", ":"))`` makes it (``ensure_ascii=True`` when the
    text cannot be UTF-8), in pieces of about a MiB: the document is never whole in memory."""
    import json

    top = {**first, **head(lazy)}
    text = json.dumps(top, ensure_ascii=False, separators=(",", ":"))
    try:  # the tensors' strings are shown(): only the head can hold a lone surrogate
        text.encode("utf-8")
        ascii_only = False
    except UnicodeEncodeError:  # a lone surrogate (undecodable bytes kept): escape, stay valid UTF-8
        ascii_only = True
        text = json.dumps(top, ensure_ascii=True, separators=(",", ":"))
    assert text.endswith("[]}")
    encode = json.JSONEncoder(ensure_ascii=ascii_only, separators=(",", ":")).encode
    batch, size = [text[:-2]], len(text)
    for k, entry in enumerate(entries(lazy, found)):
        piece = encode(entry)
        batch.append("," + piece if k else piece)
        size += len(piece) + 1
        if size >= _PIECE:
            yield "".join(batch)
            batch, size = [], 0
    batch.append("]}")
    yield "".join(batch)


__all__ = ["Scan", "array_sha256", "document", "entries", "head", "json_pieces", "scan"]
