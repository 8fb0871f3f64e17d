"""Benchmark the conformance runner: cases per second by how the testee is driven.

    python benchmarks/conformance.py [--one-shot-cases 40] [--json OUT]

Rows: the reference adapter in process (the whole suite), the reference testee over the
persistent protocol (`mlf-spec conformance testee serve`, -j 1 and -j 2), the same one-shot
(a process per case, on a sample), the tvm adapter (forked child per request) and the time
to build the suite from the spec; wall seconds and CPU seconds (this process and its children:
the cost of the run whatever else the machine does). Targets: a full run against an in-process
adapter takes seconds, not minutes (issue 8), under 2 s (issue 16).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mlf_spec.conformance import adapters, runner, testee, vectors  # noqa: E402
from mlf_spec.conformance.suite import build_all  # noqa: E402

REFERENCE = [sys.executable, "-m", "mlf_spec", "conformance", "testee"]


def cpu_seconds() -> float:
    """CPU time of this process and of its finished children: what a run costs whatever else
    the machine is doing (on a shared machine the wall time mostly measures the others)."""
    import resource

    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + kids.ru_utime + kids.ru_stime


def timed_run(t: testee.Testee, cases: list, jobs: int = 1) -> dict:
    t0, c0 = time.perf_counter(), cpu_seconds()
    result = runner.run(t, cases, jobs=jobs, progress=False)
    seconds, cpu = time.perf_counter() - t0, cpu_seconds() - c0
    ran = sum(1 for r in result.results if r["outcome"] != "skip")
    return {"cases": ran, "seconds": round(seconds, 2), "cpu_seconds": round(cpu, 2),
            "cases_per_second": round(ran / seconds, 1), "cases_per_cpu_second": round(ran / max(cpu, 1e-9), 1),
            "unexpected": sum(result.counts[o] for o in ("fail", "error", "xpass"))}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--one-shot-cases", type=int, default=40, help="sample size for the one-shot rows")
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args()
    rows: dict[str, dict] = {}
    t0 = time.perf_counter()
    built = build_all()
    rows["build the suite from the spec"] = {"cases": len(built), "seconds": round(time.perf_counter() - t0, 2)}
    cases = vectors.load_suite()
    sample = cases[:: max(1, len(cases) // args.one_shot_cases)][: args.one_shot_cases]
    rows["in-process adapter (mlf-spec)"] = timed_run(testee.InProcess(adapters.load("mlf-spec")), cases)
    rows["persistent testee, -j 1"] = timed_run(testee.Persistent(REFERENCE), cases)
    rows["persistent testee, -j 2"] = timed_run(testee.Persistent(REFERENCE), cases, jobs=2)
    rows["one-shot testee, -j 1 (sample)"] = timed_run(testee.OneShot(REFERENCE), sample)
    rows["one-shot testee, -j 2 (sample)"] = timed_run(testee.OneShot(REFERENCE), sample, jobs=2)
    try:
        import tvm  # noqa: F401
    except ImportError:
        pass
    else:
        tvm_cmd = [sys.executable, "-m", "mlf_spec.conformance.adapters", "tvm"]
        params = [c for c in cases if c.format == "params"]
        rows["tvm adapter, persistent (fork per request), -j 2"] = timed_run(testee.Persistent(tvm_cmd), params, 2)
    width = max(len(k) for k in rows)
    for name, r in rows.items():
        rate = f"{r['cases_per_second']:>8.1f} cases/s" if "cases_per_second" in r else " " * 16
        cpu = f"  {r['cpu_seconds']:>7.2f} s CPU ({r['cases_per_cpu_second']:.0f} cases per CPU second)" \
            if "cpu_seconds" in r else ""
        print(f"{name:<{width}}  {r['cases']:>5} cases  {r['seconds']:>7.2f} s  {rate}{cpu}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
