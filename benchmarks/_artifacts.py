"""Small, deterministic artifacts for the command-line benchmarks."""

from __future__ import annotations

import numpy as np

from mlf_spec import params
from mlf_spec.mlf.strategies import ArchiveSpec, ModuleSpec, Tensor, build_archive

TARGET = "c -keys=cpu -link-params=0 -model=host -runtime=c -system-lib=1"


def _add_graph() -> dict:
    """The GraphExecutor graph of ``cast(a, float32) + b * p0`` as relay wrote it."""
    func = "tvmgen_add_fused_cast_add_multiply"
    return {
        "nodes": [{"op": "null", "name": n, "inputs": []} for n in ("a", "b", "p0")]
        + [{"op": "tvm_op", "name": func, "attrs": {"num_outputs": "1", "num_inputs": "3", "flatten_data": "0",
                                                      "func_name": func, "hash": "a44ae771ef7a6966"},
            "inputs": [[0, 0, 0], [1, 0, 0], [2, 0, 0]]}],
        "arg_nodes": [0, 1, 2],
        "heads": [[3, 0, 0]],
        "attrs": {"dltype": ["list_str", ["uint8", "float32", "float32", "float32"]],
                  "device_index": ["list_int", [1, 1, 1, 1]],
                  "storage_id": ["list_int", [0, 1, 2, 3]],
                  "shape": ["list_shape", [[1, 2]] * 4]},
        "node_row_ptr": [0, 1, 2, 3, 4],
    }


def small_archive(name: str = "add", seed: int = 0) -> bytes:
    """A v7 full-model archive of one small graph module (about 20 kB), as TVM wrote it;
    ``seed`` changes the export time so that archives differ."""
    mod = ModuleSpec(name, "graph", TARGET, f"2021-05-07 10:{seed // 60 % 60:02d}:{seed % 60:02d}Z",
                     inputs=[Tensor("a", "uint8", [1, 2]), Tensor("b", "float32", [1, 2])],
                     outputs=[Tensor("output", "float32", [1, 2])], params=[Tensor("p0", "float32", [1, 2])],
                     graph=_add_graph(), sources=2, op_functions=[(f"tvmgen_{name}_fused_cast_add_multiply", 0)])
    return build_archive(ArchiveSpec(7, "v7.templates", "full-model", [mod], 1.7e9 + seed)).to_bytes()


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
