"""hhb-tvm 3.2.3 (T-Head's TVM 0.16 fork) under test: its .params reader and writer against a
stratified sample of the vector suite (tools/compat_pages.py, ``sample=True``) and a generated
run bounded by its count, through the peer venv that the run itself makes on first use
(mlf_spec/peers); every divergence is a listed known failure and every case run has the outcome
the committed results (docs/conformance/compat/hhb-tvm.md, results.json) give it. A peer that
cannot be set up fails the run with one line."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest

from mlf_spec.cli import main as cli
from mlf_spec.peers import venvs

pytestmark = pytest.mark.tvm

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tools"))

import compat_pages  # noqa: E402

#: the cases the test below names (run whether or not the sample draws them)
KEEP = (
    "params.dtype.v0.13.e4m3_float8.6-8", "params.dtype.v0.21.float32.2-32", "params.dtype.v0.23.bool.6-8",
    "params.encode.w-and-b", "params.encode.dtype.int1.0-1", "tensor-cache.v1.valid.sharded",
    "tensor-cache.v1.valid.empty-encoded", "tensor-cache.valid.base", "blob.legacy.0.14.tree.chain",
    "blob.legacy.bound.legacy_entry.kind.length.body.entries.0.kind.n.0xffffffffffffffff", "blob.ffi.kind.c",
    "graph-json.valid.basic", "graph-json.broken.unknown_key.graph", "graph-json.valid.input-attrs",
    "params.valid.many-tensors", "params.valid.zero-size-3x0", "params.dtype.v0.13.int1.0-1",
    "tensor-cache.v1.broken.metadata-missing", "tensor-cache.v1.warning.duplicate-name",
    "blob.legacy.0.14.graph_executor_factory", "blob.legacy.0.6.c_source_payload",
    "blob.legacy.kind.static_library", "blob.legacy.0.14.tree.lib-only",
)


def test_hhb_tvm_passes_or_is_listed_on_a_sample_of_the_suite_and_generated_cases(tmp_path):
    status, records, page = compat_pages.run("hhb-tvm", tmp_path, sample=True, keep=KEEP)
    cases = [r for r in records if r["type"] == "case"]
    by_id = {r["id"]: r for r in cases}
    assert status == 0, [r for r in cases if r["outcome"] in ("fail", "error", "xpass")]
    assert records[0]["testee_info"]["version"] == "0.16.dev0"
    assert sum(r["outcome"] == "pass" for r in cases) > 150
    # the pre-0.21 numbering is the one in scope: float8 at codes 6/7, bool at (1, 1, 1)
    assert by_id["params.dtype.v0.13.e4m3_float8.6-8"]["outcome"] == "pass"
    assert by_id["params.dtype.v0.21.float32.2-32"]["outcome"] == "pass"
    assert by_id["params.dtype.v0.23.bool.6-8"]["outcome"] == "skip"  # 0.23's bool is 0.16's float8 code
    assert by_id["params.encode.w-and-b"]["outcome"] == "pass"
    assert by_id["params.encode.dtype.int1.0-1"]["outcome"] == "pass"  # one byte per element in 0.16's memory
    # the tensor cache through load_ndarray_cache (folder-shaped cases of index version 1)
    assert by_id["tensor-cache.v1.valid.sharded"]["outcome"] == "pass"
    assert by_id["tensor-cache.v1.valid.empty-encoded"]["outcome"] == "pass"
    assert by_id["tensor-cache.valid.base"]["outcome"] == "skip"  # 0.16 opens ndarray-cache.json only
    for known in ("params.valid.many-tensors", "params.valid.zero-size-3x0", "params.dtype.v0.13.int1.0-1",
                  "tensor-cache.v1.broken.metadata-missing", "tensor-cache.v1.warning.duplicate-name"):
        assert by_id[known]["outcome"] == "xfail", by_id[known]
    # legacy blobs through load_module: payload extents and the tree as 0.16's loaders built them
    for read in ("blob.legacy.0.14.graph_executor_factory", "blob.legacy.0.6.c_source_payload",
                 "blob.legacy.kind.static_library", "blob.legacy.0.14.tree.lib-only"):
        assert by_id[read]["outcome"] == "pass", by_id[read]
    assert by_id["blob.legacy.0.14.tree.chain"]["outcome"] == "skip"  # cuda: no loader in a CPU build
    assert "payload grammar of cuda" in by_id["blob.legacy.0.14.tree.chain"]["message"]
    # the boundary vectors from a base of loadable kinds are judged by 0.16's loaders, not skipped
    assert by_id["blob.legacy.loadable.whole"]["outcome"] == "pass"
    loadable = [r for i, r in by_id.items() if i.startswith("blob.legacy.loadable.")]
    # of the sample: its known failures all run, so most loadable cases in it are listed ones (whole suite:
    # 139 of 190 pass, on the page); each case the sample ran agrees with the page (sample_contradicts below)
    assert len(loadable) >= 15 and sum(r["outcome"] == "pass" for r in loadable) >= 2, Counter(r["outcome"] for r in loadable)
    assert by_id["blob.legacy.bound.legacy_entry.kind.length.body.entries.0.kind.n.0xffffffffffffffff"]["outcome"] == \
    "pass"
    assert by_id["blob.ffi.kind.c"]["outcome"] == "skip"  # 0.16 does not look the tvm-ffi symbol up
    assert sum(r["outcome"] == "pass" for r in cases if r["format"] == "blob") >= 25  # of the sample (whole suite: 342)
    # GraphExecutor JSON through tvm.graph_executor.create: accepted or refused
    assert by_id["graph-json.valid.basic"]["outcome"] == "pass"
    assert by_id["graph-json.broken.unknown_key.graph"]["outcome"] == "pass"
    assert by_id["graph-json.valid.input-attrs"]["outcome"] == "xfail"
    assert sum(r["outcome"] == "pass" for r in cases if r["format"] == "graph-json") >= 18
    wrong = compat_pages.sample_contradicts("hhb-tvm", records, page)
    assert not wrong, f"{'; '.join(wrong[:5])}: run `python tools/compat_pages.py hhb-tvm`"


def test_a_peer_that_cannot_be_set_up_fails_the_run_with_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MLF_SPEC_TVM_VENVS", str(tmp_path / "venvs"))
    monkeypatch.setattr(venvs, "find_python", lambda version: None)
    status = cli(["conformance", "run", "--adapter", "hhb-tvm", "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2
    assert len(err) == 1 and "needs Python 3.10 (or Python 3.11" in err[0] and "hhb-tvm 3.2.3" in err[0], err
    assert not any((tmp_path / "venvs").glob("hhb-tvm*"))  # nothing half-made is left


@pytest.mark.parametrize("version", ["0.25", "0.26"])
def test_apache_tvm_peer_adapters_run_from_their_venvs(version, tmp_path):
    """``--adapter tvm-0.25`` / ``tvm-0.26``: the venv is made on first use (as the verdict tests
    make it), the release's own loader answers, and it fails only what 0.27 is known to fail."""
    report = tmp_path / "r.jsonl"
    status = cli(["conformance", "run", "--adapter", f"tvm-{version}", "--id", "params.valid.*", "--id",
                  "params.encode.w-and-b", "--report-json", str(report), "--quiet"])
    from mlf_spec.conformance.report import read_report

    records = read_report(report)
    cases = {r["id"]: r["outcome"] for r in records if r["type"] == "case"}
    assert status == 0, cases
    assert records[0]["testee_info"]["version"].startswith(version)
    assert cases["params.valid.w-and-b"] == cases["params.encode.w-and-b"] == "pass"
    assert cases["params.valid.duplicate-names"] == "xfail"


def test_without_python_310_the_ctypes_fallback_on_python_311_is_chosen(tmp_path, monkeypatch):
    monkeypatch.setenv("MLF_SPEC_TVM_VENVS", str(tmp_path / "venvs"))
    monkeypatch.delenv("MLF_SPEC_HHB_PY311", raising=False)
    monkeypatch.setattr(venvs, "find_python", lambda version: sys.executable if version == "3.11" else None)
    assert venvs.resolve("hhb") == "hhb-py311"
    assert venvs.environment("hhb") == {"TVM_FFI": "ctypes"}
    monkeypatch.setattr(venvs, "find_python", lambda version: "/usr/bin/python" + version)
    assert venvs.resolve("hhb") == "hhb"


def test_hhb_tvm_runs_on_python_311_with_ctypes(tmp_path, monkeypatch):
    """The fallback for real (forced, in its own cache folder): the cp310 wheel's tvm package on
    Python 3.11 through ctypes reads .params, legacy blobs and graphs as the 3.10 venv does."""
    from mlf_spec.conformance.report import read_report
    from mlf_spec.peers import Peer

    monkeypatch.setenv("MLF_SPEC_HHB_PY311", "1")
    python = venvs.ensure("hhb")
    assert python.parent.parent.name == "hhb-tvm-3.2.3-py311-ctypes-runtime"
    with Peer(python, env=venvs.environment("hhb")) as peer:
        version = peer.request("version")
    assert version["tvm"] == "0.16.dev0" and version["python"].startswith("3.11."), version
    report = tmp_path / "r.jsonl"
    status = cli(["conformance", "run", "--adapter", "hhb-tvm", "--id", "params.valid.*", "--id",
                  "params.encode.w-and-b", "--id", "blob.legacy.kind.c", "--id", "blob.legacy.0.14.graph_executor_factory",
                  "--id", "graph-json.valid.basic", "--id", "graph-json.broken.not-object",
                  "--report-json", str(report), "--quiet"])
    cases = {r["id"]: r["outcome"] for r in read_report(report) if r["type"] == "case"}
    assert status == 0, cases
    for cid in ("params.valid.w-and-b", "params.encode.w-and-b", "blob.legacy.kind.c",
                "blob.legacy.0.14.graph_executor_factory", "graph-json.valid.basic", "graph-json.broken.not-object"):
        assert cases[cid] == "pass", (cid, cases[cid])
