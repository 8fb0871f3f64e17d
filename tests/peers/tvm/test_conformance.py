"""apache-tvm under test: its .params reader and writer against a stratified sample of the
vector suite (tools/compat_pages.py, ``sample=True``: every rule and feature value on each
side, every known failure's case, the ids asserted) and a generated run bounded by its count,
in child processes; every divergence is a listed known failure, and every case run has the
outcome the committed results (docs/conformance/compat/tvm.md, results.json) give it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("tvm")
pytestmark = pytest.mark.tvm

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tools"))

import compat_pages  # noqa: E402


def test_tvm_passes_or_is_listed_on_a_sample_of_the_suite_and_generated_cases(tmp_path):
    status, records, page = compat_pages.run("tvm", tmp_path, sample=True, keep=(
        "params.valid.duplicate-names", "params.valid.zero-size-3x0", "params.broken.unknown_code-dl_datatype.code.code-18",
        "params.broken.truncated.at-201", "params.valid.w-and-b", "params.encode.w-and-b", "params.dtype.v0.21.float32.2-32",
        "params.dtype.v0.13.e4m3_float8.6-8", "tensor-cache.valid.sharded", "tensor-cache.broken.out-of-shard",
        "tensor-cache.broken.metadata-missing", "tensor-cache.v1.valid.base"))
    cases = [r for r in records if r["type"] == "case"]
    by_id = {r["id"]: r for r in cases}
    assert status == 0, [r for r in cases if r["outcome"] in ("fail", "error", "xpass")]
    assert sum(r["outcome"] == "pass" for r in cases) > 100  # of the sample (the whole suite: 432)
    for known in ("params.valid.duplicate-names", "params.valid.zero-size-3x0",
                  "params.broken.unknown_code-dl_datatype.code.code-18", "params.broken.truncated.at-201"):
        assert by_id[known]["outcome"] == "xfail", by_id[known]
    assert by_id["params.valid.w-and-b"]["outcome"] == "pass"
    assert by_id["params.encode.w-and-b"]["outcome"] == "pass"
    assert by_id["params.dtype.v0.21.float32.2-32"]["outcome"] == "pass"  # the same reading in TVM 0.27's dialect
    assert by_id["params.dtype.v0.13.e4m3_float8.6-8"]["outcome"] == "skip"  # another dtype numbering
    # the tensor cache through load_tensor_cache (folder-shaped cases of index version 2)
    assert by_id["tensor-cache.valid.sharded"]["outcome"] == "pass"
    assert by_id["tensor-cache.broken.out-of-shard"]["outcome"] == "pass"  # Python asserts, unlike C++
    assert by_id["tensor-cache.broken.metadata-missing"]["outcome"] == "xfail"
    assert by_id["tensor-cache.v1.valid.base"]["outcome"] == "skip"
    generated = [r for r in cases if r["id"].startswith("gen.")]
    assert generated and {r["outcome"] for r in generated} == {"xfail"}
    assert sorted(p.name for p in (tmp_path / "tvm-generated").glob("*.case.json"))  # replayable vectors
    wrong = compat_pages.sample_contradicts("tvm", records, page)
    assert not wrong, f"{'; '.join(wrong[:5])}: run `python tools/compat_pages.py tvm`"


def test_tvm_cpp_cache_loader_passes_or_is_listed_on_the_cache_cases(tmp_path):
    """apache-tvm's C++ tensor cache loader on the folder-shaped cases of its index version:
    reads past a shard's end and the empty f32-to-bf16 tensor are listed, the rest passes;
    every case of its sample has the outcome docs/conformance/compat/tvm-cpp.md gives it."""
    status, records, page = compat_pages.run("tvm-cpp", tmp_path, sample=True, keep=(
        "tensor-cache.broken.out-of-shard", "tensor-cache.valid.empty-encoded", "tensor-cache.unreadable.data-path-dotdot-back",
        "tensor-cache.valid.base", "tensor-cache.valid.sharded", "tensor-cache.broken.shard-shorter",
        "tensor-cache.v1.valid.base"))
    cases = [r for r in records if r["type"] == "case"]
    by_id = {r["id"]: r for r in cases}
    assert status == 0, [r for r in cases if r["outcome"] in ("fail", "error", "xpass")]
    assert {r["format"] for r in cases if r["outcome"] != "skip"} == {"tensor-cache"}
    assert sum(r["outcome"] == "pass" for r in cases) >= 15  # of the sample (the whole suite: 34)
    for known in ("tensor-cache.broken.out-of-shard", "tensor-cache.valid.empty-encoded",
                  "tensor-cache.unreadable.data-path-dotdot-back"):
        assert by_id[known]["outcome"] == "xfail", by_id[known]
    for good in ("tensor-cache.valid.base", "tensor-cache.valid.sharded", "tensor-cache.broken.shard-shorter"):
        assert by_id[good]["outcome"] == "pass", by_id[good]
    assert by_id["tensor-cache.v1.valid.base"]["outcome"] == "skip"  # 0.27 opens tensor-cache.json only
    wrong = compat_pages.sample_contradicts("tvm-cpp", records, page)
    assert not wrong, f"{'; '.join(wrong[:5])}: run `python tools/compat_pages.py tvm-cpp`"
