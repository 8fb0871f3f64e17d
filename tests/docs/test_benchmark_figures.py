"""The README's speed figures are the ones the benchmarks recorded (never typed by hand)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import _bench  # noqa: E402


def test_readme_shows_the_recorded_figures():
    results = _bench.load_results()
    assert {"params", "startup"} <= set(results)
    text = (ROOT / "README.md").read_text()
    assert _bench.readme_block(results) in text, "run benchmarks/params.py --record (or startup.py --record)"


def test_recorded_figures_are_measurements_of_the_named_contenders():
    results = _bench.load_results()
    p, s = results["params"], results["startup"]
    assert p["tvm"].startswith("0.") and p["safetensors"][0].isdigit()
    small, lazy, large = p["small"], p["lazy"], p["large"]
    # the ratios are medians of per-round ratios: they lie between the extremes the medians allow
    assert small["tensors"] == 10_000 and lazy["tensors"] == 161
    assert 0 < small["mlf_us_per_tensor"] and 0 < small["tvm_us_per_tensor"] and 0 < small["ratio"]
    assert 0 < lazy["mlf_us"] and 0 < lazy["safetensors_us"] and 0 < lazy["ratio"]
    assert large["memory_ratio"] >= 1.0 and 0 < large["ratio"]
    chk = s["check"]
    assert abs(chk["ratio"] - chk["mlf_ms"] / chk["numpy_ms"]) < 1e-9


def _cache_benchmark():
    import importlib.util

    spec = importlib.util.spec_from_file_location("cache_benchmark", ROOT / "benchmarks" / "cache.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_tensor_cache_doc_shows_the_recorded_cache_figures():
    """docs/tensor-cache.md's speed table is what benchmarks/cache.py --record measured: the load
    against raw readinto and TVM, the strict lazy open against json.load."""
    result = _bench.load_results()["cache"]
    bench = _cache_benchmark()
    assert bench.docs_block(result) in (ROOT / "docs" / "tensor-cache.md").read_text(), \
        "run python benchmarks/cache.py --record"
    assert result["readinto"]["seconds"] > 0 and result["tvm"]["seconds"] > 0 and result["tvm_version"].startswith("0.")
    assert 0 < result["time_ratio_vs_readinto"] and result["mlf-spec"]["peak_memory_ratio"] >= 0.9
    assert [c["records"] for c in result["lazy_open"]] == [1_000, 10_000]
    assert all(c["json_seconds"] > 0 and c["ratio_vs_json"] > 0 for c in result["lazy_open"])


def _module(name: str):
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"{name}_benchmark", ROOT / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_tensor_cache_doc_shows_the_recorded_index_memory_and_it_keeps_the_bound():
    """docs/tensor-cache.md's memory table is what benchmarks/cache_index.py --record measured
    (10^6 records and a 250 MiB index), every command ran to its end, and the open stayed within
    the bound the page states (issue 32 item 11)."""
    import re

    result = _bench.load_results()["cache_index"]
    text = (ROOT / "docs" / "tensor-cache.md").read_text()
    assert _module("cache_index").docs_block(result) in text, "run python benchmarks/cache_index.py --record"
    bound = float(re.search(r"at most ([0-9.]+)x the index's size", text).group(1))
    rows = result["rows"]
    assert {r["command"] for r in rows} >= {"open", "dump", "dump-json", "upgrade", "check"}
    assert all(r["status"] == 0 for r in rows), [(r["command"], r["stderr"]) for r in rows if r["status"]]
    assert max(r["index_bytes"] for r in rows) <= 256 << 20 and min(r["records"] for r in rows) >= 1_000_000
    assert all(r["ratio"] <= bound for r in rows if r["command"] == "open"), rows
