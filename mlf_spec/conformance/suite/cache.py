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
            features = {"version": [version], "rule": [vc.rule], "finding": sorted(set(vc.findings))}
            case = {"id": vid, "format": "tensor-cache", "role": "decode", "input": folder,
                    "input_sha256": folder_sha256(files), "options": {}, "scope": {"version": [version]},
                    "tvm": TVM_OF_VERSION[version], "features": {k: v for k, v in features.items() if v},
                    "description": vc.doc, "spec_ref": _spec_ref(vc),
                    "broken_kind": vc.rule if meant == "reject" else None, "expected": expected}
            c.items.append(Built(case, b"", files))
            c.ids.add(vid)


__all__ = ["V1_NAMES", "build_cache", "folder_outcome"]
