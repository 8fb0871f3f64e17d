"""A cache folder behind any HTTP(S) server, read with the standard library's client
(``urllib.request`` over ``http.client``): a HEAD per file for its size and ETag, ranged GETs,
and whole files as one streamed GET read into a reused buffer.

Why not fsspec's HTTP filesystem (aiohttp), as for object stores: ``--verify`` reads every byte
of a cache and MD5 is its limit, so reading must cost next to nothing. fsspec's HTTP file hands
each socket read of its event loop's thread over as a new ``bytes`` object, gathered, copied and
passed to the reading thread (about 1 s of CPU per GB on top of the MD5 here), and importing
aiohttp and fsspec costs 0.3 s of CPU and 20 MiB, more than a ``check URL`` needs for all else.
``http.client`` reads straight into the caller's buffer with the GIL released, so the MD5 of
another stream runs meanwhile. The choices fsspec's session made are kept: no compression (a
size must be the stored size, a range the stored bytes), no proxy from the environment (as
aiohttp without ``trust_env``), redirects followed (to another host too), one timeout per socket
operation. Each request opens its own connection, as ``curl`` in a loop does.
"""

from __future__ import annotations

import http.client
import urllib.error
import urllib.request
from collections.abc import Generator, Iterator
from typing import Any

from .stores import Buffer, RemoteError, Stat, Store, describe, exact_range, status_of

_OPENER: urllib.request.OpenerDirector | None = None
_GONE = (404, 410)
_NO_HEAD = (405, 501)  # a server that refuses HEAD: the size comes from a GET of byte 0 instead


def _opener() -> urllib.request.OpenerDirector:
    global _OPENER
    if _OPENER is None:
        _OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    return _OPENER


def request(url: str, method: str, headers: dict[str, str], timeout: float) -> Any:
    """The open response of one request (an ``http.client.HTTPResponse``). The client's
    exceptions pass through for :meth:`Store.retrying` and :func:`describe` to name: an
    HTTPError with its status; of a URLError its cause (a timeout, a refused connection)."""
    req = urllib.request.Request(url, method=method, headers={"Accept-Encoding": "identity", **headers})
    try:
        return _opener().open(req, timeout=timeout)
    except urllib.error.HTTPError as exc:
        exc.close()
        raise
    except urllib.error.URLError as exc:
        reason = exc.reason
        raise (reason if isinstance(reason, BaseException) else ConnectionError(str(reason))) from None


def _length(resp: Any) -> int | None:
    value = resp.headers.get("Content-Length")
    return int(value) if value is not None and value.strip().isdigit() else None


def _total_of_range(resp: Any) -> int | None:
    """The file size a ``Content-Range: bytes a-b/SIZE`` gives."""
    value = resp.headers.get("Content-Range") or ""
    total = value.rpartition("/")[2].strip()
    return int(total) if total.isdigit() else None


def _gone(url: str) -> RemoteError:
    return RemoteError("GET failed: HTTP 404 (not found), though the file was there a moment ago", file=url)


def pieces(resp: Any, buf: bytearray) -> Iterator[memoryview]:
    """The body of ``resp`` read into ``buf`` piece by piece: each memoryview (of ``buf``) is
    valid until the next is asked for. A body cut short simply ends (the caller counts)."""
    view = memoryview(buf)
    readinto = resp.readinto
    while n := readinto(buf):
        yield view[:n]


class HttpStore(Store):
    """A folder URL on an HTTP(S) server (see the module docstring)."""

    kind = "http"
    http = True  # a file's ETag may be asked again (RemoteCache.recheck)

    def _request(self, url: str, method: str, headers: dict[str, str]) -> Any:
        """One request; FileNotFoundError for 404/410 (not retried); None for a HEAD the server
        does not answer (405, 501)."""
        try:
            return request(url, method, headers, self.options.timeout)
        except Exception as exc:  # noqa: BLE001 - the client's errors, named by retrying()
            status = status_of(exc)
            if status in _GONE:
                raise FileNotFoundError(url) from None
            if method == "HEAD" and status in _NO_HEAD:
                return None
            raise

    def _open(self, what: str, rel: str, method: str, headers: dict[str, str]) -> Any:
        """One request, retried while its failure is transient; FileNotFoundError for 404/410."""
        url = self.url(rel)
        return self.retrying(what, url, lambda: self._request(url, method, headers))

    def stat(self, rel: str) -> Stat | None:
        """A HEAD (each call asks the server: there is no listing over HTTP). A server that
        refuses HEAD or answers it without a size is asked for the first byte instead, and its
        Content-Range gives the size."""
        url = self.url(rel)
        try:
            resp = self._open("HEAD", rel, "HEAD", {})
        except FileNotFoundError:
            self._count(0)
            return None
        self._count(0)
        size = etag = mime = None
        if resp is not None:
            with resp:
                size, etag, mime = _length(resp), resp.headers.get("ETag"), resp.headers.get("Content-Type")
        if size is None:
            try:
                resp = self._open("GET", rel, "GET", {"Range": "bytes=0-0"})
            except FileNotFoundError:
                return None
            self._count(0)
            with resp:
                size = _total_of_range(resp) if resp.status == 206 else _length(resp)
                etag, mime = etag or resp.headers.get("ETag"), mime or resp.headers.get("Content-Type")
        if size is None:
            raise RemoteError("HEAD failed: the server gives no Content-Length, so the shard's size is unknown",
                              file=url)
        return Stat(size, etag, None, False, mime.split(";")[0].strip() if mime else None)

    def read(self, rel: str, start: int, end: int) -> bytes:
        """One ranged GET (a server that ignores Range: its first ``end`` bytes, then the
        connection is dropped)."""
        if end <= start:
            return b""
        url = self.url(rel)

        def get() -> bytes:
            with self._request(url, "GET", {"Range": f"bytes={start}-{end - 1}"}) as resp:
                want = end - start if resp.status == 206 else end
                data = resp.read(want)
                length = _length(resp)
                if len(data) < want and (length is None or len(data) < length):  # cut short: worth a retry
                    raise http.client.IncompleteRead(data, want - len(data))
                return exact_range(data, start, end, url, resp.status)

        try:
            data = self.retrying("GET", url, get)
        except FileNotFoundError:
            raise _gone(url) from None
        self._count(len(data))
        return data

    def stream(self, rel: str, chunk: int, etag: str | None = None) -> Generator[Buffer, None, bool]:
        """One streamed GET read into a buffer of ``chunk`` bytes, reused piece after piece:
        RemoteError if the response's ETag is not ``etag`` (the file was replaced since its
        HEAD). Returns whether the response's ETag showed it is still that file."""
        url = self.url(rel)
        try:
            resp = self._open("GET", rel, "GET", {})
        except FileNotFoundError:
            raise _gone(url) from None
        self._count(0)
        try:
            got = resp.headers.get("ETag")
            if etag is not None and got is not None and got != etag:
                raise RemoteError(f"the file changed on the server while it was read (ETag {etag}, then {got} "
                                  "in the GET): read it again", file=url)
            body = pieces(resp, bytearray(chunk))
            while True:
                try:
                    piece = next(body, None)
                except Exception as exc:  # noqa: BLE001 - the client's errors, named
                    _s, _t, why, _w = describe(exc)
                    raise RemoteError(f"GET failed: {why}", file=url) from None
                if piece is None:
                    return etag is not None and got == etag
                self._count(len(piece), 0)
                yield piece
        finally:
            resp.close()
