"""GraphExecutor JSON: strict model, dmlc JSONWriter layout, TVM's sid rule, structure checks."""

from __future__ import annotations

import json

import pytest
from hypothesis import given

from mlf_spec import graph_json, strategies
from mlf_spec.errors import ValidationError
from tests.support.models import ADD_GRAPH


def test_reference_graph_parses_and_redumps_exactly():
    g = graph_json.parse(ADD_GRAPH)
    assert g.input_names() == ["a", "b", "p0"]
    assert g.entry_shape(g.input_entry("b")) == [1, 2] and g.entry_dtype(0) == "uint8"
    assert g.output_entries() == [3]
    assert graph_json.structure_issues(g) == []
    assert graph_json.dumps(g) == ADD_GRAPH


def test_sid_map_is_what_tvm_wrote_for_add():
    assert graph_json.sid_map(graph_json.parse(ADD_GRAPH)) == [
        {"storage_id": 0, "size_bytes": 2, "input_binding": "a"},
        {"storage_id": 1, "size_bytes": 8, "input_binding": "b"},
        {"storage_id": 2, "size_bytes": 8, "input_binding": "p0"},
        {"storage_id": 3, "size_bytes": 8},
    ]


def test_sid_map_reproduces_tvm_indexing_by_storage_id():
    data = json.loads(ADD_GRAPH)
    data["attrs"]["storage_id"][1] = [0, 1, 2, 0]  # output reuses storage 0
    data["attrs"]["dltype"][1][3] = "float64"
    sids = graph_json.sid_map(graph_json.parse(graph_json.dumps(data)))
    assert [s["storage_id"] for s in sids] == [0, 1, 2]
    assert sids[0]["size_bytes"] == 2  # shape/dtype of entry 0 (= storage id 0), as TVM computed


def test_long_integer_arrays_go_multiline():
    data = json.loads(ADD_GRAPH)
    data["arg_nodes"] = list(range(11))
    text = graph_json.dumps(data)
    assert '"arg_nodes": [\n    0, \n    1,' in text
    assert '"node_row_ptr": [0, 1, 2, 3, 4]' in text


@pytest.mark.parametrize("mutate, code", [
    (lambda d: d.pop("heads"), "heads"),
    (lambda d: d["nodes"][3].update(op="other"), "nodes[3]"),
    (lambda d: d["nodes"][3]["attrs"].pop("func_name"), "nodes[3].attrs.func_name"),
    (lambda d: d["attrs"].update(dltype=["list_int", ["x"]]), "attrs.dltype"),
    (lambda d: d["heads"][0].append(9), "heads[0]"),
    (lambda d: d.update(extra=1), "extra"),
])
def test_schema_errors_have_paths(mutate, code):
    data = json.loads(ADD_GRAPH)
    mutate(data)
    with pytest.raises(ValidationError) as err:
        graph_json.parse(json.dumps(data))
    assert (err.value.field or "").startswith(code), err.value


def test_lenient_keeps_unknown_keys_and_metadata_is_known():
    data = json.loads(ADD_GRAPH)
    data["metadata"] = {"anything": 1}
    graph_json.parse(json.dumps(data))
    data["comment"] = "x"
    g = graph_json.parse(json.dumps(data), lenient=True)
    assert g.unknown == ("comment",)


@pytest.mark.parametrize("mutate, where", [
    (lambda d: d["node_row_ptr"].append(5), "node_row_ptr"),
    (lambda d: d.update(arg_nodes=[0, 1]), "arg_nodes"),
    (lambda d: d["attrs"]["dltype"][1].pop(), "attrs.dltype"),
    (lambda d: d["nodes"][3]["inputs"].__setitem__(0, [7, 0, 0]), "nodes[3].inputs[0]"),
    (lambda d: d["nodes"][3]["attrs"].update(num_inputs="2"), "nodes[3].attrs.num_inputs"),
    (lambda d: d["heads"].__setitem__(0, [3, 1, 0]), "heads[0]"),
])
def test_structure_issues(mutate, where):
    data = json.loads(ADD_GRAPH)
    mutate(data)
    issues = graph_json.structure_issues(graph_json.parse(json.dumps(data)))
    assert where in [i.path for i in issues], issues


@given(strategies.graph_jsons())
def test_generated_graphs_round_trip_through_the_dmlc_writer(text):
    g = graph_json.parse(text)
    assert graph_json.dumps(g) == text
    assert graph_json.structure_issues(g) == []
    graph_json.sid_map(g)


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity", "1e400", "-2.5E+999"])
def test_nan_and_infinity_are_not_json(constant):
    # Found by fuzzing (issue 11): Python's json reads NaN and Infinity, dmlc's reader does
    # not; a graph that held one was dumped as "nan"/"inf", which nothing reads back. The
    # campaign then found 1e400, which Python's json reads as inf.
    from mlf_spec import metadata
    from mlf_spec.errors import ValidationError

    for parse in (graph_json.parse, metadata.parse):
        with pytest.raises(ValidationError, match="not a JSON value"):
            parse(f'{{"version": 7, "x": [1, {constant}]}}'.encode(), lenient=True)
