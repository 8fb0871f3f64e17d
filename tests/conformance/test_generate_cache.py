"""--generate on the tensor cache: folder cases drawn from mlf_spec.cache.strategies (valid,
broken, encode), judged by the reference, sent as folders in every testee mode, shrunk and
saved as folder cases that replay."""

from __future__ import annotations

import copy
import json
import shutil
import sys
from pathlib import Path
from typing import Any

from mlf_spec.conformance import generated_cases, runner, testee, vectors
from mlf_spec.conformance.adapters.mlf_spec import MlfSpecAdapter

CLI = [sys.executable, "-m", "mlf_spec", "conformance", "testee"]


class PlantedCacheBugs(MlfSpecAdapter):
    """mlf-spec's cache reader and writer with three bugs: a shard of another size than its
    record is cut or padded to the record's size (the check is skipped), a 0-d tensor reads as
    shape [1], and the writer drops the metadata."""

    name = "planted-cache"

    def info(self) -> dict[str, Any]:
        info = super().info()
        info["formats"] = [{"format": "tensor-cache", "roles": ["decode", "encode"], "scope": {"version": ["2"]}}]
        return info

    def decode(self, format: str, data: Any, options: dict[str, str]) -> Any:  # noqa: A002
        folder = Path(data)
        index = json.loads((folder / "tensor-cache.json").read_text())
        for shard in index.get("records", []):
            p = folder / shard["dataPath"]
            if p.is_file() and p.stat().st_size != shard["nbytes"]:
                p.write_bytes(p.read_bytes()[:shard["nbytes"]].ljust(shard["nbytes"], b"\0"))
        reading = copy.deepcopy(super().decode(format, data, options))
        for t in reading["tensors"]:
            if t["shape"] == []:
                t["shape"] = [1]
        return reading

    def encode(self, format: str, reading: Any, options: dict[str, str]) -> bytes:  # noqa: A002
        return super().encode(format, {**reading, "metadata": {}}, options)


def test_cache_cases_are_drawn_and_the_reference_agrees(tmp_path):
    found = generated_cases.explore(testee.InProcess(MlfSpecAdapter()), 45, seed_value=2, save_dir=tmp_path,
                                    formats=["tensor-cache"])
    assert found.results == [] and found.drawn == 45 and not list(tmp_path.iterdir())
    kinds = set(found.kinds)
    assert {"tensor-cache.decode.valid", "tensor-cache.encode.valid"} <= kinds
    assert sum(k.startswith("tensor-cache.decode.broken.") for k in kinds) >= 2, kinds
    cases = generated_cases.drawn_cases(MlfSpecAdapter().info(), 30, seed_value=2, formats=["tensor-cache"],
                                        where=tmp_path)
    assert {c.expected["outcome"] for c in cases} == {"accept", "reject"}
    folders = [c for c in cases if c.role == "decode"]
    assert folders and all(c.files and c.is_folder for c in folders)


def test_the_reference_agrees_served_and_one_shot():
    """The folder travels by path in the persistent and the one-shot protocol as well."""
    served = testee.Persistent(CLI)
    try:
        found = generated_cases.explore(served, 12, seed_value=4, formats=["tensor-cache"])
    finally:
        served.close()
    assert found.results == [] and found.drawn == 12
    found = generated_cases.explore(testee.OneShot(CLI), 3, seed_value=5, formats=["tensor-cache"])
    assert found.results == [] and found.drawn == 3


def test_a_wrong_cache_reader_and_writer_are_caught_shrunk_and_saved(tmp_path):
    planted = testee.InProcess(PlantedCacheBugs())
    found = generated_cases.explore(planted, 120, seed_value=1, save_dir=tmp_path, budget=60)
    ids = {r["id"] for r in found.results}
    assert {"gen.tensor-cache.decode.valid.diff-tensors.shape-length",
            "gen.tensor-cache.decode.broken.shard.size.accepted"} <= ids, ids
    assert any(i.startswith("gen.tensor-cache.encode.valid.diff-metadata") for i in ids), ids
    assert all(i.startswith("gen.tensor-cache.") for i in ids)
    saved = vectors.load_suite(tmp_path)
    assert {c.id for c in saved} == ids
    for c in saved:
        if c.role == "decode":  # a folder next to the case file, shrunk to what the bug needs
            assert c.input_path.is_dir() and c.input_files()
        if c.id == "gen.tensor-cache.decode.valid.diff-tensors.shape-length":
            assert [t["shape"] for t in c.expected["reading"]["tensors"]] == [[]]
        if c.id.endswith("shard.size.accepted"):
            assert c.expected["outcome"] == "reject"
    replay = runner.run(planted, saved, progress=False)
    assert {r["outcome"] for r in replay.results} == {"fail"}
    reference = runner.run(testee.InProcess(MlfSpecAdapter()), saved, progress=False)
    assert {r["outcome"] for r in reference.results} == {"pass"}
    shutil.rmtree(tmp_path)
