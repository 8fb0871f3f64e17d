"""Remote sources cost local commands nothing: no client library is imported for a path."""

from __future__ import annotations

from tests.support.imports import modules_after

HEAVY = ("huggingface_hub", "fsspec", "aiohttp", "s3fs", "botocore", "httpx", "httpx2", "mlf_spec.remote")


def test_a_local_check_imports_no_remote_client(caches):
    for argv in (["check", str(caches["ours"])], ["cache", "dump", str(caches["ours"])], ["check", "--help"]):
        mods = modules_after(argv)
        assert not [m for m in mods if m.split(".")[0] in HEAVY or m.startswith("mlf_spec.remote")], argv
