"""Benchmark mlf-spec's .params reader/writer against apache-tvm, safetensors, numpy .npz and raw I/O.

    python benchmarks/params.py [--rounds 15] [--quick] [--full] [--json OUT] [--record]

Every comparison runs its contenders in interleaved rounds (each round runs each contender
once, in an order shuffled each round) and reports medians, so that a busy moment of a shared machine
touches every contender alike. The headline table (issue 20):

* load 10,000 x float32[64] into NumPy: ``params.load`` against TVM's
  ``load_param_dict_from_file`` + ``.numpy()`` of every tensor (goal <= 0.12x);
* lazy open + index of a ResNet-50-like file (161 tensors): ``params.open`` against
  safetensors' ``safe_open`` + ``keys()`` of the same tensors (goal <= 1.0x): the library's
  figure with the compiled header walker (``mlf_spec.params._walker``, when built), then
  the same open with the generated Python walker (the fallback), beside the
  format's floor on this machine: two minimal C walkers (``params_floor.c``, built with gcc
  when the benchmark runs, called through ctypes) that touch only the record headers the
  format makes a reader read (one per tensor: the header sits in front of each tensor's
  data), by pread and through a mapping, and the least Python can do (names and each
  header's size by pread, no checks, no index);
* one large tensor: ``params.load`` against a raw ``readinto`` of the file, and the peak
  memory of the load (traced allocations) against the tensor bytes (goal <= 1.1x).

``--full`` adds the older per-set figures (save, dumps, .npz, TVM save) on four data sets.
``--record`` writes the headline figures to benchmarks/results/params.json, from which the
README's table is rendered (``python benchmarks/startup.py --record`` does the same for
start-up; both update the README).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import tracemalloc
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _bench import interleaved, median, ratio_of_medians_per_round, record, update_readme  # noqa: E402
from _floor import floor_walkers, python_floor  # noqa: E402

from mlf_spec import params  # noqa: E402
from mlf_spec.params import accel  # noqa: E402

try:
    import tvm
    from tvm import runtime as tvm_runtime
except ImportError:  # the benchmark still runs, without the TVM column
    tvm = None
try:
    import safetensors
    from safetensors import safe_open
    from safetensors.numpy import save_file as st_save
except ImportError:
    safetensors = None

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
    """161 float32 tensors, ~100 MB: the conv weights of ResNet-50 plus per-layer scales."""
    rng = np.random.default_rng(0)
    out: dict[str, np.ndarray] = {}
    for i, shape in enumerate(RESNET50_SHAPES):
        out[f"layer{i}_weight"] = rng.standard_normal(shape, dtype=np.float32)
        if len(shape) == 4:
            out[f"layer{i}_bn_scale"] = rng.standard_normal(shape[0], dtype=np.float32)
            out[f"layer{i}_bn_shift"] = rng.standard_normal(shape[0], dtype=np.float32)
    return out


def small_tensors() -> dict[str, np.ndarray]:
    """10,000 float32[64]."""
    return {f"p{i}": np.full(64, i, np.float32) for i in range(10_000)}


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


def _tvm_load(path: Path) -> dict[str, np.ndarray]:
    return {k: v.numpy() for k, v in tvm_runtime.load_param_dict_from_file(str(path)).items()}


def _mlf_open(path: Path) -> list[str]:
    with params.open(path) as p:
        return list(p.keys())


def _mlf_open_python(path: Path) -> list[str]:
    with accel.pure_python():  # the generated reader walks the headers (the fallback)
        with params.open(path) as p:
            return list(p.keys())


def _st_open(path: Path) -> list[str]:
    with safe_open(str(path), "np") as f:
        return list(f.keys())


def _raw_readinto(path: Path, size: int) -> np.ndarray:
    buf = np.empty(size, np.uint8)
    with open(path, "rb", buffering=0) as f:
        got = f.readinto(buf)
    assert got == size
    return buf


def bench_small(work: Path, rounds: int) -> dict[str, float]:
    """10,000 x float32[64]: params.load against TVM's load + .numpy()."""
    path = work / "small.params"
    data = small_tensors()
    params.save(data, path)
    # params.load copies every tensor's bytes into its arena; the array objects of a run of
    # identical headers are made on first use, so "every array" also asks for each one
    contenders = {"mlf load": lambda: params.load(path), "mlf load, every array": lambda: dict(params.load(path))}
    if tvm is not None:
        contenders["tvm load+numpy"] = lambda: _tvm_load(path)
    t = interleaved(contenders, rounds)
    n = len(data)
    out = {"tensors": n, "mlf_us_per_tensor": median(t["mlf load"]) / n * 1e6,
           "mlf_all_us_per_tensor": median(t["mlf load, every array"]) / n * 1e6}
    if tvm is not None:
        out["tvm_us_per_tensor"] = median(t["tvm load+numpy"]) / n * 1e6
        out["ratio"] = ratio_of_medians_per_round(t["mlf load"], t["tvm load+numpy"])
        out["ratio_all"] = ratio_of_medians_per_round(t["mlf load, every array"], t["tvm load+numpy"])
    return out


def bench_lazy(work: Path, rounds: int) -> dict[str, float]:
    """The ResNet-50-like file: params.open + keys against safetensors' safe_open + keys."""
    path, st_path = work / "resnet.params", work / "resnet.safetensors"
    data = resnet50_like()
    params.save(data, path)
    contenders = {"mlf open": lambda: _mlf_open(path), "mlf open, python walker": lambda: _mlf_open_python(path)}
    if safetensors is not None:
        st_save(data, str(st_path))
    for written in (path, st_path):  # on disk before timing: pages still being written back slow reads unevenly
        if written.exists():
            with written.open("rb") as f:
                os.fsync(f.fileno())
        contenders["safetensors open"] = lambda: _st_open(st_path)
    floors: dict[str, str] = {}  # contender -> key of its figures
    bpath = os.fsencode(path)
    for name, fn in floor_walkers(work).items():
        assert fn(bpath) == len(data), name  # it walked every header
        contenders[name] = lambda fn=fn: fn(bpath)
        floors[name] = name
    assert python_floor(path) == list(data)
    contenders["python floor"] = lambda: python_floor(path)
    floors["python floor"] = "python_floor"
    t = interleaved(contenders, rounds * 4)
    out = {"tensors": len(data), "mlf_us": median(t["mlf open"]) * 1e6,
           "walker": "compiled" if accel.walker() is not None else "python (the compiled walker is not built)",
           "mlf_python_us": median(t["mlf open, python walker"]) * 1e6}
    for label, key in floors.items():
        out[f"{key}_us"] = median(t[label]) * 1e6
    if safetensors is not None:
        out["safetensors_us"] = median(t["safetensors open"]) * 1e6
        out["ratio"] = ratio_of_medians_per_round(t["mlf open"], t["safetensors open"])
        out["python_ratio"] = ratio_of_medians_per_round(t["mlf open, python walker"], t["safetensors open"])
        for label, key in floors.items():
            out[f"{key}_ratio"] = ratio_of_medians_per_round(t[label], t["safetensors open"])
    return out


def bench_large(work: Path, rounds: int, mib: int) -> dict[str, float]:
    """One large float32 tensor: params.load against a raw readinto; peak traced memory."""
    path = work / "large.params"
    params.save({"w": np.ones((mib << 20) // 4, np.float32)}, path)
    size = path.stat().st_size
    t = interleaved({"mlf load": lambda: params.load(path), "raw readinto": lambda: _raw_readinto(path, size)}, rounds)
    tracemalloc.start()
    loaded = params.load(path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    del loaded
    return {"mib": mib, "mlf_ms": median(t["mlf load"]) * 1e3, "raw_ms": median(t["raw readinto"]) * 1e3,
            "ratio": ratio_of_medians_per_round(t["mlf load"], t["raw readinto"]),
            "memory_ratio": peak / (mib << 20)}


def bench_full(work: Path, rounds: int, quick: bool) -> None:
    """The per-set figures: load, open, save, dumps against raw I/O, .npz and TVM."""
    sets = {f"one {64 if quick else 256} MiB float32": {"w": np.ones(((64 if quick else 256) << 20) // 4, np.float32)},
            "10,000 x 64 float32": small_tensors(), "ResNet-50-like (float32)": resnet50_like(),
            "mixed dtypes": mixed()}
    for name, data in sets.items():
        _bench_set(name, data, work, rounds)


def _bench_set(name: str, data: dict[str, np.ndarray], work: Path, rounds: int) -> None:
    path, npz, tpath = work / "set.params", work / "set.npz", work / "tvm.params"
    params.save(data, path)
    raw = path.read_bytes()
    c = {"mlf load": lambda: params.load(path), "mlf open": lambda: params.open(path).close(),
         "mlf save": lambda: params.save(data, path), "mlf dumps": lambda: params.dumps(data),
         "raw read": lambda: path.read_bytes()}
    if not name.startswith("mixed"):
        np.savez(npz, **data)
        c["npz load"] = lambda: _npz_load(npz)
        c["npz save"] = lambda: np.savez(npz, **data)
        if tvm is not None:
            tdata = {k: tvm_runtime.tensor(v) for k, v in data.items()}
            c["tvm load+numpy"] = lambda: _tvm_load(path)
            c["tvm save"] = lambda: tvm_runtime.save_param_dict_to_file(tdata, str(tpath))
    t = interleaved(c, rounds)
    if "tvm save" in c:
        assert tpath.read_bytes() == raw, "TVM and mlf-spec bytes differ"
    print(f"\n== {name}: {len(data)} tensors, {len(raw) / 1e6:.1f} MB")
    for k, v in t.items():
        m = median(v)
        print(f"  {k:16s} {m * 1e3:10.3f} ms  {m / len(data) * 1e6:9.3f} us/tensor  {len(raw) / m / 1e9:7.2f} GB/s")
    for a, b in (("mlf load", "tvm load+numpy"), ("mlf save", "tvm save"), ("mlf load", "npz load"),
                 ("mlf load", "raw read")):
        if a in t and b in t:
            print(f"  {a} / {b}: {ratio_of_medians_per_round(t[a], t[b]):.2f}x")


def _npz_load(path: Path) -> dict[str, np.ndarray]:
    with np.load(path) as z:
        return {k: z[k] for k in z.files}


def machine() -> str:
    """A short description of the machine."""
    try:
        load = f", load average {os.getloadavg()[0]:.1f}"
    except OSError:
        load = ""
    return f"{os.cpu_count()} cores ({platform.machine()}{load})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--quick", action="store_true", help="a 64 MiB large tensor and 5 rounds")
    ap.add_argument("--full", action="store_true", help="also the per-set figures (save, dumps, .npz, TVM save)")
    ap.add_argument("--json", help="also write the figures as JSON to this path")
    ap.add_argument("--record", action="store_true", help="write benchmarks/results/params.json and the README table")
    args = ap.parse_args()
    rounds = 5 if args.quick else args.rounds
    mib = 64 if args.quick else 256
    tvm_version = tvm.__version__ if tvm else "not installed"
    st_version = safetensors.__version__ if safetensors else "not installed"
    print(f"mlf-spec .params benchmark; numpy {np.__version__}; apache-tvm {tvm_version}; safetensors {st_version}; "
          f"medians of {rounds} interleaved rounds; {machine()}")
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as tmp:
        work = Path(tmp)
        small = bench_small(work, rounds)
        lazy = bench_lazy(work, rounds)
        large = bench_large(work, rounds, mib)
        if args.full:
            bench_full(work, rounds, args.quick)
    print(f"\n{'measure':<52} {'mlf-spec':>16} {'against':>16} {'ratio':>7}  goal")
    if "ratio" in small:
        print(f"{'load 10,000 x float32[64] (us/tensor) vs TVM':<52} {small['mlf_us_per_tensor']:>16.2f} "
              f"{small['tvm_us_per_tensor']:>16.2f} {small['ratio']:>6.2f}x  <= 0.12x")
        print(f"{'  the same, asking for every array':<52} {small['mlf_all_us_per_tensor']:>16.2f} "
              f"{small['tvm_us_per_tensor']:>16.2f} {small['ratio_all']:>6.2f}x")
    else:
        print(f"{'load 10,000 x float32[64] (us/tensor)':<52} {small['mlf_us_per_tensor']:>16.2f}")
    if "ratio" in lazy:
        print(f"{'lazy open + index, ResNet-50-like (us) vs safetensors':<52} "
              f"{lazy['mlf_us']:>16.0f} {lazy['safetensors_us']:>16.0f} {lazy['ratio']:>6.2f}x  <= 1.0x"
              f"  ({lazy['walker']} walker)")
        print(f"{'  the same, the generated Python walker (fallback)':<52} {lazy['mlf_python_us']:>16.0f} "
              f"{lazy['safetensors_us']:>16.0f} {lazy['python_ratio']:>6.2f}x")
        for key, label in (("walk_pread", "the format's floor: C walker, pread"),
                           ("walk_mmap", "  C walker through one mapping"),
                           ("python_floor", "  Python, names and sizes only, no checks")):
            if f"{key}_ratio" in lazy:
                print(f"{'  ' + label:<52} {lazy[f'{key}_us']:>16.0f} {lazy['safetensors_us']:>16.0f} "
                      f"{lazy[f'{key}_ratio']:>6.2f}x")
    print(f"{f'load one {mib} MiB tensor (ms) vs raw readinto':<52} {large['mlf_ms']:>16.1f} {large['raw_ms']:>16.1f} "
          f"{large['ratio']:>6.2f}x  about 1x")
    print(f"{'  peak memory / tensor bytes':<52} {large['memory_ratio']:>16.3f} {'':>16} {'':>7}  <= 1.1x")
    result = {"small": small, "lazy": lazy, "large": large, "rounds": rounds, "tvm": tvm_version,
              "safetensors": st_version, "numpy": np.__version__, "python": platform.python_version(),
              "machine": machine()}
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    if args.record:
        if tvm is None or safetensors is None:
            raise SystemExit("--record needs apache-tvm and safetensors installed (the README compares with them)")
        record("params", result)
        print(f"recorded; README {'updated' if _update_readme() else 'unchanged'}")
    return 0


def _update_readme() -> bool:
    try:
        return update_readme()
    except (KeyError, FileNotFoundError):  # startup.py has not recorded yet
        return False




if __name__ == "__main__":
    raise SystemExit(main())
