"""The pytest plugin: one item per vector for a command-line testee, the mlf_case fixture for
a Python implementation, and nothing at all for a project that asks for neither."""

from __future__ import annotations

import sys
from pathlib import Path

from mlf_spec.conformance import vectors

pytest_plugins = ["pytester"]

BAD = f"{sys.executable} {Path(__file__).resolve().parents[1] / 'support' / 'conformance_testees' / 'misbehaving.py'}"


def test_a_project_that_does_not_ask_sees_nothing(pytester):
    pytester.makepyfile("def test_one():\n    assert True\n")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert "mlf-conformance" not in result.stdout.str()


def test_a_command_line_testee_runs_one_item_per_vector(pytester):
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--mlf-testee", f"{BAD} wrong",
                                          "--mlf-id", "params.valid.w*", "--mlf-id", "params.valid.0-d",
                                          "--mlf-id", "params.broken.truncated*", "-q")
    outcomes = result.parseoutcomes()
    assert outcomes == {"failed": 2, "passed": 5}  # valid readings are off, rejections are right
    text = result.stdout.str()
    assert "tensors[0].shape" in text and "reproduce:" in text


def test_known_failures_and_skips(pytester, tmp_path):
    kf = tmp_path / "kf.txt"
    kf.write_text("params.valid.*   the shape is off by one\n")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--mlf-testee", f"{BAD} wrong",
                                          "--mlf-id", "params.valid.w*", "--mlf-id", "params.encode.w*",
                                          "--mlf-id", "blob.ffi.kind.cuda", "--mlf-known-failures", str(kf), "-q")
    assert result.parseoutcomes() == {"xfailed": 1, "passed": 1, "skipped": 1}


def test_the_fixture_parametrizes_a_python_implementation(pytester):
    pytester.makepyfile('''
import pytest
from mlf_spec.conformance import canonical

@pytest.mark.mlf_conformance(formats=["graph-json"], roles=["decode"])
def test_reader(mlf_case):
    mlf_case.verify(lambda data, options: canonical.decode("graph-json", data, options))

@pytest.mark.mlf_conformance(formats=["graph-json"], roles=["decode"], ids=["graph-json.valid.*"])
def test_a_broken_reader(mlf_case):
    def read(data, options):
        reading = canonical.decode("graph-json", data, options)
        reading["heads"] = []
        return reading
    mlf_case.verify(read)
''')
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-q")
    outcomes = result.parseoutcomes()
    decode = vectors.load_suite(formats=["graph-json"], roles=["decode"])
    assert len(decode) > 200  # every rule of the graph JSON on both sides
    assert outcomes["passed"] == len(decode) and outcomes["failed"] == 5
    assert "heads: 1 elements expected, got 0" in result.stdout.str()


def test_the_marker_known_failures_path_is_the_test_files_and_a_stale_id_warns(pytester):
    # issue 30 item 18: the marker's known_failures= path resolved against the working directory (run from the
    # parent folder: "cannot open"); failure tracebacks showed the kit's frames; an id matching no case was
    # accepted silently
    sub = pytester.mkpydir("sub")
    (sub / "kf.txt").write_text("graph-json.valid.*   the heads are dropped\nno.such.case   a typo\n")
    (sub / "test_r.py").write_text('''
import pytest
from mlf_spec.conformance import canonical

@pytest.mark.mlf_conformance(formats=["graph-json"], roles=["decode"], ids=["graph-json.valid.*"],
                             known_failures="kf.txt")
def test_known(mlf_case):
    def read(data, options):
        reading = canonical.decode("graph-json", data, options)
        reading["heads"] = []
        return reading
    mlf_case.verify(read)

@pytest.mark.mlf_conformance(formats=["graph-json"], roles=["decode"], ids=["graph-json.valid.*"])
def test_broken(mlf_case):
    def read(data, options):
        reading = canonical.decode("graph-json", data, options)
        reading["heads"] = []
        return reading
    mlf_case.verify(read)
''')
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-q", "-W", "default")  # from the parent folder
    outcomes = result.parseoutcomes()
    assert outcomes.get("xfailed", 0) >= 1 and outcomes.get("failed", 0) == outcomes["xfailed"], outcomes
    text = result.stdout.str()
    assert "cannot open" not in text
    assert "1 known failure(s) match none of the" in text and "no.such.case" in text
    failures = text.split("FAILURES", 1)[1]
    assert "vectors.py" not in failures and "def _verify_with" not in failures, failures[:3000]
    assert "def read(data, options)" in failures or "mlf_case.verify(read)" in failures
