"""Benchmark the cost of a large tensor-cache index (issue 32 item 11): time and peak memory of
``cache.open``, ``cache dump``, ``cache dump --json``, ``cache upgrade`` and ``check`` on a cache
of 10^6 records and on one whose index is 250 MiB (under the 256 MiB cap), each command in a
fresh child process under a 6 GiB address-space limit (RLIMIT_AS, as the issue measured).

    python benchmarks/cache_index.py [--records 1000000] [--index-mib 250] [--src TREE]
                                     [--only open,dump,...] [--json OUT] [--record [--add]]

The index has the layout of the first released loaders (``ndarray-cache.json``, so that
``cache upgrade`` has work to do), compact JSON, 1,000 records of 4 bytes per shard. Peak
memory is the child's ``ru_maxrss`` (``wait4``; the parent stays small, the cache is made by
another child). Printed per command: seconds, peak RSS and its ratio to the index's size; the
floor is ``python -c 'import mlf_spec.cache'``, the competitor ``json.load`` of the index (how
TVM's Python loader reads it: a tree of dicts). ``--src TREE`` runs the commands against
another checkout (on PYTHONPATH: e.g. the commit before a change, for a before/after table).
``--record`` writes benchmarks/results/cache_index.json and the figures block of
docs/tensor-cache.md (checked by tests/docs/test_benchmark_figures.py).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIMIT = 6 << 30  # the address-space limit
PER_SHARD = 1000
COMMANDS = ("floor", "json-load", "open", "dump", "dump-json", "upgrade", "check")

_MAKE = r"""
import hashlib, json, sys
from pathlib import Path
d, n, per = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
d.mkdir()
zeros = bytes(4 * per)
md5 = hashlib.md5(zeros).hexdigest()
shards = []
for s in range((n + per - 1) // per):
    k = min(per, n - s * per)
    data = zeros[:4 * k]
    (d / f"params_shard_{s}.bin").write_bytes(data)
    recs = [{"name": f"param_{s * per + j}", "shape": [1], "dtype": "float32", "format": "raw", "nbytes": 4,
             "byteOffset": 4 * j} for j in range(k)]
    shards.append({"dataPath": f"params_shard_{s}.bin", "format": "raw-shard", "nbytes": len(data), "records": recs,
                   "md5sum": md5 if k == per else hashlib.md5(data).hexdigest()})
(d / "ndarray-cache.json").write_text(json.dumps({"metadata": {"ParamSize": n}, "records": shards}))
"""

_OPEN = "import sys\nfrom mlf_spec import cache\nwith cache.open(sys.argv[1]) as lazy:\n    print(len(lazy.tensors))\n"
_FLOOR = "import mlf_spec.cache\n"
# the competitor: how TVM's Python loader reads the index (tvm.contrib.tvmjs.load_tensor_cache)
_JSON = "import json, sys\nwith open(sys.argv[1] + '/ndarray-cache.json') as f:\n    json.load(f)\n"
_CLI = "import sys\nfrom mlf_spec.cli import main\nsys.exit(main(sys.argv[1:]))\n"


def _argv(command: str, folder: Path, out: Path) -> list[str]:
    py = [sys.executable, "-c"]
    return {"floor": py + [_FLOOR], "json-load": py + [_JSON, str(folder)], "open": py + [_OPEN, str(folder)],
            "dump": py + [_CLI, "cache", "dump", str(folder)],
            "dump-json": py + [_CLI, "cache", "dump", "--json", str(folder)],
            "upgrade": py + [_CLI, "cache", "upgrade", str(folder), "-o", str(out), "--force"],
            "check": py + [_CLI, "check", str(folder)]}[command]


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def measure(argv: list[str], env: dict[str, str], timeout: float = 1800) -> dict:
    """Run ``argv`` in a child under the address-space limit: seconds, peak RSS (bytes), exit
    status and the last line of its standard error."""
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err, env=env, preexec_fn=_limit,
                                cwd=tempfile.gettempdir())  # not the checkout: --src must win
        deadline = t0 + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                proc.kill()
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.02)
        seconds = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        lines = err.read().decode("utf-8", "replace").strip().splitlines()
    return {"seconds": seconds, "peak_rss": usage.ru_maxrss * 1024, "status": proc.returncode,
            "stderr": lines[-1][:200] if lines else ""}


def _records_for(mib: float) -> int:
    """Records whose compact index is about ``mib`` MiB (about 108 bytes per record)."""
    return int(mib * (1 << 20) / 108.5)


def run(records: list[int], only: list[str], src: str | None) -> list[dict]:
    """Make each cache and measure every command on it; one row per (cache, command)."""
    env = dict(os.environ)
    if src:
        env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    rows = []
    with tempfile.TemporaryDirectory(prefix="mlf-cache-index-") as t:
        for n in records:
            folder = Path(t) / f"c{n}"
            subprocess.run([sys.executable, "-c", _MAKE, str(folder), str(n), str(PER_SHARD)], check=True)
            size = (folder / "ndarray-cache.json").stat().st_size
            print(f"{n:,} records, index {size / (1 << 20):.1f} MiB, {(n + PER_SHARD - 1) // PER_SHARD:,} shards:",
                  flush=True)
            for command in only:
                out = Path(t) / "out"
                r = measure(_argv(command, folder, out), env)
                shutil.rmtree(out, ignore_errors=True)
                row = {"records": n, "index_bytes": size, "command": command, **r,
                       "ratio": r["peak_rss"] / size}
                rows.append(row)
                note = "" if r["status"] == 0 else f"  exit {r['status']}: {r['stderr']}"
                print(f"  {command:10s} {r['seconds']:7.1f} s  {r['peak_rss'] / (1 << 20):7.0f} MiB  "
                      f"{row['ratio']:5.2f}x the index{note}", flush=True)
            shutil.rmtree(folder)
    return rows


DOCS = ROOT / "docs" / "tensor-cache.md"
BEGIN = "<!-- figures from benchmarks/results/cache_index.json (python benchmarks/cache_index.py --record) -->"
END = "<!-- end of cache index figures -->"
_NAMES = {"floor": "`python -c 'import mlf_spec.cache'` (the floor)",
          "json-load": "`json.load` of the index (as TVM's Python loader reads it)", "open": "`cache.open` (strict)",
          "dump": "`mlf-spec cache dump`", "dump-json": "`mlf-spec cache dump --json`",
          "upgrade": "`mlf-spec cache upgrade` (1 to 2)", "check": "`mlf-spec check`"}


def docs_block(result: dict) -> str:
    """The figures block of docs/tensor-cache.md, from a recorded run."""
    sizes = sorted({(r["records"], r["index_bytes"]) for r in result["rows"]})
    head = "| command | " + " | ".join(f"{n:,} records ({b / (1 << 20):.0f} MiB index)" for n, b in sizes) + " |"
    lines = [BEGIN, "", head, "|---|" + "---:|" * len(sizes)]
    for command in COMMANDS:
        cells = []
        for n, _ in sizes:
            r = next((r for r in result["rows"] if r["records"] == n and r["command"] == command), None)
            if r is None:
                cells.append("not measured")
                continue
            peak = r["peak_rss"] / (1 << 20)
            cells.append(f"{r['seconds']:.1f} s, {peak:,.0f} MiB ({r['ratio']:.2f}x)" if r["status"] == 0
                         else f"exit {r['status']}")
        if any(c != "not measured" for c in cells):
            lines.append(f"| {_NAMES[command]} | " + " | ".join(cells) + " |")
    lines += ["", f"Peak resident memory of each command in a fresh process (in brackets: over the index's size), "
              f"one run; Python {result['python']}." + (f" {result['note']}" if result.get("note") else ""), "", END]
    return "\n".join(lines)


def update_docs(result: dict) -> bool:
    """Put the figures block in docs/tensor-cache.md (between its markers); whether it changed."""
    text = DOCS.read_text()
    start, end = text.index(BEGIN), text.index(END) + len(END)
    new = text[:start] + docs_block(result) + text[end:]
    if new != text:
        DOCS.write_text(new)
    return new != text


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--index-mib", type=float, default=250)
    ap.add_argument("--src", metavar="TREE", help="run the commands against this checkout (PYTHONPATH)")
    ap.add_argument("--only", default=",".join(COMMANDS), help="comma-separated commands: " + ",".join(COMMANDS))
    ap.add_argument("--json", metavar="OUT")
    ap.add_argument("--record", action="store_true", help="write benchmarks/results/cache_index.json and the docs")
    ap.add_argument("--add", action="store_true", help="with --record: add these rows to the recorded ones")
    ap.add_argument("--note", help="a sentence for the docs (e.g. the machine's load)")
    args = ap.parse_args()
    sizes = [n for n in (args.records, _records_for(args.index_mib) if args.index_mib else 0) if n]
    rows = run(sizes, [c for c in args.only.split(",") if c], args.src)
    result = {"rows": rows, "python": sys.version.split()[0], "limit": LIMIT, **({"note": args.note} if args.note else {})}
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    if args.record:
        sys.path.insert(0, str(ROOT / "benchmarks"))
        from _bench import record

        if args.add:
            old = json.loads((ROOT / "benchmarks" / "results" / "cache_index.json").read_text())
            ran = {(r["records"], r["command"]) for r in rows}
            result["rows"] = [r for r in old["rows"] if (r["records"], r["command"]) not in ran] + rows
            if not args.note and old.get("note"):
                result["note"] = old["note"]  # the recorded rows keep what was said of them
        result["rows"].sort(key=lambda r: (r["records"], COMMANDS.index(r["command"])))
        record("cache_index", result)
        print(f"recorded; docs/tensor-cache.md {'updated' if update_docs(result) else 'unchanged'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
