"""The vector suite: complete (every dtype row, payload kind, version, broken kind the spec
knows), well formed (schemas), linked to the reference, and its readings follow the rules."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

import jsonschema
import pytest
from mlf_spec.generated import canonical_params_models

from mlf_spec import strategies as ms
from mlf_spec.blob import codec as blob
from mlf_spec.blob.strategies import BLOB_ERAS, era_tuple
from mlf_spec.conformance import compare, vectors
from mlf_spec.conformance.suite.blob import era_text
from mlf_spec.conformance.suite.common import anchor
from mlf_spec.mlf import metadata as md
from mlf_spec.params import dtypes

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "generated" / "schemas"


@pytest.fixture(scope="module")
def suite():
    return vectors.load_suite()


def _by(suite, key):
    out = defaultdict(set)
    for c in suite:
        for v in c.features.get(key, []):
            out[c.format].add(v)
    return out


def test_the_suite_is_the_repository_vectors_and_small(suite):
    assert vectors.default_suite().resolve() == (ROOT / "vectors").resolve()
    assert len({c.id for c in suite}) == len(suite) > 700
    size = sum(p.stat().st_size for p in (ROOT / "vectors").rglob("*") if p.is_file())
    # every rule of every format on both sides (5,028 cases, 12.2 MiB: the tensor cache's 889
    # boundary folders 1.6 MiB, truncation cuts inside every field of .params and blobs); about a
    # third is the MLF archives, tar files padded to 10 KiB records as TVM's writer made them
    assert size < 14 << 20


def test_every_case_and_reading_matches_its_schema(suite):
    def validator(name):
        return jsonschema.Draft202012Validator(json.loads((SCHEMAS / f"{name}.schema.json").read_text()))

    case_schema = validator("conformance_vector")
    reading_schemas = {k: validator(v) for k, v in compare.ROOT_RECORD.items()}
    for c in suite:
        case_schema.validate(json.loads(c.path.read_text()))
        if c.expected["outcome"] == "accept":
            reading_schemas[c.kind].validate(c.expected["reading"])
        else:
            assert c.expected["error_class"] in {"truncated", "bad_constant", "count_mismatch", "length",
                                                 "unknown_dtype", "constraint", "malformed", "unsupported", "unsafe",
                                                 "invalid_document", "refused", "error"}


def test_every_broken_kind_the_strategies_know_has_a_vector(suite):
    kinds = defaultdict(set)
    for c in suite:
        if c.broken_kind:
            kinds[c.format].add(c.broken_kind)
    assert set(ms.PARAMS_BROKEN_KINDS) <= kinds["params"]
    assert set(ms.BLOB_BROKEN_KINDS) <= kinds["blob"]
    assert set(ms.MLF_METADATA_BROKEN_KINDS) <= kinds["mlf-metadata"]
    assert set(ms.MLF_ARCHIVE_BROKEN_KINDS) <= kinds["mlf-archive"]
    for c in suite:  # what the strategies call errors is rejected; warnings read
        if c.format == "blob" and c.broken_kind:
            assert c.expected["outcome"] == ("reject" if ms.BLOB_BROKEN_KINDS[c.broken_kind] == "error" else "accept")


def test_every_dtype_row_of_every_dialect_has_a_vector(suite):
    have = {(c.options["dialect"], t["code"], t["bits"]) for c in suite if c.id.startswith("params.dtype.")
            for t in c.expected["reading"]["tensors"]}
    from mlf_spec.generated import dtype_codes_table as table

    for d in dtypes.DIALECTS:
        for i in d.rows:
            row = table.ROWS[i]
            assert any(x[0] == d.id and row["code"] <= x[1] <= (row["code_max"] or row["code"])
                       and (row["bits"] is None or row["bits"] == x[2]) for x in have), (d.id, row["spelling"])


def test_every_payload_kind_and_era_has_a_vector(suite):
    kinds = defaultdict(set)
    for c in suite:
        if c.format == "blob" and not c.broken_kind:
            for k in c.features.get("payload_kind", []):
                kinds[c.options["layout"]].add(k)
    for fmt in blob.FORMATS:
        assert set(blob.known_kinds(fmt)) <= kinds[fmt]
    eras = _by(suite, "era")["blob"]
    assert {era_text(era_tuple(e)) for f in BLOB_ERAS for e in BLOB_ERAS[f]} <= eras


def test_every_metadata_version_style_and_archive_version_has_a_vector(suite):
    meta = {(c.scope["version"], c.scope["style"]) for c in suite if c.format == "mlf-metadata" and c.role == "decode"
            and not c.broken_kind}
    assert meta == {(str(v), s) for v in md.VERSIONS for s in md.styles(v)}
    archives = {c.scope["version"] for c in suite if c.format == "mlf-archive" and c.role == "decode"
                and not c.broken_kind}
    assert archives == {str(v) for v in md.VERSIONS}
    migrations = [c for c in suite if c.role == "migrate"]
    assert {c.expected["outcome"] for c in migrations} == {"accept", "reject"}
    assert any(c.expected["reading"]["losses"] for c in migrations if c.expected["outcome"] == "accept")


def test_the_special_params_cases_are_there(suite):
    ids = {c.id for c in suite}
    for name in ("0-d", "zero-size-0x4", "name-empty", "name-non-ascii", "duplicate-names", "trailing-bytes",
                 "reserved-nonzero", "device-id-3"):
        assert f"params.valid.{name}" in ids


def test_every_spec_ref_points_at_a_heading_of_the_reference(suite):
    anchors: dict[str, set[str]] = {}
    for c in suite:
        page, _, frag = c.spec_ref.partition("#")
        path = ROOT / page
        assert path.is_file(), c.spec_ref
        if page not in anchors:
            anchors[page] = {anchor(h) for h in re.findall(r"^#+ .*$", path.read_text(), re.M)}
        assert not frag or frag in anchors[page], c.spec_ref


def test_the_documented_examples_are_the_readings_of_their_vectors(suite):
    by_id = {c.id: c for c in suite}
    seen = set()
    for page in sorted((ROOT / "generated" / "docs").glob("canonical_*.md")):
        for doc, text in re.findall(r"^### \S+\n\n(.*?)\n\n```json\n(.*?)\n```", page.read_text(), re.M | re.S):
            vid = re.search(r"\(vector ([^)]+)\)", doc).group(1)
            assert json.loads(text) == by_id[vid].expected["reading"], (page.name, vid)
            seen.add(page.stem)
    assert {"canonical_params", "canonical_blob", "canonical_graph", "canonical_metadata"} <= seen
    canonical_params_models.ROOT.model_validate(by_id["params.valid.w-and-b"].expected["reading"])


def test_encode_inputs_carry_the_data_and_decode_back(suite):
    for c in suite:
        if c.role == "encode" and c.format == "params":
            reading = c.reading_input()
            assert all("data" in t for t in reading["tensors"])
            assert not compare.compare("params", c.expected["reading"], reading, role="encode")
