"""Blob facts live in the spec (issue 21 item 2): spec/tables/blob_facts.yaml, generated as
mlf_spec.generated.blob_facts_table, is what the locator, the C writer, the evidence, the codec
and sniffing read; no hand-written copy is left to disagree with it."""

from __future__ import annotations

import struct

from mlf_spec.generated import blob_facts_table as table
from mlf_spec.generated import params_ir, tvm_versions

from mlf_spec import _blob_facts as facts
from mlf_spec import sniff
from mlf_spec.blob import codec, evidence, locate, writers


def _rows(kind: str) -> list[dict]:
    return [r for r in table.ROWS if r["kind"] == kind]


def test_every_row_has_a_commit_and_versions_the_spec_lists() -> None:
    eras = {e["version"] for e in tvm_versions.ERAS}
    for r in table.ROWS:
        assert len(r["commit"]) == 10 and int(r["commit"], 16) >= 0, r
        assert r["since"] in eras and (r["until"] is None or r["until"] in eras), r
        assert r["until"] is None or r["since"] < r["until"], r


def test_the_symbols_of_each_layout_follow_one_another_without_a_gap() -> None:
    for layout in ("legacy", "ffi"):
        rows = sorted((r for r in _rows("blob-symbol") if r["layout"] == layout), key=lambda r: r["since"])
        for older, newer in zip(rows, rows[1:]):
            assert older["until"] == newer["since"], (older["id"], newer["id"])
    # one symbol per version across layouts: the ffi symbol starts where the legacy ones end
    last_legacy = max((r for r in _rows("blob-symbol") if r["layout"] == "legacy"), key=lambda r: r["since"])
    (ffi,) = [r for r in _rows("blob-symbol") if r["layout"] == "ffi"]
    assert last_legacy["until"] == ffi["since"]


def test_the_package_reads_its_blob_facts_from_the_table() -> None:
    assert set(locate.BLOB_SYMBOLS) == {r["value"] for r in _rows("blob-symbol")}
    assert sorted(locate.BLOB_SYMBOLS, key=len, reverse=True) == list(locate.BLOB_SYMBOLS)
    assert set(evidence.CONTEXT_SYMBOLS) == {r["value"].encode() for r in _rows("context-symbol")}
    assert set(writers.C_SOURCE_STYLES) == {r["value"] for r in _rows("c-style")}
    for r in _rows("blob-symbol"):
        text = writers.c_source_for_blob(bytes(8), r["value"], "net_")
        assert f"{r['registration']}(" in text
    for r in _rows("c-style"):
        assert f"{r['c_type']} __tvm_ffi__library_bin[9]" in writers.c_source_for_blob(bytes(9), style=r["value"],
                                                                                       check=False)
    for name in ("lib0.o", "lib12.c", "devc.o", "net_devc.c", "devc.cc"):
        assert evidence.EXPORT_MEMBER.fullmatch(name), name
    assert not evidence.EXPORT_MEMBER.fullmatch("README")


def test_the_symbol_a_version_writes_follows_since_and_until() -> None:
    for r in _rows("blob-symbol"):
        assert codec.symbol_for(r["layout"], r["since"]) == r["value"], r["id"]
        assert facts.symbol_at(r["layout"], r["since"]) == r["value"]


def test_the_params_magic_is_the_generated_constant() -> None:
    assert sniff.PARAMS_MAGIC_BYTES == struct.pack("<Q", params_ir.CONSTANTS["PARAMS_MAGIC"])


def test_symbol_for_takes_the_conformance_scope_value_latest():
    """Vectors scope eras as 'latest'; the symbol of the newest grammar of each layout."""
    from mlf_spec import blob

    assert blob.symbol_for("ffi", "latest") == "__tvm_ffi__library_bin"
    assert blob.symbol_for("legacy", "latest") == "__tvm_ffi_library_bin"
    assert blob.symbol_for("legacy", "0.20") == "__tvm_dev_mblob"


def test_the_writer_eras_are_rows_of_the_spec_and_decide_what_the_writer_packs() -> None:
    """spec/tables/blob_writer_eras.yaml (issue 31 item 5): one row per writer change; the
    codec's labels, reader candidates and writer rules are lookups in it."""
    from mlf_spec.generated import blob_writer_eras_table as writer_table

    from mlf_spec.blob import eras

    assert [w.since for w in eras.WRITER_ERAS] == sorted(r["since"] for r in writer_table.ROWS)
    assert codec._ERA_LABELS == eras.ERA_LABELS and eras.ERA_LABELS[codec.LATEST] == "0.24 or later"
    symbols = {r["id"] for r in _rows("blob-symbol")} | {"raw"}
    for w in eras.WRITER_ERAS:
        assert set(w.read_symbols) <= symbols, w
        assert w.c_style in facts.C_SOURCE_STYLES, w
    # the reader's order per layout and symbol (an unknown symbol is taken as none)
    assert eras.candidates("legacy", facts.SYMBOL_LEGACY) == [(0, 20), (0, 7)]
    assert eras.candidates("legacy", facts.SYMBOL_FFI_V021) == [(0, 21)]
    assert eras.candidates("legacy", "") == eras.candidates("legacy", facts.SYMBOL_FFI) == [(0, 20), (0, 21), (0, 7)]
    assert eras.candidates("ffi", facts.SYMBOL_FFI_V021) == [(0, 22), (0, 23)]
    assert eras.candidates("ffi", facts.SYMBOL_FFI) == eras.candidates("ffi", "") == [codec.LATEST, (0, 23)]
    assert (eras.default_era("legacy"), eras.default_era("ffi")) == ((0, 20), codec.LATEST)
    # what each era's writer packs: no import tree up to 0.6, one _lib per module in 0.7, merged
    # from 0.8, count 0 for any root without imports from 0.14 (only a _lib root before)
    rules = {v: (eras.writer_era(v).import_tree, eras.writer_era(v).merge_lib, eras.writer_era(v).omit_root)
             for v in [(0, 1), (0, 6), (0, 7), (0, 8), (0, 13), (0, 14), (0, 27), codec.LATEST]}
    assert rules == {(0, 1): (False, False, "lib"), (0, 6): (False, False, "lib"), (0, 7): (True, False, "lib"),
                     (0, 8): (True, True, "lib"), (0, 13): (True, True, "lib"), (0, 14): (True, True, "any"),
                     (0, 27): (True, True, "any"), codec.LATEST: (True, True, "any")}
