"""The stratified sample the test suite runs the adapters on (``conformance run --sample``):
the same on every machine, every stratum of the cases in the testee's scope, every known
failure's case (a stale one is still caught) and every skip."""

from __future__ import annotations

import json

import pytest

from mlf_spec.cli import main as cli
from mlf_spec.conformance import adapters, compat, sampling, vectors
from mlf_spec.conformance.known_failures import KnownFailures
from mlf_spec.conformance.report import read_report
from mlf_spec.conformance.runner import skip_reason


@pytest.fixture(scope="module")
def suite():
    return vectors.load_suite()


def _info(formats: dict[str, dict]) -> dict:
    return {"protocol": "mlf-conformance/1", "name": "x", "version": "1",
            "formats": [{"format": f, **d} for f, d in formats.items()]}


def test_the_sample_covers_every_stratum_in_scope_and_is_the_same_every_time(suite):
    info = adapters.load("mlf-spec").info()
    chosen = sampling.stratified(suite, info)
    assert [c.id for c in chosen] == [c.id for c in sampling.stratified(suite, info)]
    assert {c.id for c in sampling.stratified(list(reversed(suite)), info)} == {c.id for c in chosen}
    need = set().union(*(sampling.strata(c) for c in suite))
    assert need == set().union(*(sampling.strata(c) for c in chosen))
    assert {c.format for c in chosen} == {c.format for c in suite} and {c.role for c in chosen} == {"decode", "encode",
                                                                                                      "migrate"}
    assert len(chosen) < 0.5 * len(suite), len(chosen)  # a sample: the whole suite stays in tools/compat_pages.py
    rules = {(c.format, r, c.expected["outcome"]) for c in suite for r in c.features.get("rule", [])}
    assert rules == {(c.format, r, c.expected["outcome"]) for c in chosen for r in c.features.get("rule", [])}


def test_known_failures_skips_and_kept_ids_are_always_in_the_sample(suite):
    params_only = _info({"params": {"roles": ["decode"]}})
    known = KnownFailures.parse("params.valid.w-and-b  why\nparams.dtype.v0.21.*  why\n")
    chosen = {c.id for c in sampling.stratified(suite, params_only, known, keep=["params.valid.0-d"])}
    assert {c.id for c in suite if c.id.startswith("params.dtype.v0.21.")} <= chosen
    assert {"params.valid.w-and-b", "params.valid.0-d"} <= chosen
    skipped = {c.id for c in suite if skip_reason(c, params_only) is not None}
    assert skipped and skipped <= chosen  # they cost nothing: the skips stay those of a whole run
    run = chosen - skipped
    assert 0 < len(run) < 0.6 * sum(c.format == "params" and c.role == "decode" for c in suite)


def test_a_stale_known_failure_is_caught_by_a_sampled_run(suite, tmp_path, capsys):
    """A listed case that now passes is an unexpected pass in the sample too; the run line
    names the suite's digest and what the sample was drawn from, and so does the page."""
    (tmp_path / "k").write_text("graph-json.valid.basic  said to fail\n")
    rep = tmp_path / "r.jsonl"
    status = cli(["conformance", "run", "--adapter", "mlf-spec", "--format", "graph-json", "--sample",
                  "--known-failures", str(tmp_path / "k"), "--report-json", str(rep), "--quiet"])
    assert status == 1
    records = read_report(rep)
    cases = {r["id"]: r for r in records if r["type"] == "case"}
    assert cases["graph-json.valid.basic"]["outcome"] == "xpass"
    graphs = [c for c in suite if c.format == "graph-json"]
    assert records[0]["sampled_from"] == len(graphs) > len(cases) == records[0]["cases"]
    assert records[0]["suite_sha256"] == vectors.suite_digest(suite)
    assert f"a stratified sample of {len(cases)} of its {len(graphs)} selected cases" in compat.page(records)
    capsys.readouterr()
    assert cli(["conformance", "run", "--adapter", "mlf-spec", "--sample-keep", "x"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["mlf-spec: error: --sample-keep goes with --sample"]


def test_many_exact_ids_select_in_linear_time(suite):
    ids = [c.id for c in suite[::2]]
    assert [c.id for c in vectors.select(suite, ids=ids)] == ids
    assert json.dumps([c.id for c in vectors.select(suite, ids=["params.valid.w-and-b", "params.valid.0-*"])]) == \
        json.dumps(sorted(c.id for c in suite if c.id == "params.valid.w-and-b" or c.id.startswith("params.valid.0-")))
