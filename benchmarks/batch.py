"""Checking a folder of archives in one command against a shell loop of single calls.

    python benchmarks/batch.py [--count 1000] [--jobs 2] [--repeat 3] [--json OUT]

Writes ``--count`` small MLF archives (v7, one graph module, ~30 kB each, all different)
into a temporary folder, then times, as whole processes:

* ``mlf-spec check DIR -j JOBS`` (one process, a pool of JOBS workers);
* ``mlf-spec check DIR`` (one process, one worker);
* ``for f in DIR/*.tar; do mlf-spec check "$f"; done`` in ``sh`` (one process per file),

and prints each time, the per-archive cost and the ratio of the loop to the batch
(issue 10: a CI job that checks a folder should not pay the start-up per file). The
batch commands are run ``--repeat`` times (median); the loop once (it is the slow one).
Bytecode is cached for every module (``PYTHONPYCACHEPREFIX`` in a private folder), as
after a wheel install.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _artifacts import small_archive  # noqa: E402
from startup import _mlf_spec_command  # noqa: E402


def _time(cmd: list[str], env: dict[str, str], *, expect: int = 0) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    dt = time.perf_counter() - t0
    if proc.returncode != expect:
        raise SystemExit(f"{' '.join(cmd)[:200]} exited {proc.returncode}: {proc.stderr.decode()[-500:]}")
    return dt


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", help="write the figures to this file")
    args = ap.parse_args()
    cli = _mlf_spec_command()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "archives"
        folder.mkdir()
        for i in range(args.count):
            (folder / f"model{i:05d}.tar").write_bytes(small_archive(f"net{i % 7}", seed=i))
        env = dict(os.environ)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pycache")
        _time([*cli, "check", str(folder / "model00000.tar")], env)  # warm-up: bytecode, page cache
        pooled = statistics.median(_time([*cli, "check", str(folder), "-j", str(args.jobs)], env)
                                   for _ in range(args.repeat))
        single = statistics.median(_time([*cli, "check", str(folder)], env) for _ in range(args.repeat))
        script = f'for f in "$1"/*.tar; do {" ".join(cli)} check "$f" >/dev/null || exit 1; done'
        loop = _time(["sh", "-c", script, "sh", str(folder)], env)
    n = args.count
    print(f"{n} archives of ~30 kB; Python {sys.version.split()[0]}; {os.cpu_count()} CPUs")
    print(f"  mlf-spec check DIR -j {args.jobs}   {pooled:8.2f} s  {pooled / n * 1e3:7.2f} ms/archive")
    print(f"  mlf-spec check DIR        {single:8.2f} s  {single / n * 1e3:7.2f} ms/archive")
    print(f"  shell loop, one call each {loop:8.2f} s  {loop / n * 1e3:7.2f} ms/archive")
    print(f"  loop / batch -j {args.jobs}: {loop / pooled:.1f}x;  loop / batch -j 1: {loop / single:.1f}x")
    if args.json:
        Path(args.json).write_text(json.dumps({"count": n, "jobs": args.jobs, "batch_pooled_s": pooled,
                                               "batch_single_s": single, "loop_s": loop,
                                               "ratio_loop_to_pooled": loop / pooled}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
