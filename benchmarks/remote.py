"""Benchmark reading a remote tensor cache in place: a cache of at least 1 GB in 30+ shards served
by nginx on loopback (tests/support/nginx.py), each contender in a fresh child process, the
contenders interleaved round by round.

    python benchmarks/remote.py [--gib 1] [--shard-mb 32] [--rounds 3] [--json OUT]

Prints for each contender the median wall time, the bytes it read and its peak memory (VmHWM):

* ``check URL`` against reading the index alone (``curl`` of the index, and the same interpreter
  reading it with fsspec: Python's start-up is in both), goal: <= 1 MB read, <= 2x;
* ``check URL --sample 16``;
* ``check URL --verify`` against ``curl`` of every shard in a loop (one process per shard, as a
  shell loop does), goal: <= 1.1x its time, memory <= 64 MB; and against ``curl | md5sum`` of
  every shard (the same work: --verify checks each shard's md5sum).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _hwm() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def child(argv: list[str]) -> None:
    """Run one contender in this (fresh) process; print a JSON line with its peak memory."""
    import contextlib
    import io

    if argv[0] == "fsspec-index":
        import fsspec

        fs = fsspec.filesystem("http")
        data = fs.cat_file(argv[1])
        print(json.dumps({"hwm": _hwm(), "bytes_read": len(data)}))
        return
    from mlf_spec.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(argv + ["--json"])
    doc = json.loads(out.getvalue().splitlines()[-1])
    print(json.dumps({"hwm": _hwm(), "status": code, "bytes_read": doc["remote"]["bytes_read"],
                      "requests": doc["remote"]["requests"], "findings": len(doc["findings"])}))


def make_cache(folder: Path, gib: float, shard_mb: int) -> int:
    """A cache of ``gib`` GiB of float32 tensors of 8 MiB written by mlf-spec's writer (raw)."""
    import numpy as np

    from mlf_spec import cache

    n = int(gib * 1024 / 8)
    base = np.arange(2 << 20, dtype=np.float32)

    def tensors():
        for i in range(n):
            yield f"layers.{i}.weight", (base + i).reshape(1024, 2048)

    cache.write(folder, tensors(), encode_format="raw", shard_cap_mb=shard_mb)
    return n


def run(cmd: list[str]) -> tuple[float, dict]:
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if r.returncode not in (0, 1):
        raise RuntimeError(f"{cmd[:4]} failed: {r.stderr[-500:]}")
    info: dict = {}
    for line in r.stdout.splitlines()[::-1]:
        if line.startswith("{"):
            info = json.loads(line)
            break
    return dt, info


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gib", type=float, default=1.0)
    ap.add_argument("--shard-mb", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", metavar="OUT")
    ap.add_argument("--child", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    if args.child:
        child(args.child)
        return
    from tests.support import nginx

    curl = shutil.which("curl")
    if curl is None:
        raise SystemExit("curl is needed (apt-get install curl)")
    with tempfile.TemporaryDirectory(prefix="mlf-spec-bench-remote-") as tmp:
        folder = Path(tmp) / "model"
        n = make_cache(folder, args.gib, args.shard_mb)
        shards = sorted(folder.glob("params_shard_*.bin"), key=lambda p: int(p.stem.rsplit("_", 1)[1]))
        total = sum(p.stat().st_size for p in shards)
        index = (folder / "tensor-cache.json").stat().st_size
        print(f"cache: {n} tensors, {len(shards)} shards, {total / 1e9:.2f} GB, index {index:,} bytes")
        me = [sys.executable, str(Path(__file__).resolve()), "--child"]
        with nginx.serve(tmp) as web:
            url = f"{web}/model"
            loop = "; ".join(f"{curl} -s -o /dev/null {url}/{p.name}" for p in shards)
            md5_loop = "; ".join(f"{curl} -s {url}/{p.name} | md5sum > /dev/null" for p in shards)
            contenders = {
                "curl index": [curl, "-s", "-o", "/dev/null", f"{url}/tensor-cache.json"],
                "python+fsspec index": [*me, "fsspec-index", f"{url}/tensor-cache.json"],
                "check": [*me, "check", url],
                "check --sample 16": [*me, "check", url, "--sample", "16"],
                "check --verify": [*me, "check", url, "--verify"],
                "curl every shard": ["sh", "-c", loop],
                "curl | md5sum every shard": ["sh", "-c", md5_loop],
            }
            import random

            times: dict[str, list[float]] = {k: [] for k in contenders}
            infos: dict[str, dict] = {}
            order = list(contenders)
            rnd = random.Random(29)
            for name in order:  # warm-up: page cache, nginx workers
                run(contenders[name])
            for _ in range(args.rounds):
                rnd.shuffle(order)
                for name in order:
                    dt, info = run(contenders[name])
                    times[name].append(dt)
                    if info:
                        infos[name] = info
    med = {k: statistics.median(v) for k, v in times.items()}
    out = {"gib": args.gib, "shards": len(shards), "shard_bytes": total, "index_bytes": index, "rounds": args.rounds,
           "median_s": med, "read": {k: v.get("bytes_read") for k, v in infos.items()},
           "hwm": {k: v.get("hwm") for k, v in infos.items()}}
    for k in contenders:
        read = infos.get(k, {}).get("bytes_read")
        hwm = infos.get(k, {}).get("hwm")
        print(f"  {k:26s} {med[k]:8.3f} s   read {'-' if read is None else f'{read:,}':>15} bytes"
              f"   peak {'-' if hwm is None else f'{hwm / 2**20:.0f} MiB':>8}")
    ratios = {
        "check / curl index": med["check"] / med["curl index"],
        "check / python+fsspec index": med["check"] / med["python+fsspec index"],
        "check --verify / curl every shard": med["check --verify"] / med["curl every shard"],
        "check --verify / curl | md5sum every shard": med["check --verify"] / med["curl | md5sum every shard"],
    }
    for k, v in ratios.items():
        print(f"  {k:44s} {v:6.2f}x")
    out["ratios"] = ratios
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
    os.sys.stdout.flush()


if __name__ == "__main__":
    main()
