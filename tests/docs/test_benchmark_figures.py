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
