"""Benchmark loading a tensor cache: mlf-spec's ``cache.load`` against apache-tvm's
``load_tensor_cache`` (+ ``.numpy()`` of every tensor) and against the physical anchor, a raw
``readinto`` of the same shard bytes; and mlf-spec's lazy open against a bare ``json.load`` of
the same index.

    python benchmarks/cache.py [--gib 1] [--repeat 3] [--bf16] [--json OUT] [--record]

Each load runs in a fresh child process, the contenders interleaved round by round, on the
same folder (in the page cache after the first round). Prints the median seconds, the
ratios mlf-spec / raw readinto (target <= 1.1) and mlf-spec / TVM, and each contender's peak
memory growth (VmHWM after the load minus before it) over the tensor bytes (target <= 1.1).
Then the lazy open (strict: every structural rule checked) of caches of 1,000 and 10,000
records against ``json.load`` of their index, interleaved rounds in this process (target
<= 1.5x). ``--record`` writes benchmarks/results/cache.json and the figures block of
docs/tensor-cache.md.
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
    elif kind == "mlf":
        from mlf_spec import cache
    gc.collect()
    before = _hwm()
    t0 = time.perf_counter()
    if kind == "tvm":
        arrays, _ = tvmjs.load_tensor_cache(folder, tvm.cpu())
        out = {k: v.numpy() for k, v in arrays.items()}
        del arrays
    elif kind == "readinto":  # the floor: every shard's bytes read into new memory, nothing else
        out = {}
        for name in sorted(os.listdir(folder)):
            if name.endswith(".bin"):
                with open(os.path.join(folder, name), "rb", buffering=0) as f:
                    buf = np.empty(os.fstat(f.fileno()).st_size, dtype=np.uint8)
                    f.readinto(memoryview(buf))
                out[name] = buf
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


def _open_cost(tmp: Path, rounds: int = 9) -> list[dict]:
    """The strict lazy open of caches of 1,000 and 10,000 records against json.load of their
    index (interleaved rounds; medians and the median per-round ratio)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from _bench import interleaved, median, ratio_of_medians_per_round

    from mlf_spec import cache

    out = []
    for n in (1_000, 10_000):
        d = tmp / f"small{n}"
        cache.write(d, ((f"p{i}", np.full(4, i, np.float32)) for i in range(n)), encode_format="raw",
                    shard_cap_mb=1)

        def lazy_open(d: Path = d, n: int = n) -> None:
            with cache.open(d) as lazy:
                assert len(lazy.tensors) == n

        def json_load(d: Path = d) -> None:
            with open(d / "tensor-cache.json", "rb") as f:
                json.load(f)

        times = interleaved({"open": lazy_open, "json": json_load}, rounds)
        out.append({"records": n, "seconds": median(times["open"]), "json_seconds": median(times["json"]),
                    "us_per_record": median(times["open"]) / n * 1e6,
                    "ratio_vs_json": ratio_of_medians_per_round(times["open"], times["json"])})
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--child", nargs=2, metavar=("KIND", "DIR"), help=argparse.SUPPRESS)
    ap.add_argument("--gib", type=float, default=1.0, help="tensor bytes in GiB (default 1)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--bf16", action="store_true", help="store the float32 tensors f32-to-bf16 (decoded on load)")
    ap.add_argument("--json", metavar="OUT")
    ap.add_argument("--record", action="store_true", help="write benchmarks/results/cache.json and the docs figures")
    args = ap.parse_args()
    if args.child:
        _child(*args.child)
        return 0
    try:
        import tvm  # noqa: F401
        contenders = ["mlf-spec", "readinto", "tvm"]
    except ImportError:
        contenders = ["mlf-spec", "readinto"]
    with tempfile.TemporaryDirectory(prefix="mlf-cache-bench-") as t:
        tmp = Path(t)
        folder = tmp / "cache"
        nbytes = _make(folder, args.gib, args.bf16)
        shards = len([p for p in os.listdir(folder) if p.endswith(".bin")])
        runs: dict[str, list[dict]] = {c: [] for c in contenders}
        for _ in range(args.repeat):
            for c in contenders:
                runs[c].append(_run({"mlf-spec": "mlf"}.get(c, c), folder))
        result = {"tensor_bytes": nbytes, "shards": shards, "encoding": "f32-to-bf16" if args.bf16 else "raw"}
        print(f"load {nbytes / (1 << 30):.2f} GiB of float32 ({result['encoding']}, 64 tensors, {shards} shards), "
              f"median of {args.repeat} interleaved rounds, each in a fresh process:")
        for c in contenders:
            sec = statistics.median(r["seconds"] for r in runs[c])
            mem = max(r["peak_growth"] for r in runs[c]) / nbytes
            result[c] = {"seconds": sec, "peak_memory_ratio": mem}
            print(f"  {c:9s} {sec:7.3f} s   peak memory growth {mem:5.2f}x the tensor bytes")
        ratio = statistics.median(a["seconds"] / b["seconds"] for a, b in zip(runs["mlf-spec"], runs["readinto"]))
        result["time_ratio_vs_readinto"] = ratio
        print(f"  mlf-spec / raw readinto of the shards: {ratio:.2f}x (target <= 1.1)")
        if "tvm" in result:
            ratio = statistics.median(a["seconds"] / b["seconds"] for a, b in zip(runs["mlf-spec"], runs["tvm"]))
            result["time_ratio_vs_tvm"] = ratio
            import tvm

            result["tvm_version"] = tvm.__version__
            print(f"  mlf-spec / TVM load_tensor_cache + .numpy(): {ratio:.2f}x (target <= 0.6)")
        print(f"  mlf-spec peak memory: {result['mlf-spec']['peak_memory_ratio']:.2f}x the tensor bytes (target <= 1.1)")
        cost = _open_cost(tmp)
        result["lazy_open"] = cost
        print("lazy open (strict) vs json.load of the index: " + ", ".join(
            f"{c['records']} records {c['seconds'] * 1e3:.1f} ms ({c['us_per_record']:.1f} us/record, "
            f"{c['ratio_vs_json']:.2f}x json.load)" for c in cost) + " (target <= 1.5x)")
    result["rounds"] = args.repeat
    result["python"] = sys.version.split()[0]
    result["numpy"] = np.__version__
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    if args.record:
        sys.path.insert(0, str(ROOT / "benchmarks"))
        from _bench import record

        if "tvm" not in result:
            raise SystemExit("--record needs apache-tvm installed (the docs compare with it)")
        record("cache", result)
        print(f"recorded; docs/tensor-cache.md {'updated' if update_docs(result) else 'unchanged'}")
    return 0


DOCS = ROOT / "docs" / "tensor-cache.md"
BEGIN = "<!-- figures from benchmarks/results/cache.json (python benchmarks/cache.py --record) -->"
END = "<!-- end of cache figures -->"


def docs_block(result: dict) -> str:
    """The figures block of docs/tensor-cache.md, from a recorded run."""
    gib = result["tensor_bytes"] / (1 << 30)
    m = result["mlf-spec"]
    rows = [BEGIN, "", "| measure | mlf-spec | against | ratio | goal |", "|---|---:|---|---:|---|",
            f"| `cache.load` of {gib:.2f} GiB float32 ({result['encoding']}, {result['shards']} shards) | "
            f"{m['seconds']:.3f} s, {m['peak_memory_ratio']:.2f}x the tensor bytes in memory | raw `readinto` of the "
            f"shards ({result['readinto']['seconds']:.3f} s) | {result['time_ratio_vs_readinto']:.2f}x | <= 1.1x |",
            f"| the same | | TVM {result['tvm_version']} `load_tensor_cache` + `.numpy()` "
            f"({result['tvm']['seconds']:.3f} s) | {result['time_ratio_vs_tvm']:.2f}x | |"]
    for c in result["lazy_open"]:
        rows.append(f"| strict lazy open of {c['records']:,} records | {c['seconds'] * 1e3:.1f} ms "
                    f"({c['us_per_record']:.2f} us/record) | `json.load` of the index ({c['json_seconds'] * 1e3:.1f} ms) | "
                    f"{c['ratio_vs_json']:.2f}x | <= 1.5x |")
    rows += ["", f"Medians of {result['rounds']} interleaved rounds (loads: each in a fresh process); Python "
             f"{result['python']}, NumPy {result['numpy']}.", "", END]
    return "\n".join(rows)


def update_docs(result: dict) -> bool:
    """Put the figures block in docs/tensor-cache.md (between its markers); whether it changed."""
    text = DOCS.read_text()
    start, end = text.index(BEGIN), text.index(END) + len(END)
    new = text[:start] + docs_block(result) + text[end:]
    if new != text:
        DOCS.write_text(new)
    return new != text


if __name__ == "__main__":
    sys.exit(main())
