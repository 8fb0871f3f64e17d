"""MLF metadata: one strict model per version and style, TVM's exact dump per style,
detection, lenient reading, errors with JSON paths, the spec as data."""

from __future__ import annotations

import copy
import json

import pytest
from mlf_spec.generated import mlf_ir

from mlf_spec import metadata
from mlf_spec.errors import MlfError, ValidationError
from tests.support.models import ADD_V7, OPERATOR_V7

EXAMPLES = {e["name"]: e for e in mlf_ir.EXAMPLES}


def test_every_version_has_a_model_schema_and_page():
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "generated"
    assert metadata.VERSIONS == (1, 2, 3, 4, 5, 6, 7)
    for v in metadata.VERSIONS:
        assert (root / "schemas" / f"mlf_v{v}.schema.json").is_file()
        page = (root / "docs" / f"mlf_v{v}.md").read_text()
        assert f"## Layout of version {v}" in page and "## Example" in page
        assert metadata.styles(v) == (["full-model"] if v < 4 else ["full-model", "operator"])


@pytest.mark.parametrize("text, version, style", [(ADD_V7, 7, "full-model"), (OPERATOR_V7, 7, "operator")])
def test_real_tvm_documents_read_and_dump_byte_exactly(text, version, style):
    md = metadata.parse(text.encode())
    assert (md.version, md.style) == (version, style)
    assert md.dumps() == text.encode()
    assert md.unknown == []


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_spec_examples_validate_and_round_trip(name):
    ex = EXAMPLES[name]
    md = metadata.from_document(copy.deepcopy(ex["value"]))
    assert (md.version, md.style) == (ex["version"], ex["style"])
    again = metadata.parse(md.dumps())
    assert again.dumps() == md.dumps()
    assert again.to_data() == ex["value"]


def test_full_model_dump_sorts_int_device_keys_numerically():
    doc = copy.deepcopy(EXAMPLES["add_v2"]["value"])
    doc["target"] = {"12": "ext", "2": "cuda", "1": "c"}
    out = metadata.from_document(doc).dumps().decode()
    assert out.index('"1": "c"') < out.index('"2": "cuda"') < out.index('"12": "ext"')
    assert not out.endswith("\n") and "\n  " in out


def test_operator_dump_keeps_insertion_order_on_one_line():
    out = metadata.from_document(copy.deepcopy(EXAMPLES["operator_v4"]["value"])).dumps().decode()
    assert "\n" not in out
    assert list(json.loads(out)) == ["version", "model_name", "export_datetime", "memory", "target", "runtimes",
                                     "style"]


def test_non_ascii_is_escaped_like_python_json():
    doc = copy.deepcopy(EXAMPLES["add_v1"]["value"])
    doc["model_name"] = "modèle"
    assert b"mod\\u00e8le" in metadata.from_document(doc).dumps()


@pytest.mark.parametrize("version, key", [(1, "runtimes"), (4, "runtimes"), (5, "executors"), (7, "modules")])
def test_keys_follow_the_version(version, key):
    props = metadata.model_for(version, "full-model").model_fields
    assert key in props


def test_strict_by_default_lenient_reports_unknown_keys():
    doc = json.loads(ADD_V7)
    doc["modules"]["add"]["note"] = "hand-edited"
    doc["modules"]["add"]["memory"]["functions"]["main"][0]["extra"] = 1
    with pytest.raises(ValidationError) as err:
        metadata.from_document(copy.deepcopy(doc))
    assert err.value.field in ("modules.add.note", "modules.add.memory.functions.main[0].extra")
    md = metadata.from_document(copy.deepcopy(doc), lenient=True)
    assert sorted(md.unknown) == ["modules.add.memory.functions.main[0].extra", "modules.add.note"]
    assert metadata.unknown_keys(doc, 7, "full-model") == ["modules.add.note",
                                                            "modules.add.memory.functions.main[0].extra"]
    assert md.to_data()["modules"]["add"]["note"] == "hand-edited"  # kept


@pytest.mark.parametrize("mutate, path", [
    (lambda d: d["modules"]["add"]["memory"]["sids"][0].update(size_bytes="2"), "modules.add.memory.sids[0].size_bytes"),
    (lambda d: d["modules"]["add"].pop("target"), "modules.add.target"),
    (lambda d: d["modules"]["add"].update(executors=["vm"]), "modules.add.executors[0]"),
    (lambda d: d["modules"]["add"].update(export_datetime="2026-11-22T08:00:14"), "modules.add.export_datetime"),
    (lambda d: d["modules"]["add"].update(model_name="other"), "modules.add.model_name"),
    (lambda d: d["modules"]["add"]["memory"]["functions"]["main"][0].update(device=True),
     "modules.add.memory.functions.main[0].device"),
    (lambda d: d.update(version=6), "version"),
])
def test_errors_name_the_json_path(mutate, path):
    doc = json.loads(ADD_V7)
    mutate(doc)
    with pytest.raises(ValidationError) as err:
        metadata.from_document(doc, version=7)
    assert err.value.field == path, err.value


def test_null_input_binding_from_version_4_all_null_from_7e3dc45fed():
    """The legacy printer named only the last printed PrimFunc's parameters (970aefffe9), so
    null bindings are valid from version 4; from 7e3dc45fed every binding is null, so a
    string binding in version 7 means an earlier revision."""
    doc = json.loads(OPERATOR_V7)
    metadata.from_document(doc)
    metadata.from_document(dict(doc, version=6))  # real v6 output of a two-PrimFunc module
    assert metadata.consistent_revisions(metadata.parse(OPERATOR_V7)) == [
        "v7", "v7.io", "v7.named_outputs", "v7.null_binding", "v7.templates"]
    named = copy.deepcopy(doc)
    for buffers in named["memory"].values():
        for b in buffers:
            b["input_binding"] = "A_1"
    assert metadata.consistent_revisions(metadata.from_document(named)) == ["v7", "v7.io", "v7.named_outputs"]
    v4 = copy.deepcopy(EXAMPLES["operator_v4"]["value"])
    assert [b["input_binding"] for b in v4["memory"]["add"]] == [None] * 3
    assert metadata.consistent_revisions(metadata.from_document(v4)) == ["v4"]


def test_consistent_revisions_come_from_the_keys():
    assert metadata.consistent_revisions(metadata.parse(ADD_V7.encode())) == [
        "v7.io", "v7.named_outputs", "v7.null_binding", "v7.templates"]
    crt = metadata.from_document(copy.deepcopy(EXAMPLES["aot_crt_v5"]["value"]))
    assert metadata.consistent_revisions(crt) == ["v5.crt", "v5.usmp"]
    plain = copy.deepcopy(EXAMPLES["aot_crt_v5"]["value"])
    del plain["external_dependencies"]
    assert metadata.consistent_revisions(metadata.from_document(plain))[0] == "v5"


def test_detection_by_shape():
    doc = copy.deepcopy(EXAMPLES["aot_crt_v6"]["value"])
    doc["version"] = 5  # a v6 document that says 5
    det = metadata.detect(doc)
    assert det.version == 5 and det.fits == [(6, "full-model")]
    assert metadata.detect({"version": "7"}).version is None
    v1 = metadata.detect(copy.deepcopy(EXAMPLES["add_v1"]["value"]))
    assert v1.fits == [(1, "full-model")]


def test_v2_and_v3_share_a_shape():
    doc = copy.deepcopy(EXAMPLES["add_v2"]["value"])
    assert [v for v, _ in metadata.detect(doc).fits] == [2, 3]


def test_unreadable_documents_raise_validation_error():
    for data in (b"", b"{", b"[1]", b'{"version": 8}', b'{"version": true}', b"\xff{}", b"{}", "\ufeff{}".encode(),
                 b'{"version": 7, "modules": {"a": {}, "a": {}}}', b"[" * 100000):
        with pytest.raises(ValidationError):
            metadata.parse(data)


def test_spec_as_data_for_migrations():
    v5 = metadata.spec(5)
    fm = v5["records"]["full_model"]
    ext = next(f for f in fm["fields"] if f["name"] == "external_dependencies")
    assert ext["required"] is False and ext["present_in"] == ["v5.crt", "v5.usmp"]
    assert next(f for f in fm["fields"] if f["name"] == "target")["type"] == "map[int, str]"
    assert next(f for f in metadata.spec(6)["records"]["full_model"]["fields"] if f["name"] == "target")["type"] == \
        "list[str]"
    assert all(f["doc"] for rec in v5["records"].values() for f in rec["fields"])
    assert [r["style"] for r in v5["roots"]] == ["full-model", "operator"]
    assert v5["roots"][0]["json"] == {"indent": 2, "sort_keys": True, "ensure_ascii": True, "trailing_newline": False}
    assert [r["id"] for r in metadata.revisions(7)][0] == "v7"
    with pytest.raises(MlfError):
        metadata.spec(8)


def test_dumps_of_plain_documents_and_models():
    doc = json.loads(ADD_V7)
    assert metadata.dumps(doc) == ADD_V7.encode()
    typed = metadata.build(7, "full-model", doc)
    assert metadata.dumps(typed) == ADD_V7.encode()


def test_datetime_validity():
    assert metadata.datetime_valid("2026-11-22 08:00:14Z")
    assert not metadata.datetime_valid("2026-13-22 08:00:14Z")


def test_compose_builds_every_version_from_one_set_of_values():
    target = "c -keys=cpu -model=host"
    sids = [{"input_binding": "a", "size_bytes": 2, "storage_id": 0}]
    main = {"constants_size_bytes": 0, "device": 1, "io_size_bytes": 2, "workspace_size_bytes": 0,
            "inputs": {"a": {"dtype": "uint8", "size": 2}}, "outputs": {}}
    module = {"executors": ["graph"], "runtimes": ["graph"], "export_datetime": "2022-01-01 00:00:00Z",
              "model_name": "m", "target": metadata.Candidates(intmap={"1": target}, list=[target]),
              "memory": metadata.Candidates(list=sids, memory_map={
                  "functions": {"main": [main], "operator_functions": []}, "sids": sids})}
    values = {**module, "modules": {"m": module}}
    for v in metadata.VERSIONS:
        doc = metadata.compose(values, v, "full-model")
        md = metadata.from_document(doc, version=v)
        assert list(md.modules) == ["m"]
        assert ("runtimes" in json.dumps(doc)) == (v < 5)
    early = metadata.compose(values, 7, "full-model", "v7")
    assert "inputs" not in early["modules"]["m"]["memory"]["functions"]["main"][0]
    with pytest.raises(MlfError):
        metadata.compose(values, 7, "full-model", "v6")


def test_unpaired_surrogate_escapes_are_a_validation_error_with_the_path():
    # Found by fuzzing (issue 11): "\udcff" is valid JSON syntax but not Unicode; pydantic
    # raised UnicodeEncodeError from inside validation (metadata and graph JSON alike).
    from mlf_spec import graph_json

    text = b'{"version": 7, "modules": {"m": {"model_name": "\\udcff"}}}'
    with pytest.raises(ValidationError) as info:
        metadata.parse(text, lenient=True)
    assert info.value.field == "modules.m.model_name" and "surrogate" in info.value.message
    with pytest.raises(ValidationError) as info:
        graph_json.parse(b'{"nodes": [{"\\ud800x": 1}]}', lenient=True)
    assert info.value.field == 'nodes[0]["\\ud800x"]'
    with pytest.raises(ValidationError):
        metadata.parse('{"version": 7, "x": "\udcff"}')  # str input with a raw surrogate
    # a surrogate pair is one character (U+1F600) and reads as the schema decides
    with pytest.raises(ValidationError) as info:
        metadata.parse(b'{"version": 7, "\\ud83d\\ude00": 1}')
    assert "surrogate" not in info.value.message
