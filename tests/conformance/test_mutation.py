"""The suite measures its own strength: rule coverage on both sides, and the mutation score
of an independent C reader (tests/support/independent/, written from the published docs) under the
mutation harness, built with ASan and UBSan."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mlf_spec.conformance import vectors
from mlf_spec.conformance.mutation import harness
from mlf_spec.conformance.mutation.mutator import instrument
from mlf_spec.conformance.suite import rules
from mlf_spec.errors import MlfError

HERE = Path(__file__).resolve().parents[1] / "support" / "independent"
needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is needed to build the C readers")


@pytest.fixture(scope="module")
def suite():
    return vectors.load_suite()


def test_every_rule_a_vector_names_is_probed_on_both_sides(suite):
    table = rules.sides((c.features["rule"], rules.side(c.expected, c.format)) for c in suite if "rule" in c.features)
    one_sided = {r: s for r, s in table.items() if not (s["accept"] and s["reject"])}
    assert not one_sided, one_sided
    # every record of .params and both blob layouts (their payloads included) has its rules in the table
    for must in ("tensor_record.ndim.range", "tensor_record.shape.each", "tensor_record.data_byte_size.derive",
                 "tensor_record.device.range", "params_file.count.equals", "params_file.names.length",
                 "dl_datatype.code.table", "params_file.truncation", "ffi_body.row_ptr.range",
                 "ffi_body.child_indices.range", "ffi_module.kind.range", "import_tree.child_indices.range",
                 "ffi_blob.truncation", "legacy_blob.truncation", "device_binary.fmap.length",
                 # invariants over several fields, and the era rule of the legacy layout
                 "import_tree.rows_within.invariant", "ffi_body.rows_within.invariant",
                 "legacy_body.tree_fits_modules.invariant", "legacy_body.single_lib.invariant"):
        assert must in table, must


def test_every_rule_of_the_graph_json_spec_is_probed_on_both_sides(suite):
    """Each rule of spec/records/graph_json.yaml (every field's type, required key, constant,
    pattern, element count, unknown keys, the rules declared on fields) and of the JSON text
    has a vector on each side: a rule added to the spec without vectors fails here."""
    from mlf_spec.conformance.suite import graph

    table = rules.sides((c.features["rule"], c.expected["outcome"]) for c in suite
                        if c.format == "graph-json" and "rule" in c.features)
    declared = graph.rule_ids()
    missing = {r: table.get(r) for r in declared if not (table.get(r, {}).get("accept") and table[r].get("reject"))}
    assert not missing, missing
    assert set(table) <= set(declared), set(table) - set(declared)
    for must in ("graph.node_row_ptr.size", "graph.node_row_ptr.step", "graph.arg_nodes.null-nodes",
                 "graph_attrs.storage_scope.entries", "op_attrs.num_inputs.equals", "node_entry.items",
                 "graph.text.surrogate", "graph.text.duplicate-key"):
        assert must in declared, must
    by_id = {c.id: c for c in suite}
    # a 32-bit reader wraps these back to valid values: refused
    for vid in ("graph.arg_nodes.null-nodes.2-32-plus-1", "op_attrs.num_inputs.equals.2-32-plus-2",
                "graph.node_row_ptr.start.from-2-32"):
        assert by_id[f"graph-json.bound.{vid}"].expected["outcome"] == "reject", vid
    assert by_id["graph-json.bound.graph.node_row_ptr.size.no-nodes"].expected["outcome"] == "accept"


def test_every_rule_of_every_metadata_version_is_probed_on_both_sides(suite):
    """Each rule of the metadata of versions 1 to 7 (every key's type, required, constant,
    enum, pattern, minimum, element count, map keys, keys of other versions, unknown keys)
    has a vector on each side, scoped to its version."""
    from mlf_spec.conformance.suite import metadata

    cases = [c for c in suite if c.format == "mlf-metadata" and "rule" in c.features]
    table = rules.sides((c.features["rule"], c.expected["outcome"]) for c in cases)
    declared = metadata.rule_ids()
    missing = {r: table.get(r) for r in declared if not (table.get(r, {}).get("accept") and table[r].get("reject"))}
    assert not missing, missing
    assert set(table) <= set(declared), set(table) - set(declared)
    assert {r.split(".")[0] for r in declared} == {f"mlf_v{v}" for v in range(1, 8)}
    for c in cases:  # a rule of version N is probed with a document of version N
        assert {r.split(".")[0] for r in c.features["rule"]} == {f"mlf_v{c.scope['version']}"}, c.id
    by_id = {c.id: c for c in cases}
    assert by_id["mlf-metadata.bound.mlf_v4.full_model.executors.absent.present"].expected["outcome"] == "reject"
    assert by_id["mlf-metadata.bound.mlf_v7.storage_entry.size_bytes.range.0x0"].expected["outcome"] == "accept"
    assert by_id["mlf-metadata.bound.mlf_v7.storage_entry.size_bytes.range.-0x1"].expected["outcome"] == "reject"


def test_every_layout_rule_of_every_version_is_probed_on_both_sides(suite):
    """Each entry of spec/layouts/mlf_layout.yaml that a version requires is present (clean)
    and taken out (layout.missing); each entry some version or style lacks is present where
    it belongs and added where it does not (layout.unexpected)."""
    from mlf_spec.conformance.suite import layout

    cases = [c for c in suite if c.format == "mlf-archive" and "rule" in c.features]
    table = rules.sides((c.features["rule"], rules.side(c.expected, c.format)) for c in cases)
    declared = layout.rule_ids()
    missing = {r: table.get(r) for r in declared if not (table.get(r, {}).get("accept") and table[r].get("reject"))}
    assert not missing, missing
    assert set(table) <= set(declared), set(table) - set(declared)
    by_id = {c.id: c for c in cases}
    assert by_id["mlf-archive.bound.mlf_layout.relay_root.forbidden.v4.full-model"].expected["reading"]["findings"] \
        == ["layout.unexpected"]
    assert "layout.missing" in by_id["mlf-archive.bound.mlf_layout.graph_v1.required.v4.v4.graph"] \
        .expected["reading"]["findings"]


def test_every_rule_of_the_vm_executable_grammar_is_probed_on_both_sides(suite):
    """Each rule of spec/binary/vm.yaml (relax VM bodies of every constant-tag era, relay VM
    bodies of 0.8, 0.9-0.13 and 0.14+) is met at its exact value and broken, through blobs of
    both layouts that hold one VM executable."""
    from mlf_spec.generated import payloads_ir

    from mlf_spec.conformance.suite.blob import vm_structs

    table = rules.sides((c.features["rule"], rules.side(c.expected, c.format)) for c in suite
                        if c.format == "blob" and "rule" in c.features)
    declared = rules.rules_of(payloads_ir.STRUCTS, sorted(vm_structs()))
    missing = {r: table.get(r) for r in declared if not (table.get(r, {}).get("accept") and table[r].get("reject"))}
    assert not missing, missing
    assert {"relax_vm_body.memory_scopes.length", "relay_vm_body.const_device_indexes.equals",
            "relay_vm_body.virtual_devices_v09.length", "relax_constant_v016.tag.range"} <= set(declared)


def test_every_rule_of_the_tensor_cache_is_probed_on_both_sides(suite):
    """Each rule of mlf_spec.cache.bounds.RULES (every key of the index's records, its type,
    bound and relations, the shard files, the dataPath forms, the dtype table, the JSON text)
    has a vector accepted at its bound and one refused one step past it, in both index
    versions: a rule added without vectors fails here."""
    from mlf_spec.cache.bounds import RULES

    cases = [c for c in suite if c.format == "tensor-cache" and "rule" in c.features]
    for version in ("1", "2"):
        table = rules.sides((c.features["rule"], c.expected["outcome"]) for c in cases
                            if c.scope["version"] == [version])
        missing = {r: table.get(r) for r in RULES if not (table.get(r, {}).get("accept") and table[r].get("reject"))}
        assert not missing, (version, missing)
        assert set(table) <= set(RULES), set(table) - set(RULES)
    by_id = {c.id: c for c in cases}
    # the refused side sits one step past the bound, the accepted side at it
    # the base cache is every record at its bound: one vector for the probes that are that folder
    base = by_id["tensor-cache.bound.cache_index.records.required.present"]
    assert base.expected["outcome"] == "accept"
    assert {"shard.size", "tensor_record.byteOffset.within", "cache.text.bom"} <= set(base.features["rule"])
    for vid, outcome in (("shard.size.one-short", "reject"), ("shard.size.one-more", "reject"),
                         ("tensor_record.byteoffset.within.empty-at-end", "accept"),
                         ("tensor_record.byteoffset.within.end-plus-1", "reject"),
                         ("tensor_record.nbytes.derive.float32-bf16.exact", "accept"),
                         ("tensor_record.nbytes.derive.float32-bf16.plus-1", "reject"),
                         ("tensor_record.shape.each.minus-1-beside-zero", "reject"),
                         ("tensor_record.shape.overflow.numel-2-64", "reject"),
                         ("tensor_record.dtype.table.float32x32767", "accept"),
                         ("tensor_record.dtype.table.past.float32x65536", "reject"),
                         ("cache.text.digits.4300", "accept"), ("cache.text.digits.4301", "reject")):
        assert by_id[f"tensor-cache.bound.{vid}"].expected["outcome"] == outcome, vid


def test_the_overflow_vectors_are_refused_and_zero_beside_huge_is_read(suite):
    by_id = {c.id: c for c in suite}
    for vid in ("numel-wraps-to-0", "numel-wraps-to-4", "bytes-wrap-to-0", "bytes-wrap-to-4", "ndim-0x101"):
        assert by_id[f"params.bound.{vid}"].expected["outcome"] == "reject"
    for vid in ("shape-zero-beside-max", "shape-max-beside-zero", "shape-overflow-then-zero", "ndim-64"):
        assert by_id[f"params.bound.{vid}"].expected["outcome"] == "accept"
    # the canonical reading substitutes each maximal subpart with one U+FFFD (not one per byte)
    t = by_id["params.name.partial-3-byte"].expected["reading"]["tensors"][0]
    assert t["name"] == "a\ufffdb" and t["name_hex"] == "61e28262"


def test_the_mutator_makes_a_schema_of_every_operator():
    schema, mutants = instrument((HERE / "params_reader.c").read_text())
    assert {m.operator for m in mutants} == {"rel", "check", "read", "arith", "const"}
    assert schema.count("MLF_M(") == len(mutants) + 1  # each mutant guarded once, plus the macro
    assert len({m.signature for m in mutants}) == len(mutants)


@needs_gcc
def test_the_vectors_kill_the_mutants_of_the_independent_params_reader(suite):
    report = harness.mutate(HERE / "params_reader.c", suite, formats=["params"],
                            equivalents=HERE / "params_reader.equivalent")
    print("\n".join(report.lines()))
    assert len(report.equivalent) == len(harness.load_equivalents(HERE / "params_reader.equivalent"))
    assert report.score() >= 0.90, report.lines()
    assert report.baseline_cases > 400


@needs_gcc
def test_the_vectors_kill_the_mutants_of_the_independent_ffi_blob_reader(suite):
    report = harness.mutate(HERE / "blob_reader.c", suite, formats=["blob"],
                            equivalents=HERE / "blob_reader.equivalent",
                            known_failures=HERE / "blob_reader.known-failures")
    print("\n".join(report.lines()))
    assert report.score() >= 0.90, report.lines()
    assert report.baseline_cases > 300


@needs_gcc
def test_the_vectors_kill_the_mutants_of_the_independent_legacy_blob_reader(suite):
    """The legacy reader parses the string-structured payload grammars only and says so in its
    handshake (`payloads`): the vectors holding other kinds are skipped, not listed as failures."""
    report = harness.mutate(HERE / "legacy_blob_reader.c", suite, formats=["blob"],
                            equivalents=HERE / "legacy_blob_reader.equivalent")
    print("\n".join(report.lines()))
    assert report.score() >= 0.90, report.lines()
    assert report.baseline_cases > 400
    assert not (HERE / "legacy_blob_reader.known-failures").exists()


@needs_gcc
def test_the_legacy_reader_passes_every_era_and_skips_only_undeclared_payloads(suite, tmp_path):
    from mlf_spec.conformance import runner
    from mlf_spec.conformance.testee import Persistent

    binary, _ = harness.build(HERE / "legacy_blob_reader.c", harness.DEFAULT_BUILD, tmp_path)
    legacy = [c for c in suite if c.format == "blob" and c.options.get("layout") == "legacy"]
    result = runner.run(Persistent([str(binary)]), legacy, progress=False, strict_errors=True)
    assert set(result.counts) == {"pass", "skip"}, result.counts
    skipped = [r for r in result.results if r["outcome"] == "skip"]
    assert all("`payloads` does not declare" in r["message"] for r in skipped)
    ran = {r["id"] for r in result.results if r["outcome"] == "pass"}
    eras = {c.options["era"] for c in legacy if c.id in ran}
    assert eras >= {"0.6", "0.7", "0.8", "0.14", "0.20", "0.21"}, eras
    for vid in ("blob.legacy.0.7.tree.two-libs", "blob.legacy.0.8.tree.two-libs", "blob.legacy.0.6.tree.flat",
                "blob.legacy.0.21.device_binary", "blob.legacy.0.14.tree.root-without-imports"):
        assert vid in ran, vid


@needs_gcc
def test_a_reader_that_fails_unmutated_is_refused_and_leaves_nothing_behind(suite, tmp_path):
    src = (HERE / "params_reader.c").read_text().replace("ndim > 64", "ndim > 63")
    (tmp_path / "params_reader.c").write_text(src)
    shutil.copy(HERE / "testee_common.h", tmp_path)
    before = set(tmp_path.iterdir())
    with pytest.raises(MlfError, match="unmutated reader fails"):
        harness.mutate(tmp_path / "params_reader.c", suite, formats=["params"])
    assert set(tmp_path.iterdir()) == before


def test_a_malformed_equivalents_file_is_an_error_with_its_path(tmp_path):
    bad = tmp_path / "eq"
    bad.write_text("rel@L1: a -> b without a reason\n")
    with pytest.raises(MlfError) as info:
        harness.load_equivalents(bad)
    assert str(bad) in str(info.value) and "line 1" in str(info.value)


@needs_gcc
def test_a_stale_equivalents_file_is_an_error_with_its_path(suite, tmp_path):
    eq = tmp_path / "eq"
    eq.write_text("rel@L999: a < b -> a <= b :: no such line\n")
    with pytest.raises(MlfError, match="out of date") as info:
        harness.mutate(HERE / "params_reader.c", suite, formats=["params"], equivalents=eq)
    assert str(eq) in str(info.value)


@needs_gcc
def test_generated_cases_find_an_overflow_bug_without_a_vector(tmp_path):
    """The strategies draw extents that wrap the element count around 2^64 (the broken kind
    bad_derived, and the edge shape.wrap): --generate alone finds the mutant whose
    extent-product overflow check never fires."""
    from mlf_spec.conformance.generated_cases import explore

    binary, mutants = harness.build(HERE / "params_reader.c", harness.DEFAULT_BUILD, tmp_path)
    bug = next(m for m in mutants if m.signature == "const@L54: 1 -> 0")  # `overflow = 1` -> `overflow = 0`
    t = harness.testee_for([str(binary)], bug.id)
    try:
        found = explore(t, 400, seed_value=1, formats=["params"], budget=120)
    finally:
        t.close()
    sigs = [r["id"] for r in found.results]
    assert any(("bad_derived" in s or ".edge.shape.wrap." in s) and s.endswith("accepted") for s in sigs), sigs


def _assert_generated_alone_kill_92_percent(reader: str, fmt: str) -> None:
    """The first 300 generated cases of seed 0 alone (no vector) kill >= 92 % of the
    non-equivalent mutants of the independent ``reader`` (tests/support/independent/<reader>.c),
    its equivalents file naming every equivalent mutant; the survivors are the message."""
    report = harness.generated_alone(HERE / f"{reader}.c", 300, seed=0, formats=[fmt],
                                     equivalents=HERE / f"{reader}.equivalent")
    alone = report.generated_alone or {}
    survivors = [m.signature for m in report.scored if m.id not in alone]
    assert len(report.equivalent) == len(harness.load_equivalents(HERE / f"{reader}.equivalent"))
    assert report.score_generated_alone() >= 0.92, survivors


@needs_gcc
def test_generated_cases_alone_kill_92_percent_of_the_params_readers_mutants():
    """Without any vector, the first 300 generated cases of seed 0 (valid, broken and edge .params
    files) kill at least 92 % of the non-equivalent mutants of the independent .params reader
    (benchmarks/mutation.py --reader params --alone-only prints the survivors)."""
    _assert_generated_alone_kill_92_percent("params_reader", "params")


@needs_gcc
def test_generated_cases_alone_kill_92_percent_of_the_ffi_blob_readers_mutants():
    """Without any vector, the first 300 generated cases of seed 0 (valid, broken and edge blobs
    of the tvm-ffi layout: near kind names, payload lists at their exact bound, bytes after a
    payload's grammar, ...) kill at least 92 % of the non-equivalent mutants of the independent
    ffi blob reader (benchmarks/mutation.py prints the survivors)."""
    _assert_generated_alone_kill_92_percent("blob_reader", "blob")


@needs_gcc
def test_generated_cases_alone_kill_92_percent_of_the_legacy_blob_readers_mutants():
    """Without any vector, the first 300 generated cases of seed 0 (valid, broken and edge blobs
    of the legacy layout: import trees a row short or long, two ``_lib`` read at 0.8, payloads at
    their exact bound in a 0.6 body, ...) kill at least 92 % of the non-equivalent mutants of the
    independent legacy blob reader (benchmarks/mutation.py --reader legacy --alone-only prints the
    survivors)."""
    _assert_generated_alone_kill_92_percent("legacy_blob_reader", "blob")


@needs_gcc
def test_the_vectors_kill_the_mutants_of_the_independent_cache_reader(suite):
    """The independent C cache reader (tests/support/independent/cache_reader.c, its own JSON
    parser) passes every tensor-cache vector; mutated one operator or check at a time, the
    vectors kill at least 95 % of the mutants that are not listed as equivalent."""
    report = harness.mutate(HERE / "cache_reader.c", suite, formats=["tensor-cache"],
                            equivalents=HERE / "cache_reader.equivalent")
    print("\n".join(report.lines()))
    assert len(report.equivalent) == len(harness.load_equivalents(HERE / "cache_reader.equivalent"))
    assert report.score() >= 0.95, report.lines()
    assert report.baseline_cases > 700


@needs_gcc
def test_generated_cases_alone_kill_90_percent_of_the_cache_readers_mutants():
    """Without any vector, the first 500 generated cases of seed 0 (valid, broken and edge cache
    folders, mlf_spec.cache.edges: dtype spellings of the table and one step past it beside
    spellings the loaders read, dataPath forms, shapes, the index text) kill at least 90 % of the
    non-equivalent mutants of the independent cache reader (measured 92.2 %, 282/306; the
    survivors are the message)."""
    report = harness.generated_alone(HERE / "cache_reader.c", 500, seed=0, formats=["tensor-cache"],
                                     equivalents=HERE / "cache_reader.equivalent")
    alone = report.generated_alone or {}
    survivors = [m.signature for m in report.scored if m.id not in alone]
    assert report.score_generated_alone() >= 0.90, survivors
