"""The kit's options and messages: `--format cache`, `-x` / `--maxfail N`, `--generate` leaving
no `.hypothesis/` behind, a known-failures line without a reason, the shape probes at -1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from mlf_spec.cli import main as cli
from mlf_spec.conformance import report, runner, testee, vectors
from mlf_spec.conformance.known_failures import KnownFailures
from mlf_spec.errors import MlfError

ROOT = Path(__file__).resolve().parents[2]
BAD = [sys.executable, str(ROOT / "tests" / "support" / "conformance_testees" / "misbehaving.py")]
SCHEMA = json.loads((ROOT / "generated" / "schemas" / "conformance_report.schema.json").read_text())


def test_cache_names_the_tensor_cache_wherever_a_format_is_named(tmp_path, capsys):
    suite = vectors.load_suite()
    assert vectors.select(suite, formats=["cache"]) == vectors.select(suite, formats=["tensor-cache"]) != []
    assert cli(["conformance", "vectors", str(tmp_path / "out"), "--format", "cache"]) == 0
    written = vectors.load_suite(tmp_path / "out")
    assert written and {c.format for c in written} == {"tensor-cache"}
    capsys.readouterr()
    assert cli(["conformance", "run", "--adapter", "mlf-spec", "--format", "cache", "--quiet",
                "--id", "tensor-cache.valid.*"]) == 0
    assert " passed" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        cli(["conformance", "run", "--adapter", "mlf-spec", "--format", "caches"])
    assert "invalid choice: 'caches'" in capsys.readouterr().err
    # the reference testee's one-shot verbs take the name too
    case = next(c for c in suite if c.format == "tensor-cache" and c.expected["outcome"] == "accept")
    done = subprocess.run([sys.executable, "-m", "mlf_spec", "conformance", "testee", "decode", "cache",
                           f"input_dir={case.input_path}"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["format"] == "tensor-cache"


@pytest.mark.parametrize("flags, stop", [(["-x"], 1), (["--maxfail", "3"], 3)])
def test_maxfail_stops_the_run_and_the_report_says_so(tmp_path, capsys, flags, stop):
    rep = tmp_path / "r.jsonl"
    cmd = " ".join(BAD + ["serve-internal"])  # every case is an error
    status = cli(["conformance", "run", "--testee", cmd, "--format", "params", "--report-json", str(rep), *flags])
    out = capsys.readouterr().out
    assert status == 1
    records = report.read_report(rep)
    for r in records:
        jsonschema.validate(r, SCHEMA)
    cases = [r for r in records if r["type"] == "case"]
    assert len(cases) == stop and all(r["outcome"] == "error" for r in cases)
    summary = records[-1]
    selected = records[0]["cases"]
    assert summary["stopped"] == runner.stopped_text(stop) and summary["not_run"] == selected - stop
    assert f"{runner.stopped_text(stop)}: {selected - stop} of {selected} cases not run" in out


def test_maxfail_in_parallel_stops_too():
    cases = vectors.load_suite(formats=["params"])
    t = testee.Persistent(BAD + ["serve-internal"])
    result = runner.run(t, cases, progress=False, jobs=2, maxfail=2)
    assert 2 <= result.counts["error"] <= 3  # the case already running in the other thread finishes
    assert result.not_run == len(cases) - len(result.results) > 100 and result.stopped


def test_mutate_maxfail_stops_the_check_of_a_failing_reader(tmp_path):
    from mlf_spec.conformance.mutation import harness

    src = tmp_path / "reader.c"
    src.write_text('#include <stdio.h>\n#include <string.h>\nint main(int argc, char **argv) {\n'
                   '  if (argc > 1 && !strcmp(argv[1], "info")) { puts("{\\"protocol\\": \\"mlf-conformance/1\\", '
                   '\\"name\\": \\"no\\", \\"version\\": \\"0\\", \\"formats\\": [{\\"format\\": \\"params\\", '
                   '\\"roles\\": [\\"decode\\"]}]}"); return 0; }\n  return 1;\n}\n')
    with pytest.raises(MlfError, match=r"fails 2 of the first \d+ of \d+ \(stopped after 2: -x / --maxfail 2\)"):
        harness.mutate(src, vectors.load_suite(formats=["params"]), maxfail=2, build_cmd="gcc -o {out} {src}")


def test_generate_leaves_no_hypothesis_folder_in_the_working_directory(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    env.pop("HYPOTHESIS_STORAGE_DIRECTORY", None)
    done = subprocess.run([sys.executable, "-m", "mlf_spec", "conformance", "run", "--adapter", "mlf-spec",
                           "--format", "params", "--id", "params.valid.w-and-b", "--generate", "5", "--quiet",
                           "--save-dir", str(tmp_path / "saved")], cwd=work, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert "5 requests asked" in done.stdout
    assert list(work.iterdir()) == []
    assert (tmp_path / "cache" / "mlf-spec" / "hypothesis").is_dir()  # its Unicode tables went to the cache


def test_a_known_failure_without_a_reason_names_its_line_once(tmp_path, capsys):
    with pytest.raises(MlfError) as info:
        KnownFailures.parse("# a comment\n\nparams.valid.0-d\n", "kf.txt")
    assert str(info.value) == "kf.txt: line 3: 'params.valid.0-d' has no reason (write the reason after the case id)"
    kf = tmp_path / "kf.txt"
    kf.write_text("params.valid.0-d\n")
    assert cli(["conformance", "run", "--adapter", "mlf-spec", "--known-failures", str(kf), "--id", "params.valid.0-d"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("line 1") == 1 and err.startswith("mlf-spec: error:"), err
    # comments and blank lines are accepted
    assert len(KnownFailures.parse("# why\n\n  \nparams.valid.0-d  a reason  # not a comment\n")) == 1


def test_every_refused_extent_sits_one_step_past_the_bound():
    """shape each >= 0: refused at -1 (beside 0 on either side, twice, and alone), so a reader
    checking `e < -1` fails; the extents are read from the files themselves."""
    import struct

    by_id = {c.id: c for c in vectors.load_suite(formats=["params"])}
    at = 8 + 8 + 8 + 8 + 1 + 8 + 8 + 8 + 8  # one name "t": the record's ndim
    for vid, shape in (("params.bound.shape-zero-and-negative", [0, -1]), ("params.bound.shape-negative-and-zero", [-1, 0]),
                       ("params.bound.shape-two-negatives", [-1, -1]), ("params.bound.shape-minus-1", [-1])):
        case = by_id[vid]
        data = case.input()
        ndim = struct.unpack_from("<i", data, at)[0]
        assert list(struct.unpack_from(f"<{ndim}q", data, at + 8)) == shape, vid
        assert case.expected == {"outcome": "reject", "error_class": "constraint"}, vid
        assert "tensor_record.shape.each" in case.features["rule"], vid
