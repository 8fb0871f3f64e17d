"""``--verify``: every shard streamed once, a few at a time, hashed as it arrives (MD5 for the
index's md5sum, SHA-256 for the Hub's LFS record and manifests, SHA-384 for SRI): memory
stays bounded by ``jobs`` x ``chunk``, whatever the shard sizes."""

from __future__ import annotations

import base64
import concurrent.futures
import hashlib
import os
from dataclasses import dataclass

from mlf_spec.cache import rules

from .cache import RemoteCache
from .progress import Progress
from .stores import RemoteError


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


#: shards streamed at once: MD5 is the limit on a fast link and runs on one core per stream, so
#: one per core this process may use, and two more so that a stream waiting on the network
#: leaves no core idle (at most 8: past that a server sees a crowd, not a client)
JOBS = min(8, _cores() + 2)
#: the read size of each stream (its one buffer, reused): hashlib releases the GIL for it
CHUNK = 1 << 20


@dataclass(frozen=True)
class Digest:
    """Hashes of a file's bytes."""

    size: int
    md5: str
    sha256: str
    sha384: str

    @property
    def sri(self) -> str:
        """The Subresource Integrity value (``sha384-<base64>``) that web pages use."""
        return "sha384-" + base64.b64encode(bytes.fromhex(self.sha384)).decode()


def digest_bytes(data: bytes) -> Digest:
    """The Digest of bytes held in memory."""
    return Digest(len(data), hashlib.md5(data, usedforsecurity=False).hexdigest(), hashlib.sha256(data).hexdigest(),
                  hashlib.sha384(data).hexdigest())


def digests(lazy: RemoteCache, *, jobs: int | None = None, chunk: int = CHUNK, progress: Progress | None = None,
            only: set[int] | None = None, pin: bool = False) -> dict[int, Digest]:
    """Each present shard's Digest (shard index -> Digest; a dataPath named twice is read once),
    ``jobs`` shards at a time (None: :data:`JOBS`): MD5 always; SHA-256 only where there is a
    value to check it against (the Hub's record of the LFS object; over HTTP or from an object
    store there is none) or with ``pin``; SHA-384 with ``pin`` only (the others are "").
    RemoteError if a response is cut short, a file changes meanwhile, or the bytes differ from
    the Hub's LFS SHA-256."""
    stats = lazy.stats()
    first: dict[str, int] = {}
    for i, shard in enumerate(lazy.index.shards):
        if stats[i] is not None and (only is None or i in only):
            first.setdefault(shard.data_path, i)

    def one(i: int) -> Digest:
        st = stats[i]
        hashes = [hashlib.md5(usedforsecurity=False)]
        if pin or (st is not None and st.sha256 is not None):
            hashes.append(hashlib.sha256())
        if pin:
            hashes.append(hashlib.sha384())
        n = 0
        for block in lazy.shard_blocks(i, chunk):
            for h in hashes:
                h.update(block)
            n += len(block)
            if progress is not None:
                progress.add(len(block))
        if progress is not None:
            progress.add(0, file_done=True)
        hex_ = [h.hexdigest() for h in hashes] + ["", ""]
        d = Digest(n, hex_[0], hex_[1], hex_[2])
        if st is not None and st.sha256 is not None and st.sha256.lower() != d.sha256:
            raise RemoteError(f"the bytes served have SHA-256 {d.sha256}, the Hub's LFS record says {st.sha256} "
                              "(a proxy or mirror changed them?)", file=lazy.store.url(lazy.index.shards[i].data_path))
        return d

    out: dict[int, Digest] = {}
    order = sorted(first.values())
    with concurrent.futures.ThreadPoolExecutor(max(1, min(jobs or JOBS, len(order) or 1))) as pool:
        futures = {pool.submit(one, i): i for i in order}
        try:
            for fut in concurrent.futures.as_completed(futures):
                out[futures[fut]] = fut.result()
        except BaseException:
            for f in futures:
                f.cancel()
            raise
    for i, shard in enumerate(lazy.index.shards):
        if i not in out and shard.data_path in first and first[shard.data_path] in out:
            out[i] = out[first[shard.data_path]]
    return out


def md5_problems(lazy: RemoteCache, found: dict[int, Digest]) -> list[rules.Problem]:
    """shard.md5 findings from the digests (the check of mlf_spec.cache.rules.md5_problems,
    over bytes already streamed once)."""
    out = []
    for i, shard in enumerate(lazy.index.shards):
        d = found.get(i)
        if d is None or shard.md5sum is None:
            continue
        if d.md5 != shard.md5sum.lower():
            out.append(rules.Problem("shard.md5", f"{shard.path}.md5sum",
                                     f"the shard's MD5 is {d.md5}, its record says {shard.md5sum}",
                                     lazy.store.url(shard.data_path), 0))
    return out
