"""The mlf-spec command line: output forms, exit statuses, one-line errors."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mlf_spec import params
from mlf_spec.cli import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def example(tmp_path):
    path = tmp_path / "ex.params"
    subprocess.run([sys.executable, str(ROOT / "examples" / "write_example_params.py"), str(path)], check=True)
    return path


def test_dump_json_matches_the_documented_form(example, capsys):
    assert main(["params", "dump", str(example), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc) == {"path", "format", "dialect", "dialect_choice", "trailing_bytes", "tensors"}
    assert doc["path"] == str(example) and doc["trailing_bytes"] == 0
    assert doc["format"] == "tvm-params" and doc["dialect"] == "v0.26" == doc["dialect_choice"]["chosen"]
    data = example.read_bytes()
    for t in doc["tensors"]:
        assert set(t) == {"name", "dtype", "shape", "offset", "nbytes", "sha256"}
        assert hashlib.sha256(data[t["offset"]:t["offset"] + t["nbytes"]]).hexdigest() == t["sha256"]
    by_name = {t["name"]: t for t in doc["tensors"]}
    assert by_name["fc_weight_bf16"]["dtype"] == "bfloat16"
    assert by_name["fc_scale_fp8"]["dtype"] == "float8_e4m3fn"
    assert by_name["mask"]["dtype"] == "bool"
    assert by_name["packed_int4"]["dtype"] == "int4"
    assert by_name["conv1_weight"]["shape"] == [8, 3, 3, 3]


def test_dump_json_validates_against_the_generated_schema(example, capsys):
    from mlf_spec.generated.params_dump_models import ParamsDump

    main(["params", "dump", str(example), "--json"])
    ParamsDump.model_validate_json(capsys.readouterr().out)
    schema = json.loads((ROOT / "generated" / "schemas" / "params_dump.schema.json").read_text())
    assert set(schema["required"]) == {"path", "format", "dialect", "dialect_choice", "trailing_bytes", "tensors"}


def test_dump_dialect_changes_names(tmp_path, capsys):
    path = tmp_path / "old.params"
    import ml_dtypes

    params.save({"f": np.ones(2, ml_dtypes.float8_e4m3fn)}, path, dialect="0.16")
    main(["params", "dump", str(path), "--json", "--dialect", "0.16"])
    assert json.loads(capsys.readouterr().out)["tensors"][0]["dtype"] == "e4m3_float8"
    main(["params", "dump", str(path), "--json", "--dialect", "0.27"])
    assert json.loads(capsys.readouterr().out)["tensors"][0]["dtype"] == "bool"
    main(["params", "dump", str(path)])
    assert "the stored bytes rule out v0.21, v0.23, v0.26" in capsys.readouterr().out
    params.save({"f": np.zeros(2, ml_dtypes.float8_e4m3fn)}, path, dialect="0.16")
    main(["params", "dump", str(path)])
    assert "ambiguous" in capsys.readouterr().out


def test_bad_input_is_one_line_and_status_2(example, tmp_path):
    bad = tmp_path / "bad.params"
    bad.write_bytes(example.read_bytes()[:-3])
    r = subprocess.run([sys.executable, "-m", "mlf_spec.cli", "params", "dump", str(bad)], capture_output=True, text=True)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1
    assert str(bad) in lines[0] and "offset" in lines[0] and "arrays" in lines[0]
    assert r.stdout == ""


def test_missing_file_is_status_2(tmp_path, capsys):
    assert main(["params", "dump", str(tmp_path / "nope.params")]) == 2
    assert "cannot open" in capsys.readouterr().err


@pytest.mark.parametrize("ext", [".npz", ".safetensors"])
def test_convert_round_trip_is_lossless(example, tmp_path, ext):
    mid = tmp_path / f"mid{ext}"
    back = tmp_path / "back.params"
    assert main(["params", "convert", str(example), str(mid)]) == 0
    assert main(["params", "convert", str(mid), str(back)]) == 0
    assert back.read_bytes() == example.read_bytes()


def test_convert_refuses_to_overwrite(example, tmp_path, capsys):
    out = tmp_path / "o.npz"
    out.write_bytes(b"keep")
    assert main(["params", "convert", str(example), str(out)]) == 1  # a refusal, as for upgrade and extract
    assert out.read_bytes() == b"keep"
    assert main(["params", "convert", str(example), str(out), "--force"]) == 0
    assert out.read_bytes() != b"keep"


def test_version_and_help():
    r = subprocess.run([sys.executable, "-m", "mlf_spec.cli", "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "params" in r.stdout


def test_errors_with_multiline_causes_are_printed_on_one_line(tmp_path):
    bad = tmp_path / "broken.tar"
    bad.write_bytes(b"\x1f\x8b" + b"\x00" * 600)  # looks gzip-compressed, is not: tarfile lists every method it tried
    for cmd in (["blob", "dump", str(bad)], ["inspect", str(bad)], ["params", "dump", str(bad)]):
        r = subprocess.run([sys.executable, "-m", "mlf_spec.cli", *cmd], capture_output=True, text=True)
        assert r.returncode == 2, (cmd, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1, (cmd, r.stderr)
        assert r.stderr.startswith("mlf-spec: error: ") and str(bad) in r.stderr


def test_cli_version_choices_are_the_spec_versions():
    from mlf_spec.cli.archive import VERSIONS
    from mlf_spec.mlf import metadata

    assert tuple(VERSIONS) == tuple(metadata.VERSIONS)
