"""A testee that declares ``payloads: []`` reads every payload as opaque bytes: the vectors whose
fault lies inside a length-consistent tvm-ffi payload are skips with the reason (not failures),
and a legacy blob of ``_lib`` / ``_import_tree`` entries only still reaches it (two libraries:
accepted at 0.7, refused at 0.8). Checked on the in-tree blob readers built with
``-DMLF_OPAQUE_PAYLOADS`` (they then parse no payload grammar and say so in their handshake).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mlf_spec.conformance import runner, vectors
from mlf_spec.conformance.mutation import harness
from mlf_spec.conformance.testee import Persistent

HERE = Path(__file__).resolve().parents[1] / "support" / "independent"
needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is needed to build the C readers")
OPAQUE_BUILD = harness.DEFAULT_BUILD.replace("-o {out}", "-DMLF_OPAQUE_PAYLOADS -o {out}")


@pytest.fixture(scope="module")
def blobs():
    return vectors.load_suite(formats=["blob"])


def _layout(cases, layout):
    return [c for c in cases if c.options.get("layout") == layout]


def _info(payloads):
    return {"formats": [{"format": "blob", "roles": ["decode"], "payloads": payloads}]}


def test_a_fault_inside_an_undeclared_ffi_payload_is_a_skip_with_the_reason(blobs):
    by_id = {c.id: c for c in blobs}
    inside = by_id["blob.ffi.bound.c_source_payload.code.length.body.modules.3.payload.code.n.0x10000000000"]
    reason = runner.skip_reason(inside, _info([]))
    assert reason is not None and "inside a payload of c" in reason and "`payloads`" in reason
    assert runner.skip_reason(inside, _info(["c"])) is None  # a reader of c's grammar must see it
    assert runner.skip_reason(inside, {"formats": [{"format": "blob", "roles": ["decode"]}]}) is None  # every kind
    # a fault in the framing (a lying module count, the size prefix) is every reader's to see
    framing = [c for c in _layout(blobs, "ffi") if c.expected["outcome"] == "reject"
               and c.features.get("rule", [""])[0].startswith(("ffi_body.", "ffi_blob."))]
    assert len(framing) > 50
    assert [c.id for c in framing if runner.skip_reason(c, _info([]))] == []


@needs_gcc
def test_an_opaque_ffi_reader_gets_only_passes_and_skips(blobs, tmp_path):
    binary, _ = harness.build(HERE / "blob_reader.c", OPAQUE_BUILD, tmp_path)
    t = Persistent([str(binary)])
    assert t.info()["formats"][0]["payloads"] == []
    result = runner.run(t, _layout(blobs, "ffi"), progress=False)
    assert set(result.counts) == {"pass", "skip"}, [(r["id"], r.get("message")) for r in result.results
                                                    if r["outcome"] not in ("pass", "skip")][:5]
    skipped = {r["id"]: r["message"] for r in result.results if r["outcome"] == "skip"}
    assert len(skipped) > 250
    assert all("whose grammar the handshake's `payloads` does not declare" in m for m in skipped.values())
    for prefix in ("blob.ffi.bound.c_source_payload.", "blob.ffi.bound.function_info.", "blob.ffi.bound.device_binary.",
                   "blob.ffi.vm.relax.", "blob.ffi.broken.lying_length.body.modules.", "blob.ffi.bound.arg-types-one"):
        assert any(i.startswith(prefix) for i in skipped), prefix
    by_id = {c.id: c for c in blobs}
    refused = [r["id"] for r in result.results if r["outcome"] == "pass" and by_id[r["id"]].expected["outcome"] == "reject"]
    assert len(refused) > 100  # the framing's faults it still sees and refuses


@needs_gcc
def test_an_opaque_legacy_reader_judges_the_era_of_a_blob_of_libraries_only(blobs, tmp_path):
    """Every legacy payload needs its grammar, so the opaque legacy reader answers unsupported
    to all but the blobs of _lib and _import_tree entries; those it must read, and two
    libraries are accepted at 0.7 and refused at 0.8: its `era >= 0.8` check cannot be dropped
    unseen."""
    binary, mutants = harness.build(HERE / "legacy_blob_reader.c", OPAQUE_BUILD, tmp_path)
    legacy = _layout(blobs, "legacy")
    result = runner.run(Persistent([str(binary)]), legacy, progress=False, strict_errors=True)
    assert set(result.counts) == {"pass", "skip"}, result.counts
    ran = {r["id"] for r in result.results if r["outcome"] == "pass"}
    assert {"blob.legacy.0.7.tree.two-libs-only", "blob.legacy.0.8.tree.two-libs-only"} <= ran
    by_id = {c.id: c for c in legacy}
    assert by_id["blob.legacy.0.7.tree.two-libs-only"].expected["outcome"] == "accept"
    assert by_id["blob.legacy.0.8.tree.two-libs-only"].expected["outcome"] == "reject"
    era_check = next(m for m in mutants if m.operator == "check" and "libs > 1" in m.original)
    dropped = harness.testee_for([str(binary)], era_check.id)
    killed = runner.run(dropped, [by_id["blob.legacy.0.8.tree.two-libs-only"]], progress=False)
    assert killed.counts == {"fail": 1}
