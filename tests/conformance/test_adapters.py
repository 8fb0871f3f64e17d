"""The shipped adapters for third-party implementations, run as the test suite runs them
(tools/compat_pages.py, ``sample=True``): a stratified sample of the vector suite (every rule
and feature value on each side, every known failure's case, every skip; the ids asserted
below) plus a --generate run bounded by its count, every divergence a listed known failure,
and every case run with the outcome, reason and note of the committed results
(docs/conformance/results.json, the pages of docs/conformance/compat/). The whole suite runs
in tools/compat_pages.py; a cheap test below fails when a committed page was not made from
the installed suite.

Peers (the test extra installs them): apache-tvm-ffi with apache-tvm, Netron (its JavaScript,
run in Node.js), MLonMCU, and the parsers Kaitai Struct generates from the exported .ksy files
(compiled into the cache of tools/kaitai).
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from mlf_spec.conformance import compat

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import compat_pages  # noqa: E402

needs_node = pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")


@pytest.fixture(scope="module")
def kaitai_env():
    saved = {k: os.environ.get(k) for k in ("MLF_SPEC_KAITAI_PYTHON", "MLF_SPEC_KAITAI_JS", "MLF_SPEC_KAITAI_NODE_MODULES")}
    os.environ.update(compat_pages.kaitai_environment())
    yield
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def _run(name: str, tmp_path: Path, *keep: str) -> dict[str, dict]:
    """Run the adapter on its sample (and the ids ``keep``); check the exit status and the
    committed results; return case records by id."""
    status, records, page = compat_pages.run(name, tmp_path, sample=True, keep=keep)
    cases = {r["id"]: r for r in records if r["type"] == "case"}
    unexpected = {i: r.get("message") for i, r in cases.items() if r["outcome"] in ("fail", "error", "xpass")}
    assert status == 0 and not unexpected, unexpected
    generated = next((r for r in records if r["type"] == "generated"), None)
    if generated is not None:  # bounded by its count, not by the machine's speed
        assert generated["seconds"] < generated["budget"], generated
    wrong = compat_pages.sample_contradicts(name, records, page)
    assert not wrong, f"{'; '.join(wrong[:5])}: run `python tools/compat_pages.py {name}`"
    return cases


def _outcome(cases: dict[str, dict], prefix: str) -> set[str]:
    return {r["outcome"] for i, r in cases.items() if i.startswith(prefix)}


def test_mlf_spec_passes_everything_and_its_page_says_so(tmp_path):
    cases = _run("mlf-spec", tmp_path)
    assert {r["outcome"] for r in cases.values()} == {"pass"}
    assert len(cases) >= 800


def test_tvm_ffi_loads_what_mlf_spec_reads_and_its_divergences_are_listed(tmp_path):
    pytest.importorskip("tvm_ffi")
    pytest.importorskip("tvm")
    cases = _run("tvm-ffi", tmp_path, "blob.ffi.latest.tree.*", "blob.ffi.kind.relax.vmexecutable",
                 "blob.ffi.kind.cuda", "blob.ffi.broken.lying_length.body.count")
    # the positions of _lib entries, read from the ctx symbol, put the tree back as stored
    for tree in ("chain", "lib-only", "non-lib-root", "root-without-imports", "shared"):
        assert cases[f"blob.ffi.latest.tree.{tree}"]["outcome"] == "pass"
    assert cases["blob.ffi.kind.relax.vmexecutable"]["outcome"] == "pass"  # a real loader of apache-tvm
    assert cases["blob.ffi.kind.cuda"]["outcome"] == "pass"  # no loader in this wheel: a placeholder reads it
    assert cases["blob.ffi.broken.lying_length.body.count"]["outcome"] == "xfail"  # the size prefix is trusted
    assert _outcome(cases, "blob.legacy.") == {"skip"}


@needs_node
def test_netron_reads_params_and_graphs_with_its_listed_divergences(tmp_path):
    pytest.importorskip("netron")
    cases = _run("netron", tmp_path, "params.valid.w-and-b", "params.dtype.v0.21.float32.2-32",
                 "params.dtype.v0.21.bool.1-1", "params.valid.name-non-ascii", "params.dtype.v0.26.bool.6-8",
                 "graph-json.valid.basic", "graph-json.broken.unknown_key.graph")
    assert cases["params.valid.w-and-b"]["outcome"] == "pass"
    assert cases["params.dtype.v0.21.float32.2-32"]["outcome"] == "pass"  # run in v0.23+ (the dialect list)
    assert cases["params.dtype.v0.21.bool.1-1"]["outcome"] == "skip"  # TVM 0.21 spells (1, 1, 1) bool
    assert cases["params.valid.name-non-ascii"]["outcome"] == "xfail"  # Latin-1 names
    assert "wÃ¶rter" in cases["params.valid.name-non-ascii"]["note"]
    assert cases["params.dtype.v0.26.bool.6-8"]["outcome"] == "xfail"  # code 6 refused
    assert cases["graph-json.valid.basic"]["outcome"] == "pass"
    assert cases["graph-json.broken.unknown_key.graph"]["outcome"] == "xfail"


@needs_node
def test_web_runtime_reads_cache_folders_with_its_listed_divergences(tmp_path):
    """@mlc-ai/web-runtime's JavaScript (record slicing, index and shard URLs) on the
    folder-shaped cases: a testee in Node.js that speaks the protocol itself (input_dir)."""
    if shutil.which("npm") is None:
        pytest.skip("npm is not installed")
    cases = _run("web-runtime", tmp_path, "tensor-cache.valid.base", "tensor-cache.valid.sharded",
                 "tensor-cache.broken.out-of-shard", "tensor-cache.broken.shard-longer", "tensor-cache.broken.nbytes")
    assert cases["tensor-cache.valid.base"]["outcome"] == "pass"  # f32-to-bf16 decoded, digests agree
    assert cases["tensor-cache.valid.sharded"]["outcome"] == "pass"
    assert cases["tensor-cache.broken.out-of-shard"]["outcome"] == "pass"  # getTensorCacheRecordBytes refuses
    assert cases["tensor-cache.broken.shard-longer"]["outcome"] == "xfail"  # no shard size check
    assert cases["tensor-cache.broken.nbytes"]["outcome"] == "xfail"  # checked in wasm, not run
    assert _outcome(cases, "tensor-cache.v1.") == {"skip"}  # the 0.27 package fetches tensor-cache.json
    assert _outcome(cases, "params.") == {"skip"}


def test_mlonmcu_facts_and_its_listed_divergences(tmp_path):
    pytest.importorskip("mlonmcu")
    cases = _run("mlonmcu", tmp_path, "mlf-archive.valid.v7.graph", "mlf-metadata.valid.v5.graph",
                 "mlf-archive.valid.v5.graph", "mlf-metadata.valid.v7.two-modules",
                 "mlf-archive.broken.unsafe-parent.v4.operator",
                 "mlf-archive.broken.finding-metadata.missing.v4.operator")
    assert cases["mlf-archive.valid.v7.graph"]["outcome"] == "pass"
    assert cases["mlf-metadata.valid.v5.graph"]["outcome"] == "pass"
    assert cases["mlf-archive.valid.v5.graph"]["outcome"] == "xfail"  # graph looked for at the v7 path only
    assert cases["mlf-metadata.valid.v7.two-modules"]["outcome"] == "xfail"  # only "default"
    assert cases["mlf-archive.broken.unsafe-parent.v4.operator"]["outcome"] == "xfail"  # wrote outside
    assert cases["mlf-archive.broken.finding-metadata.missing.v4.operator"]["outcome"] == "pass"  # nothing to read
    assert _outcome(cases, "mlf-metadata.broken.") == {"skip"}  # not_checked: invalid_document


@needs_node
def test_kaitai_python_parser_reads_like_mlf_spec(tmp_path, kaitai_env):
    pytest.importorskip("kaitaistruct")
    cases = _run("kaitai-python", tmp_path, "blob.legacy.0.14.relay_vm_wrapped",
                 "blob.legacy.broken.duplicate_lib_legacy.first", "params.dtype.v0.13.e4m3_float8.6-8")
    assert cases["blob.legacy.0.14.relay_vm_wrapped"]["outcome"] == "pass"  # payload bytes from the positions
    assert cases["blob.legacy.broken.duplicate_lib_legacy.first"]["outcome"] == "xfail"
    assert cases["params.dtype.v0.13.e4m3_float8.6-8"]["outcome"] == "pass"  # every dialect


@needs_node
def test_kaitai_js_parser_reads_like_mlf_spec(tmp_path, kaitai_env):
    cases = _run("kaitai-js", tmp_path, "blob.ffi.0.23.relax_vm_body", "params.valid.reserved-nonzero")
    assert cases["blob.ffi.0.23.relax_vm_body"]["outcome"] == "pass"
    assert cases["params.valid.reserved-nonzero"]["outcome"] == "xfail"  # a u8 read as a double


def test_every_compatibility_page_was_made_from_the_installed_suite():
    """Cheap (no adapter runs): each committed page and index entry names the digest of the
    suite it was made from; a change to the vectors makes them stale until the pages are made
    again (`python tools/compat_pages.py`, the whole suite)."""
    stale = compat_pages.stale_pages()
    assert not stale, f"{', '.join(stale)} not made from the installed vectors: run `python tools/compat_pages.py`"


def test_a_page_names_its_suite_and_a_stale_one_is_found(tmp_path, monkeypatch):
    from mlf_spec.conformance import vectors

    suite = vectors.load_suite(formats=["graph-json"])
    digest = vectors.suite_digest(suite)
    assert digest == vectors.suite_digest(list(reversed(suite)))  # in id order, whatever the order given
    run = {"type": "run", "mlf_spec": "0", "testee": "adapter:x", "testee_info": {"name": "x", "formats": []},
           "vectors": "installed", "started": "", "cases": 1, "mode": "in-process", "suite_sha256": digest}
    text = compat.page([run, {"type": "summary", "counts": {}, "seconds": 0, "exit_status": 0, "coverage": []}])
    assert compat.suite_of(text) == digest and f"`{digest}`" in compat.stable_part(text)
    assert "sample" not in text
    sampled = compat.page([{**run, "sampled_from": 7}])
    assert "a stratified sample of 1 of its 7 selected cases" in sampled
    copy = tmp_path / "v"
    copy.mkdir()
    for c in suite[:2]:
        shutil.copy(c.path, copy / c.path.name)
        shutil.copy(c.input_path, copy / c.input_path.name)
    before = vectors.suite_digest(vectors.load_suite(copy))
    assert before == vectors.suite_digest(suite[:2])  # the files, not where they are
    case = copy / suite[0].path.name
    case.write_bytes(case.read_bytes() + b"\n")
    assert vectors.suite_digest(vectors.load_suite(copy)) != before  # any change to a case file
    pages = tmp_path / "compat"
    pages.mkdir()
    (pages / "x.md").write_text(text)
    monkeypatch.setattr(compat_pages, "PAGES", pages)
    monkeypatch.setattr(compat_pages, "ROOT", tmp_path)
    monkeypatch.setattr(compat_pages, "INDEX", tmp_path / "results.json")
    monkeypatch.setattr(compat_pages, "suite_digest", lambda: digest)
    assert compat_pages.stale_pages(["x"]) == ["results.json (entry x)"]  # no index entry yet
    monkeypatch.setattr(compat_pages, "suite_digest", lambda: "0" * 64)
    assert compat_pages.stale_pages(["x"]) == ["compat/x.md", "results.json (entry x)"]


def test_a_page_lists_every_divergence_with_its_reason():
    records = [
        {"type": "run", "mlf_spec": "0", "testee": "adapter:x", "testee_info": {
            "name": "x", "version": "1", "formats": [{"format": "params", "roles": ["decode"], "reads": ["tensors"]}]},
         "vectors": "installed", "started": "", "cases": 3, "mode": "in-process"},
        {"type": "case", "id": "a", "format": "params", "role": "decode", "outcome": "pass", "seconds": 0},
        {"type": "case", "id": "b", "format": "params", "role": "decode", "outcome": "xfail", "seconds": 0,
         "message": "names are Latin-1", "note": "fail: tensors[0].name: expected \"é\", got \"Ã©\""},
        {"type": "case", "id": "c", "format": "params", "role": "decode", "outcome": "fail", "seconds": 0,
         "message": "accepted an input | the spec rejects"},
        {"type": "case", "id": "gen.params.decode.valid.x", "format": "params", "role": "decode", "outcome": "xfail",
         "seconds": 0, "message": "why", "note": "fail: seen"},
        {"type": "summary", "counts": {}, "seconds": 0, "exit_status": 1, "coverage": [
            {"format": "params", "feature": "dtype", "value": "float32", "passed": 1, "total": 1},
            {"format": "params", "feature": "dtype", "value": "bool", "passed": 0, "total": 2}]},
    ]
    text = compat.page(records)
    assert "| `b` | known failure | names are Latin-1 | tensors[0].name: expected \"é\", got \"Ã©\" |" in text
    assert "| `c` | FAILED | not in the known failures | accepted an input \\| the spec rejects |" in text
    assert "| params | dtype | float32 | bool (0/2) |" in text
    assert "| params | decode | all | tensors | — |" in text
    assert "gen.params.decode.valid.x" in text and "gen.params" not in compat.stable_part(text)
    assert "3 cases: 1 passed, 1 failed, 1 known failures." in text
