"""``mlf-spec inspect`` and ``mlf-spec check``: outputs, JSON forms, exit statuses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mlf_spec.generated.mlf_check_output_models import CheckReport
from mlf_spec.generated.mlf_inspect_output_models import InspectReport

from mlf_spec.cli import main
from mlf_spec.mlf.strategies import ArchiveSpec, build_archive
from tests.support.models import add_module

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def mlf(tmp_path):
    path = tmp_path / "add.tar"
    build_archive(ArchiveSpec(7, "v7.templates", "full-model", [add_module()], 1.7e9)).write(path)
    return path


def test_inspect_text(mlf, capsys):
    assert main(["inspect", str(mlf)]) == 0
    out = capsys.readouterr().out
    assert "MLF version 7, full-model" in out and "module 'add': executor graph" in out
    assert "p0: float32 [1, 2] (8 bytes)" in out and "input a: uint8 [1, 2]" in out
    assert "graph input p0" not in out and "graph nodes bound to parameters: 1 (p0)" in out
    assert "./executor-config/graph/add.graph" in out


def test_inspect_json_matches_its_schema(mlf, capsys):
    assert main(["inspect", str(mlf), "--json"]) == 0
    doc = InspectReport.model_validate_json(capsys.readouterr().out)
    assert (doc.version, doc.style) == (7, "full-model")
    [mod] = doc.modules
    assert mod.name == "add" and mod.executors == ["graph"] and mod.targets == [add_module().target]
    assert [p.name for p in mod.params] == ["p0"] and mod.memory.sids == 4 and mod.memory.sids_bytes == 26
    assert [t.name for t in mod.graph.inputs] == ["a", "b"]  # model inputs; p0 is bound from the params file
    assert [(t.name, t.dtype, t.shape) for t in mod.graph.params] == [("p0", "float32", [1, 2])]
    assert mod.files["params"] == ["parameters/add.params"]
    assert doc.revisions[0] == "v7.io" and doc.files[0].name == "."


def test_check_clean_exit_0(mlf, capsys):
    assert main(["check", str(mlf)]) == 0
    assert "conformant (0 error(s), 0 warning(s))" in capsys.readouterr().out
    assert main(["check", str(mlf), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    CheckReport.model_validate(report)
    assert report == {"path": str(mlf), "kind": "mlf-archive", "version": 7, "style": "full-model", "conformant": True,
                      "findings": []}


def test_check_findings_exit_1(tmp_path, capsys):
    a = build_archive(ArchiveSpec(7, "v7", "full-model", [add_module()], 1.7e9))
    doc = json.loads(a.read("metadata.json"))
    doc["modules"]["add"]["memory"]["sids"][1]["size_bytes"] = 4
    a.replace("metadata.json", json.dumps(doc, indent=2, sort_keys=True))
    path = tmp_path / "bad.tar"
    a.write(path)
    assert main(["check", str(path), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["conformant"] is False
    [f] = report["findings"]
    assert f == {"code": "sids.mismatch", "severity": "error", "member": "./metadata.json",
                 "path": "modules.add.memory.sids[1]", "offset": None,
                 "message": "is {'input_binding': 'b', 'size_bytes': 4, 'storage_id': 1} but the graph gives "
                            "{'storage_id': 1, 'size_bytes': 8, 'input_binding': 'b'}"}
    assert main(["check", str(path)]) == 1
    assert "error: sids.mismatch: ./metadata.json:modules.add.memory.sids[1]" in capsys.readouterr().out


def test_check_against_another_version(mlf, capsys):
    assert main(["check", str(mlf), "--version", "6", "--json"]) == 1
    codes = [f["code"] for f in json.loads(capsys.readouterr().out)["findings"]]
    assert codes[0] == "metadata.version-mismatch" and "metadata.schema" in codes


def test_unreadable_input_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.tar"
    bad.write_bytes(b"not a tar")
    assert main(["check", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mlf-spec: error: ") and str(bad) in err and err.count("\n") == 1
    assert main(["inspect", str(tmp_path / "missing.tar")]) == 2


def test_inspect_shows_metadata_that_departs_from_its_model(tmp_path, capsys):
    """A readable container whose metadata breaks its version's model is shown (exit 0), the
    departures listed; check reports them (exit 1); only unparsable input is exit 2."""
    a = build_archive(ArchiveSpec(7, "v7", "full-model", [add_module()], 1.7e9))
    a.replace("metadata.json", b'{"version": 7, "modules": {}}')
    path = tmp_path / "bad.tar"
    a.write(path)
    assert main(["inspect", str(path), "--json"]) == 0
    captured = capsys.readouterr()
    doc = InspectReport.model_validate_json(captured.out)
    assert (doc.version, doc.style, doc.modules) == (7, "full-model", [])
    assert [(d.code, d.path) for d in doc.deviations] == [("metadata.schema", "modules")]
    assert "departs from the version 7 model" in captured.err
    assert len(doc.files) == len(a.members) and doc.files[0].name == "."
    assert main(["check", str(path)]) == 1
    assert "error: metadata.schema" in capsys.readouterr().out
    a.replace("metadata.json", b'{"version": 7, "modules": {')
    a.write(path)
    assert main(["inspect", str(path), "--json"]) == 0
    doc = InspectReport.model_validate_json(capsys.readouterr().out)
    assert doc.version is None and [d.code for d in doc.deviations] == ["metadata.json"]
    assert all(f.kind is None for f in doc.files)


def test_inspect_operator_and_directory(tmp_path, capsys):
    from mlf_spec import archive
    from mlf_spec.mlf.strategies import ModuleSpec, Tensor

    m = ModuleSpec("add", "operator", "c -keys=cpu -model=host", "2026-11-22 08:02:53Z",
                   prim_funcs={"add": [Tensor("A", "int8", [2])]})
    data = build_archive(ArchiveSpec(7, "v7.templates", "operator", [m], 1.7e9)).to_bytes()
    root = archive.open(data).extract(tmp_path / "op")
    assert main(["inspect", str(root), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["container"] == "directory" and doc["style"] == "operator" and doc["modules"][0]["executors"] == []
    assert main(["check", str(root)]) == 0


def test_inspect_survives_a_broken_graph(tmp_path, capsys):
    a = build_archive(ArchiveSpec(7, "v7", "full-model", [add_module()], 1.7e9))
    a.replace("executor-config/graph/add.graph", b"{")
    path = tmp_path / "bad.tar"
    a.write(path)
    assert main(["inspect", str(path), "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["modules"][0]["graph"] is None
    assert "graph unreadable" in captured.err
