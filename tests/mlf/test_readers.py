"""``check --tvm VERSION`` on MLF archives: which of TVM's readers of that release take the
archive as it was meant. The readers and their requirements are spec tables
(spec/verdicts/mlf_read_rules.yaml); these tests pin what the readers of
the release tags v0.8.0 to v0.18.0 do with archives of each shape."""

from __future__ import annotations

import gzip
import json

import pytest
from mlf_spec.generated import mlf_read_rules_rules
from mlf_spec.generated.mlf_check_output_models import CheckReport

from mlf_spec import archive, check
from mlf_spec.cli import main
from mlf_spec.mlf import readers
from mlf_spec.mlf.strategies import ArchiveSpec, ModuleSpec, Tensor, build_archive
from mlf_spec.verdict import engine as verdict_engine
from tests.support.models import add_module


def tar(version: int, rev: str, *mods: ModuleSpec, style: str = "full-model") -> bytes:
    return build_archive(ArchiveSpec(version, rev, style, list(mods), 1.7e9)).to_bytes()


def verdict(data: bytes, version: str) -> dict:
    with archive.open(data) as a:
        return readers.verdict(a, version).to_dict()


def by_reader(v: dict) -> dict[str, str]:
    return {r["reader"]: r["verdict"] for r in v["readers"]}


def rules(v: dict) -> list[str]:
    return [x["rule"] for x in v["reasons"]]


def test_the_spec_and_the_engine_agree():
    assert set(mlf_read_rules_rules.TESTS["archive"]) == set(readers.REQUIREMENTS)
    names = {r["reader"] for r in mlf_read_rules_rules.READERS}
    for r in mlf_read_rules_rules.RULES:
        assert set(r["readers"]) <= names and r["verdict"] in ("rejects", "misreads") and len(r["evidence"]) >= 10
        assert any(r["id"].split(".")[0] in reader for reader in r["readers"])
    with pytest.raises(KeyError, match="tests must be"):
        verdict_engine.Evaluator((0, 12), None, verdict_engine.rules("mlf_read_rules"), {}, "0.12")


def test_v7_default_graph_module_loads_in_every_release_from_0_9():
    data = tar(7, "v7.templates", add_module(name="default"))
    for version in ("0.9", "0.12", "0.16.dev0", "0.18.0", "v0.11.1"):
        v = verdict(data, version)
        assert v["verdict"] == "loads" and v["reasons"] == [], version
        assert set(by_reader(v).values()) == {"loads"}
        assert v["from"] == "v7.templates"


def test_v7_in_0_8_only_the_templates_that_read_no_metadata():
    v = verdict(tar(7, "v7.templates", add_module(name="default")), "0.8")
    assert v["verdict"] == "rejects"
    assert by_reader(v) == {"tvmc": "rejects", "zephyr": "loads", "crt": "loads", "arduino_example": "rejects",
                            "arduino_host_driven": "loads", "stm32": "rejects"}
    assert rules(v) == ["tvmc.executors", "arduino.style_flat", "stm32.graph_v5"]  # each reader stops at its first raise
    reason = v["reasons"][0]
    assert reason["commit"] == "ca28dfff35" and reason["where"] == "./metadata.json" and "no `executors`" in reason["message"]


def test_v5_archives_need_0_8_and_the_default_name():
    assert verdict(tar(5, "v5.usmp", add_module(name="default")), "0.8")["verdict"] == "loads"
    v = verdict(tar(5, "v5.usmp", add_module(name="net")), "0.8")
    assert by_reader(v)["tvmc"] == "rejects" and rules(v)[0] == "tvmc.params_default"
    v = verdict(tar(5, "v5.usmp", add_module(name="default")), "0.12")
    assert v["verdict"] == "rejects" and by_reader(v)["zephyr"] == "loads"
    assert "tvmc.modules" in rules(v) and "arduino.modules" in rules(v)


def test_compressed_archives_only_for_tvmc_and_the_testing_helper():
    data = gzip.compress(tar(7, "v7.templates", add_module("aot", name="default", crt=True)))
    v = verdict(data, "0.12")
    assert v["verdict"] == "rejects"
    assert by_reader(v) == {"tvmc": "loads", "zephyr": "rejects", "crt": "rejects", "arduino_example": "rejects",
                            "arduino_host_driven": "rejects", "stm32": "rejects", "micro_testing": "loads"}
    assert all("gzip-compressed" in x["message"] for x in v["reasons"] if x["rule"].endswith("uncompressed"))


def test_cc_sources_and_objects_are_misread_by_the_templates():
    cc = add_module(name="default")
    cc.ext = "cc"
    v = verdict(tar(7, "v7.templates", cc), "0.12")
    assert v["verdict"] == "misreads"
    assert by_reader(v)["zephyr"] == by_reader(v)["crt"] == "misreads" and by_reader(v)["tvmc"] == "loads"
    llvm = add_module(name="default")
    llvm.sources, llvm.objects = 0, 1
    v = verdict(tar(7, "v7.templates", llvm), "0.12")
    assert by_reader(v)["arduino_host_driven"] == "misreads" and by_reader(v)["zephyr"] == "loads"
    assert "arduino.objects" in rules(v)


def test_operator_archives_and_several_modules():
    op = ModuleSpec("add", "operator", "c -keys=cpu -model=host", "2023-01-01 00:00:00Z",
                    prim_funcs={"add": [Tensor("A", "int8", [2])]})
    v = verdict(tar(7, "v7.templates", op, style="operator"), "0.12")
    assert by_reader(v)["tvmc"] == "rejects" and by_reader(v)["zephyr"] == "loads" and rules(v)[0] == "tvmc.modules"
    two = tar(7, "v7.templates", add_module(name="default"), add_module("aot", name="mod2"))
    v = verdict(two, "0.12")
    assert by_reader(v)["tvmc"] == "rejects" and "tvmc.single_module" in rules(v)
    assert by_reader(v)["arduino_example"] == "loads"  # sums the modules' workspaces


def test_names_without_prefix_fail_only_the_exact_name_lookup():
    a = build_archive(ArchiveSpec(7, "v7.templates", "full-model", [add_module(name="default")], 1.7e9))
    for m in a.members:
        if m.path != ".":
            m.name = m.path
    v = verdict(a.to_bytes(), "0.12")
    assert by_reader(v)["micro_testing"] == "rejects" and rules(v) == ["micro_testing.name"]
    assert v["verdict"] == "loads"  # the helper is not a general reader


@pytest.mark.parametrize("version", ["0.7", "0.19", "0.27", "0.19.dev0"])
def test_releases_without_a_reader(version):
    v = verdict(tar(7, "v7.templates", add_module(name="default")), version)
    assert v["verdict"] == "rejects" and v["readers"] == [] and rules(v) == ["no_reader"]
    assert v["reasons"][0]["commit"] == (None if version == "0.7" else "f717c5655c")


def test_deviating_metadata_still_gets_a_verdict():
    a = build_archive(ArchiveSpec(7, "v7.templates", "full-model", [add_module(name="default")], 1.7e9))
    doc = json.loads(a.read("metadata.json"))
    doc["modules"]["default"]["export_datetime"] = 20230101
    a.replace("metadata.json", json.dumps(doc))
    v = verdict(a.to_bytes(), "0.12")
    assert v["verdict"] == "loads" and v["from"] is None


def test_cli_json_and_text(tmp_path, capsys):
    path = tmp_path / "m.tar"
    path.write_bytes(tar(7, "v7.templates", add_module(name="default")))
    assert main(["check", str(path), "--tvm", "0.8", "--json"]) == 0  # a verdict is no finding
    doc = json.loads(capsys.readouterr().out)
    report = CheckReport.model_validate(doc)
    assert report.tvm.verdict == "rejects" and report.tvm.version == "0.8" and report.tvm.from_ == "v7.templates"
    assert [r.reader for r in report.tvm.readers][:2] == ["tvmc", "zephyr"]
    assert main(["check", str(path), "--tvm", "0.12"]) == 0
    out = capsys.readouterr().out
    assert "TVM 0.12, written by TVM 0.12 or later, metadata revision v7.templates (detected): loads" in out
    assert "tvmc: loads" in out
    with pytest.raises(SystemExit) as exc:  # one validation of versions for every option (issue 18)
        main(["check", str(path), "--tvm", "twelve"])
    assert exc.value.code == 2
    assert "not a TVM version" in capsys.readouterr().err
    assert main(["check", str(path), "--json"]) == 0
    assert "tvm" not in json.loads(capsys.readouterr().out)


def test_check_api_carries_the_verdict():
    r = check.check(tar(7, "v7.templates", add_module(name="default")), tvm="0.12")
    assert r.tvm.verdict == "loads" and r.to_dict()["tvm"] == r.tvm.to_dict()


def test_templates_build_the_reading_tvms_crt_not_the_archives():
    """generate_project_from_mlf passes get_standalone_crt_dir() of the reading TVM: an AOT +
    CRT archive generated by 0.16.dev0 (external_dependencies version_spec) is built against
    another CRT in 0.12."""
    data = tar(7, "v7.templates", add_module("aot", name="default", crt=True))
    assert verdict(data, "0.16")["verdict"] == "loads"
    v = verdict(data, "0.12")
    assert v["verdict"] == "misreads" and by_reader(v)["tvmc"] == "loads"
    assert [x["rule"] for x in v["reasons"] if x["reader"] == "zephyr"] == ["zephyr.crt"]
    assert "0.16.dev0" in v["reasons"][0]["message"] and v["reasons"][0]["where"] == "./runtime"
