"""Mutation scores of the independent C readers against the conformance vectors.

    python benchmarks/mutation.py [--generate N] [--seed K] [--generate-budget S] [--reader NAME ...]
                                  [--alone-only] [--json OUT]

For each reader in tests/support/independent/ (.params, the tvm-ffi blob, the legacy blob, the tensor
cache; each with its equivalents file): mutants, equivalents, killed by the vectors alone, the survivors, and the
seconds the harness took (one ASan + UBSan build, baseline, every mutant in persistent mode).
With --generate N (default 300): N generated cases against the survivors of the vectors (the
--generate score), and the first N cases of the seed, drawn once, against every non-equivalent
mutant (the score of the generated cases alone, with no vector). Also the suite's size per format and the cases per second of the
reference run in process. ``--alone-only`` measures only the generated cases alone (no vector
run, no exploration: a build and the N cases replayed against every mutant, about a minute per
reader); ``--reader`` picks readers by name (params, ffi, legacy, cache).
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

READERS_DIR = ROOT / "tests" / "support" / "independent"
READERS = [("params", "params", READERS_DIR / "params_reader.c"),
           ("ffi blob", "blob", READERS_DIR / "blob_reader.c"),
           ("legacy blob", "blob", READERS_DIR / "legacy_blob_reader.c"),
           ("cache", "tensor-cache", READERS_DIR / "cache_reader.c")]


def main() -> int:
    """Print the figures (and write them as JSON with --json)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--generate", type=int, default=300, help="generated cases per mutant (0: none)")
    ap.add_argument("--generate-budget", type=float, default=15.0, help="seconds of generated cases per mutant")
    ap.add_argument("--seed", type=int, default=0, help="the seed of the generated cases")
    ap.add_argument("--reader", action="append", choices=["params", "ffi", "legacy", "cache"],
                    help="only this reader (repeat for several; default: all four)")
    ap.add_argument("--alone-only", action="store_true", help="only the score of the generated cases alone")
    ap.add_argument("--json", metavar="OUT", help="write the figures here")
    args = ap.parse_args()
    readers = [r for r in READERS if args.reader is None or r[0].split()[0] in args.reader]
    if args.alone_only:
        out: dict = {"generated_cases": args.generate, "seed": args.seed, "readers": {}}
        for name, fmt, src in readers:
            eq = src.with_suffix(".equivalent")
            rep = harness.generated_alone(src, args.generate, seed=args.seed, formats=[fmt],
                                          equivalents=eq if eq.exists() else None)
            alone = rep.generated_alone or {}
            print(f"{name}: {args.generate} generated cases alone (seed {args.seed}) kill "
                  f"{len(alone)}/{len(rep.scored)} ({100 * (rep.score_generated_alone() or 0):.1f} %) "
                  f"in {rep.seconds:.1f} s")
            for m in rep.scored:
                if m.id not in alone:
                    print(f"  survivor {m.signature}")
            out["readers"][name] = rep.as_dict() | {
                "survivors": [m.signature for m in rep.scored if m.id not in alone]}
        if args.json:
            Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
        return 0
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
    for name, fmt, src in readers:
        eq, kf = src.with_suffix(".equivalent"), src.with_suffix(".known-failures")
        rep = harness.mutate(src, cases, formats=[fmt], equivalents=eq if eq.exists() else None,
                             known_failures=kf if kf.exists() else None, generate=args.generate,
                             generate_alone=args.generate > 0, generate_budget=args.generate_budget, seed=args.seed)
        print(f"{name}: " + "\n".join(line for line in rep.lines() if not line.startswith("  equivalent ")))
        out["readers"][name] = rep.as_dict()
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
