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
