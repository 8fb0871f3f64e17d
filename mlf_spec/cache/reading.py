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
    tensors = []
    for t in lazy.tensors:
        entry: dict[str, Any] = {"name": t.name, "dtype": t.dtype, "shape": list(t.shape), "format": t.format,
                                 "shard": lazy.index.shards[t.shard].data_path, "offset": t.offset, "nbytes": t.nbytes}
        try:
            arr = lazy.array(t)
        except UnsupportedError:  # no NumPy type (int4, vectors): the stored bytes, as the C++ loader copies them
            entry["sha256"] = hashlib.sha256(lazy.raw(t)).hexdigest()
            entry["sha256_of"] = "stored"
        else:
            entry["sha256"] = array_sha256(arr)
            entry["sha256_of"] = "decoded"
            if stats is not None:
                entry["stats"] = stats(arr)
        tensors.append(entry)
    return {"format": "tensor-cache", "index": lazy.index_name, "version": lazy.index.version,
            "shards": len(lazy.index.shards), "metadata": lazy.metadata, "tensors": tensors}


__all__ = ["array_sha256", "document"]
