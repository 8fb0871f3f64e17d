"""A tensor cache read where it is published: :func:`open_remote` reads the index and learns
each shard's size (and on the Hub its LFS SHA-256) without a shard byte; arrays, raw bytes and
whole shards are read by ranged or streaming GETs on demand. :class:`RemoteCache` is a
:class:`mlf_spec.cache.codec.LazyCache`: the cache's rules (``mlf_spec.cache.rules``), the
index reading (``mlf_spec.cache.index.parse``), ``dump``, ``diff``, ``convert`` and the
``--tvm`` verdict apply to it unchanged."""

from __future__ import annotations

import concurrent.futures
import os
import tempfile
from collections.abc import Iterator
from typing import Any

import numpy as np

from mlf_spec.cache.codec import MAX_OPEN, LazyCache, refuse_fatal
from mlf_spec.cache.folder import UnsafePathError, data_path_problem
from mlf_spec.cache.index import INDEX_NAMES, LATEST, CacheIndex, TensorEntry, parse
from mlf_spec.errors import MlfError

from .stores import FsspecStore, HubStore, Options, RemoteError, Stat, Store
from .urls import INDEX_CANDIDATES, Location
from .urls import parse as parse_url

_MAX_INDEX = 256 << 20  # as mlf_spec.cache.codec: an index larger than this is refused unread
_WHOLE_SHARD = 256 << 20  # arrays(): shards up to this size are streamed whole into their stand-in
_HEADS = 8  # HEAD requests in flight at once (HTTP sources without a listing)


class RemoteFolder:
    """The folder URL of a remote cache; ``folder / "name"`` is the URL of a file in it."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def __truediv__(self, rel: str) -> str:
        return self.store.url(rel)

    def __str__(self) -> str:
        return self.store.base

    def __fspath__(self) -> str:
        return self.store.base


class _NoFolder:
    """The local folder handle a remote cache does not have (nothing to open or close)."""

    fd = -1

    def close(self) -> None:
        """Nothing to close."""

    def open(self, rel: str, *, field: str | None = None) -> int | None:
        """A remote cache opens no local file."""
        raise AssertionError("a remote cache has no local files")


class RemoteCache(LazyCache):
    """An opened remote cache (see the module docstring); ``store`` counts what was read.

    Decoding is LazyCache's own: each shard is backed by a sparse, unlinked temporary file of the
    shard's size, into which the bytes a tensor needs are fetched (one ranged GET) when LazyCache
    checks that the tensor lies inside its shard, before it reads them; so whatever LazyCache
    does with a tensor's bytes (its dtypes, encodings, shapes) applies to remote caches as it is.
    Whole shards are streamed (:meth:`shard_blocks`), never staged."""

    def __init__(self, store: Store, index_name: str, index: CacheIndex, location: Location) -> None:
        # a URL folder and no local handle where LazyCache keeps a Path and a Folder: the methods
        # that use them (shard files, sizes, whole-shard reads) are overridden here
        super().__init__(RemoteFolder(store), index_name, index, _NoFolder())  # type: ignore[arg-type]  # see above
        self.store, self.location = store, location
        self._stats: dict[int, Stat | None] | None = None
        self._have: dict[int, list[tuple[int, int]]] = {}

    # -- sizes ---------------------------------------------------------------------------
    def _check_path(self, i: int) -> str:
        shard = self.index.shards[i]
        problem = data_path_problem(shard.data_path)
        if problem is None and shard.data_path.split("/")[0] in ("", "."):
            problem = "a dataPath that does not name a file below the cache folder"
        if problem is None and "://" in shard.data_path:
            problem = "a dataPath that is a URL leaves the cache folder"
        if problem:
            raise self.index.error(f"{problem}: {shard.data_path!r}", f"{shard.path}.dataPath", UnsafePathError)
        return shard.data_path

    def stats(self) -> dict[int, Stat | None]:
        """Every shard's Stat (None: missing): one listing, or HEADs a few at a time."""
        if self._stats is None:
            rels = [self._check_path(i) for i in range(len(self.index.shards))]
            listing = self.store.listing()
            if listing is not None:
                self._stats = {i: listing.get(rel) for i, rel in enumerate(rels)}
            else:
                unique = sorted(set(rels))
                with concurrent.futures.ThreadPoolExecutor(min(_HEADS, max(1, len(unique)))) as pool:
                    found = dict(zip(unique, pool.map(self.store.stat, unique)))
                self._stats = {i: found[rel] for i, rel in enumerate(rels)}
        return self._stats

    def stat(self, i: int) -> Stat | None:
        """Shard ``i``'s Stat (None: missing)."""
        return self.stats()[i]

    def shard_size(self, i: int) -> int | None:
        """The size the server gives for shard ``i`` (None: it does not exist)."""
        st = self.stat(i)
        return None if st is None else st.size

    # -- bytes ---------------------------------------------------------------------------
    def _fd(self, i: int) -> int | None:
        """The sparse local stand-in of shard ``i`` (None: the shard is missing)."""
        if i in self._absent:
            return None
        if i in self._fds:
            self._fds.move_to_end(i)
        else:
            size = self.shard_size(i)
            if size is None:
                self._absent.add(i)
                return None
            while len(self._fds) >= MAX_OPEN:  # as LazyCache: never one descriptor per shard
                old, old_fd = self._fds.popitem(last=False)
                os.close(old_fd)
                self._have.pop(old, None)  # its fetched bytes went with the stand-in
            fd, name = tempfile.mkstemp(prefix="mlf-spec-remote-", suffix=".shard")
            os.unlink(name)
            os.ftruncate(fd, size)
            self._fds[i] = fd
        return self._fds[i]

    def _covered(self, i: int, start: int, end: int) -> bool:
        return any(a <= start and end <= b for a, b in self._have.get(i, ()))

    def _fetch(self, i: int, start: int, n: int) -> None:
        """Bytes ``start..start+n`` of shard ``i`` into its stand-in (once)."""
        if n <= 0 or self._covered(i, start, start + n):
            return
        fd = self._fd(i)
        assert fd is not None
        data = self.store.read(self.index.shards[i].data_path, start, start + n)
        os.pwrite(fd, data, start)
        self._have.setdefault(i, []).append((start, start + n))

    def _require_in_shard(self, t: TensorEntry) -> None:
        super()._require_in_shard(t)
        self._fetch(t.shard, t.offset, t.nbytes)

    def read_range(self, i: int, start: int, n: int) -> bytes:
        """``n`` bytes of shard ``i`` from ``start`` (one ranged GET, unless already fetched)."""
        fd = self._fds.get(i)
        if fd is not None and self._covered(i, start, start + n):
            return os.pread(fd, n, start)
        return self.store.read(self.index.shards[i].data_path, start, start + n)

    def shard_blocks(self, i: int, block: int = 1 << 20) -> Iterator[memoryview]:
        """Shard ``i``'s bytes as they arrive (one streaming GET), each block valid until the
        next is asked for (the buffer is reused): RemoteError if the response ends early or the
        file changed on the server meanwhile (the GET's ETag, else a HEAD after it)."""
        st = self.stat(i)
        if st is None:
            return
        rel = self.index.shards[i].data_path
        got, confirmed = 0, False
        pieces = self.store.stream(rel, block, st.etag)
        try:
            while True:
                try:
                    piece = next(pieces)
                except StopIteration as stop:
                    confirmed = bool(stop.value)
                    break
                got += len(piece)
                if got > st.size:
                    raise RemoteError(f"the response holds more than the {st.size} bytes the server announced "
                                      "(the file changed meanwhile?)", file=self.store.url(rel))
                yield piece if isinstance(piece, memoryview) else memoryview(piece)
        finally:
            pieces.close()
        if got != st.size:
            raise RemoteError(f"the response ended after {got} of {st.size} bytes (truncated)",
                              file=self.store.url(rel))
        if not confirmed:
            self.recheck(i)

    def recheck(self, i: int) -> None:
        """RemoteError if shard ``i`` is no longer the file first seen (a new ETag or size)."""
        st = self.stat(i)
        if st is None or st.etag is None or not getattr(self.store, "http", False):
            return
        rel = self.index.shards[i].data_path
        now = self.store.stat(rel)  # over HTTP every stat is a HEAD
        if now is None or now.etag != st.etag or now.size != st.size:
            after = "gone" if now is None else f"ETag {now.etag}, {now.size} bytes"
            raise RemoteError(f"the file changed on the server while it was read (ETag {st.etag}, {st.size} bytes; "
                              f"now {after}): read it again", file=self.store.url(rel))

    def arrays(self) -> dict[str, np.ndarray]:
        """Every tensor by name (the last of a repeated name), each shard streamed once into its
        stand-in, decoded, then dropped."""
        keep = {(t.shard, t.position) for t in self.by_name.values()}  # records are made on demand: no id()
        out: dict[str, np.ndarray] = {}
        for i, shard in enumerate(self.index.shards):
            wanted = [t for t in shard.tensors if (t.shard, t.position) in keep]
            size = self.shard_size(i)
            if wanted and size is not None and size <= _WHOLE_SHARD and not self._covered(i, 0, size):
                fd = self._fd(i)
                assert fd is not None
                at = 0
                for block in self.shard_blocks(i):
                    os.pwrite(fd, block, at)
                    at += len(block)
                self._have.setdefault(i, []).append((0, size))
            for t in wanted:
                out[t.name] = self.array(t)
            fd = self._fds.get(i)
            if fd is not None:  # drop the shard's bytes: memory stays one shard
                os.ftruncate(fd, 0)
                os.ftruncate(fd, size or 0)
                self._have.pop(i, None)
        return {name: out[name] for name in self.by_name}

    def close(self) -> None:
        """Close the stand-ins and release the store's connections."""
        super().close()
        self._have.clear()
        self.store.close()

    def __enter__(self) -> RemoteCache:
        return self


def open_store(loc: Location, folder: str, options: Options) -> Store:
    """The store of ``folder`` (for the Hub a path inside the repository, otherwise a URL)."""
    if loc.kind == "hf":
        return HubStore(loc, folder, options)
    if loc.kind == "http":
        from .http_store import HttpStore

        return HttpStore(folder, options)
    try:
        return FsspecStore(folder, options)
    except ImportError as exc:
        raise RemoteError(f"reading this URL needs mlf-spec[remote] (fsspec): {exc}", file=loc.url) from None


def locate(url: str, options: Options) -> tuple[Store, str, Location, Stat | None]:
    """The store of the cache's folder, its index name and the index's Stat where finding it
    gave one: a URL that names a ``.json`` file is the index; a folder holds tensor-cache.json,
    else ndarray-cache.json."""
    loc = parse_url(url)
    names = list(INDEX_CANDIDATES)
    if loc.kind == "hf":
        folder, _, leaf = loc.path.rstrip("/").rpartition("/") if loc.names_index else (loc.path, "", "")
        store = open_store(loc, folder, options)
        tree = store.listing() or {}
        if loc.names_index:
            if leaf not in tree:
                raise RemoteError("no such file in the repository at this revision", file=store.url(leaf))
            return store, leaf, loc, tree[leaf]
        for name in names:
            if name in tree:
                return store, name, loc, tree[name]
        raise _no_index(store, tree)
    base, leaf = (url.rstrip("/").rsplit("/", 1) if loc.names_index else (url.rstrip("/"), ""))
    store = open_store(loc, base, options)
    if leaf:
        return store, leaf, loc, None
    try:
        listing = store.listing()
        for name in names:
            st = listing.get(name) if listing is not None else store.stat(name)
            if st is not None:
                return store, name, loc, st
        raise _no_index(store, listing or {})
    except BaseException:
        store.close()  # its kept connections
        raise


def _no_index(store: Store, listing: dict[str, Stat]) -> MlfError:
    shards = sorted(n for n in listing if n.startswith("params_shard_") and n.endswith(".bin"))
    more = f" ({len(shards)} params_shard_*.bin files are there: the index was not uploaded)" if shards else ""
    return MlfError(f"no {INDEX_NAMES[LATEST]} or {INDEX_NAMES[1]} in this folder: not a tensor cache{more}",
                    file=store.base)


def open_remote(url: str, *, strict: bool = True, options: Options | None = None) -> RemoteCache:
    """Open the remote cache at ``url`` (hf://, https://, an fsspec URL), reading the index
    only. ``strict`` as for :func:`mlf_spec.cache.open`: the first problem that stops TVM's
    loaders is raised (the shards' sizes are asked for, no shard byte is read)."""
    from . import stores

    options = options or stores.DEFAULTS
    store, name, loc, st = locate(url, options)
    try:
        if st is None:
            listing = store.listing()
            st = listing.get(name) if listing is not None else None
        if st is None:
            st = store.stat(name)
        if st is None:
            raise MlfError("no such file", file=store.url(name))
        if st.size > _MAX_INDEX:
            raise MlfError(f"the index is {st.size} bytes, more than the {_MAX_INDEX} mlf-spec reads",
                           file=store.url(name))
        raw = store.read(name, 0, st.size)
        if raw.lstrip()[:1] == b"<":
            raise MlfError("the server sent an HTML page, not a cache index (an error or login page?)",
                           file=store.url(name))
        index = parse(raw, store.url(name), name=name)
        lazy = RemoteCache(store, name, index, loc)
    except BaseException:
        store.close()
        raise
    if strict:
        refuse_fatal(lazy)
    return lazy


def describe_read(lazy: RemoteCache) -> dict[str, Any]:
    """What was read: bytes of file data, requests, and the total size of the cache's files."""
    total = sum(st.size for st in lazy.stats().values() if st is not None)
    return {"bytes_read": lazy.store.bytes_read, "requests": lazy.store.requests,
            "shard_bytes": total, "index_bytes": len(lazy.index.raw)}
