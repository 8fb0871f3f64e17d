"""Where the files of a remote cache are read from: the Hub through ``huggingface_hub`` (the
tree API for sizes and LFS SHA-256, resolve URLs for bytes), HTTP(S) through the standard
library's client (:mod:`.http_store`: a HEAD per file, ranged and streamed GETs), any other URL
through ``fsspec`` (S3 by ``s3fs``, ``memory://`` ...). A store reads a folder's files by relative name, counts the bytes and requests it made, retries what is worth
retrying (429, 5xx, timeouts, dropped connections) with exponential backoff, and turns every
failure into one :class:`RemoteError` naming the URL and what failed."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, TypeVar

from mlf_spec.errors import MlfError

from .urls import Location

T = TypeVar("T")
#: a piece of a streamed file: bytes, or a view of a buffer valid until the next piece
Buffer = bytes | memoryview
#: statuses a retry may cure (rate limits, server errors)
RETRY_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})
_TOKEN_HINT = "a private or gated repository needs a token: set HF_TOKEN or run `hf auth login`"


class RemoteError(MlfError):
    """A remote source could not be read (network, server, permissions): the input is
    unreadable (exit status 2), not the cache at fault."""


@dataclass(frozen=True)
class Stat:
    """What a listing or a HEAD says of a file: ``size``; ``etag`` (HTTP) to notice a file
    replaced meanwhile; on the Hub ``sha256`` and ``lfs`` (the file is an LFS object);
    ``mimetype`` where the server gives one."""

    size: int
    etag: str | None = None
    sha256: str | None = None
    lfs: bool = False
    mimetype: str | None = None


@dataclass
class Options:
    """How hard to try: seconds before a request times out, retries of a failed request,
    the first backoff delay (doubled each retry, with jitter; a Retry-After is honoured up to
    ``max_wait``)."""

    timeout: float = 30.0
    retries: int = 4
    backoff: float = 0.5
    max_wait: float = 8.0


#: the options of a source opened without any (``mlf_spec.cache.open(url)``; the CLI sets them
#: from --timeout and --retries)
DEFAULTS = Options()


class Store:
    """The files of one folder somewhere; subclasses read them."""

    kind = "store"

    def __init__(self, base: str, options: Options) -> None:
        self.base = base.rstrip("/")
        self.options = options
        self.bytes_read = 0
        self.requests = 0
        self._lock = threading.Lock()

    def url(self, rel: str) -> str:
        """The URL of the file ``rel`` of the folder."""
        return f"{self.base}/{rel}"

    def _count(self, nbytes: int, requests: int = 1) -> None:
        with self._lock:
            self.bytes_read += nbytes
            self.requests += requests

    def listing(self) -> dict[str, Stat] | None:
        """Every file below the folder by relative name, when one request (or a few pages)
        gives it; None where only per-file requests can."""
        return None

    def stat(self, rel: str) -> Stat | None:
        """The file's size and identity (None: it does not exist)."""
        raise NotImplementedError

    def read(self, rel: str, start: int, end: int) -> bytes:
        """Bytes ``start..end`` of the file (exactly that many, else RemoteError)."""
        raise NotImplementedError

    def stream(self, rel: str, chunk: int, etag: str | None = None) -> Generator[Buffer, None, bool]:
        """The whole file in pieces of at most about ``chunk`` bytes, as they arrive (a piece
        may be a view of a buffer reused for the next: use it before asking for the next).
        Returns whether the response itself showed the file is still the one of ``etag``."""
        raise NotImplementedError

    def close(self) -> None:
        """Release connections."""

    # -- retrying -----------------------------------------------------------------------
    def retrying(self, what: str, url: str, fn: Callable[[], T]) -> T:
        """``fn()``, retried with backoff while its failure is transient; the last failure as
        one RemoteError ``<what> <url>: <why>``."""
        tries = 0
        while True:
            try:
                return fn()
            except RemoteError:
                raise
            except FileNotFoundError:
                raise
            except Exception as exc:  # noqa: BLE001 - every client library has its own errors
                status, transient, why, wait = describe(exc)
                if transient and tries < self.options.retries:
                    delay = min(self.options.max_wait, self.options.backoff * (2 ** tries))
                    delay = delay * (0.5 + random.random() / 2) if wait is None else min(wait, self.options.max_wait)
                    time.sleep(delay)
                    tries += 1
                    continue
                after = f" after {tries + 1} tries" if tries else ""
                raise RemoteError(f"{what} failed{after}: {why}", file=url) from None


def describe(exc: BaseException) -> tuple[int | None, bool, str, float | None]:
    """``(HTTP status or None, transient?, one-line reason, Retry-After seconds)`` of a
    client library's exception."""
    import asyncio
    import socket

    status = status_of(exc)
    retry_after = _retry_after(exc)
    name = type(exc).__name__
    if status is not None:
        why = f"HTTP {status}"
        if status in (401, 403):
            why += f" (access denied; {_TOKEN_HINT})"
        elif status == 404:
            why += " (not found)"
        elif status == 429:
            why += " (rate limited)"
        return status, status in RETRY_STATUS, why, retry_after
    if isinstance(exc, (asyncio.TimeoutError, socket.timeout, TimeoutError)) or "Timeout" in name:
        return None, True, "timed out", None
    if "Payload" in name or "IncompleteRead" in name or "not completed" in str(exc):
        return None, True, f"the response ended early (truncated: {_short(exc)})", None
    if isinstance(exc, (ConnectionError, EOFError)) or any(
            k in name for k in ("Connect", "Disconnect", "Payload", "RemoteProtocol", "ReadError", "Protocol")):
        return None, True, f"the connection failed ({name}: {_short(exc)})", None
    if isinstance(exc, PermissionError):
        return None, False, f"access denied ({_short(exc)})", None
    return None, False, f"{name}: {_short(exc)}", None


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:200] or type(exc).__name__


def status_of(exc: BaseException) -> int | None:
    for attr in ("status", "status_code"):
        v = getattr(exc, attr, None)
        if isinstance(v, int):
            return v
    resp = getattr(exc, "response", None)
    v = getattr(resp, "status_code", None)
    if isinstance(v, int):
        return v
    if isinstance(resp, dict):  # botocore's ClientError
        code = resp.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if isinstance(code, int):
            return code
    return None


def _retry_after(exc: BaseException) -> float | None:
    resp = getattr(exc, "response", None)
    headers = getattr(resp, "headers", None) or getattr(exc, "headers", None)
    if headers is None:
        return None
    try:
        value = headers.get("Retry-After")
    except AttributeError:
        return None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


# -- the Hub -----------------------------------------------------------------------------

class HubStore(Store):
    """A folder of a Hub repository at one commit (the revision is resolved once, so that every
    read sees the same files). Sizes and LFS SHA-256 come from one tree listing; bytes from the
    resolve URLs (which redirect LFS files to the Hub's CDN)."""

    kind = "hub"

    def __init__(self, loc: Location, folder: str, options: Options) -> None:
        from huggingface_hub import HfApi

        assert loc.repo_id is not None
        self.repo_id: str = loc.repo_id
        self.loc, self.folder = loc, folder.strip("/")
        self.api = HfApi()  # endpoint: HF_ENDPOINT; token: HF_TOKEN or the saved login
        where = f"hf://{loc.repo_id}" + (f"@{loc.revision}" if loc.revision else "")
        super().__init__(where + (f"/{self.folder}" if self.folder else ""), options)
        info = self._hub("read the repository", where, lambda: self.api.repo_info(
            self.repo_id, revision=loc.revision, repo_type=loc.repo_type, timeout=options.timeout))
        self.commit: str = getattr(info, "sha", None) or (loc.revision or "main")
        self._listing: dict[str, Stat] | None = None

    def _hub(self, what: str, url: str, fn: Callable[[], T], *, retry: bool = True) -> T:
        """Call huggingface_hub, its errors as RemoteError; ``retry``: with backoff (reads
        pass False: http_backoff retries 429/5xx itself)."""
        from huggingface_hub.errors import (
            EntryNotFoundError,
            GatedRepoError,
            RepositoryNotFoundError,
            RevisionNotFoundError,
        )

        def call() -> T:
            try:
                return fn()
            except GatedRepoError:
                raise RemoteError(f"{what} failed: the repository is gated ({_TOKEN_HINT})", file=url) from None
            except RepositoryNotFoundError:
                raise RemoteError(f"{what} failed: no such repository, or it is private ({_TOKEN_HINT})",
                                  file=url) from None
            except RevisionNotFoundError:
                raise RemoteError(f"{what} failed: no such revision {self.loc.revision!r}", file=url) from None
            except EntryNotFoundError:
                raise FileNotFoundError(url) from None

        with _hub_timeouts(self.options):
            if retry:
                return self.retrying(what, url, call)
            try:
                return call()
            except (RemoteError, FileNotFoundError):
                raise
            except Exception as exc:  # noqa: BLE001 - the client's errors, named
                _s, _t, why, _w = describe(exc)
                raise RemoteError(f"{what} failed: {why}", file=url) from None

    def listing(self) -> dict[str, Stat]:
        """Every file below the folder at the commit: size, LFS SHA-256 (one tree listing)."""
        if self._listing is None:
            from huggingface_hub.hf_api import RepoFile

            def walk() -> dict[str, Stat]:
                out: dict[str, Stat] = {}
                for entry in self.api.list_repo_tree(self.repo_id, path_in_repo=self.folder or None,
                                                     revision=self.commit, repo_type=self.loc.repo_type,
                                                     recursive=True):
                    if not isinstance(entry, RepoFile):
                        continue
                    rel = entry.path[len(self.folder) + 1:] if self.folder else entry.path
                    lfs = entry.lfs
                    out[rel] = Stat(entry.size, entry.blob_id, lfs.sha256 if lfs else None, lfs is not None)
                return out

            try:
                self._listing = self._hub("list the repository folder", self.base, walk)
            except FileNotFoundError:
                raise RemoteError("list the repository folder failed: no such folder at this revision",
                                  file=self.base) from None
            self._count(0)
        return self._listing

    def stat(self, rel: str) -> Stat | None:
        """From the listing (the tree API): no request per file."""
        return self.listing().get(rel)

    def url(self, rel: str) -> str:
        """The ``hf://`` name of the file (as the user wrote the source)."""
        return f"{self.base}/{rel}"

    def _resolve(self, rel: str) -> str:
        from huggingface_hub import hf_hub_url

        path = f"{self.folder}/{rel}" if self.folder else rel
        return hf_hub_url(self.repo_id, path, repo_type=self.loc.repo_type, revision=self.commit,
                          endpoint=self.api.endpoint)

    def _headers(self, extra: dict[str, str]) -> dict[str, str]:
        from huggingface_hub.utils import build_hf_headers

        return {**build_hf_headers(), **extra}

    def _backoff(self) -> dict[str, Any]:
        o = self.options
        return {"max_retries": o.retries, "base_wait_time": o.backoff, "max_wait_time": o.max_wait,
                "retry_on_status_codes": tuple(sorted(RETRY_STATUS)), "timeout": o.timeout}

    def read(self, rel: str, start: int, end: int) -> bytes:
        """One ranged GET of the resolve URL (following the redirect to the CDN)."""
        from huggingface_hub.utils import hf_raise_for_status, http_backoff

        url = self._resolve(rel)
        if end <= start:
            return b""

        def get() -> bytes:
            r = http_backoff("GET", url, headers=self._headers({"Range": f"bytes={start}-{end - 1}"}),
                             **self._backoff())
            hf_raise_for_status(r)
            return exact_range(r.content, start, end, self.url(rel), r.status_code)

        try:
            data = self._hub("GET", self.url(rel), get, retry=False)
        except FileNotFoundError:
            raise RemoteError("GET failed: HTTP 404 (not found)", file=self.url(rel)) from None
        self._count(len(data))
        return data

    def stream(self, rel: str, chunk: int, etag: str | None = None) -> Generator[Buffer, None, bool]:
        """One streaming GET of the resolve URL (the Hub's ETags are not the listing's blob ids:
        never confirmed)."""
        from huggingface_hub.utils import hf_raise_for_status, http_stream_backoff

        url = self._resolve(rel)
        with _hub_timeouts(self.options):
            try:
                with http_stream_backoff("GET", url, headers=self._headers({}), **self._backoff()) as r:
                    hf_raise_for_status(r)
                    self._count(0)
                    for piece in r.iter_bytes(chunk):
                        self._count(len(piece), 0)
                        yield piece
                    return False
            except RemoteError:
                raise
            except Exception as exc:  # noqa: BLE001 - the client's errors, named
                _status_code, _t, why, _w = describe(exc)
                raise RemoteError(f"GET failed: {why}", file=self.url(rel)) from None


class _hub_timeouts:
    """huggingface_hub reads its download timeout from a module constant: set it for the call."""

    def __init__(self, options: Options) -> None:
        self.value = options.timeout

    def __enter__(self) -> None:
        from huggingface_hub import constants

        self.saved = constants.HF_HUB_DOWNLOAD_TIMEOUT, constants.HF_HUB_ETAG_TIMEOUT
        setattr(constants, "HF_HUB_DOWNLOAD_TIMEOUT", self.value)  # noqa: B010 - an int there, a float is taken
        setattr(constants, "HF_HUB_ETAG_TIMEOUT", self.value)  # noqa: B010

    def __exit__(self, *exc: object) -> None:
        from huggingface_hub import constants

        constants.HF_HUB_DOWNLOAD_TIMEOUT, constants.HF_HUB_ETAG_TIMEOUT = self.saved


def exact_range(data: bytes, start: int, end: int, url: str, status: int | None = None) -> bytes:
    """The bytes of a ranged read, or RemoteError if the server sent another amount."""
    want = end - start
    if status == 200 and len(data) > want and start == 0:  # a server that ignores Range
        return data[:want]
    if status == 200 and start > 0 and len(data) > want:
        return data[start:end] if len(data) >= end else _short_read(len(data) - start, want, url)
    if len(data) != want:
        _short_read(len(data), want, url)
    return data


def _short_read(got: int, want: int, url: str) -> bytes:
    raise RemoteError(f"the response ended after {max(got, 0)} of {want} bytes (truncated)", file=url)


# -- fsspec (HTTP, S3, memory, ...) ------------------------------------------------------

#: the bytes one ranged read of an object-store stream asks for: each read is a request
#: (reads of the caller's 1 MiB blocks made a request per MiB); a stream holds one such piece
OBJECT_READ = 8 << 20


class FsspecStore(Store):
    """A folder behind an fsspec filesystem: object stores (one listing, ranged reads),
    ``memory://`` and the rest (HTTP(S) is :class:`.http_store.HttpStore`'s)."""

    kind = "fsspec"

    def __init__(self, base: str, options: Options) -> None:
        super().__init__(base, options)
        import fsspec

        protocol = base.split("://", 1)[0].lower()
        kwargs: dict[str, Any] = {}
        if protocol in ("s3", "s3a"):
            kwargs = {"config_kwargs": {"connect_timeout": options.timeout, "read_timeout": options.timeout,
                                        "retries": {"max_attempts": 1}}}
        try:
            self.fs = fsspec.filesystem(protocol, skip_instance_cache=True, **kwargs)
        except (ImportError, ValueError) as exc:
            raise RemoteError(f"no fsspec filesystem for {protocol}:// ({_short(exc)}); install mlf-spec[remote] "
                              "and the fsspec backend for it", file=base) from None
        self._listing: dict[str, Stat] | None | bool = False

    def _path(self, rel: str) -> str:
        return self.fs._strip_protocol(self.url(rel))

    def listing(self) -> dict[str, Stat] | None:
        """One listing of the folder (object stores and in-memory filesystems)."""
        if self._listing is False:
            root = self.fs._strip_protocol(self.base)

            def ls() -> dict[str, Stat]:
                out = {}
                for e in self.fs.find(root, detail=True).values():
                    if e.get("type") == "file":
                        name = e["name"][len(root):].lstrip("/")
                        out[name] = _stat_of(e)
                return out

            self._listing = self.retrying("list", self.base, ls)
            self._count(0)
        return self._listing if isinstance(self._listing, dict) else None

    def stat(self, rel: str) -> Stat | None:
        """From the listing."""
        listing = self.listing()
        return None if listing is None else listing.get(rel)

    def read(self, rel: str, start: int, end: int) -> bytes:
        """One ranged read."""
        if end <= start:
            return b""
        url = self.url(rel)

        def get() -> bytes:
            return exact_range(self.fs.cat_file(self._path(rel), start=start, end=end), start, end, url)

        try:
            data = self.retrying("GET", url, get)
        except FileNotFoundError:
            raise RemoteError("GET failed: HTTP 404 (not found), though the file was there a moment ago",
                              file=url) from None
        self._count(len(data))
        return data

    def stream(self, rel: str, chunk: int, etag: str | None = None) -> Generator[Buffer, None, bool]:
        """The object in pieces of ``chunk`` bytes, fetched by ranged reads of
        :data:`OBJECT_READ` (an object's listing identity is not asked again: returns False)."""
        url = self.url(rel)
        step = max(chunk, OBJECT_READ)
        kw: dict[str, Any] = {"block_size": step, "cache_type": "none"}
        try:
            f = self.retrying("GET", url, lambda: self.fs.open(self._path(rel), "rb", **kw))
        except FileNotFoundError:
            raise RemoteError("GET failed: HTTP 404 (not found), though the file was there a moment ago",
                              file=url) from None
        self._count(0)
        try:
            while True:
                try:
                    piece = f.read(step)
                except Exception as exc:  # noqa: BLE001 - the client's errors, named
                    _s, _t, why, _w = describe(exc)
                    raise RemoteError(f"GET failed: {why}", file=url) from None
                if not piece:
                    return False
                self._count(len(piece), 0)
                view = memoryview(piece)
                for at in range(0, len(view), chunk):
                    yield view[at:at + chunk]
        finally:
            try:
                f.close()
            except Exception:  # noqa: BLE001,S110 - closing a broken connection
                pass


def _stat_of(info: dict[str, Any]) -> Stat:
    etag = info.get("ETag") or info.get("etag") or info.get("ETAG")
    return Stat(int(info["size"]), str(etag) if etag else None, None, False, info.get("mimetype"))
