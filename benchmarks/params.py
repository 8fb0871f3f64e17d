"""Benchmark mlf-spec's .params reader/writer against apache-tvm, numpy .npz and raw file I/O.

    python benchmarks/params.py [--repeat 5] [--quick] [--json OUT]

Prints, per data set, the median time of each contender and the ratios the targets are
stated in (issue: load <= 0.6x TVM on the ResNet-50-like set; <= 1.5 us per tensor on
10,000 small tensors; lazy open <= 50 us + 3 us per tensor; save <= 0.8x TVM and >= 12 GB/s
to bytes; importing mlf_spec.params adds <= 20 ms to importing numpy).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mlf_spec import params  # noqa: E402

try:
    import tvm
    from tvm import runtime as tvm_runtime
except ImportError:  # the benchmark still runs, without the TVM column
    tvm = None

RESNET50_SHAPES = (
    [(64, 3, 7, 7)]
    + [(64, 64, 1, 1), (64, 64, 3, 3), (256, 64, 1, 1), (256, 64, 1, 1)]
    + [(64, 256, 1, 1), (64, 64, 3, 3), (256, 64, 1, 1)] * 2
    + [(128, 256, 1, 1), (128, 128, 3, 3), (512, 128, 1, 1), (512, 256, 1, 1)]
    + [(128, 512, 1, 1), (128, 128, 3, 3), (512, 128, 1, 1)] * 3
    + [(256, 512, 1, 1), (256, 256, 3, 3), (1024, 256, 1, 1), (1024, 512, 1, 1)]
    + [(256, 1024, 1, 1), (256, 256, 3, 3), (1024, 256, 1, 1)] * 5
    + [(512, 1024, 1, 1), (512, 512, 3, 3), (2048, 512, 1, 1), (2048, 1024, 1, 1)]
    + [(512, 2048, 1, 1), (512, 512, 3, 3), (2048, 512, 1, 1)] * 2
    + [(1000, 2048), (1000,)]
)


def resnet50_like() -> dict[str, np.ndarray]:
    """~160 float32 tensors, ~100 MB: the conv weights of ResNet-50 plus per-layer scales."""
    rng = np.random.default_rng(0)
    out: dict[str, np.ndarray] = {}
    for i, shape in enumerate(RESNET50_SHAPES):
        out[f"layer{i}_weight"] = rng.standard_normal(shape, dtype=np.float32)
        if len(shape) == 4:
            out[f"layer{i}_bn_scale"] = rng.standard_normal(shape[0], dtype=np.float32)
            out[f"layer{i}_bn_shift"] = rng.standard_normal(shape[0], dtype=np.float32)
    return out


def mixed() -> dict[str, np.ndarray]:
    """A few hundred tensors of many dtypes (float16/32/64, bfloat16, float8, ints, bool)."""
    import ml_dtypes

    rng = np.random.default_rng(1)
    kinds = [np.float32, np.float16, np.float64, ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, np.int8, np.int32,
             np.int64, np.uint8, np.bool_]
    out = {}
    for i in range(300):
        t = kinds[i % len(kinds)]
        n = int(rng.integers(1, 20000))
        out[f"t{i}"] = rng.standard_normal(n).astype(t)
    return out


def datasets(quick: bool) -> dict[str, dict[str, np.ndarray]]:
    big = 64 << 20 if quick else 256 << 20
    return {
        "one 256 MiB float32" if not quick else "one 64 MiB float32": {"w": np.ones(big // 4, np.float32)},
        "10,000 x 64 float32": {f"p{i}": np.full(64, i, np.float32) for i in range(10_000)},
        "ResNet-50-like (float32)": resnet50_like(),
        "mixed dtypes": mixed(),
    }


BEST: dict[str, float] = {}  # "<set>/<figure>" -> best time, printed beside the median


def median_time(fn: Callable[[], object], repeat: int, key: str = "") -> float:
    """Median wall time of ``fn`` over ``repeat`` runs (the best run goes to BEST[key])."""
    times = []
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
        del result
    BEST[key] = min(times)
    return statistics.median(times)


def _drop(obj: object) -> None:
    del obj


def bench_set(name: str, data: dict[str, np.ndarray], repeat: int, workdir: Path) -> dict[str, float]:
    path = workdir / "bench.params"
    npz = workdir / "bench.npz"
    params.save(data, path)
    raw_bytes = path.read_bytes()
    size = len(raw_bytes)
    n = len(data)
    r: dict[str, float] = {"tensors": n, "bytes": size}

    r["mlf load"] = median_time(lambda: params.load(path), repeat, f"{name}/mlf load")
    r["mlf open (index)"] = median_time(lambda: params.open(path).close(), repeat, f"{name}/mlf open (index)")
    r["mlf save"] = median_time(lambda: params.save(data, path), repeat, f"{name}/mlf save")
    r["mlf dumps"] = median_time(lambda: params.dumps(data), repeat, f"{name}/mlf dumps")
    reuse = bytearray(size)
    params.dumps_into(data, reuse)  # first touch of the buffer's pages happens here, not in the timing
    r["mlf dumps_into"] = median_time(lambda: params.dumps_into(data, reuse), repeat, f"{name}/mlf dumps_into")
    r["raw read"] = median_time(lambda: path.read_bytes(), repeat, f"{name}/raw read")
    r["raw write"] = median_time(lambda: path.write_bytes(raw_bytes), repeat, f"{name}/raw write")
    params.save(data, path)

    if not name.startswith("mixed"):
        np.savez(npz, **data)
        r["npz load"] = median_time(lambda: _npz_load(npz), repeat, f"{name}/npz load")
        r["npz save"] = median_time(lambda: np.savez(npz, **data), repeat, f"{name}/npz save")

    if tvm is not None and not name.startswith("mixed"):
        tdata = {k: tvm_runtime.tensor(v) for k, v in data.items()}
        tpath = str(workdir / "tvm.params")
        r["tvm load+numpy"] = median_time(lambda: {k: v.numpy() for k, v in tvm_runtime.load_param_dict_from_file(str(path)).items()}, repeat, f"{name}/tvm load+numpy")
        r["tvm save"] = median_time(lambda: tvm_runtime.save_param_dict_to_file(tdata, tpath), repeat, f"{name}/tvm save")
        assert Path(tpath).read_bytes() == raw_bytes, "TVM and mlf-spec bytes differ"
        del tdata
    return r


def _npz_load(path: Path) -> dict[str, np.ndarray]:
    with np.load(path) as z:
        return {k: z[k] for k in z.files}


def import_overhead(repeat: int) -> tuple[float, float]:
    # Installed packages carry bytecode; compile it first so the figure is not the
    # one-time cost of compiling (PYTHONDONTWRITEBYTECODE may be set in this shell).
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "mlf_spec"), str(ROOT / "generated")],
                   check=True, capture_output=True)

    def run(code: str) -> float:
        times = []
        for _ in range(repeat):
            out = subprocess.run([sys.executable, "-c", f"import time; t=time.perf_counter(); {code}; "
                                  "print(time.perf_counter()-t)"], capture_output=True, text=True, check=True,
                                 cwd=ROOT)
            times.append(float(out.stdout))
        return statistics.median(times)

    return run("import numpy"), run("import numpy; import mlf_spec.params")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="smaller big tensor, fewer repeats")
    ap.add_argument("--json", help="also write the figures as JSON to this path")
    args = ap.parse_args()
    repeat = 3 if args.quick else args.repeat
    results: dict[str, dict[str, float]] = {}
    print(f"mlf-spec .params benchmark; numpy {np.__version__}; apache-tvm "
          f"{tvm.__version__ if tvm else 'not installed'}; median (and best) of {repeat}; {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as tmp:
        for name, data in datasets(args.quick).items():
            results[name] = r = bench_set(name, data, repeat, Path(tmp))
            del data
            gc.collect()
            mb = r["bytes"] / 1e6
            print(f"\n== {name}: {int(r['tensors'])} tensors, {mb:.1f} MB")
            rows = [k for k in r if k not in ("tensors", "bytes")]
            for k in rows:
                extra = ""
                if "dump" in k or "save" in k or "write" in k or "load" in k or "read" in k:
                    extra = f"{r['bytes'] / r[k] / 1e9:7.2f} GB/s"
                per = r[k] / r["tensors"] * 1e6
                best = BEST.get(f"{name}/{k}", r[k])
                print(f"  {k:18s} {r[k] * 1e3:10.3f} ms  {per:9.3f} us/tensor  (best {best / r['tensors'] * 1e6:9.3f})  {extra}")
            if "tvm load+numpy" in r:
                print(f"  ratio load / TVM load+numpy: {r['mlf load'] / r['tvm load+numpy']:.2f}x   "
                      f"save / TVM save: {r['mlf save'] / r['tvm save']:.2f}x")
            if "npz load" in r:
                print(f"  ratio load / npz load: {r['mlf load'] / r['npz load']:.2f}x   "
                      f"load / raw read: {r['mlf load'] / r['raw read']:.2f}x")
    base, with_params = import_overhead(5)
    print(f"\nimport numpy: {base * 1e3:.1f} ms; import numpy + mlf_spec.params: {with_params * 1e3:.1f} ms; "
          f"added {(with_params - base) * 1e3:.1f} ms")
    results["import"] = {"numpy": base, "numpy+mlf_spec.params": with_params}
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
