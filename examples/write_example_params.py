"""Write a small example .params file with mlf-spec's own writer (the README's first command).

    python examples/write_example_params.py example.params
"""

from __future__ import annotations

import sys

import ml_dtypes
import numpy as np

from mlf_spec import params


def main(path: str) -> None:
    """Write a ResNet-ish handful of tensors of mixed dtypes to ``path``."""
    rng = np.random.default_rng(0)
    tensors = {
        "conv1_weight": rng.standard_normal((8, 3, 3, 3), dtype=np.float32),
        "conv1_bias": np.zeros(8, np.float32),
        "fc_weight_bf16": rng.standard_normal((4, 8)).astype(ml_dtypes.bfloat16),
        "fc_scale_fp8": np.linspace(-2, 2, 4).astype(ml_dtypes.float8_e4m3fn),
        "mask": np.array([True, False, True]),
        "step": np.int64(1000),
        "empty": np.zeros((0, 4), np.float16),
        "packed_int4": params.StoredTensor.of(0, 4, 1, (4,), bytes([0x21, 0x43, 0, 0])),
    }
    params.save(tensors, path)
    print(f"wrote {path} ({len(tensors)} tensors)", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "example.params")
