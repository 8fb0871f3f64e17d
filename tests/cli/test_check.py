""".params, blob and graph JSON checks: findings with the spec's codes, the JSON report,
exit statuses, the universal `check` dispatch, dialect detection from the bytes (K3),
names that are not UTF-8 (K1), blob edge cases (K4), convert's refusal and --dialect."""

from __future__ import annotations

import json

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mlf_spec.generated.artifact_check_output_models import ArtifactCheck
from mlf_spec.generated.blob_check_findings import FINDINGS as BLOB_FINDINGS
from mlf_spec.generated.graph_check_findings import FINDINGS as GRAPH_FINDINGS
from mlf_spec.generated.params_check_findings import FINDINGS as PARAMS_FINDINGS
from mlf_spec.generated.params_dump_models import ParamsDump
from mlf_spec.generated.tvm_verdict_models import TvmVerdict

from mlf_spec import blob, cli, params
from mlf_spec import strategies as ms
from mlf_spec.errors import MlfError
from mlf_spec.graph import check as graph_check
from mlf_spec.params import check as pcheck
from mlf_spec.params import dtypes as dt
from tests.support import tvm_verdict_cases as tc


def run(argv, capsys):
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def f32(name="t", shape=(3,)):
    return tc._meaning(name, "0.27", 2, 32, 1, shape, bytes(i % 251 + 1 for i in range(4 * int(np.prod(shape)))))


def rec(m, **over):
    return tc._record(m, **over)


# ------------------------------------------------------------------------------ .params findings


def test_tvm_written_files_have_no_finding():
    for value in (np.ones((2, 3), "float32"), np.array([True, False]), np.arange(4, dtype="int64"),
                  np.ones(2, ml_dtypes.bfloat16), np.zeros((0, 4), "float32"), np.float32(3.5)):
        report = pcheck.check(params.dumps({"w": value}))
        assert report.findings == [] and report.conformant, value.dtype


@pytest.mark.parametrize(("data", "codes"), [
    (tc.write_params([rec(f32(), device_type=2)], ["t"]), ["tensor.device-type"]),
    (tc.write_params([rec(f32(), device_id=7, reserved=1)], ["t"], reserved=3, trailing=b"xy"),
     ["params.reserved", "params.trailing-bytes", "tensor.reserved", "tensor.device-id"]),
    (tc.write_params([rec(f32("d")), rec(f32("d"))], ["d", "d"]), ["params.duplicate-name"]),
    (tc.write_params([rec(f32("\udcff"))], ["\udcff"]), ["params.name-not-utf8"]),
    (tc.write_params([rec(f32())], ["t"], count=2), ["params.count"]),
    (tc.write_params([rec(f32("t", (64,)))], ["t"], cut=100), ["params.truncated"]),
    (tc.write_params([rec(f32(), data_byte_size=8, stored=f32().data[:8])], ["t"]), ["tensor.size"]),
    (tc.write_params([rec(tc._meaning("t", "0.27", 2, 32, 1, (-2, -3), bytes(24)), data_byte_size=24)], ["t"]),
     ["tensor.negative-extent", "tensor.negative-extent"]),
    (tc.write_params([rec(tc._meaning("t", "0.27", 0, 8, 1, (3, 0), b""))], ["t"]), ["tensor.zero-extent"]),
    (tc.write_params([rec(tc._meaning("t", "0.27", 2, 32, 4, (2,), bytes(8)))], ["t"]), ["tensor.vector"]),
    (tc.write_params([rec(tc._meaning("t", "0.27", 2, 32, 24, (2,), bytes(8)))], ["t"]),
     ["tensor.vector", "tensor.alignment"]),
    (tc.write_params([rec(tc._meaning("t", "0.27", 2, 32, 0, (2,), bytes(8)))], ["t"]), ["tensor.lanes-zero"]),
    (tc.write_params([rec(tc._meaning("t", "0.27", 3, 64, 1, (2,), bytes(16)))], ["t"]), ["tensor.handle"]),
    (tc.write_params([rec(tc._meaning("t", "0.27", 20, 8, 1, (2,), bytes(2)))], ["t"]), ["tensor.unknown-dtype"]),
    (tc.write_params([rec(tc._meaning("t", "0.27", 2, 0, 1, (2,), b""))], ["t"]), ["tensor.bits-zero"]),
])
def test_params_findings_have_the_spec_codes(data, codes):
    report = pcheck.check(data)
    assert [c for c in report.codes() if not c.startswith("params.dialect")] == codes
    assert all(c in PARAMS_FINDINGS for c in report.codes())
    assert report.conformant == all(PARAMS_FINDINGS[c]["severity"] != "error" for c in codes)
    for f in report.findings:
        assert f.offset is None or 0 <= f.offset <= len(data)
    ArtifactCheck.model_validate(report.to_dict())


def test_a_file_whose_structure_is_lost_is_unreadable():
    good = params.dumps({"w": np.ones(3, "float32")})
    for bad in (b"", good[:20], b"\0" + good[1:], good[:40] + b"\0" * 8 + good[48:]):
        with pytest.raises(MlfError):
            pcheck.check(bad)


@settings(max_examples=150, suppress_health_check=list(HealthCheck))
@given(st.one_of(ms.params_bytes(), ms.broken_params_bytes().map(lambda b: bytes(b.data))), st.data())
def test_params_check_is_total(data, draw):
    if draw.draw(st.booleans()) and data:
        i = draw.draw(st.integers(0, len(data) - 1))
        data = data[:i] + bytes([draw.draw(st.integers(0, 255))]) + data[i + 1:]
    try:
        report = pcheck.check(data, tvm=draw.draw(st.sampled_from(["0.7", "0.16", "0.21", "0.27"])))
    except MlfError as exc:
        assert exc.offset is None or 0 <= exc.offset <= len(data)
        return
    doc = report.to_dict()
    ArtifactCheck.model_validate(doc)
    json.dumps(doc, ensure_ascii=False).encode("utf-8")  # always valid UTF-8


# ------------------------------------------------------------------------------ dialects from the bytes


def test_bytes_decide_between_bool_and_float8():
    old = params.dumps({"f": np.array([1.0, 2.0], ml_dtypes.float8_e4m3fn)}, dialect="0.16")   # 38 40
    new = params.dumps({"f": np.array([True, False])})                                          # 01 00
    assert params.loads(old).dialect.id in ("v0.13", "v0.20") and not params.loads(old).choice.ambiguous
    assert params.loads(new).dialect.id == "v0.26" and not params.loads(new).choice.ambiguous
    assert params.loads(old)["f"].dtype == ml_dtypes.float8_e4m3fn and params.loads(new)["f"].dtype == np.bool_


def test_k3_packed_uint1_of_tvm_026_on_reads_as_uint1():
    # what 0.26+ write for uint1 [1,0,1,1,0,0,0,1,1,1]: packed bits, then bytes past the allocation
    data = tc.write_params([rec(tc._meaning("bits", "0.27", 1, 1, 1, (10,), bytes.fromhex("8d0300000000000000 00")))],
                           ["bits"])
    p = params.open(data)
    assert p.dialect.id == "v0.26" and p.index[0].dtype.name == "uint1" and not p.choice.ambiguous
    assert p.choice.by_data
    # all-zero data cannot tell a 0.27 uint1 from an old bool: ambiguous, and says which readings
    zeros = tc.write_params([rec(tc._meaning("bits", "0.27", 1, 1, 1, (10,), bytes(10)))], ["bits"])
    choice = params.open(zeros).choice
    assert choice.ambiguous and {"v0.21", "v0.26"} <= {c.id for c in choice.candidates}


def test_one_per_byte_int4_and_packed_int4_are_told_apart():
    per_byte = tc.write_params([rec(tc._meaning("q", "0.20", 0, 4, 1, (4,), bytes([1, 2, 15, 7])))], ["q"])
    packed = tc.write_params([rec(tc._meaning("q", "0.27", 0, 4, 1, (4,), bytes([0x12, 0xF7, 0, 0])))], ["q"])
    assert dt.layout(params.open(per_byte).dialect, 0, 4) == "bytes"
    assert dt.layout(params.open(packed).dialect, 0, 4) == "packed" and not params.open(packed).choice.ambiguous


def test_dump_json_says_how_the_dialect_was_chosen(tmp_path, capsys):
    path = tmp_path / "z.params"
    params.save({"f": np.zeros(2, ml_dtypes.float8_e4m3fn)}, path, dialect="0.16")
    code, out, _ = run(["params", "dump", "--json", str(path)], capsys)
    doc = json.loads(out)
    ParamsDump.model_validate(doc)
    choice = doc["dialect_choice"]
    assert code == 0 and choice["ambiguous"] and choice["detected"] and choice["chosen"] == doc["dialect"]
    assert "v0.13" in choice["candidates"] and "v0.26" in choice["candidates"]
    code, out, _ = run(["params", "dump", "--json", "--dialect", "0.16", str(path)], capsys)
    assert json.loads(out)["dialect_choice"]["detected"] is False and json.loads(out)["dialect"] == "v0.13"


def test_convert_refuses_an_ambiguous_file_without_a_dialect(tmp_path, capsys):
    path = tmp_path / "z.params"
    params.save({"f": np.zeros(2, ml_dtypes.float8_e4m3fn)}, path, dialect="0.16")
    code, _, err = run(["params", "convert", str(path), str(tmp_path / "o.npz")], capsys)
    assert code == 1 and "refused" in err and "--dialect" in err and "v0.13" in err and "bool" in err
    assert not (tmp_path / "o.npz").exists()
    code, _, _ = run(["params", "convert", "--dialect", "0.16", str(path), str(tmp_path / "o.npz")], capsys)
    assert code == 0 and np.load(tmp_path / "o.npz", allow_pickle=False)


@pytest.mark.parametrize("command", [["params", "dump"], ["params", "check"], ["params", "convert", "x.npz"]])
def test_an_unknown_dialect_is_an_error_listing_the_valid_ones(command, tmp_path, capsys):
    path = tmp_path / "a.params"
    params.save({"w": np.ones(2, "float32")}, path)
    argv = command[:2] + [str(path)] + command[2:] + ["--dialect", "9.9"]
    with pytest.raises(SystemExit) as info:
        cli.main(argv)
    err = capsys.readouterr().err
    assert info.value.code == 2 and "9.9" in err and "v0.13" in err and "0.27" in err


def test_k1_names_that_are_not_utf8_give_valid_json(tmp_path, capsys):
    path = tmp_path / "n.params"
    path.write_bytes(tc.write_params([rec(f32("\udcff\udcfe"))], ["\udcff\udcfe"]))
    for command in (["params", "dump"], ["params", "check"], ["check"]):
        code, out, _ = run([*command, "--json", str(path)], capsys)
        out.encode("utf-8")
        doc = json.loads(out)
        if command == ["params", "dump"]:
            t = doc["tensors"][0]
            assert t["name"] == "\ufffd\ufffd" and t["name_hex"] == "fffe"
        else:
            assert "params.name-not-utf8" in [f["code"] for f in doc["findings"]]


# ------------------------------------------------------------------------------ verdicts


def test_verdict_json_and_reasons(tmp_path, capsys):
    path = tmp_path / "old.params"
    params.save({"f": np.array([1.0, 2.0], ml_dtypes.float8_e4m3fn)}, path, dialect="0.16")
    code, out, _ = run(["params", "check", str(path), "--tvm", "0.27", "--json"], capsys)
    doc = json.loads(out)
    TvmVerdict.model_validate(doc["tvm"])
    assert code == 0 and doc["tvm"]["verdict"] == "misreads" and doc["tvm"]["from_source"] == "detected"
    assert [r["rule"] for r in doc["tvm"]["reasons"]] == ["dtype.float8-read-as-bool"]
    code, out, _ = run(["params", "check", str(path), "--tvm", "0.16", "--json"], capsys)
    assert json.loads(out)["tvm"]["verdict"] == "loads"
    code, out, _ = run(["params", "check", str(path), "--tvm", "0.20", "--from", "0.27", "--json"], capsys)
    assert json.loads(out)["tvm"]["from"] == "0.27" and json.loads(out)["tvm"]["verdict"] == "misreads"
    with pytest.raises(SystemExit) as info:  # one argparse validation for every version option (issue 18)
        cli.main(["params", "check", str(path), "--tvm", "9.9"])
    assert info.value.code == 2 and "not a version the spec describes" in capsys.readouterr().err


def test_a_sub_byte_tensor_over_24_bytes_crashes_new_readers():
    data = tc.write_params([rec(tc._meaning("q", "0.20", 0, 4, 1, (100,), bytes(100)))], ["q"])
    assert pcheck.check(data, tvm="0.20").tvm.verdict == "loads"
    assert pcheck.check(data, tvm="0.27").tvm.verdict == "crashes"
    assert pcheck.check(data, tvm="0.6").tvm.verdict == "rejects"


# ------------------------------------------------------------------------------ blobs and graphs


def ffi_blob(row_ptr, child, kinds_payloads):
    return tc._crafted(row_ptr, child, kinds_payloads)


@pytest.mark.parametrize(("data", "codes"), [
    (ffi_blob([0, 1, 2], [1, 0], [("_lib", None), ("x", b"1")]), ["tree.cycle", "module.unknown-kind"]),
    (ffi_blob([0, 1, 1], [1], [("_lib", None), ("_lib", None)]), ["tree.several-lib"]),
    (ffi_blob([0, 2, 1], [1, 1], [("_lib", None), ("x", b"1")]),
     ["tree.order", "tree.unused-children", "module.unknown-kind"]),
    (ffi_blob([0, 0, 0], [], [("_lib", None), ("x", b"1")]), ["module.unknown-kind", "tree.unreachable"]),
    (ffi_blob([0, 1, 1], [1], [("_lib", None), ("x", b"")]), ["module.unknown-kind", "module.empty-payload"]),
])
def test_blob_findings_have_the_spec_codes(data, codes, tmp_path, capsys):
    path = tmp_path / "b.bin"
    path.write_bytes(data)
    code, out, _ = run(["blob", "check", str(path), "--json", "--tvm", "0.27"], capsys)
    doc = json.loads(out)
    ArtifactCheck.model_validate(doc)
    assert [f["code"] for f in doc["findings"] if f["code"] != "blob.raw-layout"] == codes
    assert all(c in BLOB_FINDINGS for c in codes)
    assert code == (1 if any(BLOB_FINDINGS[c]["severity"] == "error" for c in codes) else 0)


def test_k4_bytes_after_a_raw_blob_are_a_finding_not_an_error(tmp_path, capsys):
    data = ffi_blob([0, 1, 1], [1], [("_lib", None), ("x", b"1")])
    (tmp_path / "b.bin").write_bytes(data + b"TRAILING")
    code, out, _ = run(["blob", "check", str(tmp_path / "b.bin"), "--json"], capsys)
    doc = json.loads(out)
    assert code == 0 and "blob.after-end" in [f["code"] for f in doc["findings"]]
    assert doc["blobs"][0]["size"] == len(data)


def test_blob_verdicts_follow_the_symbol():
    root = blob.Module.lib(blob.Module("const_loader", blob.new_payload(
        "const_loader", format="legacy", era="0.20", variables=[], arrays=[], symbols=[], const_vars=[])))
    legacy = blob.build(root, format="legacy", era="0.20")
    from mlf_spec.blob import check as bcheck

    src = blob.write_c_source  # noqa: F841 - raw blobs are enough here
    assert bcheck.check(legacy, tvm="0.20").tvm.verdict == "loads"
    v = bcheck.check(legacy, tvm="0.27").tvm
    assert v.verdict == "misreads" and "blob.legacy-symbol-ignored" in [r.rule for r in v.reasons]


def test_graph_check(tmp_path, capsys):
    good = {"nodes": [{"op": "null", "name": "x", "inputs": []}], "arg_nodes": [0], "heads": [[0, 0, 0]],
            "attrs": {"dltype": ["list_str", ["float32"]], "storage_id": ["list_int", [0]],
                      "shape": ["list_shape", [[1, 2]]]}, "node_row_ptr": [0, 1]}
    path = tmp_path / "graph.json"
    path.write_text(json.dumps(good))
    assert graph_check.check(path).findings == []
    bad = dict(good, attrs=dict(good["attrs"], dltype=["list_str", ["floaty32"]]))
    path.write_text(json.dumps(bad))
    assert graph_check.check(path).codes() == ["graph.dltype"]
    path.write_text("{not json")
    assert graph_check.check(path).codes() == ["graph.json"]
    path.write_text(json.dumps(dict(good, arg_nodes=[0, 0])))
    code, out, _ = run(["check", "--json", str(path)], capsys)  # recognised as graph JSON by its keys
    doc = json.loads(out)
    assert code == 1 and doc["kind"] == "graph-json" and [f["code"] for f in doc["findings"]] == ["graph.structure"]
    assert all(c in GRAPH_FINDINGS for c in ("graph.json", "graph.dltype"))


def test_check_on_a_directory_checks_every_kind(tmp_path, capsys):
    params.save({"w": np.ones(3, "float32")}, tmp_path / "a.params")
    (tmp_path / "b.bin").write_bytes(ffi_blob([0, 1, 1], [1], [("_lib", None), ("_lib", None)]))
    (tmp_path / "bad.params").write_bytes(tc.write_params([rec(f32(), device_type=2)], ["t"]))
    code, out, err = run(["check", "--json", "--tvm", "0.27", str(tmp_path)], capsys)
    docs = {d["path"].rsplit("/", 1)[-1]: d for d in map(json.loads, out.splitlines())}
    assert set(docs) == {"a.params", "b.bin", "bad.params"}
    assert docs["a.params"]["conformant"] and docs["a.params"]["tvm"]["verdict"] == "loads"
    assert docs["bad.params"]["tvm"]["verdict"] == "rejects" and not docs["bad.params"]["conformant"]
    assert docs["b.bin"]["kind"] == "blob" and code == 1 and "3 inputs" in err
