"""A real HTTP server for the remote-cache tests: Debian's nginx (Range, HEAD and ETags as CDNs
serve them), started on loopback in a temporary prefix with its own configuration.

On a fresh machine the first test that asks installs nginx with apt-get (as root, or through
password-less sudo), once, under a file lock so that pytest-xdist workers wait for each other,
as tests/support/browser.py does for Chromium. A machine where that is impossible fails the
test with the command to run: never skipped by default.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

_CANDIDATES = ("/usr/sbin/nginx", "/usr/local/sbin/nginx")


def _found() -> str | None:
    path = shutil.which("nginx")
    if path:
        return path
    return next((p for p in _CANDIDATES if os.access(p, os.X_OK)), None)


def nginx() -> str:
    """The path of nginx, installed with apt-get (nginx-light) if it is not there yet."""
    path = _found()
    if path:
        return path
    lock = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mlf-spec" / "nginx.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        path = _found()
        if path:
            return path
        prefix = [] if os.geteuid() == 0 else ["sudo", "-n"]
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        install = [*prefix, "apt-get", "install", "-y", "-q", "--no-install-recommends", "nginx-light"]
        why = "no message"
        try:
            done = subprocess.run(install, capture_output=True, text=True, env=env, timeout=600)
            if done.returncode != 0:  # a stale package list: refresh it once
                subprocess.run([*prefix, "apt-get", "update", "-q"], capture_output=True, env=env, timeout=600)
                done = subprocess.run(install, capture_output=True, text=True, env=env, timeout=600)
            why = (done.stderr.strip().splitlines() or [why])[-1]
        except (OSError, subprocess.TimeoutExpired) as exc:
            why = str(exc)
        path = _found()
        if not path:
            raise RuntimeError(f"nginx is not installed and could not be (run `apt-get install -y nginx-light`): {why}")
        return path


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
