"""Differential tests against apache-tvm (the live reference peer, installed by the test
extra): files TVM writes are read exactly and written back byte for byte; files mlf-spec
writes load in TVM with the same names, dtypes, shapes and data."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlf_spec import params
from mlf_spec import strategies as ms
from tests.support import tvm_artifacts as ta

tvm = pytest.importorskip("tvm", reason="apache-tvm is installed by the test extra")
pytestmark = pytest.mark.tvm

ALL_DTYPES = ta.PARAM_DTYPES + ta.EXTRA_PARAM_DTYPES
# The producer is known here, so read in its dialect; detection alone cannot tell a 0.27
# uint1 file from an older bool file (both store (1, 1, 1)); it says so (ambiguous).
DIALECT = ta.tvm_version() if ta.TVM_AVAILABLE else None
SHAPES = [(), (3,), (2, 3), (0, 4), (0, 2, 0)]


def _values(dtype: str, shape: tuple[int, ...], seed: int) -> bytes:
    """Raw in-memory bytes for a TVM tensor of dtype/shape (TVM's own layout)."""
    rng = np.random.default_rng(seed)
    n = ta.alloc_nbytes(dtype, shape)
    raw = rng.integers(0, 256, n, dtype=np.uint8)
    if dtype.startswith("bool"):  # bool and bool vectors hold 00/01 as TVM writes them
        raw &= 1
    return raw.tobytes()


def _defined_prefix(dtype: str, shape: tuple[int, ...]) -> int:
    """How many leading data bytes of a TVM-written record are meaningful (reference §2.4)."""
    _, bits, lanes = ta.dtype_triple(dtype)
    numel = int(np.prod(shape)) if shape else 1
    if bits < 8:
        return -(-numel * bits // 8)
    return numel * -(-bits // 8)


def _stored_bytes(t) -> bytes:
    return bytes(memoryview(t.data).cast("B")) if isinstance(t, params.StoredTensor) else t.tobytes()


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_tvm_written_files_read_exactly(dtype, shape):
    tensor = ta.make_tvm_tensor(_values(dtype, shape, 1), dtype, shape)
    data = ta.save_params_bytes({"first": tensor, "ünï": tensor})
    p = params.loads(data, dialect=DIALECT)
    assert list(p) == ["first", "ünï"]
    got = p["first"]
    code, bits, lanes = ta.dtype_triple(dtype)
    info = params.open(data, dialect=DIALECT).index[0]
    detected = params.loads(data, strict=False).choice
    # never a silent misreading: the installed version's dialect, or a file that says it is ambiguous
    assert detected.ambiguous or detected.dialect is params.dtypes.dialect(DIALECT)
    assert info.dtype.name == dtype, (info.dtype, dtype)
    assert (info.dtype.code, info.dtype.bits, info.dtype.lanes) == (code, bits, lanes)
    assert tuple(got.shape) == shape
    prefix = _defined_prefix(dtype, shape)
    assert _stored_bytes(got)[:prefix] == ta.tensor_raw_bytes(tensor)[:prefix]
    assert params.dumps(p) == data  # written back byte-identically


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_mlf_spec_written_files_load_in_tvm(dtype, shape):
    code, bits, lanes = ta.dtype_triple(dtype)
    numel = int(np.prod(shape)) if shape else 1
    stored = np.random.default_rng(2).integers(0, 256, numel * -(-bits // 8), dtype=np.uint8)
    if dtype == "bool":
        stored &= 1
    t = params.StoredTensor.of(code, bits, lanes, shape, stored.tobytes())
    value = np.frombuffer(stored.tobytes(), t.dtype.numpy).reshape(shape) if t.dtype.numpy is not None else t
    data = params.dumps({"x": value, "y": value})
    loaded = ta.load_params_bytes(data)
    assert list(loaded) == ["x", "y"]
    tvm_dtype, tvm_shape, raw = loaded["x"]
    assert tvm_dtype == dtype and tvm_shape == shape
    n = min(len(raw), len(stored.tobytes()))
    if bits < 8:
        n = _defined_prefix(dtype, shape)
    assert raw[:n] == stored.tobytes()[:n]


def test_k_by_zero_tensors_are_written_like_tvm_but_tvm_cannot_read_them():
    # reference §2.5: shape [k>0, ..., 0] saves fine and fails on load in TVM itself
    value = np.zeros((3, 0), "float32")
    tvm_bytes = ta.save_params_bytes({"e": tvm.runtime.tensor(value)})
    assert params.dumps({"e": value}) == tvm_bytes
    assert params.loads(tvm_bytes)["e"].shape == (3, 0)
    with pytest.raises(Exception, match="Invalid DLTensor file format"):
        ta.load_params_bytes(tvm_bytes)


@pytest.mark.parametrize("dtype", [d for d in ALL_DTYPES if ta.dtype_triple(d)[1] % 8 == 0 and ta.dtype_triple(d)[2] == 1])
def test_writer_is_byte_identical_to_tvm_for_numpy_dtypes(dtype):
    shape = (2, 3)
    raw = _values(dtype, shape, 3)
    tensor = ta.make_tvm_tensor(raw, dtype, shape)
    tvm_bytes = ta.save_params_bytes({"w": tensor, "s": ta.make_tvm_tensor(_values(dtype, (), 4), dtype, ())})
    mine = params.loads(tvm_bytes, dialect=DIALECT)
    rebuilt = {name: np.array(arr) for name, arr in mine.items()}  # fresh arrays, no record kept
    assert params.dumps(rebuilt) == tvm_bytes


def test_empty_dict_and_many_names_match_tvm():
    assert params.dumps({}) == ta.save_params_bytes({})
    d = {f"p{i}": np.full((i % 3 + 1,), i, "float32") for i in range(20)}
    tvm_bytes = ta.save_params_bytes({k: tvm.runtime.tensor(v) for k, v in d.items()})
    assert params.dumps(d) == tvm_bytes


def _tvm_loadable(a: np.ndarray) -> bool:
    return str(a.dtype) in ALL_DTYPES and not (a.shape and a.size == 0 and a.shape[0] != 0)


@settings(max_examples=40)
@given(st.dictionaries(st.text(max_size=8), ms.arrays().filter(_tvm_loadable), max_size=4))
def test_random_dicts_agree_with_tvm_both_ways(d):
    data = params.dumps(d)
    loaded = ta.load_params_bytes(data)
    assert list(loaded) == list(d)
    index = params.open(data, dialect=DIALECT).index
    for info, (name, arr) in zip(index, d.items()):
        tvm_dtype, tvm_shape, raw = loaded[name]
        assert (tvm_dtype, tvm_shape, raw) == (info.dtype.name, arr.shape, arr.tobytes())
    again = ta.save_params_bytes({k: ta.make_tvm_tensor(v.tobytes(), loaded[k][0], v.shape) for k, v in d.items()})
    assert again == data
