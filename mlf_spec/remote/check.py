"""``mlf-spec check URL``: the findings of a remote tensor cache that need no tensor bytes (the
cache's own rules over the index and the shard sizes the server gives, plus what the server
sends where a shard should be), and on request a sample of records (``sample``), every shard
streamed and hashed (``verify``) or a comparison with a pinned manifest (``manifest``); the
report says how many bytes were read."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator
from typing import Any

from mlf_spec.cache import rules
from mlf_spec.findings import ArtifactReport, Collector
from mlf_spec.generated import cache_check_findings as _cache_findings
from mlf_spec.generated import remote_check_findings as _remote_findings

from . import manifest as _manifest
from . import sample as _sample
from .cache import RemoteCache, describe_read, open_remote
from .stores import Options
from .verify import Digest, digests, md5_problems

FINDINGS = {**_cache_findings.FINDINGS, **_remote_findings.FINDINGS}
_PEEK = 512  # bytes read from a shard whose size or type says it may be no shard at all
_LFS = b"version https://git-lfs.github.com/spec/"


def served_as(head: bytes, mimetype: str | None) -> str | None:
    """``html`` or ``lfs-pointer`` when the first bytes of a file are no shard's, else None."""
    if head.startswith(_LFS):
        return "lfs-pointer"
    text = head.lstrip()[:64].lower()
    if text.startswith((b"<!doctype html", b"<html", b"<head", b"<body")) or (
            mimetype is not None and mimetype.split(";")[0].strip() == "text/html" and text.startswith(b"<")):
        return "html"
    return None


def served_problems(lazy: RemoteCache) -> Iterator[rules.Problem]:
    """A shard whose size disagrees or that the server types as HTML: its first bytes are read
    to say whether it is an HTML page or an LFS pointer."""
    for i, shard in enumerate(lazy.index.shards):
        st = lazy.stat(i)
        if st is None or st.size == 0:
            continue
        htmlish = st.mimetype is not None and "html" in st.mimetype
        if st.size == shard.nbytes and not htmlish:
            continue
        head = lazy.read_range(i, 0, min(st.size, _PEEK))
        what = served_as(head, st.mimetype)
        url = lazy.store.url(shard.data_path)
        if what == "html":
            yield rules.Problem("remote.served-html", f"{shard.path}.dataPath",
                                f"the server sends an HTML page of {st.size} bytes where the shard of {shard.nbytes} "
                                "bytes should be", url, 0)
        elif what == "lfs-pointer":
            yield rules.Problem("remote.lfs-pointer", f"{shard.path}.dataPath",
                                f"the server sends a Git LFS pointer ({st.size} bytes), not the shard's "
                                f"{shard.nbytes} bytes: the files were copied without their LFS objects", url, 0)


class _VerdictView:
    """What the --tvm verdict reads of a cache, with the MD5 facts taken from the digests
    already computed (or not compared, without --verify) rather than streaming again."""

    def __init__(self, lazy: RemoteCache, found: dict[int, Digest] | None) -> None:
        shards = []
        for i, s in enumerate(lazy.index.shards):
            d = None if found is None else found.get(i)
            bad = d is not None and s.md5sum is not None and d.md5 != s.md5sum.lower()
            # md5sum "" never equals a digest: the verdict sees a mismatch; None: not compared
            shards.append(dataclasses.replace(s, md5sum="" if bad else None))
        self.index = dataclasses.replace(lazy.index, shards=shards)
        self._lazy = lazy

    def __getattr__(self, name: str) -> Any:
        return getattr(self._lazy, name)  # everything else the verdict reads: the cache's own

    def shard_blocks(self, i: int) -> Iterable[memoryview]:
        """No bytes: the MD5 fact is already decided (see the class docstring)."""
        return ()


def check(url: str, *, tvm: str | None = None, name: str | None = None, sample: int = 0, verify: bool = False,
          manifest: dict[str, Any] | None = None, options: Options | None = None, jobs: int | None = None,
          progress: Any = None) -> tuple[ArtifactReport, dict[str, Any]]:
    """Check the remote cache at ``url``: the report and what was read (``bytes_read``,
    ``requests``, ``sampled`` records, whether md5sum was ``verified``). Unreadable input or
    an unreadable server raises MlfError."""
    with open_remote(url, strict=False, options=options) as lazy:
        col = Collector(FINDINGS)
        member = lazy.index_name

        def add(p: rules.Problem) -> None:
            col.add(p.code, p.path, p.message, offset=p.offset, member=_member(lazy, p.file) or member)

        for p in lazy.problems(md5=False):
            add(p)
        for p in served_problems(lazy):
            add(p)
        sampled = [_sample.read(lazy, t) for t in _sample.choose(lazy, sample)] if sample else []
        found: dict[int, Digest] | None = None
        need = set(range(len(lazy.index.shards))) if verify else (
            _manifest.needs_bytes(lazy, manifest) if manifest is not None else set())
        if need:
            bar = progress(sum(lazy.shard_size(i) or 0 for i in need)) if progress is not None else None
            try:
                found = digests(lazy, jobs=jobs, progress=bar, only=need, pin=manifest is not None)
            finally:
                if bar is not None:
                    bar.close()
            if verify:
                for p in md5_problems(lazy, found):
                    add(p)
        diffs = _manifest.differences(lazy, manifest, found or {}) if manifest is not None else []
        for rel, what in diffs:
            col.add("remote.manifest", "", what, member=rel)
        report = ArtifactReport(url if name is None else name, col.findings, kind="tensor-cache")
        if tvm is not None:
            from mlf_spec.cache.verdict import verdict

            view = _VerdictView(lazy, found if verify else None)
            report.tvm = verdict(view, tvm)  # type: ignore[arg-type]  # the attributes verdict reads, not a LazyCache
        info = {**describe_read(lazy), "source": lazy.location.kind, "store": lazy.store.kind, "verified": verify,
                "sampled": sampled, "manifest": None if manifest is None else {"differences": len(diffs)}}
    return report, info


def _member(lazy: RemoteCache, file: str | None) -> str | None:
    if file is None:
        return None
    base = str(lazy.folder) + "/"
    return file[len(base):] if file.startswith(base) else file


def summary(info: dict[str, Any]) -> str:
    """The line that says what a remote check read."""
    how = {"hub": "the index, and sizes and LFS SHA-256 from the Hub's tree API",
           "fsspec": "the index and the shard sizes"}.get(info.get("store", ""), "the index and the shard sizes")
    parts = [f"read {info['bytes_read']:,} bytes of {info['index_bytes'] + info['shard_bytes']:,} in "
             f"{info['requests']:,} requests ({how}"]
    if info["sampled"]:
        parts.append(f", {len(info['sampled'])} sampled records")
    if info["verified"]:
        parts.append(", every shard streamed: md5sum checked")
    parts.append(")")
    if not info["verified"]:
        parts.append("; md5sum not checked (pass --verify to stream every shard)")
    return "".join(parts)
