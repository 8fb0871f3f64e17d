"""The fuzzing harness (mlf_spec.fuzzing, fuzz/): every target runs under atheris on its
seeds for a bounded budget, the regression corpus replays clean, and the pieces others
reuse (invariant checks, structure-aware mutators, seeds, dictionaries, the campaign
script) do what they promise."""

from __future__ import annotations

import gzip
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

from mlf_spec import archive, blob, metadata, params
from mlf_spec.errors import MalformedError
from mlf_spec.fuzzing import dictionaries, seeds, targets
from mlf_spec.fuzzing.invariants import InvariantBreak, MemoryBudget, Sandbox, attempt, guarded, same_bytes
from mlf_spec.fuzzing.mutators import byte_mutate, custom_mutator, interesting_ints

ROOT = Path(__file__).resolve().parents[2]
FUZZ = ROOT / "fuzz"
REGRESSIONS = sorted(p for p in (FUZZ / "regressions").glob("*/*") if p.is_file())


# ----------------------------------------------------------------- layout


def test_every_target_has_an_entry_point_and_back():
    files = {p.name[: -len("_fuzzer.py")] for p in FUZZ.glob("*_fuzzer.py")}
    assert files == set(targets.TARGETS)
    for name in files:
        text = (FUZZ / f"{name}_fuzzer.py").read_text()
        assert f'fuzz("{name}")' in text and text.startswith("#!/usr/bin/env python3")
        assert os.access(FUZZ / f"{name}_fuzzer.py", os.X_OK)


def test_regression_corpus_names_existing_targets():
    assert REGRESSIONS, "the regression corpus is empty"
    assert {p.parent.name for p in REGRESSIONS} <= set(targets.TARGETS)


@pytest.mark.parametrize("path", REGRESSIONS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_regression_input_replays_clean(path):
    targets.run(path.parent.name, path.read_bytes())


# ----------------------------------------------------------------- atheris


@pytest.fixture(scope="session")
def small_seeds(tmp_path_factory) -> Path:
    """The first eight seeds of every seed set, one directory per target."""
    out = tmp_path_factory.mktemp("seeds")
    cache: dict[str, list[bytes]] = {}
    for name, t in targets.TARGETS.items():
        if t.seeds not in cache:
            cache[t.seeds] = seeds.SEEDS[t.seeds]()[:8]
        seeds.write_corpus(out / name, cache[t.seeds])
    return out


@pytest.mark.parametrize("name", sorted(targets.TARGETS))
def test_target_runs_under_atheris_on_its_seeds(name, small_seeds, tmp_path):
    """A short bounded libFuzzer run (eight seeds, then mutations for about a second)."""
    pytest.importorskip("atheris", reason="atheris is installed by the test extra")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    (tmp_path / "corpus").mkdir()
    proc = subprocess.run([sys.executable, str(FUZZ / f"{name}_fuzzer.py"), str(tmp_path / "corpus"),
                           str(small_seeds / name), "-runs=200", "-max_total_time=1", "-timeout=30",
                           f"-artifact_prefix={tmp_path}/", "-print_final_stats=1"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
    log = proc.stderr[-3000:]
    assert proc.returncode == 0, log
    assert "stat::number_of_executed_units" in proc.stderr, log
    assert not list(tmp_path.glob("crash-*")) and not list(tmp_path.glob("timeout-*")), log


# ----------------------------------------------------------------- invariants


def test_attempt_lets_mlf_errors_through_as_none_and_breaks_on_anything_else():
    assert attempt(params.loads, b"not params") is None
    assert attempt(len, b"abc") == 3
    with pytest.raises(InvariantBreak) as info:
        attempt(int, "x")
    assert info.value.kind == "exception" and "ValueError" in info.value.message


def test_same_bytes_names_the_first_difference():
    same_bytes("ok", b"abc", b"abc")
    with pytest.raises(InvariantBreak, match="offset 2"):
        same_bytes("x", b"abX", b"abc")


def test_guarded_catches_escaping_exceptions_and_accepts_mlf_errors():
    def bad(data: bytes) -> None:
        raise KeyError("boom")

    def rejecting(data: bytes) -> None:
        raise MalformedError("bad input")

    with pytest.raises(InvariantBreak) as info:
        guarded(bad, b"x")
    assert info.value.kind == "exception"
    guarded(rejecting, b"x")


def test_memory_budget_is_enforced():
    def hungry(data: bytes) -> None:
        blob = bytearray(len(data) * 1000)
        assert blob is not None

    guarded(hungry, b"x" * 100, budget=MemoryBudget(2000, base=0))
    with pytest.raises(InvariantBreak) as info:
        guarded(hungry, b"x" * 100, budget=MemoryBudget(10, base=0))
    assert info.value.kind == "memory"


def test_sandbox_refuses_writes_outside_and_reports_leftovers(tmp_path):
    outside = tmp_path / "outside.txt"

    def writes_outside(data: bytes) -> None:
        try:
            outside.write_bytes(data)
        except PermissionError:
            pass  # a reader that swallows the refusal is still caught

    with pytest.raises(InvariantBreak) as info:
        guarded(writes_outside, b"x")
    assert info.value.kind == "write" and not outside.exists()

    def leaves_a_file(data: bytes) -> None:
        fd, _ = tempfile.mkstemp()
        os.close(fd)

    with pytest.raises(InvariantBreak) as info:
        guarded(leaves_a_file, b"x")
    assert info.value.kind == "leak"

    def leaks_a_descriptor(data: bytes) -> None:
        leaks_a_descriptor.keep = tempfile.TemporaryFile()  # type: ignore[attr-defined]

    with pytest.raises(InvariantBreak, match="descriptor"):
        guarded(leaks_a_descriptor, b"x")
    leaks_a_descriptor.keep.close()  # type: ignore[attr-defined]

    def cleans_up(data: bytes) -> None:
        with tempfile.TemporaryDirectory() as d:
            (Path(d) / "f").write_bytes(data)

    guarded(cleans_up, b"x")
    box = Sandbox(tmp_path / "box")
    assert box.allowed(tmp_path / "box" / "a") and not box.allowed(tmp_path / "a")
    assert not box.allowed(tmp_path / "box" / ".." / "a")


# ----------------------------------------------------------------- mutators


def _many(m, data: bytes, n: int = 300) -> list[bytes]:
    rng = random.Random(7)
    return [x for x in (m.mutate(data, rng) for _ in range(n)) if x is not None]


def test_spec_mutator_changes_params_files_in_both_ways():
    data = params.dumps({"w": np.arange(6, dtype="float32").reshape(2, 3), "b": np.arange(3)})
    outs = _many(targets.params_mutator(), data)
    assert len(outs) > 250 and all(o != data for o in outs)
    read = [o for o in outs if attempt(params.loads, o) is not None]
    # rebuilt mutations stay readable (a new shape, dtype or name), in-place ones are lies
    assert 0.1 * len(outs) < len(read) < 0.9 * len(outs)
    shapes = {tuple(params.loads(o)["w"].shape) for o in read if "w" in params.loads(o)
              and isinstance(params.loads(o)["w"], np.ndarray)}
    assert len(shapes) > 1
    again = _many(targets.params_mutator(), data)
    assert again == outs  # deterministic for a seed


def test_spec_mutator_reaches_blob_payloads():
    data = seeds.blob_seeds()[5]
    outs = _many(targets.blob_mutator(), data)
    parsed = [b for b in (attempt(blob.parse, o) for o in outs) if b is not None]
    assert parsed and len(outs) > 200
    assert len({tuple(e.kind for e in b.entries) for b in parsed}) > 1


def test_json_mutator_edits_keys_values_and_versions():
    doc = next(d for d in seeds.metadata_seeds() if json.loads(d).get("version") == 7)
    outs = _many(targets.metadata_mutator(), doc)
    assert len(outs) > 250
    parsed = []
    for o in outs:
        try:
            parsed.append(json.loads(o))
        except (ValueError, RecursionError):
            pass
    assert parsed and any(isinstance(p, dict) and p.get("version") != 7 for p in parsed)
    assert any(attempt(metadata.parse, o, lenient=True) is not None for o in outs)
    deep = [o for o in outs if o.count(b"[") > 1000]
    assert deep, "deep nesting is one of the mutations"


def test_tar_mutator_rewrites_members_headers_and_containers():
    tar = seeds.archive_seeds()[0]
    outs = _many(targets.archive_mutator(), tar, 200)
    assert len(outs) > 150
    opened = [a for a in (attempt(archive.open, o, **targets.FUZZ_LIMITS) for o in outs) if a is not None]
    assert opened and len(opened) < len(outs)  # some stay archives, some are refused
    for a in opened:
        a.close()
    assert any(o[:2] == b"\x1f\x8b" or o[:3] == b"BZh" or o[:6] == b"\xfd7zXZ\x00" for o in outs)


def test_container_mutator_handles_elf_c_and_tar():
    items = seeds.container_seeds()
    m = targets.container_mutator()
    for kind, pick in (("elf", lambda d: d[:4] == b"\x7fELF"), ("c", lambda d: b"__tvm_" in d and d[:1] == b"#"),
                       ("tar", lambda d: d[:2] == b"\x1f\x8b")):
        data = next(d for d in items if pick(d))
        outs = _many(m, data, 60)
        assert outs and any(o != data for o in outs), kind


def test_custom_mutator_respects_max_size_and_falls_back():
    fn = custom_mutator(targets.params_mutator())
    data = params.dumps({"w": np.zeros(100, "float32")})
    for seed in range(50):
        out = fn(data, 600, seed)
        assert 0 < len(out) <= 600
    plain = custom_mutator(None)
    outs = {plain(b"abcdefgh", 10, seed) for seed in range(40)}
    assert len(outs) > 20 and all(len(o) <= 10 for o in outs)  # byte mutations when no mutator is given
    assert byte_mutate(b"", 4, random.Random(1))  # an empty input grows


def test_interesting_ints_stay_in_range():
    for bits, signed in ((8, False), (32, True), (64, False)):
        vals = interesting_ints(5, bits, signed, [1 << 70, -3])
        lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
        assert vals and all(lo <= v <= hi for v in vals) and 5 not in vals


# ----------------------------------------------------------------- seeds and dictionaries


def test_seeds_are_deterministic_and_valid():
    from mlf_spec import strategies as ms

    assert seeds.draw(ms.params_bytes(), 5, 1) == seeds.draw(ms.params_bytes(), 5, 1)
    vectors = set(seeds.vector_inputs(["blob"]))  # the suite's inputs, broken ones among them
    made = [d for d in seeds.container_seeds() if d not in vectors]
    assert len(made) >= 24
    found = [attempt(blob.read, d) for d in made]
    assert all(found), "every container seed built here holds a blob that reads"
    for fmt_seed in seeds.archive_seeds()[:5]:
        with archive.open(fmt_seed) as a:
            assert a.version in metadata.VERSIONS


def test_elf_builder_makes_files_pyelftools_and_the_locator_read():
    from mlf_spec.blob.locate import SYMBOL_FFI, locate_blobs

    raw = seeds.blob_seeds()[0]
    for is64 in (True, False):
        for big in (False, True):
            for shared in (False, True):
                found = locate_blobs(seeds.elf_with_blob(raw, SYMBOL_FFI, is64=is64, big_endian=big, shared=shared))
                assert [b.data for b in found] == [raw]


def test_vectors_directory_feeds_the_seeds(tmp_path):
    (tmp_path / "params").mkdir()
    data = params.dumps({"a": np.ones(1, "int8")})
    (tmp_path / "params" / "one.params").write_bytes(data)
    (tmp_path / "params" / "one.case.json").write_text(json.dumps({"id": "one", "format": "params", "role": "decode",
                                                                    "input": "one.params"}))
    (tmp_path / "params" / "enc.case.json").write_text(json.dumps({"id": "enc", "format": "params", "role": "encode",
                                                                    "input": "one.params"}))
    assert seeds.vector_inputs(["params"], tmp_path) == [data]
    assert seeds.vector_inputs(["blob"], tmp_path) == []


def test_dictionaries_are_valid_libfuzzer_syntax(tmp_path):
    for name in targets.TARGETS:
        text = dictionaries.write(name, tmp_path / f"{name}.dict").read_text()
        lines = text.splitlines()
        assert lines and all(line.startswith("kw") and line.endswith('"') and '="' in line for line in lines)
        assert all(c.isprintable() for c in text.replace("\n", ""))


# ----------------------------------------------------------------- campaign


def test_campaign_script_writes_a_report(tmp_path):
    pytest.importorskip("atheris", reason="atheris is installed by the test extra")
    proc = subprocess.run([sys.executable, str(FUZZ / "campaign.py"), "--target", "blob_payload", "--runs", "300",
                           "--jobs", "1", "--nice", "0", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=300, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    report = json.loads((tmp_path / "report.json").read_text())
    r = report[0]
    assert r["target"] == "blob_payload" and r["executions"] >= 300 and r["corpus"] > 0
    assert 0 < r["coverage"]["percent"] <= 100 and not r["crashes"] and not r["replay_failures"]
    assert "| blob_payload | blob |" in (tmp_path / "report.md").read_text()


# ----------------------------------------------------------------- harness on real inputs


def test_targets_reject_garbage_without_breaking():
    for name in targets.TARGETS:
        for data in (b"", b"\x00" * 600, b"BZh9", gzip.compress(b"x" * 1000), b"{}", b"[]" * 10):
            targets.run(name, data)
