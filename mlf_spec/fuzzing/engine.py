"""Run a fuzz target under atheris (libFuzzer for Python), or replay inputs without it.

``fuzz(name)`` is what every ``fuzz/<name>_fuzzer.py`` calls: it instruments the target's
reader modules and what they import (and, per target, ``tarfile`` / ``elftools``) for
coverage feedback, installs the target's
structure-aware mutator as libFuzzer's custom mutator and hands ``sys.argv`` to libFuzzer,
so every libFuzzer option works (``-runs``, ``-max_total_time``, ``-jobs``/``-workers``,
``-dict``, ``-max_len``, corpus directories). atheris is only imported here.

``replay(name, paths)`` runs a target over files without atheris (regression corpora,
coverage measurement) and returns the failures.
"""

from __future__ import annotations

import importlib
import os
import sys
import traceback
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

#: Checking memory (tracemalloc) makes an input 4-8 times slower, so during fuzzing only every
#: Nth input is checked (default 16; 0: never; 1: all); replays check every input.
MEMCHECK_ENV = "MLF_FUZZ_MEMCHECK_EVERY"


def _plan(name: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The target's instrumentation prefixes and the modules to import under them, read
    without importing any reader."""
    from mlf_spec.fuzzing.targets import TARGETS

    t = TARGETS[name]
    return t.instrument, t.imports or t.modules


def fuzz(name: str, argv: list[str] | None = None) -> None:
    """Fuzz target ``name`` with atheris; ``argv`` (default ``sys.argv``) goes to libFuzzer.
    Does not return (libFuzzer exits the process)."""
    import atheris

    args = list(sys.argv if argv is None else argv)
    include, modules = _plan(name)
    early = [m for m in include if m != "mlf_spec" and m in sys.modules]
    if early:  # imported before instrumentation: no coverage feedback from them
        print(f"WARNING: {', '.join(early)} imported before instrumentation", file=sys.stderr)
    with atheris.instrument_imports(include=list(include), exclude=["mlf_spec.fuzzing"]):
        for module in modules:
            importlib.import_module(module)
    from mlf_spec.fuzzing import mutators, targets

    t = targets.TARGETS[name]
    every = int(os.environ.get(MEMCHECK_ENV, "16") or 0)
    count = [0]
    from mlf_spec.fuzzing.invariants import Sandbox

    box = Sandbox()

    def one(data: bytes) -> None:
        count[0] += 1
        check = every > 0 and count[0] % every == 0
        targets.run(t, data, sandbox=box, check_memory=check)

    mutator = t.mutator()
    # atheris.Mutate is looked up per call: Setup() may switch the module to another native core
    custom = (mutators.custom_mutator(mutator, lambda d, n: atheris.Mutate(d, n))
              if mutator is not None else None)
    if not any(a.startswith("-max_len=") for a in args):
        args.append(f"-max_len={t.max_len}")
    atheris.Setup(args, one, custom_mutator=custom)
    atheris.Fuzz()


@dataclass
class Failure:
    """An input that broke an invariant."""

    path: Path
    kind: str
    message: str
    trace: str


def replay(name: str, paths: Iterable[str | os.PathLike], *, check_memory: bool = True) -> tuple[int, list[Failure]]:
    """Run target ``name`` over every file under ``paths``; return how many inputs ran and
    the failures."""
    from mlf_spec.fuzzing import seeds, targets
    from mlf_spec.fuzzing.invariants import InvariantBreak, Sandbox

    t = targets.TARGETS[name]
    box = Sandbox()
    failures: list[Failure] = []
    n = 0
    try:
        for path, data in seeds.iter_corpus(*paths):
            n += 1
            try:
                targets.run(t, data, sandbox=box, check_memory=check_memory)
            except InvariantBreak as exc:
                failures.append(Failure(path, exc.kind, exc.message, traceback.format_exc()))
    finally:
        box.remove()
    return n, failures


__all__ = ["MEMCHECK_ENV", "Failure", "fuzz", "replay"]
