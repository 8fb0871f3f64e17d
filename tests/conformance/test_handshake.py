"""The handshake runs once per run: the CLI asks a command testee `info` once, whether it then
serves or is started per case, and the generated cases of `--generate` reuse that handshake."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from mlf_spec.cli import main as cli

ROOT = Path(__file__).resolve().parents[2]
COUNTING = [sys.executable, str(ROOT / "tests" / "support" / "conformance_testees" / "counting.py")]


@pytest.mark.parametrize("flags", [[], ["--one-shot"], ["--generate", "2", "--generate-budget", "20", "--no-shrink"]],
                         ids=["persistent", "one-shot", "generate"])
def test_a_run_asks_the_testee_info_once(tmp_path, monkeypatch, capsys, flags):
    count = tmp_path / "info.count"
    count.write_text("")
    monkeypatch.setenv("MLF_COUNT_INFO", str(count))
    monkeypatch.chdir(tmp_path)  # --generate saves what it finds under ./conformance-failures
    rep = tmp_path / "r.jsonl"
    status = cli(["conformance", "run", "--testee", " ".join(COUNTING), "--id", "params.bound.bits-0",
                  "--report-json", str(rep), "--quiet", *flags])
    out = capsys.readouterr().out
    assert status == 0, out
    assert count.read_text().splitlines() == ["info"]  # one handshake for the whole run
    records = [json.loads(line) for line in rep.read_text().splitlines()]
    run = records[0]
    assert run["type"] == "run" and run["testee_info"]["protocol"] == "mlf-conformance/1"
    assert run["mode"] == ("one-shot" if "--one-shot" in flags else "persistent")
    cases = [r for r in records if r["type"] == "case"]
    assert cases and cases[0]["outcome"] == "pass"
    if "--generate" in flags:
        assert any(r["type"] == "generated" for r in records)
