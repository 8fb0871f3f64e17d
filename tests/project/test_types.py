"""The type checker over the package: mypy with the configuration in pyproject.toml
(``[tool.mypy]``) finds no error in ``mlf_spec/`` nor in the generator ``tools/specgen/``
(its runtime libraries included, which are copied into ``generated/``).

What that covers, and what not, is stated in the configuration itself: every hand-written module
is checked; the generated modules (installed as ``mlf_spec.generated`` from ``generated/``) are
not found from the source tree, so what the package takes from them is ``Any``; third-party
libraries without type information are ``Any``; the modules listed in the per-module overrides
have the named error codes switched off, each with the reason. ``warn_unused_ignores`` makes
every ``# type: ignore`` one that mypy needs; the test below makes each say why.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Lazy top-level names must be visible to type checkers (TYPE_CHECKING imports in the
# package's __init__ modules): each line is an error only when mypy knows the name's type.
PROBE = """\
import mlf_spec
from mlf_spec import conformance, verdict

a: int = mlf_spec.migrate.plan
b: int = verdict.Verdict
c: int = conformance.Case
d: int = mlf_spec.archive.Archive
"""


def test_mypy_finds_no_error_in_the_package_and_generator_and_sees_the_lazy_names(tmp_path: Path) -> None:
    probe = tmp_path / "probe_lazy_names.py"
    probe.write_text(PROBE)
    r = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache"), "mlf_spec",
                        "tools/specgen", str(probe)], cwd=ROOT, capture_output=True, text=True, timeout=900)
    errors = [line for line in r.stdout.splitlines() if ": error:" in line]
    package = [e for e in errors if not e.startswith(str(probe))]
    assert not package, "mypy errors in mlf_spec or tools/specgen (the generator):\n" + "\n".join(package)
    seen = {int(e.split(":")[1]): e for e in errors if e.startswith(str(probe))}
    assert sorted(seen) == [4, 5, 6, 7], r.stdout  # one error per probe line: its type was known
    assert "], Plan]" in seen[4] and "type[Verdict]" in seen[5] and "type[Case]" in seen[6], r.stdout
    assert "type[Archive]" in seen[7], r.stdout


def test_every_type_ignore_names_its_code_and_says_why() -> None:
    """``# type: ignore[code]  # reason``: the code (mypy also enforces it) and a short reason."""
    bad = []
    for path in sorted((ROOT / "mlf_spec").rglob("*.py")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if "# type: ignore" in line and not re.search(r"# type: ignore\[[a-z, -]+\]  # \S", line):
                bad.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not bad, "type: ignore without a code and a reason:\n" + "\n".join(bad)
