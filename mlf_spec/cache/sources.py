"""Where a cache is opened from: a local folder or index (:mod:`.codec`), or a URL (``hf://``,
``https://``, ``s3://`` ...) read in place by :mod:`mlf_spec.remote` (the ``remote`` extra).
``mlf_spec.cache.open`` and ``load`` are these."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from . import codec


def open(path: str | os.PathLike[str], *, strict: bool = True) -> codec.LazyCache:  # noqa: A001
    """:func:`mlf_spec.cache.codec.open` for a path; for a URL the remote cache, whose index
    is read and whose shard sizes are asked for (no shard byte is read)."""
    if isinstance(path, str) and "://" in path:
        from mlf_spec.remote import is_remote

        if is_remote(path):
            from mlf_spec.remote.cache import open_remote

            return open_remote(path, strict=strict)
    return codec.open(path, strict=strict)


def load(path: str | os.PathLike[str]) -> tuple[dict[str, np.ndarray], Any]:
    """``(arrays by name, metadata)`` as ``load_tensor_cache`` gives them, from a path or a URL."""
    with open(path) as lazy:
        return lazy.arrays(), lazy.metadata
