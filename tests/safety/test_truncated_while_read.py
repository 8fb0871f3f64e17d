"""A file that another process truncates while the command line reads it is an error
line (exit status 2), never a death by SIGBUS (issue 19). The truncation is made from a
hook in the child process, at a point where the command has taken the file's size and
then reads its bytes: deterministic, and a real truncation of the real file."""

from __future__ import annotations

import gzip
import io
import os
import signal
import subprocess
import sys
import tarfile
import textwrap
from pathlib import Path

import numpy as np
import pytest

from mlf_spec import params

ROOT = Path(__file__).resolve().parents[2]
V7 = ROOT / "vectors" / "mlf-archive" / "migration.archive.v7.io.graph.to-v5.tar"

# In the child: once the command has taken the size of TARGET (os.fstat), TARGET is cut to a
# quarter of its size just before ("before") or just after ("after") its first read of it (a
# pread, or a mapping; "map": only a mapping). A reader of a mapping dies of SIGBUS here;
# the command line must not.
HOOK = textwrap.dedent('''
    import mmap, os, sys
    target, after = sys.argv[1], sys.argv[2]
    state = {"fd": set(), "done": False}
    real_fstat, real_pread, real_preadv, real_mmap = os.fstat, os.pread, os.preadv, mmap.mmap

    def mine(fd):
        try:
            return os.path.samefile(f"/proc/self/fd/{fd}", target)
        except OSError:
            return False

    def fstat(fd, *a, **k):
        st = real_fstat(fd, *a, **k)
        if isinstance(fd, int) and mine(fd):
            state["fd"].add(fd)
        return st

    def cut(fd):
        if not state["done"] and fd in state["fd"]:
            state["done"] = True
            os.truncate(target, os.path.getsize(target) // 4)

    def pread(fd, *a):
        if after == "map":
            return real_pread(fd, *a)
        if after == "before":
            cut(fd)
        out = real_pread(fd, *a)
        cut(fd)
        return out

    def preadv(fd, *a):
        if after == "map":
            return real_preadv(fd, *a)
        if after == "before":
            cut(fd)
        out = real_preadv(fd, *a)
        cut(fd)
        return out

    class Map(real_mmap):
        def __new__(cls, fd, *a, **k):
            m = real_mmap.__new__(cls, fd, *a, **k)
            if isinstance(fd, int) and mine(fd):  # (the compiled walker took the size without os.fstat)
                state["fd"].add(fd)
            cut(fd)
            return m

    # a compressed archive is read by read() while it is decompressed: cut it at its first read
    import mlf_spec._compress as compress
    real_decompress_to = compress.decompress_to

    class Cut:
        def __init__(self, src):
            self.src = src

        def read(self, n=-1):
            if after == "before" and not state["done"]:
                state["done"] = True
                os.truncate(target, os.path.getsize(target) // 4)
            out = self.src.read(n)
            if after == "after" and not state["done"]:
                state["done"] = True
                os.truncate(target, os.path.getsize(target) // 4)
            return out

    def decompress_to(src, *a, **k):
        same = isinstance(getattr(src, "name", None), str) and os.path.samefile(src.name, target)
        return real_decompress_to(Cut(src) if same else src, *a, **k)

    compress.decompress_to = decompress_to
    os.fstat, os.pread, os.preadv, mmap.mmap = fstat, pread, preadv, Map
    from mlf_spec.cli import main
    sys.exit(main(sys.argv[3:]))
''')


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("cut")
    rng = np.random.default_rng(7)
    tensors = {f"w{i}": rng.standard_normal((64, 64 + i)).astype(np.float32) for i in range(40)}
    tensors.update({f"b{i}": np.full(16, i, np.float32) for i in range(40)})
    for name in ("a", "b"):
        params.save(tensors, d / f"{name}.params")
    return d


# (command, argv, when): "before" cuts the file before the command's first read of it (after
# it took the size); "after" right after that read, for the commands that go on reading
COMMANDS = [
    ("params dump", ["params", "dump", "{a}"], "before"),
    ("params dump", ["params", "dump", "--stats", "{a}"], "after"),
    ("params dump --json", ["params", "dump", "--json", "{a}"], "after"),
    ("params check", ["params", "check", "{a}"], "before"),
    ("check", ["check", "{a}"], "before"),
    ("diff", ["diff", "{b}", "{a}"], "before"),
    ("diff", ["diff", "{b}", "{a}"], "after"),
    ("params convert", ["params", "convert", "{a}", "{out}"], "before"),
    ("params convert", ["params", "convert", "{a}", "{out}"], "after"),
]


@pytest.mark.parametrize("label,argv,when", COMMANDS, ids=[f"{c[0]}-{c[2]}" for c in COMMANDS])
def test_a_file_truncated_while_read_is_an_error_not_sigbus(files, tmp_path, label, argv, when):
    a = tmp_path / "a.params"
    a.write_bytes((files / "a.params").read_bytes())
    out = tmp_path / "out.npz"
    args = [x.format(a=a, b=files / "b.params", out=out) for x in argv]
    # the hook cuts the file at the reads Python makes: the generated header reader's (the
    # compiled walker reads by its own pread; tests/params/test_walker.py cuts the file under it)
    env = {**os.environ, "MLF_SPEC_PURE_PYTHON": "1"}
    r = subprocess.run([sys.executable, "-c", HOOK, str(a), when, *args], capture_output=True, text=True,
                       timeout=120, env=env)
    assert r.returncode != -signal.SIGBUS, f"{label}: died of SIGBUS"
    assert r.returncode == 2, (label, r.returncode, r.stderr[-2000:])
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert "file shrank while it was being read" in lines[0] and str(a) in lines[0], lines[0]
    assert not out.exists() and not list(tmp_path.glob(".*tmp"))


def test_the_hook_really_truncates_a_mapped_read(files, tmp_path):
    """The same hook kills a reader of a mapping (so the tests above could fail)."""
    a = tmp_path / "a.params"
    a.write_bytes((files / "a.params").read_bytes())
    code = HOOK.replace("from mlf_spec.cli import main\nsys.exit(main(sys.argv[3:]))", textwrap.dedent('''
        from mlf_spec import params
        with params.open(target) as p:
            sum(float(p[k].sum()) for k in p)
    '''))
    r = subprocess.run([sys.executable, "-c", code, str(a), "map"], capture_output=True, text=True, timeout=120)
    assert r.returncode == -signal.SIGBUS, (r.returncode, r.stderr[-500:])


def _with_params(src: Path, data: bytes) -> bytes:
    """The archive ``src`` with its params member replaced by ``data``."""
    out = io.BytesIO()
    with tarfile.open(src) as t, tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as w:
        for m in t.getmembers():
            body = t.extractfile(m).read() if m.isfile() else None
            if m.name.endswith(".params"):
                body = data
                m.size = len(body)
            w.addfile(m, io.BytesIO(body) if body is not None else None)
    return out.getvalue()


@pytest.fixture(scope="module")
def archives(tmp_path_factory):
    """Two v7 MLF archives (.tar and .tar.gz) whose params member is 1 MiB of random data, so
    that a cut to a quarter falls inside it (headers and data after it are gone)."""
    d = tmp_path_factory.mktemp("cut-mlf")
    rng = np.random.default_rng(9)
    for name in ("a", "b"):
        tensors = {"p0": rng.standard_normal((256, 1024)).astype(np.float32)}
        data = _with_params(V7, params.dumps(tensors))
        (d / f"{name}.tar").write_bytes(data)
        (d / f"{name}.tar.gz").write_bytes(gzip.compress(data, compresslevel=1))
    return d


# (label, argv, when, suffix): every command that reads an MLF archive
ARCHIVE_COMMANDS = [
    ("check", ["check", "{a}"], "before", ".tar"),
    ("check", ["check", "{a}"], "after", ".tar"),
    ("check --json", ["check", "--json", "{a}"], "before", ".tar.gz"),
    ("inspect", ["inspect", "{a}"], "after", ".tar.gz"),
    ("diff", ["diff", "{b}", "{a}"], "after", ".tar"),
    ("extract", ["extract", "{a}", "-o", "{out}"], "after", ".tar"),
    ("downgrade", ["downgrade", "--to", "5", "{a}", "-o", "{out}"], "after", ".tar"),
    ("upgrade", ["upgrade", "{a}", "-o", "{out}"], "before", ".tar.gz"),
]


@pytest.mark.parametrize("label,argv,when,suffix", ARCHIVE_COMMANDS,
                         ids=[f"{c[0]}-{c[2]}-{c[3][1:]}" for c in ARCHIVE_COMMANDS])
def test_an_archive_truncated_while_read_is_an_error_not_sigbus(archives, tmp_path, label, argv, when, suffix):
    """MLF archives are read by pread (never mapped) on every command: a cut is one error line."""
    a = tmp_path / f"a{suffix}"
    a.write_bytes((archives / f"a{suffix}").read_bytes())
    out = tmp_path / "out"
    args = [x.format(a=a, b=archives / f"b{suffix}", out=out) for x in argv]
    # the hook cuts the file at the reads Python makes: the generated header reader's (the
    # compiled walker reads by its own pread; tests/params/test_walker.py cuts the file under it)
    env = {**os.environ, "MLF_SPEC_PURE_PYTHON": "1"}
    r = subprocess.run([sys.executable, "-c", HOOK, str(a), when, *args], capture_output=True, text=True,
                       timeout=120, env=env)
    assert r.returncode != -signal.SIGBUS, f"{label}: died of SIGBUS"
    assert r.returncode == 2, (label, r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert str(a) in lines[0], lines[0]
    # a plain tar says what happened; a compressed one ends inside its stream
    words = "file shrank while it was being read" if suffix == ".tar" else "truncated"
    assert words in lines[0].lower() or (suffix != ".tar" and "ends" in lines[0]), lines[0]
    assert a.stat().st_size < (archives / f"a{suffix}").stat().st_size  # the cut was made
    assert not out.exists() and not list(tmp_path.glob(".*tmp"))


def test_the_hook_really_truncates_a_mapped_archive(archives, tmp_path):
    """The same hook kills the library's mapped archive reader (so the tests above could fail)."""
    a = tmp_path / "a.tar"
    a.write_bytes((archives / "a.tar").read_bytes())
    code = HOOK.replace("from mlf_spec.cli import main\nsys.exit(main(sys.argv[3:]))", textwrap.dedent('''
        real_cut = cut

        def cut(fd):  # the mapped reader takes the size by seeking: its descriptor is the one cut
            state["fd"].add(fd)
            real_cut(fd)

        from mlf_spec import archive
        with archive.open(target) as a:
            print(sum(len(bytes(m.view())) for m in a.members))
    '''))
    r = subprocess.run([sys.executable, "-c", code, str(a), "map"], capture_output=True, text=True, timeout=120)
    assert r.returncode == -signal.SIGBUS, (r.returncode, r.stderr[-500:])


@pytest.mark.parametrize("argv", [["check", "{d}"], ["cache", "dump", "--json", "{d}"]], ids=["check", "cache dump"])
def test_a_cache_shard_truncated_while_read_is_an_error_not_sigbus(tmp_path, argv):
    """Tensor-cache shards are read by pread too (the MD5 of check, the arrays and digests of dump)."""
    from mlf_spec.cache import codec as cache

    rng = np.random.default_rng(3)
    d = tmp_path / "cache"
    cache.write(d, {f"w{i}": rng.standard_normal((256, 256)).astype(np.float32) for i in range(8)})
    shard = d / "params_shard_0.bin"
    size = shard.stat().st_size
    r = subprocess.run([sys.executable, "-c", HOOK, str(shard), "before", *[x.format(d=d) for x in argv]],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != -signal.SIGBUS and r.returncode == 2, (r.returncode, r.stderr[-2000:])
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr and str(shard) in lines[0], r.stderr[-2000:]
    assert "file shrank while it was being read" in lines[0] or "go past the shard's" in lines[0], lines[0]
    assert shard.stat().st_size < size


# in the child: safetensors opens TARGET (mapped, or with backend="pread"), then it is cut
# to a quarter before the tensors are read
SAFETENSORS_HOOK = textwrap.dedent('''
    import os, sys
    import safetensors.numpy as stn
    target = sys.argv[1]
    real = stn.safe_open

    class Opened:
        def __init__(self, name, *a, **k):
            self.inner = real(name, *a, **k)
            self.cut = os.path.samefile(name, target)

        def __enter__(self):
            f = self.inner.__enter__()
            if self.cut:
                os.truncate(target, os.path.getsize(target) // 4)
            return f

        def __exit__(self, *exc):
            return self.inner.__exit__(*exc)

    stn.safe_open = Opened
''')


@pytest.mark.parametrize("via", ["cli", "mapped"])
def test_a_safetensors_file_truncated_while_read(tmp_path, via):
    """``params convert`` reads .safetensors with safetensors' pread backend: a cut after the
    file was opened is an error line; the same cut kills a mapped reader (the control)."""
    pytest.importorskip("safetensors")
    from safetensors.numpy import save_file

    rng = np.random.default_rng(5)
    src = tmp_path / "a.safetensors"
    save_file({f"w{i}": rng.standard_normal((256, 256)).astype(np.float32) for i in range(16)}, str(src))
    out = tmp_path / "out.params"
    if via == "mapped":
        code = SAFETENSORS_HOOK + "print(sum(float(v.sum()) for v in stn.load_file(target).values()))\n"
        r = subprocess.run([sys.executable, "-c", code, str(src)], capture_output=True, text=True, timeout=120)
        assert r.returncode == -signal.SIGBUS, (r.returncode, r.stderr[-500:])
        return
    code = SAFETENSORS_HOOK + "from mlf_spec.cli import main\nsys.exit(main(sys.argv[2:]))\n"
    r = subprocess.run([sys.executable, "-c", code, str(src), "params", "convert", str(src), str(out)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != -signal.SIGBUS and r.returncode == 2, (r.returncode, r.stderr[-2000:])
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr and str(src) in lines[0], r.stderr[-2000:]
    assert not out.exists() and not list(tmp_path.glob(".*tmp"))


def test_safetensors_before_its_pread_backend_is_read_by_our_pread(tmp_path, monkeypatch):
    """safetensors older than 0.8 has no ``backend``: the file is read by pread into memory
    and parsed from the bytes (the same arrays and metadata)."""
    pytest.importorskip("safetensors")
    import safetensors.numpy as stn

    from mlf_spec.params import convert

    src = tmp_path / "a.safetensors"
    want = {"a": np.arange(6, dtype=np.int16).reshape(2, 3), "b": np.ones(4, np.float32)}
    stn.save_file(want, str(src), metadata={"k": "v"})
    real = stn.load_file

    def old_load_file(name, **kw):
        if kw:
            raise TypeError(f"load_file() got an unexpected keyword argument {next(iter(kw))!r}")
        raise AssertionError("the mapped reader was used")

    monkeypatch.setattr(stn, "load_file", old_load_file)
    got = convert.read_any(str(src))
    monkeypatch.setattr(stn, "load_file", real)
    assert got.keys() == convert.read_any(str(src)).keys() == want.keys()
    for k in want:
        assert np.array_equal(got[k], want[k]) and got[k].dtype == want[k].dtype
