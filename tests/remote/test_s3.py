"""s3:// through s3fs against moto's S3-compatible server on loopback: one listing gives every
shard's size, bytes come by ranged GETs."""

from __future__ import annotations

import numpy as np

from mlf_spec import cache
from mlf_spec.cache import check as local_check
from mlf_spec.remote import check as remote_check


def test_check_verify_and_load_from_s3(s3, caches, tmp_path):
    report, info = remote_check.check("s3://weights/tvm", verify=True, sample=3)
    local = local_check.check(caches["tvm"])
    assert sorted(f.code for f in report.findings) == sorted(f.code for f in local.findings)
    assert info["verified"] and len(info["sampled"]) == 3
    arrays, meta = cache.load("s3://weights/tvm/tensor-cache.json")
    ref, ref_meta = cache.load(caches["tvm"])
    assert meta == ref_meta and all(np.array_equal(arrays[k], ref[k]) for k in ref)


def test_a_missing_object_is_a_missing_shard(s3):
    report, info = remote_check.check("s3://weights/missing")
    assert "shard.missing" in report.codes()
    assert info["bytes_read"] < 8192


def test_verify_reads_an_object_in_a_few_large_ranged_gets(s3_env, s3, tmp_path, monkeypatch):
    # --verify over s3:// made one ranged GET per MiB of every shard
    from s3fs.core import S3File

    from mlf_spec.remote import stores
    from tests.support import remote_servers

    rng = np.random.default_rng(3)
    cache.write(tmp_path / "big", {"w": rng.standard_normal(5 << 20).astype("float32")}, encode_format="raw",
                shard_cap_mb=64)  # one shard of 20 MiB
    remote_servers.upload_s3(s3_env, "weights", "big", tmp_path / "big")
    ranges: list[tuple[int, int]] = []
    real = S3File._fetch_range

    def counted(self, start, end):
        ranges.append((start, end))
        return real(self, start, end)

    monkeypatch.setattr(S3File, "_fetch_range", counted)
    report, info = remote_check.check("s3://weights/big", verify=True)
    assert info["verified"] and "shard.md5" not in report.codes()
    size = (tmp_path / "big" / "params_shard_0.bin").stat().st_size
    assert size == 20 << 20
    step = stores.OBJECT_READ
    assert [s for s, _ in ranges] == list(range(0, size, step)) and len(ranges) == 3, ranges  # was 20, one per MiB
    assert all(e - s == step for s, e in ranges)
