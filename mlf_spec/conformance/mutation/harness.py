"""Mutation analysis of a reader through the conformance kit: how strong the suite is.

The reader's C source is instrumented once as a mutant schema (:mod:`.mutator`), built once
with the given command (AddressSanitizer and UBSan by default) in a temporary folder, checked
unmutated against the suite (a reader that fails it is refused: the score would mean
nothing), then run once per mutant (``MLF_MUTANT=<id>``) in persistent mode until a case
fails or errs (killed) or every case passed (survived). Survivors may then meet ``--generate``
cases. Mutants listed in an equivalents file (one ``signature :: reason`` per line) are
reported apart with their reason and left out of the score.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mlf_spec._io import read_limited
from mlf_spec.errors import MlfError

from ..known_failures import KnownFailures
from ..runner import run_case
from ..testee import Limits, Persistent
from ..vectors import Case, format_name
from .mutator import Mutant, instrument

DEFAULT_BUILD = ("gcc -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer "
                 "-I{dir} -o {out} {src}")
_SANITIZER_ENV = {"ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1", "UBSAN_OPTIONS": "halt_on_error=1"}
_KILLING = ("fail", "error", "xpass")


@dataclass
class MutationReport:
    """The outcome of a mutation run over one reader."""

    source: str
    mutants: list[Mutant]
    killed: dict[int, str] = field(default_factory=dict)  # mutant id -> the case that killed it
    killed_by_generate: dict[int, str] = field(default_factory=dict)  # survivor id -> the signature found
    generated_alone: dict[int, str] | None = None  # mutant id -> signature, by generated cases with no vector
    generated_cases: int = 0  # N of the generated-case runs (0: none)
    equivalent: dict[int, str] = field(default_factory=dict)  # mutant id -> reason
    baseline_cases: int = 0
    seconds: float = 0.0
    uncompilable: list[str] = field(default_factory=list)  # signatures left out: they do not compile

    @property
    def scored(self) -> list[Mutant]:
        """The non-equivalent mutants."""
        return [m for m in self.mutants if m.id not in self.equivalent]

    @property
    def survivors(self) -> list[Mutant]:
        """Non-equivalent mutants no vector killed."""
        return [m for m in self.scored if m.id not in self.killed]

    def score(self, with_generate: bool = False) -> float:
        """Killed / non-equivalent (1.0 when there is nothing to kill)."""
        n = len(self.scored)
        k = len([m for m in self.scored if m.id in self.killed or (with_generate and m.id in self.killed_by_generate)])
        return k / n if n else 1.0

    def score_generated_alone(self) -> float | None:
        """Killed by generated cases with no vector / non-equivalent (None: not measured)."""
        if self.generated_alone is None:
            return None
        n = len(self.scored)
        return len([m for m in self.scored if m.id in self.generated_alone]) / n if n else 1.0

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready summary (figures, survivors and equivalents by signature)."""
        return {"source": self.source, "mutants": len(self.mutants), "equivalent": len(self.equivalent),
                "killed": len(self.killed), "killed_by_generate": len(self.killed_by_generate),
                "score": round(self.score(), 4), "score_with_generate": round(self.score(True), 4),
                "generated_cases": self.generated_cases,
                "killed_by_generated_alone": None if self.generated_alone is None else len(self.generated_alone),
                "score_generated_alone": None if (g := self.score_generated_alone()) is None else round(g, 4),
                "baseline_cases": self.baseline_cases, "seconds": round(self.seconds, 2),
                "survivors": [m.signature for m in self.survivors if m.id not in self.killed_by_generate],
                "survivors_killed_by_generate": {self.mutants[i].signature: s
                                                 for i, s in sorted(self.killed_by_generate.items())},
                "equivalents": {self.mutants[i].signature: r for i, r in sorted(self.equivalent.items())},
                "uncompilable": list(self.uncompilable)}

    def lines(self) -> list[str]:
        """The report for a terminal."""
        s = len(self.scored)
        out = [f"{self.source}: {len(self.mutants)} mutants, {len(self.equivalent)} equivalent; "
               f"killed by the vectors {len(self.killed)}/{s} ({100 * self.score():.1f} %)"
               + (f", with --generate {self.generated_cases} {len(self.killed) + len(self.killed_by_generate)}/{s} "
                  f"({100 * self.score(True):.1f} %)" if self.generated_cases else "")
               + (f", by {self.generated_cases} generated cases alone {len(self.generated_alone or {})}/{s} "
                  f"({100 * g:.1f} %)" if (g := self.score_generated_alone()) is not None else "")]
        for m in self.survivors:
            how = f"  (killed by --generate: {self.killed_by_generate[m.id]})" if m.id in self.killed_by_generate else ""
            out.append(f"  survivor {m.signature}{how}")
        for i, r in sorted(self.equivalent.items()):
            out.append(f"  equivalent {self.mutants[i].signature}  ({r})")
        for sig in self.uncompilable:
            out.append(f"  left out {sig}  (does not compile)")
        return out


def load_equivalents(path: str | Path | None) -> dict[str, str]:
    """``signature :: reason`` per line ('#' starts a comment); MlfError with the path and
    line for a malformed one."""
    if path is None:
        return {}
    p = Path(path)
    try:
        text = read_limited(p).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MlfError(f"cannot read the equivalents file: {exc}", file=str(p)) from None
    out: dict[str, str] = {}
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        sig, sep, reason = line.partition(" :: ")
        if not sep or not sig.strip() or not reason.strip():
            raise MlfError("an equivalent mutant is 'signature :: reason'", file=str(p), field=f"line {n}")
        out[sig.strip()] = reason.strip()
    return out


def _command(template: str, **values: str) -> list[str]:
    try:
        words = shlex.split(template)
    except ValueError as exc:
        raise MlfError(f"cannot split the command {template!r}: {exc}") from None
    try:
        return [w.format(**values) for w in words]
    except (KeyError, IndexError, ValueError) as exc:
        raise MlfError(f"unknown placeholder {exc} in {template!r} (use {{src}}, {{out}}, {{dir}}, {{bin}})") from None


#: The largest reader source mutate instruments (the readers it is for are a few thousand lines).
SOURCE_LIMIT = 16 << 20


def build(source: Path, build_cmd: str, work: Path) -> tuple[Path, list[Mutant]]:
    """Instrument ``source`` and build it in ``work``: (the binary, the mutants)."""
    try:
        text = read_limited(source, SOURCE_LIMIT).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MlfError(f"cannot read the reader's source: {exc}", file=str(source)) from None
    binary, mutants, _ = build_schema(source, build_cmd, work, text)
    return binary, mutants


def build_schema(source: Path, build_cmd: str, work: Path, text: str) -> tuple[Path, list[Mutant], list[str]]:
    """Build the mutant schema of ``text`` in ``work``: (the binary, the mutants, the
    signatures of the mutants set aside because they do not compile). A mutant the types make
    invalid (``end - in`` of two pointers turned into ``end + in``) fails the build at its
    line: the mutants of the lines the compiler names are left out and the schema built again;
    an error on a line with no mutant is the reader's own and is reported (its first error)."""
    skip: set[int] = set()
    dropped: list[str] = []
    out = work / "reader-under-mutation"
    src = work / source.name
    for _ in range(_REBUILDS):
        schema, mutants = instrument(text, frozenset(skip))
        src.write_text(schema, encoding="utf-8")
        argv = _command(build_cmd, src=str(src), out=str(out), dir=str(source.resolve().parent))
        try:
            done = subprocess.run(argv, cwd=work, capture_output=True, text=True, errors="replace",
                                  timeout=600)  # a compiler quotes file names, which need not be UTF-8
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise MlfError(f"the build command failed to run: {exc}", file=str(source)) from None
        if done.returncode == 0 and out.exists():
            return out, mutants, dropped
        output = done.stderr or done.stdout
        lines = {m.line for m in mutants}
        bad = set()
        for n in error_lines(output, src.name):  # the mutant's expression may start a line or two before
            bad |= {k for k in (n, n - 1, n - 2) if k in lines} if n not in lines else {n}
        if not bad:
            raise MlfError("the instrumented reader does not build: " + first_error(output, text), file=str(source))
        dropped += [m.signature for m in mutants if m.line in bad]
        skip |= bad
    raise MlfError("the instrumented reader does not build: " + first_error(output, text), file=str(source))


#: the uncompilable mutants of each schema built by :func:`_prepare`, by its work folder
_UNCOMPILABLE: dict[str, list[str]] = {}

#: how many times a schema is built again without the mutants of the lines that do not compile
_REBUILDS = 8


def error_lines(output: str, name: str) -> list[int]:
    """The line numbers of the compiler's errors in the file ``name``."""
    out = []
    for line in output.splitlines():
        mt = _DIAGNOSTIC.match(line.strip())
        if mt and Path(mt.group("file")).name == name:
            out.append(int(mt.group("line")))
    return out


_DIAGNOSTIC = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+):(?:(?P<col>\d+):)?\s*(?:fatal )?error:\s*(?P<msg>.*)$")


def first_error(output: str, source: str) -> str:
    """The compiler's first error (not a warning or a note) as ``line L: message``, quoting
    line L of the reader's own ``source`` (the instrumented copy keeps its line numbers); the
    last lines of ``output`` when no line looks like an error."""
    lines = output.strip().splitlines()
    for line in lines:
        mt = _DIAGNOSTIC.match(line.strip())
        if mt:
            n = int(mt.group("line"))
            text = source.splitlines()[n - 1].strip() if 0 < n <= len(source.splitlines()) else ""
            at = f"line {n}" + (f":{mt.group('col')}" if mt.group("col") else "")
            return f"{at}: error: {mt.group('msg')}" + (f" (line {n}: {text[:200]})" if text else "")
    errors = [x for x in lines if "error" in x.lower()]
    return " | ".join((errors or lines)[:3])


def testee_for(command: list[str], mutant: int | None, timeout: float = 10.0) -> Persistent:
    """The persistent testee running ``command`` as mutant ``mutant`` (None: unmutated), with
    the sanitizers set to stop at the first report."""
    env = [f"{k}={v}" for k, v in _SANITIZER_ENV.items()]
    if mutant is not None:
        env.append(f"MLF_MUTANT={mutant}")
    return Persistent(["env", *env, *command], Limits(timeout=timeout), label=f"mutant {mutant}")


def _first_kill(t: Persistent, cases: list[Case], info: dict[str, Any]) -> str | None:
    known = KnownFailures()
    try:
        for c in cases:
            rec = run_case(t, c, info, known)
            if rec["outcome"] in _KILLING:
                return c.id
        return None
    finally:
        t.close()


def mutate(source: str | Path, cases: list[Case], *, build_cmd: str = DEFAULT_BUILD, testee_cmd: str = "{bin}",
           equivalents: str | Path | None = None, jobs: int = 2, generate: int = 0, seed: int = 0,
           generate_budget: float = 30.0, timeout: float = 10.0,
           formats: list[str] | None = None, known_failures: str | Path | None = None,
           generate_alone: bool = False, maxfail: int = 0) -> MutationReport:
    """Mutation analysis of the C reader ``source`` against ``cases`` (see the module doc);
    the cases a ``known_failures`` file lists are left out (what the reader does not do).
    ``generate`` N: N generated cases (seed ``seed``) against each survivor of the vectors
    (explored and shrunk per survivor), and with ``generate_alone`` the first N cases that seed
    draws, drawn once, against every non-equivalent mutant (how strong the generated cases are
    without any vector); a disagreement the unmutated reader also has kills nothing. Each mutant
    stops at its first killing case; ``maxfail`` N > 0 stops the check of the unmutated reader
    after N failing cases too (a reader that hangs on every case costs N timeouts, not the suite's)."""

    started = time.perf_counter()
    src = Path(source)
    formats = None if formats is None else [format_name(f) for f in formats]  # `cache` names tensor-cache
    with tempfile.TemporaryDirectory(prefix="mlf-mutate-") as tmp:
        command, mutants, equivalent, info = _prepare(src, build_cmd, testee_cmd, equivalents, Path(tmp), timeout)
        from ..runner import skip_reason

        listed = KnownFailures.load(known_failures) if known_failures is not None else KnownFailures()
        mine = [c for c in cases if (formats is None or c.format in formats) and skip_reason(c, info) is None
                and listed.match(c.id) is None]
        if not mine:
            raise MlfError("no case of the suite applies to the reader (check its handshake)", file=str(src))
        _check_unmutated(command, mine, info, timeout, maxfail, src)
        report = MutationReport(src.name, mutants, baseline_cases=len(mine))
        report.equivalent = equivalent
        report.uncompilable = _UNCOMPILABLE.pop(tmp, [])

        def one(m: Mutant) -> tuple[int, str | None]:
            return m.id, _first_kill(testee_for(command, m.id, timeout), mine, info)

        todo = [m for m in mutants if m.id not in report.equivalent]
        with ThreadPoolExecutor(max(1, jobs)) as pool:
            for mid, case_id in pool.map(one, todo):
                if case_id is not None:
                    report.killed[mid] = case_id
        if generate and generate_alone:
            report.generated_alone = _replay_generated(command, info, report.scored, generate, seed, formats,
                                                       Path(tmp), jobs, timeout)
        if generate:
            report.generated_cases = generate
            _kill_by_generated(report, command, info, generate, seed, formats, generate_budget, timeout)
    report.seconds = time.perf_counter() - started
    return report


def _check_unmutated(command: list[str], mine: list[Case], info: dict[str, Any], timeout: float, maxfail: int,
                     src: Path) -> None:
    """Refuse (MlfError) a reader that fails cases unmutated: its mutation score would mean
    nothing. ``maxfail`` N > 0 stops after N failing cases."""
    base = testee_for(command, None, timeout)
    bad = []
    tried = 0
    try:
        known = KnownFailures()
        for c in mine:
            rec = run_case(base, c, info, known)
            tried += 1
            if rec["outcome"] in _KILLING:
                bad.append(f"{c.id}: {rec.get('message', rec['outcome'])}")
                if 0 < maxfail <= len(bad):
                    break
    finally:
        base.close()
    if bad:
        of = f"{len(mine)}" if tried == len(mine) else \
            f"the first {tried} of {len(mine)} (stopped after {len(bad)}: -x / --maxfail {maxfail})"
        raise MlfError(f"the unmutated reader fails {len(bad)} of {of} cases (first: {bad[0][:300]}); "
                       "a mutation score means nothing until it passes", file=str(src))


def _kill_by_generated(report: MutationReport, command: list[str], info: dict[str, Any], generate: int, seed: int,
                       formats: list[str] | None, budget: float, timeout: float) -> None:
    """``generate`` generated cases against each survivor of the vectors; the first case on
    which a survivor disagrees and the unmutated reader does not kills it
    (``report.killed_by_generate``)."""
    from ..generated_cases import explore

    def disagreements(mutant: int | None) -> list[str]:
        t = testee_for(command, mutant, timeout)
        try:
            found = explore(t, generate, seed_value=seed, formats=formats, info=info, budget=budget)
        finally:
            t.close()
        return [r["id"] for r in found.results if r["outcome"] in _KILLING]

    # what the unmutated reader already disagrees on (a grammar it leaves out) kills no mutant
    usual = set(disagreements(None))

    def generated(m: Mutant) -> tuple[int, str | None]:
        return m.id, next((sig for sig in disagreements(m.id) if sig not in usual), None)

    found_by: dict[int, str] = {}
    for mid, sig in map(generated, report.survivors):  # one at a time: hypothesis runs are not thread-safe
        if sig is not None:
            found_by[mid] = sig
    report.killed_by_generate = {i: sig for i, sig in found_by.items() if i not in report.killed}


def _prepare(src: Path, build_cmd: str, testee_cmd: str, equivalents: str | Path | None, work: Path,
             timeout: float) -> tuple[list[str], list[Mutant], dict[int, str], dict[str, Any]]:
    """Build the mutant schema of ``src`` in ``work``: (the testee command, the mutants, the
    equivalent ones by id with their reason, the handshake); MlfError for an equivalents file
    that names no mutant or a reader that does not answer its handshake."""
    equiv = load_equivalents(equivalents)
    try:
        text = read_limited(src, SOURCE_LIMIT).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MlfError(f"cannot read the reader's source: {exc}", file=str(src)) from None
    binary, mutants, dropped = build_schema(src, build_cmd, work, text)
    _UNCOMPILABLE[str(work)] = dropped
    by_sig = {m.signature: m.id for m in mutants}
    stale = [s for s in equiv if s not in by_sig]
    if stale:
        raise MlfError(f"{len(stale)} equivalent mutant(s) match no mutant of the source (first: {stale[0]}): "
                       "the equivalents file is out of date", file=str(equivalents))
    # equivalent by construction (a change to a message only), unless the file says otherwise
    equiv = {**{m.signature: f"by construction: {m.equivalent}" for m in mutants if m.equivalent}, **equiv}
    command = _command(testee_cmd, bin=str(binary))
    base = testee_for(command, None, timeout)
    try:
        info = base.info()
    except MlfError as exc:
        raise MlfError(f"the reader does not answer its handshake: {exc.message}", file=str(src)) from None
    finally:
        base.close()
    return command, mutants, {by_sig[s]: r for s, r in equiv.items()}, info


def _replay_generated(command: list[str], info: dict[str, Any], mutants: list[Mutant], n: int, seed: int,
                      formats: list[str] | None, where: Path, jobs: int, timeout: float) -> dict[int, str]:
    """The same ``n`` generated cases of ``seed`` for every mutant, drawn once: mutant id -> the
    first case that killed it. What the unmutated reader disagrees on (a grammar it leaves out)
    is dropped first and kills no mutant."""
    from ..generated_cases import drawn_cases

    drawn = drawn_cases(info, n, seed_value=seed, formats=formats, where=where)
    base = testee_for(command, None, timeout)
    try:
        agreed = [c for c in drawn if run_case(base, c, info, KnownFailures())["outcome"] not in _KILLING]
    finally:
        base.close()

    def replayed(m: Mutant) -> tuple[int, str | None]:
        return m.id, _first_kill(testee_for(command, m.id, timeout), agreed, info)

    with ThreadPoolExecutor(max(1, jobs)) as pool:
        return {mid: cid for mid, cid in pool.map(replayed, mutants) if cid is not None}


def generated_alone(source: str | Path, n: int, *, seed: int = 0, build_cmd: str = DEFAULT_BUILD,
                    testee_cmd: str = "{bin}", equivalents: str | Path | None = None, jobs: int = 2,
                    timeout: float = 10.0, formats: list[str] | None = None) -> MutationReport:
    """How strong ``n`` generated cases of ``seed`` are with no vector: the C reader ``source``
    built once, its first ``n`` drawn cases replayed against every non-equivalent mutant
    (the ``--generate-alone`` figure of :func:`mutate` without the vector runs). The report's
    ``generated_alone`` holds the kills; ``killed`` stays empty."""
    started = time.perf_counter()
    src = Path(source)
    with tempfile.TemporaryDirectory(prefix="mlf-mutate-") as tmp:
        command, mutants, equivalent, info = _prepare(src, build_cmd, testee_cmd, equivalents, Path(tmp), timeout)
        report = MutationReport(src.name, mutants, generated_cases=n)
        report.equivalent = equivalent
        report.uncompilable = _UNCOMPILABLE.pop(tmp, [])
        report.generated_alone = _replay_generated(command, info, report.scored, n, seed, formats, Path(tmp), jobs,
                                                   timeout)
    report.seconds = time.perf_counter() - started
    return report


def environment_ok() -> bool:
    """Whether a C compiler with the sanitizers is here (``gcc`` on PATH)."""
    from shutil import which

    return which("gcc") is not None and os.name == "posix"


__all__ = ["DEFAULT_BUILD", "MutationReport", "build", "environment_ok", "generated_alone", "load_equivalents", "mutate",
           "testee_for"]
