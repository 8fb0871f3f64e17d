"""Property tests for module blobs: exact round trips of valid blobs of every era (bytes ->
tree -> bytes through TVM's numbering), the fast reader against the Construct grammar, the
named broken kinds, and malformed input that only ever gives a result or an MlfError, in
memory bounded by the input's size."""

from __future__ import annotations

import tracemalloc

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mlf_spec.generated import blob_ffi_construct, blob_legacy_construct

from mlf_spec import blob
from mlf_spec import strategies as ms
from mlf_spec.errors import MlfError
from mlf_spec.versions import required as parse_version

FORMAT_ERAS = st.sampled_from([(f, e) for f in blob.FORMATS for e in ms.BLOB_ERAS[f]])


def with_era():
    return FORMAT_ERAS.flatmap(lambda fe: st.tuples(st.just(fe), ms.blob_bytes(*fe)))


@settings(suppress_health_check=list(HealthCheck))
@given(with_era())
def test_valid_blobs_round_trip_through_bytes_and_trees(arg):
    (fmt, era), data = arg
    assert blob.parse(data).to_bytes() == data  # whatever grammar the detection picks
    b = blob.parse(data, format=fmt, era=era)
    assert b.to_bytes() == data
    assert blob.build(b.root(), format=fmt, era=era) == data
    for e in b.entries:
        if e.payload is not None:
            assert e.payload.to_bytes(era) == data[e.payload_offset:e.payload_offset + e.payload_size]


@settings(suppress_health_check=list(HealthCheck))
@given(with_era())
def test_fast_reader_and_construct_grammar_agree(arg):
    (fmt, era), data = arg
    b = blob.parse(data, format=fmt, era=era)
    if fmt == "ffi":
        e = parse_version(era)  # the Construct grammar takes the version as a tuple
        parsed = blob_ffi_construct.ffi_blob.parse(data, era=e)
        kinds = [m.kind for m in parsed.body.modules]
        assert blob_ffi_construct.ffi_blob.build(parsed, era=e) == data
        assert list(parsed.body.row_ptr) == list(b.row_ptr)
    else:
        parsed = blob_legacy_construct.legacy_blob.parse(data, era=parse_version(era))
        kinds = [x.kind for x in parsed.body.entries if x.kind != "_import_tree"]
        assert blob_legacy_construct.legacy_blob.build(parsed, era=parse_version(era)) == data
    assert kinds == [e.kind for e in b.entries]


@settings(suppress_health_check=list(HealthCheck))
@given(FORMAT_ERAS.flatmap(lambda fe: ms.module_trees(*fe)), FORMAT_ERAS)
def test_building_any_valid_tree_for_any_era_gives_bytes_or_an_mlf_error(root, target):
    """A tree made for one layout and era, built for another: a blob that reads back, or an
    MlfError (a field that era's layout has not, a payload of the other layout, a kind it
    has no grammar for, a tree TVM cannot number), never another exception."""
    fmt, era = target
    try:
        data = blob.build(root, format=fmt, era=era)
    except MlfError as exc:
        assert exc.message and exc.field, exc
        return
    assert blob.parse(data, format=fmt, era=era).to_bytes() == data


@settings(suppress_health_check=list(HealthCheck))
@given(with_era())
def test_an_explicit_order_in_blob_order_rebuilds_every_valid_blob(arg):
    (fmt, era), data = arg
    b = blob.parse(data, format=fmt, era=era)
    if b.row_ptr is None or b.unread_root is not None:
        return  # no import tree to number
    nodes = b.modules()
    assert blob.build(nodes[0], format=fmt, era=era, order=nodes) == data


def _ffi_payload(kind):
    from hypothesis import find

    return find(ms.blob_payloads(kind, "ffi", "0.24"), lambda p: True)


def test_a_payload_of_another_era_or_layout_is_an_error_naming_the_module():
    import pytest

    metal = blob.Module.lib(blob.Module("c", blob.new_payload("c", code="x", fmt="c", func_names=["f"], const_vars=[])), blob.Module("metal", _ffi_payload("metal")))
    with pytest.raises(MlfError, match=r"module 'metal' \(2 in depth-first order.*legacy layout of TVM 0.16: "
                                       r"\w+ is part of this layout in TVM 0.16, but the record holds none") as err:
        blob.build(metal, format="legacy", era="0.16")
    assert err.value.field.startswith("modules[2].payload.")
    relax = blob.Module.lib(blob.Module("relax.VMExecutable", _ffi_payload("relax.VMExecutable")))
    with pytest.raises(MlfError, match="relax_vm_body record, while the legacy layout of TVM 0.20 stores a "
                                       "'relax.VMExecutable' payload as relax_vm_wrapped"):
        blob.build(relax, format="legacy")
    npu = blob.Module.lib(blob.Module("example_npu_json", _ffi_payload("example_npu_json")))
    with pytest.raises(MlfError, match="has no grammar for kind 'example_npu_json'"):
        blob.build(npu, format="legacy", era="0.16")
    assert blob.build(metal, format="ffi")  # the layout and era it was made for


@settings(suppress_health_check=list(HealthCheck))
@given(ms.broken_blob_bytes())
def test_broken_blobs_fail_or_warn_as_named(broken):
    expect = ms.BLOB_BROKEN_KINDS[broken.kind]
    assert broken.expect == expect and isinstance(broken.data, bytes) and isinstance(broken.era, str)
    try:
        b = blob.parse(broken.data, format=broken.format, era=broken.era)
    except MlfError as exc:
        assert expect == "error", (broken.kind, exc)
        assert exc.offset is not None and 0 <= exc.offset <= len(broken.data), (broken.kind, exc)
        assert exc.field, (broken.kind, exc)
        return
    assert expect == "finding", (broken.kind, broken.data.hex())
    code = {"cyclic_import_tree": "tree.cycle", "duplicate_lib_ffi": "tree.several-lib", "row_ptr_decreasing": "tree.order"}[broken.kind]
    assert code in [f.code for f in b.findings]
    list(b.root().walk())  # a cyclic graph is walked once


@st.composite
def mutated(draw):
    data = bytearray(draw(ms.blob_bytes()))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "cut", "insert", "u64"]))
        if op == "flip" and data:
            data[draw(st.integers(0, len(data) - 1))] ^= 1 << draw(st.integers(0, 7))
        elif op == "cut" and data:
            i = draw(st.integers(0, len(data) - 1))
            del data[i:i + draw(st.integers(1, 16))]
        elif op == "insert":
            i = draw(st.integers(0, len(data)))
            data[i:i] = draw(st.binary(min_size=1, max_size=16))
        elif op == "u64" and len(data) >= 8:
            i = draw(st.integers(0, len(data) - 8))
            data[i:i + 8] = draw(st.sampled_from([0, 1, 2**31, 2**63, 2**64 - 1, len(data)])).to_bytes(8, "little")
    if len(data) >= 8 and draw(st.booleans()):  # keep the size prefix honest so the body gets read
        data[:8] = (len(data) - 8).to_bytes(8, "little")
    return bytes(data)


@settings(suppress_health_check=list(HealthCheck))
@given(mutated())
def test_any_input_gives_a_result_or_mlf_error_in_bounded_memory(data):
    tracemalloc.start()
    try:
        b = blob.parse(data)
    except MlfError as exc:
        assert exc.offset is None or 0 <= exc.offset <= len(data), exc
    else:
        assert b.to_bytes() == data[: len(data) - b.after_end]
        list(b.root().walk())
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert peak <= 64 * len(data) + (1 << 20), (peak, len(data))


KINDS = st.sampled_from([(f, k) for f in blob.FORMATS for k in blob.known_kinds(f)])


@settings(suppress_health_check=list(HealthCheck))
@given(KINDS, st.data())
def test_any_payload_bytes_give_a_result_or_mlf_error(format_kind, draw):
    fmt, kind = format_kind
    era = draw.draw(st.sampled_from(ms.BLOB_ERAS[fmt]))
    valid = draw.draw(ms.blob_payloads(kind, fmt, era)).to_bytes(era)
    data = draw.draw(st.one_of(st.binary(max_size=64), st.just(valid[: len(valid) // 2]),
                               st.builds(lambda i, b: valid[:i] + b + valid[i + 1:], st.integers(0, len(valid)),
                                         st.binary(min_size=1, max_size=8))))
    try:
        p = blob.parse_payload(kind, data, format=fmt, era=era)
    except MlfError as exc:
        assert exc.offset is None or 0 <= exc.offset <= len(data)
    else:
        assert p.to_bytes(era) == data


def test_parsed_blobs_rebuild_from_their_modules_vectors_and_strategies():
    """README: ``blob.build(m[0], order=m)`` rebuilds a parsed blob exactly, for every blob
    ``blob.read`` accepts that has an import tree read as written (rows in order, no child
    index left unread: those bytes are not part of the tree the modules hold): the
    conformance vectors (valid and broken) and 60 strategy blobs of every layout and era;
    for the others the rebuild is bytes or an MlfError, never another exception."""
    from mlf_spec.fuzzing.seeds import draw, vector_inputs

    exact = 0
    for data in vector_inputs(["blob"]) + draw(ms.blob_bytes(), 60, 19):
        try:
            blobs = blob.read(bytes(data))
        except MlfError:
            continue
        for b in blobs:
            rows = b.row_ptr
            try:
                nodes = b.modules()
                built = blob.build(nodes[0], order=nodes, format=b.format, era=b.era) if nodes else None
            except MlfError:
                built = None
            unread = any(f.code == "tree.unused-children" for f in b.findings)
            if rows is not None and b.unread_root is None and list(rows) == sorted(rows) and not unread:
                assert built == b.data, (b.name, b.findings)
                exact += 1
    assert exact >= 80
