"""The tensor cache (``tensor-cache.json``, earlier ``ndarray-cache.json``, plus
``params_shard_<n>.bin``): the weight format that TVM's ``tvm.contrib.tvmjs`` writes and
its Python, C++ and web runtimes load (spec/records/tensor_cache.yaml, docs/tensor-cache.md).

``open(path)`` reads the index lazily, ``load(path)`` returns the arrays as
``load_tensor_cache`` does, ``write(path, params)`` writes what ``dump_tensor_cache`` writes.
``open`` and ``load`` take URLs too (``hf://``, ``https://``, ``s3://``: mlf_spec.remote).
"""

from __future__ import annotations

from .codec import LazyCache, write
from .index import INDEX_NAMES, CacheIndex, ShardEntry, TensorEntry
from .sources import load, open  # noqa: A004

__all__ = ["INDEX_NAMES", "CacheIndex", "LazyCache", "ShardEntry", "TensorEntry", "load", "open", "write"]
