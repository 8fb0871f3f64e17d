"""Remote caches over HTTP (nginx on loopback): the check gives the findings of the local check
without reading tensor bytes, and says how much it read; --sample, --verify, dump, diff,
convert and manifests read what they must."""

from __future__ import annotations

import io
import json
import os
from contextlib import redirect_stderr, redirect_stdout

import numpy as np
import pytest

from mlf_spec import cache
from mlf_spec.cache import check as local_check
from mlf_spec.cli import main
from mlf_spec.remote import check as remote_check


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def _codes(report) -> list[tuple[str, str]]:
    return sorted((f.code, f.path) for f in report.findings)


@pytest.mark.parametrize("name", ["tvm", "ours", "lfs", "html", "missing", "short"])
def test_check_over_http_finds_what_the_local_check_finds_without_tensor_bytes(web, caches, name):
    report, info = remote_check.check(f"{web}/{name}/")
    local = local_check.check(caches[name], md5=False)
    served = {"lfs": ["remote.lfs-pointer"], "html": ["remote.served-html"]}.get(name, [])
    assert _codes(report) == sorted(_codes(local) + [(c, "records[1].dataPath") for c in served])
    index = (caches[name] / "tensor-cache.json").stat().st_size
    # the index, plus the first bytes of a shard whose size disagrees (to say what it is)
    assert index <= info["bytes_read"] <= index + 512 * (name in ("lfs", "html", "short"))
    assert info["requests"] >= 1 + len(list(caches[name].glob("*.bin")))


def test_an_index_url_and_a_folder_url_are_the_same_cache(web, caches):
    a, _ = remote_check.check(f"{web}/tvm/tensor-cache.json")
    b, _ = remote_check.check(f"{web}/tvm")
    assert _codes(a) == _codes(b) and a.conformant


def test_check_cli_says_what_it_read_and_exits_by_the_findings(web, caches):
    code, out, _ = _cli("check", f"{web}/ours")
    assert code == 0, out
    assert "read " in out and "md5sum not checked" in out
    code, out, _ = _cli("check", f"{web}/lfs", "--json")
    doc = json.loads(out)
    assert code == 1 and "remote.lfs-pointer" in [f["code"] for f in doc["findings"]]
    index = (caches["lfs"] / "tensor-cache.json").stat().st_size
    assert doc["remote"]["bytes_read"] <= index + 512 and doc["remote"]["verified"] is False


def test_verify_streams_every_shard_once_and_finds_a_changed_byte(web, caches):
    report, info = remote_check.check(f"{web}/flipped", verify=True)
    assert [f.code for f in report.findings if f.code == "shard.md5"] == ["shard.md5"]
    shards = sum(p.stat().st_size for p in caches["flipped"].glob("*.bin"))
    index = (caches["flipped"] / "tensor-cache.json").stat().st_size
    assert info["bytes_read"] == shards + index and info["verified"]
    clean, _ = remote_check.check(f"{web}/ours", verify=True)
    assert not [f for f in clean.findings if f.code == "shard.md5"]


def test_sample_covers_every_dtype_and_decodes_as_the_loader(web, caches):
    report, info = remote_check.check(f"{web}/tvm", sample=6)
    sampled = info["sampled"]
    assert len(sampled) == 6
    names = {s["name"] for s in sampled}
    ref, _ = cache.load(caches["tvm"])
    dtypes = {str(ref[n].dtype) for n in ref}
    assert {str(ref[s["name"]].dtype) for s in sampled} == dtypes  # every dtype (bf16-decoded float32 too)
    from mlf_spec.cache.reading import array_sha256

    for s in sampled:
        assert s["sha256"] == array_sha256(ref[s["name"]]), s["name"]
        assert s["stats"]["nan"] == int(np.isnan(ref[s["name"]].astype("float64")).sum())
    assert len(names) == 6


def test_dump_lists_from_the_index_and_hashes_only_what_it_read(web, caches):
    code, out, _ = _cli("cache", "dump", f"{web}/tvm", "--json")
    doc = json.loads(out)
    assert code == 0 and {t["sha256_of"] for t in doc["tensors"]} == {"not-read"}
    assert doc["remote"]["bytes_read"] == (caches["tvm"] / "tensor-cache.json").stat().st_size
    code, out, _ = _cli("cache", "dump", f"{web}/tvm", "--json", "--verify")
    full = json.loads(out)
    with cache.open(caches["tvm"]) as lazy:
        from mlf_spec.cache.reading import document

        local = document(lazy)
    assert [(t["name"], t["sha256"]) for t in full["tensors"]] == [(t["name"], t["sha256"]) for t in local["tensors"]]
    code, out, _ = _cli("cache", "dump", f"{web}/tvm", "--sample", "2")
    assert code == 0 and "sha256 of 2 of" in out


def test_diff_and_convert_read_a_remote_cache(web, caches, tmp_path):
    code, out, _ = _cli("cache", "diff", f"{web}/tvm", str(caches["tvm"]))
    assert code == 0, out
    code, out, err = _cli("cache", "convert", f"{web}/ours", str(tmp_path / "copy"))
    assert code == 0, err
    a, _ = cache.load(tmp_path / "copy")
    b, _ = cache.load(caches["ours"])
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
    with cache.open(f"{web}/ours/") as lazy:  # the API takes URLs too
        assert set(lazy.arrays()) == set(b)


def test_convert_of_a_broken_remote_cache_writes_nothing(web, tmp_path):
    code, _, err = _cli("cache", "convert", f"{web}/missing", str(tmp_path / "out"))
    assert code == 2 and err.startswith("mlf-spec: error: ") and len(err.strip().splitlines()) == 1
    assert os.listdir(tmp_path) == []


def test_manifest_pins_every_file_and_check_names_each_that_differs(web, caches, tmp_path):
    pinned = tmp_path / "weights.manifest.json"
    code, out, err = _cli("cache", "manifest", f"{web}/ours", "-o", str(pinned))
    assert code == 0, err
    doc = json.loads(pinned.read_text())
    assert [f["path"] for f in doc["files"]] == ["tensor-cache.json", *sorted(
        p.name for p in caches["ours"].glob("*.bin"))]
    import base64
    import hashlib

    first = caches["ours"] / doc["files"][1]["path"]
    assert doc["files"][1]["integrity"] == "sha384-" + base64.b64encode(hashlib.sha384(first.read_bytes()).digest()).decode()
    # the same manifest from the local folder
    code, out, _ = _cli("cache", "manifest", str(caches["ours"]))
    assert json.loads(out)["files"] == doc["files"]
    assert _cli("check", f"{web}/ours", "--manifest", str(pinned))[0] == 0
    assert _cli("check", str(caches["ours"]), "--manifest", str(pinned))[0] == 0
    code, out, _ = _cli("check", f"{web}/flipped", "--manifest", str(pinned), "--json")
    found = [(f["member"], f["code"]) for f in json.loads(out)["findings"] if f["code"] == "remote.manifest"]
    assert code == 1 and found == [("params_shard_0.bin", "remote.manifest")]
    code, out, _ = _cli("check", str(caches["missing"]), "--manifest", str(pinned), "--json")
    found = [f["member"] for f in json.loads(out)["findings"] if f["code"] == "remote.manifest"]
    assert found == ["params_shard_2.bin"]
    code, _, _ = _cli("cache", "manifest", f"{web}/ours", "-o", str(pinned))
    assert code == 1  # exists: --force


def test_remote_dump_documents_follow_the_cache_dump_schema(web):
    import jsonschema

    schema = json.loads((__import__("pathlib").Path(__file__).resolve().parents[2] / "generated" / "schemas"
                         / "cache_dump.schema.json").read_text())
    for extra in ([], ["--sample", "3", "--stats"], ["--verify"]):
        code, out, _ = _cli("cache", "dump", f"{web}/tvm", "--json", *extra)
        assert code == 0
        jsonschema.validate(json.loads(out), schema)


def test_tvm_verdict_of_a_remote_index_of_another_name(web, caches):
    import shutil

    folder = caches["root"] / "renamed"
    if not folder.exists():
        shutil.copytree(caches["ours"], folder)
        (folder / "tensor-cache.json").rename(folder / "weights.json")
    report, info = remote_check.check(f"{web}/renamed/weights.json", tvm="0.27")
    assert "cache.index-name" in report.codes()
    local = local_check.check(folder / "weights.json", tvm="0.27")
    assert report.tvm.verdict == local.tvm.verdict  # the same verdict, md5 not read remotely
    assert info["bytes_read"] == (folder / "weights.json").stat().st_size
    code, _, err = _cli("check", f"{web}/renamed")
    assert code == 2 and "no tensor-cache.json or ndarray-cache.json" in err


def test_the_progress_bar_is_drawn_on_a_terminal_only(web):
    from mlf_spec.remote.progress import Progress

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    tty, pipe = Tty(), io.StringIO()
    for stream in (tty, pipe):
        remote_check.check(f"{web}/ours", verify=True, progress=lambda total, s=stream: Progress(total, "verify", s))
    assert "verify [" in tty.getvalue() and "100.0%" in tty.getvalue() and tty.getvalue().endswith("\n")
    assert pipe.getvalue() == ""
    code, _, err = _cli("check", f"{web}/ours", "--verify")  # stderr not a terminal: nothing drawn
    assert code == 0 and err == ""
