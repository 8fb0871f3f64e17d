"""Compile times of the exported Kaitai Struct specs and the speed of the parsers Kaitai generates.

    python benchmarks/kaitai.py [--repeat 5] [--json OUT]

Needs Node.js and npm (the pinned compiler of tools/kaitai is installed on first use) and
``kaitaistruct``. Prints: loading the npm compiler, compiling every .ksy to Python,
JavaScript and GraphViz (one Node.js process, no cache), and reading .params files with the
generated Python parser against mlf-spec's reader (10,000 small tensors; 4 x 16 MiB).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

from specgen import kaitai_node  # noqa: E402

from mlf_spec import kaitai, params  # noqa: E402
from mlf_spec.kaitai.reading import PythonParsers  # noqa: E402


def _median(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", help="also write the figures to this file")
    args = ap.parse_args()
    kaitai_node.ensure_installed()
    objs = {n.removesuffix(".ksy"): yaml.safe_load(d) for n, d in kaitai.ksy_files().items()}
    out: dict = {"compile": {}, "read": {}}
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        figures = kaitai_node.compile_ksy(objs, ("python", "javascript", "graphviz"), Path(tmp))
        out["compile"] = {"compiler": figures["compiler"], "require_ms": round(figures["require_ms"]),
                          "ms": {k: round(v) for k, v in figures["ms"].items()},
                          "files": len(objs), "process_s": round(time.perf_counter() - start, 2)}
        print(f"npm kaitai-struct-compiler {figures['compiler']}: load {figures['require_ms']:.0f} ms; "
              + ", ".join(f"{lang} {ms:.0f} ms" for lang, ms in figures["ms"].items())
              + f" for {len(objs)} files; whole process {out['compile']['process_s']} s")
        py = PythonParsers(Path(tmp) / "python")
        sets = {
            "10000 x float32[2,2]": {f"p{i}": np.full((2, 2), i, "float32") for i in range(10_000)},
            "4 x float32[1024,1024,4]": {f"w{i}": np.ones((1024, 1024, 4), "float32") for i in range(4)},
        }
        for label, d in sets.items():
            data = params.dumps(d)
            k = _median(lambda data=data: py.parse("params", data, (0, 27)), args.repeat)
            m = _median(lambda data=data: params.loads(data), args.repeat)
            out["read"][label] = {"kaitai_python_ms": round(k * 1e3, 2), "mlf_spec_ms": round(m * 1e3, 2),
                                  "ratio": round(k / m, 1)}
            print(f"{label}: Kaitai Python {k * 1e3:.1f} ms, mlf_spec.params.loads {m * 1e3:.1f} ms ({k / m:.1f}x)")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
