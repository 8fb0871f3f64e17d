"""Run the pinned Node.js tools of the Kaitai Struct back end (tools/kaitai/).

The npm packages named in tools/kaitai/package.json and pinned by its package-lock.json (the
Kaitai Struct compiler, its JavaScript runtime, Graphviz as WebAssembly) are installed with
``npm ci`` into a cache directory keyed by the lock file's hash, never into the source tree:
``$MLF_SPEC_NODE_CACHE``, else ``$XDG_CACHE_HOME/mlf-spec/node``, else ``~/.cache/mlf-spec/node``.
One ``node tools/kaitai/driver.cjs`` process then runs a whole batch of jobs (compiling .ksy
files for any target, rendering Graphviz sources to SVG), because loading the compiler costs
far more than a compile.

    python tools/specgen/kaitai_node.py install     # what tools/generate.py and the tests do on demand
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

PACKAGE_DIR = Path(__file__).resolve().parent.parent / "kaitai"
_MARKER = ".mlf-spec-installed"


class NodeToolsError(RuntimeError):
    """Node.js, npm or the pinned npm packages are missing, or a job failed."""


def _package_files() -> list[Path]:
    return [PACKAGE_DIR / "package.json", PACKAGE_DIR / "package-lock.json"]


def install_dir() -> Path:
    """Where the pinned packages live (one directory per package-lock.json content)."""
    base = os.environ.get("MLF_SPEC_NODE_CACHE")
    if base:
        root = Path(base)
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        root = (Path(xdg) if xdg else Path.home() / ".cache") / "mlf-spec" / "node"
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in _package_files())).hexdigest()[:16]
    return root / digest


def installed() -> Path | None:
    """The install directory if the packages are there, else None."""
    d = install_dir()
    return d if (d / _MARKER).exists() else None


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock between processes (pytest-xdist workers install at the same time)."""
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _tool(name: str) -> str:
    found = shutil.which(name)
    if not found:
        raise NodeToolsError(f"{name} is not on PATH: the Kaitai Struct back end needs Node.js (>= 18) and npm "
                             f"to run the pinned packages of {PACKAGE_DIR.relative_to(PACKAGE_DIR.parent.parent)}")
    return found


def ensure_installed(quiet: bool = False) -> Path:
    """Install the pinned packages with ``npm ci`` unless they are there; return the directory."""
    done = installed()
    if done is not None:
        return done
    target = install_dir()
    npm = _tool("npm")
    _tool("node")
    with _locked(target.with_name(target.name + ".lock")):
        if (target / _MARKER).exists():
            return target
        if not quiet:
            print(f"installing the pinned npm packages of tools/kaitai into {target} (npm ci)", file=sys.stderr)
        work = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))
        try:
            for p in _package_files():
                shutil.copy2(p, work / p.name)
            r = subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error"],
                               cwd=work, capture_output=True, text=True, timeout=600)
            if r.returncode != 0:
                raise NodeToolsError(f"npm ci in {work} failed (exit {r.returncode}):\n{r.stdout}{r.stderr}")
            (work / _MARKER).write_text("ok\n")
            if target.exists():
                shutil.rmtree(target)
            work.rename(target)
        finally:
            if work.exists():
                shutil.rmtree(work, ignore_errors=True)
    return target


def run(request: dict[str, Any], install: bool = True, timeout: float = 600, script: str = "driver.cjs",
        args: tuple[str, ...] = ()) -> Any:
    """Run one batch of jobs in one Node.js process: ``driver.cjs`` (compile, render; see
    its header for the request and answer) or ``dump.cjs`` (parse with generated JavaScript)."""
    modules = ensure_installed() if install else installed()
    if modules is None:
        raise NodeToolsError(f"the pinned npm packages of tools/kaitai are not installed in {install_dir()}: "
                             "run `python tools/specgen/kaitai_node.py install` (needs Node.js and npm)")
    node = _tool("node")
    path = PACKAGE_DIR / script
    r = subprocess.run([node, str(path), str(modules), *args], input=json.dumps(request), capture_output=True,
                       text=True, timeout=timeout)
    if r.returncode != 0:
        raise NodeToolsError(f"node {path.name} failed (exit {r.returncode}): {r.stderr.strip()}")
    return json.loads(r.stdout)


def compile_ksy(specs: dict[str, dict[str, Any]], langs: tuple[str, ...], out_dir: Path) -> dict[str, Any]:
    """Compile every .ksy object (by id) for every language into ``out_dir/<lang>/``; returns
    {"compiler", "require_ms", "ms": {lang: total compile ms}, "compiles": n}. Files with a
    top-level type go first: compiling one emits the files it imports too, which are then
    not compiled again. Raises NodeToolsError on a compile error."""
    order = sorted(specs, key=lambda k: ("seq" not in specs[k], k))
    jobs = [{"lang": lang, "main": kid} for lang in langs for kid in order]
    answer = run({"specs": specs, "compile": jobs, "skip_done": True})
    totals: dict[str, float] = {}
    for res in answer["results"]:
        if "error" in res:
            raise NodeToolsError(f"{res['main']}.ksy -> {res['lang']}: {res['error']}")
        d = out_dir / res["lang"]
        d.mkdir(parents=True, exist_ok=True)
        for name, src in res["files"].items():
            (d / name).write_text(src, encoding="utf-8")
        totals[res["lang"]] = totals.get(res["lang"], 0.0) + res["ms"]
    return {"compiler": answer.get("compiler"), "require_ms": answer.get("require_ms"), "ms": totals,
            "compiles": len(answer["results"])}


def main(argv: list[str] | None = None) -> int:
    """Command line: ``install`` (npm ci into the cache directory) or ``where``."""
    args = sys.argv[1:] if argv is None else argv
    if args == ["install"]:
        print(ensure_installed())
        return 0
    if args == ["where"]:
        print(install_dir())
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())


def render_diagrams(graph_specs: dict[str, dict[str, Any]]) -> dict[str, str]:
    """SVG of each .ksy object (the compiler's graphviz target, then Graphviz as WebAssembly),
    by id. Results are cached in the install directory by the hash of their input, since
    tools/generate.py --check runs often and the output depends on nothing else."""
    target = ensure_installed()
    cache = target / "diagrams"
    cache.mkdir(exist_ok=True)
    keys = {}
    for kid in graph_specs:
        # a diagram depends on its file and on every file it may import
        blob = json.dumps([kid, graph_specs], sort_keys=True).encode()
        keys[kid] = hashlib.sha256(blob).hexdigest()
    out: dict[str, str] = {}
    missing = [k for k in graph_specs if not (cache / f"{keys[k]}.svg").exists()]
    if missing:
        answer = run({"specs": graph_specs, "compile": [{"lang": "graphviz", "main": k} for k in missing]})
        dots = {}
        for res in answer["results"]:
            if "error" in res:
                raise NodeToolsError(f"{res['main']}.ksy -> graphviz: {res['error']}")
            dots[res["main"]] = res["files"][f"{res['main']}.dot"]
        svgs = run({"render": [{"name": k, "dot": d} for k, d in dots.items()]})["svgs"]
        for k, svg in svgs.items():
            tmp = cache / f".{keys[k]}.{os.getpid()}"
            tmp.write_text(svg, encoding="utf-8")
            tmp.replace(cache / f"{keys[k]}.svg")
    for k in graph_specs:
        out[k] = (cache / f"{keys[k]}.svg").read_text(encoding="utf-8")
    return out
