"""Servers on loopback for the remote-cache tests (no test reaches the internet):

- :class:`FaultProxy`: a reverse proxy in front of a real server (nginx) that injects the faults
  users meet: 429/5xx answers, a slow answer, a response cut short, a file replaced between the
  HEAD and the GET, a 404, a redirect to another host, an HTML page where a file should be; and
  the ways servers end kept connections: ``Connection: close`` on every answer, an idle
  connection closed after a keep-alive timeout, a connection closed after an answer without
  notice. It counts the connections it accepted (``server.accepted``); over TLS too
  (:func:`self_signed` makes its certificate).
- :class:`HubServer`: a stand-in of the Hugging Face Hub's HTTP API for the endpoints
  huggingface_hub calls for a read (``/api/models/<repo>[/revision/<rev>]``,
  ``/api/models/<repo>/tree/<rev>/<path>``, ``/<repo>/resolve/<rev>/<path>``), its JSON shaped
  as huggingface_hub's ``ModelInfo`` / ``RepoFile`` models read it (``oid``, ``size``, ``path``,
  ``lfs: {oid, size, pointerSize}``), private repositories answering 401 ``X-Error-Code:
  RepoNotFound`` without the token, and LFS files redirected to a CDN (the nginx, on another
  host name) as the Hub redirects them.
- :func:`moto_s3`: moto's S3-compatible server (the ``moto[server]`` test extra).
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import http.server
import json
import threading
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any


class Faults:
    """Faults to inject, per request path, each used once in order: an int status, ``"slow"``,
    ``"truncate"``, ``"html"``, ``("redirect", base_url)``, ``"no-length"`` (the answer without
    Content-Length, as some servers answer HEAD), ``"ignore-range"`` (the whole file, 200, for
    a ranged GET), ``"drop"`` (the answer as usual, then the connection closed without a
    ``Connection: close``, as by a server whose keep-alive timeout ran out meanwhile) or a
    callable run before the request is served (e.g. to replace the file). ``method`` limits a
    fault to GET or HEAD.

    Of every connection (a proxy's): ``keepalive`` False answers each request with ``Connection:
    close``; ``idle`` closes a connection that waits that many seconds for its next request
    (nginx's keepalive_timeout; None: kept as long as the client keeps it)."""

    def __init__(self) -> None:
        self.rules: dict[str, list[tuple[str | None, Any]]] = {}
        self.log: list[tuple[str, str, Any]] = []
        self.slow = 3.0
        self.keepalive = True
        self.idle: float | None = None
        self.lock = threading.Lock()

    def add(self, path: str, *faults: Any, method: str | None = None, times: int = 1) -> None:
        """Queue ``faults`` for requests of ``path`` (``times`` over)."""
        with self.lock:
            self.rules.setdefault(path, []).extend([(method, f) for f in faults] * times)

    def clear(self) -> None:
        """Forget every queued fault and the log."""
        with self.lock:
            self.rules.clear()
            self.log.clear()

    def take(self, method: str, path: str) -> Any:
        """The next fault for this request (None: serve it normally)."""
        with self.lock:
            queue = self.rules.get(path, [])
            for k, (m, fault) in enumerate(queue):
                if m in (None, method):
                    del queue[k]
                    self.log.append((method, path, fault))
                    return fault
            self.log.append((method, path, None))
            return None

    def requests(self, method: str | None = None) -> list[str]:
        """The paths requested so far (by ``method``)."""
        with self.lock:
            return [p for m, p, _ in self.log if method in (None, m)]


_HTML = b"<!DOCTYPE html>\n<html><head><title>Sign in</title></head><body>Please sign in.</body></html>\n"


def _answer(handler: http.server.BaseHTTPRequestHandler, status: int, body: bytes, headers: dict[str, str],
            close: bool) -> None:
    handler.send_response(status)
    for k, v in headers.items():
        handler.send_header(k, v)
    handler.send_header("Content-Length", str(len(body)))
    if close:
        handler.send_header("Connection", "close")
    handler.end_headers()
    if handler.command == "GET":
        handler.wfile.write(body)


def _apply(handler: http.server.BaseHTTPRequestHandler, fault: Any, close: bool = True) -> bool:
    """Answer the request by ``fault`` when it answers it (True); False to serve it normally.
    ``close``: the answer says ``Connection: close`` (else the connection is kept: a client
    must read the answer's body to the end to use it again)."""
    if isinstance(fault, int):
        _answer(handler, fault, f"HTTP {fault}\n".encode(), {"Retry-After": "0"} if fault == 429 else {}, close)
        return True
    if fault == "html":
        _answer(handler, 200, _HTML, {"Content-Type": "text/html; charset=utf-8"}, close)
        return True
    if isinstance(fault, tuple) and fault[0] == "redirect":
        where = fault[1].rstrip("/") + handler.path
        _answer(handler, 302, f"moved to {where}\n".encode(), {"Location": where}, close)
        return True
    if callable(fault):
        fault()
    return False


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    accepted = 0  # TCP connections accepted so far

    def get_request(self) -> tuple[Any, Any]:
        """The next connection (counted)."""
        got = super().get_request()
        self.accepted += 1  # one thread (serve_forever's) accepts
        return got

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up mid-response (as one that gave up does) is no error here."""


@contextlib.contextmanager
def _running(handler: type[http.server.BaseHTTPRequestHandler], attrs: dict[str, Any],
             tls: Path | None = None) -> Iterator[_Server]:
    cls = type(handler.__name__, (handler,), attrs)
    server = _Server(("127.0.0.1", 0), cls)
    if tls is not None:  # HTTPS: each accepted connection's TLS handshake, then HTTP over it
        import ssl

        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(tls)
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


class _Quiet(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


class _ProxyHandler(_Quiet):
    upstream: str
    faults: Faults

    def do_HEAD(self) -> None:  # noqa: N802
        self._serve()

    def do_GET(self) -> None:  # noqa: N802
        self._serve()

    served = False  # a request was served on this connection

    def handle_one_request(self) -> None:
        """Wait for the next request at most ``faults.idle`` seconds after the first (then the
        connection is closed, as by a server's keep-alive timeout), and serve it."""
        self.connection.settimeout(self.faults.idle if self.served else 30)
        super().handle_one_request()

    def parse_request(self) -> bool:
        """The request line came: serve it without the idle timeout."""
        self.served = True
        self.connection.settimeout(30)
        return super().parse_request()

    def _serve(self) -> None:
        fault = self.faults.take(self.command, urllib.parse.urlsplit(self.path).path)
        if fault == "slow":
            time.sleep(self.faults.slow)
            fault = None
        # an answer cut short or without a length ends with its connection: it says so
        close = not self.faults.keepalive or fault == "truncate" or (fault == "no-length" and self.command == "GET")
        if _apply(self, fault, close):
            return
        host = urllib.parse.urlsplit(self.upstream)
        conn = http.client.HTTPConnection(host.hostname, host.port, timeout=30)
        passed = ("if-match", "if-none-match", "if-range", "accept-encoding")
        passed += () if fault == "ignore-range" else ("range",)
        headers = {k: v for k, v in self.headers.items() if k.lower() in passed}
        conn.request(self.command, self.path, headers=headers)
        r = conn.getresponse()
        self.send_response(r.status)
        dropped = ("connection", "keep-alive", "server", "date") + (("content-length",) if fault == "no-length" else ())
        for k, v in r.getheaders():
            if k.lower() not in dropped:
                self.send_header(k, v)
        if close:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command == "GET":
            length = int(r.getheader("Content-Length") or 0)
            send = length // 2 if fault == "truncate" else length
            while send > 0:
                piece = r.read(min(send, 1 << 16))
                if not piece:
                    break
                self.wfile.write(piece)
                send -= len(piece)
            self.wfile.flush()
        conn.close()
        if close or fault == "drop":  # "drop": closed, though the answer did not say so
            self.close_connection = True


class FaultProxy:
    """A reverse proxy at ``url`` in front of ``upstream`` with :class:`Faults` ``faults``."""

    def __init__(self, server: _Server, faults: Faults, scheme: str = "http") -> None:
        self.server, self.faults = server, faults
        self.url = f"{scheme}://127.0.0.1:{server.server_address[1]}"


@contextlib.contextmanager
def fault_proxy(upstream: str, tls: Path | None = None) -> Iterator[FaultProxy]:
    """Run a :class:`FaultProxy` in front of ``upstream`` until the block ends; with ``tls`` (a
    PEM of a certificate and its key, :func:`self_signed`) it is an HTTPS server."""
    faults = Faults()
    with _running(_ProxyHandler, {"upstream": upstream, "faults": faults}, tls) as server:
        yield FaultProxy(server, faults, "https" if tls is not None else "http")


def self_signed(folder: Path) -> Path:
    """A PEM in ``folder`` holding a self-signed certificate of 127.0.0.1 and localhost and its
    key, made by the openssl command (installed with apt-get if it is not there): a client
    trusts it as its CA file (``SSL_CERT_FILE``)."""
    import shutil
    import subprocess

    from tests.support.debian import ensure

    openssl = ensure("openssl", ["openssl"], lambda: shutil.which("openssl"), recommends=False)
    key, cert = folder / "key.pem", folder / "cert.pem"
    subprocess.run([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
                   check=True, capture_output=True, timeout=120)
    both = folder / "cert-and-key.pem"
    both.write_bytes(cert.read_bytes() + key.read_bytes())
    return both


# -- the Hub -----------------------------------------------------------------------------

def _git_blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


class HubRepo:
    """A model repository of the stand-in: its files are those below ``root`` (``*.bin`` are
    LFS objects, as the Hub's default .gitattributes makes them); ``lfs_sha256`` overrides
    what the tree API says of a file (to model a corrupted object)."""

    def __init__(self, repo_id: str, root: Path, *, private: bool = False, commit: str | None = None) -> None:
        self.repo_id, self.root, self.private = repo_id, root, private
        self.commit = commit or hashlib.sha1(repo_id.encode(), usedforsecurity=False).hexdigest()
        self.lfs_sha256: dict[str, str] = {}

    def files(self) -> list[str]:
        """Every file's path in the repository."""
        return sorted(p.relative_to(self.root).as_posix() for p in self.root.rglob("*") if p.is_file())

    def entry(self, path: str) -> dict[str, Any]:
        """The tree API's entry of a file (huggingface_hub's RepoFile reads it)."""
        data = (self.root / path).read_bytes()
        out: dict[str, Any] = {"type": "file", "oid": _git_blob_id(data), "size": len(data), "path": path}
        if path.endswith(".bin"):
            sha = self.lfs_sha256.get(path) or hashlib.sha256(data).hexdigest()
            out["lfs"] = {"oid": sha, "size": len(data), "pointerSize": 134}
        return out


class _HubHandler(_Quiet):
    hub: HubServer

    def do_HEAD(self) -> None:  # noqa: N802
        self._serve()

    def do_GET(self) -> None:  # noqa: N802
        self._serve()

    def _json(self, status: int, doc: Any, headers: dict[str, str] | None = None) -> None:
        body = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command == "GET":
            self.wfile.write(body)

    def _error(self, status: int, code: str, message: str) -> None:
        self._json(status, {"error": message}, {"X-Error-Code": code, "X-Error-Message": message})

    def _repo(self, org: str, name: str) -> HubRepo | None:
        repo = self.hub.repos.get(f"{org}/{name}")
        if repo is None:
            self._error(404, "RepoNotFound", "Repository not found")
            return None
        if repo.private and self.headers.get("Authorization") != f"Bearer {self.hub.token}":
            self._error(401, "RepoNotFound", "Invalid username or password.")
            return None
        return repo

    def _revision(self, repo: HubRepo, rev: str) -> bool:
        if urllib.parse.unquote(rev) in ("main", repo.commit):
            return True
        self._error(404, "RevisionNotFound", f"Invalid rev id: {rev}")
        return False

    def _serve(self) -> None:
        url = urllib.parse.urlsplit(self.path)
        parts = [urllib.parse.unquote(p) for p in url.path.split("/") if p]
        fault = self.hub.faults.take(self.command, url.path)
        if fault == "slow":
            time.sleep(self.hub.faults.slow)
            fault = None
        if _apply(self, fault):
            return
        if parts[:2] == ["api", "models"] and len(parts) >= 4:
            repo = self._repo(parts[2], parts[3])
            if repo is None:
                return
            rest = parts[4:]
            if not rest or rest[0] == "revision":
                if rest and not self._revision(repo, rest[1]):
                    return
                self._json(200, {"id": repo.repo_id, "modelId": repo.repo_id, "sha": repo.commit,
                                 "private": repo.private, "siblings": [{"rfilename": f} for f in repo.files()]})
                return
            if rest[0] == "tree" and len(rest) >= 2:
                if not self._revision(repo, rest[1]):
                    return
                prefix = "/".join(rest[2:])
                files = [f for f in repo.files() if not prefix or f.startswith(prefix + "/")]
                if prefix and not files:
                    self._error(404, "EntryNotFound", f"{prefix} does not exist on this revision")
                    return
                self._json(200, [repo.entry(f) for f in files])
                return
        if len(parts) >= 5 and parts[2] == "resolve":
            repo = self._repo(parts[0], parts[1])
            if repo is None or not self._revision(repo, parts[3]):
                return
            path = "/".join(parts[4:])
            if not (repo.root / path).is_file():
                self._error(404, "EntryNotFound", f"{path} does not exist on this revision")
                return
            if path.endswith(".bin") and self.hub.cdn:  # LFS: to the CDN, another host
                rel = (repo.root / path).relative_to(self.hub.cdn_root).as_posix()
                self.send_response(302)
                self.send_header("Location", f"{self.hub.cdn}/{rel}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self._file(repo.root / path)
            return
        self._error(404, "EntryNotFound", "no such endpoint in the stand-in")

    def _file(self, path: Path) -> None:
        data = path.read_bytes()
        start, end = 0, len(data)
        status = 200
        rng = self.headers.get("Range")
        if rng and rng.startswith("bytes="):
            a, _, b = rng[6:].partition("-")
            start = int(a) if a else 0
            end = min(len(data), int(b) + 1) if b else len(data)
            status = 206
        body = data[start:end]
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("ETag", f'"{_git_blob_id(data)}"')
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{end - 1}/{len(data)}")
        self.end_headers()
        if self.command == "GET":
            self.wfile.write(body)


class HubServer:
    """The Hub stand-in at ``url``: ``repos`` by id, ``token`` that opens private ones, LFS
    files redirected to ``cdn`` (a server of ``cdn_root``), ``faults`` on any path."""

    def __init__(self, server: _Server, cdn: str | None, cdn_root: Path | None) -> None:
        self.server = server
        self.url = f"http://127.0.0.1:{server.server_address[1]}"
        self.repos: dict[str, HubRepo] = {}
        self.token = "hf_test_token_for_the_stand_in"
        self.cdn, self.cdn_root = cdn, cdn_root
        self.faults = Faults()

    def add(self, repo_id: str, root: Path, **kw: Any) -> HubRepo:
        """Publish the files below ``root`` as ``repo_id``."""
        repo = HubRepo(repo_id, root, **kw)
        self.repos[repo_id] = repo
        return repo


@contextlib.contextmanager
def hub_server(cdn: str | None = None, cdn_root: Path | None = None) -> Iterator[HubServer]:
    """Run a :class:`HubServer` (LFS downloads redirected to ``cdn``, which serves ``cdn_root``)."""
    holder: dict[str, HubServer] = {}

    class Handler(_HubHandler):
        @property
        def hub(self) -> HubServer:  # type: ignore[override]
            return holder["hub"]

    with _running(Handler, {}) as server:
        holder["hub"] = HubServer(server, cdn, cdn_root)
        yield holder["hub"]


@contextlib.contextmanager
def moto_s3() -> Iterator[str]:
    """moto's S3 server on loopback; yields its endpoint URL."""
    from moto.server import ThreadedMotoServer

    from tests.support.nginx import free_port

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


def upload_s3(endpoint: str, bucket: str, prefix: str, folder: Path) -> None:
    """Put the files of ``folder`` into ``s3://bucket/prefix/`` with boto3 (moto's server)."""
    import boto3

    s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="testing",
                      aws_secret_access_key="testing")
    with contextlib.suppress(Exception):
        s3.create_bucket(Bucket=bucket)
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            s3.put_object(Bucket=bucket, Key=f"{prefix}/{p.relative_to(folder).as_posix()}", Body=p.read_bytes())


def env_for_s3(endpoint: str) -> dict[str, str]:
    """The environment that points botocore (s3fs) at ``endpoint`` with moto's test credentials."""
    return {"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1"}

