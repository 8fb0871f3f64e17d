"""Unit tests of mlf_spec.blob: the layouts against the reference's worked examples, TVM's
module numbering and import-tree rules per era, payload registration, findings, files and
the CLI."""

from __future__ import annotations

import json
import re
import struct

import numpy as np
import pytest
from mlf_spec.generated import blob_ffi_construct, blob_legacy_construct

from mlf_spec import blob, cli
from mlf_spec.blob import Module
from mlf_spec.blob import locate as blob_locate
from mlf_spec.errors import ConstraintError, LengthError, MlfError, UnsupportedError


def u64(n: int) -> bytes:
    return struct.pack("<Q", n)


def s(text: str | bytes) -> bytes:
    raw = text.encode() if isinstance(text, str) else text
    return u64(len(raw)) + raw


def opencl_payload(era: str, name: str = "add_one_kernel", source: bytes = b"__kernel void k() {}") -> blob.Payload:
    """The reference's opencl kernel: two (handle, 64, 1) arguments."""
    fi = {"name": name if era >= "0.24" else "", "arg_types": [{"code": 3, "bits": 64, "lanes": 1}] * 2,
          "launch_param_tags": ["threadIdx.x"]}
    if era >= "0.21":
        fi["arg_extra_tags"] = [0, 0]
    return blob.new_payload("opencl", format="ffi" if era >= "0.22" else "legacy", era=era, fmt="cl",
                            fmap={"add_one_kernel": fi}, data=source)


# --------------------------------------------------------------------------------------------
# The reference's worked examples (binary-formats.md 4.4 and 5.2)


def test_legacy_opencl_example_has_the_reference_offsets():
    """4.4: 0.16 opencl kernel with llvm host, 606 bytes, _import_tree at 0x21a."""
    fi = {"name": "", "arg_types": [{"code": 3, "bits": 64, "lanes": 1}] * 2,
          "launch_param_tags": ["blockIdx.x", "threadIdx.x"]}
    payload = blob.new_payload("opencl", format="legacy", era="0.16", fmt="cl", fmap={"add_one_kernel": fi},
                               data=b"x" * 379)
    data = blob.build(Module.lib(Module("opencl", payload)), format="legacy", era="0.16")
    assert len(data) == 606
    assert data[:8] == u64(598) and data[8:16] == u64(3)
    assert data[0x10:0x1C] == s("_lib") and data[0x1C:0x2A] == s("opencl")
    assert data[0x2A:0x34] == s("cl") and data[0x34:0x3C] == u64(1)
    assert data[0x5A:0x6A] == u64(2) + bytes.fromhex("03400100") * 2
    assert data[0x21A:0x22E] == s("_import_tree")
    assert data[0x22E:] == u64(3) + u64(0) + u64(1) + u64(1) + u64(1) + u64(1)
    b = blob.parse(data, symbol="__tvm_dev_mblob")
    assert (b.format, b.era, b.row_ptr, b.child_indices) == ("legacy", (0, 20), (0, 1, 1), (1,))
    assert [(e.kind, e.functions) for e in b.entries] == [("_lib", []), ("opencl", ["add_one_kernel"])]
    assert b.entries[1].payload_offset == 0x2A and b.entries[1].payload_size == 0x21A - 0x2A
    assert b.to_bytes() == data and b.findings == []


def test_ffi_opencl_example_has_the_reference_offsets():
    """5.2: 0.27 opencl kernel, 538 bytes, payload length 448 at 0x52."""
    data = blob.build(Module.lib(Module("opencl", opencl_payload("0.27", source=b"y" * 319))))
    assert len(data) == 538 and data[:8] == u64(530)
    assert data[8:0x38] == u64(3) + u64(0) + u64(1) + u64(1) + u64(1) + u64(1)
    assert data[0x38:0x44] == s("_lib") and data[0x44:0x52] == s("opencl") and data[0x52:0x5A] == u64(448)
    assert data[0xC3:0xD3] == u64(2) + b"\0" * 8
    assert data[0xD3:0xDB] == u64(319)
    b = blob.parse(data)
    assert b.symbol == "" and b.format == "ffi" and b.entries[1].payload_size == 448


def test_graph_and_aot_factories_pack_as_the_reference_says():
    g = blob.new_payload("GraphExecutorFactory", format="legacy", graph_json='{"nodes": []}',
                         names=["w"], arrays=[np.arange(3, dtype="float32")], module_name="default")
    data = blob.build(Module("GraphExecutorFactory", g, [Module.lib()]), format="legacy", era="0.16")
    b = blob.parse(data)
    assert [e.kind for e in b.entries] == ["GraphExecutorFactory", "_lib"]
    assert (b.row_ptr, b.child_indices) == ((0, 1, 1), (1,))
    assert b.entries[0].functions == ["default"]
    t = b.entries[0].payload.tensors()
    assert len(t) == 1 and bytes(b.entries[0].payload.tensor_data(t[0])) == np.arange(3, dtype="float32").tobytes()
    aot = blob.new_payload("AotExecutorFactory", format="legacy", names=[], arrays=[], module_name="default")
    meta = blob.new_payload("metadata_module", format="legacy")
    data = blob.build(Module("AotExecutorFactory", aot, [Module("metadata_module", meta, [Module.lib()])]),
                      format="legacy", era="0.16")
    b = blob.parse(data)
    assert [e.kind for e in b.entries] == ["AotExecutorFactory", "metadata_module", "_lib"]
    assert (b.row_ptr, b.child_indices) == ((0, 1, 2, 2), (1, 2))
    assert b.entries[1].payload_size == 0  # metadata_module writes nothing


def test_siblings_are_numbered_in_reverse_import_order():
    """4.5: llvm importing [opencl, webgpu] serialises as _lib, webgpu, opencl."""
    ocl = opencl_payload("0.27")
    wg = blob.new_payload("webgpu", fmap=[], smap=[])
    root = Module.lib(Module("opencl", ocl), Module("webgpu", wg))
    b = blob.parse(blob.build(root))
    assert [e.kind for e in b.entries] == ["_lib", "webgpu", "opencl"]
    assert [m.kind for m in b.root().imports] == ["opencl", "webgpu"]  # the import order comes back


# --------------------------------------------------------------------------------------------
# TVM's writer, era by era


def const_loader(era: str = "0.27", fmt: str = "ffi") -> blob.Payload:
    return blob.new_payload("const_loader", format=fmt, era=era, variables=["c0", "c1"],
                            arrays=[np.ones((2, 2), "float32"), np.arange(4, dtype="int64")],
                            symbols=["f"], const_vars=[["c0", "c1"]])


def test_lone_module_packs_with_an_import_tree_in_ffi_and_count_zero_in_legacy():
    lone = Module("const_loader", const_loader())
    b = blob.parse(blob.build(lone))
    assert (b.row_ptr, b.child_indices, [e.kind for e in b.entries]) == ((0, 0), (), ["const_loader"])
    # 0.7-0.13: a non-DSO root without imports still gets a tree; a _lib root gets count 0
    legacy = Module("const_loader", const_loader("0.13", "legacy"))
    assert blob.parse(blob.build(legacy, format="legacy", era="0.13")).row_ptr == (0, 0)
    assert blob.build(Module.lib(), format="legacy", era="0.13") == u64(8) + u64(0)
    # 0.14+: count 0, then the root's own entry, which no loader reads
    data = blob.build(Module("const_loader", const_loader("0.16", "legacy")), format="legacy", era="0.16")
    assert data[8:16] == u64(0)
    b = blob.parse(data, symbol="__tvm_dev_mblob")
    assert b.entries == [] and b.row_ptr is None and b.unread_root is not None
    assert [f.code for f in b.findings] == ["blob.unread-root"]
    assert blob.build(b.root(), format="legacy", era="0.16") == data


def test_variant_a_and_era_07_and_merged_lib():
    leaves = [Module("const_loader", const_loader("0.6", "legacy")), Module("c", blob.new_payload(
        "c", format="legacy", code="int f;", fmt="c", func_names=["f"], const_vars=[]))]
    data = blob.build(Module.lib(*leaves), format="legacy", era="0.6")
    b = blob.parse(data, era="0.6")
    assert b.row_ptr is None and [e.kind for e in b.entries] == ["const_loader", "c"]
    assert [m.kind for m in b.root().imports] == ["const_loader", "c"] and b.root().kind == "_lib"
    assert "tree.none" in [f.code for f in b.findings]
    assert blob.build(b.root(), format="legacy", era="0.6") == data
    with pytest.raises(ConstraintError, match="one level"):
        blob.build(Module.lib(Module("c", leaves[1].payload, [Module.lib()])), format="legacy", era="0.6")
    # 0.7: one _lib per DSO module, children in import order
    lib2 = Module.lib(Module("c", leaves[1].payload))
    root = Module.lib(lib2, Module("const_loader", leaves[0].payload))
    data = blob.build(root, format="legacy", era="0.7")
    b = blob.parse(data, symbol="__tvm_dev_mblob")  # two _lib: only 0.7's grammar reads it
    assert b.era == (0, 7) and [e.kind for e in b.entries].count("_lib") == 2
    assert blob.build(b.root(), format="legacy", era="0.7") == data
    with pytest.raises(ConstraintError, match="single_lib"):
        blob.parse(data, symbol="__tvm_dev_mblob", era="0.16")
    # 0.8+: the two _lib modules merge into one slot
    b = blob.parse(blob.build(root, format="legacy", era="0.8"))
    assert [e.kind for e in b.entries] == ["_lib", "const_loader", "c"]


def test_cycles_and_unmergeable_trees_are_refused_like_tvms_writer():
    a = Module("const_loader", const_loader())
    b_ = Module("const_loader", const_loader(), [a])
    a.imports.append(b_)
    with pytest.raises(ConstraintError, match="cannot number"):
        blob.build(a)
    assert [m.kind for m in a.walk()] == ["const_loader", "const_loader"]  # walks are cycle-safe


def test_a_dag_tvm_cannot_number_builds_with_an_explicit_order():
    """root -> [A, B], A -> B: TVM's walk numbers B (pushed first) before A, so its writer
    (0.8 on, CreateImportTree's CHECK_LT) refuses the tree; order= numbers it either way."""
    b_ = Module("opencl", opencl_payload("0.27", source=b"__kernel void b() {}"))
    a = Module("opencl", opencl_payload("0.27", source=b"__kernel void a() {}"), [b_])
    root = Module.lib(a, b_)
    with pytest.raises(ConstraintError, match="cannot number this tree.*order="):
        blob.build(root)
    for order, row_of_a in (([root, a, b_], [2]), ([root, b_, a], [1])):  # the second: a child before its parent
        data = blob.build(root, order=order)
        b = blob.parse(data)
        assert b.imports_of(0) == [1, 2] and b.imports_of(order.index(a)) == row_of_a
        assert {m.kind for m in b.root().walk()} == {"_lib", "opencl"} and len(list(b.root().walk())) == 3
        r = b.root()
        [parent] = [m for m in r.imports if m.imports]
        [child] = [m for m in r.imports if not m.imports]
        assert parent.imports == [child]  # the shared module is one node
        assert parent.payload.to_bytes() == a.payload.to_bytes() and child.payload.to_bytes() == b_.payload.to_bytes()
        nodes = b.modules()
        assert blob.build(nodes[0], order=nodes) == data  # the numbering round-trips
    b16 = Module("opencl", opencl_payload("0.16", source=b"b"))
    a16 = Module("opencl", opencl_payload("0.16", source=b"a"), [b16])
    root16 = Module.lib(a16, b16)
    with pytest.raises(ConstraintError, match="cannot number"):
        blob.build(root16, format="legacy", era="0.16")
    legacy = blob.build(root16, format="legacy", era="0.16", order=[root16, a16, b16])
    assert blob.parse(legacy, format="legacy", era="0.16").imports_of(1) == [2]
    v07 = blob.parse(blob.build(root16, format="legacy", era="0.7"), format="legacy", era="0.7")  # 0.7's writer had no check
    assert v07.imports_of(0) == [2, 1] and v07.imports_of(2) == [1]  # B numbered before A, as its walk did


def test_an_explicit_order_names_every_reachable_module_once_root_first():
    b_ = Module("opencl", opencl_payload("0.27"))
    a = Module("const_loader", const_loader(), [b_])
    root = Module.lib(a)
    for order, message in (([a, root, b_], "start with the root"), ([root, a], "leaves out opencl"),
                           ([root, a, b_, b_], "listed twice")):
        with pytest.raises(ConstraintError, match=message):  # MlfErrors, not ValueError
            blob.build(root, order=order)
    with pytest.raises(UnsupportedError, match="up to 0.6"):
        blob.build(root, format="legacy", era="0.6", order=[root, a, b_])
    # a module the root does not reach is an entry no import leads to, as blobs may hold
    lone = Module("opencl", opencl_payload("0.27", source=b"lone"))
    data = blob.build(root, order=[root, a, b_, lone])
    nodes = blob.parse(data).modules()
    assert [m.kind for m in nodes] == ["_lib", "const_loader", "opencl", "opencl"] and not nodes[3].imports
    assert blob.build(nodes[0], order=nodes) == data
    # a module importing the same child twice keeps both edges (TVM's loader reads both)
    twice = Module.lib(b_, b_)
    data = blob.build(twice, order=[twice, b_])
    nodes = blob.parse(data).modules()
    assert len(nodes[0].imports) == 2 and blob.build(nodes[0], order=nodes) == data
    cyc = Module("const_loader", const_loader())
    cyc.imports.append(cyc)  # a cycle TVM's writer cannot make; its loader accepts it
    lib = Module.lib(cyc)
    data = blob.build(lib, order=[lib, cyc])
    assert "tree.cycle" in [f.code for f in blob.parse(data).findings]


def test_symbols_by_era():
    assert blob.symbol_for("ffi") == "__tvm_ffi__library_bin"
    assert blob.symbol_for("legacy", "0.20") == "__tvm_dev_mblob"
    assert blob.symbol_for("legacy", "0.21") == "__tvm_ffi_library_bin"


def test_function_info_has_four_fields_from_021():
    p20, p21 = opencl_payload("0.20"), opencl_payload("0.21")
    assert len(p21.to_bytes("0.21")) - len(p20.to_bytes("0.20")) == 8 + 2 * 4
    data = blob.build(Module.lib(Module("opencl", p21)), format="legacy", era="0.21")
    assert blob.parse(data, symbol="__tvm_ffi_library_bin").era == (0, 21)
    assert blob.parse(data).era == (0, 21)  # raw: 0.20's grammar fails, 0.21's reads it


# --------------------------------------------------------------------------------------------
# Unknown kinds and registered grammars


def legacy_with_unknown_kind() -> bytes:
    payload = s("hello") + u64(7)  # a grammar mlf-spec does not know: str + u64
    body = u64(3) + s("_lib") + s("my_accel") + payload + s("_import_tree") + u64(3) + u64(0) + u64(1) + u64(1) \
        + u64(1) + u64(1)
    return u64(len(body)) + body


class HelloCodec:
    def read(self, buf, pos, end, era):
        n = struct.unpack_from("<Q", buf, pos)[0]
        text = bytes(buf[pos + 8 : pos + 8 + n])
        return (text, struct.unpack_from("<Q", buf, pos + 8 + n)[0]), pos + 16 + n

    def write(self, append, value, era):
        append(s(value[0]) + u64(value[1]))


def test_unknown_legacy_kind_is_an_error_naming_kind_and_offset():
    data = legacy_with_unknown_kind()
    with pytest.raises(UnsupportedError) as info:
        blob.parse(data, symbol="__tvm_dev_mblob", name="lib.so")
    exc = info.value
    assert "'my_accel'" in exc.message and "register_payload" in exc.message
    assert exc.offset == 8 + 8 + 12 + 16 and exc.field.startswith("__tvm_dev_mblob.body.entries[1].payload")
    assert str(exc).startswith("lib.so: __tvm_dev_mblob.body.entries[1].payload: offset 44")


def test_registered_grammar_reads_and_writes_an_unknown_kind():
    data = legacy_with_unknown_kind()
    with blob.payload_registered("my_accel", HelloCodec()):
        b = blob.parse(data, symbol="__tvm_dev_mblob")
        assert b.entries[1].payload.record == (b"hello", 7) and b.to_bytes() == data
        assert blob.build(b.root(), format="legacy") == data
    with pytest.raises(UnsupportedError):
        blob.parse(data, symbol="__tvm_dev_mblob")  # unregistered again


def test_broken_registered_grammar_becomes_mlf_error():
    class Broken:
        def read(self, buf, pos, end, era):
            raise KeyError("oops")

        def write(self, append, value, era):
            pass

    with blob.payload_registered("my_accel", Broken()), pytest.raises(MlfError, match="my_accel.*oops"):
        blob.parse(legacy_with_unknown_kind())


def test_construct_grammar_can_be_registered():
    from construct import Int64ul, PascalString, Struct

    grammar = Struct("text" / PascalString(Int64ul, "utf-8"), "n" / Int64ul)
    with blob.payload_registered("my_accel", blob.construct_payload(grammar)):
        b = blob.parse(legacy_with_unknown_kind())
        assert (b.entries[1].payload.record.text, b.entries[1].payload.record.n) == ("hello", 7)
        assert b.to_bytes() == legacy_with_unknown_kind()


def ffi_with_payloads(entries: list[tuple[str, bytes | None]], row_ptr: list[int], child: list[int]) -> bytes:
    """A tvm-ffi blob written by hand (for payloads mlf-spec's writer would not produce)."""
    body = u64(len(row_ptr)) + b"".join(map(u64, row_ptr)) + u64(len(child)) + b"".join(map(u64, child))
    for kind, payload in entries:
        body += s(kind) + (b"" if payload is None else s(payload))
    return u64(len(body)) + body


def test_opencl_spirv_is_read_when_asked():
    raw = u64(0) + u64(1) + s("k") + struct.pack("<I", 1) + u64(2) + struct.pack("<II", 0x07230203, 5)
    data = ffi_with_payloads([("_lib", None), ("opencl", raw)], [0, 1, 1], [1])
    with pytest.raises(MlfError):
        blob.parse(data)  # read as fmt/fmap/data it does not fit
    with blob.payload_registered("opencl", blob.spec_payload("opencl_spirv")):
        b = blob.parse(data)
        name, shader = b.entries[1].payload.record.shaders[0]
        assert name == "k" and shader.flag == 1 and shader.words == (0x07230203, 5)
        assert b.to_bytes() == data


def test_unknown_ffi_kind_is_kept_as_opaque_bytes():
    data = blob.build(Module.lib(Module("vendor.Npu", blob.parse_payload("vendor.Npu", b"\x01\x02\x03"))))
    b = blob.parse(data)
    assert b.entries[1].payload.struct == "opaque_payload" and b.entries[1].payload.record.data == b"\x01\x02\x03"
    assert [f.code for f in b.findings] == ["module.unknown-kind"] and b.to_bytes() == data


# --------------------------------------------------------------------------------------------
# Import-tree rules and findings


def ffi_blob(row_ptr: list[int], child: list[int], kinds: list[str]) -> bytes:
    body = u64(len(row_ptr)) + b"".join(map(u64, row_ptr)) + u64(len(child)) + b"".join(map(u64, child))
    for k in kinds:
        body += s(k) + (b"" if k == "_lib" else s(b"\x01"))
    return u64(len(body)) + body


@pytest.mark.parametrize(("row_ptr", "child", "field"), [
    ([], [], "row_ptr"),
    ([0], [], "row_ptr"),
    ([0, 1, 1], [2], "child_indices[0]"),
    ([0, 2, 2], [1], "row_ptr"),
])
def test_import_tree_rules_are_errors(row_ptr, child, field):
    with pytest.raises(ConstraintError) as info:
        blob.parse(ffi_blob(row_ptr, child, ["_lib", "x"][: max(len(row_ptr) - 1, 0)]), format="ffi")
    assert info.value.field == f"blob.body.{field}"


@pytest.mark.parametrize(("row_ptr", "child", "code"), [
    ([1, 1, 1], [0], "tree.order"),       # a non-zero start: the first child index is never read
    ([0, 1, 0], [1], "tree.order"),       # decreasing: module 1 has no imports, as in TVM's reader
    ([0, 1, 1], [1, 1], "tree.unused-children"),
])
def test_import_trees_tvm_reads_but_never_writes_are_warnings(row_ptr, child, code):
    b = blob.parse(ffi_blob(row_ptr, child, ["_lib", "x"]), format="ffi")
    assert code in [f.code for f in b.findings if f.severity == "warning"]
    assert b.to_bytes() == ffi_blob(row_ptr, child, ["_lib", "x"])


def test_bytes_after_a_raw_blob_are_not_part_of_it(tmp_path):
    data = ffi_blob([0, 1, 1], [1], ["_lib", "x"])
    (tmp_path / "b.bin").write_bytes(data + b"TRAILING")
    b = blob.read_one(tmp_path / "b.bin")
    assert b.data == data and b.after_end == 8 and "blob.after-end" in [f.code for f in b.findings]


def test_cycles_and_several_libs_are_findings_and_safe():
    b = blob.parse(ffi_blob([0, 1, 2], [1, 0], ["_lib", "x"]))
    assert [f.code for f in b.findings if f.code.startswith("tree.")] == ["tree.cycle"]
    root = b.root()
    assert root.imports[0].imports[0] is root and len(list(root.walk())) == 2
    b = blob.parse(ffi_blob([0, 1, 1], [1], ["_lib", "_lib"]))
    assert "tree.several-lib" in [f.code for f in b.findings]
    b = blob.parse(ffi_blob([0, 0, 0], [], ["_lib", "x"]))
    assert [f.code for f in b.findings if f.code == "tree.unreachable"] == ["tree.unreachable"]


def test_trailing_bytes_and_exact_payloads():
    data = ffi_blob([0, 0], [], ["_lib"])
    longer = u64(int.from_bytes(data[:8], "little") + 3) + data[8:] + b"abc"
    b = blob.parse(longer)
    assert b.trailing == b"abc" and "blob.trailing-bytes" in [f.code for f in b.findings] and b.to_bytes() == longer
    # bytes after the size-prefixed blob are not part of it: read without them, reported
    after = blob.parse(data + b"\0")
    assert after.data == data and after.after_end == 1 and "blob.after-end" in [f.code for f in after.findings]
    # a known payload must fill its length exactly
    payload = opencl_payload("0.27").to_bytes() + b"!"
    with pytest.raises(LengthError) as info:
        blob.parse(ffi_with_payloads([("_lib", None), ("cuda", payload)], [0, 1, 1], [1]))
    assert info.value.field == "blob.body.modules[1].payload"
    # an unknown kind keeps whatever it holds
    assert blob.parse(ffi_with_payloads([("_lib", None), ("x", payload)], [0, 1, 1], [1])).entries[1].payload_size \
        == len(payload)


def test_relax_constant_tags_follow_the_era():
    old_tag = u64(0xD225DE2F4214151D) + s("0.14") + u64(0) + u64(1) + struct.pack("<i", 0)
    with pytest.raises(ConstraintError, match="tag"):
        blob.parse_payload("relax.VMExecutable", old_tag, era="0.27")  # 0 was a tensor up to 0.20
    const = struct.pack("<i", 65) + s("hi")
    v2 = u64(0xD225DE2F4214151E) + s("0.14") + u64(0) + u64(0) + u64(1) + const + u64(0) + u64(0)
    p = blob.parse_payload("relax.VMExecutable", v2, era="0.27")
    assert p.record.constants_v022[0].value == b"hi" and p.record.memory_scopes == []
    old = u64(0xD225DE2F4214151D) + s("0.14") + u64(0) + u64(1) + struct.pack("<i", 3) + s("hi") + u64(0) + u64(0)
    wrapped = s(old)
    p = blob.parse_payload("relax.Executable", wrapped, format="legacy", era="0.16")
    assert p.record.body.constants[0].value == b"hi"


# --------------------------------------------------------------------------------------------
# Files, C source, Construct, CLI


def test_c_source_and_bin_round_trip(tmp_path):
    data = blob.build(Module.lib(Module("const_loader", const_loader())))
    b = blob.parse(data, symbol="__tvm_ffi__library_bin")
    blob.write_c_source(b, tmp_path / "devc.c")
    blob.write_bin(b, tmp_path / "x.bin")
    (c,) = blob.read(tmp_path / "devc.c")
    (r,) = blob.read(tmp_path / "x.bin")
    assert c.data == r.data == data and c.symbol == "__tvm_ffi__library_bin" and r.symbol == ""
    legacy = blob.parse(blob.build(Module.lib(Module("const_loader", const_loader("0.12", "legacy"))),
                                   format="legacy", era="0.12"), symbol="__tvm_dev_mblob")
    blob.write_c_source(legacy, tmp_path / "old.c")
    assert "0x" in (tmp_path / "old.c").read_text() and blob.read_one(tmp_path / "old.c").data == legacy.data


def test_construct_grammars_agree_with_the_fast_reader():
    data = blob.build(Module.lib(Module("const_loader", const_loader()), Module("opencl", opencl_payload("0.27"))))
    parsed = blob_ffi_construct.ffi_blob.parse(data)
    assert [m.kind for m in parsed.body.modules] == [e.kind for e in blob.parse(data).entries]
    assert blob_ffi_construct.ffi_blob.build(parsed) == data
    legacy = blob.build(Module("const_loader", const_loader("0.16", "legacy"), [Module.lib()]), format="legacy")
    parsed = blob_legacy_construct.legacy_blob.parse(legacy, era=(0, 16))
    assert [e.kind for e in parsed.body.entries] == ["const_loader", "_lib", "_import_tree"]
    assert blob_legacy_construct.legacy_blob.build(parsed, era=(0, 16)) == legacy


def test_new_payload_checks_names():
    with pytest.raises(TypeError, match="no field"):
        blob.new_payload("c", cod="x")
    with pytest.raises(UnsupportedError):
        blob.new_payload("no_such_kind", format="legacy")
    with pytest.raises(ValueError):
        Module("cuda")
    with pytest.raises(ValueError):
        Module("_lib", opencl_payload("0.27"))


def test_cli_dump_and_extract(tmp_path, capsys):
    data = blob.build(Module.lib(Module("opencl", opencl_payload("0.27")), Module("const_loader", const_loader())))
    src = tmp_path / "devc.c"
    blob.write_c_source(data, src)
    assert cli.main(["blob", "dump", str(src), "--json"]) == 0
    line = json.loads(capsys.readouterr().out)
    from mlf_spec.generated.blob_dump_models import BlobDumpFile

    BlobDumpFile.model_validate(line)
    assert line["path"] == str(src) and len(line["blobs"]) == 1
    doc = line["blobs"][0]
    assert doc["format"] == "ffi" and doc["symbol"] == "__tvm_ffi__library_bin"
    assert [(m["index"], m["kind"], m["functions"]) for m in doc["modules"]] == [
        (0, "_lib", []), (1, "const_loader", []), (2, "opencl", ["add_one_kernel"])]
    assert doc["import_tree"] == {"row_ptr": [0, 2, 2, 2], "child_indices": [1, 2]}
    assert doc["modules"][2]["payload_bytes"] == len(opencl_payload("0.27").to_bytes())
    import hashlib

    m = doc["modules"][2]  # the payload's place and digest: what another reader's capture is compared with
    assert data[m["payload_offset"]:m["payload_offset"] + m["payload_bytes"]] == opencl_payload("0.27").to_bytes()
    assert m["payload_sha256"] == hashlib.sha256(opencl_payload("0.27").to_bytes()).hexdigest()
    assert doc["modules"][0]["payload_offset"] is None and doc["modules"][0]["payload_sha256"] is None
    assert doc["file_offset"] is None  # a C array: not the bytes themselves
    (tmp_path / "raw.bin").write_bytes(data)
    assert cli.main(["blob", "dump", str(tmp_path / "raw.bin"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["blobs"][0]["file_offset"] == 0
    assert cli.main(["blob", "dump", str(src)]) == 0
    text = capsys.readouterr().out
    assert "[2] opencl" in text and "functions: add_one_kernel" in text
    out = tmp_path / "out.bin"
    assert cli.main(["blob", "extract", str(src), "-o", str(out)]) == 0
    assert out.read_bytes() == data
    assert cli.main(["blob", "extract", str(src), "-o", str(out)]) == 1  # exists: refused (--force replaces it)
    assert cli.main(["blob", "extract", str(out), "-o", str(tmp_path / "again.c")]) == 0
    assert blob_locate.locate_blobs(tmp_path / "again.c")[0].data == data
    capsys.readouterr()


def test_cli_errors_are_one_line_with_file_field_and_offset(tmp_path, capsys):
    bad = tmp_path / "bad.bin"
    data = bytearray(blob.build(Module.lib(Module("opencl", opencl_payload("0.27")))))
    data[0x52:0x5A] = u64(9)  # the opencl payload length lies
    bad.write_bytes(bytes(data))
    assert cli.main(["blob", "dump", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith(f"mlf-spec: error: {bad}: blob.body.modules[1].payload")
    assert re.search(r"offset \d+ \(0x[0-9a-f]+\)", err)
    assert cli.main(["blob", "dump", str(tmp_path / "missing.so")]) == 2
    empty = tmp_path / "empty.bin"
    empty.write_bytes(b"")
    assert cli.main(["blob", "dump", str(empty)]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 2


@pytest.mark.parametrize("ir", [__import__("mlf_spec.generated.blob_ffi_ir", fromlist=["x"]),
                                __import__("mlf_spec.generated.blob_legacy_ir", fromlist=["x"])])
def test_spec_examples_read_and_rebuild(ir):
    from mlf_spec._internal.spec_engine import build

    for ex in ir.EXAMPLES:
        data = build(ir.STRUCTS, ex["struct"], ex["value"])
        b = blob.parse(data)
        assert b.to_bytes() == data and b.findings == []
        assert blob.build(b.root(), format=b.format, era=b.era) == data


def test_legacy_vm_executables_declare_their_functions():
    body = (u64(0xD225DE2F4214151D) + s("0.14") + u64(1) + struct.pack("<i", 1) + s("main") + struct.pack("<4q", 0, 1, 1, 2)
            + u64(0) + u64(0) + u64(0) + u64(0))
    p = blob.parse_payload("relax.Executable", s(body), format="legacy", era="0.16")
    assert p.functions == ["main"] and p.to_bytes("0.16") == s(body)
    relay = (u64(0xD225DE2F4214151D) + s("0.16.0") + u64(0) + struct.pack("<i", 0) + u64(1) + s("main")
             + u64(0) + u64(0) + u64(0) + u64(0)  # constants, their devices, primitive names and attrs
             + u64(1) + u64(3) + s("main") + s("2") + s("1") + u64(0) + u64(0) + u64(3) + b"".join(map(u64, (1, 1, 0))))
    p = blob.parse_payload("VMExecutable", s(relay), format="legacy")
    assert p.functions == ["main"] and p.record.body.functions[0].instructions[0].words == (1, 1, 0)
    with pytest.raises(ConstraintError, match="num_instructions"):
        blob.parse_payload("VMExecutable", s(relay.replace(s("1"), s("x"))), format="legacy")


def test_system_lib_prefix_is_kept(tmp_path, capsys):
    data = blob.build(Module.lib(Module("const_loader", const_loader())))
    (tmp_path / "devc.c").write_text(blob_locate.c_source_for_blob(data, "__tvm_ffi__library_bin", "mymodel_"))
    b = blob.read_one(tmp_path / "devc.c")
    assert (b.prefix, b.symbol, b.full_symbol) == ("mymodel_", "__tvm_ffi__library_bin", "mymodel___tvm_ffi__library_bin")
    blob.write_c_source(b, tmp_path / "again.c")
    assert "TVMFFIEnvModRegisterSystemLibSymbol" in (tmp_path / "again.c").read_text()
    assert cli.main(["blob", "dump", str(tmp_path / "devc.c"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["blobs"][0]["symbol"] == "mymodel___tvm_ffi__library_bin"


def test_ffi_module_named_import_tree_reads_but_its_tree_is_an_mlf_error():
    # Found by fuzzing (issue 11): a tvm-ffi module of kind "_import_tree" parsed (an opaque
    # payload), then Blob.root() raised ValueError from Module().
    from mlf_spec.generated import blob_ffi_ir

    from mlf_spec._internal.spec_engine import build

    tree = {"body": {"row_ptr": [0, 0], "child_indices": [], "trailing": b"",
                     "modules": [{"kind": "_import_tree", "payload": {"data": b"xyz"}}]}}
    data = build(blob_ffi_ir.STRUCTS, "ffi_blob", tree)
    b = blob.parse(data)
    assert [e.kind for e in b.entries] == ["_import_tree"] and b.to_bytes() == data
    with pytest.raises(UnsupportedError) as info:
        b.root()
    assert info.value.field == "modules[0].kind"


def test_legacy_blob_whose_last_import_tree_does_not_fit_the_modules_is_refused():
    # Found by fuzzing (issue 11): with two _import_tree entries the spec's tree_fits_modules
    # rule did not apply (it read "exactly one tree"); the reader uses the last tree, which
    # here names two modules for one, and Blob.root() raised IndexError.
    from mlf_spec.generated import blob_legacy_ir

    from mlf_spec._internal.spec_engine import build
    from mlf_spec.errors import ConstraintError

    def tree(row_ptr, child):
        return {"kind": "_import_tree", "payload": {"row_ptr": row_ptr, "child_indices": child}}

    lib = {"kind": "_lib", "payload": None}
    good = {"body": {"entries": [lib, tree([0, 0], []), tree([0, 0], [])], "trailing": b""}}
    b = blob.parse(build(blob_legacy_ir.STRUCTS, "legacy_blob", good, (0, 20)), format="legacy", era=(0, 20))
    assert [f.code for f in b.findings] == ["tree.several-trees"] and b.root().kind == "_lib"
    bad = {"body": {"entries": [lib, tree([0, 0], []), tree([0, 1, 1], [0])], "trailing": b""}}
    with pytest.raises(ConstraintError, match="tree_fits_modules"):
        blob.parse(build(blob_legacy_ir.STRUCTS, "legacy_blob", bad, (0, 20)), format="legacy", era=(0, 20))
