"""Start-up time of the ``mlf-spec`` command, as whole processes, beside Python's own.

    python benchmarks/startup.py [--repeat 15] [--json OUT] [--record]

Runs, in one session and interleaved, ``python -c pass``, ``python -c "import numpy"`` and
``mlf-spec --version``, ``--help``, ``params dump`` of a small file and ``check`` of a small
archive, each ``--repeat`` times, and prints the medians and the ratios the targets are
stated in (issue 10):

* ``--version`` and ``--help``: within 1.5x of ``python -c pass``;
* ``params dump`` of a small file: within 1.5x of ``python -c "import numpy"``;
* ``check`` of a small archive: within 1.5x of ``python -c "import numpy"`` (issue 20);
* ``check --tvm 0.12`` of the same archive (the verdicts of TVM 0.12's readers) and
  ``upgrade`` of it at metadata version 6 to a file: the same goal (issue 20: the read
  paths of the verdicts and the migrations without pydantic).

``--record`` writes the ``compiled`` figures of ``check`` to benchmarks/results/startup.json,
from which the README's figures table is rendered (with benchmarks/params.py's).

Two bytecode settings are measured, because they differ a lot for a package installed
from source:

* ``compiled``: every module (mlf_spec and its dependencies) has cached bytecode, as after a
  wheel install (pip compiles) — the bytecode is written to a private cache
  (``PYTHONPYCACHEPREFIX``) by a warm-up run, so the working tree is not touched;
* ``as-is``: the environment as it is; with ``PYTHONDONTWRITEBYTECODE=1`` and an editable
  install, mlf_spec's own modules are compiled from source on every start (the
  dependencies keep the bytecode pip wrote).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _artifacts import small_archive, small_archive_v6, small_params  # noqa: E402
from _bench import record, update_readme  # noqa: E402

TARGETS = {"--version": ("pass", 1.5), "--help": ("pass", 1.5), "params dump": ("numpy", 1.5),
           "check": ("numpy", 1.5), "check --tvm": ("numpy", 1.5), "upgrade": ("numpy", 1.5)}


def _mlf_spec_command() -> list[str]:
    script = Path(sys.executable).parent / "mlf-spec"
    if script.is_file():
        return [str(script)]
    found = shutil.which("mlf-spec")
    return [found] if found else [sys.executable, "-m", "mlf_spec"]


def commands(workdir: Path) -> dict[str, list[str]]:
    """The command lines measured, by label."""
    params_path = workdir / "small.params"
    archive_path = workdir / "small.tar"
    old_path = workdir / "small-v6.tar"
    params_path.write_bytes(small_params())
    archive_path.write_bytes(small_archive())
    old_path.write_bytes(small_archive_v6())
    cli = _mlf_spec_command()
    return {
        "pass": [sys.executable, "-c", "pass"],
        "numpy": [sys.executable, "-c", "import numpy"],
        "--version": [*cli, "--version"],
        "--help": [*cli, "--help"],
        "params dump": [*cli, "params", "dump", str(params_path)],
        "check": [*cli, "check", str(archive_path)],
        "check --tvm": [*cli, "check", "--tvm", "0.12", str(archive_path)],
        "upgrade": [*cli, "upgrade", str(old_path), "-o", str(workdir / "upgraded.tar"), "--force"],
    }


def _run(cmd: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    dt = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr.decode()[-500:]}")
    return dt


def measure(cmds: dict[str, list[str]], env: dict[str, str], repeat: int) -> dict[str, float]:
    """Median wall time (seconds) of each command; runs are interleaved so that a slow
    moment of the machine touches every command alike."""
    for cmd in cmds.values():  # warm-up: page cache, and bytecode where it may be written
        _run(cmd, env)
    times: dict[str, list[float]] = {k: [] for k in cmds}
    for _ in range(repeat):
        for label, cmd in cmds.items():
            times[label].append(_run(cmd, env))
    return {k: statistics.median(v) for k, v in times.items()}


def report(title: str, med: dict[str, float]) -> dict[str, object]:
    """Print one table and return it as data."""
    print(f"\n{title}")
    print(f"  {'command':<14} {'median ms':>10}  {'ratio':>12}  target")
    rows = {}
    for label, t in med.items():
        if label in TARGETS:
            base, limit = TARGETS[label]
            ratio = t / med[base]
            ok = "ok" if ratio <= limit else "MISSED"
            print(f"  {label:<14} {t * 1e3:>10.1f}  {ratio:>6.2f}x {base:<5}  <= {limit}x  {ok}")
            rows[label] = {"median_s": t, "ratio": ratio, "base": base, "limit": limit, "met": ratio <= limit}
        else:
            print(f"  {label:<14} {t * 1e3:>10.1f}")
            rows[label] = {"median_s": t}
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--json", help="write the figures to this file")
    ap.add_argument("--record", action="store_true", help="write benchmarks/results/startup.json and the README table")
    args = ap.parse_args()
    results: dict[str, object] = {"python": sys.version.split()[0], "repeat": args.repeat}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        cmds = commands(work)
        compiled = dict(os.environ)
        compiled.pop("PYTHONDONTWRITEBYTECODE", None)
        compiled["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
        results["compiled"] = report("compiled (cached bytecode for every module, as after a wheel install)",
                                     measure(cmds, compiled, args.repeat))
        as_is = dict(os.environ)
        flag = as_is.get("PYTHONDONTWRITEBYTECODE", "")
        results["as-is"] = report(f"as-is (PYTHONDONTWRITEBYTECODE={flag or 'unset'}; mlf_spec's own modules "
                                  f"{'compiled from source on each start' if flag else 'cached if written before'})",
                                  measure(cmds, as_is, args.repeat))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    if args.record:
        rows = results["compiled"]
        record("startup", {"rounds": args.repeat, "python": results["python"],
                           **{key: {"mlf_ms": rows[label]["median_s"] * 1e3,
                                    "numpy_ms": rows["numpy"]["median_s"] * 1e3, "ratio": rows[label]["ratio"]}
                              for key, label in (("check", "check"), ("check_tvm", "check --tvm"),
                                                 ("upgrade", "upgrade"))}})
        try:
            changed = update_readme()
        except (KeyError, FileNotFoundError):  # params.py has not recorded yet
            changed = False
        print(f"recorded; README {'updated' if changed else 'unchanged'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
