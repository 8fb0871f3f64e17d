"""Write a folder of small example artifacts, for trying the how-to pages (docs/howto/).

    python examples/make_example_artifacts.py demo

    demo/build-1/add.tar       an MLF v7 archive of a small graph model, as TVM writes it
    demo/build-2/add.tar       the same model built again: other weights, another export time
    demo/build-1/add.params    the parameters of each build as a .params file
    demo/build-2/add.params
    demo/ci/                   a folder to check: six clean archives, one with a finding
                               (a storage size that disagrees with the graph), one
                               truncated archive, and a text file that is skipped
    demo/aot/add.tar           an AOT build with the standalone CRT and its templates (what
                               a downgrade below version 7 loses)

    python examples/make_example_artifacts.py --docs DIR

writes the files the Python examples of README.md and docs/ name (model.params, model.tar,
metadata.json, deploy.so) into DIR; the test suite runs every example there.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from mlf_spec import params
from mlf_spec.mlf.archive import Archive
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


def small_archive_object(name: str = "add", seed: int = 0) -> Archive:
    """A v7 full-model archive of one small graph module, as TVM wrote it; ``seed``
    changes the export time (and the archive's mtimes)."""
    mod = ModuleSpec(name, "graph", TARGET, f"2021-05-07 10:{seed // 60 % 60:02d}:{seed % 60:02d}Z",
                     inputs=[Tensor("a", "uint8", [1, 2]), Tensor("b", "float32", [1, 2])],
                     outputs=[Tensor("output", "float32", [1, 2])], params=[Tensor("p0", "float32", [1, 2])],
                     graph=_add_graph(), sources=2, op_functions=[(f"tvmgen_{name}_fused_cast_add_multiply", 0)])
    return build_archive(ArchiveSpec(7, "v7.templates", "full-model", [mod], 1.7e9 + seed))


def small_archive(name: str = "add", seed: int = 0) -> bytes:
    """:func:`small_archive_object` as tar bytes (about 30 kB)."""
    return small_archive_object(name, seed).to_bytes()


def aot_archive_object() -> Archive:
    """An AOT v7 archive with the standalone CRT and its templates."""
    aot = ModuleSpec("add", "aot", TARGET, "2021-05-07 10:00:00Z",
                     inputs=[Tensor("a", "uint8", [1, 2]), Tensor("b", "float32", [1, 2])],
                     outputs=[Tensor("output", "float32", [1, 2])], sources=2, header=True, crt=True,
                     op_functions=[("tvmgen_add_fused_cast_add_multiply", 0)])
    return build_archive(ArchiveSpec(7, "v7.templates", "full-model", [aot], 1.7e9))


def doc_files(out: Path) -> None:
    """The files README.md's and docs/'s Python examples read: model.params, model.tar (a v7
    graph archive of one module called ``default``), its metadata.json and deploy.so (a
    shared object whose tvm-ffi blob holds a _lib root importing a const_loader module)."""
    from mlf_spec import blob
    from mlf_spec.fuzzing.seeds import elf_with_blob

    out.mkdir(parents=True, exist_ok=True)
    params.save({"w": np.ones((2, 3), "float32")}, out / "model.params")
    a = small_archive_object("default")
    a.write(out / "model.tar")
    (out / "metadata.json").write_bytes(a.read("metadata.json"))
    lib = blob.Module.lib(blob.Module.of("const_loader", variables=["c"], arrays=[np.ones(3, "f4")],
                                         symbols=["f"], const_vars=[["c"]]))
    (out / "deploy.so").write_bytes(elf_with_blob(blob.build(lib), "__tvm_ffi__library_bin", shared=True))


def main(out: Path) -> None:
    """Write the example folder (see the module doc)."""
    for n, (seed, p0) in enumerate([(0, [[0.5, 1.5]]), (75, [[0.5, 1.25]])], start=1):
        build = out / f"build-{n}"
        build.mkdir(parents=True, exist_ok=True)
        a = small_archive_object("add", seed)
        weights = params.dumps({"p0": np.array(p0, "float32")})
        a.replace("parameters/add.params", weights)
        a.write(build / "add.tar")
        (build / "add.params").write_bytes(weights)
    ci = out / "ci"
    ci.mkdir(parents=True, exist_ok=True)
    for i in range(6):
        (ci / f"model{i}.tar").write_bytes(small_archive(f"net{i}", seed=i))
    bad = small_archive_object("net6", seed=6)
    doc = json.loads(bad.read("metadata.json"))
    doc["modules"]["net6"]["memory"]["sids"][1]["size_bytes"] = 4
    bad.replace("metadata.json", json.dumps(doc, indent=2, sort_keys=True))
    bad.write(ci / "model6.tar")
    (ci / "model7.tar").write_bytes(small_archive("net7", seed=7)[:3000])
    (ci / "README.txt").write_text("build outputs\n")
    (out / "aot").mkdir(parents=True, exist_ok=True)
    aot_archive_object().write(out / "aot" / "add.tar")
    print(f"wrote {out}/build-1, {out}/build-2, {out}/ci and {out}/aot", file=sys.stderr)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--docs"]:
        doc_files(Path(sys.argv[2] if len(sys.argv) > 2 else "."))
    else:
        main(Path(sys.argv[1] if len(sys.argv) > 1 else "demo"))
