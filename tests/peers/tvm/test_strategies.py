"""``params_bytes(accepted_by="0.27")`` against the real apache-tvm 0.27 reader, which runs
in a child process (mlf_spec.isolation) because it aborts on some inputs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

pytest.importorskip("tvm", reason="apache-tvm is installed by the test extra")

from mlf_spec import params  # noqa: E402
from mlf_spec import strategies as ms  # noqa: E402
from mlf_spec.isolation import Isolated  # noqa: E402
from mlf_spec.params import check as pcheck  # noqa: E402
from mlf_spec.params.codec import StoredTensor  # noqa: E402
from tests.support import tvm_artifacts as ta  # noqa: E402

pytestmark = pytest.mark.tvm


@pytest.fixture(scope="module")
def tvm_reader():
    if not ta.tvm_version().startswith("0.27"):
        pytest.skip(f"written against apache-tvm 0.27, found {ta.tvm_version()}")
    with Isolated(ta.load_param_names, timeout=120, preload=["tvm"]) as target:
        yield target


def test_every_file_drawn_for_0_27_loads_in_tvm_0_27(tvm_reader):
    seen = []

    @settings(max_examples=120, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(ms.params_bytes(accepted_by="0.27"))
    def run(data):
        r = tvm_reader(data)
        assert r.ok, (r, data.hex())
        with params.open(data, strict=False) as lazy:
            assert len(r.value) == len({i.name for i in lazy.index})
        seen.append(len(data))

    run()
    assert len(seen) >= 100


@pytest.mark.parametrize("tensor, verdict", [
    (np.zeros((3, 0), "f4"), "rejects"),                                      # k x 0: refused by every TVM from 0.7
    (StoredTensor.of(0, 4, 1, (40,), bytes(40)), "crashes"),                   # int4 over 24 elements
    (StoredTensor.of(0, 4, 1, (24,), bytes(24)), "loads"),
    (np.zeros((0, 3), "f4"), "loads"),
    (StoredTensor.of(2, 32, 0x8000, (2,), bytes(8)), "misreads"),             # lanes 0x8000: a "scalable vector"
])
def test_the_verdict_agrees_with_tvm_on_the_known_cases(tvm_reader, tensor, verdict):
    data = params.dumps({"x": tensor})
    v = pcheck.verdict(data, "0.27", writer="0.27")
    r = tvm_reader(data)
    assert v.verdict == verdict, [x.rule for x in v.all_reasons]
    if verdict in ms.ACCEPTED:
        assert r.ok, r
    elif verdict == "rejects":
        assert r.status == "error" and "Invalid DLTensor file format" in r.error, r
    # crashes: heap corruption, a crash or, by luck, a load; accepted_by leaves it out either way
