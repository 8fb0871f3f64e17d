"""A cache folder behind any HTTP(S) server, read with the standard library's ``http.client``
over a few persistent connections: a HEAD per file for its size and ETag, ranged GETs, and
whole files as one streamed GET read into a reused buffer.

Why not fsspec's HTTP filesystem (aiohttp), as for object stores: ``--verify`` reads every byte
of a cache and MD5 is its limit, so reading must cost next to nothing. fsspec's HTTP file hands
each socket read of its event loop's thread over as a new ``bytes`` object, gathered, copied and
passed to the reading thread (about 1 s of CPU per GB on top of the MD5 here), and importing
aiohttp and fsspec costs 0.3 s of CPU and 20 MiB, more than a ``check URL`` needs for all else.
``http.client`` reads straight into the caller's buffer with the GIL released, so the MD5 of
another stream runs meanwhile. The choices fsspec's session made are kept: no compression (a
size must be the stored size, a range the stored bytes), no proxy from the environment (as
aiohttp without ``trust_env``), redirects followed (to another host too, at most 10 as
urllib's), one timeout per socket operation.

Connections are kept and reused (:class:`Connections`, one pool per store, by scheme, host and
port): a cache of hundreds of shards is a HEAD and a GET per shard, and a connection per request
would be as many TCP (and TLS) handshakes, each a round trip or more, as ``curl`` in a loop
pays. A connection is used by one thread at a time; it goes back to the pool when its answer was
read to the end (a HEAD, a small body drained: a redirect's, an error's) and the server did not
say it closes, and at most :data:`IDLE` wait there per server. A request on a kept connection
that the server had closed meanwhile (its keep-alive timeout) fails before any byte of the
answer: it is sent once more on a new connection, not counted as a failure or a retry.
"""

from __future__ import annotations

import http.client
import ssl
import string
import threading
import urllib.parse
from collections.abc import Generator, Iterator
from email.message import Message

from mlf_spec._version import __version__

from .stores import Buffer, Options, RemoteError, Stat, Store, describe, exact_range, status_of

_GONE = (404, 410)
_NO_HEAD = (405, 501)  # a server that refuses HEAD: the size comes from a GET of byte 0 instead
_REDIRECTS = (301, 302, 303, 307, 308)
#: redirects followed for one request at most (as urllib's HTTPRedirectHandler)
MAX_REDIRECTS = 10
#: idle connections kept per server: as many as threads ask at once (remote.cache's HEADs and
#: --verify's streams, at most 8 each)
IDLE = 8
#: a body left unread up to this size is read and dropped so that its connection is kept;
#: a larger one (a server that ignored Range, a stream given up) closes the connection
DRAIN = 64 << 10
#: what a kept connection the server closed meanwhile fails with, before any byte of the answer
#: (http.client.RemoteDisconnected is a ConnectionResetError)
_STALE = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError)
_USER_AGENT = f"mlf-spec/{__version__}"

Key = tuple[str, str, int]


class HTTPStatusError(Exception):
    """A final answer that is not a success: ``status`` (read by :func:`.stores.status_of`),
    ``reason``, ``headers`` (a Retry-After is honoured) and the ``url`` that gave it."""

    def __init__(self, url: str, status: int, reason: str, headers: Message) -> None:
        super().__init__(f"HTTP Error {status}: {reason}")
        self.url, self.status, self.reason, self.headers = url, status, reason, headers


class Response:
    """An answer being read (``status``, ``headers``, ``read``, ``readinto``); :meth:`close`
    gives its connection back to the pool when the answer was read to the end, else closes it."""

    def __init__(self, raw: http.client.HTTPResponse, method: str, conn: http.client.HTTPConnection, key: Key,
                 pool: Connections) -> None:
        self.raw, self.method = raw, method
        self._conn: http.client.HTTPConnection | None = conn
        self._key, self._pool = key, pool
        self.status: int = raw.status
        self.reason: str = raw.reason
        self.headers: Message = raw.headers
        self.read = raw.read
        self.readinto = raw.readinto  # bound: the streaming loop calls it directly

    def close(self) -> None:
        """Release the connection: kept if the answer was read to its end (a HEAD's has no body;
        a rest of up to :data:`DRAIN` bytes is read and dropped) and the server keeps it open;
        closed otherwise. Closing twice does nothing."""
        conn, self._conn = self._conn, None
        if conn is None:
            return
        raw = self.raw
        keep = not raw.will_close and conn.sock is not None
        if keep and not raw.isclosed() and (self.method == "HEAD" or raw.length is None or raw.length <= DRAIN):
            try:
                raw.read(DRAIN)  # a HEAD's nothing; a chunked body ends within it or is left (closed)
            except Exception:  # noqa: BLE001 - a connection that fails while drained is dropped
                keep = False
        keep = keep and raw.isclosed() and not raw.length
        raw.close()
        if keep:
            self._pool.put(self._key, conn)
        else:
            conn.close()

    def __enter__(self) -> Response:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Connections:
    """Persistent HTTP(S) connections by (scheme, host, port), shared by the threads of one store
    (each connection used by one at a time), and the requests made over them."""

    def __init__(self, timeout: float, idle: int = IDLE) -> None:
        self.timeout, self.idle = timeout, idle
        self.opened = 0  # connections made (each a TCP, and for https a TLS, handshake)
        self._idle: dict[Key, list[http.client.HTTPConnection]] = {}
        self._lock = threading.Lock()
        self._closed = False
        self._tls: ssl.SSLContext | None = None

    def _new(self, key: Key) -> http.client.HTTPConnection:
        scheme, host, port = key
        with self._lock:
            self.opened += 1
            if scheme == "https" and self._tls is None:
                # one context for all (loading the CA certificates once), made as http.client
                # makes its own: the default verification, HTTP/1.1 announced by ALPN
                self._tls = ssl.create_default_context()
                self._tls.set_alpn_protocols(["http/1.1"])
        if scheme == "https":
            return http.client.HTTPSConnection(host, port, timeout=self.timeout, context=self._tls)
        return http.client.HTTPConnection(host, port, timeout=self.timeout)

    def _take(self, key: Key) -> http.client.HTTPConnection | None:
        with self._lock:
            kept = self._idle.get(key)
            return kept.pop() if kept else None

    def put(self, key: Key, conn: http.client.HTTPConnection) -> None:
        """Keep ``conn`` for the next request to its server (closed if the pool is full or closed)."""
        with self._lock:
            kept = self._idle.setdefault(key, [])
            if not self._closed and len(kept) < self.idle:
                kept.append(conn)
                return
        conn.close()

    def close(self) -> None:
        """Close every idle connection; one still in use is closed when its answer is."""
        with self._lock:
            self._closed = True
            kept = [c for conns in self._idle.values() for c in conns]
            self._idle.clear()
        for conn in kept:
            conn.close()

    def _send(self, key: Key, method: str, target: str, headers: dict[str, str]) -> Response:
        """One request and its answer's status and headers, on a kept connection if there is
        one: if the server had closed that one, once more on a new connection."""
        conn = self._take(key)
        reused = conn is not None
        while True:
            if conn is None:
                conn = self._new(key)
            try:
                conn.request(method, target, headers=headers)
                raw = conn.getresponse()
            except _STALE:
                conn.close()
                if not reused:
                    raise
                conn, reused = None, False  # the server closed it while it was idle: not its fault
                continue
            except BaseException:
                conn.close()
                raise
            return Response(raw, method, conn, key, self)

    def request(self, url: str, method: str, headers: dict[str, str]) -> Response:
        """The open answer of one request (read it, then close it), redirects followed.
        HTTPStatusError for a final answer that is not 2xx; the client's own exceptions (a
        timeout, a refused or dropped connection) pass through for :meth:`Store.retrying` and
        :func:`describe` to name."""
        sent = {"Accept-Encoding": "identity", "User-Agent": _USER_AGENT, **headers}
        for _ in range(MAX_REDIRECTS + 1):
            try:
                parts = urllib.parse.urlsplit(url)
                port = parts.port  # ValueError for a port out of range
            except ValueError as exc:
                raise RemoteError(f"{method} failed: redirected to {url!r}, not a valid URL ({exc})", file=url) from None
            scheme = parts.scheme.lower()
            if scheme not in ("http", "https") or not parts.hostname:
                raise RemoteError(f"{method} failed: redirected to {url!r}, not an http(s) URL", file=url)
            key = (scheme, parts.hostname, port or (443 if scheme == "https" else 80))
            target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
            resp = self._send(key, method, target, sent)
            if 200 <= resp.status < 300:
                return resp
            location = resp.headers.get("Location")
            resp.close()  # a small body (a redirect's, an error's) is drained: the connection is kept
            if resp.status in _REDIRECTS and location:
                # as urllib's redirect handler: a space or a non-ASCII letter of the Location quoted
                try:
                    joined = urllib.parse.urljoin(url, location.strip())
                except ValueError as exc:  # an invalid host part ('http://[bad')
                    raise RemoteError(f"{method} failed: redirected to {location.strip()!r}, not a valid URL ({exc})",
                                      file=url) from None
                url = urllib.parse.quote(joined.partition("#")[0], encoding="iso-8859-1", safe=string.punctuation)
                continue
            raise HTTPStatusError(url, resp.status, resp.reason, resp.headers)
        raise RemoteError(f"{method} failed: redirected more than {MAX_REDIRECTS} times (a redirect loop?)",
                          file=url)


def _length(resp: Response) -> int | None:
    value = resp.headers.get("Content-Length")
    return int(value) if value is not None and value.strip().isdigit() else None


def _total_of_range(resp: Response) -> int | None:
    """The file size a ``Content-Range: bytes a-b/SIZE`` gives."""
    value = resp.headers.get("Content-Range") or ""
    total = value.rpartition("/")[2].strip()
    return int(total) if total.isdigit() else None


def _gone(url: str) -> RemoteError:
    return RemoteError("GET failed: HTTP 404 (not found), though the file was there a moment ago", file=url)


def pieces(resp: Response, buf: bytearray) -> Iterator[memoryview]:
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

    def __init__(self, base: str, options: Options) -> None:
        super().__init__(base, options)
        self.connections = Connections(options.timeout)

    def close(self) -> None:
        """Close the kept connections."""
        self.connections.close()

    def _request(self, url: str, method: str, headers: dict[str, str]) -> Response | None:
        """One request; FileNotFoundError for 404/410 (not retried); None for a HEAD the server
        does not answer (405, 501)."""
        try:
            return self.connections.request(url, method, headers)
        except Exception as exc:  # noqa: BLE001 - the client's errors, named by retrying()
            status = status_of(exc)
            if status in _GONE:
                raise FileNotFoundError(url) from None
            if method == "HEAD" and status in _NO_HEAD:
                return None
            raise

    def _open(self, what: str, rel: str, method: str, headers: dict[str, str]) -> Response | None:
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
            assert resp is not None  # only a HEAD may be refused
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
            resp = self._request(url, "GET", {"Range": f"bytes={start}-{end - 1}"})
            assert resp is not None
            with resp:
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
        assert resp is not None
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
