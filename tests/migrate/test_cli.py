"""``mlf-spec upgrade`` / ``mlf-spec downgrade``: outputs, JSON form, exit statuses, and the
promises about files: a dry run writes nothing, an existing output is replaced only with
--force (atomically), the input is never modified."""

from __future__ import annotations

import hashlib
import json
import os

import pytest
from mlf_spec.generated.mlf_migrate_output_models import MigrateReport

from mlf_spec import check
from mlf_spec.cli import main
from tests.support.models import OPERATOR_V7, multi_module_v7, real_aot_v7, real_graph_v7

AOT_LOSSES = ["v6_v7.main_io", "v6_v7.templates", "v4_v5.standalone_crt", "v4_v5.c_header"]


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def aot(tmp_path):
    path = tmp_path / "aot.tar"
    path.write_bytes(real_aot_v7())
    return path


def listing(d) -> list[str]:
    return sorted(p.name for p in d.iterdir())


def test_dry_run_prints_the_plan_and_writes_nothing(aot, tmp_path, capsys):
    before = listing(tmp_path)
    assert main(["downgrade", str(aot), "--to", "4", "-o", str(tmp_path / "out.tar"), "--dry-run"]) == 1
    out = capsys.readouterr().out
    assert "step 5 -> 4 (downgrade, spec/migrations/v4_v5.yaml)" in out
    assert "would be refused: accept --accept-loss v6_v7.main_io" in out
    accept = [a for n in AOT_LOSSES for a in ("--accept-loss", n)]
    assert main(["downgrade", str(aot), "--to", "4", "--dry-run", *accept]) == 0
    assert "dry run: nothing written" in capsys.readouterr().out
    assert main(["downgrade", str(aot), "--to", "4", "--dry-run", "-o", str(aot), *accept]) == 1
    assert f"would be refused: {aot} exists; pass --force" in capsys.readouterr().out
    assert listing(tmp_path) == before


def test_refused_loss_exit_1_and_no_output(aot, tmp_path, capsys):
    out = tmp_path / "out.tar"
    assert main(["downgrade", str(aot), "--to", "4", "-o", str(out), "--accept-loss", "v6_v7.main_io"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"mlf-spec: refused: {aot}: migrating to version 4 loses what was not accepted:")
    assert "--accept-loss v6_v7.templates --accept-loss v4_v5.standalone_crt --accept-loss v4_v5.c_header" in err
    assert not out.exists() and listing(tmp_path) == ["aot.tar"]


def test_accepted_losses_write_a_conformant_archive_and_leave_the_input(aot, tmp_path, capsys):
    before = digest(aot)
    out = tmp_path / "out.tar"
    accept = [a for n in AOT_LOSSES for a in ("--accept-loss", n)]
    assert main(["downgrade", str(aot), "--to", "4", "-o", str(out), *accept]) == 0
    text = capsys.readouterr().out
    assert f"version 7, full-model archive -> version 4: wrote {out}" in text
    assert "derived v5_v6.target_device_types at target" in text
    report = check.check(out)
    assert report.version == 4 and report.findings == []
    assert digest(aot) == before and listing(tmp_path) == ["aot.tar", "out.tar"]


def test_existing_output_needs_force_and_is_replaced_atomically(tmp_path, capsys, monkeypatch):
    src = tmp_path / "g7.tar"
    src.write_bytes(real_graph_v7())
    out = tmp_path / "out.tar"
    out.write_bytes(b"precious")
    assert main(["downgrade", str(src), "--to", "5", "-o", str(out)]) == 1
    assert "exists; pass --force" in capsys.readouterr().err and out.read_bytes() == b"precious"
    # a failure while writing leaves the old file
    from mlf_spec import archive

    monkeypatch.setattr(archive.Archive, "chunks", lambda self: (_ for _ in ()).throw(OSError("disk full")))
    assert main(["downgrade", str(src), "--to", "5", "-o", str(out), "--force"]) == 2
    assert "cannot write: disk full" in capsys.readouterr().err
    assert out.read_bytes() == b"precious" and listing(tmp_path) == ["g7.tar", "out.tar"]
    monkeypatch.undo()
    inode = os.stat(out).st_ino
    assert main(["downgrade", str(src), "--to", "5", "-o", str(out), "--force"]) == 0
    assert check.check(out).version == 5 and os.stat(out).st_ino != inode  # renamed into place


def test_output_over_the_input_is_refused_even_with_force(aot, capsys):
    before = digest(aot)
    accept = [a for n in AOT_LOSSES for a in ("--accept-loss", n)]
    assert main(["downgrade", str(aot), "--to", "4", "-o", str(aot), "--force", *accept]) == 2  # a path mistake (issue 18)
    assert "the output is the input" in capsys.readouterr().err and digest(aot) == before


def test_impossible_migration_exit_1(tmp_path, capsys):
    src = tmp_path / "multi.tar"
    src.write_bytes(multi_module_v7())
    assert main(["downgrade", str(src), "--to", "6", "-o", str(tmp_path / "x.tar")]) == 1
    assert "v6_v7.several_modules" in capsys.readouterr().err
    assert main(["downgrade", str(src), "--to", "6", "--dry-run", "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    MigrateReport.model_validate(doc)
    assert (doc["status"], doc["refusal"], doc["from_version"], doc["kind"]) == (
        "refused", "v6_v7.several_modules", 7, "archive")


def test_unreadable_input_and_bad_command_lines_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.tar"
    bad.write_bytes(b"not a tar at all" * 40)
    assert main(["upgrade", str(bad), "-o", str(tmp_path / "x.tar")]) == 2
    assert capsys.readouterr().err.startswith("mlf-spec: error: ")
    broken = tmp_path / "metadata.json"
    broken.write_text('{"version": 6, "model_name": 3')
    assert main(["upgrade", str(broken), "-o", str(tmp_path / "x.json")]) == 2  # not JSON
    broken.write_text('{"version": 6, "model_name": 3}')  # JSON that departs from the model: refused
    assert main(["upgrade", str(broken), "-o", str(tmp_path / "x.json")]) == 1
    assert "departs from the model of its version" in capsys.readouterr().err
    g = tmp_path / "g.tar"
    g.write_bytes(real_graph_v7())
    assert main(["upgrade", str(g), "--to", "5", "-o", str(tmp_path / "x.tar")]) == 1  # refused, not unreadable
    assert "use `mlf-spec downgrade`" in capsys.readouterr().err
    assert main(["downgrade", str(g), "--to", "5"]) == 2
    assert main(["downgrade", str(g), "--to", "5", "-o", "x", "--accept-loss", "v6_v7.main_iox"]) == 2
    assert "no loss is called 'v6_v7.main_iox'" in capsys.readouterr().err
    assert main(["downgrade", str(g), "--to", "5", "-o", str(tmp_path / "no" / "such" / "dir.tar")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert listing(tmp_path) == ["bad.tar", "g.tar", "metadata.json"]


def test_bare_metadata_json_down_and_up(tmp_path, capsys):
    src = tmp_path / "metadata.json"
    src.write_text(OPERATOR_V7)
    out = tmp_path / "v4.json"
    # null bindings are valid from version 4 (970aefffe9): they go down unchanged, no loss
    assert main(["downgrade", str(src), "--to", "4", "-o", str(out)]) == 0
    assert "accepted loss" not in capsys.readouterr().out
    text = out.read_text()
    assert text.startswith('{"version": 4, "model_name": "add"') and '"input_binding": null' in text
    assert '"target": {"1": "c -keys=cpu -model=host"}, "runtimes": []' in text
    back = tmp_path / "v7.json"
    assert main(["upgrade", str(out), "-o", str(back), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    MigrateReport.model_validate(doc)
    assert (doc["status"], doc["kind"], doc["output"], doc["losses"]) == ("done", "document", str(back), [])
    assert back.read_text() == OPERATOR_V7
    assert src.read_text() == OPERATOR_V7


def test_json_report_of_an_upgrade(tmp_path, capsys):
    from tests.support.models import add_module, tar

    src = tmp_path / "v6.tar"
    src.write_bytes(tar(6, "v6", add_module(name="net")))
    assert main(["upgrade", str(src), "-o", str(tmp_path / "v7.tar"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    MigrateReport.model_validate(doc)
    assert doc["status"] == "done" and doc["direction"] == "upgrade" and doc["to_version"] == 7
    [step] = doc["steps"]
    assert step["name"] == "v6_v7" and step["direction"] == "up"
    changed = {o["id"]: o["changes"] for o in step["operations"]}
    assert changed == {"modules": 1, "main_inputs": 1, "main_outputs": 1, "relay": 1,
                       "graph": 1, "template_crt_config": 0, "template_platform": 0}
    assert [d["name"] for d in doc["derived"]] == ["v6_v7.main_inputs", "v6_v7.main_outputs"]
    assert doc["derived"][0]["value"] == {"a": {"dtype": "uint8", "size": 2}, "b": {"dtype": "float32", "size": 8}}
    assert doc["result_findings"] == [] and doc["losses"] == []


def test_several_inputs_dry_run_json_lines_and_worst_status(aot, tmp_path, capsys):
    g = tmp_path / "g.tar"
    g.write_bytes(real_graph_v7())
    before = listing(tmp_path)
    assert main(["downgrade", "--to", "5", str(aot), str(g), "--dry-run", "--json"]) == 1
    out, err = capsys.readouterr()
    docs = [json.loads(line) for line in out.splitlines()]
    for d in docs:
        MigrateReport.model_validate(d)
    assert [(d["input"], d["status"]) for d in docs] == [(str(aot), "dry-run"), (str(g), "dry-run")]
    assert docs[0]["unaccepted"] == ["v6_v7.main_io", "v6_v7.templates"] and docs[1]["unaccepted"] == []
    assert "2 inputs: 1 ok, 1 with findings or refused, 0 unreadable" in err
    assert listing(tmp_path) == before
    assert main(["downgrade", "--to", "5", str(tmp_path), "--dry-run"]) == 1  # a folder is searched
    assert capsys.readouterr().out.count("MLF version 7, full-model archive -> version 5") == 2


def test_each_loss_is_listed_once_with_all_its_places(aot, capsys):
    assert main(["downgrade", "--to", "5", str(aot), "--dry-run", "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    names = [x["name"] for x in doc["losses"]]
    assert names == ["v6_v7.main_io", "v6_v7.templates"]
    templates = doc["losses"][1]
    assert [w["path"] for w in templates["where"]] == ["./templates/crt_config.h.template",
                                                      "./templates/platform.c.template"]
    main_io = doc["losses"][0]
    assert {w["path"] for w in main_io["where"]} == {"modules.add.memory.functions.main[0].inputs",
                                                     "modules.add.memory.functions.main[0].outputs"}
    assert all(w["module"] == "add" for w in main_io["where"])


def test_several_inputs_are_written_into_a_directory(aot, tmp_path, capsys):
    g = tmp_path / "g.tar"
    g.write_bytes(real_graph_v7())
    meta = tmp_path / "metadata.json"
    meta.write_text(OPERATOR_V7)
    out = tmp_path / "out"
    accept = ["--accept-loss", "v6_v7.main_io", "--accept-loss", "v6_v7.templates"]
    assert main(["downgrade", "--to", "5", str(aot), str(g), str(meta), "-o", str(out), *accept]) == 0
    assert listing(out) == ["aot.tar", "g.tar", "metadata.json"]
    assert check.check(out / "aot.tar").version == 5 and check.check(out / "g.tar").version == 5
    assert json.loads((out / "metadata.json").read_text())["version"] == 5
    # a second run refuses existing outputs one by one (status 1), --force replaces them
    assert main(["downgrade", "--to", "5", str(aot), str(g), "-o", str(out), *accept]) == 1
    assert capsys.readouterr().err.count("exists; pass --force") == 2
    assert main(["downgrade", "--to", "5", str(aot), str(g), "-o", str(out), "--force", *accept]) == 0


def test_two_inputs_with_one_output_name_are_refused_before_writing(tmp_path, capsys):
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "m.tar").write_bytes(real_graph_v7())
    assert main(["downgrade", "--to", "6", str(tmp_path / "a" / "m.tar"), str(tmp_path / "b" / "m.tar"),
                 "-o", str(tmp_path / "out")]) == 2
    assert "would both be written to" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
