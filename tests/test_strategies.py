"""The strategies' vocabulary (TVM versions as strings, Broken, Data), the acceptance rules
(mlf_spec.acceptance) and running a crashing target in isolation (mlf_spec.isolation)."""

from __future__ import annotations

import os
import pickle
import signal
import warnings

import pytest
from hypothesis import HealthCheck, given, settings

from mlf_spec import blob, params
from mlf_spec import strategies as ms
from mlf_spec.acceptance import accepts_params, params_refusal, parse_version, tensor_refusal, version_label
from mlf_spec.isolation import Isolated, Outcome, run_isolated
from mlf_spec.params.codec import StoredTensor

# ----------------------------------------------------------------- vocabulary


def test_versions_are_strings_and_tuples_warn():
    assert parse_version("0.27") == (0, 27) == parse_version("v0.27") == parse_version("0.27.0.post1")
    assert version_label((0, 16)) == "0.16"
    assert ms.PARAMS_ERAS == ("0.2", "0.7", "0.13", "0.20", "0.21", "0.23", "0.26")
    assert all(isinstance(e, str) for f in ms.BLOB_ERAS for e in ms.BLOB_ERAS[f])
    with pytest.warns(DeprecationWarning, match="era='0.16'"):
        ms.params_bytes(era=(0, 16))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ms.params_bytes(era="0.16", accepted_by="0.27")
    with pytest.raises(ValueError, match="a TVM version like"):
        parse_version("sixteen")


@settings(max_examples=20, suppress_health_check=list(HealthCheck))
@given(ms.broken_params_bytes(), ms.broken_blob_bytes(), ms.broken_mlf_archives(), ms.broken_mlf_metadata())
def test_every_broken_strategy_draws_one_type(p, b, a, m):
    for x in (p, b, a, m):
        assert isinstance(x, ms.Broken) and isinstance(x.data, bytes) and x.expect in ("error", "finding")
    assert p.era in ms.PARAMS_ERAS and p.kind in ms.PARAMS_BROKEN_KINDS
    assert b.format in blob.FORMATS and b.era in ms.BLOB_ERAS[b.format]
    assert a.kind in ms.MLF_ARCHIVE_BROKEN_KINDS and m.kind in ms.MLF_METADATA_BROKEN_KINDS
    assert m.version is None or 1 <= m.version <= 7


def test_large_examples_have_one_line_reprs():
    big = ms.Data(bytes(100_000))
    assert len(repr(big)) < 80 and repr(big).startswith("<100000 bytes 000000")
    assert repr(ms.Data(b"ab")) == "b'ab'"
    broken = ms.Broken("truncated", bytes(50_000), era="0.27")
    assert len(repr(broken)) < 160 and "era='0.27'" in repr(broken)
    assert isinstance(broken.data, ms.Data)
    assert pickle.loads(pickle.dumps(big)) == big


@settings(max_examples=5, suppress_health_check=list(HealthCheck))
@given(ms.mlf_archives(7))
def test_archive_examples_print_short(arc):
    assert len(repr(arc)) < 120


# ----------------------------------------------------------------- acceptance


@pytest.mark.parametrize("tvm, code, bits, lanes, shape, refused", [
    ("0.27", 2, 32, 1, (3, 0), "no data bytes"),        # k x 0
    ("0.27", 2, 32, 1, (0, 3), None),                   # 0 x k loads
    ("0.6", 2, 32, 1, (0, 3), "before 0.7"),            # every empty tensor before 0.7
    ("0.27", 0, 4, 1, (25,), "heap corruption"),        # int4 over 24 elements, 0.21 on
    ("0.27", 0, 4, 1, (24,), None),
    ("0.20", 0, 4, 1, (100,), None),                    # 0.20 allocates a byte per element
    ("0.27", 99, 12, 1, (2,), None),                    # any code and width from 0.21
    ("0.16", 0, 12, 1, (2,), "VerifyDataType"),
    ("0.16", 0, 24, 1, (2,), "power of two"),
    ("0.6", 0, 4, 1, (2,), "VerifyDataType"),           # int4 allowed from 0.7
    ("0.20", 8, 4, 1, (2,), None),                      # float4 allowed in 0.20
    ("0.16", 8, 4, 1, (2,), "VerifyDataType"),
    ("0.16", 2, 32, 0, (2,), "lanes 0"),
    ("0.27", 2, 32, 0, (2,), None),                     # 8 bytes into the smallest allocation
    ("0.27", 2, 32, 0x8000, (2,), "cannot be allocated"),
])
def test_tensor_rules_by_version(tvm, code, bits, lanes, shape, refused):
    why = tensor_refusal(tvm, code, bits, lanes, shape)
    assert (why is None) if refused is None else (why is not None and refused in why), why


@settings(max_examples=60, suppress_health_check=list(HealthCheck))
@given(ms.params_bytes(accepted_by="0.20"))
def test_accepted_by_draws_only_accepted_files(data):
    assert accepts_params(data, "0.20")


def test_a_file_our_reader_refuses_is_refused():
    assert params_refusal(b"junk", "0.27").startswith("not a readable .params file")
    assert accepts_params(params.dumps({"w": StoredTensor.of(0, 4, 1, (4,), bytes(4))}), "0.27")


# ----------------------------------------------------------------- isolation


def _returns(data):
    return data[::-1]


def _raises(data):
    raise ValueError(f"bad input {data!r}")


def _aborts(data):
    os.write(2, b"free(): invalid pointer\n")
    os.abort()


def _exits(data):
    os._exit(7)


def _hangs(data):
    import time

    time.sleep(60)


def test_run_isolated_reports_every_outcome():
    assert run_isolated(_returns, b"abc").value == b"cba"
    r = run_isolated(_raises, b"x")
    assert (r.status, r.error_type, r.ok) == ("error", "ValueError", False) and "bad input" in r.error
    r = run_isolated(_aborts, b"x")
    assert (r.status, r.signal, r.signal_name, r.crashed) == ("crash", signal.SIGABRT, "SIGABRT", True)
    assert "free(): invalid pointer" in r.stderr and "SIGABRT" in repr(r)
    r = run_isolated(_exits, b"x")
    assert (r.status, r.exit_code, r.signal) == ("crash", 7, None)
    r = run_isolated(_hangs, b"x", timeout=1)
    assert r.status == "timeout" and r.crashed


def test_isolated_keeps_its_child_and_restarts_it_after_a_crash():
    with Isolated(_returns) as target:
        first = target(b"12")
        pid = target._proc.pid
        assert target(b"34").value == b"43" and target._proc.pid == pid and first.ok
    with Isolated(_aborts) as target:
        assert target(b"").status == "crash" and target(b"").status == "crash"  # started again
    assert isinstance(Outcome("ok", value=1), Outcome)


_STATE = {"calls": 0}


def _counts(data):
    _STATE["calls"] += 1
    return _STATE["calls"]


def test_a_fresh_process_per_input_keeps_no_state_from_the_last_one():
    with Isolated(_counts, fresh=True) as fresh:
        assert [fresh(b"").value for _ in range(3)] == [1, 1, 1]
    with Isolated(_counts, fresh=False) as kept:
        assert [kept(b"").value for _ in range(3)] == [1, 2, 3]
