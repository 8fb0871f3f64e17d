"""The blob edge strategy (mlf_spec.blob.edges) and the generated cases the mutation harness
replays: every edge class is drawn, the reference reads or refuses each edge with MlfError only,
edges land on both sides of their rules, and the same seed draws the same cases."""

from __future__ import annotations

from collections import Counter

from hypothesis import HealthCheck, given, settings

from mlf_spec import strategies as ms
from mlf_spec._internal.pinned_draw import seed_only
from mlf_spec.blob import codec as blob
from mlf_spec.conformance.generated_cases import drawn_cases
from mlf_spec.errors import MlfError

LEGACY_READER_INFO = {"protocol": "mlf-conformance/1", "name": "x", "version": "1", "serve": True,
                      "formats": [{"format": "blob", "roles": ["decode"], "scope": {"layout": ["legacy"]},
                                   "payloads": ["c", "cuda", "opencl", "static_library", "metadata_module"]}]}


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
    edges = _collect(ms.edge_blob_bytes("legacy", kinds=("c", "cuda", "static_library", "metadata_module")), 120)
    classes = Counter(e.kind.split(".")[0] for e in edges)
    assert set(classes) == set(ms.EDGE_KINDS), classes
    sides: dict[str, set[str]] = {}
    for e in edges:
        try:
            b = blob.parse(e.data, format=e.format, era=e.era)
            b.modules()
            side = "accept"
        except MlfError:
            side = "reject"
        sides.setdefault(e.kind.split(".")[0], set()).add(side)
    assert sides["tree"] == {"accept", "reject"} and sides["length"] >= {"reject"}, sides
    # modules are drawn of the given kinds only
    for e in edges:
        try:
            kinds = {m.kind for m in blob.parse(e.data, format=e.format, era=e.era).modules()}
        except MlfError:
            continue
        assert kinds <= {"_lib", "c", "cuda", "static_library", "metadata_module"}, (e.kind, kinds)


def test_the_generated_cases_a_seed_draws_are_the_same_every_time(tmp_path):
    first = drawn_cases(LEGACY_READER_INFO, 25, seed_value=3, where=tmp_path)
    again = drawn_cases(LEGACY_READER_INFO, 25, seed_value=3, where=tmp_path)
    assert [(c.id, c.input_sha256) for c in first] == [(c.id, c.input_sha256) for c in again]
    assert len(first) == 25 and {c.format for c in first} == {"blob"}
    assert any(".edge." in c.id for c in first), [c.id for c in first]


FFI_PARSED = ("cuda", "hip", "hsaco", "opencl", "aocl", "sdaccel", "hexagon", "c")


def test_every_ffi_edge_class_is_drawn_and_lands_where_its_rule_says():
    """The tvm-ffi layout's own edges: near kind names are read (as opaque payloads) and the empty
    kind refused; a long list's count as built is read, one element past what remains or wrapping
    in 64 bits is refused; bytes after a parsed payload's grammar inside its length are refused;
    many child indices after the _lib's row are read."""
    edges = _collect(ms.edge_blob_bytes("ffi", kinds=FFI_PARSED), 150)
    classes = Counter(e.kind.split(".")[0] for e in edges)
    assert {"kind", "bound", "inner", "tree", "length", "value"} <= set(classes) <= set(ms.FFI_EDGE_KINDS), classes
    seen: dict[str, set[str]] = {}
    for e in edges:
        try:
            mods = blob.parse(e.data, format=e.format, era=e.era).modules()
            side = "accept"
        except MlfError:
            mods, side = [], "reject"
        seen.setdefault(e.kind if e.kind.startswith(("kind", "bound")) else e.kind.split(".")[0], set()).add(side)
        if e.kind == "kind.near":
            names = {m.kind for m in mods[1:]}
            assert "_lib" not in names and not names & set(blob.known_kinds("ffi")) - set(FFI_PARSED), names
            assert any(n in names for n in ("_li", "_lia", "_lic", "_LIB", "_lib_")), names
        if e.kind == "inner" and e.where.startswith("body.module-") and e.where.split(".")[1][7:] in FFI_PARSED:
            assert side == "reject", e
        if e.kind == "tree.children-many":
            assert side == "accept" and [m.kind for m in mods] == ["_lib"], e
    # (which variants a run draws depends on the constants Hypothesis collects from the imported
    # modules: each drawn variant must land on its side, the common ones must be drawn)
    assert seen["kind.near"] == {"accept"} and seen["bound.fill"] == {"accept"}, seen
    assert seen.get("kind.empty", {"reject"}) == {"reject"}, seen
    assert all(seen.get(f"bound.{how}", {"reject"}) == {"reject"} for how in ("past", "wrap", "high")), seen
    assert seen["inner"] == {"accept", "reject"}, seen
