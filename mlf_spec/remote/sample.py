"""``--sample N``: N tensor records read by ranged GETs, chosen to cover every dtype and then
as many shards as N allows (spread evenly over the cache), decoded as TVM's loader decodes
them, with the NaN/Inf counts and summary statistics ``--stats`` gives. A record larger than
``cap`` bytes is read up to ``cap`` (its first elements), so that a sample's cost is bounded."""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from mlf_spec.cache import dtypes, encodings, rules
from mlf_spec.cache.index import TensorEntry
from mlf_spec.cache.stats import value_stats

from .cache import RemoteCache

#: bytes read per sampled record at most
CAP = 1 << 20


def choose(lazy: RemoteCache, n: int) -> list[TensorEntry]:
    """Up to ``n`` decodable records inside their shards: one per dtype first, then one per
    shard (shards spread evenly when there are more than ``n``), then records spread evenly."""
    ok = [t for t in lazy.tensors if _readable(lazy, t)]
    picked: dict[int, TensorEntry] = {}

    def take(t: TensorEntry) -> None:
        if len(picked) < n:
            picked.setdefault(id(t), t)

    seen: set[str] = set()
    for t in ok:
        if t.dtype not in seen:
            seen.add(t.dtype)
            take(t)
    by_shard: dict[int, TensorEntry] = {}
    for t in ok:
        by_shard.setdefault(t.shard, t)
    shards = sorted(by_shard)
    for t in _spread([by_shard[s] for s in shards], n - len(picked)):
        take(t)
    for t in _spread(ok, n):
        take(t)
    for t in ok:
        take(t)
    return sorted(picked.values(), key=lambda t: (t.shard, t.position))


def _spread(items: list[TensorEntry], k: int) -> list[TensorEntry]:
    if k <= 0 or not items:
        return []
    if k >= len(items):
        return list(items)
    return [items[(i * len(items)) // k] for i in range(k)]


def _readable(lazy: RemoteCache, t: TensorEntry) -> bool:
    dt = dtypes.parse(t.dtype)
    size = lazy.shard_size(t.shard)
    return (dt is not None and size is not None and min(t.shape, default=0) >= 0 and t.offset >= 0
            and t.offset + t.nbytes <= size and rules.expected_nbytes(dt, t.format, t.shape) == t.nbytes)


def read(lazy: RemoteCache, t: TensorEntry, cap: int = CAP) -> dict[str, Any]:
    """One sampled record: name, shard, the elements read of all, its stats and (when read
    whole) the SHA-256 of the decoded array as ``cache dump`` gives it."""
    dt = dtypes.parse(t.dtype)
    assert dt is not None
    numel = rules.numel(t.shape)
    out: dict[str, Any] = {"name": t.name, "dtype": t.dtype, "shard": lazy.index.shards[t.shard].data_path,
                           "offset": t.offset, "nbytes": t.nbytes, "elements": numel}
    whole = t.nbytes <= cap
    if dt.numpy is None or dt.lanes != 1:
        data = lazy.read_range(t.shard, t.offset, min(t.nbytes, cap))
        out.update(read=len(data), elements_read=None, stats=None,
                   sha256=hashlib.sha256(data).hexdigest() if whole else None, sha256_of="stored")
        return out
    if whole:
        arr = lazy.array(t)
        from mlf_spec.cache.reading import array_sha256

        out.update(read=t.nbytes, elements_read=numel, stats=value_stats(arr), sha256=array_sha256(arr),
                   sha256_of="decoded")
        return out
    encoded = encodings.applies(t.format, t.dtype)
    width = 2 if encoded else np.dtype(dt.numpy).itemsize
    k = max(1, cap // width)
    data = lazy.read_range(t.shard, t.offset, k * width)
    if encoded:
        arr = np.empty(k, dtype=dt.numpy)
        encodings.bf16_to_f32(np.frombuffer(data, dtype="<u2"), arr)
    else:
        arr = np.frombuffer(data, dtype=dt.numpy)
    out.update(read=len(data), elements_read=k, stats=value_stats(arr), sha256=None, sha256_of=None)
    return out
