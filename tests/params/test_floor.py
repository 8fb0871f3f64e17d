"""The format's floor in benchmarks/params.py is honest: the minimal C walkers
(benchmarks/params_floor.c) and the Python floor loop read every record header of a
.params file (small and large tensors, a name table past the first read), and the C
walkers refuse the damage that decides where the next header starts (so their speed is
not bought by skipping it)."""

from __future__ import annotations

import shutil
import struct
import sys
from pathlib import Path

import numpy as np
import pytest

from mlf_spec import params
from mlf_spec.errors import MlfError

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from _floor import floor_walkers, python_floor  # noqa: E402

sys.path.remove(str(ROOT / "benchmarks"))

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None and shutil.which("cc") is None,
                                reason="needs a C compiler (the benchmark builds its floor with one)")


@pytest.fixture(scope="module")
def walkers(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The C walkers, built once."""
    return floor_walkers(tmp_path_factory.mktemp("floor"))


def _tensors() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    out: dict[str, np.ndarray] = {}
    for i, n in enumerate([64, 300_000, 64, 64, 70_000, 5, 1, 0, 40_000, 2048]):
        out[f"t{i}"] = rng.standard_normal(n).astype(np.float32)
    out["scalar"] = np.float64(1.5)
    out["cube"] = np.ones((3, 4, 5, 6, 7), np.int8)  # five dimensions
    return out


def test_the_walkers_read_every_header(tmp_path, walkers):
    assert set(walkers) == {"walk_pread", "walk_mmap"}
    data = _tensors()
    p = tmp_path / "a.params"
    params.save(data, p)
    for fn in walkers.values():
        assert fn(bytes(p)) == len(data)
    assert python_floor(p) == list(data)
    many = {f"a_rather_long_tensor_name_{i:05d}": np.float32(i) for i in range(3000)}  # names past 16 KiB
    params.save(many, p)
    assert p.stat().st_size > 3 * 16384
    for fn in walkers.values():
        assert fn(bytes(p)) == len(many)


def _first_record(raw: bytes, n: int) -> int:
    pos = 24
    for _ in range(n):
        pos += 8 + struct.unpack_from("<Q", raw, pos)[0]
    return pos + 8


@pytest.mark.parametrize("damage", ["file magic", "record magic", "device type", "ndim", "negative extent",
                                    "size", "size past the end", "truncated"])
@pytest.mark.parametrize("which", [1, 2])  # in the first read; read on its own after a large tensor
def test_the_walkers_refuse_what_decides_the_next_header(tmp_path, walkers, damage, which):
    data = _tensors()
    raw = bytearray(params.dumps(data))
    at = _first_record(raw, len(data))
    for name in list(data)[:which]:
        at += 40 + 8 + data[name].nbytes  # the records before it are one-dimensional
    if damage == "file magic":
        raw[0] ^= 1
    elif damage == "record magic":
        raw[at] ^= 1
    elif damage == "device type":
        struct.pack_into("<i", raw, at + 16, 2)
    elif damage == "ndim":
        struct.pack_into("<i", raw, at + 24, 65)
    elif damage == "negative extent":
        struct.pack_into("<q", raw, at + 32, -1)
    elif damage == "size":
        struct.pack_into("<q", raw, at + 40, struct.unpack_from("<q", raw, at + 40)[0] - 4)
    elif damage == "size past the end":
        struct.pack_into("<q", raw, at + 40, len(raw))
    else:
        del raw[-10:]
    p = tmp_path / "bad.params"
    p.write_bytes(bytes(raw))
    with pytest.raises(MlfError):  # the library refuses it too
        params.open(p).close()
    for name, fn in walkers.items():
        assert fn(bytes(p)) == -1, name
