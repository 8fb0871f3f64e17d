"""Property tests for .params: exact round trips both ways over every dtype of every era,
and malformed input that only ever raises MlfError."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mlf_spec.generated import params_construct, params_fast

from mlf_spec import dtypes, params
from mlf_spec import strategies as ms
from mlf_spec.errors import MlfError


@given(ms.params_bytes())
def test_dumps_loads_is_identity_on_valid_bytes(data):
    p = params.loads(data, strict=False)
    assert params.dumps(p) == data


@given(ms.params_bytes())
def test_lazy_index_agrees_with_load(data):
    p = params.loads(data, strict=False)
    lazy = params.open(data, strict=False)
    assert [i.name for i in lazy.index] == [n for n, _ in p.entries]
    for info, (_, t) in zip(lazy.index, p.entries):
        raw = bytes(lazy.raw(info.name)) if [i.name for i in lazy.index].count(info.name) == 1 else None
        stored = bytes(memoryview(t.data).cast("B")) if isinstance(t, params.StoredTensor) else t.tobytes()
        if raw is not None:
            assert raw == stored
        assert info.nbytes == len(stored)


@given(ms.params_bytes())
def test_fast_reader_and_construct_grammar_agree(data):
    rec, _ = params_fast.read_params_file(memoryview(data), 0, len(data))
    parsed = params_construct.params_file.parse(data)
    assert parsed.names == rec.names
    for a, r in zip(parsed.arrays, rec.arrays):
        assert (a.dtype.code, a.dtype.bits, a.dtype.lanes) == (r.dtype_code, r.dtype_bits, r.dtype_lanes)
        assert list(a.shape) == list(r.shape)
        assert a.reserved == r.reserved and a.device.device_id == r.device_id
        assert a.data == data[r.data_offset:r.data_offset + r.data_byte_size]
    assert params_construct.params_file.build(parsed) == data


@given(st.sampled_from([d.id for d in dtypes.DIALECTS]).flatmap(lambda d: st.tuples(st.just(d), ms.param_dicts(d))))
def test_loads_dumps_is_identity_on_mappings(dialect_and_dict):
    dialect, d = dialect_and_dict
    data = params.dumps(d, dialect=dialect)
    p = params.loads(data, dialect=dialect)
    assert list(p) == list(d)
    for name, value in d.items():
        got = p[name]
        if isinstance(value, params.StoredTensor):
            assert isinstance(got, params.StoredTensor)
            assert (got.dtype.code, got.dtype.bits, got.dtype.lanes, got.shape) == (
                value.dtype.code, value.dtype.bits, value.dtype.lanes, value.shape)
            assert bytes(got.data) == bytes(value.data)
        else:
            assert got.dtype == value.dtype and got.shape == value.shape
            assert got.tobytes() == value.tobytes()
    assert params.dumps(p) == data


@settings(suppress_health_check=list(HealthCheck))
@given(ms.broken_params_bytes())
def test_broken_files_raise_mlf_error(broken):
    kind, data = broken.kind, broken.data
    assert broken.expect == "error" and broken.era in ms.PARAMS_ERAS
    try:
        params.loads(data)
    except MlfError as exc:
        assert exc.offset is not None and 0 <= exc.offset <= len(data), (kind, exc)
        return
    raise AssertionError(f"{kind}: accepted {data.hex()}")


@given(ms.params_bytes(), st.data())
def test_any_mutation_gives_a_result_or_mlf_error(data, draw):
    buf = bytearray(data)
    for _ in range(draw.draw(st.integers(1, 4))):
        if not buf:
            break
        i = draw.draw(st.integers(0, len(buf) - 1))
        buf[i] = draw.draw(st.integers(0, 255))
    cut = draw.draw(st.integers(0, len(buf)))
    try:
        p = params.loads(bytes(buf[:cut]), strict=False)
    except MlfError:
        return
    assert params.dumps(p) == bytes(buf[:cut])


def _reject_kind(kind):
    @settings(max_examples=5, suppress_health_check=list(HealthCheck), database=None)
    @given(ms.broken_params_bytes((kind,)))
    def check(broken):
        assert broken.kind == kind
        try:
            params.loads(broken.data)
        except MlfError:
            return
        raise AssertionError(kind)

    return check


def test_every_broken_kind_is_reachable():
    # each named kind must be producible (the strategy does not silently skip kinds)
    for kind in ms.PARAMS_BROKEN_KINDS:
        _reject_kind(kind)()


def test_numpy_dtypes_cover_every_table_type():
    latest = {str(np.dtype(t)) for t in ms.numpy_dtypes().elements}
    assert {"bool", "bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu", "complex64", "int8", "uint64",
            "float16"} <= latest
    old = {str(np.dtype(t)) for t in ms.numpy_dtypes("0.16").elements}
    assert {"bool", "bfloat16", "float8_e4m3fn", "float8_e5m2"} <= old and "float8_e8m0fnu" not in old
