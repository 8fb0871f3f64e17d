"""Migrations (mlf_spec.migrate): every declared loss, derivation and refusal on a source
that has it, archives shaped like real TVM version 7 exports (reference §2, §3, §5) down to
every older version and back, and the plan / apply API."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mlf_spec.generated import mlf_migrations

from mlf_spec import archive, check, metadata, migrate
from mlf_spec.errors import LossRefusedError, MigrationError, MlfError, OutputExistsError, ValidationError
from mlf_spec.mlf.migrate_registry import CONVERTERS, DERIVERS, Context, target_list_to_dict
from mlf_spec.mlf.strategies import ArchiveSpec, ModuleSpec, Tensor, build_archive
from tests.support.models import (
    ADD_V7,
    OPERATOR_V7,
    add_module,
    multi_module_v7,
    real_aot_v7,
    real_graph_v7,
    tar,
)

ROOT = Path(__file__).resolve().parents[2]


def operator(name: str = "add", ext: str = "c") -> ModuleSpec:
    return ModuleSpec(name, "operator", "c -keys=cpu -model=host", "2026-11-22 08:02:53Z", sources=1, ext=ext,
                      prim_funcs={name: [Tensor("A", "int8", [2]), Tensor("B", "int8", [1]), Tensor("C", "int8", [2])]})


def real_operator_v7() -> bytes:
    data = tar(7, "v7.templates", operator(), style="operator")
    assert archive.open(data).read("metadata.json") == OPERATOR_V7.encode()
    return data


def run(source, to, accept=None):
    with migrate.plan(source, to) as p:
        r = migrate.apply(p, p.loss_names() if accept is None else accept)
        return p, r.to_bytes() if r.archive is not None else r.document


# ----------------------------------------------------------------- real exports, down and back


REAL_LOSSES = {  # target version -> the losses of going down to it
    "graph": {v: (["v1_v2.memory_functions"] if v == 1 else []) for v in range(1, 7)},
    "aot": {v: ["v6_v7.main_io", "v6_v7.templates"] + (["v4_v5.standalone_crt", "v4_v5.c_header"] if v <= 4 else [])
            + (["v1_v2.memory_functions"] if v == 1 else []) for v in range(1, 7)},
    "operator": {v: [] for v in range(4, 7)},  # null bindings are real from version 4 (970aefffe9)
}


@pytest.mark.parametrize("kind", ["graph", "aot", "operator"])
def test_real_v7_exports_go_down_to_every_version_and_back(kind):
    data = {"graph": real_graph_v7, "aot": real_aot_v7, "operator": real_operator_v7}[kind]()
    for to, losses in REAL_LOSSES[kind].items():
        p, down = run(data, to)
        assert p.loss_names() == losses, to
        report = check.check(down)
        assert report.findings == [] and report.version == to
        q, back = run(down, 7)
        assert check.check(back).findings == []
        if not losses:
            assert back == data, to  # byte for byte, main's inputs and outputs derived again
            assert not q.losses
        if kind == "graph" and to >= 2:
            assert [d.name for d in q.derived] == ["v6_v7.main_inputs", "v6_v7.main_outputs"]
    if kind == "operator":
        with pytest.raises(MigrationError, match="v3_v4.operator_style"):
            migrate.plan(data, 3)


def test_real_graph_export_at_version_1_then_back_differs_only_in_memory_functions():
    data = real_graph_v7()
    _, v1 = run(data, 1)
    p, back = run(v1, 7)
    assert p.loss_names() == ["v1_v2.memory_functions"]
    assert [x.kind for x in p.losses] == ["invented"]
    a, b = archive.open(data), archive.open(back)
    assert [m.name for m in a.members] == [m.name for m in b.members]
    assert all(a.read(m.path) == b.read(m.path) for m in a.members if not m.is_dir and m.path != "metadata.json")
    mod_a = json.loads(a.read("metadata.json"))["modules"]["add"]
    mod_b = json.loads(b.read("metadata.json"))["modules"]["add"]
    assert mod_b["memory"]["functions"] == {"main": [], "operator_functions": []}
    mod_a["memory"].pop("functions"), mod_b["memory"].pop("functions")
    assert mod_a == mod_b


def test_real_multi_module_export_cannot_go_below_7():
    data = multi_module_v7()
    for to in range(1, 7):
        with pytest.raises(MigrationError) as err:
            migrate.plan(data, to)
        assert err.value.refusal == "v6_v7.several_modules"
        assert "2 modules ('mod1', 'mod2')" in str(err.value)


@pytest.mark.parametrize("version", [1, 2, 3, 4, 5, 6])
def test_first_revisions_of_each_version_upgrade_to_7(version):
    """The "add" model as the first writer of each version wrote it becomes a clean version 7."""
    rev = {1: "v1", 2: "v2", 3: "v3", 4: "v4", 5: "v5", 6: "v6"}[version]
    data = tar(version, rev, add_module())
    p, out = run(data, 7)
    assert p.loss_names() == (["v1_v2.memory_functions"] if version == 1 else [])
    with archive.open(out) as a:
        assert check.check_archive(a).findings == []
        assert sorted(m.path for m in a.members if not m.is_dir) == [
            "codegen/host/src/add_lib0.c", "codegen/host/src/add_lib1.c", "executor-config/graph/add.graph",
            "metadata.json", "parameters/add.params", "src/add.relay"]
        main = a.modules["add"].metadata.memory.functions.main
        if version > 1:
            assert {k: (t.dtype, t.size) for k, t in main[0].inputs.items()} == {"a": ("uint8", 2), "b": ("float32", 8)}


# ----------------------------------------------------------------- every declared loss, derivation, refusal


def _doc_v2_empty_sids() -> dict:
    doc = json.loads(metadata.dumps(next(e["value"] for e in metadata._ir.EXAMPLES if e["name"] == "add_v2"), 2,
                                    "full-model"))
    doc["memory"]["sids"] = []
    return doc


def _doc(version: int, target) -> dict:
    base = next(e["value"] for e in metadata._ir.EXAMPLES if e["name"] == ("aot_crt_v5" if version == 5 else "aot_crt_v6"))
    return {**json.loads(json.dumps(base)), "target": target}


# loss name -> (source, target version, kind)
LOSS_CASES = {
    "v1_v2.memory_functions": [(lambda: tar(2, "v2", add_module()), 1, "dropped"),
                               (lambda: tar(1, "v1", add_module()), 2, "invented")],
    "v1_v2.empty_sids": [(_doc_v2_empty_sids, 1, "dropped")],
    "v4_v5.standalone_crt": [(lambda: tar(5, "v5.crt", add_module("aot", crt=True)), 4, "dropped")],
    "v4_v5.c_header": [(lambda: tar(5, "v5.header_lower", add_module("aot", header=True)), 4, "dropped")],
    "v4_v5.cpp_sources": [(lambda: tar(5, "v5.cpp", add_module("aot", ext="cc")), 4, "dropped"),
                          (lambda: tar(5, "v5.cpp", operator(ext="cc"), style="operator"), 4, "dropped")],
    "v5_v6.target_device_type": [(lambda: _doc(5, {"3": "c -keys=cpu"}), 6, "dropped"),
                                 (lambda: _doc(6, ["c -keys=cpu", "llvm -keys=cpu"]), 5, "invented"),
                                 (lambda: _doc(6, ["my_accel -x=1", "llvm"]), 5, "invented")],
    "v5_v6.target_order": [(lambda: _doc(6, ["cuda -keys=cuda,gpu", "llvm -keys=cpu"]), 5, "dropped")],
    "v5_v6.header_name": [(lambda: tar(5, "v5.header", add_module("aot", name="MyNet", header=True)), 6, "dropped")],
    "v6_v7.main_io": [(lambda: tar(7, "v7.io", add_module("aot")), 6, "dropped"),
                      (lambda: json.loads(ADD_V7), 6, "dropped")],
    "v6_v7.templates": [(lambda: tar(7, "v7.templates", add_module("aot", crt=True)), 6, "dropped")],
}


def test_every_declared_loss_has_a_case():
    assert sorted(LOSS_CASES) == sorted(migrate.LOSSES)


@pytest.mark.parametrize("name, case", [(n, c) for n, cases in LOSS_CASES.items() for c in cases],
                         ids=lambda x: x if isinstance(x, str) else "")
def test_each_declared_loss_happens_and_is_refused_unless_accepted(name, case):
    make, to, kind = case
    source = make()
    with migrate.plan(source, to) as p:
        hits = [x for x in p.losses if x.name == name]
        assert hits and {x.kind for x in hits} == {kind}, p.losses
        assert all(x.doc.startswith(mlf_migrations.LOSSES[name]["doc"]) for x in hits)
        others = [n for n in p.loss_names() if n != name]
        with pytest.raises(LossRefusedError) as err:
            migrate.apply(p, others)
        assert err.value.losses == [name] and name in str(err.value)
        r = migrate.apply(p, p.loss_names())
        assert r.version == to
        if r.report is not None:
            assert r.report.conformant


def test_header_name_loss_renames_the_header_to_lower_case():
    p, out = run(tar(5, "v5.header", add_module("aot", name="MyNet", header=True)), 6)
    [x] = p.losses
    assert x.where == "./codegen/host/include/tvmgen_MyNet.h" and "tvmgen_mynet.h" in x.detail
    assert archive.open(out).member("codegen/host/include/tvmgen_mynet.h") is not None


def test_cpp_sources_downgrade_notes_the_module_has_no_sources():
    p, out = run(tar(5, "v5.cpp", add_module("aot", ext="cc")), 4)
    assert [f.code for f in p.new_findings()] == ["codegen.none"]
    assert check.check(out).conformant
    _, out_c = run(tar(5, "v5.cpp", add_module("aot", ext="c")), 4)
    assert check.check(out_c).findings == []


def test_mixed_source_extensions_check_clean_and_close_the_gap_when_cpp_goes():
    """One counter per module for all its C/C++ sources (cc5382ed41): lib0.cc then lib1.c
    is a valid sequence; without the .cc source version 4 numbers the .c one lib0."""
    a = archive.open(tar(5, "v5.cpp", add_module("aot")))  # two sources, lib0.c and lib1.c
    a.relocate({"codegen/host/src/add_lib0.c": "codegen/host/src/add_lib0.cc"})
    a.reorder()
    data = a.to_bytes()
    assert check.check(data).findings == []
    p, out = run(data, 4)
    assert [(x.name, x.where) for x in p.losses] == [("v4_v5.cpp_sources", "./codegen/host/src/add_lib0.cc"),
                                                     ("v4_v5.cpp_sources", "./codegen/host/src/add_lib1.c")]
    with archive.open(out) as b:
        assert b.modules["add"].sources == ["codegen/host/src/add_lib0.c"]
        assert b.read("codegen/host/src/add_lib0.c") == a.read("codegen/host/src/add_lib1.c")
        assert check.check_archive(b).findings == []


def test_archive_relocate_moves_members_alone_and_refuses_clashes():
    a = archive.open(real_graph_v7())
    b = a.copy()
    b.relocate({"src": "source", "src/add.relay": "source/add.relay", "parameters/add.params": None})
    assert "src/add.relay" in a and "source/add.relay" in b and "parameters/add.params" not in b
    assert b.member("source").raw_header is None and a.member("src").raw_header is not None
    with pytest.raises(MlfError):
        b.relocate({"codegen/host/src/add_lib0.c": "codegen/host/src/add_lib1.c"})
    with pytest.raises(MlfError):
        b.relocate({"nothing/here": None})


def test_target_devices_are_derived_as_the_version_5_writers_keyed_them():
    p, doc = run(_doc(6, ["llvm -keys=cpu", "cuda -keys=cuda,gpu", "hexagon -mcpu=v66"]), 5)
    assert doc["target"] == {"1": "llvm -keys=cpu", "2": "cuda -keys=cuda,gpu", "14": "hexagon -mcpu=v66"}
    assert p.loss_names() == [] and [d.name for d in p.derived] == ["v5_v6.target_device_types"]
    back = migrate.migrate(doc, 6).document
    assert back["target"] == ["llvm -keys=cpu", "cuda -keys=cuda,gpu", "hexagon -mcpu=v66"]


def test_unknown_target_kind_takes_the_single_device_of_main():
    ctx = Context("m", {"memory": {"functions": {"main": [{"device": 12}]}}}, None,
                  [{"word": "c", "device_type": 1}], True)
    out, notes = target_list_to_dict(["vta_accel -x"], ctx)
    assert out == {"12": "vta_accel -x"} and [n.kind for n in notes] == ["derived"]
    out, notes = target_list_to_dict(["vta_accel -x", "c"], ctx)
    assert out == {"1": "c", "2": "vta_accel -x"}
    assert sorted(n.name for n in notes) == ["", "target_device_type", "target_order"]


DERIVED_CASES = {
    "v5_v6.target_device_types": (lambda: tar(6, "v6", add_module()), 5),
    "v6_v7.main_inputs": (lambda: tar(6, "v6", add_module()), 7),
    "v6_v7.main_outputs": (lambda: tar(6, "v6", add_module()), 7),
}


def test_every_derivation_has_a_case():
    declared = {f"{s['name']}.{n}" for s in mlf_migrations.STEPS for n in s["derivations"]}
    assert sorted(DERIVED_CASES) == sorted(declared)


@pytest.mark.parametrize("name", sorted(DERIVED_CASES))
def test_each_derivation_is_marked_in_the_result(name):
    make, to = DERIVED_CASES[name]
    with migrate.plan(make(), to) as p:
        hits = [d for d in p.derived if d.name == name]
        assert hits and hits[0].doc
        r = migrate.apply(p)
        assert [d.name for d in r.derived] == [d.name for d in p.derived]
        doc = r.document
        for d in hits:
            value = doc
            for part in d.where.replace("[", ".").replace("]", "").split("."):
                value = value[int(part)] if part.isdigit() else value[part]
            if name != "v5_v6.target_device_types":
                assert value == d.value


def test_main_io_is_not_derived_when_it_would_not_add_up():
    """Two main entries, or sizes that disagree with io_size_bytes: nothing is made up."""
    m = add_module()
    m.op_functions = [("f", 0)]
    data = tar(6, "v6", m)
    a = archive.open(data)
    doc = json.loads(a.read("metadata.json"))
    doc["memory"]["functions"]["main"][0]["io_size_bytes"] = 17
    a.replace("metadata.json", metadata.dumps(doc, 6, "full-model"))
    p, out = run(a.to_bytes(), 7)
    assert p.derived == [] and p.losses == []
    main = json.loads(archive.open(out).read("metadata.json"))["modules"]["add"]["memory"]["functions"]["main"]
    assert "inputs" not in main[0] and "outputs" not in main[0]


REFUSAL_CASES = {
    "v3_v4.operator_style": (lambda: tar(4, "v4", operator(), style="operator"), 3),
    "v6_v7.several_modules": (multi_module_v7, 6),
}


def test_every_refusal_has_a_case():
    declared = {f"{s['name']}.{n}" for s in mlf_migrations.STEPS for n in s["refusals"]}
    assert sorted(REFUSAL_CASES) == sorted(declared)


@pytest.mark.parametrize("name", sorted(REFUSAL_CASES))
def test_each_refusal_is_a_migration_error_naming_it(name):
    make, to = REFUSAL_CASES[name]
    for target in range(1, to + 1):
        with pytest.raises(MigrationError) as err:
            migrate.plan(make(), target)
        assert err.value.refusal == name and name in str(err.value)
        assert err.value.source_version in (4, 7) and err.value.style


# ----------------------------------------------------------------- API


def test_converters_and_derivers_named_by_the_spec_exist_and_no_others():
    assert set(mlf_migrations.CONVERTERS) == set(CONVERTERS)
    assert set(mlf_migrations.DERIVERS) == set(DERIVERS)


def test_plan_is_printable_and_json_serialisable():
    with migrate.plan(real_aot_v7(), 4) as p:
        text = str(p)
        assert "step 7 -> 6 (downgrade, spec/migrations/v6_v7.yaml)" in text
        assert "v4_v5.c_header (dropped)" in text and "at ./codegen/host/include/tvmgen_add.h" in text
        d = json.loads(json.dumps(p.to_dict()))
        assert d["direction"] == "downgrade" and [s["name"] for s in d["steps"]] == ["v6_v7", "v5_v6", "v4_v5"]
        assert {x["name"] for x in d["losses"]} == set(p.loss_names())
        ops = {o["id"]: o for o in d["steps"][0]["operations"]}
        assert ops["modules"]["op"] == "unwrap" and ops["modules"]["changes"] == 1
        assert "v4_v5.standalone_crt" in repr(p)


def test_apply_refuses_unknown_loss_names():
    with migrate.plan(real_aot_v7(), 6) as p, pytest.raises(MigrationError, match="no loss is called"):
        migrate.apply(p, ["v6_v7.main_iox"])


def test_bare_documents_from_json_text_bytes_files_and_metadata(tmp_path):
    path = tmp_path / "metadata.json"
    path.write_text(OPERATOR_V7)
    for source in (OPERATOR_V7, OPERATOR_V7.encode(), path, str(path), metadata.parse(OPERATOR_V7),
                   json.loads(OPERATOR_V7)):
        with migrate.plan(source, 5) as p:
            assert (p.kind, p.source_version, p.loss_names()) == ("document", 7, [])
            r = migrate.apply(p, p.loss_names())
            assert r.archive is None and r.to_bytes().startswith(b'{"version": 5, "model_name": "add"')
            assert r.document["target"] == {"1": "c -keys=cpu -model=host"}


def test_documents_that_depart_from_their_model_are_refused_unparsable_ones_unreadable(tmp_path):
    """JSON that breaks its version's model is readable (inspect shows it) but nothing is
    declared to migrate it by: a refusal (MigrationError, exit 1). Text that is not JSON, or
    an archive whose metadata.json is not, stays unreadable (ValidationError, exit 2)."""
    for doc in ({"version": 7, "modules": {}}, {**json.loads(OPERATOR_V7), "x_extra": 1}):
        with pytest.raises(MigrationError, match="departs from the model of its version"):
            migrate.plan(doc, 6)
    with pytest.raises(ValidationError):
        migrate.plan('{"version": 7,', 6)
    a = build_archive(ArchiveSpec(7, "v7.templates", "full-model", [add_module()], 1.7e9))
    doc = json.loads(a.read("metadata.json"))
    doc["modules"]["add"]["export_datetime"] = 20230101
    a.replace("metadata.json", json.dumps(doc, indent=2, sort_keys=True))
    with pytest.raises(MigrationError, match="export_datetime"):
        migrate.plan(a.to_bytes(), 6)
    a.remove("metadata.json")
    with pytest.raises(MigrationError, match="no metadata.json"):
        migrate.plan(a.to_bytes(), 6)
    a.add("metadata.json", b"{")
    with pytest.raises(ValidationError):
        migrate.plan(a.to_bytes(), 6)


def test_non_conformant_archives_are_refused():
    a = archive.open(real_graph_v7())
    doc = json.loads(a.read("metadata.json"))
    doc["modules"]["add"]["memory"]["sids"][0]["size_bytes"] = 3
    a.replace("metadata.json", metadata.dumps(doc, 7, "full-model"))
    with pytest.raises(MigrationError, match="does not conform to version 7.*sids.mismatch"):
        migrate.plan(a.to_bytes(), 6)


def test_directory_archives_and_output_files(tmp_path):
    src = tmp_path / "extracted"
    archive.open(real_graph_v7()).extract(src)
    out = tmp_path / "v5.tar"
    r = migrate.migrate(src, 5, output=out)
    assert r.output == str(out) and check.check(out).findings == []
    with pytest.raises(OutputExistsError):
        migrate.migrate(src, 4, output=out)
    before = out.read_bytes()
    migrate.migrate(src, 4, output=out, overwrite=True)
    assert out.read_bytes() != before and check.check(out).version == 4
    with pytest.raises(MigrationError, match="output is the input"):
        migrate.migrate(out, 3, output=out, overwrite=True)
    with pytest.raises(MigrationError, match="inside the input directory"):
        migrate.migrate(src, 4, output=src / "v4.tar")
    assert not (src / "v4.tar").exists()


def test_same_version_is_a_copy():
    data = real_graph_v7()
    p, out = run(data, 7)
    assert p.steps == [] and p.direction == "none" and out == data


def test_migrate_without_output_keeps_a_usable_archive(tmp_path):
    path = tmp_path / "a.tar"
    path.write_bytes(real_graph_v7())
    r = migrate.migrate(path, 3)
    assert r.archive.member("relay.txt") is not None and check.check_archive(r.archive).findings == []


def test_warnings_of_the_source_are_noted_and_the_result_is_written_as_tvm_did(tmp_path):
    """A gzip-compressed archive whose metadata.json is not TVM's json.dump: both are warnings
    of the source; the result is an uncompressed tar with TVM's metadata bytes."""
    import gzip

    a = archive.open(tar(6, "v6", add_module()))
    a.replace("metadata.json", json.dumps(json.loads(a.read("metadata.json")), indent=4).encode())
    path = tmp_path / "v6.tar.gz"
    path.write_bytes(gzip.compress(a.to_bytes()))
    with migrate.plan(path, 7) as p:
        assert sorted(f.code for f in p.source_findings) == ["layout.compressed", "metadata.format"]
        assert "note: the source has a warning finding layout.compressed" in str(p)
        r = migrate.apply(p, output=tmp_path / "v7.tar")
        assert p.new_findings() == [] and r.report.findings == []
    assert check.check(tmp_path / "v7.tar").findings == []


def test_operator_document_with_a_primfunc_named_functions_migrates():
    # Found by the campaign (issue 11): an operator document whose memory has a PrimFunc
    # named "functions" made the target_list_to_dict converter raise AttributeError while
    # looking for full-model device hints.
    from mlf_spec import migrate as _migrate

    doc = {"version": 7, "model_name": "m", "export_datetime": "2024-01-01 00:00:00Z",
           "memory": {"functions": [{"size_bytes": 4, "shape": [1], "dtype": "int32", "input_binding": "a"}]},
           "target": ["c -keys=cpu"], "executors": [], "style": "operator"}
    p = _migrate.plan(doc, 5)
    assert p.document["target"] == {"1": "c -keys=cpu"}
