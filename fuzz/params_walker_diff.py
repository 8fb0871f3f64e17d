#!/usr/bin/env python3
"""A differential campaign over hostile .params headers: the compiled walker
(``mlf_spec/params/_walker.c``) against the generated Python reader (``MLF_SPEC_PURE_PYTHON``),
through what users call, not only the walk.

Not part of the test run (run by hand, low priority)::

    nice -n 10 python fuzz/params_walker_diff.py --minutes 5 --out build/walker-diff

Each input is a vector, or a file of large tensors (the walker's sparse path: one read per
header), damaged at a header field (an interesting integer written over a count, a length, an
extent, a data size, a dtype), by byte flips or cuts, or with bytes appended. Every input is read
with both walkers by ``params.open`` (mapped and by pread) plus ``listing.dump`` (digests,
stats, first values), ``params.load`` and ``check.check`` (with a TVM verdict), and flags:

* ``differ``: the two walkers give different documents or different errors (class, field,
  offset, message);
* ``exception``: anything but an MlfError escapes (a traceback on the CLI);
* ``memory``: MemoryError under the address-space cap (``--cap-mb``);
* ``time``: one input over ``--seconds`` (both walkers, every reading).

Findings are written to ``findings/<n>.params`` with ``report.json``.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import struct
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mlf_spec import params  # noqa: E402
from mlf_spec.errors import MlfError  # noqa: E402
from mlf_spec.params import accel, check, listing  # noqa: E402

INTERESTING = [0, 1, 2, 7, 8, 63, 64, 65, 255, 256, 0x7FFF, 0x8000, 0xFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF,
               1 << 32, (1 << 62), (1 << 63) - 1, 1 << 63, (1 << 64) - 1, (1 << 64) - 8]
TENSOR_MAGIC = bytes.fromhex("3fa1b496f0405edd")


def _seeds(rng: random.Random) -> list[bytes]:
    out = [p.read_bytes() for p in sorted((ROOT / "vectors" / "params").glob("*.params"))]
    for _ in range(6):  # large tensors: the sparse path
        n = rng.choice((1, 2, 5))
        tensors = {f"t{j}": (np.arange(rng.choice((5000, 20000, 70000))) % 3).astype(rng.choice(("f4", "i1", "bool", "f2")))
                   for j in range(n)}
        out.append(params.dumps(tensors))
    return out


def _header_offsets(data: bytes) -> list[tuple[int, int]]:
    """(offset, width) of header fields: the file's counts and every tensor record's fields."""
    spots = [(8, 8), (16, 8)]
    at = 0
    while (at := data.find(TENSOR_MAGIC, at)) >= 0:
        spots += [(at + 8, 8), (at + 16, 4), (at + 20, 4), (at + 24, 4), (at + 28, 1), (at + 29, 1), (at + 30, 2)]
        ndim = int.from_bytes(data[at + 24:at + 28], "little", signed=True)
        for k in range(max(0, min(ndim, 8)) + 1):  # the extents and data_byte_size
            spots.append((at + 32 + 8 * k, 8))
        at += 8
    return [(o, w) for o, w in spots if o + w <= len(data)]


def mutate(data: bytes, rng: random.Random) -> bytes:
    """One hostile change to ``data``."""
    b = bytearray(data)
    op = rng.randrange(5)
    if op <= 1:
        spots = _header_offsets(data)
        if spots:
            o, w = rng.choice(spots)
            v = rng.choice(INTERESTING) + rng.choice((0, 0, 0, -1, 1))
            b[o:o + w] = (v % (1 << (8 * w))).to_bytes(w, "little")
    elif op == 2 and b:
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
    elif op == 3 and b:
        del b[rng.randrange(len(b)):]
    else:
        b += bytes(rng.choice((1, 8, 40, 4096, 70000)))
    return bytes(b)


def _readings(path: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}

    def attempt(name: str, fn: Any) -> None:
        try:
            out[name] = fn()
        except MlfError as exc:
            out[name] = ("error", type(exc).__name__, exc.field, exc.offset, str(exc))

    for mapped in (True, False):
        attempt(f"dump mapped={mapped}", lambda m=mapped: json.loads(json.dumps(_dump_open(path, m), default=str)))
    attempt("load", lambda: [(n, str(getattr(t, "dtype", "")), getattr(t, "shape", None))
                             for n, t in params.load(path, strict=False).entries])
    attempt("loads", lambda: [(n, str(getattr(t, "dtype", "")), getattr(t, "shape", None))
                              for n, t in params.loads(path.read_bytes(), strict=False).entries])
    attempt("check", lambda: check.check(path, tvm="0.27", mapped=False).to_dict())
    return out


def _dump_open(path: Path, mapped: bool) -> Any:
    with params.open(path, mapped=mapped) as lazy:
        return listing.dump_document(lazy, path=str(path), stats=True, values=3)


def one(path: Path, data: bytes) -> list[str]:
    """The flags of one input."""
    path.write_bytes(data)
    flags = []
    results = []
    for fast in (True, False):
        accel.use(fast)
        try:
            results.append(_readings(path))
        except MemoryError:
            flags.append(f"memory:{'compiled' if fast else 'python'}")
            results.append(None)
        except Exception as exc:  # noqa: BLE001  # what the campaign looks for
            last = traceback.format_exception_only(type(exc), exc)[-1].strip()
            flags.append(f"exception:{'compiled' if fast else 'python'}:{last[:160]}")
            results.append(None)
    if results[0] is not None and results[1] is not None and results[0] != results[1]:
        keys = [k for k in results[0] if results[0].get(k) != results[1].get(k)]
        flags.append("differ:" + ",".join(keys))
    accel.use(True)
    return flags


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(ROOT / "build" / "walker-diff"))
    ap.add_argument("--minutes", type=float, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--seconds", type=float, default=10, help="time bound of one input")
    ap.add_argument("--cap-mb", type=int, default=4096, help="address-space cap of this process")
    args = ap.parse_args()
    cap = args.cap_mb << 20
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    out = Path(args.out)
    (out / "findings").mkdir(parents=True, exist_ok=True)
    rng = random.Random(args.seed)
    seeds = _seeds(rng)
    end = time.monotonic() + 60 * args.minutes
    runs, findings = 0, {}
    while time.monotonic() < end:
        data = rng.choice(seeds)
        for _ in range(rng.choice((1, 1, 2, 3))):
            data = mutate(data, rng)
        t0 = time.monotonic()
        flags = one(out / "input.params", data)
        if time.monotonic() - t0 > args.seconds:
            flags.append("time")
        runs += 1
        for f in flags:
            sig = f.split(":")[0] + ":" + struct.pack("<Q", hash(f) & ((1 << 64) - 1)).hex()[:8]
            if sig not in findings:
                findings[sig] = {"flag": f, "count": 0, "file": f"findings/{len(findings)}.params"}
                (out / findings[sig]["file"]).write_bytes(data)
                print("FINDING", f, flush=True)
            findings[sig]["count"] += 1
    (out / "report.json").write_text(json.dumps({"runs": runs, "findings": findings}, indent=1))
    print(f"{runs} inputs, {len(findings)} findings")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
