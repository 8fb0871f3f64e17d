"""The strategies' vocabulary (TVM versions as strings, Broken, Data), ``accepted_by`` (the
verdict rules of spec/verdicts/tvm_read_rules.yaml) and running a crashing target in
isolation (mlf_spec.isolation)."""

from __future__ import annotations

import os
import pickle
import signal
import warnings

import pytest
from hypothesis import HealthCheck, given, settings

from mlf_spec import blob, params
from mlf_spec import strategies as ms
from mlf_spec.isolation import Isolated, Outcome, run_isolated
from mlf_spec.params import check as pcheck
from mlf_spec.params.codec import StoredTensor
from mlf_spec.versions import label as version_label
from mlf_spec.versions import required as parse_version

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


# ----------------------------------------------------------------- accepted_by


@pytest.mark.parametrize("tvm, writer, code, bits, lanes, shape, verdict, rule", [
    ("0.27", "0.27", 2, 32, 1, (3, 0), "rejects", "tensor.zero-byte-read"),       # k x 0
    ("0.27", "0.27", 2, 32, 1, (0, 3), "loads", None),                            # 0 x k loads
    ("0.6", "0.2", 2, 32, 1, (0, 3), "rejects", "tensor.zero-byte-read-v06"),     # every empty tensor before 0.7
    ("0.27", "0.27", 0, 4, 1, (25,), "crashes", "memory.overflow"),               # int4 over 24 bytes, 0.21 on
    ("0.27", "0.27", 0, 4, 1, (24,), "loads", "memory.overflow-contained"),
    ("0.20", "0.20", 0, 4, 1, (100,), "loads", None),                             # 0.20 allocates a byte per element
    ("0.27", "0.27", 99, 12, 1, (2,), "rejects", "dtype.unnamed"),                # any code and width from 0.21: refused at first use
    ("0.16", "0.16", 0, 12, 1, (2,), "rejects", "dtype.width-refused"),
    ("0.16", "0.16", 0, 24, 1, (2,), "rejects", "dtype.width-not-power-of-two"),
    ("0.6", "0.2", 0, 4, 1, (2,), "rejects", "dtype.width-refused-v06"),          # int4 allowed from 0.7
    ("0.20", "0.20", 8, 4, 1, (2,), "loads", None),                               # float4 allowed in 0.20
    ("0.16", "0.16", 8, 4, 1, (2,), "rejects", "dtype.float4-refused"),
    ("0.16", "0.16", 2, 32, 0, (2,), "rejects", "tensor.lanes-zero-refused"),
    ("0.27", "0.27", 2, 32, 0, (2,), "misreads", "memory.lanes-zero"),            # 8 bytes into the smallest allocation
    ("0.27", "0.27", 2, 32, 0x8000, (2,), "misreads", "tensor.scalable"),         # loads in 0.27 (tests/peers/tvm/test_strategies.py)
    ("0.27", "0.16", 6, 8, 1, (3,), "misreads", "dtype.float8-read-as-bool"),     # renumbered: accepted, not as meant
])
def test_accepted_by_takes_the_verdict_rules(tvm, writer, code, bits, lanes, shape, verdict, rule):
    n = 1
    for s in shape:
        n *= s
    data = params.dumps({"x": StoredTensor.of(code, bits, lanes, shape, bytes(n * -(-bits // 8)))})
    v = pcheck.verdict(data, tvm, writer=writer)
    assert v.verdict == verdict, [r.rule for r in v.all_reasons]
    assert rule is None or rule in [r.rule for r in v.all_reasons]
    assert ms._verdict_of(data, tvm, writer) == verdict


@settings(max_examples=60, suppress_health_check=list(HealthCheck))
@given(ms.params_bytes(era="0.16", accepted_by="0.27"), ms.params_bytes(era="0.16", accepted_by="0.27", as_meant=True))
def test_accepted_by_draws_only_accepted_files(data, meant):
    assert pcheck.verdict(data, "0.27", writer="0.16").verdict in ms.ACCEPTED
    assert pcheck.verdict(meant, "0.27", writer="0.16").verdict == "loads"


def test_accepted_by_filters_what_the_era_alone_draws():
    """Without accepted_by a 0.16 file can be one 0.27 refuses or misreads: the filter does work."""
    seen = set()

    @settings(max_examples=200, database=None, suppress_health_check=list(HealthCheck))
    @given(ms.params_bytes(era="0.16"))
    def draw(data):
        seen.add(pcheck.verdict(data, "0.27", writer="0.16").verdict)

    draw()
    assert {"loads", "misreads"} <= seen and seen - set(ms.ACCEPTED)
    with pytest.raises(ValueError, match="needs accepted_by"):
        ms.params_bytes(as_meant=True)


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
