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
