"""The formats registry (spec/tables/formats.yaml -> generated/formats.py) is the one list the
kit reads: the records' enums are taken from it, every format in it has a codec, its sniff kind
is what sniffing a vector's input gives, and a broken row is a spec error with file and field."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from mlf_spec.generated import formats

from mlf_spec import sniff
from mlf_spec.conformance import canonical, compare, folders, protocol, vectors

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

from specgen.emit_registry import emit_registry  # noqa: E402
from specgen.load import load, resolve_enums_from_tables  # noqa: E402
from specgen.yamlload import SpecError  # noqa: E402


def test_the_kit_reads_the_one_registry():
    assert canonical.FORMATS is formats.FORMATS and canonical.ROLES is formats.ROLES
    assert folders.FOLDER_FORMATS is formats.FOLDER_FORMATS
    assert protocol.PROTOCOL == formats.PROTOCOL == "mlf-conformance/1" and protocol.ROLES == formats.OPS
    assert protocol.MAX_INPUT == formats.MAX_INPUT == 64 << 20
    assert {k: v for k, v in compare.ROOT_RECORD.items() if k != "migration"} == formats.CANONICAL
    assert sniff.CACHE_INDEX_NAMES == formats.INDEX_NAMES["tensor-cache"]
    # the schemas of the records take their format enums from the table
    for name, path in (("conformance_vector", ("properties", "format", "enum")),
                       ("conformance_protocol", ("$defs", "FormatSupport", "properties", "format", "enum"))):
        doc = json.loads((ROOT / "generated" / "schemas" / f"{name}.schema.json").read_text())
        for key in path:
            doc = doc[key]
        assert tuple(doc) == formats.FORMATS, name


def test_every_format_has_its_codec_and_sniff_kind():
    suite = vectors.load_suite()
    for fmt in formats.FORMATS:
        roles = formats.ROLES[fmt]
        folder = fmt in formats.FOLDER_FORMATS
        assert folder or fmt in canonical.DECODERS, fmt
        assert "encode" not in roles or folder or fmt in canonical.ENCODERS, fmt
        assert (ROOT / "generated" / "schemas" / f"{formats.CANONICAL[fmt]}.schema.json").is_file(), fmt
        case = next(c for c in suite if c.format == fmt and c.role == "decode" and c.expected["outcome"] == "accept")
        assert sniff.sniff_path(case.input_path).name == formats.SNIFF_KINDS[fmt], case.id
    assert set(formats.INDEX_NAMES) == formats.FOLDER_FORMATS


def test_a_folder_format_is_sniffed_by_the_index_names_of_the_registry(tmp_path):
    for name in formats.INDEX_NAMES["tensor-cache"]:
        d = tmp_path / name.replace(".", "_")
        d.mkdir()
        (d / name).write_text("{}")
        assert sniff.sniff_path(d).name == "tensor-cache"
        assert sniff.claimed_kind(str(d / name)) == "tensor-cache"
    assert sniff.sniff_path(tmp_path).name == "directory"


@pytest.fixture(scope="module")
def model():
    """The spec, loaded once (a test changes it in place and puts it back)."""
    return load(ROOT / "spec")


def _row(model, fmt):
    return next(r for r in model.tables["formats"][0].rows if r["format"] == fmt)


@pytest.mark.parametrize("fmt, key, value, message", [
    ("blob", "canonical", "canonical_blobs", "no records spec"),
    ("blob", "roles", ["decode", "read"], "roles are"),
    ("tensor-cache", "folder", False, "names its index files"),
])
def test_a_broken_row_is_a_spec_error_naming_the_table(model, fmt, key, value, message):
    row = _row(model, fmt)
    old = row[key]
    row[key] = value
    try:
        with pytest.raises(SpecError) as err:
            emit_registry(model)
    finally:
        row[key] = old
    assert message in str(err.value) and "formats.yaml" in str(err.value)
    emit_registry(model)  # put back: no error


@pytest.mark.parametrize("records, enum_from, message", [
    ("conformance_vector", "formats.formatz", "no column"),
    ("conformance_protocol", "nothing.format", "unknown table"),
])
def test_a_broken_enum_from_is_a_spec_error_naming_the_records(model, records, enum_from, message):
    f = next(f for r in model.records[records][0].records for f in r.fields if f.enum_from)
    old = f.enum, f.enum_from
    f.enum, f.enum_from = None, enum_from
    try:
        with pytest.raises(SpecError) as err:
            resolve_enums_from_tables(model)
    finally:
        f.enum, f.enum_from = old
    assert message in str(err.value) and f"{records}.yaml" in str(err.value)


def test_adding_a_format_is_a_row_the_records_follow(model):
    rows = model.tables["formats"][0].rows
    rows.insert(0, {"format": "onnx", "sniff_kind": "unknown", "canonical": "canonical_blob", "roles": ["decode"],
                    "folder": False, "doc": "A test row."})
    fields = [f for name in ("conformance_vector", "conformance_protocol")
              for r in model.records[name][0].records for f in r.fields if f.enum_from]
    saved = [f.enum for f in fields]
    try:
        with pytest.raises(SpecError, match="not both"):  # an enum written beside enum_from that differs
            resolve_enums_from_tables(model)
        for f in fields:
            f.enum = None
        resolve_enums_from_tables(model)
        assert fields and all(f.enum is not None and f.enum[0] == "onnx" for f in fields)
        assert "FORMATS: tuple[str, ...] = ('onnx', 'params'," in emit_registry(model)
    finally:
        del rows[0]
        for f, e in zip(fields, saved):
            f.enum = e
