"""The generated JSON Schemas agree with the pydantic models (checked with jsonschema, an
independent validator): valid documents of every version pass, broken ones fail."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from mlf_spec.generated import mlf_ir

from mlf_spec import metadata
from mlf_spec import strategies as ms
from mlf_spec.errors import ValidationError

jsonschema = pytest.importorskip("jsonschema")
SCHEMAS = Path(__file__).resolve().parents[2] / "generated" / "schemas"


def _validator(name: str):  # noqa: ANN202
    schema = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


VALIDATORS = {v: _validator(f"mlf_v{v}") for v in metadata.VERSIONS}


@pytest.mark.parametrize("example", mlf_ir.EXAMPLES, ids=lambda e: e["name"])
def test_spec_examples_pass_their_version_schema(example):
    VALIDATORS[example["version"]].validate(example["value"])


@settings(max_examples=40)
@given(ms.mlf_archives())
def test_written_metadata_passes_the_schema(arc):
    from mlf_spec import archive

    version, _, data = arc
    with archive.open(data) as a:
        VALIDATORS[version].validate(json.loads(a.read("metadata.json")))
        for mod in a.modules.values():
            if mod.graph is not None:
                _validator("graph_json").validate(mod.graph.data)


@settings(max_examples=60)
@given(ms.broken_mlf_metadata())
def test_schema_and_model_agree_on_broken_documents(broken):
    kind, version, style, data = broken.kind, broken.version, broken.style, broken.data
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError):  # not_json includes deeply nested arrays
        return
    if not isinstance(doc, dict) or version not in VALIDATORS:
        return
    with pytest.raises(ValidationError):
        metadata.from_document(doc, version=version, style=style)
    if kind.startswith(("missing_key", "wrong_type", "bad_value", "unknown_key")) and \
            kind != "bad_value:modules_document.modules":  # keys equal to model_name: not expressible
        assert not VALIDATORS[version].is_valid(doc), kind
