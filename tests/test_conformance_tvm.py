"""apache-tvm under test: its .params reader and writer against the whole vector suite and
a bounded generated run, in child processes; every divergence is a listed known failure."""

from __future__ import annotations

import pytest

from mlf_spec.cli import main as cli
from mlf_spec.conformance import report

pytest.importorskip("tvm")
pytestmark = pytest.mark.tvm


def test_tvm_passes_or_is_listed_on_the_whole_suite(tmp_path, capsys):
    rep = tmp_path / "tvm.jsonl"
    status = cli(["conformance", "run", "--adapter", "tvm", "-j", "2", "--memory-limit", "4096",
                  "--report-json", str(rep), "--quiet"])
    out = capsys.readouterr().out
    assert status == 0, out
    cases = [r for r in report.read_report(rep) if r["type"] == "case"]
    by_id = {r["id"]: r for r in cases}
    assert sum(r["outcome"] == "pass" for r in cases) > 90
    for known in ("params.valid.duplicate-names", "params.valid.zero-size-3x0",
                  "params.broken.unknown_code-dl_datatype.code.code-18", "params.broken.truncated.at-201"):
        assert by_id[known]["outcome"] == "xfail", by_id[known]
    assert by_id["params.valid.w-and-b"]["outcome"] == "pass"
    assert by_id["params.encode.w-and-b"]["outcome"] == "pass"
    assert by_id["params.dtype.v0.13.e4m3_float8.6-8"]["outcome"] == "skip"  # another dtype numbering


def test_a_bounded_generated_run_finds_only_known_divergences(tmp_path, capsys):
    status = cli(["conformance", "run", "--adapter", "tvm", "--id", "params.valid.w-and-b", "--memory-limit", "4096",
                  "--generate", "100", "--seed", "7", "--generate-budget", "15", "--save-dir", str(tmp_path),
                  "--quiet"])
    out = capsys.readouterr().out
    assert status == 0, out
    saved = sorted(p.name for p in tmp_path.glob("*.case.json"))
    assert saved, "TVM has known divergences a generated run finds (unknown codes, duplicate names, ...)"
    assert "expected failures" in out
