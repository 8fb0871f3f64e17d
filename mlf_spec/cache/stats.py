"""Value statistics of a decoded tensor, the shape of ``cache dump --stats`` (local or remote)."""

from __future__ import annotations

from typing import Any

import numpy as np


def value_stats(arr: np.ndarray) -> dict[str, Any]:
    """min, max, mean, std over the finite elements and the NaN/Inf counts; all None (counts 0)
    for an empty array or one NumPy cannot turn into float64."""
    out: dict[str, Any] = {"min": None, "max": None, "mean": None, "std": None, "nan": 0, "inf": 0}
    if arr.size == 0:
        return out
    try:
        f = arr.astype(np.float64)
    except (TypeError, ValueError):
        return out
    finite = np.isfinite(f)
    out["nan"], out["inf"] = int(np.isnan(f).sum()), int(np.isinf(f).sum())
    if finite.any():
        v = f[finite]
        out.update(min=float(v.min()), max=float(v.max()), mean=float(v.mean()), std=float(v.std()))
    return out
