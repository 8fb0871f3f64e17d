"""The tensor-cache edge strategy (mlf_spec.cache.edges) and the generated cache requests: every
edge class is drawn, the reference reads or refuses each edge with MlfError only, edges land on
both sides of their rules, in the index version asked for, and the generated requests mix valid,
broken and edge folders of many kinds."""

from __future__ import annotations

from collections import Counter

from hypothesis import HealthCheck, given, settings

from mlf_spec import strategies as ms
from mlf_spec._internal.pinned_draw import seed_only
from mlf_spec.conformance.generated_cases import drawn_cases
from mlf_spec.conformance.suite.cache import folder_outcome

CACHE_READER_INFO = {"protocol": "mlf-conformance/1", "name": "x", "version": "1", "serve": True,
                     "formats": [{"format": "tensor-cache", "roles": ["decode"], "scope": {"version": ["1"]}}]}


def _collect(strategy, n: int) -> list:
    out: list = []

    @settings(max_examples=n, derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(strategy)
    def run(x):
        out.append(x)

    with seed_only():  # the same draws in every pytest worker, whatever it imported before
        run()
    return out


def test_every_edge_class_is_drawn_and_read_or_refused_cleanly_on_both_sides():
    sides: dict[str, set[str]] = {}
    for kind in ms.CACHE_EDGE_KINDS:
        edges = _collect(ms.edge_caches(versions=(1, 2), kinds=(kind,)), 12)
        assert {e.kind.split(".")[0] for e in edges} == {kind}
        index = {n for e in edges for n in e.files if n in ("tensor-cache.json", "ndarray-cache.json")}
        assert index, kind
        # folder_outcome lets only MlfError through as a rejection: anything else fails here
        sides[kind] = {folder_outcome("generated", e.files)["outcome"] for e in edges}
    for kind in ("dtype", "shape", "size", "key", "text"):
        assert sides[kind] == {"accept", "reject"}, (kind, sides)
    for kind in ("value", "type"):  # an integer moved off the value its record needs, a key of another type
        assert "reject" in sides[kind], sides


def test_edges_are_named_for_the_version_asked_for():
    edges = _collect(ms.edge_caches(versions=(1,)), 20)
    assert {e.version for e in edges} == {1}
    assert all("tensor-cache.json" not in e.files for e in edges if not e.kind.startswith("index."))


def test_generated_cache_requests_reach_many_kinds_in_the_declared_version(tmp_path):
    """The generated requests of a reader that declares index version 1 only: valid, broken and
    edge folders (most of them edges), each named ndarray-cache.json, of many kinds (10,000 drawn
    requests used to reach 11)."""
    cases = drawn_cases(CACHE_READER_INFO, 120, seed_value=0, formats=["tensor-cache"], where=tmp_path)
    labels = Counter(c.features["generated"][0].split(".")[0] for c in cases)
    assert set(labels) == {"valid", "broken", "edge"} and labels["edge"] > labels["valid"], labels
    assert {c.scope["version"] for c in cases} == {"1"}
    kinds = {c.features["generated"][0] for c in cases}
    assert len(kinds) >= 25, sorted(kinds)
    assert {c.expected["outcome"] for c in cases if c.features["generated"][0].startswith("edge.")} == \
        {"accept", "reject"}
