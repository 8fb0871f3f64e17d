"""Differential tests of the tensor cache against apache-tvm (installed by the test extra):
mlf-spec's writer is byte-identical to dump_tensor_cache; caches either side writes are read
the same by the other; every vector's verdict for the installed version agrees with what
its Python and C++ loaders do (tests/support/tvm_cache_probe.py, each load in a forked process)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mlf_spec import cache
from mlf_spec.cache import cases
from mlf_spec.cache import strategies as cs
from mlf_spec.cache.verdict import verdict

tvm = pytest.importorskip("tvm", reason="apache-tvm is installed by the test extra")
tvmjs = pytest.importorskip("tvm.contrib.tvmjs")
pytestmark = pytest.mark.tvm
PROBE = Path(__file__).resolve().parents[2] / "support" / "tvm_cache_probe.py"
TVM_VERSION = ".".join(tvm.__version__.split(".")[:2])


def _dump_tvm(params, folder, **kw):
    with contextlib.redirect_stdout(io.StringIO()):
        tvmjs.dump_tensor_cache(params, str(folder), **kw)


def _files(folder: Path) -> dict[str, bytes]:
    return {n: (folder / n).read_bytes() for n in sorted(os.listdir(folder))}


def _params(seed: int) -> dict[str, np.ndarray]:
    import ml_dtypes

    rng = np.random.default_rng(seed)
    return {"w": rng.standard_normal((64, 48)).astype("f4"), "b": rng.integers(-9, 9, 7).astype("i4"),
            "h": rng.standard_normal((100, 30)).astype("f2"), "big": rng.standard_normal(70_000).astype("f4"),
            "bf": rng.standard_normal(33).astype(ml_dtypes.bfloat16),
            "f8": rng.standard_normal(9).astype(ml_dtypes.float8_e4m3fn), "flag": np.array([True, False]),
            "s": np.array(3.5, "f4"), "e": np.zeros((0, 3), "f4"), "u": rng.integers(0, 9, 5).astype("u8")}


@pytest.mark.parametrize("encode_format", ["f32-to-bf16", "raw"])
@pytest.mark.parametrize("cap", [0.05, 0.2, 32])
def test_writer_byte_identical_to_dump_tensor_cache(tmp_path, encode_format, cap):
    params = _params(1)
    meta = {"model": "m", "ünï": [1, 2]}
    _dump_tvm(params, tmp_path / "tvm", encode_format=encode_format, shard_cap_mb=cap, meta_data=meta)
    cache.write(tmp_path / "ours", params, encode_format=encode_format, shard_cap_mb=cap, metadata=meta,
                keep_empty=False)
    assert _files(tmp_path / "tvm") == _files(tmp_path / "ours")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.text(min_size=1, max_size=5), cs.arrays(max_side=40)), max_size=6,
                unique_by=lambda x: x[0]),
       st.sampled_from(["raw", "f32-to-bf16"]), st.sampled_from([1 / 4096, 1 / 512, 32]))
def test_writer_byte_identical_generated(tmp_path_factory, items, encode_format, cap):
    d = tmp_path_factory.mktemp("w")
    _dump_tvm(dict(items), d / "tvm", encode_format=encode_format, shard_cap_mb=cap)
    cache.write(d / "ours", dict(items), encode_format=encode_format, shard_cap_mb=cap, keep_empty=False)
    assert _files(d / "tvm") == _files(d / "ours")


def test_trailing_empty_tensor_tvm_drops_mlf_spec_keeps(tmp_path):
    params = {"a": np.zeros(1024, "u1"), "e": np.zeros(0, "f4")}  # a goes out of band; e stays alone, unwritten
    _dump_tvm(params, tmp_path / "tvm", encode_format="raw", shard_cap_mb=1 / 1024)
    assert set(tvmjs.load_tensor_cache(str(tmp_path / "tvm"), tvm.cpu())[0]) == {"a"}
    cache.write(tmp_path / "ours", params, encode_format="raw", shard_cap_mb=1 / 1024)
    ref, _ = tvmjs.load_tensor_cache(str(tmp_path / "ours"), tvm.cpu())
    assert set(ref) == {"a", "e"} and ref["e"].numpy().shape == (0,)


def test_tvm_written_caches_read_as_tvm_loads_them(tmp_path):
    params = _params(2)
    for fmt in ("f32-to-bf16", "raw"):
        d = tmp_path / fmt
        _dump_tvm(params, d, encode_format=fmt, shard_cap_mb=0.1, meta_data={"k": 1})
        ref, meta = tvmjs.load_tensor_cache(str(d), tvm.cpu())
        ours, meta2 = cache.load(d)
        assert meta == meta2 and set(ref) == set(ours)
        for k, v in ref.items():
            a = v.numpy()
            assert (a.dtype, a.shape, a.tobytes()) == (ours[k].dtype, ours[k].shape, ours[k].tobytes()), k


def _probe(manifest: list[dict], tmp_path: Path, python: str = sys.executable,
           env: dict[str, str] | None = None) -> dict[tuple[str, str], dict]:
    m = tmp_path / "manifest.json"
    m.write_text(json.dumps(manifest))
    r = subprocess.run([python, str(PROBE), str(m)], capture_output=True, text=True, timeout=600,
                       env={**os.environ, **(env or {})})
    assert r.returncode == 0, r.stderr[-2000:]
    out = {}
    for line in r.stdout.splitlines():
        d = json.loads(line)
        out[(d["id"], d["loader"])] = d
    return out


def _expected(folder: Path) -> dict[str, dict]:
    """What each name should load as (the record that wins: the last of a name)."""
    from mlf_spec.cli.cache import dump_document

    with cache.open(folder, strict=False) as lazy:
        try:
            doc = dump_document(lazy)
        except Exception:  # noqa: BLE001 - a tensor the codec refuses to decode
            return {}
    # a name that is not valid Unicode is shown with U+FFFD: the loaders' key is the exact name
    return {bytes.fromhex(t["name_hex"]).decode("utf-8", "surrogatepass") if "name_hex" in t else t["name"]: t
            for t in doc["tensors"]}


def _expected_cpp_default(folder: Path, tmp: Path) -> dict[str, dict]:
    """What each name should load as in the C++ loaders when the index spells a dtype without
    bits (``float``): the folder with those spellings at the parser's default width ({} if none)."""
    from mlf_spec.cache.index import INDEX_NAMES
    from mlf_spec.cache.verdict import cpp_default_spelling

    changed = False
    shutil.copytree(folder, tmp)
    for name in INDEX_NAMES.values():
        path = tmp / name
        if not path.is_file():
            continue
        doc = json.loads(path.read_bytes())
        for shard in doc.get("records", []):
            for rec in shard.get("records", []):
                spelled = cpp_default_spelling(str(rec.get("dtype")))
                if spelled is not None:
                    rec["dtype"], changed = spelled, True
        path.write_text(json.dumps(doc))
    return _expected(tmp) if changed else {}


def _agrees(verdict_name: str, observed: dict, expected: dict[str, dict], complete: bool) -> bool:
    status = observed["status"]
    if verdict_name == "rejects":
        return status == "error"
    if verdict_name == "crashes":
        return status == "died" or status == "ok"  # UB: a segfault, or heap bytes returned
    if status != "ok":
        return False
    # a dtype without a NumPy type (int4): TVM's .numpy() unpacks it, mlf-spec hashes the stored bytes
    same = all(t["sha256"] is None or (n in expected and (expected[n]["sha256_of"] == "stored"
                                                         or t["sha256"] == expected[n]["sha256"]))
               for n, t in observed["tensors"].items())
    if verdict_name == "loads":
        return same and (not complete or set(observed["tensors"]) == set(expected))
    return True  # misreads: loaded, the rule says which record was not what it meant


def _other_python(key: str) -> tuple[str, dict[str, str]]:
    """The interpreter of a peer's cached venv (made if missing: mlf_spec.peers.venvs) and its env."""
    from mlf_spec.peers import venvs

    return str(venvs.ensure(key, progress=False)), dict(venvs.PEERS[key].env)


_V1_NAMES = {"tensor-cache.json": "ndarray-cache.json", "tensor-cache-b16.json": "ndarray-cache-b16.json"}


@pytest.mark.parametrize("reader", ["installed", "0.25", "0.26", "hhb"])
def test_vectors_verdicts_match_tvm_loaders(tmp_path, reader):
    """Every readable vector through every loader of a TVM version; for hhb-tvm 3.2.3 (TVM
    0.16, whose loaders open ndarray-cache.json) the vectors' indexes are renamed to it."""
    python, env = (sys.executable, {}) if reader == "installed" else _other_python(reader)
    version = {"installed": TVM_VERSION, "hhb": "0.16"}.get(reader, reader)
    chosen = [c for c in cases.all_cases() if c.error is None]
    manifest = []
    for c in chosen:
        d = tmp_path / c.id
        d.mkdir()
        for n, data in c.files.items():
            (d / (_V1_NAMES.get(n, n) if reader == "hhb" else n)).write_bytes(data)
        manifest.append({"id": c.id, "path": str(d)})
    seen = _probe(manifest, tmp_path, python, env)
    disagreements = []
    for c in chosen:
        d = tmp_path / c.id
        with cache.open(d, strict=False) as lazy:
            v = verdict(lazy, version)
        expected = _expected(d) if c.strict_ok else {}
        for rv in v.readers:
            meant = expected
            if rv.reader == "cpp" and not expected:
                meant = _expected_cpp_default(d, tmp_path / "cpp-default" / c.id)
            obs = seen[(c.id, rv.reader)]
            if not _agrees(rv.verdict, obs, meant, complete=bool(meant)):
                disagreements.append((c.id, rv.reader, rv.verdict, obs.get("status"), obs.get("error")))
    assert not disagreements


def test_mlf_spec_written_caches_load_in_both_tvm_loaders(tmp_path):
    manifest = []
    for i, fmt in enumerate(("raw", "f32-to-bf16")):
        d = tmp_path / f"c{i}"
        params = _params(3 + i)
        if fmt == "f32-to-bf16":
            del params["e"]  # the C++ loader refuses an empty f32-to-bf16 tensor (tensor.empty-encoded-cpp)
        cache.write(d, params, encode_format=fmt, shard_cap_mb=0.1)
        manifest.append({"id": fmt, "path": str(d)})
    seen = _probe(manifest, tmp_path)
    for m in manifest:
        exp = _expected(Path(m["path"]))
        for loader in ("python", "cpp"):
            obs = seen[(m["id"], loader)]
            assert obs["status"] == "ok", obs
            assert {n: t["sha256"] for n, t in obs["tensors"].items()} == {n: t["sha256"] for n, t in exp.items()}


def _tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


_UPDATES = {
    "same-size": ({"w": np.full((64, 48), 0.5, "f4"), "b": np.arange(7, dtype="i4")}, {}),
    "new-and-updated": ({"b": -np.arange(7, dtype="i4"), "n1": np.ones(3000, "f4"), "n2": np.arange(5, dtype="u1"),
                         "n3": np.zeros((0, 2), "f4")}, {"meta_data": {"k": "new"}}),
    "encode-changes": ({"h": np.ones((100, 30), "f2"), "f": np.linspace(0, 1, 40, dtype="f4")},
                       {"encode_format": "f32-to-bf16"}),
}


@pytest.mark.parametrize("first_format", ["raw", "f32-to-bf16"])
@pytest.mark.parametrize("update", sorted(_UPDATES))
def test_update_if_exists_byte_identical_to_dump_tensor_cache(tmp_path, first_format, update):
    """dump_tensor_cache(..., update_if_exists=True) on a cache either writer made, and
    mlf-spec's update of the same cache: the same folder, byte for byte (other files kept)."""
    import shutil

    base = {k: v for k, v in _params(5).items() if k in ("w", "b", "h", "big", "u")}
    params, kw = _UPDATES[update]
    kw = {"encode_format": "raw", **kw}
    for first in ("tvm", "ours"):
        start = tmp_path / f"{first}-start"
        if first == "tvm":
            _dump_tvm(base, start, encode_format=first_format, shard_cap_mb=0.05, meta_data={"m": 1})
        else:
            cache.write(start, base, encode_format=first_format, shard_cap_mb=0.05, metadata={"m": 1},
                        keep_empty=False)
        (start / "tokenizer.json").write_text("{}")
        theirs, ours = tmp_path / f"{first}-tvm", tmp_path / f"{first}-ours"
        shutil.copytree(start, theirs)
        shutil.copytree(start, ours)
        try:
            _dump_tvm(params, theirs, shard_cap_mb=0.05, update_if_exists=True, **kw)
        except ValueError as exc:  # a size mismatch: mlf-spec refuses it too, and changes nothing
            assert "size mismatch" in str(exc)
            from mlf_spec.errors import MlfError

            with pytest.raises(MlfError, match="size mismatch"):
                cache.write(ours, params, shard_cap_mb=0.05, update_if_exists=True, keep_empty=False,
                            metadata=kw.get("meta_data"), encode_format=kw["encode_format"])
            assert _tree(ours) == _tree(start)
            continue
        cache.write(ours, params, shard_cap_mb=0.05, update_if_exists=True, keep_empty=False,
                    metadata=kw.get("meta_data"), encode_format=kw["encode_format"])
        assert _tree(theirs) == _tree(ours), (first, sorted(_tree(theirs)), sorted(_tree(ours)))
        assert (ours / "tokenizer.json").read_text() == "{}"
        with cache.open(ours) as lazy:  # what it wrote opens strictly (md5 sums match)
            assert not [p for p in lazy.problems(md5=True) if p.code == "shard.md5"]


def test_update_if_exists_refuses_a_size_change_and_leaves_the_folder_as_it_was(tmp_path):
    from mlf_spec.errors import MlfError

    cache.write(tmp_path / "c", {"w": np.ones(4, "f4")}, encode_format="raw")
    before = _tree(tmp_path / "c")
    with pytest.raises(ValueError, match="size mismatch"):
        _dump_tvm({"w": np.ones(5, "f4")}, tmp_path / "c", encode_format="raw", update_if_exists=True)
    (tmp_path / "c2").mkdir()
    with pytest.raises(MlfError, match="size mismatch"):
        cache.write(tmp_path / "c", {"x": np.ones(2, "f4"), "w": np.ones(5, "f4")}, encode_format="raw",
                    update_if_exists=True)
    assert _tree(tmp_path / "c") == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c", "c2"]  # nothing left beside it
