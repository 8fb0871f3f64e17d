"""Fixtures of the remote-cache tests: caches written by TVM's own writer (apache-tvm's
dump_tensor_cache) and by mlf-spec's, served on loopback by nginx (through a fault-injecting
proxy), by a stand-in of the Hub's API and by moto's S3 server. No test reaches the internet."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.support import nginx, remote_servers


def _params(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    out = {f"layer{i}.weight": rng.standard_normal((64, 48)).astype("float32") for i in range(8)}
    out["embed"] = rng.standard_normal((200, 32)).astype("float16")
    out["ids"] = np.arange(37, dtype="int32")
    out["scale"] = np.array(2.5, dtype="float32")
    out["mask"] = (rng.random(40) > 0.5).astype("uint8")
    return out


@pytest.fixture(scope="session")
def caches(tmp_path_factory) -> dict[str, Path]:
    """Cache folders under one root: ``tvm`` by TVM's dump_tensor_cache (several shards,
    f32-to-bf16), ``ours`` by mlf-spec's writer (raw), ``many`` (32 shards of one tensor each)
    and broken copies of ``ours``."""
    import tvm  # noqa: F401 - the real writer of the test extra
    from tvm.contrib import tvmjs

    from mlf_spec import cache

    root = tmp_path_factory.mktemp("served")
    params = _params()
    tvmjs.dump_tensor_cache({k: tvm.runtime.tensor(v) if hasattr(tvm.runtime, "tensor") else tvm.nd.array(v)
                             for k, v in params.items()}, str(root / "tvm"), encode_format="f32-to-bf16",
                            shard_cap_mb=0.01)
    cache.write(root / "ours", params, encode_format="raw", shard_cap_mb=0.02)
    rng = np.random.default_rng(1)
    cache.write(root / "many", {f"t{i}": rng.standard_normal(256).astype("float32") for i in range(32)},
                encode_format="raw", shard_cap_mb=0.001)
    out = {"root": root, "tvm": root / "tvm", "ours": root / "ours", "many": root / "many"}
    broken = {
        "lfs": lambda d: (d / "params_shard_1.bin").write_bytes(
            b"version https://git-lfs.github.com/spec/v1\noid sha256:" + b"0" * 64 + b"\nsize 20480\n"),
        "html": lambda d: (d / "params_shard_1.bin").write_bytes(b"<!DOCTYPE html><html><body>502</body></html>"),
        "missing": lambda d: (d / "params_shard_2.bin").unlink(),
        "short": lambda d: (d / "params_shard_0.bin").write_bytes((d / "params_shard_0.bin").read_bytes()[:-100]),
        "flipped": lambda d: (d / "params_shard_0.bin").write_bytes(
            b"\x01" + (d / "params_shard_0.bin").read_bytes()[1:]),
    }
    for name, damage in broken.items():
        shutil.copytree(root / "ours", root / name)
        damage(root / name)
        out[name] = root / name
    return out


@pytest.fixture(scope="session")
def web(caches):
    """nginx serving the caches' root; yields its base URL."""
    with nginx.serve(caches["root"]) as url:
        yield url


@pytest.fixture()
def proxy(web):
    """A fault-injecting proxy in front of nginx (fresh faults per test)."""
    with remote_servers.fault_proxy(web) as p:
        yield p


@pytest.fixture(scope="session")
def hub_env(caches, web):
    """The Hub stand-in (LFS files redirected to nginx at http://localhost:PORT, another host)."""
    cdn = web.replace("127.0.0.1", "localhost")
    with remote_servers.hub_server(cdn, caches["root"]) as hub:
        hub.add("mlc-ai/tiny-q0f32-MLC", caches["tvm"])
        hub.add("mlc-ai/tiny-ours", caches["ours"])
        hub.add("acme/private", caches["ours"], private=True)
        hub.add("acme/lfs-pointer", caches["lfs"])
        yield hub


@pytest.fixture()
def hub(hub_env, monkeypatch, tmp_path):
    """HF_ENDPOINT pointed at the stand-in, no token (HF_HOME in a fresh folder)."""
    from huggingface_hub import constants

    monkeypatch.setenv("HF_ENDPOINT", hub_env.url)
    monkeypatch.setattr(constants, "ENDPOINT", hub_env.url)
    monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE", hub_env.url + "/{repo_id}/resolve/{revision}/{filename}")
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(tmp_path / "hf-home" / "token"))
    hub_env.faults.clear()
    for repo in hub_env.repos.values():
        repo.lfs_sha256.clear()
    yield hub_env


@pytest.fixture(scope="session")
def s3_env(caches):
    """moto's S3 server with the caches uploaded to s3://weights/<name>/."""
    with remote_servers.moto_s3() as endpoint:
        for name in ("tvm", "ours", "missing"):
            remote_servers.upload_s3(endpoint, "weights", name, caches[name])
        yield endpoint


@pytest.fixture()
def s3(s3_env, monkeypatch):
    """The environment pointed at moto's server."""
    for k, v in remote_servers.env_for_s3(s3_env).items():
        monkeypatch.setenv(k, v)
    yield s3_env


@pytest.fixture(autouse=True)
def _default_options(monkeypatch):
    """Each test starts from the default timeouts and retries (the CLI sets them per run)."""
    from mlf_spec.remote import stores

    monkeypatch.setattr(stores, "DEFAULTS", stores.Options())
