"""``mlf-spec diff`` and mlf_spec.diff: .params files, MLF archives, module blobs, graph
JSON; text, JSON (against the generated schema) and exit statuses."""

from __future__ import annotations

import io
import json
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mlf_spec.generated.cli_error_models import CliError
from mlf_spec.generated.diff_output_models import DiffReport

from mlf_spec import archive, blob, diff, params
from mlf_spec import strategies as ms
from mlf_spec.cli import main
from mlf_spec.params.codec import ParamsFile, StoredTensor
from tests.support.models import real_aot_v7, real_graph_v7


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def changes(d, **match):
    return [c for c in d.changes if all(getattr(c, k) == v for k, v in match.items())]


# ----------------------------------------------------------------- .params


def test_params_tensors_added_removed_dtype_shape_data_and_order(tmp_path, capsys):
    a = {"w": np.arange(6, dtype="f4").reshape(2, 3), "b": np.zeros(3, "f4"), "gone": np.ones(2, "i8"),
         "s": np.float32(1), "r": np.zeros((2, 2), "i4")}
    b = {"b": np.zeros(3, "f4"), "w": np.arange(6, dtype="f4").reshape(2, 3) * np.float32(1.5),
         "new": np.ones(2, "i8"), "s": np.float16(1), "r": np.zeros(4, "i4")}
    params.save(a, tmp_path / "a.params")
    params.save(b, tmp_path / "b.params")
    d = diff.diff(tmp_path / "a.params", tmp_path / "b.params")
    assert not d.same and d.kind == "params"
    [order] = changes(d, change="order")
    assert order.a == ["w", "b", "s", "r"] and order.b == ["b", "w", "s", "r"]
    assert [c.path for c in changes(d, change="removed")] == ["gone"]
    assert [c.path for c in changes(d, change="added")] == ["new"]
    [dt] = changes(d, change="dtype")
    assert (dt.path, dt.a, dt.b) == ("s", "float32", "float16")
    [sh] = changes(d, change="shape")
    assert (sh.path, sh.a, sh.b) == ("r", [2, 2], [4])
    [data] = changes(d, change="data")
    assert data.path == "w"
    assert data.stats == {"unit": "element", "elements": 6, "differing": 5, "max_abs": 2.5,
                          "max_rel": pytest.approx(1 / 3), "nonfinite": 0}
    code, out, _ = run(["diff", str(tmp_path / "a.params"), str(tmp_path / "b.params")], capsys)
    assert code == 1
    assert "~ tensor w: data differs in 5 of 6 elements, max abs diff 2.5, max rel diff 0.333333" in out
    assert "- tensor gone: int64 2" in out and "+ tensor new: int64 2" in out
    assert out.strip().endswith("6 difference(s): 1 added, 1 removed, 1 data, 1 dtype, 1 order, 1 shape")
    code, out, _ = run(["diff", "--json", str(tmp_path / "a.params"), str(tmp_path / "b.params")], capsys)
    doc = json.loads(out)
    DiffReport.model_validate(doc)
    assert code == 1 and doc["same"] is False and doc["counts"]["data"] == 1 and len(doc["changes"]) == 6


def test_identical_files_exit_0(tmp_path, capsys):
    params.save({"w": np.ones(3, "f4")}, tmp_path / "a.params")
    code, out, _ = run(["diff", str(tmp_path / "a.params"), str(tmp_path / "a.params")], capsys)
    assert code == 0 and out.strip().endswith("same: the .params files do not differ")
    code, out, _ = run(["diff", "--json", str(tmp_path / "a.params"), str(tmp_path / "a.params")], capsys)
    assert code == 0 and json.loads(out)["changes"] == [] and json.loads(out)["same"] is True


def test_duplicate_names_are_matched_occurrence_by_occurrence(tmp_path):
    one, two, three = np.zeros(2, "f4"), np.ones(2, "f4"), np.full(2, 3, "f4")
    a = ParamsFile([("w", one, None), ("w", two, None)])
    b = ParamsFile([("w", one, None), ("w", three, None), ("w", two, None)])
    params.save(a, tmp_path / "a.params")
    params.save(b, tmp_path / "b.params")
    d = diff.diff(tmp_path / "a.params", tmp_path / "b.params")
    [data] = changes(d, change="data")
    assert data.detail.startswith("occurrence 2 of 2 of this name: data differs in 2 of 2")
    [added] = changes(d, change="added")
    assert added.b["index"] == 2 and added.detail.startswith("occurrence 3 of 3")


def test_nan_equals_nan_and_infinities_are_counted_apart(tmp_path):
    params.save({"x": np.array([np.nan, 1, 2, np.inf], "f4")}, tmp_path / "a.params")
    params.save({"x": np.array([np.nan, 1, 4, 5], "f4")}, tmp_path / "b.params")
    [c] = diff.diff(tmp_path / "a.params", tmp_path / "b.params").changes
    assert c.stats == {"unit": "element", "elements": 4, "differing": 2, "max_abs": 2.0, "max_rel": 0.5,
                       "nonfinite": 1}


def test_sub_byte_tensors_are_compared_byte_by_byte(tmp_path):
    params.save({"q": StoredTensor.of(0, 4, 1, (4,), bytes([0x21, 0x43, 0, 0]))}, tmp_path / "a.params")
    params.save({"q": StoredTensor.of(0, 4, 1, (4,), bytes([0x21, 0x44, 0, 0]))}, tmp_path / "b.params")
    [c] = diff.diff(tmp_path / "a.params", tmp_path / "b.params").changes
    assert c.change == "data" and c.stats["unit"] == "byte" and c.stats["differing"] == 1


def test_a_difference_outside_the_tensors_is_not_same(tmp_path):
    data = params.dumps({"w": np.ones(2, "f4")})
    (tmp_path / "a.params").write_bytes(data)
    (tmp_path / "b.params").write_bytes(data[:8] + (1).to_bytes(8, "little") + data[16:])  # reserved word
    (tmp_path / "c.params").write_bytes(data + b"tail")
    [c] = diff.diff(tmp_path / "a.params", tmp_path / "b.params").changes
    assert (c.scope, c.path) == ("file", "encoding")
    [t] = diff.diff(tmp_path / "a.params", tmp_path / "c.params").changes
    assert (t.path, t.a, t.b) == ("trailing_bytes", 0, 4)


@settings(max_examples=30)
@given(ms.param_dicts(), st.data())
def test_property_a_file_equals_itself_and_one_changed_tensor_is_found(tensors, data):
    raw = params.dumps(tensors)
    assert diff.diff(raw, raw).same
    arrays = [k for k, v in tensors.items() if isinstance(v, np.ndarray) and v.size and v.dtype.kind in "iuf"]
    if not arrays:
        return
    name = data.draw(st.sampled_from(arrays))
    changed = dict(tensors)
    flat = changed[name].copy().reshape(-1).view(np.uint8)
    flat[0] ^= 0xFF
    changed[name] = flat.view(tensors[name].dtype).reshape(tensors[name].shape)
    found = diff.diff(raw, params.dumps(changed)).changes
    assert [(c.change, c.path) for c in found] == [("data", name)]
    assert found[0].stats["differing"] == 1


# ----------------------------------------------------------------- archives


def test_archives_members_metadata_and_the_params_inside(tmp_path, capsys):
    (tmp_path / "aot.tar").write_bytes(real_aot_v7())
    (tmp_path / "graph.tar").write_bytes(real_graph_v7())
    d = diff.diff(tmp_path / "aot.tar", tmp_path / "graph.tar")
    removed = {c.path: c for c in changes(d, scope="member", change="removed")}
    assert removed["./runtime"].a["type"] == "directory" and len(removed["./runtime"].a["contains"]) == 11
    assert "./runtime/CMakeLists.txt" not in removed  # folded into its directory
    assert "./executor-config" in {c.path for c in changes(d, scope="member", change="added")}
    executors = changes(d, scope="metadata", path="modules.add.executors[0]")
    assert [(c.a, c.b, c.member, c.module) for c in executors] == [("aot", "graph", "./metadata.json", "add")]
    [p0] = changes(d, scope="tensor")
    assert (p0.change, p0.path, p0.member, p0.module) == ("added", "p0", "./parameters/add.params", "add")
    code, out, _ = run(["diff", "--json", str(tmp_path / "aot.tar"), str(tmp_path / "graph.tar")], capsys)
    assert code == 1
    DiffReport.model_validate(json.loads(out))


def test_archives_tensor_values_graph_and_times(tmp_path, capsys):
    a = archive.open(real_graph_v7())
    b = archive.open(real_graph_v7())
    b.replace("parameters/add.params", params.dumps({"p0": np.array([[1, 7]], "f4")}))
    g = json.loads(b.read("executor-config/graph/add.graph"))
    g["attrs"]["shape"][1][0] = [1, 3]
    b.replace("executor-config/graph/add.graph", json.dumps(g))
    md = json.loads(b.read("metadata.json"))
    md["modules"]["add"]["export_datetime"] = "2030-01-01 00:00:00Z"
    b.replace("metadata.json", json.dumps(md, indent=2, sort_keys=True), mtime=12345)
    a.write(tmp_path / "a.tar")
    b.write(tmp_path / "b.tar")
    d = diff.diff(tmp_path / "a.tar", tmp_path / "b.tar")
    [data] = changes(d, scope="tensor")
    assert (data.path, data.change, data.module, data.stats["differing"]) == ("p0", "data", "add", 2)
    [graph_in] = changes(d, scope="graph")
    assert (graph_in.path, graph_in.a, graph_in.b) == ("inputs.a", {"dtype": "uint8", "shape": [1, 2]},
                                                       {"dtype": "uint8", "shape": [1, 3]})
    assert changes(d, path="modules.add.export_datetime") and changes(d, scope="file", path="mtime")
    quiet = diff.diff(tmp_path / "a.tar", tmp_path / "b.tar", ignore_times=True)
    assert not changes(quiet, path="modules.add.export_datetime") and not changes(quiet, path="mtime")
    assert len(quiet.changes) == 2
    code, out, _ = run(["diff", "--ignore-times", str(tmp_path / "a.tar"), str(tmp_path / "b.tar")], capsys)
    assert code == 1 and "~ graph inputs.a (in ./executor-config/graph/add.graph, module add)" in out


def test_a_tar_and_its_extraction_differ_only_in_container(tmp_path):
    (tmp_path / "a.tar").write_bytes(real_graph_v7())
    with archive.open(tmp_path / "a.tar") as a:
        a.extract(tmp_path / "dir")
    d = diff.diff(tmp_path / "a.tar", tmp_path / "dir", ignore_times=True)
    assert changes(d, path="container")[0].b == "directory"
    assert not changes(d, scope="tensor") and not changes(d, scope="metadata") and not changes(d, change="content")


# ----------------------------------------------------------------- blobs


def const_loader(*names: str, scale: float = 1.0) -> blob.Module:
    return blob.Module.of("const_loader", variables=list(names),
                          arrays=[np.full(2, scale, "f4") for _ in names], symbols=["f"], const_vars=[list(names)])


def test_blobs_module_trees_and_payload_fields(tmp_path, capsys):
    (tmp_path / "a.bin").write_bytes(blob.build(blob.Module.lib(const_loader("c"))))
    (tmp_path / "b.bin").write_bytes(blob.build(blob.Module.lib(const_loader("c", "d", scale=2),
                                                                const_loader("e"))))
    blob.write_c_source(blob.build(blob.Module.lib(const_loader("c"))), tmp_path / "devc.c")
    d = diff.diff(tmp_path / "a.bin", tmp_path / "b.bin")
    assert d.kind == "blob"
    [added] = changes(d, scope="module")
    assert (added.change, added.path, added.b["kind"]) == ("added", "root.imports[1]", "const_loader")
    payload = {c.path: c for c in changes(d, scope="payload")}
    assert payload["variables[1]"].b == "d" and payload["count"].a == 1
    assert payload["arrays[0].data.sha256"].change == "changed"
    same_modules = diff.diff(tmp_path / "a.bin", tmp_path / "devc.c")
    assert [(c.path, c.a) for c in same_modules.changes] == [("symbol", "")]
    code, out, _ = run(["diff", str(tmp_path / "a.bin"), str(tmp_path / "b.bin")], capsys)
    assert code == 1 and "+ module root.imports[1]: module const_loader added" in out


# ----------------------------------------------------------------- kinds, errors, stdin


def test_different_kinds_and_unreadable_inputs_exit_2(tmp_path, capsys):
    params.save({"w": np.ones(1, "f4")}, tmp_path / "a.params")
    (tmp_path / "m.tar").write_bytes(real_graph_v7())
    code, _, err = run(["diff", str(tmp_path / "a.params"), str(tmp_path / "m.tar")], capsys)
    assert code == 2 and "is a .params file but" in err and "is an MLF archive" in err
    (tmp_path / "bad.params").write_bytes((tmp_path / "a.params").read_bytes()[:30])
    code, out, err = run(["diff", "--json", str(tmp_path / "a.params"), str(tmp_path / "bad.params")], capsys)
    assert code == 2 and err.startswith("mlf-spec: error: ")
    doc = json.loads(out)
    CliError.model_validate(doc)
    assert doc["path"] == str(tmp_path / "bad.params")
    (tmp_path / "notes.txt").write_text("hello")
    code, _, err = run(["diff", str(tmp_path / "notes.txt"), str(tmp_path / "notes.txt")], capsys)
    assert code == 2 and "not an artifact mlf-spec reads (a text file of no known kind)" in err
    code, _, err = run(["diff", str(tmp_path / "nope"), str(tmp_path / "a.params")], capsys)
    assert code == 2 and "no such file" in err


def test_standard_input_as_one_side(tmp_path, monkeypatch, capsys):
    params.save({"w": np.ones(1, "f4")}, tmp_path / "a.params")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO((tmp_path / "a.params").read_bytes())))
    code, out, _ = run(["diff", "-", str(tmp_path / "a.params")], capsys)
    assert code == 0 and out.startswith("--- <stdin>\n")


def test_graph_json_documents(tmp_path):
    g = json.loads(archive.open(real_graph_v7()).read("executor-config/graph/add.graph"))
    (tmp_path / "a.json").write_text(json.dumps(g))
    g["nodes"][3]["attrs"]["func_name"] = "other"
    (tmp_path / "b.json").write_text(json.dumps(g))
    d = diff.diff(tmp_path / "a.json", tmp_path / "b.json")
    assert d.kind == "graph-json"
    assert {(c.change, c.path) for c in d.changes} == {("removed", "functions.tvmgen_add_fused_cast_add_multiply"),
                                                       ("added", "functions.other")}


def test_values_equal_but_stored_differently_count_as_differing():
    """A NaN with another payload and -0 against +0: the bytes changed, so the change has
    differing elements (found by the property test below on a float16 NaN)."""
    a = np.array([np.nan, 0.0, 1.0], dtype=np.float16)
    b = a.copy()
    b.view(np.uint16)[0] ^= 0x0001  # another NaN payload
    b[1] = -0.0
    found = diff.diff(params.dumps({"x": a}), params.dumps({"x": b})).changes
    assert [(c.change, c.path) for c in found] == [("data", "x")]
    stats = found[0].stats
    assert stats["differing"] == 2 and stats["nonfinite"] == 1 and stats["max_abs"] == 0.0


def test_64_bit_integer_differences_are_exact_at_the_extremes():
    """|x - y| of int64/uint64 values is computed in uint64 (no object arrays), so the
    extremes do not overflow: |(2**63 - 1) - (-2**63)| = 2**64 - 1."""
    x = np.array([-(2**63), 2**63 - 1, 5], np.int64)
    y = np.array([2**63 - 1, -(2**63), 5], np.int64)
    s = diff.diff(params.dumps({"t": x}), params.dumps({"t": y})).changes[0].stats
    assert s["differing"] == 2 and s["max_abs"] == float(2**64 - 1) and s["max_rel"] == float(2**64 - 1) / 2**63
    u = np.array([0, 2**64 - 1], np.uint64)
    s = diff.diff(params.dumps({"t": u}), params.dumps({"t": u[::-1].copy()})).changes[0].stats
    assert s["max_abs"] == float(2**64 - 1) and s["max_rel"] == 1.0
