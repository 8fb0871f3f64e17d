"""--generate: draw cases from the strategies, shrink each disagreement, save it as a vector."""

from __future__ import annotations

import copy

from mlf_spec.conformance import generated_cases, runner, testee, vectors
from mlf_spec.conformance.adapters.base import Rejected
from mlf_spec.conformance.adapters.mlf_spec import MlfSpecAdapter


class PlantedBugs(MlfSpecAdapter):
    """mlf-spec with two bugs: 0-d tensors get the shape [1], and empty names are refused."""

    name = "planted"

    def info(self):
        info = super().info()
        info["formats"] = [{"format": "params", "roles": ["decode"], "scope": {"dialect": ["v0.23"]}}]
        return info

    def decode(self, format, data, options):  # noqa: A002
        reading = copy.deepcopy(super().decode(format, data, options))
        for t in reading["tensors"]:
            if t["name"] == "":
                raise Rejected("empty names are not supported")
            if t["shape"] == []:
                t["shape"] = [1]
        return reading


def test_disagreements_are_found_shrunk_and_saved_as_replayable_vectors(tmp_path):
    t = testee.InProcess(PlantedBugs())
    found = generated_cases.explore(t, 300, seed_value=3, save_dir=tmp_path, budget=600)  # a guard: ~25 s CPU
    ids = {r["id"] for r in found.results}
    assert "gen.params.decode.valid.rejected" in ids
    assert "gen.params.decode.valid.diff-tensors.shape-length" in ids
    assert found.drawn >= 50
    saved = vectors.load_suite(tmp_path)
    assert {c.id for c in saved} == ids
    assert any(i.startswith("gen.params.decode.edge.") for i in ids)  # the bugs meet edge files too
    for c in saved:  # shrunk: a valid file to one tensor and what the bug needs (an edge file keeps the tensor
        # its edge moved as well, and shrinks as far as the budget lets it)
        if not c.id.startswith("gen.params.decode.valid."):
            continue
        tensors = c.expected["reading"]["tensors"]
        assert len(tensors) == 1, c.id
        if c.id.endswith("shape-length"):
            assert tensors[0]["shape"] == [] and tensors[0]["nbytes"] <= 1 and tensors[0]["name"] == "0"
        else:
            assert tensors[0]["name"] == ""
    replay = runner.run(t, saved, progress=False)
    assert {r["outcome"] for r in replay.results} == {"fail"}
    reference = runner.run(testee.InProcess(MlfSpecAdapter()), saved, progress=False)
    assert {r["outcome"] for r in reference.results} == {"pass"}


def test_a_testee_that_agrees_gives_nothing(tmp_path):
    found = generated_cases.explore(testee.InProcess(MlfSpecAdapter()), 40, seed_value=1, save_dir=tmp_path,
                                    formats=["params", "graph-json", "mlf-metadata"])
    assert found.results == [] and found.drawn == 40
    assert not list(tmp_path.iterdir())


class CountingPlantedBugs(PlantedBugs):
    """PlantedBugs that counts the requests it answers."""

    asked = 0

    def decode(self, format, data, options):  # noqa: A002
        type(self).asked += 1
        return super().decode(format, data, options)


def test_without_shrinking_each_kind_is_reported_as_first_drawn(tmp_path):
    """--no-shrink (CI): the kinds found and their cases are the same run after run, and the testee
    is asked the drawn requests plus one replay per kind, not a shrink path."""
    runs = []
    for i in range(2):
        CountingPlantedBugs.asked = 0
        found = generated_cases.explore(testee.InProcess(CountingPlantedBugs()), 60, seed_value=3,
                                        save_dir=tmp_path / str(i), budget=600, shrink=False)
        runs.append((sorted(r["id"] for r in found.results), CountingPlantedBugs.asked, found.drawn))
        saved = {c.id: c.input_sha256 for c in vectors.load_suite(tmp_path / str(i))}
        runs[-1] += (saved,)
    (ids, asked, drawn, saved), again = runs[0], runs[1]
    assert again == runs[0]
    assert "gen.params.decode.valid.diff-tensors.shape-length" in ids or "gen.params.decode.valid.rejected" in ids
    assert drawn >= 60 and asked <= drawn + 2 * len(ids)
