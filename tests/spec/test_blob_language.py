"""The spec-language features the module blob needs: sized values, string-keyed extensible
switches, struct invariants, structural helpers, integer subscripts; checked by the loader
with file, line and field, and behaving the same in the fast reader, the Construct grammar
and the spec engine."""

from __future__ import annotations

import shutil
import struct
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

from mlf_spec.generated import (  # noqa: E402
    _fastlib,  # noqa: E402
    blob_ffi_construct,
    blob_ffi_fast,
    blob_ffi_ir,
)
from specgen.expr import Expr, ExprError  # noqa: E402
from specgen.load import load  # noqa: E402
from specgen.yamlload import SpecError  # noqa: E402

from mlf_spec._internal.spec_engine import build, trace  # noqa: E402
from mlf_spec.errors import ConstraintError, LengthError  # noqa: E402


def _spec(tmp_path: Path, fields: str, extra: str = "") -> Path:
    spec = tmp_path / "spec"
    shutil.copytree(ROOT / "spec", spec)
    text = textwrap.dedent("""\
        spec: binary
        name: probe
        title: t
        doc: d
        structs:
          - name: inner
            doc: d
            fields:
              - {name: a, type: u8, doc: x}
          - name: s
            doc: d
            fields:
        """) + textwrap.indent(textwrap.dedent(fields), "      ") + extra
    (spec / "binary" / "probe.yaml").write_text(text)
    return spec


@pytest.mark.parametrize(("fields", "message"), [
    ("- {name: t, type: str, sized: true, doc: x}\n", "'sized' is only for"),
    ("- {name: b, type: bytes, size: 'remaining() + 1', doc: x}\n- {name: c, type: u8, constraint: 'remaining() > 0', doc: x}\n",
     "remaining() is only allowed in 'size'"),
    ("- {name: v, type: str, doc: x}\n- {name: w, type: u8, if: \"at_least(v, '0.5')\", doc: x}\n", "version 0.5 is not listed"),
    ("- {name: v, type: str, doc: x}\n- {name: w, type: u8, if: 'at_least(v, v)', doc: x}\n", "version string literal"),
    ("- {name: n, type: vec, of: u8, count: '2', sized: true, doc: x}\n", "'sized' is only for"),
])
def test_loader_rejects_misuse(tmp_path, fields, message):
    with pytest.raises(SpecError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load(_spec(tmp_path, fields))


def test_invariants_name_fields_of_their_struct(tmp_path):
    extra = '    invariants:\n      - {name: r, rule: "nope > 1", doc: x}\n'
    with pytest.raises(SpecError, match="'nope' is not a field of s") as err:
        load(_spec(tmp_path, "- {name: a, type: u8, doc: x}\n", extra))
    assert "invariants[0].rule" in str(err.value)


def test_yaml_on_is_a_key_not_a_boolean(tmp_path):
    fields = """\
        - {name: k, type: u8, doc: x}
        - name: p
          type: switch
          doc: x
          switch: {on: k, cases: {1: inner}}
        """
    model = load(_spec(tmp_path, fields))
    assert model.binaries["probe"].structs["s"].fields[1].spec.switch.on == "k"


def test_expression_helpers_and_subscripts():
    assert Expr("row_ptr[0] == 0 and row_ptr[-1] == len(c)").names == ["row_ptr", "row_ptr", "c"]
    assert Expr("x in (A, 3)").choices("x") == ["A", 3]
    assert Expr("find_where(entries, 'kind', 'k').payload.row_ptr").helpers == {"find_where"}
    with pytest.raises(ExprError):
        Expr("row_ptr[i]")
    assert _fastlib.nondecreasing((0, 1, 1, 3)) and not _fastlib.nondecreasing((0, 2, 1))
    assert _fastlib.acyclic((0, 1, 2, 2), (1, 2)) and not _fastlib.acyclic((0, 1, 2), (1, 0))
    assert _fastlib.acyclic((0, 1), (5,))  # an index out of range is no edge
    assert _fastlib.at_least("0.16.dev0", "0.14") and not _fastlib.at_least("0.8.0", "0.9")
    assert not _fastlib.at_least("garbage", "0.2")
    assert _fastlib.decimal("12") == 12 and _fastlib.decimal("1x") == -1 and _fastlib.decimal("9" * 40) == -1


def u64(n: int) -> bytes:
    return struct.pack("<Q", n)


def test_sized_switch_behaves_alike_in_every_backend():
    body = u64(2) + u64(0) + u64(0) + u64(0) + u64(1) + b"k" + u64(2) + b"\xaa\xbb"
    data = u64(len(body)) + body
    rec, end = blob_ffi_fast.read_ffi_blob(memoryview(data), 0, len(data))
    assert end == len(data) and rec.body.modules[0].payload.data == b"\xaa\xbb"
    assert rec.body.modules[0].payload_span == (len(data) - 2, len(data))
    out: list = []
    blob_ffi_fast.write_ffi_blob(out.append, rec)
    assert b"".join(out) == data
    parsed = blob_ffi_construct.ffi_blob.parse(data)
    assert parsed.body.modules[0].payload.data == b"\xaa\xbb" and blob_ffi_construct.ffi_blob.build(parsed) == data
    tree, spans = trace(blob_ffi_ir.STRUCTS, "ffi_blob", data)
    assert build(blob_ffi_ir.STRUCTS, "ffi_blob", tree) == data
    assert [s.offset for s in spans if s.path == ("body", "modules", 0, "payload", "#count")] == [len(data) - 10]
    # a length that lies, in each backend
    bad = data[:-10] + u64(3) + data[-2:]
    with pytest.raises(LengthError):
        blob_ffi_fast.read_ffi_blob(memoryview(bad), 0, len(bad))
    with pytest.raises(LengthError):
        trace(blob_ffi_ir.STRUCTS, "ffi_blob", bad)


def test_error_invariants_raise_at_the_first_named_field():
    body = u64(3) + u64(0) + u64(1) + u64(2) + u64(1) + u64(1) + u64(4) + b"_lib" + u64(4) + b"_lib"
    data = u64(len(body)) + body
    with pytest.raises(ConstraintError, match="rows_within") as err:
        blob_ffi_fast.read_ffi_blob(memoryview(data), 0, len(data))
    assert err.value.field == "body.row_ptr" and err.value.offset == 8
