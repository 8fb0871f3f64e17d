"""A file that another process truncates while the command line reads it is an error
line (exit status 2), never a death by SIGBUS (issue 19). The truncation is made from a
hook in the child process, at a point where the command has taken the file's size and
then reads its bytes: deterministic, and a real truncation of the real file."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from mlf_spec import params

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
            cut(fd)
            return m

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
    r = subprocess.run([sys.executable, "-c", HOOK, str(a), when, *args], capture_output=True, text=True,
                       timeout=120)
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
