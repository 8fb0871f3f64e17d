"""A writer differential for Model Library Format, and round trips with a real pre-0.21 reader:
hhb-tvm 3.2.3 (T-Head's TVM 0.16 fork, in the peer venv mlf_spec.peers makes) exports MLF v7
archives of small Relay models (graph and AOT executors, ``c`` and ``llvm`` targets,
link-params off and on; tests/support/hhb_mlf_export.py), once per test session. On every one of them
``check`` finds nothing, ``inspect`` reads every module, ``archive.build`` from its metadata and
files gives TVM's bytes, and a downgrade to every earlier version then an upgrade back gives
the export again, except for what the migrations declare lost. ``.params`` files TVM 0.16
writes are read and rewritten byte-exact; files mlf-spec writes in dialect v0.13 load in 0.16
with the values meant."""

from __future__ import annotations

import base64
import json
import subprocess
import tarfile
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from mlf_spec import archive, params, peers
from mlf_spec.cli import main as cli
from mlf_spec.mlf import migrate

pytestmark = pytest.mark.tvm

EXPORT = Path(__file__).resolve().parents[2] / "support" / "hhb_mlf_export.py"


@pytest.fixture(scope="session")
def hhb_python() -> str:
    return str(peers.ensure("hhb"))


@pytest.fixture(scope="session")
def exported(hhb_python, tmp_path_factory) -> list[Path]:
    out = tmp_path_factory.mktemp("hhb-mlf")
    r = subprocess.run([hhb_python, str(EXPORT), str(out)], capture_output=True, text=True, timeout=1200)
    lines = r.stdout.splitlines()
    assert r.returncode == 0 and lines and all(x.startswith("ok ") for x in lines), (lines, r.stderr[-2000:])
    paths = sorted(out.glob("*.tar"))
    assert len(paths) == 16
    return paths


def _names(paths: list[Path]) -> set[str]:
    return {p.stem for p in paths}


def test_the_exports_cover_both_executors_both_targets_and_link_params(exported):
    names = _names(exported)
    for want in ("dense-graph-c-lp0", "dense-graph-llvm-lp1", "conv-aot-c-lp0", "conv-aot-c-lp1", "two_out-graph-c-lp1"):
        assert want in names
    with archive.open(next(p for p in exported if p.stem == "conv-aot-c-lp1")) as a:
        assert a.version == 7 and "runtime/CMakeLists.txt" in a and "templates/platform.c.template" in a


def test_check_finds_no_error_or_warning_on_any_export(exported, capsys):
    status = cli(["check", "--json", *map(str, exported)])
    reports = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert status == 0 and len(reports) == len(exported)
    for r in reports:
        assert r["conformant"] and r["version"] == 7 and r["style"] == "full-model", r
        assert not [f for f in r["findings"] if f["severity"] in ("error", "warning")], r


def test_inspect_reads_every_export_fully(exported, capsys):
    for path in exported:
        assert cli(["inspect", "--json", str(path)]) == 0
        doc = json.loads(capsys.readouterr().out)
        assert doc["deviations"] == [] and doc["unknown_keys"] == []
        (module,) = doc["modules"]
        assert module["name"] == path.stem.split("-")[0]
        executor = path.stem.split("-")[1]
        assert module["executors"] == [executor]
        if executor == "graph":
            assert module["graph"]["inputs"] and module["graph"]["outputs"]
        if path.stem.endswith("lp0") and executor == "graph" and not path.stem.startswith("two_out"):
            assert module["params"], path.stem  # graph, link-params off: the weights are in parameters/
        with archive.open(path) as a:
            m = a.modules[module["name"]]
            assert m.metadata.memory.functions.main[0].inputs
            assert m.relay_text and (m.sources or m.objects)
            if m.params is not None:
                assert all(info.nbytes >= 0 for info in m.params.index)


def _members(data: bytes) -> list[tuple]:
    import io

    with tarfile.open(fileobj=io.BytesIO(data)) as t:
        return [(m.name, m.type, m.mode, m.uid, m.gid, m.uname, m.gname, m.size, m.mtime) for m in t.getmembers()]


def test_archive_build_from_the_metadata_gives_tvms_bytes(exported):
    for path in exported:
        raw = path.read_bytes()
        with archive.open(path) as a:
            files = {m.path: m.read() for m in a if not m.is_dir and m.path != "metadata.json"}
            built = archive.build(a.metadata, files, mtime={m.path: m.mtime for m in a},
                                  source_owner=(0, 0, "root", "root")).to_bytes()
        assert _members(built) == _members(raw), path.stem
        assert built == raw, path.stem


def _differences(a: dict, b: dict, path: tuple = ()) -> list[tuple]:
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(set(a) | set(b)) for d in _differences(a.get(k), b.get(k), path + (k,))]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in _differences(x, y, path + (i,))]
    return [] if a == b else [path]


def test_downgrade_then_upgrade_gives_the_export_back_but_for_declared_losses(exported):
    for path in exported:
        with archive.open(path) as a:
            original = {m.path: m for m in a}
            doc = json.loads(a.read("metadata.json"))
            for to in range(6, 0, -1):
                down = migrate.downgrade(a, to, accept_loss=migrate.loss_names())
                up = migrate.upgrade(down.archive, 7, accept_loss=migrate.loss_names())
                losses = down.losses + up.losses
                lost_files = {x.where.removeprefix("./") for x in losses if x.part == "files"}
                lost_keys = [("modules", x.module, *x.path) for x in losses if x.part == "metadata"]
                back = {m.path: m for m in up.archive}
                for p, m in original.items():
                    if p not in back:
                        below = [q for q, n in original.items() if q.startswith(p + "/") and not n.is_dir]
                        assert p in lost_files or (m.is_dir and below and set(below) <= lost_files), (path.stem, to, p)
                    elif not m.is_dir and p != "metadata.json":
                        assert back[p].read() == m.read(), (path.stem, to, p)
                assert set(back) <= set(original), (path.stem, to, set(back) - set(original))
                for diff in _differences(doc, json.loads(up.archive.read("metadata.json"))):
                    assert any(diff[:len(k)] == k or k[:len(diff)] == diff for k in lost_keys), (path.stem, to, diff)


def test_params_written_by_tvm_016_are_read_and_rewritten_byte_exact(exported, hhb_python):
    seen = 0
    for path in exported:
        with archive.open(path) as a:
            for m in a:
                if m.path.endswith(".params"):
                    data = m.read()
                    assert params.dumps(params.loads(data)) == data
                    seen += 1
    assert seen >= 8
    # every dtype 0.16 spells, written by its save_param_dict, then read and rewritten here
    tensors = [{"name": f"t{code}_{bits}", "code": code, "bits": bits, "lanes": 1, "shape": [2, 3],
                "data": base64.b64encode(bytes(range(1, 7 * -(-bits // 8)))[: 6 * -(-bits // 8)]).decode()}
               for code, bits in ((0, 8), (0, 32), (1, 8), (1, 1), (2, 16), (2, 32), (2, 64), (4, 16), (6, 8), (7, 8))]
    with peers.Peer(hhb_python) as peer:
        data = base64.b64decode(peer.request("params_save", tensors=tensors)["output"])
    p = params.loads(data)
    assert params.dumps(p) == data
    assert p.choice.dialect.id in ("v0.13", "v0.20")  # float8 at codes 6/7: a pre-0.21 dialect
    assert p["t6_8"].dtype == ml_dtypes.float8_e4m3fn and p["t7_8"].dtype == ml_dtypes.float8_e5m2


def test_params_written_in_dialect_v013_load_in_016_as_meant(hhb_python):
    values = {"f8": np.array([1.0, 2.0, 0.5, -3.0], ml_dtypes.float8_e4m3fn),
              "e5": np.array([1.0, 2.0, 0.5, -3.0], ml_dtypes.float8_e5m2),
              "b": np.array([True, False, True]), "bf": np.array([1.5, -2.0], ml_dtypes.bfloat16),
              "w": np.arange(6, dtype="float32").reshape(2, 3), "i": np.array([-1, 7], "int64")}
    data = params.dumps(values, dialect="0.16")
    with peers.Peer(hhb_python) as peer:
        loaded = peer.request("params_load", data=base64.b64encode(data).decode())["tensors"]
    got = {t["name"]: t for t in loaded}
    spelled = {"f8": "e4m3_float8", "e5": "e5m2_float8", "b": "bool", "bf": "bfloat16", "w": "float32", "i": "int64"}
    for name, array in values.items():
        record = params.loads(base64.b64decode(got[name]["record"]), dialect="0.16")["x"]
        assert got[name]["dtype"] == spelled[name]
        assert np.asarray(record).tobytes() == array.tobytes() and record.shape == array.shape, name
