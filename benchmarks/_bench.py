"""Shared parts of the benchmarks: interleaved timing rounds and the README's figures table.

The README's performance table is rendered from the JSON the benchmarks record
(``benchmarks/results/*.json``, written by ``--record``); ``tests/docs/test_benchmark_figures.py``
checks that the README shows exactly what the recorded runs measured.
"""

from __future__ import annotations

import gc
import json
import random
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
README = ROOT / "README.md"
BEGIN = "<!-- figures from benchmarks/results/*.json (python benchmarks/params.py --record; startup.py --record) -->"
END = "<!-- end of figures -->"


def interleaved(contenders: dict[str, Callable[[], object]], rounds: int, warmup: int = 1) -> dict[str, list[float]]:
    """Wall times of each contender over ``rounds`` rounds; in every round each contender
    runs once, in an order shuffled from round to round (seeded: the same orders every run),
    so that a slow moment of a shared machine touches every contender alike and no contender
    always follows the same one (what ran before leaves caches warm or cold). A garbage
    collection runs before each call (and is not timed)."""
    shuffle = random.Random(20).shuffle
    labels = list(contenders)
    for _ in range(warmup):
        for label in labels:
            contenders[label]()
    times: dict[str, list[float]] = {k: [] for k in labels}
    for _ in range(rounds):
        order = list(labels)
        shuffle(order)
        for label in order:
            fn = contenders[label]
            gc.collect()
            t0 = time.perf_counter()
            result = fn()
            times[label].append(time.perf_counter() - t0)
            del result
    return times


def median(xs: list[float]) -> float:
    """The median of ``xs``."""
    return statistics.median(xs)


def ratio_of_medians_per_round(a: list[float], b: list[float]) -> float:
    """The median of the per-round ratios a/b (rounds are paired by their position)."""
    return statistics.median(x / y for x, y in zip(a, b))


def record(name: str, data: dict[str, Any]) -> Path:
    """Write a benchmark's figures to ``benchmarks/results/<name>.json``."""
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    return path


def load_results() -> dict[str, dict[str, Any]]:
    """The recorded figures, by benchmark name."""
    return {p.stem: json.loads(p.read_text()) for p in sorted(RESULTS.glob("*.json"))}


def _fmt_ratio(x: float) -> str:
    return f"{x:.2f}x"


def figures_table(results: dict[str, dict[str, Any]]) -> str:
    """The README's performance table, from the recorded figures."""
    p, s = results["params"], results["startup"]
    rows = ["| measure | mlf-spec | against | ratio | goal |", "|---|---:|---|---:|---|"]
    small = p["small"]
    tvm = f"TVM {p['tvm']} `load_param_dict_from_file` + `.numpy()` ({small['tvm_us_per_tensor']:.2f} us/tensor)"
    rows.append(f"| load {small['tensors']:,} x float32[64] into NumPy | {small['mlf_us_per_tensor']:.2f} us/tensor | "
                f"{tvm} | {_fmt_ratio(small['ratio'])} | <= 0.12x |")
    rows.append(f"| the same, then asking for every array | {small['mlf_all_us_per_tensor']:.2f} us/tensor | "
                f"{tvm} | {_fmt_ratio(small['ratio_all'])} | |")
    lazy = p["lazy"]
    walker = f", {lazy['walker']} header walker" if "walker" in lazy else ""
    rows.append(f"| lazy open + index of a ResNet-50-like file ({lazy['tensors']} tensors{walker}) | "
                f"{lazy['mlf_us']:.0f} us | safetensors {p['safetensors']} `safe_open` + `keys()` "
                f"({lazy['safetensors_us']:.0f} us) | {_fmt_ratio(lazy['ratio'])} | <= 1.0x |")
    if "python_ratio" in lazy:
        rows.append(f"| the same with the generated Python header walker (the fallback without a C compiler) | "
                    f"{lazy['mlf_python_us']:.0f} us | the same | {_fmt_ratio(lazy['python_ratio'])} | |")
    if "walk_pread_ratio" in lazy:
        rows.append(f"| the format's floor: a C walker reading only the record headers (pread) | "
                    f"{lazy['walk_pread_us']:.0f} us | the same | {_fmt_ratio(lazy['walk_pread_ratio'])} | |")
    if "python_floor_ratio" in lazy:
        rows.append(f"| the least Python does (names and sizes by pread, no checks) | {lazy['python_floor_us']:.0f} us | "
                    f"the same | {_fmt_ratio(lazy['python_floor_ratio'])} | |")
    chk = s["check"]
    rows.append(f"| `mlf-spec check` of a small MLF archive, whole process | {chk['mlf_ms']:.0f} ms | "
                f"`python -c \"import numpy\"` ({chk['numpy_ms']:.0f} ms) | {_fmt_ratio(chk['ratio'])} | <= 1.5x |")
    for key, what in (("check_tvm", "`mlf-spec check --tvm 0.12` of the same archive (TVM readers' verdicts)"),
                      ("upgrade", "`mlf-spec upgrade` of it at metadata version 6, written to a file")):
        if key in s:
            row = s[key]
            rows.append(f"| {what} | {row['mlf_ms']:.0f} ms | the same ({row['numpy_ms']:.0f} ms) | "
                        f"{_fmt_ratio(row['ratio'])} | |")
    big = p["large"]
    rows.append(f"| load one {big['mib']} MiB float32 tensor | {big['mlf_ms']:.0f} ms, "
                f"{big['memory_ratio']:.2f}x the tensor bytes in memory | raw `readinto` ({big['raw_ms']:.0f} ms) | "
                f"{_fmt_ratio(big['ratio'])} | about 1x, memory <= 1.1x |")
    note = (f"Medians of {p['rounds']} (params) and {s['rounds']} (start-up) interleaved rounds on "
            f"{p['machine']}; Python {p['python']}, NumPy {p['numpy']}.")
    return "\n".join(rows) + "\n\n" + note


def readme_block(results: dict[str, dict[str, Any]] | None = None) -> str:
    """The README block between the figure markers (markers included)."""
    return f"{BEGIN}\n{figures_table(results or load_results())}\n{END}"


def update_readme() -> bool:
    """Rewrite the README's figures block from the recorded results; whether it changed."""
    text = README.read_text()
    start, stop = text.index(BEGIN), text.index(END) + len(END)
    new = text[:start] + readme_block() + text[stop:]
    if new != text:
        README.write_text(new)
    return new != text
