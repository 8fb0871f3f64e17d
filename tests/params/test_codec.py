"""Unit tests of mlf_spec.params against the byte-level reference (binary-formats.md §2-3)."""

from __future__ import annotations

import io
import os
import struct
import tracemalloc

import ml_dtypes
import numpy as np
import pytest

from mlf_spec import params
from mlf_spec.errors import (
    ConstMismatchError,
    ConstraintError,
    CountMismatchError,
    LengthError,
    MlfError,
    TruncatedError,
    UnknownDtypeError,
)
from mlf_spec.params import dtypes

# binary-formats.md §2.2 worked example, TVM 0.27 output (0xCA bytes)
REFERENCE = bytes.fromhex(
    "b79c04054f8de5f7" "0000000000000000" "0200000000000000" "010000000000000077" "010000000000000062"
    "0200000000000000"
    "3fa1b496f0405edd" "0000000000000000" "0100000000000000" "02000000" "02200100"
    "0200000000000000" "0300000000000000" "1800000000000000"
    "00000000" "0000803f" "00000040" "00004040" "00008040" "0000a040"
    "3fa1b496f0405edd" "0000000000000000" "0100000000000000" "01000000" "00400100"
    "0300000000000000" "1800000000000000" "010000000000000002000000000000000300000000000000"
)


REC = 0x29  # first tensor record of a file with one one-letter name


def reference_dict():
    return {"w": np.arange(6, dtype="float32").reshape(2, 3), "b": np.array([1, 2, 3], "int64")}


def test_writer_matches_reference_bytes():
    assert len(REFERENCE) == 0xCA
    assert params.dumps(reference_dict()) == REFERENCE


def test_reader_on_reference_bytes():
    p = params.loads(REFERENCE)
    assert list(p) == ["w", "b"]
    np.testing.assert_array_equal(p["w"], reference_dict()["w"])
    assert p["w"].dtype == np.float32 and p["b"].dtype == np.int64
    assert p.dialect.id == "v0.26"
    assert params.dumps(p) == REFERENCE


def test_empty_dict_is_32_bytes():
    data = params.dumps({})
    assert data == struct.pack("<QQQQ", params.PARAMS_MAGIC, 0, 0, 0)
    assert len(params.loads(data)) == 0


def test_arrays_are_aligned_writable_copies():
    data = params.dumps({f"t{i}": np.full((3,), i, "float64") for i in range(5)})
    buf = bytearray(data)
    p = params.loads(buf)
    for arr in p.values():
        assert arr.ctypes.data % params.ALIGNMENT == 0
        assert arr.flags.writeable
    buf[:] = b"\0" * len(buf)  # the input is no longer needed
    assert p["t3"][0] == 3.0


def test_zero_d_and_empty_shapes():
    d = {"s": np.float32(2.5), "e1": np.zeros((0, 4), "float32"), "e2": np.zeros((3, 0), "int8")}
    data = params.dumps(d)
    p = params.loads(data)
    assert p["s"].shape == () and p["s"] == np.float32(2.5)
    assert p["e1"].shape == (0, 4) and p["e2"].shape == (3, 0)
    assert params.dumps(p) == data


def test_empty_tensor_whose_other_dimensions_overflow_numpy_is_stored_not_an_error():
    # Found by fuzzing (issue 11): shape (2**61 + 1, 0, 2**63 - 1) holds no element, TVM
    # reads it, but NumPy refuses such a shape ("array is too big") and loads raised ValueError.
    shape = (2**61 + 1, 0, 2**63 - 1)
    data = params.dumps({"e": params.StoredTensor(dtypes.lookup(dtypes.dialect(None), 2, 32, 1), shape, b"")})
    p = params.loads(data)
    assert isinstance(p["e"], params.StoredTensor) and p["e"].shape == shape and bytes(p["e"].data) == b""
    assert params.dumps(p) == data
    with params.open(data) as lazy:
        assert isinstance(lazy["e"], params.StoredTensor) and lazy.index[0].shape == shape
    # a zero dimension next to dimensions NumPy can still describe stays an ndarray
    ok = params.loads(params.dumps({"z": np.zeros((2**20, 0, 2**20), "float32")}))["z"]
    assert isinstance(ok, np.ndarray) and ok.shape == (2**20, 0, 2**20)


def test_duplicates_reserved_device_id_and_trailing_bytes_survive_round_trip():
    data = bytearray(params.dumps({"a": np.ones(2, "int32")}))
    rec = params.dumps({"a": np.full(2, 7, "int32")})[REC:]  # a record without the list header
    # two names "a", "a"; reserved words and device_id made nonzero; trailing garbage
    names = struct.pack("<Q", 2) + (struct.pack("<Q", 1) + b"a") * 2
    first = bytes(data[REC:])
    first = first[:8] + struct.pack("<Q", 99) + first[16:20] + struct.pack("<i", 3) + first[24:]  # reserved, device_id
    blob = struct.pack("<QQ", params.PARAMS_MAGIC, 5) + names + struct.pack("<Q", 2) + first + rec + b"tail"
    p = params.loads(blob)
    assert p.reserved == 5 and p.trailing == b"tail"
    assert [n for n, _ in p.entries] == ["a", "a"]
    np.testing.assert_array_equal(p["a"], [7, 7])  # later entry wins, as in TVM
    assert params.dumps(p) == blob


def test_non_ascii_and_undecodable_names_round_trip():
    data = params.dumps({"ünï😀": np.zeros(1, "uint8"), "": np.zeros(1, "uint8")})
    assert list(params.loads(data)) == ["ünï😀", ""]
    raw = bytearray(data)
    i = raw.index("ü".encode())
    raw[i] = 0xFF  # invalid UTF-8 inside a name
    p = params.loads(bytes(raw))
    assert params.dumps(p) == bytes(raw)


def test_big_endian_and_non_contiguous_inputs_are_written_little_endian():
    be = np.arange(4, dtype=">i4")
    nc = np.arange(12, dtype="float32").reshape(3, 4)[:, ::2]
    p = params.loads(params.dumps({"be": be, "nc": nc}))
    np.testing.assert_array_equal(p["be"], be)
    np.testing.assert_array_equal(p["nc"], nc)
    assert params.dumps({"x": be}) == params.dumps({"x": be.astype("<i4")})


@pytest.mark.parametrize(
    ("dialect", "value", "triple"),
    [
        ("latest", np.array([True, False]), (6, 8, 1)),
        ("0.16", np.array([True, False]), (1, 1, 1)),
        ("0.22", np.array([True, False]), (1, 1, 1)),
        ("latest", np.ones(2, ml_dtypes.float8_e4m3fn), (10, 8, 1)),
        ("0.16", np.ones(2, ml_dtypes.float8_e4m3fn), (6, 8, 1)),
        ("0.20", np.ones(2, ml_dtypes.float8_e5m2), (7, 8, 1)),
        ("latest", np.ones(2, ml_dtypes.float8_e5m2), (12, 8, 1)),
        ("latest", np.ones(2, ml_dtypes.bfloat16), (4, 16, 1)),
        ("latest", np.ones(2, np.complex64), (5, 64, 1)),
    ],
)
def test_dtype_codes_by_dialect(dialect, value, triple):
    data = params.dumps({"x": value}, dialect=dialect)
    code, bits, lanes = struct.unpack_from("<BBH", data, REC + 0x1C)
    assert (code, bits, lanes) == triple
    back = params.loads(data, dialect=dialect)["x"]
    assert back.dtype == value.dtype
    np.testing.assert_array_equal(back.view(np.uint8), value.view(np.uint8))


def test_detection_picks_the_era_that_explains_the_file():
    old = params.dumps({"b": np.array([True]), "f": np.ones(1, ml_dtypes.float8_e4m3fn)}, dialect="0.16")
    p = params.loads(old)
    # float8 1.0 is byte 0x38, which no bool writer stores: the bytes rule out 0.21 on
    assert not p.choice.ambiguous and p.choice.by_data
    assert p.dialect.id in ("v0.13", "v0.20")
    assert p["f"].dtype == ml_dtypes.float8_e4m3fn and p["b"].dtype == np.bool_
    new = params.loads(params.dumps({"b": np.array([True])}))
    assert new.dialect.id == "v0.26" and new["b"].dtype == np.bool_ and not new.choice.ambiguous
    # zeros fit both readings: the file stays ambiguous and says so
    zeros = params.loads(params.dumps({"f": np.zeros(2, ml_dtypes.float8_e4m3fn)}, dialect="0.16"))
    assert zeros.choice.ambiguous and {"v0.13", "v0.26"} <= {c.id for c in zeros.choice.candidates}
    # the caller can force a reading
    forced = params.loads(old, dialect="0.27")
    assert forced["f"].dtype == np.bool_ and isinstance(forced["b"], params.StoredTensor)


def test_sub_byte_and_vector_tensors_are_kept_as_stored_bytes():
    st4 = params.StoredTensor.of(0, 4, 1, (5,), b"\x01\x02\x03\x04\x05")
    vec = params.StoredTensor.of(2, 32, 4, (2,), bytes(range(8)))
    data = params.dumps({"i4": st4, "v": vec})
    p = params.loads(data)
    assert isinstance(p["i4"], params.StoredTensor) and p["i4"].dtype.name == "int4"
    assert bytes(p["i4"].data) == b"\x01\x02\x03\x04\x05"
    assert p["v"].dtype.name == "float32x4" and p["v"].nbytes == 8
    assert params.dumps(p) == data
    with pytest.raises(MlfError, match="need 4"):
        params.StoredTensor.of(0, 4, 1, (4,), b"\x00")


def test_unknown_code_is_an_error_unless_lenient():
    data = bytearray(params.dumps({"x": np.zeros(2, "int8")}))
    data[REC + 0x1C] = 99
    with pytest.raises(UnknownDtypeError) as err:
        params.loads(bytes(data))
    assert err.value.field == "arrays[0].dtype" and err.value.offset == REC + 0x1C
    p = params.loads(bytes(data), strict=False)
    assert isinstance(p["x"], params.StoredTensor)
    assert params.dumps(p) == bytes(data)


@pytest.mark.parametrize(
    ("offset", "value", "error", "field"),
    [
        (0, b"\0", ConstMismatchError, "magic"),
        (0x21, b"\x05", CountMismatchError, "count"),
        (REC, b"\0", ConstMismatchError, "arrays[0].magic"),
        (REC + 0x10, b"\x02", ConstraintError, "arrays[0].device"),
        (REC + 0x18, b"\xff", ConstraintError, "arrays[0].ndim"),
        (REC + 0x28, b"\x09", ConstraintError, "arrays[0].data_byte_size"),
    ],
)
def test_corrupt_header_fields_name_field_and_offset(offset, value, error, field):
    data = bytearray(params.dumps({"x": np.zeros(2, "int32")}))
    assert data[0x10:REC] == struct.pack("<QQ", 1, 1) + b"x" + struct.pack("<Q", 1)
    data[offset:offset + len(value)] = value
    with pytest.raises(error) as err:
        params.loads(bytes(data))
    assert err.value.field == field
    assert err.value.offset is not None
    assert "<bytes>" in str(err.value)


def test_negative_extent_is_rejected_with_element_path():
    data = bytearray(params.dumps({"x": np.zeros((2, 2), "int8")}))
    struct.pack_into("<q", data, REC + 0x28, -1)
    with pytest.raises(ConstraintError) as err:
        params.loads(bytes(data))
    assert err.value.field == "arrays[0].shape[1]" and err.value.offset == REC + 0x28


def test_every_truncation_point_raises_mlf_error_only():
    data = params.dumps({"w": np.ones((2, 3), "float32"), "name": np.ones(0, "int8"), "s": np.int64(1)})
    for cut in range(len(data)):
        with pytest.raises(MlfError) as err:
            params.loads(data[:cut])
        assert isinstance(err.value, (TruncatedError, LengthError)), (cut, err.value)
        assert err.value.offset is not None and err.value.offset <= cut


def test_hostile_counts_fail_at_once_in_constant_memory():
    evil = struct.pack("<QQQ", params.PARAMS_MAGIC, 0, 2**60) + b"\0" * 16  # 40 bytes claiming 2^60 names
    tracemalloc.start()
    with pytest.raises(LengthError) as err:
        params.loads(evil)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 1 << 20
    assert err.value.field == "names" and err.value.offset == 0x10
    evil2 = struct.pack("<QQQQ", params.PARAMS_MAGIC, 0, 0, 2**62) + b"\0" * 8
    with pytest.raises(CountMismatchError):
        params.loads(evil2)
    rec = bytearray(params.dumps({"x": np.zeros(1, "int8")}))
    struct.pack_into("<q", rec, REC + 0x20, 2**40)  # shape claims 2^40 elements
    with pytest.raises(ConstraintError):
        params.loads(bytes(rec))


def test_load_from_path_and_file_object(tmp_path):
    path = tmp_path / "a.params"
    params.save(reference_dict(), path)
    assert path.read_bytes() == REFERENCE
    assert list(params.load(path)) == ["w", "b"]
    assert list(params.load(str(path))) == ["w", "b"]
    with open(path, "rb") as f:
        assert list(params.load(f)) == ["w", "b"]
    assert list(params.load(io.BytesIO(REFERENCE))) == ["w", "b"]
    with pytest.raises(MlfError, match="cannot open"):
        params.load(tmp_path / "missing.params")


def test_errors_from_files_name_the_file(tmp_path):
    path = tmp_path / "bad.params"
    path.write_bytes(REFERENCE[:100])
    with pytest.raises(MlfError) as err:
        params.load(path)
    assert str(path) in str(err.value)


def test_lazy_open_indexes_without_copying(tmp_path):
    path = tmp_path / "a.params"
    params.save(reference_dict(), path)
    with params.open(path) as lazy:
        assert [(i.name, i.dtype.name, i.shape, i.offset, i.nbytes) for i in lazy.index] == [
            ("w", "float32", (2, 3), 0x6A, 24), ("b", "int64", (3,), 0xB2, 24)]
        w = lazy["w"]
        assert not w.flags.owndata and not w.flags.writeable
        np.testing.assert_array_equal(w, reference_dict()["w"])
        assert bytes(lazy.raw("b")) == REFERENCE[0xB2:0xCA]
        del w


def test_save_failure_keeps_the_original(tmp_path):
    path = tmp_path / "a.params"
    params.save(reference_dict(), path)

    class Boom:
        def __array__(self, *a, **k):
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        params.save({"ok": np.ones(1), "bad": Boom()}, path)
    assert path.read_bytes() == REFERENCE
    assert [p.name for p in tmp_path.iterdir()] == ["a.params"]


def test_unsupported_numpy_dtype_is_a_clear_error():
    with pytest.raises(MlfError, match="has no DLDataType"):
        params.dumps({"s": np.array(["text"])})


def test_mapping_edits_are_written():
    p = params.loads(REFERENCE)
    p["w"] = np.zeros(2, "float16")
    del p["b"]
    p["new"] = np.ones(1, "uint8")
    q = params.loads(params.dumps(p))
    assert list(q) == ["w", "new"] and q["w"].dtype == np.float16


def test_file_size_with_pread_path(tmp_path):
    big = np.arange(1 << 19, dtype="float32")  # 2 MiB: read with pread, not the mmap copy
    path = tmp_path / "big.params"
    params.save({"big": big, "small": np.ones(3, "int8")}, path)
    p = params.load(path)
    np.testing.assert_array_equal(p["big"], big)
    assert os.path.getsize(path) == len(params.dumps(p))


def test_runs_of_identical_records_take_the_bulk_paths():
    # >= 32 equal-length names and >= 17 identical headers: bulk readers and strided copies
    d = {f"name{i:03d}": np.arange(6, dtype="float32").reshape(2, 3) + i for i in range(40)}
    d.update({f"n{i}": np.full((4,), i, "int16") for i in range(20)})
    d["tail"] = params.StoredTensor.of(0, 4, 1, (3,), b"\x01\x02\x03")
    d.update({f"s{i}": params.StoredTensor.of(2, 32, 2, (2,), bytes(range(8))) for i in range(12)})
    data = params.dumps(d)
    p = params.loads(data)
    assert list(p) == list(d)
    for name, value in d.items():
        got = p[name]
        if isinstance(value, params.StoredTensor):
            assert bytes(got.data) == bytes(value.data) and got.shape == value.shape
        else:
            np.testing.assert_array_equal(got, value)
            assert got.ctypes.data % params.ALIGNMENT == 0 and got.flags.c_contiguous
    p["name005"][0, 0] = -1  # views of one arena block stay independent tensors
    assert p["name006"][0, 0] == 6
    assert params.dumps(p) != data and params.loads(params.dumps(p))["name005"][0, 0] == -1
    # a corrupt record in the middle of a run is still found, with its index
    bad = bytearray(data)
    rec = params.open(data).index[25]
    struct.pack_into("<q", bad, rec.offset - 8, 999)
    with pytest.raises(ConstraintError) as err:
        params.loads(bytes(bad))
    assert err.value.field == "arrays[25].data_byte_size"


def _sparse_file(tmp_path):
    """Large tensors (headers on their own pages: open() reads them by pread), with
    repeated, consecutive and non-consecutive identical headers."""
    rng = np.random.default_rng(3)
    data = {}
    for i, shape in enumerate([(64, 64, 3, 3), (64,), (64,), (64, 64, 3, 3), (128, 64), (64,), (5000,), (64, 64, 3, 3)]):
        data[f"t{i}"] = rng.standard_normal(shape).astype(np.float32)
    data["z"] = np.zeros((0, 7), np.int8)
    path = tmp_path / "sparse.params"
    params.save(data, path)
    return path, data


@pytest.mark.parametrize("compiled", [False, True], ids=["python", "compiled"])
def test_lazy_open_by_pread_matches_the_mmap_reader(tmp_path, monkeypatch, compiled):
    from mlf_spec.params import accel
    from mlf_spec.params import index as codec_index  # the index builders (the reader patched below)

    if compiled and not accel.available():
        pytest.fail("the compiled walker is not built (tests/params/test_walker.py says why)")
    monkeypatch.setattr(accel, "_chosen", [accel._load() if compiled else None])
    path, data = _sparse_file(tmp_path)
    raw = path.read_bytes()
    calls = []
    real = codec_index.read_tensor_record_heads
    monkeypatch.setattr(codec_index, "read_tensor_record_heads", lambda *a: calls.append(1) or real(*a))
    with params.open(path) as by_pread:
        # the headers were read by the compiled walker, or by the generated heads reader from pread windows
        assert bool(calls) is not compiled
        assert by_pread._mem is None  # nothing mapped until the data is asked for
        index = [tuple(i) for i in by_pread.index]
        assert {k: np.array(by_pread[k]).tolist() for k in by_pread} == {k: v.tolist() for k, v in data.items()}
        assert by_pread._mem is not None
    with params.open(path, mapped=False) as copies:  # never mapped: data read by pread
        assert {k: np.array(copies[k]).tolist() for k in copies} == {k: v.tolist() for k, v in data.items()}
        assert copies._mem is None and bytes(copies.raw_file()) == raw
    with params.open(raw) as in_memory:  # bytes: the heads reader over the buffer
        assert index == [tuple(i) for i in in_memory.index]
    monkeypatch.setattr(codec_index, "_sparse", lambda *a: False)
    with params.open(raw) as as_runs:  # the runs reader agrees
        assert index == [tuple(i) for i in as_runs.index]
    assert by_pread.trailing_bytes == 0
    assert params.load(path).entries.__len__() == len(data)


@pytest.mark.parametrize("which", [1, 2, 3, 5, 8])
@pytest.mark.parametrize("damage", ["magic", "ndim", "size", "cut", "device"])
def test_lazy_open_by_pread_reports_what_the_generated_reader_reports(tmp_path, monkeypatch, which, damage):
    path, _ = _sparse_file(tmp_path)
    raw = bytearray(path.read_bytes())
    with params.open(path) as lazy:
        info = lazy.index[which]
    head = info.offset - 40 - 8 * len(info.shape)
    if damage == "magic":
        raw[head] ^= 1
    elif damage == "ndim":
        raw[head + 24] = 65
    elif damage == "device":
        raw[head + 16] = 2
    elif damage == "size":
        raw[info.offset - 8] ^= 4
    else:
        del raw[info.offset + info.nbytes // 2 - 1:]
    path.write_bytes(bytes(raw))
    with pytest.raises(MlfError) as from_bytes:
        params.open(bytes(raw))
    with pytest.raises(MlfError) as from_file:
        params.open(path)
    with pytest.raises(MlfError) as from_copies:
        params.open(path, mapped=False)
    from mlf_spec.params import index as codec_index

    with monkeypatch.context() as m:
        m.setattr(codec_index, "_sparse", lambda *a: False)
        with pytest.raises(MlfError) as from_runs:  # the runs reader: the reference
            params.open(bytes(raw))

    def said(e):
        return e.value.field, e.value.offset, str(e.value).split(": ", 1)[-1]

    assert said(from_file) == said(from_bytes) == said(from_copies) == said(from_runs)


def test_lazy_open_by_pread_reads_every_shape_and_long_name_tables(tmp_path, monkeypatch):
    """Shapes of 5 to 7 dimensions (read by the full generated reader inside the heads
    reader), a name table longer than the first pread window, a bool tensor (its bytes
    decide the dialect) and an unknown code under strict: as the runs reader reads them."""
    from mlf_spec.params import codec
    from mlf_spec.params import index as codec_index

    rng = np.random.default_rng(5)
    data = {("n" * 300) + f"{i:04d}": rng.standard_normal(shape).astype(np.float32)
            for i, shape in enumerate([(3, 4, 5, 6, 7), (4096,), (2, 2, 2, 2, 2, 2, 130), (64, 64, 4)] * 20)}
    data["flags"] = np.ones(20000, np.bool_)
    data["odd"] = params.StoredTensor.of(0, 4, 1, (40000,), bytes(40000))
    data["unknown"] = params.StoredTensor.of(99, 8, 1, (20000,), bytes(20000))
    path = tmp_path / "shapes.params"
    params.save(data, path)
    raw = path.read_bytes()
    assert raw.index(b"flags") > codec._FIRST  # the names alone pass the first window
    for strict in (False, True):
        with monkeypatch.context() as m:
            m.setattr(codec_index, "_sparse", lambda *a: False)
            try:
                ref = params.open(raw, strict=strict)
            except MlfError as exc:
                ref = exc
        assert isinstance(ref, MlfError) == strict  # the unknown code
        for source, kw in ((path, {}), (path, {"mapped": False}), (raw, {})):
            try:
                got = params.open(source, strict=strict, **kw)
            except MlfError as exc:
                assert isinstance(ref, MlfError) and (exc.field, exc.offset) == (ref.field, ref.offset)
                continue
            assert not isinstance(ref, MlfError)
            assert [tuple(i) for i in got.index] == [tuple(i) for i in ref.index]
            assert got.choice.dialect is ref.choice.dialect and got.choice.by_data == ref.choice.by_data
            got.close()
