"""The versioned parts of the spec language (timelines, records with a timeline, layouts,
findings): mistakes are reported with file, line and field path; projections follow the
revisions."""

from __future__ import annotations

import shutil
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

from specgen.load import load  # noqa: E402
from specgen.versioned import parse_type, project  # noqa: E402
from specgen.yamlload import SpecError  # noqa: E402


def _tree(tmp_path: Path, rel: str, edit) -> Path:  # noqa: ANN001
    spec = tmp_path / "spec"
    shutil.copytree(ROOT / "spec", spec)
    p = spec / rel
    p.write_text(edit(p.read_text()))
    return spec


def test_unknown_revision_is_reported_with_line(tmp_path):
    spec = _tree(tmp_path, "records/mlf.yaml", lambda s: s.replace("since: v5.crt,\n", "since: v5.crtt,\n", 1))
    with pytest.raises(SpecError) as err:
        load(spec)
    assert err.value.file == "spec/records/mlf.yaml" and err.value.line is not None
    assert "'v5.crtt' is not a revision of timeline 'mlf_revisions'" in str(err.value)


def test_overlapping_entries_of_one_field(tmp_path):
    spec = _tree(tmp_path, "records/mlf.yaml",
                 lambda s: s.replace('{name: target, type: "list[str]", since: v6,', '{name: target, type: "list[str]", since: v5,', 1))
    with pytest.raises(SpecError, match="overlap"):
        load(spec)


def test_unknown_placeholder_in_layout(tmp_path):
    spec = _tree(tmp_path, "layouts/mlf_layout.yaml", lambda s: s.replace("src/{model}.relay", "src/{modle}.relay"))
    with pytest.raises(SpecError) as err:
        load(spec)
    assert "unknown placeholder {modle}" in str(err.value) and err.value.file == "spec/layouts/mlf_layout.yaml"


def test_unknown_key_in_layout_entry(tmp_path):
    spec = _tree(tmp_path, "layouts/mlf_layout.yaml", lambda s: s.replace("required: true, until: v4,", "requried: true, until: v4,"))
    with pytest.raises(SpecError, match="unknown key 'requried'"):
        load(spec)


def test_duplicate_finding_code(tmp_path):
    spec = _tree(tmp_path, "findings/mlf_check.yaml", lambda s: s.rstrip("\n") + "\n" + textwrap.indent(
        '- {code: metadata.json, severity: error, doc: "again"}\n', "  "))
    with pytest.raises(SpecError, match="appears twice"):
        load(spec)


def test_timeline_must_be_in_order(tmp_path):
    spec = _tree(tmp_path, "timelines/mlf_revisions.yaml", lambda s: s.replace('date: "2021-05-07"', 'date: "2021-01-07"'))
    with pytest.raises(SpecError, match="date order"):
        load(spec)


def test_type_grammar():
    assert parse_type("map[int, str]").text() == "map[int, str]"
    assert parse_type("tuple['list_str', list[str]]").args[0].name == "list_str"
    assert parse_type("str|null").kind == "union"
    with pytest.raises(ValueError):
        parse_type("list[")


def test_projection_required_only_if_every_revision_wrote_it():
    model = load(ROOT / "spec")
    by_version = {p.version: p for p in project(model, "mlf")}
    fm5 = {f.name: f for f in by_version[5].records["full_model"].fields}
    assert fm5["external_dependencies"].required is False
    assert fm5["external_dependencies"].present_in == ["v5.crt", "v5.usmp"]
    assert "runtimes" not in fm5 and fm5["executors"].required
    fm7 = {f.name: f for f in by_version[7].records["full_model"].fields}
    assert "version" not in fm7
    ob7 = {f.name: f for f in by_version[7].records["operator_buffer"].fields}
    assert ob7["input_binding"].type.text() == "str|null" and ob7["input_binding"].required
    assert "operator_model" not in by_version[3].records


def test_a_rule_that_is_not_proven_cannot_warn(tmp_path):
    spec = _tree(tmp_path, "findings/mlf_check.yaml", lambda s: s.replace(
        "  - {code: memory.io-formula, severity: info,", "  - {code: memory.io-formula, severity: warning,", 1))
    with pytest.raises(SpecError, match="info at most") as err:
        load(spec)
    assert err.value.file == "spec/findings/mlf_check.yaml" and err.value.line is not None


def test_a_rule_states_its_basis(tmp_path):
    spec = _tree(tmp_path, "findings/mlf_check.yaml", lambda s: s.replace("     provable: true,\n", "", 1))
    with pytest.raises(SpecError, match="`provable` and its `basis`"):
        load(spec)


def test_tar_formats_name_the_written_one_and_umasks_fit(tmp_path):
    spec = _tree(tmp_path, "layouts/mlf_layout.yaml", lambda s: s.replace("  format: pax\n", "  format: ustar\n", 1))
    with pytest.raises(SpecError, match="is not one of the writer's formats"):
        load(spec)
    spec = _tree(tmp_path / "b", "layouts/mlf_layout.yaml",
                 lambda s: s.replace("modes: {root: 448, directory: 493, file: 420}", "modes: {root: 448, directory: 509, file: 420}"))
    with pytest.raises(SpecError, match="different umasks"):
        load(spec)


def test_records_uses_only_plain_specs_without_clashes(tmp_path):
    spec = _tree(tmp_path, "records/mlf_inspect_output.yaml", lambda s: s.replace("uses: [finding]", "uses: [mlf]"))
    with pytest.raises(SpecError, match="plain records specs"):
        load(spec)
    spec = _tree(tmp_path / "b", "records/mlf_inspect_output.yaml", lambda s: s.replace("uses: [finding]", "uses: [nothing]"))
    with pytest.raises(SpecError, match="unknown records spec"):
        load(spec)


@pytest.mark.parametrize(("rel", "old", "new", "message"), [
    ("records/canonical_params.yaml", "required: false, compare: [may_omit],\n         doc: \"The dtype dialect",
     "compare: [may_omit],\n         doc: \"The dtype dialect", "may omit is not required"),
    ("records/canonical_params.yaml", 'type: int, minimum: 0, doc: "DLDataType.code."',
     'type: int, minimum: 0, compare: [unordered], doc: "DLDataType.code."', "apply to lists"),
    ("records/canonical_archive.yaml", "uses: [canonical_params,", "uses: [params_dump,", "lenient specs"),
    ("records/conformance_report.yaml", "root: report_run|report_case", "root: report_run|report_nothing",
     "unknown record 'report_nothing'"),
    ("records/mlf.yaml", "{name: runtimes, type: \"list[str]\",", "{name: runtimes, type: \"list[str]\", compare: [unordered],",
     "lenient records spec without a timeline"),
])
def test_conformance_record_rules_are_checked(tmp_path, rel, old, new, message):
    spec = _tree(tmp_path, rel, lambda s: s.replace(old, new, 1))
    assert (spec / rel).read_text() != (ROOT / "spec" / rel).read_text()
    with pytest.raises(SpecError, match=message) as err:
        load(spec)
    assert err.value.file == f"spec/{rel}"
