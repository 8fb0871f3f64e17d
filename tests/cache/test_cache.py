"""The tensor cache codec, checks and CLI (mlf_spec.cache), without TVM: vectors, hostile
folders, atomic writes, round trips and the strategies."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from mlf_spec import cache
from mlf_spec.cache import cases, check, encodings, rules
from mlf_spec.cache import strategies as cs
from mlf_spec.cache.folder import UnsafePathError
from mlf_spec.cli import main
from mlf_spec.errors import MlfError, OutputExistsError, UnsupportedError, ValidationError

VECTORS = Path(__file__).resolve().parents[2] / "vectors" / "tensor-cache"
CASES = cases.all_cases()


def _folder(tmp_path: Path, files: dict[str, bytes], name: str = "c") -> Path:
    d = tmp_path / name
    d.mkdir()
    for n, data in files.items():
        (d / n).write_bytes(data)
    return d


def _mlf(*args: str) -> subprocess.CompletedProcess:
    """Run the CLI in this process (as `mlf-spec ARGS`), capturing its output."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return subprocess.CompletedProcess(["mlf-spec", *args], code, out.getvalue(), err.getvalue())


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_case_findings_and_strict_open(tmp_path, case):
    d = _folder(tmp_path, case.files)
    if case.error:
        with pytest.raises(MlfError) as err:
            check.check(d)
        assert type(err.value).__name__ == case.error
        assert err.value.file and str(d) in err.value.file and err.value.offset is not None
        return
    codes = set(check.check(d).codes())
    assert set(case.findings) <= codes
    assert not set(case.absent) & codes
    if case.strict_ok:
        with cache.open(d) as lazy:
            for t in lazy.tensors:
                if "tensor.dtype-numpy" in case.findings and t.dtype == "int4":
                    with pytest.raises(UnsupportedError):
                        lazy.array(t)
                    assert len(lazy.raw(t)) == t.nbytes
                elif "tensor.shape-numpy" in case.findings and t.name == "e":
                    with pytest.raises(UnsupportedError):  # NumPy cannot hold the shape; flat() reads it
                        lazy.array(t)
                    assert lazy.flat(t).size == 0
                else:
                    assert lazy.array(t).shape == t.shape
    else:
        with pytest.raises(MlfError) as err:
            cache.open(d)
        assert err.value.field  # the JSON path of the record


def test_every_finding_has_a_case_from_both_sides():
    declared = set(rules.FINDINGS)
    broken = {code for c in CASES for code in c.findings}
    kept = {code for c in CASES for code in c.absent}
    assert declared - {"cache.index-name", "cache.legacy-layout"} <= broken
    assert rules.FATAL <= kept | {"shard.missing", "shard.format", "tensor.dtype", "tensor.negative-extent"}


def test_vectors_on_disk_match_the_cases():
    descriptors = sorted(VECTORS.glob("*.vector.json"))
    assert len(descriptors) == len(CASES) >= 40
    for p in descriptors:
        desc = json.loads(p.read_text())
        folder = VECTORS / desc["input"]
        assert sorted(os.listdir(folder)) == desc["files"]
        if desc["expected"]["outcome"] == "unreadable":
            with pytest.raises(MlfError):
                check.check(folder)
        else:
            assert set(desc["expected"]["findings"]) <= set(check.check(folder).codes())


def test_round_trip_raw_and_bf16(tmp_path):
    rng = np.random.default_rng(0)
    params = {"a": rng.standard_normal((3, 5)).astype("f4"), "b": rng.integers(0, 9, 4).astype("u8"),
              "c": np.array(7, dtype="i2"), "d": np.zeros((0, 4), "f8")}
    cache.write(tmp_path / "raw", params, encode_format="raw", shard_cap_mb=1 / 8192)
    got, meta = cache.load(tmp_path / "raw")
    assert meta == {}
    for k, v in params.items():
        assert got[k].dtype == v.dtype and got[k].shape == v.shape and got[k].tobytes() == v.tobytes()
    cache.write(tmp_path / "bf", params, metadata={"x": 1})
    got, meta = cache.load(tmp_path / "bf" / "tensor-cache.json")
    assert meta == {"x": 1}
    want = (encodings.f32_to_bf16(params["a"]).astype("<u4") << 16).view("<f4").reshape(3, 5)
    assert got["a"].tobytes() == want.tobytes()
    assert np.max(np.abs(got["a"] - params["a"])) < 0.01
    assert (tmp_path / "bf" / "tensor-cache-b16.json").is_file()
    b16 = json.loads((tmp_path / "bf" / "tensor-cache-b16.json").read_text())
    assert b16["records"][0]["records"][0]["dtype"] == "bfloat16"


def test_f32_to_bf16_rounding_edges():
    x = np.array([1.0, 1.00390625, 1.01171875, np.inf, -np.inf, np.nan, 3.4028235e38, -0.0], "<f4")
    words = encodings.f32_to_bf16(x)
    # ties to even below the largest bfloat16; truncation for inf/NaN/float32 max
    assert list(words[:3]) == [0x3F80, 0x3F80, 0x3F82]
    assert words[3] == 0x7F80 and words[4] == 0xFF80 and words[5] >> 7 == 0xFF
    assert words[6] == 0x7F7F and words[7] == 0x8000


def test_shard_plan_follows_the_writer():
    cap = 1 / 1024  # 1024 bytes
    params = [("a", np.zeros(100, "u1")), ("big", np.zeros(600, "u1")), ("b", np.zeros(900, "u1")),
              ("c", np.zeros(10, "u1")), ("e", np.zeros(0, "u1"))]
    shards, _ = cache.codec.plan(params, encode_format="raw", shard_cap_mb=cap, keep_empty=False)
    # b does not fit and is at least half the cap: it goes out of band at once, as shard 0,
    # while the shard being filled stays open
    assert [[r["name"] for r, _, _ in s] for s in shards] == [["b"], ["a", "big", "c", "e"]]
    params = [("a", np.zeros(100, "u1")), ("big", np.zeros(1000, "u1")), ("e", np.zeros(0, "u1"))]
    shards, _ = cache.codec.plan(params, encode_format="raw", shard_cap_mb=cap, keep_empty=False)
    assert [[r["name"] for r, _, _ in s] for s in shards] == [["big"], ["a", "e"]]
    only_empty = [("e", np.zeros(0, "u1"))]
    assert cache.codec.plan(only_empty, shard_cap_mb=cap, keep_empty=False)[0] == []  # TVM drops it
    assert len(cache.codec.plan(only_empty, shard_cap_mb=cap, keep_empty=True)[0]) == 1


def test_writer_refuses_and_leaves_nothing(tmp_path):
    with pytest.raises(ValidationError):
        cache.write(tmp_path / "dup", [("a", np.zeros(2)), ("a", np.zeros(2))])
    with pytest.raises(UnsupportedError):
        cache.write(tmp_path / "obj", {"a": np.zeros(2), "s": np.array(["x"])})
    with pytest.raises(UnsupportedError):
        cache.write(tmp_path / "fmt", {"a": np.zeros(2)}, encode_format="f32-to-fp8")
    assert sorted(os.listdir(tmp_path)) == []
    cache.write(tmp_path / "ok", {"a": np.zeros(2, "f4")})
    with pytest.raises(OutputExistsError):
        cache.write(tmp_path / "ok", {"a": np.ones(2, "f4")})
    assert cache.load(tmp_path / "ok")[0]["a"].tolist() == [0, 0]
    cache.write(tmp_path / "ok", {"a": np.ones(2, "f4")}, replace=True)
    assert cache.load(tmp_path / "ok")[0]["a"].tolist() == [1, 1]
    assert sorted(os.listdir(tmp_path)) == ["ok"]


def test_open_reads_no_shard_data(tmp_path):
    d = _folder(tmp_path, cases.base())
    with cache.open(d) as lazy:
        assert lazy._maps == {}  # nothing mapped, nothing read: only sizes were taken
        assert len(lazy.tensors) == 4
        assert bytes(lazy.raw("b")) == np.arange(6, dtype="<i4").tobytes()
        assert list(lazy._maps) == [0]


def test_symlinked_shard_and_folder_are_refused(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    d = _folder(tmp_path, cases.base())
    shard = d / "params_shard_0.bin"
    (outside / "params_shard_0.bin").write_bytes(shard.read_bytes())
    shard.unlink()
    shard.symlink_to(outside / "params_shard_0.bin")
    with pytest.raises(UnsafePathError) as err:
        cache.open(d)
    assert err.value.field == "records[0].dataPath" and err.value.offset is not None
    with pytest.raises(UnsafePathError):
        check.check(d)
    # a folder on the way that is a link
    d2 = _folder(tmp_path, {}, "c2")
    files = cases._edit(cases.base(), lambda doc: doc["records"][0].update(dataPath="sub/params_shard_0.bin"))
    (d2 / "tensor-cache.json").write_bytes(files["tensor-cache.json"])
    (d2 / "sub").symlink_to(outside)
    with pytest.raises(UnsafePathError):
        cache.open(d2)


def test_fifo_shard_does_not_block(tmp_path):
    d = _folder(tmp_path, cases.base())
    (d / "params_shard_0.bin").unlink()
    os.mkfifo(d / "params_shard_0.bin")
    with pytest.raises(UnsupportedError):
        cache.open(d)


def test_cli_dump_check_exit_codes(tmp_path):
    d = _folder(tmp_path, cases.base())
    r = _mlf("cache", "dump", str(d), "--json", "--stats")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert [t["name"] for t in doc["tensors"]] == ["w", "b", "h", "flag"]
    import hashlib
    with cache.open(d) as lazy:
        want = hashlib.sha256(lazy.array("w").tobytes()).hexdigest()
    assert doc["tensors"][0]["sha256"] == want and doc["tensors"][0]["stats"]["max"] is not None
    assert _mlf("check", str(d)).returncode == 0
    assert _mlf("check", str(d / "tensor-cache.json")).returncode == 0
    bad = _folder(tmp_path, next(c for c in CASES if c.id == "broken.out-of-shard").files, "bad")
    r = _mlf("check", str(bad), "--tvm", "0.27", "--json")
    assert r.returncode == 1
    out = json.loads(r.stdout)
    assert out["kind"] == "tensor-cache" and out["tvm"]["verdict"] == "crashes"
    assert {x["reader"]: x["verdict"] for x in out["tvm"]["readers"]} == {"python": "rejects", "cpp": "crashes"}
    unsafe = _folder(tmp_path, next(c for c in CASES if c.id == "unreadable.data-path-dotdot").files, "unsafe")
    r = _mlf("cache", "check", str(unsafe))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert "records[0].dataPath" in r.stderr and "offset" in r.stderr


def test_cli_upgrade_downgrade_round_trip(tmp_path):
    d = _folder(tmp_path, cases.base(version=1))
    f8 = cases.render({"f": np.arange(3, dtype="f4").astype(cases._ml("float8_e4m3fn"))}, version=2)
    r = _mlf("cache", "upgrade", str(d), "-o", str(tmp_path / "up"))
    assert r.returncode == 0, r.stderr
    assert sorted(os.listdir(tmp_path / "up")) == ["params_shard_0.bin", "tensor-cache-b16.json", "tensor-cache.json"]
    assert (tmp_path / "up" / "tensor-cache.json").read_bytes() == (d / "ndarray-cache.json").read_bytes()
    assert _mlf("cache", "upgrade", str(d), "-o", str(tmp_path / "up")).returncode == 1  # exists
    r = _mlf("cache", "downgrade", str(tmp_path / "up"), "-o", str(tmp_path / "down"))
    assert r.returncode == 0
    assert (tmp_path / "down" / "ndarray-cache.json").read_bytes() == (d / "ndarray-cache.json").read_bytes()
    f = _folder(tmp_path, f8, "f8")
    r = _mlf("cache", "downgrade", str(f), "-o", str(tmp_path / "f8old"), "--old-float8", "--json")
    assert json.loads(r.stdout)["changes"][1] == "f: dtype float8_e4m3fn -> e4m3_float8"
    broken = _folder(tmp_path, next(c for c in CASES if c.id == "broken.shard-shorter").files, "short")
    r = _mlf("cache", "downgrade", str(broken), "-o", str(tmp_path / "never"))
    assert r.returncode == 2 and not (tmp_path / "never").exists()


def test_cli_diff_and_convert(tmp_path):
    d = _folder(tmp_path, cases.base(encode_format="raw"))
    for ext in (".npz", ".safetensors", ".params"):
        out = tmp_path / f"w{ext}"
        r = _mlf("cache", "convert", str(d), str(out))
        assert r.returncode == 0, r.stderr
        assert "metadata" in r.stderr  # declared: the file formats do not carry it
        back = tmp_path / f"back{ext[1:]}"
        assert _mlf("cache", "convert", str(out), str(back)).returncode == 0
        r = _mlf("cache", "diff", str(d), str(back), "--json")
        assert [c["kind"] for c in json.loads(r.stdout)["changes"]] == ["metadata"]
    other = _folder(tmp_path, cases.base(), "bf")  # f32-to-bf16: w differs
    r = _mlf("cache", "diff", str(d), str(other), "--json")
    assert r.returncode == 1
    assert [c["name"] for c in json.loads(r.stdout)["changes"]] == ["w"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cs.caches())
def test_strategy_caches_load_as_written(tmp_path_factory, drawn):
    d = _folder(tmp_path_factory.mktemp("h"), drawn.files)
    got, _ = cache.load(d)
    assert set(got) == set(drawn.arrays) or drawn.shard_cap_mb != 32
    for k, v in got.items():
        a = drawn.arrays[k]
        if drawn.encode_format == "f32-to-bf16" and a.dtype == np.float32:
            a = (encodings.f32_to_bf16(a).astype("<u4") << 16).view("<f4").reshape(a.shape)
        assert v.dtype == a.dtype and v.shape == a.shape and v.tobytes() == a.tobytes()
    assert check.check(d).conformant


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cs.broken_caches())
def test_strategy_broken_caches_are_found(tmp_path_factory, broken):
    d = _folder(tmp_path_factory.mktemp("b"), broken.files)
    assert broken.kind in check.check(d).codes()
    if broken.kind in rules.FATAL:
        with pytest.raises(MlfError):
            cache.open(d)


def test_web_runtime_reads_the_vectors_like_mlf_spec(tmp_path):
    """@mlc-ai/web-runtime's JavaScript (index, shard URLs, record slicing) on every readable
    vector: the stored bytes it slices are mlf-spec's; it refuses exactly the records out of
    their shard; it does not look at shard sizes, shard formats, md5 or metadata."""
    import hashlib

    from mlf_spec.cache import webruntime

    chosen = [c for c in CASES if c.error is None and "tensor-cache.json" in c.files]
    folders = [_folder(tmp_path, c.files, c.id) for c in chosen]
    got = webruntime.read(folders)
    assert len(got) == len(chosen) >= 25 and {g["version"] for g in got} == {"0.27.0-dev0"}
    for c, d, g in zip(chosen, folders, got):
        codes = set(check.check(d).codes())
        if "shard.missing" in codes:
            assert g["status"] == "error", c.id
        elif "cache.json-nonfinite" in codes:  # JSON.parse refuses NaN (the finding says so)
            assert g["status"] == "error" and "json" in g["error"].lower(), (c.id, g)
        elif "tensor.out-of-shard" in codes:
            assert g["status"] == "error" and "tensor-cache" in g["error"].lower(), (c.id, g)
        else:
            assert g["status"] == "ok", (c.id, g)
            with cache.open(d, strict=False) as lazy:
                want = [(t.name, hashlib.sha256(lazy.raw(t)).hexdigest()) for t in lazy.tensors]
            assert [(r["name"], r["sha256"]) for r in g["records"]] == want, c.id
    # what the JavaScript does not check, where TVM's Python and C++ loaders refuse
    lenient = {c.id: g["status"] for c, g in zip(chosen, got)}
    assert lenient["broken.shard-format"] == lenient["broken.shard-longer"] == "ok"
    assert lenient["broken.metadata-missing"] == "ok"


def test_fuzz_target_on_seeds_and_mutations():
    import random

    from mlf_spec.cache import fuzz_target
    from mlf_spec.fuzzing import seeds as fuzz_seeds
    from mlf_spec.fuzzing import targets

    assert fuzz_seeds.SEEDS["cache"]() == fuzz_target.cache_seeds()
    seeds = fuzz_target.cache_seeds()
    assert len(seeds) == len(CASES)
    rng = random.Random(22)
    inputs = list(seeds)
    for s in seeds[:12]:  # a few byte-level mutations of each kind of seed
        for _ in range(4):
            b = bytearray(s)
            for _ in range(rng.randint(1, 8)):
                b[rng.randrange(len(b))] = rng.randrange(256)
            inputs.append(bytes(b))
    inputs += [b"", b"{", b"[]", b'{"records": 1}', b'{"records": [{"records": [], "dataPath": "/x", '
                                                       b'"format": "raw-shard", "nbytes": 0}]}']
    for data in inputs:
        targets.run("cache_check", data, check_memory=False)


def test_docs_page_code_runs():
    root = Path(__file__).resolve().parents[2]
    blocks = (root / "docs" / "tensor-cache.md").read_text().split("```python\n")[1:]
    readme = (root / "README.md").read_text().split("## Tensor caches")[1].split("\n## ")[0]
    blocks += readme.split("```python\n")[1:]
    assert len(blocks) == 2
    for block in blocks:
        exec(compile(block.split("```")[0], "docs", "exec"), {})


def test_json_outputs_follow_their_schemas(tmp_path):
    import jsonschema

    root = Path(__file__).resolve().parents[2] / "generated" / "schemas"
    d = _folder(tmp_path, cases.base())
    r = _mlf("cache", "dump", str(d), "--json", "--stats")
    jsonschema.validate(json.loads(r.stdout), json.loads((root / "cache_dump.schema.json").read_text()))
    r = _mlf("check", str(d), "--json", "--tvm", "0.27")
    jsonschema.validate(json.loads(r.stdout), json.loads((root / "artifact_check_output.schema.json").read_text()))
    index = json.loads((d / "tensor-cache.json").read_text())
    jsonschema.validate(index, json.loads((root / "tensor_cache.schema.json").read_text()))


def _readers(files: dict[str, bytes], tmp_path: Path, version: str, name: str) -> dict[str, tuple[str, list[str]]]:
    from mlf_spec.cache.verdict import verdict

    with cache.open(_folder(tmp_path, files, name), strict=False) as lazy:
        v = verdict(lazy, version)
    rules_of = {r.reader: [x.rule for x in [*v.reasons, *v.notes] if x.reader == r.reader] for r in v.readers or []}
    return {r.reader: (r.verdict, rules_of[r.reader]) for r in v.readers or []}


@pytest.mark.parametrize("spelling, meant, nbytes_ok", [
    ("float", "float32", True), ("int0", "int32", False), ("uint", "uint32", False),
    ("floatx2", "float32x2", False), ("bfloat", "bfloat16", True), ("float32", None, None), ("int33x", None, None),
])
def test_cpp_default_width_spellings(tmp_path, spelling, meant, nbytes_ok):
    """A dtype without bits: the C++ parser reads it at its default width (String2DLDataType /
    tvm-ffi StringViewToDLDataType_); with nbytes right for that width the C++ loader loads it,
    otherwise its size check refuses; the Python loader refuses it in every version."""
    from mlf_spec.cache.verdict import cpp_default_spelling

    assert cpp_default_spelling(spelling) == meant
    if meant is None:
        return
    for version, index in (("0.16", 1), ("0.20", 1), ("0.27", 2)):
        files = cases._edit(cases.base(version=index), lambda d: cases._t(d, 0).update(dtype=spelling))
        got = _readers(files, tmp_path, version, f"{spelling}-{version}")
        assert got["python"] == ("rejects", ["tensor.dtype"])
        if (spelling, version) == ("bfloat", "0.16"):  # 48 bytes are 24 16-bit values, not 32-bit ones
            assert got["cpp"] == ("rejects", ["tensor.dtype-bfloat-width-cpp"])
        elif nbytes_ok:
            assert got["cpp"] == ("loads", ["tensor.dtype-default-width-cpp-loads"])
        else:
            assert got["cpp"] == ("rejects", ["tensor.dtype-default-width-cpp"])


def test_cpp_bfloat_without_bits_is_32_bits_in_016(tmp_path):
    """bfloat without bits: 16 bits from 2d9c6c4b33; hhb-tvm 3.2.3 (0.16) reads 32 and refuses 16-bit data."""
    files = cases.render({"w": np.arange(4, dtype="<f4").astype(cases._ml("bfloat16"))}, encode_format="raw")
    files = cases._edit(files, lambda d: cases._t(d, 0).update(dtype="bfloat"))
    assert _readers(files, tmp_path, "0.27", "b27")["cpp"] == ("loads", ["tensor.dtype-default-width-cpp-loads"])
    assert _readers(cases.render({"w": np.ones(1, "<f4")}, version=1), tmp_path, "0.16", "ok16")["cpp"][0] == "loads"
    v1 = cases._edit(cases.render({"w": np.arange(4, dtype="<f4").astype(cases._ml("bfloat16"))},
                                  encode_format="raw", version=1), lambda d: cases._t(d, 0).update(dtype="bfloat"))
    assert _readers(v1, tmp_path, "0.16", "b16")["cpp"] == ("rejects", ["tensor.dtype-bfloat-width-cpp"])


def test_scalar_under_f32_to_bf16_python_016_only(tmp_path):
    """A 0-d float32 under f32-to-bf16: 0.16's Python loader (NumPy 1.x) refuses it, 0.17 on loads it."""
    v1 = next(c for c in CASES if c.id == "valid.scalar-encoded")
    files = cases.render({"s": np.array(2.5, dtype="<f4"), "w": np.ones(2, dtype="<f4")}, version=1)
    got = _readers(files, tmp_path, "0.16", "s16")
    assert got["python"] == ("rejects", ["tensor.scalar-encoded-python-numpy1"]) and got["cpp"][0] == "loads"
    assert _readers(files, tmp_path, "0.19", "s19")["python"][0] == "loads"
    assert _readers(v1.files, tmp_path, "0.27", "s27") == {"python": ("loads", []), "cpp": ("loads", [])}


def test_a_migration_reads_the_index_it_wrote_once_and_names_the_readers_that_reject_it(tmp_path, monkeypatch):
    # `cache upgrade` / `downgrade` opened the new index twice: once to check it, once for the target readers' verdicts
    import ml_dtypes

    from mlf_spec.cache import codec, migrate
    from mlf_spec.cli import main as cli

    cache.write(tmp_path / "c2", {"w": np.ones(4, ml_dtypes.float8_e4m3fn), "b": np.ones(2, "f4")})
    opened: list[str] = []
    real = codec.open

    def counting(path, **kw):
        opened.append(Path(path).name)
        return real(path, **kw)

    monkeypatch.setattr(codec, "open", counting)
    plan = migrate.migrate(tmp_path / "c2", tmp_path / "c1", 1)
    assert opened == ["c2", "ndarray-cache.json"]  # the input, then the result once
    assert [(v, r) for v, r, _ in plan.refused_by] == [("0.16", "tensor.dtype-new-spelling")]
    assert plan.to_dict()["refused_by"] == [{"tvm": "0.16", "rule": "tensor.dtype-new-spelling"}]
    opened.clear()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
        assert cli(["cache", "upgrade", str(tmp_path / "c1"), "-o", str(tmp_path / "up")]) == 0
    assert opened == ["c1", "tensor-cache.json"] and err.getvalue() == ""
