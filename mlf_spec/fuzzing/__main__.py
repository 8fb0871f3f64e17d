"""``python -m mlf_spec.fuzzing``: list targets, write seed corpora and dictionaries, replay inputs, fuzz."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    """Run the fuzzing command line; returns the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "fuzz":
        from .engine import fuzz

        if len(args) < 2:
            print("usage: python -m mlf_spec.fuzzing fuzz TARGET [libFuzzer options and corpus dirs]", file=sys.stderr)
            return 2
        fuzz(args[1], [f"{args[1]}_fuzzer", *args[2:]])
        return 0
    parser = argparse.ArgumentParser(prog="python -m mlf_spec.fuzzing", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="the targets, their format and seed set")
    s = sub.add_parser("seeds", help="write the seed corpus of every target (or of --target) under DIR/<target>/")
    s.add_argument("dir")
    s.add_argument("--target", action="append", default=[])
    d = sub.add_parser("dicts", help="write the libFuzzer dictionary of every target (or --target) as DIR/<target>.dict")
    d.add_argument("dir")
    d.add_argument("--target", action="append", default=[])
    r = sub.add_parser("replay", help="run TARGET over files or directories; status 1 if an invariant breaks")
    r.add_argument("target")
    r.add_argument("paths", nargs="+")
    r.add_argument("--no-memory", action="store_true", help="skip the memory budget check")
    sub.add_parser("fuzz", help="fuzz TARGET with atheris: fuzz TARGET [libFuzzer options] [corpus dirs]")
    ns = parser.parse_args(args)
    from . import seeds, targets

    if ns.command == "list":
        for t in targets.TARGETS.values():
            print(f"{t.name:<20} {t.format:<10} seeds={t.seeds:<10} memory={t.memory}  {t.doc.splitlines()[0]}")
        return 0
    if ns.command == "seeds":
        names = ns.target or list(targets.TARGETS)
        cache: dict[str, list[bytes]] = {}
        for name in names:
            t = targets.TARGETS[name]
            if t.seeds not in cache:
                cache[t.seeds] = seeds.SEEDS[t.seeds]()
            n = seeds.write_corpus(Path(ns.dir) / name, cache[t.seeds])
            print(f"{name}: {n} seeds")
        return 0
    if ns.command == "dicts":
        from . import dictionaries

        for name in ns.target or list(targets.TARGETS):
            print(dictionaries.write(name, Path(ns.dir) / f"{name}.dict"))
        return 0
    from .engine import replay

    n, failures = replay(ns.target, ns.paths, check_memory=not ns.no_memory)
    for f in failures:
        print(f"{f.path}: [{f.kind}] {f.message}")
    print(f"{ns.target}: {n} inputs, {len(failures)} failures", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
