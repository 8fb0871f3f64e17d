"""TVM 0.16's tensor cache writer (hhb-tvm 3.2.3: ``tvm.contrib.tvmjs.dump_ndarray_cache``, cache
version 1, ``ndarray-cache.json``) against mlf-spec's writer in cache version 1: byte-identical
folders for the same arrays and options, TVM's trailing empty records dropped as mlf-spec does
with ``keep_empty=False``; the one difference is stated and shown (0.16 writes the bf16 index
whenever f32-to-bf16 applied to some tensor, even to one its index then drops)."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mlf_spec import cache, peers
from mlf_spec.cache import strategies as cs

pytestmark = pytest.mark.tvm


@pytest.fixture(scope="module")
def peer():
    with peers.Peer(peers.ensure("hhb"), env=peers.environment("hhb")) as p:
        yield p


def _dump_016(peer: peers.Peer, params: dict[str, np.ndarray], folder: Path, **options) -> None:
    folder.mkdir(parents=True)
    tensors = [{"name": n, "dtype": a.dtype.name, "shape": list(a.shape),
                "data": base64.b64encode(np.ascontiguousarray(a).tobytes()).decode("ascii")} for n, a in params.items()]
    reply = peer.request("cache_dump", path=str(folder), tensors=tensors,
                         encode_format=options.get("encode_format", "f32-to-bf16"),
                         metadata=options.get("metadata"), shard_cap_mb=options.get("shard_cap_mb", 32))
    assert reply["writer"] == "dump_ndarray_cache"


def _files(folder: Path) -> dict[str, bytes]:
    return {n: (folder / n).read_bytes() for n in sorted(os.listdir(folder))}


def _params(seed: int) -> dict[str, np.ndarray]:
    import ml_dtypes

    rng = np.random.default_rng(seed)
    return {"w": rng.standard_normal((64, 48)).astype("f4"), "b": rng.integers(-9, 9, 7).astype("i4"),
            "h": rng.standard_normal((100, 30)).astype("f2"), "big": rng.standard_normal(70_000).astype("f4"),
            "bf": rng.standard_normal(33).astype(ml_dtypes.bfloat16),
            "f8": rng.standard_normal(9).astype(ml_dtypes.float8_e4m3fn), "flag": np.array([True, False]),
            "s": np.array(3.5, "f4"), "e": np.zeros((0, 3), "f4"), "u": rng.integers(0, 9, 5).astype("u8"),
            "nan": np.array([np.nan, -np.inf, 3.4e38, -0.0], "f4"), "ü": np.arange(6, dtype="i8").reshape(2, 3)}


@pytest.mark.parametrize("encode_format", ["f32-to-bf16", "raw"])
@pytest.mark.parametrize("cap", [0.05, 0.2, 32])
def test_writer_in_version_1_is_byte_identical_to_dump_ndarray_cache(peer, tmp_path, encode_format, cap):
    params = _params(1)
    meta = {"model": "m", "ünï": [1, 2]}
    _dump_016(peer, params, tmp_path / "tvm", encode_format=encode_format, shard_cap_mb=cap, metadata=meta)
    cache.write(tmp_path / "ours", params, encode_format=encode_format, shard_cap_mb=cap, metadata=meta,
                version=1, keep_empty=False)
    theirs = _files(tmp_path / "tvm")
    assert "ndarray-cache.json" in theirs and ("ndarray-cache-b16.json" in theirs) == (encode_format != "raw")
    assert theirs == _files(tmp_path / "ours")


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.text(min_size=1, max_size=5), cs.arrays(max_side=40)), max_size=6,
                unique_by=lambda x: x[0]),
       st.sampled_from(["raw", "f32-to-bf16"]), st.sampled_from([1 / 4096, 1 / 512, 32]),
       st.one_of(st.none(), st.dictionaries(st.text(max_size=3), st.integers(-9, 9), max_size=2)))
def test_writer_in_version_1_is_byte_identical_generated(peer, tmp_path_factory, items, encode_format, cap, meta):
    d = tmp_path_factory.mktemp("w")
    params = dict(items)
    _dump_016(peer, params, d / "tvm", encode_format=encode_format, shard_cap_mb=cap, metadata=meta)
    cache.write(d / "ours", params, encode_format=encode_format, shard_cap_mb=cap, metadata=meta, version=1,
                keep_empty=False)
    theirs, ours = _files(d / "tvm"), _files(d / "ours")
    if theirs != ours:  # the one difference: a bf16 index for an encoded tensor 0.16 then dropped
        assert set(theirs) - set(ours) == {"ndarray-cache-b16.json"}, (sorted(theirs), sorted(ours))
        assert {k: v for k, v in theirs.items() if k in ours} == ours
        assert any(a.dtype == np.float32 and a.size == 0 for a in params.values()) and encode_format != "raw"


def test_016_writes_a_bf16_index_for_an_encoded_tensor_it_dropped(peer, tmp_path):
    """A trailing empty float32 under f32-to-bf16 that no shard holds: 0.16 drops its record
    (as 0.27 does) but has already set its 'f32-to-bf16 triggered' flag, so it writes
    ndarray-cache-b16.json, whose records relabel nothing; mlf-spec writes that index only
    when a record it keeps is encoded."""
    params = {"a": np.zeros(1024, "u1"), "e": np.zeros(0, "f4")}  # a goes out of band; e is left unwritten
    _dump_016(peer, params, tmp_path / "tvm", encode_format="f32-to-bf16", shard_cap_mb=1 / 1024)
    cache.write(tmp_path / "ours", params, encode_format="f32-to-bf16", shard_cap_mb=1 / 1024, version=1,
                keep_empty=False)
    theirs, ours = _files(tmp_path / "tvm"), _files(tmp_path / "ours")
    assert sorted(theirs) == ["ndarray-cache-b16.json", "ndarray-cache.json", "params_shard_0.bin"]
    assert sorted(ours) == ["ndarray-cache.json", "params_shard_0.bin"]
    assert {k: theirs[k] for k in ours} == ours
    assert theirs["ndarray-cache-b16.json"] == theirs["ndarray-cache.json"]  # nothing relabelled
