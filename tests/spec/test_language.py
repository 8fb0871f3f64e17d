"""The spec language: mistakes are reported with file, line and field; the generator is
deterministic and its check mode catches stale output."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

from specgen.expr import Expr, ExprError  # noqa: E402
from specgen.load import load  # noqa: E402
from specgen.yamlload import SpecError  # noqa: E402


def _spec_tree(tmp_path: Path, extra_name: str, text: str) -> Path:
    spec = tmp_path / "spec"
    shutil.copytree(ROOT / "spec", spec)
    (spec / "binary" / extra_name).write_text(textwrap.dedent(text))
    return spec


def test_unknown_key_reports_file_line_and_field(tmp_path):
    spec = _spec_tree(tmp_path, "bad.yaml", """\
        spec: binary
        name: bad
        title: t
        doc: d
        structs:
          - name: s
            doc: d
            fields:
              - {name: a, type: u8, doc: x}
              - {name: b, type: u8, doc: x, lenght: 3}
        """)
    with pytest.raises(SpecError) as err:
        load(spec)
    assert err.value.file == "spec/binary/bad.yaml"
    assert err.value.line == 10
    assert "structs[0].fields[1].lenght" in str(err.value)
    assert "unknown key" in str(err.value)


def test_reference_to_later_field_is_an_error(tmp_path):
    spec = _spec_tree(tmp_path, "bad.yaml", """\
        spec: binary
        name: bad
        title: t
        doc: d
        structs:
          - name: s
            doc: d
            fields:
              - {name: data, type: bytes, size: n, doc: x}
              - {name: n, type: u32, doc: x}
        """)
    with pytest.raises(SpecError, match="'n' is not an earlier field of s") as err:
        load(spec)
    assert err.value.line == 9


def test_unknown_type_and_missing_doc(tmp_path):
    spec = _spec_tree(tmp_path, "bad.yaml", """\
        spec: binary
        name: bad
        title: t
        doc: d
        structs:
          - name: s
            doc: d
            fields:
              - {name: a, type: nosuchtype, doc: x}
        """)
    with pytest.raises(SpecError, match="unknown type 'nosuchtype'"):
        load(spec)
    spec2 = _spec_tree(tmp_path / "two", "bad.yaml", """\
        spec: binary
        name: bad
        title: t
        doc: d
        structs:
          - name: s
            doc: d
            fields:
              - {name: a, type: u8}
        """)
    with pytest.raises(SpecError, match="required key 'doc' is missing"):
        load(spec2)


def test_since_must_name_a_listed_version(tmp_path):
    spec = _spec_tree(tmp_path, "bad.yaml", """\
        spec: binary
        name: bad
        title: t
        doc: d
        structs:
          - name: s
            doc: d
            fields:
              - {name: a, type: u8, doc: x, since: "0.18"}
        """)
    with pytest.raises(SpecError, match="version 0.18 is not listed"):
        load(spec)


def test_duplicate_yaml_key_is_an_error(tmp_path):
    spec = _spec_tree(tmp_path, "bad.yaml", "spec: binary\nname: a\nname: b\n")
    with pytest.raises(SpecError, match="duplicate key 'name'"):
        load(spec)


@pytest.mark.parametrize("source", ["__import__('os')", "a.b()", "lambda: 1", "x[i]", "x[0:2]", "1.5 + n"])
def test_expression_language_rejects_python_beyond_the_subset(source):
    with pytest.raises(ExprError):
        Expr(source)


def test_expression_bounds():
    assert Expr("0 <= ndim <= 64").int_bounds("ndim") == (0, 64)
    assert Expr("each >= 0").int_bounds("each") == (0, None)
    assert Expr("device.device_type == 1").int_bounds("device.device_type") == (1, 1)
    assert Expr("n < 10 and n > -3").int_bounds("n") == (-2, 9)


def test_generated_is_up_to_date():
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "generate.py"), "--check"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_check_mode_detects_stale_output(tmp_path):
    work = tmp_path / "repo"
    for part in ("spec", "tools", "generated", "mlf_spec"):
        shutil.copytree(ROOT / part, work / part, ignore=shutil.ignore_patterns("__pycache__"))
    target = work / "generated" / "params_fast.py"
    target.write_text(target.read_text() + "\n# hand edit\n")
    result = subprocess.run([sys.executable, str(work / "tools" / "generate.py"), "--check"],
                            capture_output=True, text=True, cwd=work)
    assert result.returncode == 1
    assert "stale: generated/params_fast.py" in result.stdout
    # regenerating restores it, byte for byte, and is deterministic
    subprocess.run([sys.executable, str(work / "tools" / "generate.py")], check=True, capture_output=True, cwd=work)
    assert target.read_text() == (ROOT / "generated" / "params_fast.py").read_text()


def test_construct_grammar_parses_the_doc_example():
    from mlf_spec.generated import params_construct, params_ir

    from mlf_spec._internal.spec_engine import build

    ex = params_ir.EXAMPLES[0]
    data = build(params_ir.STRUCTS, "params_file", ex["value"])
    parsed = params_construct.params_file.parse(data)
    assert parsed.names == ["w", "b"]
    assert parsed.arrays[0].shape == [2, 3]
    assert params_construct.params_file.build(parsed) == data


def _break_verdicts(tmp_path: Path, change) -> Path:
    import yaml

    spec = tmp_path / "spec"
    shutil.copytree(ROOT / "spec", spec)
    path = spec / "verdicts" / "mlf_read_rules.yaml"
    doc = yaml.safe_load(path.read_text())
    change(doc)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return spec


def _set(**kw):
    return lambda doc: doc["rules"][0].update(kw)


@pytest.mark.parametrize("change, message", [
    (_set(when="1 == 1"), "either `when`"),
    (_set(requires="no_such_test"), "is not a test of subject 'archive'"),
    (_set(argument=None), "takes an argument"),
    (_set(readers=["tvmc", "nobody"]), "unknown reader 'nobody'"),
    (lambda doc: doc["rules"][0].pop("readers"), "say which of"),
    (lambda doc: doc["without_reader"][0].update(reason="TVM {reader}"), "only version, first, last"),
    (lambda doc: doc["readers"][0].update(since="0.10"), "version 0.10 is not listed"),
    (lambda doc: doc["rules"][0].update(verdict="crashes"), "unknown verdict 'crashes'"),
])
def test_verdict_rules_with_readers_and_tests_are_checked(tmp_path, change, message):
    with pytest.raises(SpecError, match=message) as err:
        load(_break_verdicts(tmp_path, change))
    assert err.value.file == "spec/verdicts/mlf_read_rules.yaml"
