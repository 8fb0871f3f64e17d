"""Finding rows (spec/findings/*.yaml): mistakes in a row are reported with the file and
field, and a derived fact is written into the conditions that name it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

from specgen.findings import check, emit  # noqa: E402
from specgen.ir import FindingsSpec  # noqa: E402
from specgen.load import load  # noqa: E402
from specgen.yamlload import SpecError  # noqa: E402


@pytest.fixture(scope="module")
def model():
    return load(ROOT / "spec")


def _row(code: str, **kw):
    def change(doc):
        row = next(f for f in doc["findings"] if f["code"] == code)
        for k, v in kw.items():
            if v is None:
                row.pop(k, None)
            else:
                row[k] = v
    return change


@pytest.mark.parametrize("name, change, message", [
    ("params_check", _row("tensor.reserved", when="reserved != 0 and nobody == 1"), "'nobody' is not a fact"),
    ("params_check", _row("tensor.reserved", subject="blob_entry"), "unknown subject 'blob_entry'"),
    ("params_check", _row("tensor.reserved", when=None), "a row has a `when`, or an `each`"),
    ("params_check", _row("tensor.negative-extent", each="ndim"), "'ndim' is not a list fact"),
    ("params_check", _row("tensor.reserved", message="reserved word is {reserved!s}"), "only !r"),
    ("params_check", _row("tensor.reserved", when="unique(reserved)"), r"unique\(\) is not available"),
    ("params_check", _row("params.dialect-data", when="1 == 1"), "belongs to a row with a `subject`"),
    ("cache_check", _row("shard.size", strict_refuses=None), "has an error class, and only such"),
    ("cache_check", lambda doc: doc["subjects"][1]["order"].pop(), "order must name each code"),
])
def test_mistakes_in_finding_rows_are_reported(model, name, change, message):
    spec, doc = model.findings[name]
    check(model, spec, doc)  # as written: no mistake
    data = spec.model_dump(exclude_unset=True)
    change(data)
    with pytest.raises(SpecError, match=message) as err:
        check(model, FindingsSpec.model_validate(data), doc)
    assert err.value.file == f"spec/findings/{name}.yaml"


def test_a_derived_fact_is_written_out_where_a_row_names_it(model):
    text = emit(model, "params_check")["params_check_rows.py"]
    assert "f['align_bad']" not in text and "f['cpu']" not in text
    assert "f['bits'] // 8 * f['lanes'] > 64" in text and "not f['device_type'] == 1" in text
    assert "f['ndim'] > 64" in text  # MAX_NDIM, the tensor spec's constant
