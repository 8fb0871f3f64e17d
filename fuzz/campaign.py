#!/usr/bin/env python3
"""Run a fuzzing campaign over the targets and write a report.

Every target runs under libFuzzer's own parallelism (``-jobs``/``-workers``) with an
execution budget (``--runs``, split over the jobs) and/or a time budget (``--time`` seconds
per job); a job that stops on a crash is followed by another round until the budget is
spent (``--max-rounds``). The final corpus is then replayed under coverage.py to measure
the branch coverage of the target's reader modules, with the memory budget checked on
every corpus input. The report (``report.json`` and ``report.md`` in ``--out``) lists per
target: executions, executions per second, corpus size, branch coverage, crashes (with
their first line) and slow inputs; and per format the sums.

    python fuzz/campaign.py --runs 1000000 --jobs 2 --nice 10              # every target
    python fuzz/campaign.py --format params --time 60 --out build/fuzz     # one format, 60 s
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FUZZ = ROOT / "fuzz"


@dataclass
class Result:
    """What one target's campaign gave."""

    target: str
    format: str
    executions: int = 0
    seconds: float = 0.0
    exec_per_sec: float = 0.0
    rounds: int = 0
    corpus: int = 0
    coverage: dict = field(default_factory=dict)
    crashes: list = field(default_factory=list)
    slow: list = field(default_factory=list)
    slowest_unit_sec: float = 0.0
    peak_rss_mb: int = 0
    replay_failures: list = field(default_factory=list)


def _python() -> str:
    return sys.executable


def _env() -> dict[str, str]:
    env = dict(os.environ)
    # libFuzzer's -jobs re-executes the fuzzer script: its "#!/usr/bin/env python3" must
    # find this interpreter (the one with mlf_spec and atheris).
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def prepare(name: str, out: Path) -> tuple[Path, Path, Path]:
    """Seed corpus, working corpus and dictionary of a target (made if missing)."""
    seeds, corpus, dicts = out / "seeds" / name, out / "corpus" / name, out / "dicts" / f"{name}.dict"
    if not seeds.is_dir() or not any(seeds.iterdir()):
        subprocess.run([_python(), "-m", "mlf_spec.fuzzing", "seeds", str(out / "seeds"), "--target", name],
                       check=True, env=_env(), stdout=subprocess.DEVNULL)
    if not dicts.exists():
        subprocess.run([_python(), "-m", "mlf_spec.fuzzing", "dicts", str(out / "dicts"), "--target", name],
                       check=True, env=_env(), stdout=subprocess.DEVNULL)
    corpus.mkdir(parents=True, exist_ok=True)
    return seeds, corpus, dicts


_STAT = re.compile(r"^stat::(\w+):\s+(\d+)", re.M)
_ARTIFACT = re.compile(r"Test unit written to (\S+)")
_ERROR = re.compile(r"^(\w*(?:Error|Break|Exception)\w*: .*)$", re.M)


def parse_logs(logs: list[Path]) -> dict:
    """Executions, slowest unit, peak RSS and artifacts from libFuzzer job logs."""
    out = {"executions": 0, "slowest": 0, "rss": 0, "artifacts": []}
    for log in logs:
        text = log.read_text("utf-8", "replace")
        stats = {k: int(v) for k, v in _STAT.findall(text)}
        if "number_of_executed_units" in stats:
            out["executions"] += stats["number_of_executed_units"]
        else:  # a job that crashed prints no final stats: take its last status line
            counts = re.findall(r"^#(\d+)\s", text, re.M)
            out["executions"] += int(counts[-1]) if counts else 0
        out["slowest"] = max(out["slowest"], stats.get("slowest_unit_time_sec", 0))
        out["rss"] = max(out["rss"], stats.get("peak_rss_mb", 0))
        for path in _ARTIFACT.findall(text):
            errors = _ERROR.findall(text)
            out["artifacts"].append({"path": path, "error": errors[-1][:300] if errors else "", "log": str(log)})
    return out


def fuzz_target(name: str, out: Path, *, runs: int, seconds: int, jobs: int, nice: int, max_rounds: int,
                timeout: int, slow: int, rss_mb: int) -> Result:
    """Run rounds of ``-jobs`` libFuzzer runs until ``runs`` executions (or the time) are spent."""
    from mlf_spec.fuzzing.targets import TARGETS

    t = TARGETS[name]
    seeds, corpus, dicts = prepare(name, out)
    artifacts = out / "artifacts" / name
    artifacts.mkdir(parents=True, exist_ok=True)
    res = Result(name, t.format)
    started = time.monotonic()
    deadline = started + seconds if seconds else None
    while res.rounds < max_rounds:
        left = runs - res.executions if runs else 0
        if runs and left <= 0:
            break
        remaining_time = int(deadline - time.monotonic()) if deadline else 0
        if deadline and remaining_time <= 5:
            break
        res.rounds += 1
        logdir = out / "logs" / name / f"round{res.rounds}"
        if logdir.exists():
            shutil.rmtree(logdir)
        logdir.mkdir(parents=True)
        cmd = ["nice", "-n", str(nice), _python(), str(FUZZ / f"{name}_fuzzer.py"), str(corpus), str(seeds),
               f"-jobs={jobs}", f"-workers={jobs}", f"-artifact_prefix={artifacts}/", f"-dict={dicts}",
               f"-timeout={timeout}", f"-report_slow_units={slow}", f"-rss_limit_mb={rss_mb}",
               "-print_final_stats=1"]
        if runs:
            cmd.append(f"-runs={max(1, -(-left // jobs))}")
        if deadline:
            cmd.append(f"-max_total_time={remaining_time}")
        with open(logdir / "main.log", "wb") as main_log:
            subprocess.run(cmd, cwd=logdir, env=_env(), stdout=main_log, stderr=subprocess.STDOUT, check=False)
        stats = parse_logs(sorted(logdir.glob("fuzz-*.log")))
        res.executions += stats["executions"]
        res.slowest_unit_sec = max(res.slowest_unit_sec, stats["slowest"])
        res.peak_rss_mb = max(res.peak_rss_mb, stats["rss"])
        for a in stats["artifacts"]:
            (res.slow if Path(a["path"]).name.startswith("slow-unit-") else res.crashes).append(a)
        if not stats["executions"]:
            break  # the fuzzer does not start: nothing more to learn from another round
    res.seconds = round(time.monotonic() - started, 1)
    res.exec_per_sec = round(res.executions / res.seconds, 1) if res.seconds else 0.0
    res.corpus = sum(1 for p in corpus.iterdir() if p.is_file())
    return res


def measure(name: str, out: Path, nice: int) -> tuple[dict, list]:
    """Branch coverage of the target's reader modules over its final corpus (coverage.py),
    and the invariant breaks (memory included) of replaying it."""
    from mlf_spec.fuzzing.targets import TARGETS

    t = TARGETS[name]
    corpus = out / "corpus" / name
    data = out / "coverage" / f"{name}.coverage"
    data.parent.mkdir(parents=True, exist_ok=True)
    report = out / "coverage" / f"{name}.json"
    failures = out / "coverage" / f"{name}.failures.txt"
    import importlib.util

    # --include with file paths: --source with module names imports them too early for numpy
    files = ",".join(str(importlib.util.find_spec(m).origin) for m in t.modules)  # type: ignore[union-attr]
    with open(failures, "w") as f:
        subprocess.run(["nice", "-n", str(nice), _python(), "-m", "coverage", "run", "--branch",
                        f"--data-file={data}", f"--include={files}", "-m", "mlf_spec.fuzzing", "replay", name,
                        str(corpus), str(out / "seeds" / name)], env=_env(), stdout=f, stderr=subprocess.DEVNULL,
                       check=False)
    subprocess.run([_python(), "-m", "coverage", "json", f"--data-file={data}", "-o", str(report)], env=_env(),
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    cov: dict = {}
    if report.exists():
        doc = json.loads(report.read_text())
        per = {}
        branches = covered = 0
        for path, f in doc["files"].items():
            s = f["summary"]
            per[Path(path).name] = round(100 * s["covered_branches"] / s["num_branches"], 1) if s["num_branches"] else None
            branches += s["num_branches"]
            covered += s["covered_branches"]
        cov = {"branches": branches, "covered": covered,
               "percent": round(100 * covered / branches, 1) if branches else None, "files": per}
    broken = [line for line in failures.read_text().splitlines() if ": [" in line]
    return cov, broken


def render(results: list[Result], args: argparse.Namespace) -> str:
    """The report as a Markdown table (per target, then per format)."""
    lines = [f"Campaign: budget {args.runs or '-'} executions / {args.time or '-'} s per target "
             f"({', '.join(args.runs_for) or 'no per-target budgets'}), {args.jobs} jobs, nice {args.nice}.", "",
             "| target | format | executions | exec/s | corpus | branch coverage | crashes | slow inputs |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        cov = r.coverage.get("percent")
        lines.append(f"| {r.target} | {r.format} | {r.executions:,} | {r.exec_per_sec:,.0f} | {r.corpus:,} | "
                     f"{'-' if cov is None else f'{cov}%'} | {len(r.crashes) + len(r.replay_failures)} | "
                     f"{len(r.slow)} |")
    lines += ["", "| format | executions | targets |", "|---|---:|---|"]
    formats: dict[str, list[Result]] = {}
    for r in results:
        formats.setdefault(r.format, []).append(r)
    for fmt, rs in formats.items():
        lines.append(f"| {fmt} | {sum(r.executions for r in rs):,} | {', '.join(r.target for r in rs)} |")
    for r in results:
        for c in r.crashes + r.slow:
            lines.append(f"\n- {r.target}: `{Path(c['path']).name}` {c['error']}")
        for f in r.replay_failures:
            lines.append(f"\n- {r.target} (replay): {f}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Run the campaign; exit status 1 when a crash or an invariant break was found."""
    sys.path.insert(0, str(ROOT))
    from mlf_spec.fuzzing.targets import TARGETS

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--target", action="append", default=[], help="a target (repeatable; default: all)")
    p.add_argument("--format", action="append", default=[], help="every target of a format (repeatable)")
    p.add_argument("--runs", type=int, default=0, help="executions per target (split over the jobs)")
    p.add_argument("--runs-for", action="append", default=[], metavar="TARGET=N",
                   help="the execution budget of one target (repeatable; overrides --runs)")
    p.add_argument("--time", type=int, default=0, help="seconds per target")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="libFuzzer -jobs and -workers")
    p.add_argument("--nice", type=int, default=10)
    p.add_argument("--max-rounds", type=int, default=10, help="rounds per target (a crash ends a job's round)")
    p.add_argument("--timeout", type=int, default=20, help="libFuzzer -timeout: seconds before an input is a hang")
    p.add_argument("--slow", type=int, default=2, help="libFuzzer -report_slow_units: seconds")
    p.add_argument("--rss-mb", type=int, default=2048, help="libFuzzer -rss_limit_mb per job")
    p.add_argument("--out", default=str(ROOT / "build" / "fuzz"))
    p.add_argument("--no-coverage", action="store_true")
    args = p.parse_args(argv)
    runs_for = {k: int(v) for k, v in (item.split("=", 1) for item in args.runs_for)}
    if not args.runs and not args.time and not runs_for:
        p.error("give --runs, --runs-for and/or --time")
    names = args.target or [n for n, t in TARGETS.items() if not args.format or t.format in args.format]
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    results = []
    for name in names:
        print(f"== {name}", flush=True)
        r = fuzz_target(name, out, runs=runs_for.get(name, args.runs), seconds=args.time, jobs=args.jobs, nice=args.nice,
                        max_rounds=args.max_rounds, timeout=args.timeout, slow=args.slow, rss_mb=args.rss_mb)
        if not args.no_coverage:
            r.coverage, r.replay_failures = measure(name, out, args.nice)
        print(f"   {r.executions:,} executions in {r.seconds} s ({r.exec_per_sec:,.0f}/s), corpus {r.corpus}, "
              f"coverage {r.coverage.get('percent')}%, crashes {len(r.crashes)}, slow {len(r.slow)}, "
              f"replay failures {len(r.replay_failures)}", flush=True)
        results.append(r)
        (out / "report.json").write_text(json.dumps([asdict(x) for x in results], indent=2))
        (out / "report.md").write_text(render(results, args))
    print(render(results, args))
    return 1 if any(r.crashes or r.replay_failures for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
