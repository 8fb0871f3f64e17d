"""The cross-check rules against what TVM's writers really produced (notes/mlf-truths.md §6):
archives shaped like TVM's test models and the models of the reported false alarms, built
with the project's writer and then given the metadata values TVM's C++ computed (which are
not what a naive reading of the keys suggests). TVM's own output has no error or warning
finding; a broken value still gets its finding."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from mlf_spec import archive, check, metadata
from mlf_spec.cli import main
from mlf_spec.mlf import memory
from mlf_spec.mlf.strategies import ArchiveSpec, ModuleSpec, Tensor, build_archive
from tests.support.models import NOW, add_module

HOST = "c -keys=cpu -model=host"


def graph_of(inputs: list[Tensor], ops: list[tuple[str, list[int], Tensor]], heads: list[int]) -> dict[str, Any]:
    """GraphExecutor JSON as GraphExecutorCodegen lays it out: one null node per main
    parameter and constant, one tvm_op node per fused call (``args`` are node ids), an entry
    and a storage id per node output, ``heads`` the output node ids."""
    nodes: list[dict[str, Any]] = [{"op": "null", "name": t.name, "inputs": []} for t in inputs]
    entries = list(inputs)
    for name, args, out in ops:
        nodes.append({"op": "tvm_op", "name": name, "inputs": [[a, 0, 0] for a in args],
                      "attrs": {"num_outputs": "1", "num_inputs": str(len(args)), "flatten_data": "0",
                                "func_name": name}})
        entries.append(out)
    n = len(entries)
    return {"nodes": nodes, "arg_nodes": list(range(len(inputs))), "heads": [[h, 0, 0] for h in heads],
            "attrs": {"dltype": ["list_str", [t.dtype for t in entries]], "storage_id": ["list_int", list(range(n))],
                      "shape": ["list_shape", [t.shape for t in entries]]},
            "node_row_ptr": list(range(n + 1))}


def module(name: str, executor: str, inputs: list[Tensor], outputs: list[Tensor], *, params: list[Tensor] = (),
           ops: list[tuple[str, list[int], Tensor]] = (), heads: list[int] = (), workspace: int = 0,
           op_workspace: int = 0) -> ModuleSpec:
    """A module whose graph (graph executor) has ``inputs`` and ``params`` as input nodes."""
    g = graph_of(list(inputs) + list(params), list(ops), list(heads)) if executor == "graph" else None
    return ModuleSpec(name, executor, HOST, NOW, inputs=list(inputs), outputs=list(outputs), params=list(params),
                      graph=g, op_functions=[(f"tvmgen_{name}_{o[0]}", op_workspace) for o in ops] or [],
                      workspace=workspace)


def build(version: int, rev: str, m: ModuleSpec, **main_values: Any) -> bytes:
    """The archive of ``m`` with main's memory entry given the values TVM wrote."""
    a = build_archive(ArchiveSpec(version, rev, "full-model", [m], 1.7e9))
    if main_values:
        doc = json.loads(a.read("metadata.json"))
        rec = doc["modules"][m.name] if version == 7 else doc
        rec["memory"]["functions"]["main"][0].update(main_values)
        a.replace("metadata.json", json.dumps(doc, indent=2, sort_keys=True))
    return a.to_bytes()


def findings(data: bytes) -> list[tuple[str, str]]:
    return [(f.code, f.severity) for f in check.check(data).findings]


def loud(data: bytes) -> list[tuple[str, str]]:
    """Findings above info."""
    return [x for x in findings(data) if x[1] != "info"]


# ----------------------------------------------------------------- io_size_bytes

X14 = Tensor("x", "float32", [1, 4])


def two_outputs(executor: str) -> ModuleSpec:
    """§6.2 case 9: fn(%x: (1,4) float32) { (nn.relu(%x), sigmoid(%x)) }: two fused nodes."""
    return module("default", executor, [X14], [Tensor("output0", "float32", [1, 4]), Tensor("output1", "float32", [1, 4])],
                  ops=[("fused_nn_relu", [0], X14), ("fused_sigmoid", [0], X14)], heads=[1, 2])


def test_graph_with_two_outputs_counts_them_twice():
    """Graph io = params + k * outputs (c0690496af): 16 + 2 * 32 = 80, not 48."""
    m = two_outputs("graph")
    data = build(7, "v7.io", m, io_size_bytes=80)
    assert findings(data) == []
    g = archive.open(data).modules["default"].graph
    assert memory.graph_io(g, [g.input_entry("x")], ["output0", "output1"]) == {80}
    assert findings(build(7, "v7.io", m, io_size_bytes=48)) == [("memory.io-formula", "info")]  # the old rule's value
    assert ("memory.io-size", "warning") in findings(build(7, "v7.io", m, io_size_bytes=8))  # below the input


def test_same_model_aot_counts_every_let_bound_value():
    """AOT since bc7f45e765 (ANF): 16 + 16 + 16 + 2 * 32 = 112 in v7; no equality rule for AOT."""
    m = two_outputs("aot")
    assert findings(build(7, "v7.io", m, io_size_bytes=112)) == []
    assert findings(build(6, "v6", m, io_size_bytes=80)) == []  # AOT 2021-08 .. 2022-05 (76a7fa9d92)
    assert findings(build(6, "v6", m, io_size_bytes=48)) == []  # AOT before 2021-08-12: inputs + outputs once


def test_reported_false_alarms_are_gone():
    """The reported exports: an AOT convnet with io 18640 against inputs+outputs 3112, and a
    graph model with 4 outputs: 302 = 30 + 4 * 68 against 98."""
    conv = module("default", "aot", [Tensor("input", "float32", [1, 3, 16, 16])], [Tensor("output", "float32", [1, 10])])
    assert findings(build(7, "v7.templates", conv, io_size_bytes=18640)) == []
    x = Tensor("x", "int8", [30])
    outs = [Tensor(f"output{i}", "float32", [4]) for i in range(3)] + [Tensor("output3", "float32", [5])]
    ops = [(f"fused_op{i}", [0], t) for i, t in enumerate(outs)]
    g4 = module("default", "graph", [x], outs, ops=ops, heads=[1, 2, 3, 4])
    assert sum(t.nbytes for t in outs) == 68
    assert findings(build(7, "v7.templates", g4, io_size_bytes=302)) == []
    assert findings(build(7, "v7.templates", g4, io_size_bytes=98)) == [("memory.io-formula", "info")]


def test_named_outputs_many_aot():
    """§6.2 case 8 (T@329584bbf0 model): 4 fused calls and 3 tuple lets: io 3996, inputs and
    outputs 1128; only io >= inputs (540) is a rule."""
    ins = [Tensor("input_a", "int64", [3, 4, 5]), Tensor("input_b", "int32", [3, 4]), Tensor("input_c", "float32", [3])]
    outs = [Tensor("a", "int64", [3, 4, 5]), Tensor("b", "int32", [3, 4]), Tensor("c", "int32", [3, 4]),
            Tensor("d", "float32", [3])]
    m = module("default", "aot", ins, outs)
    assert sum(t.nbytes for t in ins + outs) == 1128
    assert findings(build(7, "v7.named_outputs", m, io_size_bytes=3996)) == []
    assert findings(build(7, "v7.named_outputs", m, io_size_bytes=1128)) == []
    assert ("memory.io-size", "warning") in findings(build(7, "v7.named_outputs", m, io_size_bytes=539))


def test_named_output_single_aot():
    """§6.1 case 6: one named output of 480 bytes; io (pred.) 960 = 480 + 480."""
    m = module("default", "aot", [Tensor("x", "int64", [60])], [Tensor("test_output_a", "int64", [60])])
    assert findings(build(7, "v7.named_outputs", m, io_size_bytes=960)) == []


def test_chain_of_two_reductions():
    """§6.2 case 10: x (4,8) -> sum(axis=1) -> sum(axis=0): AOT io 148, graph io 132."""
    x, s1, s0 = Tensor("x", "float32", [4, 8]), Tensor("s1", "float32", [4]), Tensor("output", "float32", [])
    ops = [("fused_sum", [0], s1), ("fused_sum_1", [1], s0)]
    assert findings(build(7, "v7.io", module("default", "aot", [x], [s0]), io_size_bytes=148)) == []
    g = module("default", "graph", [x], [s0], ops=ops, heads=[2])
    assert findings(build(7, "v7.io", g, io_size_bytes=132)) == []
    assert findings(build(7, "v7.io", g, io_size_bytes=148)) == [("memory.io-formula", "info")]


def test_identity_main_counts_the_parameter_once():
    """§6.2 case 11: fn(%x) { %x }: the head is the input node, B = 0: io 16 (so io >= inputs
    + outputs is no rule either)."""
    m = module("default", "graph", [X14], [Tensor("output", "float32", [1, 4])], heads=[0])
    m.op_functions = []
    assert findings(build(7, "v7.io", m, io_size_bytes=16)) == []
    assert findings(build(7, "v7.io", m, io_size_bytes=32)) == [("memory.io-formula", "info")]
    assert findings(build(6, "v6", m, io_size_bytes=32)) == []  # without outputs a one-field tuple (x,) is possible


def test_sub_byte_input_sizes_differ_between_cpp_and_python():
    """§6.2 case 12: int4 (1,7): inputs[].size = 4 (the writer's bits), C++ counts 7 bytes."""
    x, y = Tensor("x", "int4", [1, 7]), Tensor("output", "int8", [1, 7])
    m = module("default", "graph", [x], [y], ops=[("fused_cast", [0], y)], heads=[1])
    data = build(7, "v7.io", m, io_size_bytes=14)
    assert findings(data) == []
    main0 = archive.open(data).modules["default"].metadata.memory.functions.main[0]
    assert main0.inputs["x"].size == 4
    assert findings(build(7, "v7.io", m, io_size_bytes=11)) == [("memory.io-formula", "info")]
    assert memory.element_sizes([2, 3], "float32x4") == (24, 96)  # lanes: before and from f7f2cda675


def test_graph_versions_without_inputs_use_the_graph_and_params():
    """v2 to v6 have no `inputs`: main's parameters are the input nodes not in .params."""
    data = build(5, "v5.usmp", add_module(name="default"))
    assert findings(data) == []
    assert findings(build(5, "v5.usmp", add_module(name="default"), io_size_bytes=9)) == [
        ("memory.io-size", "warning"), ("memory.io-formula", "info")]
    assert findings(build(5, "v5.usmp", add_module(name="default"), constants_size_bytes=0)) == [
        ("memory.constants", "info")]


def test_qnn_conv2d_graph_and_byoc_values():
    """§6.1 cases 3 and 4 as graph-executor archives: main parameters named p0..p2 that are
    not constants (.params empty, constants 0); 9 BYOC inputs with io 9 * 400 + 1200."""
    ins = [Tensor("p0", "int16", [1, 56, 56, 128]), Tensor("p1", "int16", [3, 3, 128, 1]),
           Tensor("p2", "int32", [1, 1, 1, 128])]
    out = Tensor("output", "uint8", [1, 56, 56, 128])
    m = module("qnn_conv2d", "graph", ins, [out], ops=[("fused_nn_conv2d_add_fixed_point_multiply_clip_cast",
                                                       [0, 1, 2], out)], heads=[3], workspace=2466816,
               op_workspace=2466816)
    data = build(7, "v7.io", m, io_size_bytes=1207040, constants_size_bytes=0)
    assert findings(data) == []
    ins = [Tensor(f"x{i}", "float32", [10, 10]) for i in range(9)]
    out = Tensor("output", "float32", [30, 10])
    byoc = module("default", "graph", ins, [out], ops=[("fused_concatenate", list(range(9)), out)], heads=[9],
                  workspace=1200, op_workspace=800)
    assert findings(build(7, "v7.templates", byoc, io_size_bytes=4800, constants_size_bytes=0)) == []


# ----------------------------------------------------------------- workspace


def test_workspace_rule_only_for_non_zero_main():
    """§6.2 case 13: AOT + USMP without a pool on the device writes main 0 while an operator
    keeps 48 (908dc8f8ab): no finding; 32 < 48 is one; graph 48 = 48 is fine."""
    aot = module("default", "aot", [X14], [Tensor("output", "float32", [1, 4])], ops=[("fused_op", [0], X14)],
                 workspace=0, op_workspace=48)
    assert findings(build(7, "v7.templates", aot)) == []
    assert findings(build(7, "v7.templates", aot, workspace_size_bytes=32)) == [("memory.workspace", "warning")]
    g = module("default", "graph", [X14], [Tensor("output", "float32", [1, 4])], ops=[("fused_op", [0], X14)],
               heads=[1], workspace=48, op_workspace=48)
    assert findings(build(7, "v7.templates", g)) == []


def test_negative_sizes_are_wrapped_32_bit_totals():
    """The C++ accumulators are ints: a 2 GiB+ total is negative in the file."""
    big = Tensor("x", "int8", [1 << 31])
    out = Tensor("output", "int8", [8])
    m = module("default", "aot", [big], [out])
    data = build(7, "v7.templates", m, io_size_bytes=(big.nbytes + out.nbytes) - (1 << 32))
    assert findings(data) == [("memory.overflow", "info")]
    assert metadata.parse(archive.open(data).read("metadata.json")).version == 7  # valid: no minimum 0


# ----------------------------------------------------------------- params


def test_params_names_p_n_with_gaps_and_external_constants():
    """§6.2 case 15: constants p0 and p3 (gaps are real); an external constant that is not a
    graph node is info; a p<N> that is not a graph node is an error."""
    a_in, p0, p3 = Tensor("a", "float32", [2]), Tensor("p0", "float32", [2]), Tensor("p3", "float32", [2])
    out = Tensor("output", "float32", [2])
    m = module("default", "graph", [a_in], [out], params=[p0, p3], ops=[("fused_add", [0, 1, 2], out)], heads=[3])
    assert findings(build(7, "v7.io", m, io_size_bytes=16, constants_size_bytes=16)) == []
    ext = copy.deepcopy(m)
    ext.params = [p0, p3, Tensor("tvmgen_default_cmsis_nn_main_0_const_0", "int8", [4])]
    assert findings(build(7, "v7.io", ext, io_size_bytes=16, constants_size_bytes=16)) == [("params.external", "info")]
    bad = copy.deepcopy(m)
    bad.params = [p0, p3, Tensor("p7", "float32", [2])]
    assert ("params.not-in-graph", "error") in findings(build(7, "v7.io", bad, io_size_bytes=16,
                                                              constants_size_bytes=16))


# ----------------------------------------------------------------- operator bindings


def operator_module(funcs: tuple[str, ...] = ("add", "sub")) -> ModuleSpec:
    return ModuleSpec("add", "operator", HOST, NOW, sources=1, prim_funcs={
        f: [Tensor("A", "int8", [2]), Tensor("B", "int8", [1]), Tensor("C", "int8", [2])] for f in funcs})


@pytest.mark.parametrize("version, rev", [(4, "v4"), (5, "v5.cpp"), (6, "v6"), (7, "v7.io")])
def test_operator_archives_with_null_bindings_before_7e3dc45fed(version, rev, tmp_path, capsys):
    """§6.2 case 14: two PrimFuncs: the first printed has null bindings, the last names
    (970aefffe9); schema-valid, check clean, inspect shows it, upgrade carries it."""
    data = build_archive(ArchiveSpec(version, rev, "operator", [operator_module()], 1.7e9)).to_bytes()
    doc = json.loads(archive.open(data).read("metadata.json"))
    assert [b["input_binding"] for b in doc["memory"]["add"]] == [None] * 3
    assert [b["input_binding"] for b in doc["memory"]["sub"]] == ["A", "B", "C"]
    assert findings(data) == []
    path = tmp_path / "op.tar"
    path.write_bytes(data)
    assert main(["inspect", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["deviations"] == []
    if version < 7:
        out = tmp_path / "op7.tar"
        assert main(["upgrade", str(path), "-o", str(out)]) == 0
        up = json.loads(archive.open(out.read_bytes()).read("metadata.json"))
        assert up["version"] == 7 and up["memory"] == doc["memory"]


def test_string_binding_in_version_7_dates_the_archive_before_7e3dc45fed():
    a = build_archive(ArchiveSpec(7, "v7.templates", "operator", [operator_module()], 1.7e9))
    doc = json.loads(a.read("metadata.json"))
    assert all(b["input_binding"] is None for bufs in doc["memory"].values() for b in bufs)
    doc["memory"]["sub"][0]["input_binding"] = "A_1"  # the legacy printer's name: before 7e3dc45fed
    a.replace("metadata.json", json.dumps(doc))
    assert findings(a.to_bytes()) == []  # an operator archive looks the same in every v7 revision
    md = metadata.parse(a.read("metadata.json"))
    assert metadata.consistent_revisions(md) == ["v7", "v7.io", "v7.named_outputs"]


# ----------------------------------------------------------------- metadata text


def test_windows_line_ends_are_info():
    """§6.3 case 21: W opened metadata.json in text mode; on Windows json.dump's newlines are CRLF."""
    a = build_archive(ArchiveSpec(7, "v7.templates", "full-model", [add_module()], 1.7e9))
    a.replace("metadata.json", a.read("metadata.json").replace(b"\n", b"\r\n"))
    assert findings(a.to_bytes()) == [("metadata.crlf", "info")]
    a.replace("metadata.json", a.read("metadata.json").replace(b"\r\n", b"\n").replace(b"  ", b"   "))
    assert findings(a.to_bytes()) == [("metadata.format", "warning")]


def test_every_cross_check_states_its_rule_and_commits():
    from mlf_spec.generated.mlf_check_findings import FINDINGS

    rules = {code: f for code, f in FINDINGS.items() if "rule" in f}
    assert {"memory.io-size", "memory.io-formula", "memory.constants", "memory.workspace", "params.not-in-graph",
            "params.external"} <= set(rules)
    for code, f in rules.items():
        assert f["basis"] and all(len(b["commit"]) >= 7 for b in f["basis"]), code
        assert f["provable"] or f["severity"] == "info", code
    assert "was" in rules["memory.io-size"] and "sum(inputs) + sum(outputs)" in rules["memory.io-size"]["was"]


def test_upgrade_derives_io_of_multi_output_graphs_by_tvms_formula():
    """v6 -> v7 rebuilds main's inputs and outputs from the graph when io_size_bytes is what
    TVM's formula gives (here 16 + 2 * 32), not only when inputs + outputs add up to it."""
    from mlf_spec import migrate

    data = build(6, "v6", two_outputs("graph"), io_size_bytes=80)
    with migrate.plan(data, 7) as p:
        assert [d.name for d in p.derived] == ["v6_v7.main_inputs", "v6_v7.main_outputs"]
        main0 = p.document["modules"]["default"]["memory"]["functions"]["main"][0]
        assert main0["inputs"] == {"x": {"dtype": "float32", "size": 16}}
        assert list(main0["outputs"]) == ["output0", "output1"]
    with migrate.plan(build(6, "v6", two_outputs("graph"), io_size_bytes=48), 7) as p:
        assert p.derived == []  # a value TVM's formula does not give: nothing is derived


def test_byoc_functions_with_empty_workspace_lists_before_2f937801de():
    """§6.1 case 4 / §3.2: from a7297870c0 to 2f937801de operator_functions lists the BYOC
    (ccompiler) functions with `workspace: []`; main's workspace (800) still covers the TIR ones."""
    ins = [Tensor(f"x{i}", "float32", [10, 10]) for i in range(9)]
    out = Tensor("output", "float32", [30, 10])
    m = module("default", "graph", ins, [out], ops=[("fused_concatenate", list(range(9)), out)], heads=[9],
               workspace=800, op_workspace=800)
    a = build_archive(ArchiveSpec(5, "v5.crt", "full-model", [m], 1.7e9))
    doc = json.loads(a.read("metadata.json"))
    doc["memory"]["functions"]["operator_functions"].append({"function_name": "ccompiler_0", "workspace": []})
    doc["memory"]["functions"]["main"][0].update(io_size_bytes=4800, constants_size_bytes=0)
    a.replace("metadata.json", json.dumps(doc, indent=2, sort_keys=True))
    assert findings(a.to_bytes()) == []
