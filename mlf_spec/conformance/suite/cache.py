"""The tensor cache's conformance cases: every vector cache of :mod:`mlf_spec.cache.cases`
(vectors/tensor-cache/<id>/, made by tools/generate.py) as a folder-shaped ``decode`` case,
and again with its index renamed ``ndarray-cache.json`` (the name TVM 0.16 to 0.21 reads,
``v1.<id>/``), so that a loader of either era meets every rule. The expected outcome is
mlf-spec's canonical reading of the folder (:mod:`..canonical_cache`), or its rejection."""

from __future__ import annotations

from typing import Any

from mlf_spec.cache import cases
from mlf_spec.errors import MlfError

from .. import canonical
from ..folders import folder_sha256, private_copy
from .common import Built, Collector, doc_ref

#: index file names of cache version 2 -> version 1 (3c36ce2ec6, v0.22: the rename)
V1_NAMES = {"tensor-cache.json": "ndarray-cache.json", "tensor-cache-b16.json": "ndarray-cache-b16.json"}
TVM_OF_VERSION = {"1": "0.16 to 0.21", "2": "0.22 and later"}


def folder_outcome(name: str, files: dict[str, bytes]) -> dict[str, Any]:
    """mlf-spec's outcome for a cache folder named ``name`` holding ``files``."""
    from ..canonical_cache import decode_cache

    with private_copy(files, name) as folder:
        try:
            return {"outcome": "accept", "reading": decode_cache(folder)}
        except MlfError as exc:
            return {"outcome": "reject", "error_class": canonical.error_class(exc)}


def _version1(folder: str, files: dict[str, bytes]) -> dict[str, bytes]:
    """The cache with its index files named as 0.16 to 0.21 name them, in a folder named
    ``v1.<folder>`` (a dataPath that climbs back into its own folder follows the new name)."""
    back, new = f"../{folder}/".encode(), f"../v1.{folder}/".encode()
    return {V1_NAMES.get(n, n): (d.replace(back, new) if n in V1_NAMES else d) for n, d in files.items()}


def build_cache_bounds(c: Collector) -> None:
    """Add a decode case per boundary cache (:mod:`mlf_spec.cache.bounds`), named by its rule
    (``features.rule``), in each index version: ``tensor-cache.bound.<rule>.<label>`` with
    ``tensor-cache.json``, ``tensor-cache.v1.bound...`` renamed ``ndarray-cache.json``. The
    side each stands on is the reference's reading."""
    from mlf_spec.cache import bounds

    seen: set[str] = set()
    same: dict[str, list[Built]] = {}  # a probe that is another's folder joins that vector (its rules)
    for bc in bounds.bound_caches():
        folder = bounds._folder(bc.rule, bc.label)
        if folder in seen:
            raise AssertionError(f"boundary cache {folder!r} is built twice")
        seen.add(folder)
        digest = folder_sha256(bc.files)
        if digest in same:
            for built in same[digest]:
                if bc.rule not in built.case["features"]["rule"]:
                    built.case["features"]["rule"].append(bc.rule)
            continue
        same[digest] = []
        # the index the folder's reader opens names the version (tensor-cache.json when both are there)
        versions = [("1" if "ndarray-cache.json" in bc.files and "tensor-cache.json" not in bc.files else "2",
                     folder, bc.files)]
        if "tensor-cache.json" in bc.files and "ndarray-cache.json" not in bc.files:
            versions.append(("1", f"v1.{folder}", _version1(folder, bc.files)))
        for version, name, files in versions:
            vid = f"tensor-cache.{name}"
            expected = folder_outcome(name, files)
            side = expected["outcome"]
            case = {"id": vid, "format": "tensor-cache", "role": "decode", "input": name,
                    "input_sha256": folder_sha256(files), "options": {}, "scope": {"version": [version]},
                    "tvm": TVM_OF_VERSION[version], "features": {"version": [version], "rule": [bc.rule]},
                    "description": f"{bc.doc}: " + ("accepted" if side == "accept" else "must be rejected"),
                    "spec_ref": doc_ref("tensor_cache", "`cache_index`"),
                    "broken_kind": bc.rule if side == "reject" else None, "expected": expected}
            c.items.append(Built(case, b"", files))
            c.ids.add(vid)
            same[digest].append(c.items[-1])


def _spec_ref(c: cases.Case) -> str:
    if c.error is not None:
        return doc_ref("tensor_cache", "`cache_index`")
    return doc_ref("cache_check", "Findings of `mlf-spec cache check`")


def build_cache(c: Collector) -> None:
    """Add a decode case per vector cache, in each index version it can be named in."""
    for vc in cases.all_cases():
        versions = [("2", vc.id, vc.files)]
        if "tensor-cache.json" in vc.files:
            versions.append(("1", f"v1.{vc.id}", _version1(vc.id, vc.files)))
        elif "ndarray-cache.json" in vc.files:
            versions = [("1", vc.id, vc.files)]
        for version, folder, files in versions:
            vid = f"tensor-cache.{folder}"
            if vid in c.ids:
                raise AssertionError(f"vector id {vid!r} is built twice")
            expected = folder_outcome(folder, files)
            meant = "reject" if vc.error is not None or not vc.strict_ok else "accept"
            if expected["outcome"] != meant:
                raise AssertionError(f"vector {vid}: meant to {meant}, mlf-spec says {expected}")
            # cache_rule, not rule: a cache check rule is probed by findings present and absent
            # (mlf_spec.cache.cases), not by an accept and a reject of the loader
            features = {"version": [version], "cache_rule": [vc.rule], "finding": sorted(set(vc.findings))}
            case = {"id": vid, "format": "tensor-cache", "role": "decode", "input": folder,
                    "input_sha256": folder_sha256(files), "options": {}, "scope": {"version": [version]},
                    "tvm": TVM_OF_VERSION[version], "features": {k: v for k, v in features.items() if v},
                    "description": vc.doc, "spec_ref": _spec_ref(vc),
                    "broken_kind": vc.rule if meant == "reject" else None, "expected": expected}
            c.items.append(Built(case, b"", files))
            c.ids.add(vid)


#: the vector caches whose readings (with data) are encode cases, and the writer options they need
ENCODE_CASES: dict[str, dict[str, str]] = {
    "valid.base": {}, "valid.raw": {}, "valid.sharded": {"shard_cap_mb": "0.0009765625"}, "valid.dtypes": {},
    "valid.empty-encoded": {}, "valid.version1": {"version": "1"},
}


def reading_with_data(name: str, files: dict[str, bytes]) -> dict[str, Any]:
    """A cache's canonical reading with, per tensor, ``data``: the base64 of the C-contiguous
    bytes of the array the loader returns (what an encoder is given)."""
    import base64

    import numpy as np

    from mlf_spec import cache

    from ..canonical_cache import decode_cache

    with private_copy(files, name) as folder:
        reading = decode_cache(folder)
        with cache.open(folder) as lazy:
            data = [base64.b64encode(np.ascontiguousarray(lazy.array(t)).tobytes()).decode("ascii")
                    for t in lazy.tensors]
    for t, d in zip(reading["tensors"], data):
        t["data"] = d
    return reading


def encode_outcome(reading: dict[str, Any], options: dict[str, str]) -> dict[str, Any]:
    """mlf-spec's outcome for an encode case: the reading of what its writer writes."""
    from ..canonical_cache import decode_cache, encode_cache
    from ..folders import scratch

    with scratch() as base:
        out = base / "out"
        out.mkdir()
        try:
            encode_cache(reading, options, out)
            return {"outcome": "accept", "reading": decode_cache(out)}
        except MlfError as exc:
            return {"outcome": "reject", "error_class": canonical.error_class(exc)}


def build_cache_encode(c: Collector) -> None:
    """Add an encode case per cache of :data:`ENCODE_CASES`: its reading with data in, the
    same reading (dump_tensor_cache's layout) expected from what the testee writes."""
    import json

    by_id = {vc.id: vc for vc in cases.all_cases()}
    for cid, options in ENCODE_CASES.items():
        vc = by_id[cid]
        vid = f"tensor-cache.encode.{cid}"
        reading = reading_with_data(cid, vc.files)
        expected = encode_outcome(reading, options)
        without = {**reading, "tensors": [{k: v for k, v in t.items() if k != "data"} for t in reading["tensors"]]}
        if expected != {"outcome": "accept", "reading": without}:
            raise AssertionError(f"vector {vid}: mlf-spec does not write back what it read: {expected}")
        version = str(reading["version"])
        data = (json.dumps(reading, indent=1, ensure_ascii=False) + "\n").encode("utf-8")
        case = {"id": vid, "format": "tensor-cache", "role": "encode", "input": vid + ".reading.json",
                "input_sha256": canonical.sha256(data), "options": dict(options), "scope": {"version": [version]},
                "tvm": TVM_OF_VERSION[version], "features": {"version": [version], "cache_rule": ["writer"]},
                "description": f"write {vc.doc}", "spec_ref": doc_ref("cache_layouts"), "broken_kind": None,
                "expected": expected}
        c.items.append(Built(case, data))
        c.ids.add(vid)


__all__ = ["ENCODE_CASES", "V1_NAMES", "build_cache", "build_cache_bounds", "build_cache_encode", "encode_outcome", "folder_outcome",
           "reading_with_data"]
