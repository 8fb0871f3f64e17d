"""What implementers' trials of the conformance kit found, each fixed and kept fixed: the
reproducer of a persistent run, `internal` answers, coverage under retargeted scope values, a
plugin whose testee cannot start, empty selections, one set of counts everywhere, the
generated-case record, partial blob readers (`payloads`) and module kinds that are not UTF-8."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from mlf_spec.cli import main as cli
from mlf_spec.conformance import adapters, compat, report, runner, testee, vectors
from mlf_spec.conformance.adapters.mlf_spec import MlfSpecAdapter
from mlf_spec.conformance.known_failures import KnownFailures

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]
BAD = [sys.executable, str(ROOT / "tests" / "support" / "conformance_testees" / "misbehaving.py")]
FEW = ["params.valid.w-and-b", "params.valid.0-d", "params.broken.truncated.at-0"]
MLF_SPEC = str(Path(sys.executable).parent / "mlf-spec")


def _ids(*ids: str) -> list[str]:
    return [a for i in ids for a in ("--id", i)]


def test_a_persistent_failure_prints_a_reproducer_that_replays_through_serve(tmp_path, capsys):
    rep = tmp_path / "r.jsonl"
    status = cli(["conformance", "run", "--testee", shlex.join(BAD + ["serve-wrong"]), "--report-json", str(rep),
                  *_ids("params.valid.w-and-b")])
    out = capsys.readouterr().out
    assert status == 1
    case = next(r for r in report.read_report(rep) if r["type"] == "case")
    assert case["outcome"] == "fail"
    repro = case["reproduce"]
    assert "conformance request" in repro and repro.endswith("serve-wrong serve"), repro
    assert f"reproduce: {repro}" in out
    assert json.loads(case["request"])["op"] == "decode"
    # the command replays the same request through a server, which answers the same wrong reading
    done = subprocess.run(repro.replace("mlf-spec ", shlex.quote(MLF_SPEC) + " ", 1), shell=True, capture_output=True,
                          timeout=60)
    resp = json.loads(done.stdout)
    assert resp["ok"] and resp["reading"]["tensors"][0]["shape"][-1] == 1
    sent = json.loads(case["request"])
    assert {k: v for k, v in resp.items()} and sent["input"] == json.loads(subprocess.run(
        [MLF_SPEC, "conformance", "request", repro.split()[3]], capture_output=True, timeout=60).stdout)["input"]


def test_a_one_shot_failure_keeps_its_one_shot_reproducer():
    result = runner.run(testee.OneShot(BAD + ["wrong"]), vectors.load_suite(ids=FEW[:1]), progress=False)
    rec = result.results[0]
    assert rec["reproduce"].endswith("params.valid.w-and-b.params") and "serve" not in rec["reproduce"]
    assert "request" not in rec


@pytest.mark.parametrize("mode", ["internal", "serve-internal"])
def test_a_clean_internal_answer_is_an_internal_error_not_a_crash(mode, tmp_path):
    t = (testee.Persistent if mode.startswith("serve") else testee.OneShot)(BAD + [mode])
    rep = report.JsonLines(tmp_path / "r.jsonl")
    result = runner.run(t, vectors.load_suite(ids=FEW[:2]), progress=False, report=rep)
    rep.close()
    assert [(r["outcome"], r["error_kind"]) for r in result.results] == [("error", "internal")] * 2
    assert "signal" not in result.results[0]
    report.read_report(tmp_path / "r.jsonl")  # the schema takes the kind
    report.write_junit(tmp_path / "r.xml", result.results, "t", 1.0)
    errors = ET.parse(tmp_path / "r.xml").getroot().iter("error")
    assert {e.get("type") for e in errors} == {"internal"}


def test_an_exception_in_an_adapter_is_internal_over_every_transport():
    class Broken(MlfSpecAdapter):
        def decode(self, fmt, data, options):
            raise AssertionError("oops")

    case = vectors.load_suite(ids=FEW[:1])[0]
    assert testee.InProcess(Broken()).ask(case).error_kind == "internal"
    from mlf_spec.conformance import protocol

    out, err = _Sink(), _TextSink()
    assert protocol.one_shot(Broken(), ["decode", "params"], stdin=_Source(case.input()), stdout=out, stderr=err) == 1
    assert json.loads(out.data)["error"]["class"] == "internal" and "AssertionError" in err.text


class _Source:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def read(self, n: int = -1) -> bytes:
        return self.data if n < 0 else self.data[:n]


class _Sink:
    def __init__(self) -> None:
        self.data = b""

    def write(self, b: bytes) -> None:
        self.data += b


class _TextSink:
    def __init__(self) -> None:
        self.text = ""

    def write(self, s: str) -> None:
        self.text += s

    def flush(self) -> None:
        pass


class _OnlyV026(MlfSpecAdapter):
    """The reference, declaring the v0.26 dialect only."""

    def info(self):
        doc = super().info()
        for f in doc["formats"]:
            if f["format"] == "params":
                f["scope"] = {"dialect": ["v0.26"]}
        return doc


def test_coverage_counts_a_retargeted_case_under_the_value_it_ran_with(tmp_path):
    cases = [c for c in vectors.load_suite(formats=["params"])
             if c.options.get("dialect") == "v0.23" and "v0.26" in vectors.scope_list(c.scope.get("dialect", []))]
    assert cases
    rep = report.JsonLines(tmp_path / "r.jsonl")
    result = runner.run(testee.InProcess(_OnlyV026()), cases, progress=False, report=rep)
    rep.close()
    assert all(r["outcome"] == "pass" and r["retargeted"] == {"dialect": "v0.26"} for r in result.results)
    rows = {(r["feature"], r["value"]): (r["passed"], r["total"]) for r in result.coverage}
    assert rows[("dialect", "v0.26")] == (len(cases), len(cases))
    assert ("dialect", "v0.23") not in rows
    page = compat.page(report.read_report(tmp_path / "r.jsonl"))
    assert "| params | dialect | v0.26 |" in page and "v0.23" not in page.split("## Coverage")[1].split("##")[0]


def test_the_plugin_with_a_testee_that_cannot_start_gives_one_clear_error(pytester):
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--mlf-testee", shlex.join(BAD + ["noinfo"]),
                                          "--mlf-id", "params.valid.*", "-q")
    text = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert text.count("did not answer `info`") == 1, text
    assert "Traceback" not in text


@pytest.mark.parametrize("how", ["typo", "empty-folder"])
def test_a_run_selecting_no_case_exits_2_unless_allowed(how, tmp_path, capsys):
    sel = ["--id", "typo*"] if how == "typo" else ["--vectors", str(tmp_path)]
    base = ["conformance", "run", "--adapter", "mlf-spec", "--quiet", *sel]
    assert cli(base) == 2
    err = capsys.readouterr().err
    assert "no case of" in err and "--allow-empty" in err
    assert cli([*base, "--allow-empty"]) == 0
    assert capsys.readouterr().out.strip() == "0 cases: none run in 0.0 s"


def test_the_summary_line_and_the_report_page_agree_on_every_count(tmp_path, capsys):
    kf = tmp_path / "kf.txt"
    kf.write_text("params.valid.w-and-b  flaky: the shape is off by one\n"
                  "params.valid.0-d  the shape is off by one\n"
                  "params.valid.no-such-case  a case that left the suite\n"
                  "blob.ffi.kind.cuda  a case of another format: not noted by a params-only run\n"
                  "gen.params.decode.valid.accepted  a generated signature: never judged\n")
    rep = tmp_path / "r.jsonl"
    status = cli(["conformance", "run", "--testee", shlex.join(BAD + ["wrong"]), "--known-failures", str(kf),
                  "--report-json", str(rep), "--format", "params", *_ids(*FEW)])
    out = capsys.readouterr().out
    assert status == 0
    summary = out.strip().splitlines()[-1]
    assert summary.startswith("3 cases: 1 passed, 1 known failures, 1 flaky known failures")
    records = report.read_report(rep)
    page = compat.page(records)
    assert summary.split(" in ")[0] + "." in page
    assert records[-1]["flaky"] == 1
    notes = [line for line in out.splitlines() if line.startswith("note:")]
    assert len(notes) == 1 and "params.valid.no-such-case" in notes[0]
    assert [u.split(" ", 1)[1] for u in records[-1]["unused_known"]] == ["params.valid.no-such-case"]
    assert "`" + records[-1]["unused_known"][0] + "`" in page


def test_the_report_records_the_generated_run_even_when_nothing_disagreed(tmp_path, capsys):
    rep = tmp_path / "r.jsonl"
    status = cli(["conformance", "run", "--adapter", "mlf-spec", "--format", "graph-json", "--generate", "8",
                  "--seed", "3", "--generate-budget", "30", "--report-json", str(rep), "--quiet",
                  "--save-dir", str(tmp_path / "gen")])
    out = capsys.readouterr().out
    assert status == 0
    gen = next(r for r in report.read_report(rep) if r["type"] == "generated")
    assert gen["requested"] == 8 and gen["seed"] == 3 and gen["budget"] == 30.0 and gen["disagreements"] == 0
    assert gen["drawn"] >= 1 and sum(gen["kinds"].values()) == gen["drawn"]
    assert all(k.startswith("graph-json.decode.") for k in gen["kinds"])
    assert out.strip().splitlines()[-1].startswith("generated: ") and "no disagreement" in out
    page = compat.page(report.read_report(rep))
    assert "generated: " in page and "None disagreed." in page and "graph-json.decode.valid" in page


class _Opaque(MlfSpecAdapter):
    """A blob reader that parses no payload: ffi payloads are framed and read as bytes; a legacy
    blob's are not, so a module other than _lib is `unsupported`."""

    def __init__(self, declare: bool = True) -> None:
        super().__init__()
        self.declare = declare

    def info(self):
        support = {"format": "blob", "roles": ["decode"], **({"payloads": []} if self.declare else {})}
        return {**super().info(), "formats": [support]}

    def decode(self, fmt, data, options):
        from mlf_spec.conformance.adapters.base import Rejected

        reading = super().decode(fmt, data, options)
        if options.get("layout") == "legacy" and any(m["kind"] != "_lib" for m in reading["modules"]):
            raise Rejected("a legacy payload has no length", "unsupported")
        for m in reading["modules"]:
            for key in ("fields", "struct", "functions"):
                m.pop(key, None)
        return reading


def test_a_partial_blob_reader_is_skipped_not_failed_where_it_needs_a_payload_grammar():
    cases = vectors.load_suite(formats=["blob"], ids=["blob.legacy.*", "blob.ffi.kind.*"])
    result = runner.run(testee.InProcess(_Opaque()), cases, progress=False)
    by = {r["id"]: r for r in result.results}
    legacy_valid = [c.id for c in cases if c.options["layout"] == "legacy" and c.expected["outcome"] == "accept"
                    and runner.payloads_needed(c)]
    assert legacy_valid
    for cid in legacy_valid:
        assert by[cid]["outcome"] == "skip" and "payloads` does not declare" in by[cid]["message"], by[cid]
    lib_only = [c.id for c in cases if c.options["layout"] == "legacy" and c.expected["outcome"] == "accept"
                and not runner.payloads_needed(c)]
    assert lib_only and all(by[i]["outcome"] == "pass" for i in lib_only)
    ffi = [r for r in result.results if r["id"].startswith("blob.ffi.")]
    assert ffi and all(r["outcome"] == "pass" for r in ffi), [r for r in ffi if r["outcome"] != "pass"][:2]
    # without the declaration the same answers fail: the handshake is what makes them skips
    undeclared = runner.run(testee.InProcess(_Opaque(declare=False)), [c for c in cases if c.id in legacy_valid[:3]],
                            progress=False)
    assert [r["outcome"] for r in undeclared.results] == ["fail"] * 3


def test_a_module_kind_that_is_not_utf8_is_written_with_kind_hex_and_the_server_lives_on(tmp_path):
    case = vectors.load_suite(ids=["blob.ffi.kind.not-utf8"])[0]
    module = case.expected["reading"]["modules"][1]
    assert module["kind"] == "\ufffdnpu\ufffd" and module["kind_hex"] == "ff6e7075e282"
    cmd = [sys.executable, "-m", "mlf_spec", "conformance", "testee"]
    result = runner.run(testee.Persistent(cmd), vectors.load_suite(ids=["blob.ffi.kind.not-utf8", "params.valid.0-d"]),
                        progress=False)
    assert [r["outcome"] for r in result.results] == ["pass", "pass"], result.results
    blob = tmp_path / "odd.bin"
    blob.write_bytes(case.input())
    done = subprocess.run([MLF_SPEC, "blob", "dump", "--json", str(blob)], capture_output=True, timeout=60)
    assert done.returncode in (0, 1), done.stderr
    doc = json.loads(done.stdout.decode("utf-8"))  # strict UTF-8: no lone surrogate
    mod = doc["blobs"][0]["modules"][1]
    assert mod["kind"] == "\ufffdnpu\ufffd" and mod["kind_hex"] == "ff6e7075e282"


def test_a_response_that_cannot_be_written_is_an_internal_error_and_serving_goes_on():
    from mlf_spec.conformance import protocol

    line = protocol.response_line({"id": 3, "ok": True, "reading": {"kind": "\udcff"}})
    assert json.loads(line) == {"id": 3, "ok": False, "error": {"class": "internal", "message": json.loads(
        line)["error"]["message"]}}


def test_known_failures_entries_remember_their_file():
    kf = KnownFailures.parse("a.b  why\n", "x.txt").merged(KnownFailures.parse("c.d  why\n", "y.txt"))
    assert [(e.source, e.line) for e in kf.entries] == [("x.txt", 1), ("y.txt", 1)]
    assert runner.unused_lines(kf, kf.unused({"a.b"})) == ["y.txt:1 c.d"]


def test_the_reference_adapter_passes_the_new_vectors_in_process():
    cases = vectors.load_suite(ids=["blob.ffi.kind.not-utf8"])
    result = runner.run(testee.InProcess(adapters.load("mlf-spec")), cases, progress=False)
    assert result.exit_status == 0


def test_generated_blob_signatures_say_where_the_break_is():
    from hypothesis import find

    from mlf_spec.conformance import generated_cases

    info = MlfSpecAdapter().info()
    drawn = find(generated_cases.sources(info, ["blob"]),
                 lambda d: d.label.startswith("broken.lying_length.body.module-") and ".payload." in d.label)
    sig = generated_cases.signature(drawn, vectors.Answer.ok(reading={}),
                                    vectors.Verdict("fail", diff=["expected a rejection (length), got a reading"]))
    assert sig.startswith("gen.blob.decode.broken.lying_length.body.module-") and ".payload." in sig
    assert sig.endswith(".accepted")
    # a known failure for the size prefix does not hide a lying length inside a payload
    kf = KnownFailures.parse("gen.blob.decode.broken.lying_length.body.count.accepted  the size prefix\n")
    assert kf.match(sig) is None and kf.match("gen.blob.decode.broken.lying_length.body.count.accepted")


def test_place_names_the_module_kind_and_drops_indices():
    from mlf_spec.blob.strategies import place

    body = {"modules": [{"kind": "_lib"}, {"kind": "cuda", "payload": {}}]}
    assert place(("body", "modules", 1, "payload", "fmap", 0, "#count"), body) == "body.module-cuda.payload.fmap.count"
    assert place(("body", "#count"), body) == "body.count"


def test_era_latest_is_the_newest_writer_of_the_layout_not_a_guess():
    from mlf_spec.conformance import canonical

    assert canonical.newest_era("legacy") == (0, 21) and canonical.newest_era("ffi") >= (0, 27)
    two_libs = vectors.load_suite(ids=["blob.legacy.0.7.tree.two-libs"])[0]
    assert canonical.decode_blob(two_libs.input(), {"layout": "legacy", "era": "0.7"})["modules"]
    with pytest.raises(Exception) as err:  # the 0.21 grammar: one _lib only, and 0.7 payloads do not read
        canonical.decode_blob(two_libs.input(), {"layout": "legacy", "era": "latest"})
    assert canonical.error_class(err.value) in ("constraint", "length", "truncated")


def test_blob_finding_codes_are_one_set():
    import re

    import yaml

    codes = {f["code"] for f in yaml.safe_load((ROOT / "spec" / "findings" / "blob_check.yaml").read_text())["findings"]}
    for doc in ("canonical_blob.md", "blob_dump.md"):
        text = (ROOT / "generated" / "docs" / doc).read_text()
        named = set(re.findall(r"(?<![.\w])(?:tree|blob|module|library)\.[a-z]+(?:-[a-z]+)*(?![.\w-])", text))
        assert named and named <= codes, (doc, named - codes)
        assert not re.search(r"\((?:acyclic|single_lib), ", text)
    seen = {c for case in vectors.load_suite(formats=["blob"]) if case.expected["outcome"] == "accept"
            for c in case.expected["reading"].get("findings", [])}
    assert seen and seen <= codes, seen - codes
