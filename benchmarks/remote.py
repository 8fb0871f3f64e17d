"""Benchmark reading a remote tensor cache in place: a cache of at least 1 GB in 30+ shards served
by nginx on loopback (tests/support/nginx.py), each contender in a fresh child process, the
contenders interleaved round by round.

    python benchmarks/remote.py [--gib 1] [--shard-mb 32] [--rounds 3] [--json OUT]

Prints for each contender the median wall time, its CPU time (user + system, with the children
it waited for), the bytes it read and its peak memory (VmHWM):

* ``check URL`` against reading the index alone (``curl`` of the index, and the same interpreter
  reading it with fsspec, and with ``http.client``, the client check uses for HTTP: Python's
  start-up is in both), goal: <= 1 MB read, <= 2x;
* ``check URL --sample 16``;
* ``check URL --verify`` against ``curl`` of every shard in a loop (one process per shard, as a
  shell loop does), goal: <= 1.1x its time, memory <= 64 MB; and against ``curl | md5sum`` of
  every shard (the same work: --verify checks each shard's md5sum).

``curl`` hashes nothing, and --verify must MD5 every byte: its floor on this machine is measured
too. Hashing alone (the shard files already in the page cache, no network, hashlib's MD5, which
is OpenSSL's, with as many threads as --verify streams) is a bound --verify cannot beat; with the
transfer on the same cores (curl's CPU time plus the hashing's, over the cores the run got) an
estimate of the floor. ``cat files | md5sum`` (coreutils' MD5, one core) is shown beside. The
output says whether 1.1x is reachable here and the figure reached. Ratios are medians of the
per-round ratios. Python contenders run with a bytecode cache (written in the warm-up round, in
a temporary PYTHONPYCACHEPREFIX) as an installed package has one.
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

    if argv[0] == "md5-files":  # the hashing floor: hashlib's MD5 of local files, N threads
        import concurrent.futures
        import hashlib

        def md5(path: str) -> str:
            h, buf = hashlib.md5(usedforsecurity=False), bytearray(1 << 20)
            view = memoryview(buf)
            with open(path, "rb", buffering=0) as f:
                while n := f.readinto(buf):
                    h.update(view[:n])
            return h.hexdigest()

        with concurrent.futures.ThreadPoolExecutor(int(argv[1])) as pool:
            list(pool.map(md5, argv[2:]))
        print(json.dumps({"hwm": _hwm()}))
        return
    if argv[0] == "http.client-index":  # the client check uses for HTTP, alone
        import http.client
        import urllib.parse

        where = urllib.parse.urlsplit(argv[1])
        conn = http.client.HTTPConnection(where.hostname, where.port)
        conn.request("GET", where.path)
        data = conn.getresponse().read()
        conn.close()
        print(json.dumps({"hwm": _hwm(), "bytes_read": len(data)}))
        return
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


def _cpu_children() -> float:
    import resource

    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def run(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float, dict]:
    """Wall time, CPU time (user + system of the process and the children it waited for) and
    the JSON line the contender printed."""
    cpu0 = _cpu_children()
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    dt = time.perf_counter() - t0
    cpu = _cpu_children() - cpu0
    if r.returncode not in (0, 1):
        raise RuntimeError(f"{cmd[:4]} failed: {r.stderr[-500:]}")
    info: dict = {}
    for line in r.stdout.splitlines()[::-1]:
        if line.startswith("{"):
            info = json.loads(line)
            break
    return dt, cpu, info


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _per_round(times: dict[str, list[float]], a: str, b: str) -> float:
    return statistics.median(x / y for x, y in zip(times[a], times[b]))


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
    from mlf_spec.remote.verify import JOBS
    from tests.support import nginx

    curl = shutil.which("curl")
    if curl is None:
        raise SystemExit("curl is needed (apt-get install curl)")
    cores = _cores()
    with tempfile.TemporaryDirectory(prefix="mlf-spec-bench-remote-") as tmp:
        folder = Path(tmp) / "model"
        n = make_cache(folder, args.gib, args.shard_mb)
        shards = sorted(folder.glob("params_shard_*.bin"), key=lambda p: int(p.stem.rsplit("_", 1)[1]))
        total = sum(p.stat().st_size for p in shards)
        index = (folder / "tensor-cache.json").stat().st_size
        print(f"cache: {n} tensors, {len(shards)} shards, {total / 1e9:.2f} GB, index {index:,} bytes; "
              f"{cores} cores, --verify streams {JOBS} shards at once")
        me = [sys.executable, str(Path(__file__).resolve()), "--child"]
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pycache")
        with nginx.serve(tmp) as web:
            url = f"{web}/model"
            loop = "; ".join(f"{curl} -s -o /dev/null {url}/{p.name}" for p in shards)
            md5_loop = "; ".join(f"{curl} -s {url}/{p.name} | md5sum > /dev/null" for p in shards)
            files = [str(p) for p in shards]
            contenders = {
                "curl index": [curl, "-s", "-o", "/dev/null", f"{url}/tensor-cache.json"],
                "python+fsspec index": [*me, "fsspec-index", f"{url}/tensor-cache.json"],
                "python+http.client index": [*me, "http.client-index", f"{url}/tensor-cache.json"],
                "check": [*me, "check", url],
                "check --sample 16": [*me, "check", url, "--sample", "16"],
                "check --verify": [*me, "check", url, "--verify"],
                "curl every shard": ["sh", "-c", loop],
                "curl | md5sum every shard": ["sh", "-c", md5_loop],
                f"md5 of the files ({JOBS} threads)": [*me, "md5-files", str(JOBS), *files],
                "cat files | md5sum": ["sh", "-c", "cat " + " ".join(files) + " | md5sum > /dev/null"],
            }
            import random

            times: dict[str, list[float]] = {k: [] for k in contenders}
            cpus: dict[str, list[float]] = {k: [] for k in contenders}
            infos: dict[str, dict] = {}
            order = list(contenders)
            rnd = random.Random(29)
            for name in order:  # warm-up: page cache, nginx workers, the bytecode cache
                run(contenders[name], env)
            for _ in range(args.rounds):
                rnd.shuffle(order)
                for name in order:
                    dt, cpu, info = run(contenders[name], env)
                    times[name].append(dt)
                    cpus[name].append(cpu)
                    if info:
                        infos[name] = info
    med = {k: statistics.median(v) for k, v in times.items()}
    cpu = {k: statistics.median(v) for k, v in cpus.items()}
    out = {"gib": args.gib, "shards": len(shards), "shard_bytes": total, "index_bytes": index, "rounds": args.rounds,
           "cores": cores, "streams": JOBS, "median_s": med, "cpu_s": cpu,
           "read": {k: v.get("bytes_read") for k, v in infos.items()},
           "hwm": {k: v.get("hwm") for k, v in infos.items()}}
    for k in contenders:
        read = infos.get(k, {}).get("bytes_read")
        hwm = infos.get(k, {}).get("hwm")
        print(f"  {k:28s} {med[k]:7.3f} s  cpu {cpu[k]:6.2f} s   read {'-' if read is None else f'{read:,}':>15} "
              f"bytes   peak {'-' if hwm is None else f'{hwm / 2**20:.0f} MiB':>8}")
    hashing = f"md5 of the files ({JOBS} threads)"
    ratios = {
        "check / curl index": _per_round(times, "check", "curl index"),
        "check / python+fsspec index": _per_round(times, "check", "python+fsspec index"),
        "check / python+http.client index": _per_round(times, "check", "python+http.client index"),
        "check --verify / curl every shard": _per_round(times, "check --verify", "curl every shard"),
        "check --verify / curl | md5sum every shard": _per_round(times, "check --verify", "curl | md5sum every shard"),
        "check --verify / cat files | md5sum": _per_round(times, "check --verify", "cat files | md5sum"),
        f"{hashing} / curl every shard": _per_round(times, hashing, "curl every shard"),
    }
    for k, v in ratios.items():
        print(f"  {k:48s} {v:6.2f}x")
    # the least --verify can take here. A hard bound: it must MD5 every byte, and hashing alone (the
    # files already in the page cache, no network, as many threads as --verify streams) takes
    # med[hashing]. An estimate: hashing and the transfer (curl's CPU) share the cores, as many as
    # the run got (the hashing contender's CPU over its wall time: fewer than `cores` on a busy machine)
    got = max(min(cores, cpu[hashing] / med[hashing]), 1e-3)
    shared = (cpu[hashing] + cpu["curl every shard"]) / got
    floor = max(med["curl every shard"], med[hashing], shared)
    curl_s = med["curl every shard"]
    reached = ratios["check --verify / curl every shard"]
    peak = (infos.get("check --verify", {}).get("hwm") or 0) / 1e6
    hard = med[hashing] / curl_s
    verdict = "not reachable" if max(hard, floor / curl_s) > 1.1 else "reachable"
    print(f"  floor of --verify: hashing alone takes {med[hashing]:.3f} s = {hard:.2f}x curl every shard (it cannot "
          f"take less); with the transfer on the same {got:.2f} cores the run got ({cpu[hashing]:.2f} + "
          f"{cpu['curl every shard']:.2f} s of CPU) about {shared:.3f} s = {shared / curl_s:.2f}x")
    print(f"  1.1x curl is {verdict} here; --verify reached {reached:.2f}x ({med['check --verify'] / floor:.2f}x "
          f"the floor), peak {peak:.0f} MB (goal 64 MB)")
    out["ratios"] = ratios
    out["floor"] = {"seconds": floor, "hashing_alone_ratio": hard, "shared_cores": got, "shared_s": shared,
                    "ratio_to_curl": floor / curl_s, "reachable": verdict == "reachable"}
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
