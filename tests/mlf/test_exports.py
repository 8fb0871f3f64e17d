"""Conformance cases from what TVM's own test suite asserted for its test models
(tests/python/unittest/test_micro_model_library_format.py, reference §6), plus archives
shaped like real TVM v7 exports (reference §2, §3, §5): each is written the way the writer
revision of its version did, must check clean, and must show the asserted values through
the mlf_spec API."""

from __future__ import annotations

import datetime
import json

import numpy as np
import pytest

from mlf_spec import archive, check
from mlf_spec.mlf.strategies import ArchiveSpec, ModuleSpec, Tensor, build_archive
from tests.support.models import ADD_GRAPH, ADD_V7, NOW, OPERATOR_V7, TARGET, add_module

# The first revision of each version (the tests of the commit that introduced it).
FIRST = {1: "v1", 2: "v2", 3: "v3", 4: "v4", 5: "v5", 6: "v6", 7: "v7"}


def read(spec: ArchiveSpec) -> tuple[archive.Archive, bytes]:
    data = build_archive(spec).to_bytes()
    report = check.check(data)
    assert report.findings == [], [f.to_dict() for f in report.findings]
    return archive.open(data), data


GRAPH_PATH = {1: "runtime-config/graph/graph.json", 2: "runtime-config/graph/graph.json",
              3: "runtime-config/graph/graph.json", 4: "runtime-config/graph/graph.json",
              5: "executor-config/graph/graph.json", 6: "executor-config/graph/graph.json",
              7: "executor-config/graph/add.graph"}
RELAY_PATH = {1: "relay.txt", 2: "relay.txt", 3: "relay.txt", 4: "src/relay.txt", 5: "src/relay.txt",
              6: "src/relay.txt", 7: "src/add.relay"}


@pytest.mark.parametrize("version", [1, 2, 3, 4, 5, 6, 7])
def test_add_model_graph_executor(version):
    a, _ = read(ArchiveSpec(version, FIRST[version], "full-model", [add_module()], 1_620_381_600.5))
    with a:
        md = a.metadata
        assert md.version == version
        mod = a.modules["add"]
        rec = mod.metadata
        assert rec.model_name == "add"
        datetime.datetime.strptime(rec.export_datetime, "%Y-%m-%d %H:%M:%SZ")
        assert rec.target == ({"1": TARGET} if version < 6 else [TARGET])
        sids = rec.memory if version == 1 else rec.memory.sids
        assert [(s.storage_id, s.size_bytes, getattr(s, "input_binding", None)) for s in sids] == [
            (0, 2, "a"), (1, 8, "b"), (2, 8, "p0"), (3, 8, None)]
        if version >= 2:
            main = rec.memory.functions.main
            assert [(e.constants_size_bytes, e.device, e.io_size_bytes, e.workspace_size_bytes) for e in main] == [
                (8, 1, 18, 0)]
            op = rec.memory.functions.operator_functions[0]
            assert "fused_cast_multiply_add" in op.function_name
            assert [(w.device, w.workspace_size_bytes) for w in op.workspace] == [(1, 0)]
        lib = "lib" if version < 3 else "add_lib"
        assert mod.sources == [f"codegen/host/src/{lib}0.c", f"codegen/host/src/{lib}1.c"]
        assert mod.files["graph_json"] == [GRAPH_PATH[version]]
        assert len(mod.graph.model.nodes) == 4
        assert a.read(GRAPH_PATH[version]).decode() == ADD_GRAPH  # the compiler's string, verbatim
        assert mod.files["relay_text"] == [RELAY_PATH[version]]
        assert [i.name for i in mod.params.index] == ["p0"]
        executors = rec.runtimes if version < 5 else rec.executors
        assert executors == ["graph"]
        if version >= 4:
            assert rec.style == "full-model"


@pytest.mark.parametrize("version, rev", [(5, "v5.usmp"), (6, "v6"), (7, "v7.templates")])
def test_add_model_aot_with_c_interface_and_crt(version, rev):
    m = add_module("aot", header=True, crt=True)
    a, _ = read(ArchiveSpec(version, rev, "full-model", [m], 1_650_000_000.25))
    with a:
        mod = a.modules["add"]
        main = mod.metadata.memory.functions.main[0]
        assert (main.constants_size_bytes, main.io_size_bytes) == (0, 18)  # link-params: constants 0
        assert mod.metadata.memory.sids is None  # AOT: no sids
        assert mod.headers == ["codegen/host/include/tvmgen_add.h"]
        assert mod.graph is None and len(mod.params) == 0
        [dep] = mod.metadata.external_dependencies
        assert (dep.short_name, dep.url, dep.url_type) == ("tvm_standalone_crt", "./runtime", "mlf_path")
        assert "runtime" in a and a.member("runtime").is_dir
        if version == 7:
            assert a.member("templates/crt_config.h.template") and a.member("templates/platform.c.template")
            assert a.member("templates") is None  # only the two files, no directory member
            assert main.inputs["a"].dtype == "uint8" and main.outputs["output"].size == 8


def test_header_exists_iff_interface_api_is_c():
    for header in (False, True):
        a, _ = read(ArchiveSpec(5, "v5.header_lower", "full-model", [add_module("aot", header=header)], 1.5e9))
        with a:
            assert ("codegen/host/include/tvmgen_add.h" in a) is header


def test_header_name_case_by_revision():
    up = add_module("aot", name="MyNet", header=True)
    a, _ = read(ArchiveSpec(5, "v5.header", "full-model", [up], 1.5e9))
    assert a.modules["MyNet"].headers == ["codegen/host/include/tvmgen_MyNet.h"]
    a, _ = read(ArchiveSpec(5, "v5.header_lower", "full-model", [up], 1.5e9))
    assert a.modules["MyNet"].headers == ["codegen/host/include/tvmgen_mynet.h"]


def test_qnn_conv2d_workspace_values():
    m = ModuleSpec("qnn_conv2d", "aot", "c -keys=cpu -model=host", NOW,
                   inputs=[Tensor("p0", "int16", [1, 56, 56, 128]), Tensor("p1", "int16", [3, 3, 128]),
                           Tensor("p2", "int32", [128])],
                   outputs=[Tensor("output", "uint8", [1, 56, 56, 128])],
                   op_functions=[("tvmgen_default_fused_nn_conv2d_add_fixed_point_multiply_clip_cast", 2466816)],
                   workspace=2466816)
    a, _ = read(ArchiveSpec(7, "v7.io", "full-model", [m], 1.6e9))
    main = a.modules["qnn_conv2d"].metadata.memory.functions.main[0]
    assert (main.constants_size_bytes, main.device, main.io_size_bytes, main.workspace_size_bytes) == (
        0, 1, 1207040, 2466816)
    assert {k: (v.dtype, v.size) for k, v in main.inputs.items()} == {
        "p0": ("int16", 802816), "p1": ("int16", 2304), "p2": ("int32", 512)}
    assert {k: (v.dtype, v.size) for k, v in main.outputs.items()} == {"output": ("uint8", 401408)}


def test_byoc_values():
    m = ModuleSpec("default", "aot", "c -keys=cpu -model=host", NOW,
                   inputs=[Tensor(f"w{i}", "float32", [10, 10]) for i in range(8)] + [Tensor("x", "float32", [10, 10])],
                   outputs=[Tensor("output", "float32", [30, 10])], op_functions=[("tvmgen_default_fused_add", 800)],
                   workspace=1200)
    a, _ = read(ArchiveSpec(7, "v7.templates", "full-model", [m], 1.6e9))
    main = a.modules["default"].metadata.memory.functions.main[0]
    assert (main.io_size_bytes, main.workspace_size_bytes) == (4800, 1200)
    assert all(t.size == 400 for t in main.inputs.values()) and main.outputs["output"].size == 1200


def test_multi_module_export_members_as_observed():
    mod1 = add_module("graph", name="mod1")
    mod2 = ModuleSpec("mod2", "aot", "c -keys=cpu -model=host", NOW,
                      inputs=[Tensor("data", "int8", [1, 3, 64, 64]), Tensor("weight", "int8", [8, 3, 5, 5])],
                      outputs=[Tensor("output", "int32", [1, 8, 64, 64])], sources=2, header=True, crt=True,
                      op_functions=[("tvmgen_mod2_fused_nn_conv2d", 158088)], workspace=158088)
    a, _ = read(ArchiveSpec(7, "v7.templates", "full-model", [mod1, mod2], 1.7e9))
    names = [m.name for m in a.members]
    runtime = [n for n in names if n.startswith("./runtime/")]
    assert runtime and all(n.startswith("./runtime/") for n in names[names.index("./runtime") + 1:-2])
    assert [n for n in names if not n.startswith("./runtime/")] == [
        ".", "./codegen", "./codegen/host", "./codegen/host/include", "./codegen/host/include/tvmgen_mod2.h",
        "./codegen/host/src", "./codegen/host/src/mod1_lib0.c", "./codegen/host/src/mod1_lib1.c",
        "./codegen/host/src/mod2_lib0.c", "./codegen/host/src/mod2_lib1.c", "./executor-config",
        "./executor-config/graph", "./executor-config/graph/mod1.graph", "./metadata.json", "./parameters",
        "./parameters/mod1.params", "./parameters/mod2.params", "./src", "./src/mod1.relay", "./src/mod2.relay",
        "./runtime", "./templates/crt_config.h.template", "./templates/platform.c.template"]
    mods = a.modules
    assert [m.executor for m in mods.values()] == ["graph", "aot"]
    main = mods["mod2"].metadata.memory.functions.main[0]
    assert (main.constants_size_bytes, main.device, main.io_size_bytes, main.workspace_size_bytes) == (
        0, 1, 143960, 158088)
    assert {k: (v.dtype, v.size) for k, v in main.inputs.items()} == {"data": ("int8", 12288), "weight": ("int8", 600)}
    assert {k: (v.dtype, v.size) for k, v in main.outputs.items()} == {"output": ("int32", 131072)}
    runtime_member = a.member("runtime")
    assert (runtime_member.uid, runtime_member.uname) == (1000, "tvm")  # not reset: the source tree's owner
    assert a.member("metadata.json").uname == "root"


def test_module_keys_must_match_their_model_name():
    a = build_archive(ArchiveSpec(7, "v7", "full-model", [add_module(name="mod1")], 1.7e9))
    doc = json.loads(a.read("metadata.json"))
    doc["modules"]["other"] = doc["modules"].pop("mod1")
    a.replace("metadata.json", json.dumps(doc, indent=2, sort_keys=True).encode())
    r = check.check_archive(a)
    assert r.codes()[0] == "metadata.schema" and r.findings[0].path == "modules.other.model_name"
    assert "layout.module" in r.codes()  # files are named after mod1


def test_duplicate_module_names_are_refused():
    text = b'{"modules": {"mod1": {}, "mod1": {}}, "version": 7}'
    a = build_archive(ArchiveSpec(7, "v7", "full-model", [add_module(name="mod1")], 1.7e9))
    a.replace("metadata.json", text)
    assert check.check_archive(a).codes() == ["metadata.json"]


@pytest.mark.parametrize("names, outputs", [
    (["test_output_a"], [("test_output_a", "int64", [60])]),
    (["a", "b", "c", "d"], [("a", "int64", [60]), ("b", "int32", [12]), ("c", "int32", [12]), ("d", "float32", [3])]),
])
def test_named_outputs(names, outputs):
    m = ModuleSpec("default", "aot", "c -keys=cpu -model=host", NOW, inputs=[Tensor("x", "int64", [60])],
                   outputs=[Tensor(n, d, s) for n, d, s in outputs], op_functions=[("f", 0)])
    a, _ = read(ArchiveSpec(7, "v7.named_outputs", "full-model", [m], 1.7e9))
    got = a.modules["default"].metadata.memory.functions.main[0].outputs
    assert {k: (v.size, v.dtype) for k, v in got.items()} == {
        "test_output_a": (480, "int64")} if len(names) == 1 else {
        "a": (480, "int64"), "b": (48, "int32"), "c": (48, "int32"), "d": (12, "float32")}
    # sort_keys: the keys are alphabetical in the file, not in output order
    assert list(json.loads(a.read("metadata.json"))["modules"]["default"]["memory"]["functions"]["main"][0][
        "outputs"]) == sorted(names)


@pytest.mark.parametrize("version, rev", [(4, "v4"), (5, "v5"), (6, "v6"), (7, "v7"), (7, "v7.null_binding")])
def test_operator_export(version, rev):
    m = ModuleSpec("add", "operator", "c -keys=cpu -model=host", NOW, sources=2,
                   prim_funcs={"add": [Tensor("A", "int8", [2]), Tensor("B", "int8", [1]), Tensor("C", "int8", [2])]})
    a, data = read(ArchiveSpec(version, rev, "operator", [m], 1.7e9))
    with a:
        md = a.metadata
        assert (md.version, md.style, md.document.model_name) == (version, "operator", "add")
        assert [(b.dtype, list(b.shape), b.size_bytes) for b in md.document.memory["add"]] == [
            ("int8", [2], 2), ("int8", [1], 1), ("int8", [2], 2)]
        binding = [b.input_binding for b in md.document.memory["add"]]
        assert binding == ([None] * 3 if rev == "v7.null_binding" else ["A", "B", "C"])
        assert "codegen/host/src/lib0.c" in a and "codegen/host/src/lib1.c" in a and "src/tir-1.txt" in a
        assert not [m for m in a.members if m.path.startswith(("parameters", "executor-config", "runtime"))]
        raw = a.read("metadata.json")
        assert b"\n" not in raw and raw.startswith(f'{{"version": {version}, "model_name": "add"'.encode())


def test_real_v7_operator_export_as_observed():
    """The observed operator export: members ., codegen, host, src, lib0.c, metadata.json, src, tir-1.txt."""
    m = ModuleSpec("add", "operator", "c -keys=cpu -model=host", "2026-11-22 08:02:53Z", sources=1,
                   prim_funcs={"add": [Tensor("A", "int8", [2]), Tensor("B", "int8", [1]), Tensor("C", "int8", [2])]})
    a, _ = read(ArchiveSpec(7, "v7.templates", "operator", [m], 1.7e9))
    assert [x.name for x in a.members] == [".", "./codegen", "./codegen/host", "./codegen/host/src",
                                           "./codegen/host/src/lib0.c", "./metadata.json", "./src",
                                           "./src/tir-1.txt"]

    assert a.read("metadata.json") == OPERATOR_V7.encode()


def test_real_v7_graph_export_metadata_bytes():

    m = add_module(name="add")
    m.target, m.datetime, m.workspace = "c -keys=cpu -model=host", "2026-11-22 08:00:14Z", 16
    m.op_functions = [("tvmgen_add_fused_cast_add_multiply", 16)]
    a, _ = read(ArchiveSpec(7, "v7.templates", "full-model", [m], 1.7e9))
    assert a.read("metadata.json") == ADD_V7.encode()
    assert np.asarray(a.modules["add"].params["p0"]).dtype == np.float32


def test_tvm_quirks_check_clean():
    """Local time with a literal Z, null operator bindings, an empty params file for AOT."""
    m = add_module("aot")
    m.datetime = "2026-03-29 02:30:00Z"  # a local time that does not exist in UTC+1 DST, still TVM's format
    a, _ = read(ArchiveSpec(7, "v7.io", "full-model", [m], 1.7e9))
    assert len(a.modules["add"].params) == 0
