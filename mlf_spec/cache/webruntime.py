"""The web runtime adapter: TVM's JavaScript tensor cache reading (@mlc-ai/web-runtime, npm)
run in Node.js by webruntime.cjs, which says exactly what it covers (the index and shard
parsing and the record slicing; not the wasm decoding). The npm package pinned in
tools/webruntime/package-lock.json is installed with ``npm ci`` into a cache directory keyed
by the lock file (``$MLF_SPEC_NODE_CACHE``, else ``~/.cache/mlf-spec/node``), never into the
source tree."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from mlf_spec.errors import UnsupportedError

DRIVER = Path(__file__).resolve().parent / "webruntime.cjs"
PACKAGE_DIR = Path(__file__).resolve().parent.parent.parent / "tools" / "webruntime"
_MARKER = ".mlf-spec-installed"


def install_dir() -> Path:
    """Where the pinned package lives (one directory per lock file content)."""
    base = os.environ.get("MLF_SPEC_NODE_CACHE")
    root = Path(base) if base else Path.home() / ".cache" / "mlf-spec" / "node"
    lock = (PACKAGE_DIR / "package-lock.json").read_bytes() + (PACKAGE_DIR / "package.json").read_bytes()
    return root / ("webruntime-" + hashlib.sha256(lock).hexdigest()[:16])


def ensure_installed() -> Path:
    """Install the pinned @mlc-ai/web-runtime with npm ci (once; locked between processes)."""
    import fcntl

    target = install_dir()
    if (target / _MARKER).exists():
        return target
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        raise UnsupportedError("the web runtime adapter needs Node.js and npm on PATH")
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(str(target) + ".lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / _MARKER).exists():
            return target
        tmp = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))
        try:
            for name in ("package.json", "package-lock.json"):
                shutil.copyfile(PACKAGE_DIR / name, tmp / name)
            subprocess.run([npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund"], cwd=tmp, check=True,
                           capture_output=True, text=True)
            (tmp / _MARKER).write_text("ok\n")
            if target.exists():
                shutil.rmtree(target)
            os.rename(tmp, target)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return target


def read(folders: list[str | os.PathLike[str]]) -> list[dict]:
    """What the web runtime's JavaScript makes of each cache folder: ``status`` (ok/error),
    ``error``, ``records`` (name, nbytes, sha256 of the sliced stored bytes), ``outside``."""
    modules = ensure_installed()
    r = subprocess.run(["node", str(DRIVER), str(modules), *map(str, folders)], capture_output=True, text=True,
                       check=True, timeout=600)
    return [json.loads(line) for line in r.stdout.splitlines()]
