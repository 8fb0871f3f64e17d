"""The "add" test model the tests share, as TVM wrote it (reference §2, §3, §5, §8; observed):
its graph JSON, the metadata of its v7 graph and operator exports, and builders of archives
shaped like TVM's exports (mlf_spec.mlf.strategies), each checked clean as it is built."""

from __future__ import annotations

import datetime
import json

from mlf_spec import archive, check, metadata
from mlf_spec.mlf.strategies import ArchiveSpec, ModuleSpec, Tensor, build_archive

# The "add" graph of the reference (§8; observed), in dmlc JSONWriter's layout.
ADD_GRAPH = """{
  "nodes": [
    {
      "op": "null",
      "name": "a",
      "inputs": []
    },
    {
      "op": "null",
      "name": "b",
      "inputs": []
    },
    {
      "op": "null",
      "name": "p0",
      "inputs": []
    },
    {
      "op": "tvm_op",
      "name": "tvmgen_add_fused_cast_add_multiply",
      "attrs": {
        "num_outputs": "1",
        "num_inputs": "3",
        "flatten_data": "0",
        "func_name": "tvmgen_add_fused_cast_add_multiply",
        "hash": "a44ae771ef7a6966"
      },
      "inputs": [
        [
          0,
          0,
          0
        ],
        [
          1,
          0,
          0
        ],
        [
          2,
          0,
          0
        ]
      ]
    }
  ],
  "arg_nodes": [0, 1, 2],
  "heads": [
    [
      3,
      0,
      0
    ]
  ],
  "attrs": {
    "dltype": [
      "list_str",
      [
        "uint8",
        "float32",
        "float32",
        "float32"
      ]
    ],
    "device_index": [
      "list_int",
      [1, 1, 1, 1]
    ],
    "storage_id": [
      "list_int",
      [0, 1, 2, 3]
    ],
    "shape": [
      "list_shape",
      [
        [1, 2],
        [1, 2],
        [1, 2],
        [1, 2]
      ]
    ]
  },
  "node_row_ptr": [0, 1, 2, 3, 4]
}""".replace(",\n", ", \n")  # dmlc writes ", " before every newline

# The real output of the f7eed214d1 writer for the "add" model (reference §2, v7; observed).
ADD_V7 = """{
  "modules": {
    "add": {
      "executors": [
        "graph"
      ],
      "export_datetime": "2026-11-22 08:00:14Z",
      "memory": {
        "functions": {
          "main": [
            {
              "constants_size_bytes": 8,
              "device": 1,
              "inputs": {
                "a": {
                  "dtype": "uint8",
                  "size": 2
                },
                "b": {
                  "dtype": "float32",
                  "size": 8
                }
              },
              "io_size_bytes": 18,
              "outputs": {
                "output": {
                  "dtype": "float32",
                  "size": 8
                }
              },
              "workspace_size_bytes": 16
            }
          ],
          "operator_functions": [
            {
              "function_name": "tvmgen_add_fused_cast_add_multiply",
              "workspace": [
                {
                  "device": 1,
                  "workspace_size_bytes": 16
                }
              ]
            }
          ]
        },
        "sids": [
          {
            "input_binding": "a",
            "size_bytes": 2,
            "storage_id": 0
          },
          {
            "input_binding": "b",
            "size_bytes": 8,
            "storage_id": 1
          },
          {
            "input_binding": "p0",
            "size_bytes": 8,
            "storage_id": 2
          },
          {
            "size_bytes": 8,
            "storage_id": 3
          }
        ]
      },
      "model_name": "add",
      "style": "full-model",
      "target": [
        "c -keys=cpu -model=host"
      ]
    }
  },
  "version": 7
}"""

# The whole operator-style file the f7eed214d1 writer produced (reference §3; observed).
OPERATOR_V7 = ('{"version": 7, "model_name": "add", "export_datetime": "2026-11-22 08:02:53Z", "memory": {"add": '
               '[{"size_bytes": 2, "shape": [2], "dtype": "int8", "input_binding": null}, {"size_bytes": 1, '
               '"shape": [1], "dtype": "int8", "input_binding": null}, {"size_bytes": 2, "shape": [2], "dtype": '
               '"int8", "input_binding": null}]}, "target": ["c -keys=cpu -model=host"], "executors": [], '
               '"style": "operator"}')

TARGET = "c -keys=cpu -link-params=0 -model=host -runtime=c -system-lib=1"
NOW = datetime.datetime(2021, 5, 7, 10, 0, 0).strftime(metadata.DATETIME_FORMAT)


def add_module(executor: str = "graph", name: str = "add", **kw) -> ModuleSpec:
    """The "add" test model: cast(%a, "float32") + %b * %c with c bound as p0."""
    return ModuleSpec(name, executor, TARGET, NOW,
                      inputs=[Tensor("a", "uint8", [1, 2]), Tensor("b", "float32", [1, 2])],
                      outputs=[Tensor("output", "float32", [1, 2])],
                      params=[Tensor("p0", "float32", [1, 2])] if executor == "graph" else [],
                      graph=json.loads(ADD_GRAPH) if executor == "graph" else None,
                      sources=2, op_functions=[(f"tvmgen_{name}_fused_cast_multiply_add", 0)], workspace=0, **kw)


def tar(version: int, revision: str, *mods: ModuleSpec, style: str = "full-model") -> bytes:
    """An archive of these modules as that writer revision made it, checked clean."""
    data = build_archive(ArchiveSpec(version, revision, style, list(mods), 1_700_000_000.5)).to_bytes()
    assert check.check(data).findings == []
    return data


def real_graph_v7() -> bytes:
    """The observed graph-executor export of "add" by the f7eed214d1 writer."""
    m = add_module(name="add")
    m.target, m.datetime, m.workspace = "c -keys=cpu -model=host", "2026-11-22 08:00:14Z", 16
    m.op_functions = [("tvmgen_add_fused_cast_add_multiply", 16)]
    data = tar(7, "v7.templates", m)
    assert archive.open(data).read("metadata.json") == ADD_V7.encode()
    return data


def real_aot_v7() -> bytes:
    """An AOT export with Runtime("crt") and the C interface (observed shape, reference §2 v7)."""
    return tar(7, "v7.templates", add_module("aot", header=True, crt=True))


def multi_module_v7() -> bytes:
    """A v7 export of two modules: "add" (graph executor) and a conv2d (AOT, CRT, C interface)."""
    mod2 = ModuleSpec("mod2", "aot", "c -keys=cpu -model=host", "2026-11-22 08:00:14Z",
                      inputs=[Tensor("data", "int8", [1, 3, 64, 64]), Tensor("weight", "int8", [8, 3, 5, 5])],
                      outputs=[Tensor("output", "int32", [1, 8, 64, 64])], sources=2, header=True, crt=True,
                      op_functions=[("tvmgen_mod2_fused_nn_conv2d", 158088)], workspace=158088)
    return tar(7, "v7.templates", add_module("graph", name="mod1"), mod2)
