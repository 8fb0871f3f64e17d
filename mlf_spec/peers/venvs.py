"""Cached venvs of peer runtimes: what each needs, where it lives, and how it is made.

A venv is made once per machine under ``$MLF_SPEC_TVM_VENVS`` (default
``~/.cache/mlf-spec/tvm-venvs``): with a file lock (one installer, however many test
workers ask), into a ``.partial`` folder renamed into place when the runtime imports and
says the expected version, so an interrupted install is never taken for a finished one. A
setup that cannot be made (no interpreter of the needed version, no wheel, a failed import)
raises :class:`PeerSetupError` with one line that says what is missing.
"""

from __future__ import annotations

import fcntl
import glob
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from mlf_spec.errors import MlfError


class PeerSetupError(MlfError):
    """A peer runtime's venv cannot be made (one line: what is missing)."""


@dataclass(frozen=True)
class PeerSpec:
    """A peer runtime: its venv folder, pip requirements, the Python it needs (None: this
    one), the ``tvm.__version__`` prefix it must report, and what it needs in its
    environment to run."""

    key: str
    folder: str
    label: str
    requirements: tuple[str, ...]
    tvm_version: str
    python: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    #: (requirement, python version): a wheel for another Python whose packages are unpacked
    #: into the venv instead of installed (pip refuses its tags), its dependencies in ``requirements``
    unpack: tuple[str, str] | None = None


PEERS: dict[str, PeerSpec] = {
    "0.25": PeerSpec("0.25", "apache-tvm-0.25", "apache-tvm 0.25.0.post1",
                     # later tvm-ffi releases fail at import with an undefined symbol
                     ("apache-tvm==0.25.0.post1", "apache-tvm-ffi==0.1.12", "numpy", "ml_dtypes"), "0.25"),
    "0.26": PeerSpec("0.26", "apache-tvm-0.26", "apache-tvm 0.26.0", ("apache-tvm==0.26.0", "numpy", "ml_dtypes"),
                     "0.26"),
    # T-Head's fork of TVM 0.16: cp38/cp310 wheels, numpy < 2; tqdm, tflite and pytest are
    # imported by its tvm.relay / tvm.relay.testing without being declared
    "hhb": PeerSpec("hhb", "hhb-tvm-3.2.3", "hhb-tvm 3.2.3 (TVM 0.16.dev0)",
                    ("hhb-tvm==3.2.3", "numpy<2", "ml_dtypes", "tqdm", "tflite", "pytest"), "0.16", python="3.10"),
    # where no Python 3.10 exists: the cp310 wheel's pure-Python tvm package and its libtvm run on
    # 3.11 once TVM's FFI goes through ctypes (its Cython core is built for 3.10). The runtime's
    # dependencies are installed, then the wheel is unpacked beside them: enough for what the
    # adapter runs (load_param_dict, load_module, the GraphExecutor); relay.testing also needs
    # scipy, tqdm, tflite and pytest, which this runtime-only venv leaves out
    "hhb-py311": PeerSpec("hhb-py311", "hhb-tvm-3.2.3-py311-ctypes-runtime",
                          "hhb-tvm 3.2.3 (TVM 0.16.dev0) on Python 3.11 with TVM_FFI=ctypes",
                          ("numpy<2", "ml_dtypes", "attrs", "cloudpickle", "decorator", "psutil", "tornado",
                           "typing-extensions"), "0.16", python="3.11",
                          env={"TVM_FFI": "ctypes"}, unpack=("hhb-tvm==3.2.3", "3.10")),
}
#: peer -> the peer that stands in for it when its Python is missing (or when
#: ``$MLF_SPEC_HHB_PY311`` is 1: the fallback used on purpose, as a test does)
FALLBACKS: dict[str, str] = {"hhb": "hhb-py311"}


def cache_root() -> Path:
    """Where the venvs live: ``$MLF_SPEC_TVM_VENVS``, else ``~/.cache/mlf-spec/tvm-venvs``
    (``$XDG_CACHE_HOME`` is honoured)."""
    env = os.environ.get("MLF_SPEC_TVM_VENVS")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "mlf-spec" / "tvm-venvs"


def resolve(key: str) -> str:
    """The peer that serves ``key`` here: ``key`` itself, or its fallback when the forcing
    variable is set or when ``key``'s venv is not made and its Python cannot be found while the
    fallback's can."""
    fallback = FALLBACKS.get(key)
    if fallback is None:
        return key
    if os.environ.get("MLF_SPEC_HHB_PY311") == "1":
        return fallback
    if is_ready(key) or is_ready(fallback):
        return key if is_ready(key) else fallback
    spec, alt = PEERS[key], PEERS[fallback]
    if spec.python and find_python(spec.python) is None and alt.python and find_python(alt.python) is not None:
        return fallback
    return key


def environment(key: str) -> dict[str, str]:
    """What peer ``key`` (as resolved) needs in its environment to run."""
    return dict(PEERS[resolve(key)].env)


def venv_python(key: str) -> Path:
    """The interpreter of peer ``key``'s venv (it may not exist yet)."""
    return cache_root() / PEERS[key].folder / "bin" / "python"


def is_ready(key: str) -> bool:
    """True when peer ``key``'s venv is made."""
    return (cache_root() / PEERS[key].folder / ".installed").is_file()


def find_python(version: str) -> str | None:
    """An interpreter of Python ``version`` ("3.10"): ``$MLF_SPEC_PYTHON310`` (for 3.10), this
    one, pyenv's versions, then ``python3.10`` on PATH (not a pyenv shim: it fails unless that
    version is selected)."""
    override = os.environ.get("MLF_SPEC_PYTHON" + version.replace(".", ""))
    if override:
        return override
    if f"{sys.version_info[0]}.{sys.version_info[1]}" == version:
        return sys.executable
    roots = [os.environ.get("PYENV_ROOT"), str(Path.home() / ".pyenv")]
    for root in filter(None, roots):
        for cand in sorted(glob.glob(os.path.join(root, "versions", f"{version}.*", "bin", f"python{version}")),
                           reverse=True):
            if os.access(cand, os.X_OK):
                return cand
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        cand = os.path.join(folder, f"python{version}")
        if folder and os.path.basename(folder) != "shims" and os.access(cand, os.X_OK):
            return cand
    return None


def _run(cmd: list[str], what: str, label: str, env: dict[str, str] | None = None) -> str:
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        lines = [x for x in (r.stderr or r.stdout).strip().splitlines()
                 if x.strip() and not x.startswith("WARNING: Location")]
        raise PeerSetupError(f"cannot set up {label}: {what} failed: {lines[-1] if lines else f'exit {r.returncode}'}")
    return r.stdout


def _pip_of_this_python() -> bool:
    """True when this interpreter's pip can install into another one (``--python``, pip 22.3)."""
    try:
        from pip import __version__ as v
    except ImportError:
        return False
    parts = tuple(int(x) for x in v.split(".")[:2] if x.isdigit())
    return parts >= (22, 3)


def _install(spec: PeerSpec, base: str, partial: Path) -> None:
    """Make the venv of ``spec`` in ``partial`` with interpreter ``base`` and check it."""
    via_this_pip = _pip_of_this_python()
    _run([base, "-m", "venv", *(["--without-pip"] if via_this_pip else []), str(partial)], "python -m venv",
         spec.label)
    pip = ([sys.executable, "-m", "pip", "--python", str(partial / "bin" / "python")] if via_this_pip
           else [str(partial / "bin" / "python"), "-m", "pip"])
    _run([*pip, "install", "-q", "--disable-pip-version-check", *spec.requirements], "pip install", spec.label)
    if spec.unpack is not None:
        _unpack_wheel(spec, pip, partial)
    env = {**os.environ, **spec.env}
    got = _run([str(partial / "bin" / "python"), "-c", "import tvm; print(tvm.__version__)"], "import tvm",
               spec.label, env).strip()
    if not got.startswith(spec.tvm_version):
        raise PeerSetupError(f"cannot set up {spec.label}: it says tvm {got}, not {spec.tvm_version}")
    (partial / ".installed").write_text(got + "\n")


def _unpack_wheel(spec: PeerSpec, pip: list[str], partial: Path) -> None:
    """Download ``spec.unpack``'s wheel for its Python and unpack it into the venv's
    site-packages (its packages and its dist-info, so that the distribution is known)."""
    import zipfile

    assert spec.unpack is not None
    requirement, version = spec.unpack
    folder = partial / ".wheel"
    _run([*pip, "download", "-q", "--disable-pip-version-check", "--no-deps", "--only-binary=:all:",
          "--python-version", version, "--implementation", "cp", "--abi", "cp" + version.replace(".", ""),
          "--platform", "manylinux1_x86_64", "-d", str(folder), requirement], "pip download", spec.label)
    wheels = sorted(folder.glob("*.whl"))
    if not wheels:
        raise PeerSetupError(f"cannot set up {spec.label}: pip download gave no wheel of {requirement}")
    site = _run([str(partial / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                "python -c sysconfig", spec.label).strip()
    with zipfile.ZipFile(wheels[0]) as whl:
        for info in whl.infolist():
            target = os.path.realpath(os.path.join(site, info.filename))
            if not target.startswith(os.path.realpath(site) + os.sep):
                raise PeerSetupError(f"cannot set up {spec.label}: the wheel holds {info.filename!r}, outside its folder")
            whl.extract(info, site)
            mode = info.external_attr >> 16
            if mode & 0o111:
                os.chmod(target, 0o755)
    shutil.rmtree(folder, ignore_errors=True)


def ensure(key: str, progress: bool = True) -> Path:
    """The interpreter of peer ``key``'s venv (or of its fallback, :func:`resolve`), made first
    if need be (a progress line on standard error when ``progress``); PeerSetupError if it
    cannot be made."""
    spec = PEERS[resolve(key)]
    root = cache_root()
    target = root / spec.folder
    python = target / "bin" / "python"
    if (target / ".installed").is_file():
        return python
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PeerSetupError(f"cannot set up {spec.label}: cannot make {root}: {exc.strerror}") from None
    with open(root / f".{spec.key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one installer per venv, whatever the test workers do
        if (target / ".installed").is_file():
            return python
        base = sys.executable if spec.python is None else find_python(spec.python)
        if base is None:
            alt = f" (or Python {PEERS[FALLBACKS[key]].python} for its ctypes fallback)" if key in FALLBACKS else ""
            raise PeerSetupError(f"cannot set up {spec.label}: it needs Python {spec.python}{alt} (its wheels are "
                                 f"cp310) and none was found (python{spec.python} on PATH, pyenv versions, "
                                 f"$MLF_SPEC_PYTHON{spec.python.replace('.', '') if spec.python else ''})")
        if progress:
            print(f"mlf-spec: setting up {spec.label} in {target} (first use only; a minute or two)...",
                  file=sys.stderr, flush=True)
        start = time.monotonic()
        partial = target.with_name(target.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        shutil.rmtree(target, ignore_errors=True)
        try:
            _install(spec, base, partial)
        except BaseException:
            shutil.rmtree(partial, ignore_errors=True)  # nothing half-made is left
            raise
        os.rename(partial, target)
        if progress:
            print(f"mlf-spec: {spec.label} is ready ({time.monotonic() - start:.0f} s)", file=sys.stderr, flush=True)
    return python


__all__ = ["FALLBACKS", "PEERS", "PeerSetupError", "PeerSpec", "cache_root", "ensure", "environment", "find_python",
           "is_ready", "resolve", "venv_python"]
