"""hf://ORG/REPO[@REV][/PATH] against a stand-in of the Hub's API on loopback (HF_ENDPOINT):
sizes and LFS SHA-256 from the tree API, LFS bytes through the redirect to the CDN (nginx on
another host name), tokens from the usual places, private repositories refused in one line."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout

from mlf_spec.cache import check as local_check
from mlf_spec.cli import main
from mlf_spec.remote import check as remote_check


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_check_on_the_hub_reads_the_index_and_the_tree_only(hub, caches):
    report, info = remote_check.check("hf://mlc-ai/tiny-q0f32-MLC")
    local = local_check.check(caches["tvm"], md5=False)
    assert sorted(f.code for f in report.findings) == sorted(f.code for f in local.findings)
    assert info["bytes_read"] == (caches["tvm"] / "tensor-cache.json").stat().st_size
    assert not [p for p in hub.faults.requests() if "/resolve/" in p and p.endswith(".bin")]  # no shard GET


def test_revision_and_path_forms(hub, caches):
    commit = hub.repos["mlc-ai/tiny-ours"].commit
    for url in ("hf://mlc-ai/tiny-ours@main", f"hf://mlc-ai/tiny-ours@{commit}/tensor-cache.json",
                "hf://mlc-ai/tiny-ours/"):
        report, _ = remote_check.check(url)
        assert report.conformant, url
    code, _, err = _cli("check", "hf://mlc-ai/tiny-ours@nope")
    assert code == 2 and "no such revision 'nope'" in err and len(err.strip().splitlines()) == 1


def test_verify_checks_md5sum_and_the_lfs_sha256(hub, caches):
    report, info = remote_check.check("hf://mlc-ai/tiny-q0f32-MLC", verify=True)
    assert report.conformant and info["verified"]
    assert [p for p in hub.faults.requests("GET") if p.endswith(".bin")]  # through the redirect
    hub.repos["mlc-ai/tiny-q0f32-MLC"].lfs_sha256["params_shard_1.bin"] = "0" * 64
    code, _, err = _cli("check", "hf://mlc-ai/tiny-q0f32-MLC", "--verify")
    assert code == 2 and "the Hub's LFS record says 000" in err and "params_shard_1.bin" in err


def test_a_manifest_is_checked_on_the_hub_without_downloading_a_shard(hub, caches, tmp_path):
    pinned = tmp_path / "m.json"
    assert _cli("cache", "manifest", str(caches["ours"]), "-o", str(pinned))[0] == 0
    hub.faults.clear()
    code, out, _ = _cli("check", "hf://mlc-ai/tiny-ours", "--manifest", str(pinned), "--json")
    doc = json.loads(out)
    assert code == 0 and doc["remote"]["bytes_read"] == (caches["ours"] / "tensor-cache.json").stat().st_size
    assert not [p for p in hub.faults.requests("GET") if p.endswith(".bin")]
    hub.repos["mlc-ai/tiny-ours"].lfs_sha256["params_shard_0.bin"] = "f" * 64  # the object differs from the pin
    code, out, _ = _cli("check", "hf://mlc-ai/tiny-ours", "--manifest", str(pinned), "--json")
    assert code == 1 and [f["member"] for f in json.loads(out)["findings"]] == ["params_shard_0.bin"]


def test_an_lfs_pointer_committed_as_a_shard(hub):
    report, info = remote_check.check("hf://acme/lfs-pointer")
    assert "remote.lfs-pointer" in report.codes()


def test_a_private_repository_needs_a_token(hub, monkeypatch):
    code, _, err = _cli("check", "hf://acme/private")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "hf://acme/private" in err and "private" in err and "HF_TOKEN" in err
    monkeypatch.setenv("HF_TOKEN", hub.token)
    code, out, err = _cli("check", "hf://acme/private", "--verify")
    assert code == 0, err


def test_no_index_in_the_folder_says_so(hub, caches):
    code, _, err = _cli("check", "hf://mlc-ai/tiny-ours/nothing-here")
    assert code == 2 and "hf://mlc-ai/tiny-ours/nothing-here" in err


def test_the_cli_in_a_fresh_process_takes_hf_endpoint_from_the_environment(hub, tmp_path):
    env = {"HF_ENDPOINT": hub.url, "HF_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    r = subprocess.run([sys.executable, "-m", "mlf_spec", "cache", "dump", "hf://mlc-ai/tiny-q0f32-MLC", "--sample", "3"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "sha256 of 3 of 12 tensors" in r.stdout
