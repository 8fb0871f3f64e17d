"""A cache as its loaders read it, as a JSON document: what ``mlf-spec cache dump --json``
prints (spec/records/cache_dump.yaml) and, without ``path``, the canonical reading of the
conformance kit (spec/records/canonical_tensor_cache.yaml)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import numpy as np

from mlf_spec.errors import UnsupportedError

from .codec import LazyCache


def array_sha256(arr: np.ndarray) -> str:
    """SHA-256 (hex) of an array's C-contiguous bytes."""
    return hashlib.sha256(np.ascontiguousarray(arr).reshape(-1).view(np.uint8).data).hexdigest()


def document(lazy: LazyCache, *, stats: Callable[[np.ndarray], dict[str, Any]] | None = None) -> dict[str, Any]:
    """Per tensor record in stored order its name, dtype, shape, format, shard, offset, stored
    size and the SHA-256 of the array the loader returns (of the stored bytes for a dtype
    without a NumPy type); ``stats(array)`` adds a ``stats`` entry where the array decodes."""
    from .index import is_unicode, shown, shown_value, wtf8

    tensors = []
    for t in lazy.tensors:
        entry: dict[str, Any] = {"name": shown(t.name)}
        if not is_unicode(t.name):
            entry["name_hex"] = wtf8(t.name).hex()
        entry.update(dtype=shown(t.dtype), shape=list(t.shape), format=shown(t.format),
                     shard=shown(lazy.index.shards[t.shard].data_path), offset=t.offset, nbytes=t.nbytes)
        try:
            arr = lazy.flat(t)  # 1-D: any shape, also one NumPy cannot hold (tensor.shape-numpy)
        except UnsupportedError:  # no NumPy type (int4, vectors): the stored bytes, as the C++ loader copies them
            h = hashlib.sha256()
            for block in lazy.raw_blocks(t):  # by pread, never mapped: no SIGBUS if the shard is cut
                h.update(block)
            entry["sha256"] = h.hexdigest()
            entry["sha256_of"] = "stored"
        else:
            entry["sha256"] = array_sha256(arr)
            entry["sha256_of"] = "decoded"
            if stats is not None:
                entry["stats"] = stats(arr)
        tensors.append(entry)
    metadata = shown_value(lazy.metadata) if lazy.index.surrogates else lazy.metadata
    return {"format": "tensor-cache", "index": lazy.index_name, "version": lazy.index.version,
            "shards": len(lazy.index.shards), "metadata": metadata, "tensors": tensors}

__all__ = ["array_sha256", "document"]
