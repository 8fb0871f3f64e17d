"""``mlf-spec cache check``: every rule of a tensor cache as findings
(spec/findings/cache_check.yaml), and with ``tvm`` the verdict of that version's loaders."""

from __future__ import annotations

import os

from mlf_spec.findings import ArtifactReport, Collector
from mlf_spec.generated import cache_check_findings as _findings

from . import codec


def check(path: str | os.PathLike[str], *, tvm: str | None = None, name: str | None = None,
          md5: bool = True, max_index: int = codec.MAX_INDEX) -> ArtifactReport:
    """Check the cache at ``path`` (a folder or its index). Unreadable input (an index that
    is not JSON or not a cache, a dataPath that leaves the folder) raises MlfError; so does
    an index of more than ``max_index`` bytes."""
    with codec.open(path, strict=False, max_index=max_index) as lazy:
        col = Collector(_findings.FINDINGS)
        for p in lazy.problems(md5=md5):
            col.add(p.code, p.path, p.message, offset=p.offset, member=_member(lazy, p.file))
        report = ArtifactReport(str(path) if name is None else name, col.findings, kind="tensor-cache")
        if tvm is not None:
            from .verdict import verdict

            report.tvm = verdict(lazy, tvm)
    return report


def _member(lazy: codec.LazyCache, file: str | None) -> str:
    """The file of the cache a finding is about (the index when none is named)."""
    if file is None:
        return lazy.index_name
    return os.path.relpath(file, lazy.folder)
