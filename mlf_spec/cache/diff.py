"""Comparing two tensor caches by what the loaders return: names, dtypes, shapes, the
decoded values, and the metadata (layout differences such as sharding are not differences)."""

from __future__ import annotations

import os
from typing import Any

from . import sources


def compare(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The differences between the caches at ``a`` and ``b`` (empty: the same), each
    ``{"kind", "name", "message"}`` plus ``stats`` for data changes."""
    from mlf_spec.diff.params import data_stats, describe_stats

    out: list[dict[str, Any]] = []
    with sources.open(a) as x, sources.open(b) as y:
        if x.metadata != y.metadata:
            out.append({"kind": "metadata", "name": None, "message": "metadata differs"})
        for name in x.by_name:
            if name not in y.by_name:
                out.append({"kind": "removed", "name": name, "message": f"- {name}: only in A"})
        for name in y.by_name:
            if name not in x.by_name:
                out.append({"kind": "added", "name": name, "message": f"+ {name}: only in B"})
        for name, ta in x.by_name.items():
            tb = y.by_name.get(name)
            if tb is None:
                continue
            da, db = x.decoded_dtype(ta), y.decoded_dtype(tb)
            if da != db or ta.shape != tb.shape:
                out.append({"kind": "type", "name": name,
                            "message": f"~ {name}: {da}{list(ta.shape)} -> {db}{list(tb.shape)}"})
                continue
            va, vb = x.array(ta), y.array(tb)
            if va.tobytes() != vb.tobytes():
                stats = data_stats(va, vb, va.tobytes(), vb.tobytes())
                out.append({"kind": "data", "name": name, "message": f"~ {name}: {describe_stats(stats)}",
                            "stats": stats})
    return out
