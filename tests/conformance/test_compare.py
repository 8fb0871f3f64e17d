"""Comparison of readings by the rules the spec states (compare: in spec/records/canonical_*)."""

from __future__ import annotations

import copy

import numpy as np
from mlf_spec.generated import canonical_params_models, payloads_ir

from mlf_spec.conformance import canonical, compare
from mlf_spec.conformance.compare import compare as cmp
from mlf_spec.params import codec as params


def reading():
    data = params.dumps({"w": np.arange(6, dtype="f4").reshape(2, 3), "b": np.array([1, 2, 3], "i8")})
    return canonical.decode("params", data, {"dialect": "v0.23"})


def test_the_rules_come_from_the_spec():
    fields = compare.fields()
    assert fields["canonical_params"]["tensors"]["compare"] == canonical_params_models.FIELDS["canonical_params"][
        "tensors"]["compare"] == ["writer_order"]
    assert "may_omit" in fields["canonical_tensor"]["dtype"]["compare"]
    assert fields["canonical_archive"]["members"]["compare"] == ["unordered"]
    fmap = next(f for f in payloads_ir.STRUCTS["device_binary"]["fields"] if f["name"] == "fmap")
    assert fmap["order"] == "unspecified"


def test_equal_readings_agree_and_a_changed_value_is_named_with_its_path():
    a = reading()
    assert cmp("params", a, copy.deepcopy(a)) == []
    b = copy.deepcopy(a)
    b["tensors"][1]["shape"] = [4]
    diffs = cmp("params", a, b)
    assert [d.path for d in diffs] == ["tensors[1].shape[0]"] and "expected 3, got 4" in diffs[0].message


def test_writer_order_is_ordered_when_decoding_and_free_when_encoding():
    a = reading()
    b = copy.deepcopy(a)
    b["tensors"].reverse()
    assert cmp("params", a, b, role="decode")
    assert cmp("params", a, b, role="encode") == []
    b["tensors"][0]["sha256"] = "0" * 64
    assert cmp("params", a, b, role="encode")


def test_may_omit_keys_can_be_left_out_but_must_agree_when_given():
    a = reading()
    b = copy.deepcopy(a)
    for t in b["tensors"]:
        del t["dtype"], t["device_id"], t["reserved"], t["device_type"]
    del b["dialect"], b["reserved"], b["trailing_bytes"]
    assert cmp("params", a, b) == []
    b["tensors"][0]["dtype"] = "float64"
    assert [d.path for d in cmp("params", a, b)] == ["tensors[0].dtype"]
    del a["tensors"][0]["shape"]
    assert "missing" in str(cmp("params", reading(), a)[0])


def test_unknown_keys_and_json_types_are_differences():
    a = reading()
    b = copy.deepcopy(a)
    b["x-extra"] = 1
    assert "unknown key" in cmp("params", a, b)[0].message
    b = copy.deepcopy(a)
    b["tensors"][0]["lanes"] = True  # true is not 1
    assert cmp("params", a, b)
    b["tensors"][0]["lanes"] = 1.0  # 1.0 is 1 in JSON
    assert cmp("params", a, b) == []


def test_unordered_lists_compare_as_multisets():
    a = {"format": "mlf-archive", "members": [{"path": "a", "type": "file", "size": 1, "sha256": "0" * 64},
                                              {"path": "b", "type": "dir", "size": 0, "sha256": None}],
         "metadata": None, "modules": {}, "findings": ["x", "y"]}
    b = copy.deepcopy(a)
    b["members"].reverse()
    b["findings"].reverse()
    assert cmp("mlf-archive", a, b) == []
    b["members"].append(b["members"][0])
    assert "not expected" in cmp("mlf-archive", a, b)[0].message


def test_payload_maps_of_unspecified_order_compare_as_multisets():
    mod = {"index": 1, "kind": "cuda", "payload_bytes": 10, "payload_sha256": "0" * 64, "struct": "device_binary",
           "fields": {"fmt": "ptx", "fmap": [["f", {"name": "f"}], ["g", {"name": "g"}]], "data": {"size": 1}},
           "functions": ["f", "g"]}
    a = {"format": "blob", "layout": "ffi", "modules": [mod], "import_tree": None, "trailing_bytes": 0,
         "findings": []}
    b = copy.deepcopy(a)
    b["modules"][0]["fields"]["fmap"].reverse()
    b["modules"][0]["functions"].reverse()
    assert cmp("blob", a, b) == []
    b["modules"][0]["fields"]["fmap"][0][0] = "h"
    assert cmp("blob", a, b)


def test_reading_validation_names_the_problem():
    assert compare.validate_reading("params", reading()) is None
    bad = reading()
    bad["tensors"][0]["sha256"] = "xyz"
    assert "sha256" in compare.validate_reading("params", bad)


def test_the_identical_reading_shortcut_only_takes_the_same_json_document():
    """Case.check passes a reading that is the expected one as JSON without the rule walk and
    the schema check: true is not 1 and 1 is not 1.0 there (the walk decides those), and every
    expected reading of the suite matches its schema (the premise of the shortcut)."""
    from mlf_spec.conformance import vectors
    from mlf_spec.conformance.vectors import Answer

    r = reading()
    assert compare.same_json(r, copy.deepcopy(r))
    assert compare.same_json({"a": 1, "b": [1, 2]}, {"b": [1, 2], "a": 1})
    assert not compare.same_json({"a": True}, {"a": 1})
    assert not compare.same_json([1.0], [1]) and cmp("params", [1.0], [1]) == []  # the walk: numbers by value
    assert not compare.same_json(float("nan"), float("nan"))
    suite = vectors.load_suite()
    accepted = [c for c in suite if c.expected["outcome"] == "accept" and c.role != "encode"]
    assert all(compare.validate_reading(c.kind, c.expected["reading"]) is None for c in accepted)
    case = next(c for c in accepted if c.format == "params" and c.expected["reading"]["tensors"])
    odd = copy.deepcopy(case.expected["reading"])
    odd["tensors"][0]["shape"] = [True if x == 1 else x for x in odd["tensors"][0]["shape"]] + [True]
    assert case.check(Answer.ok(reading=odd)).outcome == "fail"
    assert case.check(Answer.ok(reading=copy.deepcopy(case.expected["reading"]))).outcome == "pass"
