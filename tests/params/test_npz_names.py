"""Issue 32 item 9: an .npz is written member by member, names never passed as keywords
(``numpy.savez(file, allow_pickle=..., **arrays)`` took them as its own arguments): tensors
named ``file``, ``allow_pickle`` and ``__mlf_spec__`` (the metadata member's name) round-trip
through mlf-spec's own reader, and the first two are plain members for ``numpy.load``."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import numpy as np
import pytest

from mlf_spec import cache, params
from mlf_spec.params.convert import _META_KEY, read_any, write_any

NAMES = ["file", "allow_pickle", "__mlf_spec__", "__mlf_spec__.tensor", "args", "kwds"]


def _tensors() -> dict[str, np.ndarray]:
    return {n: np.full(i + 1, i, "<i4") for i, n in enumerate(NAMES)}


def test_keyword_names_round_trip_through_the_npz_writer(tmp_path):
    write_any(_tensors(), tmp_path / "x.npz")
    back = read_any(tmp_path / "x.npz")
    assert list(back) == NAMES
    for n, v in _tensors().items():
        assert np.array_equal(back[n], v), n
    with np.load(tmp_path / "x.npz") as z:
        assert z["file"].tolist() == [0] and z["allow_pickle"].tolist() == [1, 1]


def test_plain_names_give_the_bytes_numpy_savez_gives(tmp_path):
    t = {"a": np.arange(3, dtype="f4"), "b": np.ones((2, 2), "i8")}
    write_any(t, tmp_path / "x.npz")
    meta = {"order": ["a", "b"], "stored": {}, "dialect": None, "shapes": {"a": [3], "b": [2, 2]}}
    ref = io.BytesIO()
    np.savez(ref, **t, **{_META_KEY: np.array(json.dumps(meta))})
    assert (tmp_path / "x.npz").read_bytes() == ref.getvalue()


@pytest.mark.parametrize("source", ["params", "cache"])
def test_cli_converts_keyword_names_to_npz_and_back(tmp_path, source):
    if source == "params":
        params.save(_tensors(), tmp_path / "in.params")
        cmd = ["params", "convert", "in.params", "out.npz"]
    else:
        cache.write(tmp_path / "in", _tensors(), encode_format="raw")
        cmd = ["cache", "convert", "in", "out.npz"]
    p = subprocess.run([sys.executable, "-m", "mlf_spec", *cmd], cwd=tmp_path, capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr.decode()
    assert b"6 tensors" in p.stdout + p.stderr
    back = read_any(tmp_path / "out.npz")
    assert sorted(back) == sorted(NAMES)
    p = subprocess.run([sys.executable, "-m", "mlf_spec", "params", "convert", "out.npz", "again.params"],
                       cwd=tmp_path, capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr.decode()
    again = params.load(tmp_path / "again.params")
    assert sorted(n for n, _ in again.items()) == sorted(NAMES)


def test_a_members_map_that_names_no_member_is_refused(tmp_path):
    from mlf_spec.errors import MlfError

    meta = {"order": ["a"], "members": {"a": "nope"}}
    buf = io.BytesIO()
    np.savez(buf, x=np.zeros(1), **{_META_KEY: np.array(json.dumps(meta))})
    (tmp_path / "bad.npz").write_bytes(buf.getvalue())
    with pytest.raises(MlfError, match="members"):
        read_any(tmp_path / "bad.npz")
