"""Small, deterministic artifacts for the command-line benchmarks."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from mlf_spec import params

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))

from make_example_artifacts import small_archive  # noqa: E402

__all__ = ["small_archive", "small_archive_v6", "small_params"]


def small_params() -> bytes:
    """A .params file of eight small tensors of mixed dtypes."""
    rng = np.random.default_rng(0)
    return params.dumps({
        "conv1_weight": rng.standard_normal((8, 3, 3, 3), dtype=np.float32),
        "conv1_bias": np.zeros(8, np.float32),
        "fc_weight": rng.standard_normal((4, 8)).astype(np.float16),
        "mask": np.array([True, False, True]),
        "step": np.int64(1000),
        "empty": np.zeros((0, 4), np.float16),
        "ids": np.arange(16, dtype=np.int32),
        "scale": np.float32(0.5),
    })


def small_archive_v6() -> bytes:
    """The small archive downgraded to metadata version 6 (for timing ``upgrade``)."""
    from mlf_spec import migrate

    return migrate.downgrade(small_archive(), to=6).to_bytes()
