"""Folder-shaped conformance cases (docs/conformance/protocol.md, "Folder-shaped formats"): the
tensor cache's vectors as cases of `conformance run`, sent by path in every mode, to testees
that declare the format and to no other."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mlf_spec.conformance import adapters, folders, runner, testee, vectors
from mlf_spec.conformance.adapters.base import Adapter, Rejected
from mlf_spec.errors import MlfError

CLI = [sys.executable, "-m", "mlf_spec", "conformance", "testee"]


@pytest.fixture(scope="module")
def cache_cases() -> list[vectors.Case]:
    return vectors.load_suite(formats=["tensor-cache"])


def test_every_cache_vector_is_a_case_in_both_index_versions(cache_cases):
    from mlf_spec.cache import cases

    ids = {c.id for c in cache_cases}
    for vc in cases.all_cases():
        assert f"tensor-cache.{vc.id}" in ids
        if "tensor-cache.json" in vc.files:
            assert f"tensor-cache.v1.{vc.id}" in ids
    v1 = [c for c in cache_cases if c.scope == {"version": ["1"]}]
    assert v1 and all(c.expected.get("reading", {}).get("index", "ndarray-cache.json") == "ndarray-cache.json"
                      for c in v1)
    outcomes = {c.expected["outcome"] for c in cache_cases}
    assert outcomes == {"accept", "reject"}


def test_the_manifest_digest_is_what_sha256sum_gives(cache_cases):
    case = next(c for c in cache_cases if c.id == "tensor-cache.valid.sharded")
    names = sorted(os.listdir(case.input_path))
    lines = "".join(f"{hashlib.sha256((case.input_path / n).read_bytes()).hexdigest()}  {n}\n" for n in names)
    assert hashlib.sha256(lines.encode()).hexdigest() == case.input_sha256
    if shutil.which("sha256sum"):
        out = subprocess.run(["sha256sum", *names], cwd=case.input_path, capture_output=True, check=True).stdout
        assert hashlib.sha256(out).hexdigest() == case.input_sha256


def test_an_altered_or_linked_folder_is_refused(tmp_path, cache_cases):
    case = next(c for c in cache_cases if c.id == "tensor-cache.valid.base")
    vectors.write_suite(tmp_path / "s", source=case.path.parent.parent, formats=["tensor-cache"])
    copy = tmp_path / "s" / "tensor-cache"
    (copy / "valid.base" / "params_shard_0.bin").write_bytes(b"\0")
    altered = vectors.load_case(copy / "tensor-cache.valid.base.case.json")
    with pytest.raises(MlfError, match="does not match its input_sha256"):
        altered.input_files()
    os.symlink("/etc/hostname", copy / "valid.raw" / "link")
    with pytest.raises(MlfError, match="no links"):
        vectors.load_case(copy / "tensor-cache.valid.raw.case.json").input_files()
    (copy / "valid.sharded").rename(copy / "gone")
    with pytest.raises(MlfError, match="must be a folder"):
        vectors.load_case(copy / "tensor-cache.valid.sharded.case.json")


class ParamsOnly(Adapter):
    """An old testee: it declares .params only."""

    name = "params-only"

    def info(self) -> dict[str, Any]:
        return {"protocol": "mlf-conformance/1", "name": "p", "version": "1",
                "formats": [{"format": "params", "roles": ["decode"]}]}

    def decode(self, format: str, data: bytes, options: dict[str, str]) -> Any:  # noqa: A002
        raise AssertionError("never asked")


def test_a_testee_that_does_not_declare_the_format_never_gets_these_cases(cache_cases):
    result = runner.run(testee.InProcess(ParamsOnly()), cache_cases, progress=False)
    assert set(result.counts) == {"skip"} and result.counts["skip"] == len(cache_cases)


class NaiveLoader(Adapter):
    """A cache reader that opens dataPath as given (as TVM's loaders do) and writes into the
    folder it was given; it answers only the number of tensors and their names."""

    name = "naive"

    def info(self) -> dict[str, Any]:
        return {"protocol": "mlf-conformance/1", "name": "naive", "version": "1",
                "formats": [{"format": "tensor-cache", "roles": ["decode"]}]}

    def decode(self, format: str, data: Any, options: dict[str, str]) -> Any:  # noqa: A002
        folder = Path(data)
        (folder / "scribble.txt").write_text("a testee wrote here")
        try:
            index = json.loads((folder / "tensor-cache.json").read_bytes())
            for shard in index["records"]:
                (folder / shard["dataPath"]).read_bytes()
        except (OSError, ValueError, KeyError) as exc:
            raise Rejected(str(exc)) from None
        from mlf_spec.conformance.canonical_cache import decode_cache

        index_path = folder / "tensor-cache.json"
        good = dict(index)
        good["records"] = [{**s, "dataPath": os.path.basename(s["dataPath"])} for s in index["records"]]
        index_path.write_text(json.dumps(good))
        return decode_cache(folder)


def test_the_testee_gets_a_private_copy_named_as_the_vector(cache_cases):
    chosen = [c for c in cache_cases if c.id in ("tensor-cache.valid.base", "tensor-cache.unreadable.data-path-dotdot",
                                                 "tensor-cache.unreadable.data-path-dotdot-back")]
    before = {c.id: c.input_files() for c in chosen}
    result = runner.run(testee.InProcess(NaiveLoader()), chosen, progress=False)
    outcome = {r["id"]: r["outcome"] for r in result.results}
    # it follows '..': outside the private copy there is nothing, back inside it finds the shard
    assert outcome == {"tensor-cache.valid.base": "pass", "tensor-cache.unreadable.data-path-dotdot": "pass",
                       "tensor-cache.unreadable.data-path-dotdot-back": "fail"}
    assert {c.id: c.input_files() for c in chosen} == before  # the vectors are untouched
    assert not any(p.name == "scribble.txt" for c in chosen for p in c.input_path.iterdir())


@pytest.mark.parametrize("mode", ["persistent", "one-shot"])
def test_the_reference_testee_passes_by_path_in_both_modes(cache_cases, mode):
    chosen = cache_cases if mode == "persistent" else \
        [c for c in cache_cases if c.id in ("tensor-cache.valid.sharded", "tensor-cache.broken.shard-shorter")]
    t = testee.Persistent(CLI) if mode == "persistent" else testee.OneShot(CLI)
    result = runner.run(t, chosen, progress=False, jobs=2)
    assert result.counts["pass"] == len(chosen), [r for r in result.results if r["outcome"] != "pass"][:2]


def _broken_reference() -> type[Adapter]:
    from mlf_spec.conformance.adapters.mlf_spec import MlfSpecAdapter

    class Broken(MlfSpecAdapter):
        """The reference, with the first tensor's digest wrong."""

        name = "broken"

        def decode(self, format: str, data: Any, options: dict[str, str]) -> Any:  # noqa: A002
            reading = super().decode(format, data, options)
            if format == "tensor-cache" and reading["tensors"]:
                reading["tensors"][0]["sha256"] = "0" * 64
            return reading

    return Broken


def test_failures_carry_reproducers_that_replay_the_case(tmp_path, cache_cases):
    case = next(c for c in cache_cases if c.id == "tensor-cache.valid.raw")
    for t in (testee.OneShot(CLI), testee.Persistent(CLI)):
        assert t.reproduce(case)
        out = subprocess.run(t.reproduce(case), shell=True, capture_output=True, timeout=120,
                             env={**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"})
        assert out.returncode == 0, out.stderr[-500:]
        answer = json.loads(out.stdout.splitlines()[-1])
        reading = answer.get("reading", answer)
        assert case.check(vectors.Answer.ok(reading=reading)).outcome == "pass"
    line = json.loads(testee.Persistent(CLI).request_line(case))
    assert line["input_dir"] == str(case.input_path.resolve()) and "input" not in line
    report, junit = tmp_path / "r.jsonl", tmp_path / "j.xml"
    from mlf_spec.cli import main

    code = main(["conformance", "run", "--adapter", f"{__name__}:BrokenReference", "--format", "tensor-cache",
                 "--id", "tensor-cache.valid.raw", "--report-json", str(report), "--junit", str(junit), "--quiet"])
    assert code == 1
    recs = [json.loads(x) for x in report.read_text().splitlines()]
    case_rec = next(r for r in recs if r["type"] == "case")
    assert case_rec["outcome"] == "fail" and "tensors[0].sha256" in case_rec["diff"][0]
    assert "tensor-cache.valid.raw" in junit.read_text()


BrokenReference = _broken_reference()


def test_the_protocol_refuses_a_folder_request_without_a_folder():
    from mlf_spec.conformance.protocol import respond

    ref = adapters.load("mlf-spec")
    resp = respond(ref, json.dumps({"id": 4, "op": "decode", "format": "tensor-cache", "options": {}}))
    assert resp["ok"] is False and resp["error"]["class"] == "protocol" and "input_dir" in resp["error"]["message"]
    resp = respond(ref, json.dumps({"id": 5, "op": "decode", "format": "tensor-cache", "options": {},
                                    "input_dir": "relative/path"}))
    assert resp["ok"] is False and resp["error"]["class"] == "protocol"


def test_folder_helpers_refuse_paths_that_leave(tmp_path):
    for bad in ("../x", "/etc/x", "a/../../x", ""):
        with pytest.raises(MlfError):
            folders.write_files(tmp_path, {bad: b""})


class LinkWriter(Adapter):
    """A cache writer that leaves a symbolic link in the folder it writes, or a shard of
    other bytes."""

    name = "link-writer"

    def __init__(self, how: str = "link") -> None:
        self.how = how

    def info(self) -> dict[str, Any]:
        return {"protocol": "mlf-conformance/1", "name": "w", "version": "1",
                "formats": [{"format": "tensor-cache", "roles": ["encode"]}]}

    def encode(self, format: str, reading: Any, options: dict[str, str]) -> bytes:  # noqa: A002
        from mlf_spec.conformance.canonical_cache import encode_cache

        out = Path(options["output_dir"])
        encode_cache(reading, {k: v for k, v in options.items() if k != "output_dir"}, out)
        if self.how == "link":
            os.symlink("/etc/hostname", out / "extra")
        else:
            shard = out / "params_shard_0.bin"
            shard.write_bytes(bytes(len(shard.read_bytes())))
        return b""


def test_encode_cases_read_back_what_the_testee_wrote(cache_cases):
    encode = [c for c in cache_cases if c.role == "encode"]
    assert len(encode) >= 5 and {c.options.get("shard_cap_mb") for c in encode} > {None}
    assert all("data" in t for c in encode for t in c.reading_input()["tensors"])
    result = runner.run(testee.InProcess(adapters.load("mlf-spec")), encode, progress=False)
    assert result.counts["pass"] == len(encode)
    links = runner.run(testee.InProcess(LinkWriter("link")), encode[:1], progress=False).results[0]
    assert links["outcome"] == "error" and "not plain files" in links["message"]
    zeros = runner.run(testee.InProcess(LinkWriter("zeros")), encode[:1], progress=False).results[0]
    assert zeros["outcome"] == "fail" and any(".sha256" in d for d in zeros["diff"]), zeros
    t = testee.OneShot(CLI)
    out = subprocess.run(["bash", "-c", t.reproduce(encode[0])], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-500:]
    folder = Path(out.stdout.split("written to ")[-1].strip())
    try:
        from mlf_spec.conformance.canonical_cache import decode_cache
        from mlf_spec.conformance.compare import compare

        assert not compare("tensor-cache", encode[0].expected["reading"], decode_cache(folder), role="encode")
    finally:
        shutil.rmtree(folder)
