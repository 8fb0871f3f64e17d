"""Benchmark loading a tensor cache: mlf-spec's ``cache.load`` against apache-tvm's
``load_tensor_cache`` (+ ``.numpy()`` of every tensor), and mlf-spec's lazy open.

    python benchmarks/cache.py [--gib 1] [--repeat 3] [--bf16] [--json OUT]

Each load runs in a fresh child process, the contenders interleaved round by round, on the
same folder (in the page cache after the first round). Prints the median seconds, the
ratio mlf-spec / TVM (target <= 0.6) and each contender's peak memory growth (VmHWM
after the load minus before it) over the tensor bytes (target <= 1.1). Then the lazy open
of caches of 1,000 and 10,000 records: microseconds per record (O(records): the per-record
cost stays flat).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _hwm() -> int:
    """The process's peak resident set in bytes (VmHWM: per address space, so unlike
    ru_maxrss it does not carry the parent's peak over exec)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _child(kind: str, folder: str) -> None:
    import gc

    if kind == "tvm":
        import tvm
        from tvm.contrib import tvmjs
    else:
        from mlf_spec import cache
    gc.collect()
    before = _hwm()
    t0 = time.perf_counter()
    if kind == "tvm":
        arrays, _ = tvmjs.load_tensor_cache(folder, tvm.cpu())
        out = {k: v.numpy() for k, v in arrays.items()}
        del arrays
    else:
        out, _ = cache.load(folder)
    seconds = time.perf_counter() - t0
    after = _hwm()
    nbytes = sum(a.nbytes for a in out.values())
    print(json.dumps({"seconds": seconds, "peak_growth": after - before, "nbytes": nbytes}))


def _run(kind: str, folder: Path) -> dict:
    r = subprocess.run([sys.executable, __file__, "--child", kind, str(folder)], capture_output=True, text=True,
                       check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def _make(folder: Path, gib: float, bf16: bool) -> int:
    from mlf_spec import cache

    n = 64
    per = int(gib * (1 << 30)) // n // 4
    rng = np.random.default_rng(0)
    base = rng.standard_normal(per, dtype=np.float32)

    def gen():  # one 16 MiB tensor at a time: the writer streams each shard
        for i in range(n):
            yield f"param_{i}", base + np.float32(i)

    cache.write(folder, gen(), encode_format="f32-to-bf16" if bf16 else "raw", shard_cap_mb=256)
    return n * per * 4


def _open_cost(tmp: Path) -> list[tuple[int, float]]:
    from mlf_spec import cache

    out = []
    for n in (1_000, 10_000):
        d = tmp / f"small{n}"
        cache.write(d, ((f"p{i}", np.full(4, i, np.float32)) for i in range(n)), encode_format="raw",
                    shard_cap_mb=1)
        times = []
        for _ in range(5):
            t0 = time.perf_counter()
            with cache.open(d) as lazy:
                assert len(lazy.tensors) == n
            times.append(time.perf_counter() - t0)
        out.append((n, statistics.median(times)))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--child", nargs=2, metavar=("KIND", "DIR"), help=argparse.SUPPRESS)
    ap.add_argument("--gib", type=float, default=1.0, help="tensor bytes in GiB (default 1)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--bf16", action="store_true", help="store the float32 tensors f32-to-bf16 (decoded on load)")
    ap.add_argument("--json", metavar="OUT")
    args = ap.parse_args()
    if args.child:
        _child(*args.child)
        return 0
    try:
        import tvm  # noqa: F401
        contenders = ["mlf-spec", "tvm"]
    except ImportError:
        contenders = ["mlf-spec"]
    with tempfile.TemporaryDirectory(prefix="mlf-cache-bench-") as t:
        tmp = Path(t)
        folder = tmp / "cache"
        nbytes = _make(folder, args.gib, args.bf16)
        shards = len([p for p in os.listdir(folder) if p.endswith(".bin")])
        runs: dict[str, list[dict]] = {c: [] for c in contenders}
        for _ in range(args.repeat):
            for c in contenders:
                runs[c].append(_run("mlf" if c == "mlf-spec" else "tvm", folder))
        result = {"tensor_bytes": nbytes, "shards": shards, "encoding": "f32-to-bf16" if args.bf16 else "raw"}
        print(f"load {nbytes / (1 << 30):.2f} GiB of float32 ({result['encoding']}, 64 tensors, {shards} shards), "
              f"median of {args.repeat} interleaved rounds, each in a fresh process:")
        for c in contenders:
            sec = statistics.median(r["seconds"] for r in runs[c])
            mem = max(r["peak_growth"] for r in runs[c]) / nbytes
            result[c] = {"seconds": sec, "peak_memory_ratio": mem}
            print(f"  {c:9s} {sec:7.3f} s   peak memory growth {mem:5.2f}x the tensor bytes")
        if "tvm" in result:
            ratio = result["mlf-spec"]["seconds"] / result["tvm"]["seconds"]
            result["time_ratio_vs_tvm"] = ratio
            print(f"  mlf-spec / TVM load_tensor_cache + .numpy(): {ratio:.2f}x (target <= 0.6)")
        print(f"  mlf-spec peak memory: {result['mlf-spec']['peak_memory_ratio']:.2f}x the tensor bytes (target <= 1.1)")
        cost = _open_cost(tmp)
        result["lazy_open"] = [{"records": n, "seconds": s, "us_per_record": s / n * 1e6} for n, s in cost]
        print("lazy open: " + ", ".join(f"{n} records {s * 1e3:.1f} ms ({s / n * 1e6:.1f} us/record)" for n, s in cost)
              + f"; 10x the records -> {cost[1][1] / cost[0][1]:.1f}x the time")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
