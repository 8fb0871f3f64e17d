"""Mutation scores of the independent C readers against the conformance vectors.

    python benchmarks/mutation.py [--generate N] [--generate-budget S] [--json OUT]

For each reader in tests/support/independent/ (.params, the tvm-ffi blob, the legacy blob; each with its
equivalents file): mutants, equivalents, killed by the vectors alone, the survivors, and the
seconds the harness took (one ASan + UBSan build, baseline, every mutant in persistent mode).
With --generate N (default 300): N generated cases against the survivors of the vectors (the
--generate score), and the first N cases of the seed, drawn once, against every non-equivalent
mutant (the score of the generated cases alone, with no vector). Also the suite's size per format and the cases per second of the
reference run in process.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mlf_spec.conformance import adapters, runner, testee, vectors  # noqa: E402
from mlf_spec.conformance.mutation import harness  # noqa: E402

READERS = [("params", "params", ROOT / "tests" / "independent" / "params_reader.c"),
           ("ffi blob", "blob", ROOT / "tests" / "independent" / "blob_reader.c"),
           ("legacy blob", "blob", ROOT / "tests" / "independent" / "legacy_blob_reader.c")]


def main() -> int:
    """Print the figures (and write them as JSON with --json)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--generate", type=int, default=300, help="generated cases per mutant (0: none)")
    ap.add_argument("--generate-budget", type=float, default=15.0, help="seconds of generated cases per mutant")
    ap.add_argument("--json", metavar="OUT", help="write the figures here")
    args = ap.parse_args()
    cases = vectors.load_suite()
    per_format = Counter(c.format for c in cases)
    print("vectors per format: " + ", ".join(f"{k} {v}" for k, v in sorted(per_format.items())))
    t = testee.InProcess(adapters.load("mlf-spec"))
    t0, c0 = time.perf_counter(), time.process_time()
    result = runner.run(t, cases, progress=False)
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(f"reference in process: {len(cases)} cases in {dt:.2f} s = {len(cases) / dt:.0f} cases/s; "
          f"{cpu:.2f} s CPU = {len(cases) / cpu:.0f} cases per CPU second, first imports included; goal < 2 s "
          f"({dict(result.counts)})")
    out = {"vectors": dict(per_format), "reference_seconds": round(dt, 3), "reference_cpu_seconds": round(cpu, 3),
           "readers": {}}
    for name, fmt, src in READERS:
        eq, kf = src.with_suffix(".equivalent"), src.with_suffix(".known-failures")
        rep = harness.mutate(src, cases, formats=[fmt], equivalents=eq if eq.exists() else None,
                             known_failures=kf if kf.exists() else None, generate=args.generate,
                             generate_alone=args.generate > 0, generate_budget=args.generate_budget)
        print(f"{name}: " + "\n".join(line for line in rep.lines() if not line.startswith("  equivalent ")))
        out["readers"][name] = rep.as_dict()
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
