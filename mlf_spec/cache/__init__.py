"""The tensor cache (``tensor-cache.json``, earlier ``ndarray-cache.json``, plus
``params_shard_<n>.bin``): the weight format that TVM's ``tvm.contrib.tvmjs`` writes and
its Python, C++ and web runtimes load (spec/records/tensor_cache.yaml, docs/tensor-cache.md).

``open(path)`` reads the index lazily, ``load(path)`` returns the arrays as
``load_tensor_cache`` does, ``write(path, params)`` writes what ``dump_tensor_cache`` writes.
"""

from __future__ import annotations

from .codec import LazyCache, load, open, write  # noqa: A004
from .index import INDEX_NAMES, CacheIndex, ShardEntry, TensorEntry

__all__ = ["INDEX_NAMES", "CacheIndex", "LazyCache", "ShardEntry", "TensorEntry", "load", "open", "write"]
