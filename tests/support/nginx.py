"""A real HTTP server for the remote-cache tests: Debian's nginx (Range, HEAD and ETags as CDNs
serve them), started on loopback in a temporary prefix with its own configuration.

On a fresh machine the first test that asks installs nginx (tests/support/debian.py): never
skipped by default.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from .debian import ensure

_CANDIDATES = ("/usr/sbin/nginx", "/usr/local/sbin/nginx")


def _found() -> str | None:
    path = shutil.which("nginx")
    if path:
        return path
    return next((p for p in _CANDIDATES if os.access(p, os.X_OK)), None)


def nginx() -> str:
    """The path of nginx, installed with apt-get (nginx-light) if it is not there yet."""
    return ensure("nginx", ["nginx-light"], _found, recommends=False, timeout=600)


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_CONF = """\
daemon off;
master_process on;
worker_processes 2;
{user}
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 256; }}
http {{
    access_log off;
    client_body_temp_path {prefix}/body;
    proxy_temp_path {prefix}/proxy;
    fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;
    types {{ application/json json; application/octet-stream bin; text/html html; }}
    default_type application/octet-stream;
    sendfile on;
    keepalive_requests 100000;
    server {{
        listen 127.0.0.1:{port};
        root {root};
        location / {{ }}
    }}
}}
"""


@contextlib.contextmanager
def serve(root: str | os.PathLike[str]) -> Iterator[str]:
    """Serve the folder ``root`` at ``http://127.0.0.1:PORT`` (yielded) until the block ends."""
    exe = nginx()
    with tempfile.TemporaryDirectory(prefix="mlf-spec-nginx-") as prefix:
        port = free_port()
        user = "user root root;" if os.geteuid() == 0 else ""  # workers read the test's private tmp folders
        conf = Path(prefix) / "nginx.conf"
        conf.write_text(_CONF.format(prefix=prefix, port=port, root=os.fspath(root), user=user))
        proc = subprocess.Popen([exe, "-p", prefix, "-c", str(conf), "-e", f"{prefix}/error.log"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 10
            while True:
                with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
                if proc.poll() is not None or time.monotonic() > deadline:
                    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
                    log = (Path(prefix) / "error.log")
                    raise RuntimeError(f"nginx did not start: {err} {log.read_text() if log.exists() else ''}")
                time.sleep(0.05)
            yield f"http://127.0.0.1:{port}"
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
