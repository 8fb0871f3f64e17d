"""The examples of docs/conformance/guide.md work as the guide says: a Python library's own
tests over the vectors, and a reader in another language (JavaScript) speaking the protocol."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mlf_spec.cli import main as cli

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "conformance"
GUIDE = EXAMPLES.parent.parent / "docs" / "conformance" / "guide.md"
sys.path.insert(0, str(EXAMPLES.parent.parent / "tools"))

import doc_figures  # noqa: E402


def test_the_python_library_example_passes_with_its_known_failure():
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                             str(EXAMPLES / "test_python_reader.py")], capture_output=True, text=True, cwd=EXAMPLES)
    assert result.returncode == 0, result.stdout[-2000:]
    assert "1 xfailed" in result.stdout and "passed" in result.stdout
    summary = doc_figures.python_example_summary(result.stdout)
    assert f"# {summary}\n" in doc_figures.figures(GUIDE)["python-example"], "run python tools/doc_figures.py"


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed (CI installs it)")
@pytest.mark.parametrize("one_shot", [False, True])
def test_the_javascript_testee_passes_with_its_known_failure(one_shot, capsys):
    args = ["conformance", "run", "--testee", f"node {EXAMPLES / 'params_testee.js'}", "--known-failures",
            str(EXAMPLES / "params_testee.known-failures"), "--quiet"]
    if one_shot:
        args += ["--one-shot", "--id", "params.valid.*"]
    status = cli(args)
    out = capsys.readouterr().out
    assert status == 0, out
    assert ("known failures" in out) != one_shot and "passed" in out
    if not one_shot:  # the guide shows this run's summary
        figure = doc_figures.figures(GUIDE)["js-example"]
        assert doc_figures.stable(out.strip().splitlines()[-1]) in doc_figures.stable(figure), \
            "run python tools/doc_figures.py"
