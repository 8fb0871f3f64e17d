"""``params_bytes(accepted_by="0.27")`` against the real apache-tvm 0.27 reader, which runs
in a child process (mlf_spec.isolation) because it aborts on some inputs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

pytest.importorskip("tvm", reason="apache-tvm is installed by the test extra")

import tvm_artifacts as ta  # noqa: E402

from mlf_spec import params  # noqa: E402
from mlf_spec import strategies as ms  # noqa: E402
from mlf_spec.acceptance import params_refusal  # noqa: E402
from mlf_spec.isolation import Isolated  # noqa: E402
from mlf_spec.params.codec import StoredTensor  # noqa: E402

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
    (np.zeros((3, 0), "f4"), "error"),                                        # k x 0: refused by every TVM from 0.7
    (StoredTensor.of(0, 4, 1, (40,), bytes(40)), "refused"),                   # int4 over 24 elements
    (StoredTensor.of(0, 4, 1, (24,), bytes(24)), "ok"),
    (np.zeros((0, 3), "f4"), "ok"),
])
def test_the_predicate_agrees_with_tvm_on_the_known_cases(tvm_reader, tensor, verdict):
    data = params.dumps({"x": tensor})
    why = params_refusal(data, "0.27")
    r = tvm_reader(data)
    if verdict == "ok":
        assert why is None and r.ok, (why, r)
    elif verdict == "error":
        assert why is not None and r.status == "error" and "Invalid DLTensor file format" in r.error, (why, r)
    else:  # heap corruption: a crash or, by luck, a load; the predicate refuses it either way
        assert why is not None and "heap corruption" in why
