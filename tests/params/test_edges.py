"""The .params edge strategy (mlf_spec.params.edges) and the generated .params requests: every
edge class is drawn, the reference reads or refuses each edge with MlfError only, edges land on
both sides of their rules, the hard values are among them (extents whose product wraps around
2^64, a float8 code with another width, lanes 0 and 65535, 64 and 65 dimensions, a count right
in its low 32 bits), and the generated requests mix valid, broken and edge files."""

from __future__ import annotations

import struct
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from mlf_spec.generated import params_ir

from mlf_spec import strategies as ms
from mlf_spec._internal.pinned_draw import seed_only
from mlf_spec._internal.spec_engine import trace
from mlf_spec.conformance.generated_cases import drawn_cases
from mlf_spec.errors import MlfError
from mlf_spec.params import codec as params
from mlf_spec.params import dtypes as dt

PARAMS_READER_INFO = {"protocol": "mlf-conformance/1", "name": "x", "version": "1", "serve": True,
                      "formats": [{"format": "params", "roles": ["decode"], "scope": {"dialect": ["v0.26"]}}]}


def _collect(strategy, n: int) -> list:
    out: list = []

    @settings(max_examples=n, derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(strategy)
    def run(x):
        out.append(x)

    with seed_only():  # the same draws in every pytest worker, whatever it imported before
        run()
    return out


def _side(data: bytes, era: str) -> str:
    try:
        params.loads(data, dialect=dt.of_version(tuple(int(x) for x in era.split("."))).id)
    except MlfError:
        return "reject"
    return "accept"


def test_every_edge_class_is_drawn_and_read_or_refused_cleanly_on_both_sides():
    sides: dict[str, set[str]] = {}
    for kind in ms.PARAMS_EDGE_KINDS:
        edges = _collect(ms.edge_params_bytes("0.26", kinds=(kind,)), 20)
        assert {e.kind.split(".")[0] for e in edges} == {kind}
        assert {e.format for e in edges} == {"params"} and {e.era for e in edges} == {"0.26"}
        sides[kind] = {_side(e.data, e.era) for e in edges}  # MlfError or a reading, nothing else
    for kind in ("dtype", "shape", "value"):
        assert sides[kind] == {"accept", "reject"}, (kind, sides)
    assert sides["cut"] == {"reject"} and sides["tail"] == {"accept"}, sides
    edges = _collect(ms.edge_params_bytes("0.26"), 60)  # every kind by weight
    assert len({e.kind.split(".")[0] for e in edges}) >= 5


def _tensors(data: bytes) -> list[dict]:
    """The tensor records of a file whose header and records the spec engine can trace up to
    the data (ndim and sizes unchecked here)."""
    try:
        return trace(params_ir.STRUCTS, "params_file", data, (0, 26))[0]["arrays"]
    except MlfError:
        return []


def test_the_hard_values_are_drawn():
    shaped = _collect(ms.edge_params_bytes("0.26", kinds=("shape",)), 150)
    shapes = [(e, t["shape"]) for e in shaped for t in _tensors(e.data)]
    # extents whose product wraps around 2^64 (to 0 or to a small size the data holds): refused
    wrapped = [e for e, s in shapes if len(s) >= 2 and min(s) > 0 and _prod(s) >= 1 << 64]
    assert wrapped and {_side(e.data, e.era) for e in wrapped} == {"reject"}, [s for _, s in shapes][:30]
    assert any(0 in s and max(s) >= 1 << 31 for _, s in shapes)  # zero beside huge
    assert any(min(s, default=0) < 0 for _, s in shapes)
    dims = {len(s) for _, s in shapes}
    assert {64, 65} <= dims, dims
    typed = _collect(ms.edge_params_bytes("0.26", kinds=("dtype",)), 150)
    triples = {(t["dtype"]["code"], t["dtype"]["bits"], t["dtype"]["lanes"]) for e in typed for t in _tensors(e.data)}
    assert any(7 <= c <= 14 and b != 8 for c, b, _ in triples), triples  # a float8 code with another width
    assert any(c == 17 and b != 4 for c, b, _ in triples), triples  # a float4 code with another width
    assert {0, 65535} <= {lanes for _, _, lanes in triples}, triples
    assert any(c in (128, 129) for c, _, _ in triples), triples
    lengths = _collect(ms.edge_params_bytes("0.26", kinds=("length",)), 60)
    names_counts = {struct.unpack_from("<Q", e.data, 16)[0] for e in lengths if e.where == "names.#count"}
    assert any(1 << 32 <= n < 1 << 33 for n in names_counts), names_counts  # right in its low 32 bits
    assert {e.where for e in lengths} == {"names.#count", "names[].#count", "count"}
    with pytest.raises(ValueError, match="unknown edge kinds"):
        _collect(ms.edge_params_bytes(kinds=("nope",)), 1)


def _prod(shape: list[int]) -> int:
    n = 1
    for x in shape:
        n *= x
    return n


def test_the_generated_params_requests_mix_valid_broken_and_edge_files(tmp_path):
    cases = drawn_cases(PARAMS_READER_INFO, 60, seed_value=0, where=tmp_path)
    labels = Counter(c.features["generated"][0].split(".")[0] for c in cases)
    assert set(labels) == {"valid", "broken", "edge"} and labels["edge"] > labels["valid"], labels
    assert {c.format for c in cases} == {"params"} and {c.options["dialect"] for c in cases} == {"v0.26"}
