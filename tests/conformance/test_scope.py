"""What a vector applies to and how a testee's handshake narrows it: scope lists of every
dialect or era in which the expected reading holds (computed from the dtype table by reading
the input in each), the option a runner sends when a testee supports only some of them,
string scopes of older vector files, partial readers (reads) and rejections a testee does not
claim (not_checked)."""

from __future__ import annotations

import dataclasses
import json

from mlf_spec.conformance import canonical, runner, testee, vectors
from mlf_spec.conformance.adapters.base import Adapter, Rejected
from mlf_spec.params import dtypes


def info(fmt="params", **support):
    return {"protocol": "mlf-conformance/1", "name": "t", "version": "1",
            "formats": [{"format": fmt, "roles": ["decode", "encode"], **support}]}


def case(vid):
    return vectors.load_suite(ids=[vid])[0]


def test_a_float32_vector_holds_in_every_dialect_a_bool_one_only_where_it_is_spelled_bool():
    f32 = case("params.dtype.v0.26.float32.2-32")
    assert f32.scope["dialect"][0] == "v0.26" == f32.options["dialect"]
    assert set(f32.scope["dialect"]) == {d.id for d in dtypes.DIALECTS}
    bool_old = case("params.dtype.v0.21.bool.1-1")  # (1, 1, 1): bool up to 0.22, uint1 from 0.23
    assert "v0.23" not in bool_old.scope["dialect"] and "v0.26" not in bool_old.scope["dialect"]
    float8_old = case("params.dtype.v0.13.e4m3_float8.6-8")  # code 6 means bool from 0.21
    assert float8_old.scope["dialect"][0] == "v0.13" and "v0.21" not in float8_old.scope["dialect"]


def test_every_listed_dialect_gives_the_expected_outcome():
    for c in vectors.load_suite(formats=["params"], roles=["decode"]):
        for d in c.scope["dialect"]:
            got = canonical.decode_params(c.input(), {"dialect": d}) if c.expected["outcome"] == "accept" else None
            if got is not None:
                assert vectors.echo(got, "dialect", d, c.options["dialect"]) == c.expected["reading"], (c.id, d)


def test_blob_vectors_list_the_eras_whose_grammar_reads_them_alike():
    c = case("blob.ffi.kind.c")
    assert c.scope["layout"] == "ffi" and c.scope["era"][0] == "latest" and "0.23" in c.scope["era"]
    for b in vectors.load_suite(formats=["blob"]):
        assert isinstance(b.scope["era"], list) and b.scope["era"][0] == b.options["era"], b.id


def test_a_testee_of_an_older_dialect_runs_the_vectors_that_read_alike_in_it():
    f32 = case("params.dtype.v0.26.float32.2-32")
    old = info(scope={"dialect": ["v0.23"]})
    assert runner.skip_reason(f32, old) is None
    sent = f32.retarget(old)
    assert sent.options["dialect"] == "v0.23" and sent.expected["reading"]["dialect"] == "v0.23"
    assert f32.options["dialect"] == "v0.26"  # the vector itself is unchanged
    bool_old = case("params.dtype.v0.21.bool.1-1")
    assert "outside what the testee supports" in runner.skip_reason(bool_old, old)


def test_an_encode_vector_sent_in_another_dialect_names_it_in_the_reading_it_sends():
    c = case("params.encode.w-and-b")
    sent = c.retarget(info(scope={"dialect": ["v0.21"]}))
    assert sent.options["dialect"] == "v0.21"
    assert sent.reading_input()["dialect"] == "v0.21" and sent.input_sha256 == canonical.sha256(sent.input())
    assert sent.check(testee.InProcess(_Reference()).ask(sent)).outcome == "pass"


def test_a_vector_file_with_a_string_scope_keeps_its_meaning(tmp_path):
    c = case("params.valid.w-and-b")
    doc = json.loads(c.path.read_text())
    doc["scope"] = {"dialect": "v0.26"}
    (tmp_path / c.input_path.name).write_bytes(c.input())
    (tmp_path / c.path.name).write_text(json.dumps(doc))
    old = vectors.load_case(tmp_path / c.path.name)
    assert runner.skip_reason(old, info(scope={"dialect": ["v0.26"]})) is None
    assert "v0.26 is outside" in runner.skip_reason(old, info(scope={"dialect": ["v0.23"]}))
    assert old.retarget(info(scope={"dialect": ["v0.23"]})).options["dialect"] == "v0.26"


class _Reference(Adapter):
    """mlf-spec's own reading, partial or not, for the handshake tests."""

    name = "reference"

    def __init__(self, keys=None, refuse=False):
        self.keys, self.refuse = keys, refuse

    def info(self):
        return info()

    def decode(self, format, data, options):  # noqa: A002
        if self.refuse:
            raise Rejected("refused")
        full = canonical.decode(format, data, options)
        return full if self.keys is None else {k: full[k] for k in ("format", *self.keys) if k in full}

    def encode(self, format, reading, options):  # noqa: A002
        return canonical.encode(format, reading, options)


def test_a_partial_reader_is_compared_on_the_keys_it_declares():
    c = case("mlf-archive.valid.v7.graph")
    ask = testee.InProcess(_Reference(keys=["facts"])).ask
    assert c.check(ask(c), reads=["facts"]).outcome == "pass"
    assert c.check(ask(c)).outcome == "fail"  # without the declaration the whole reading is required
    wrong = vectors.Answer.ok(reading={"format": "mlf-archive", "facts": {"default": {
        "workspace_size_bytes": 1, "operator_workspace_max": 0, "graph_executor": None}}})
    v = c.check(wrong, reads=["facts"])
    assert v.outcome == "fail" and any("facts['default']" in d for d in v.diff)
    extra = vectors.Answer.ok(reading={**ask(c).reading, "members": []})
    assert "does not declare" in c.check(extra, reads=["facts"]).message
    missing = vectors.Answer.ok(reading={"format": "mlf-archive"})
    assert "lacks the keys" in c.check(missing, reads=["facts"]).message


def test_a_partial_reader_may_refuse_an_input_that_holds_nothing_it_reads():
    empty = case("mlf-archive.broken.finding-metadata.missing.v4.operator")
    assert empty.expected["reading"]["facts"] == {}
    refused = vectors.Answer.rejected("no metadata.json")
    assert empty.check(refused, reads=["facts"]).outcome == "pass"
    assert empty.check(refused).outcome == "fail"
    assert case("mlf-archive.valid.v7.graph").check(refused, reads=["facts"]).outcome == "fail"


def test_a_testee_that_reports_no_reading_is_judged_on_accepting_or_refusing():
    valid, broken = case("graph-json.valid.basic"), case("graph-json.broken.unknown_key.graph")
    accepted = vectors.Answer.ok(reading={"format": "graph-json"})
    refused = vectors.Answer.rejected("key x_unknown is not supported")
    assert valid.check(accepted, reads=[]).outcome == "pass"
    assert valid.check(refused, reads=[]).outcome == "fail"  # a valid input must be accepted
    assert broken.check(refused, reads=[]).outcome == "pass"
    assert broken.check(accepted, reads=[]).outcome == "fail"
    assert "does not declare" in valid.check(vectors.Answer.ok(reading={"format": "graph-json", "nodes": []}),
                                             reads=[]).message


def test_rejections_a_testee_does_not_claim_are_skipped_and_the_others_still_run():
    lenient = info("mlf-metadata", not_checked=["invalid_document"])
    schema = case("mlf-metadata.broken.unknown_key-full_model.v1.graph")
    assert schema.expected["error_class"] == "invalid_document"
    assert "does not check invalid_document" in runner.skip_reason(schema, lenient)
    migration = case("migration.metadata.v7.graph.to-v1")
    refused = dataclasses.replace(migration, role="decode", expected={"outcome": "reject", "error_class": "refused"})
    assert runner.skip_reason(refused, lenient) is None


def test_the_runner_reports_what_a_handshake_narrows():
    class Old(_Reference):
        def info(self):
            return info(scope={"dialect": ["v0.23"]})

    cases = vectors.load_suite(ids=["params.dtype.v0.26.float32.2-32", "params.dtype.v0.21.bool.1-1"])
    result = runner.run(testee.InProcess(Old()), cases, progress=False)
    by_id = {r["id"]: r["outcome"] for r in result.results}
    assert by_id == {"params.dtype.v0.26.float32.2-32": "pass", "params.dtype.v0.21.bool.1-1": "skip"}
