"""Hostile resources of issue 19: every case is made here (nothing large is checked in) and
run as the command line in a child process under an address-space cap (RLIMIT_AS) and a
time limit; each asserts no traceback, an exit status of 0, 1 or 2, what the output holds
and that nothing is left behind."""

from __future__ import annotations

import io
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

from mlf_spec import blob, params
from mlf_spec.blob.codec import Module
from mlf_spec.blob.locate import SYMBOL_FFI
from mlf_spec.errors import MlfError
from mlf_spec.fuzzing.seeds import blob_seeds, elf_with_blob

ROOT = Path(__file__).resolve().parents[2]
V7 = ROOT / "vectors" / "mlf-archive" / "migration.archive.v7.io.graph.to-v5.tar"
MiB = 1 << 20
CAP = 1536 * MiB  # address space of one CLI run: the interpreter, numpy and the case


def run(args: list[str], cwd: Path, *, stdin: bytes | None = None, cap: int = CAP, cpu: int = 60,
        timeout: float = 600, env: dict[str, str] | None = None,
        statuses: tuple[int, ...] = (0, 1, 2)) -> subprocess.CompletedProcess:
    """``mlf-spec ARGS`` in a child under the caps; asserts the exit status and no traceback.
    Time is bounded in CPU seconds (RLIMIT_CPU: SIGXCPU fails the status check), which a loaded
    machine does not change; the wall-clock ``timeout`` only stops a child that blocks."""

    def limits() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))

    full_env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", **(env or {})}
    p = subprocess.run([sys.executable, "-m", "mlf_spec", *args], cwd=cwd, input=stdin, capture_output=True,
                       timeout=timeout, preexec_fn=limits, env=full_env)
    err = p.stderr.decode("utf-8", "replace")
    assert "Traceback" not in err, err[-3000:]
    assert p.returncode in statuses, (p.returncode, err[-2000:])
    return p


def children_cpu() -> float:
    """CPU seconds used so far by the waited-for children of this process (user + system)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def cli(args: list[str], cwd: Path, capsys, monkeypatch) -> tuple[int, str, str]:
    """``mlf-spec ARGS`` in this process (no cap: for cases whose point is not memory);
    an exception other than SystemExit fails the test as the traceback it would print."""
    from mlf_spec.cli import main

    monkeypatch.chdir(cwd)
    capsys.readouterr()
    status = main(args)
    out, err = capsys.readouterr()
    assert status in (0, 1, 2), (status, err)
    return status, out, err


def leftovers(directory: Path) -> list[str]:
    """Temporary files of this package under ``directory``."""
    return [str(p) for p in directory.rglob("*") if "mlf-spec-" in p.name]


def lib_chain(n: int) -> bytes:
    mods = [Module.lib() for _ in range(n)]
    for a, b in zip(mods, mods[1:]):
        a.imports.append(b)
    return blob.build(mods[0], order=mods)


def lib_dag(n: int, fan: int = 8) -> bytes:
    mods = [Module.lib() for _ in range(n)]
    for i, a in enumerate(mods):
        a.imports.extend(mods[i + 1:i + 1 + fan])
    return blob.build(mods[0], order=mods)


def rewrite_tar(src: Path, change: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(src) as t, tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as w:
        for m in t.getmembers():
            data = t.extractfile(m).read() if m.isfile() else None
            if m.name in change:
                data = change[m.name]
                m.size = len(data)
            w.addfile(m, io.BytesIO(data) if data is not None else None)
    return out.getvalue()


# ----------------------------------------------------------------- resource bounds


def test_blob_dump_text_is_linear_in_the_blob(tmp_path):
    (tmp_path / "chain.bin").write_bytes(lib_chain(10_000))  # 280 KB: 10^5 took 23.8 GB before
    (tmp_path / "dag.bin").write_bytes(lib_dag(10_000))  # 840 KB, 8 imports per module
    t0 = children_cpu()  # CPU time, not wall time: the same bound on a loaded machine
    chain = run(["blob", "dump", "chain.bin"], tmp_path, cap=1024 * MiB)
    dag = run(["blob", "dump", "dag.bin"], tmp_path, cap=1024 * MiB)
    assert children_cpu() - t0 < 40
    lines = chain.stdout.splitlines()
    assert max(len(line) for line in lines) < 300  # indentation stops at MAX_INDENT levels
    assert b"(depth 10000) [9999] _lib" in chain.stdout
    # every module once, every further edge a short reference: at most 10x the blob
    assert len(dag.stdout) < 10 * (tmp_path / "dag.bin").stat().st_size
    assert dag.stdout.count(b"(shown above)") == 8 * 10_000 - 36 - 9_999


def test_no_single_write_of_the_output_is_larger_than_a_mib(monkeypatch):
    """Linux writes at most 2,147,479,552 bytes in one call: a dense DAG's dump printed exactly
    that and lost the rest. Text and JSON pieces go out a MiB at a time, all of them."""
    from mlf_spec.cli import _batch

    sizes: list[int] = []

    class Out:
        def write(self, text: str) -> int:
            sizes.append(len(text))
            return len(text)

        def flush(self) -> None:
            pass

    monkeypatch.setattr(sys, "stdout", Out())
    _batch._emit(_batch.Outcome(0, text="x" * (5 * MiB + 3)), False)
    _batch._emit(_batch.Outcome(0, pieces=iter(["y" * (3 * MiB), "z"])), True)
    assert max(sizes) <= MiB and sum(sizes) == (5 * MiB + 3 + 1) + (3 * MiB + 1 + 1), sizes


def test_blob_diff_is_iterative_and_linear(tmp_path):
    (tmp_path / "a.bin").write_bytes(lib_chain(1500))  # was RecursionError
    (tmp_path / "b.bin").write_bytes(lib_chain(1501))
    p = run(["diff", "a.bin", "b.bin"], tmp_path)
    assert p.returncode == 1 and b"added" in p.stdout
    assert max(len(line) for line in p.stdout.splitlines()) < 1000  # paths shortened beyond depth 32
    (tmp_path / "dag.bin").write_bytes(lib_dag(10_000))
    (tmp_path / "small.bin").write_bytes(lib_chain(3))
    t0 = children_cpu()
    p = run(["diff", "dag.bin", "small.bin", "--json"], tmp_path, cap=1024 * MiB)
    assert children_cpu() - t0 < 30
    json.loads(p.stdout)


def test_a_long_tar_trailer_is_streamed_and_reported(tmp_path):
    path = tmp_path / "tail.tar"
    shutil.copy(V7, path)
    with open(path, "r+b") as f:  # 512 MiB of zeros after the archive, as a sparse file
        f.truncate(V7.stat().st_size + (512 << 20))
    # the file is mapped (address space), the trailer read a MiB at a time (no heap)
    p = run(["check", "tail.tar", "--json"], tmp_path, cap=CAP // 2 + (512 << 20))
    doc = json.loads(p.stdout)
    pad = [f for f in doc["findings"] if f["code"] == "layout.padding"]
    assert pad and "more than the" in pad[0]["message"], doc["findings"]


def test_duplicate_names_are_found_in_linear_time(tmp_path):
    names = [f"t{i % 50_000}" for i in range(100_000)]
    from mlf_spec.params.codec import ParamsFile, dumps

    (tmp_path / "d.params").write_bytes(dumps(ParamsFile([(n, np.zeros((), "i1"), None) for n in names])))
    t0 = children_cpu()
    p = run(["params", "check", "d.params", "--json"], tmp_path)
    assert children_cpu() - t0 < 30
    doc = json.loads(p.stdout)
    dup = [f for f in doc["findings"] if f["code"] == "params.duplicate-name"]
    assert len(dup) >= 50 and "names[0]" in json.dumps(dup[0]), dup[:2]


def test_standard_input_is_spooled_not_held(tmp_path, monkeypatch):
    import tracemalloc

    from mlf_spec.cli import _batch

    class Stdin:
        buffer = io.BytesIO(bytes(40 * MiB))

    monkeypatch.setattr(sys, "stdin", Stdin)
    tracemalloc.start()
    try:
        spooled = _batch.read_stdin()
        used = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert isinstance(spooled, str) and os.path.getsize(spooled) == 40 * MiB
    assert used < 20 * MiB + 2 * MiB  # the in-memory head and one MiB slice, not the whole input
    Stdin.buffer = io.BytesIO(bytes(3 * MiB))
    monkeypatch.setattr(_batch, "STDIN_IN_MEMORY", 1 * MiB)
    with pytest.raises(MlfError, match="more than"):
        _batch.read_stdin(limit=2 * MiB)
    p = run(["check", "-"], tmp_path, stdin=bytes(40 * MiB))
    assert b"<stdin>" in p.stdout and b"/tmp" not in p.stdout + p.stderr


# ----------------------------------------------------------------- foreign exceptions


def test_json_integers_beyond_4300_digits(tmp_path, capsys, monkeypatch):
    meta = json.loads(tarfile.open(V7).extractfile("./metadata.json").read())
    meta["export_datetime"] = 0
    text = json.dumps(meta).replace('"export_datetime": 0', '"export_datetime": ' + "9" * 5000)
    (tmp_path / "big.tar").write_bytes(rewrite_tar(V7, {"./metadata.json": text.encode()}))
    for args in (["check", "big.tar"], ["inspect", "big.tar"], ["downgrade", "big.tar", "--to", "5", "--dry-run"],
                 ["diff", str(V7), "big.tar"]):
        status, out, err = cli(args, tmp_path, capsys, monkeypatch)
        assert "4300" in out + err or args[0] == "diff", (args, out, err)
    from mlf_spec import archive, graph_json, metadata

    for fn in (metadata.parse, graph_json.parse, lambda d: archive.open(tmp_path / "big.tar").modules):
        with pytest.raises(MlfError):
            fn(b'{"version": ' + b"1" * 5000 + b"}")


def test_a_corrupt_elf_read_from_a_path_is_an_mlf_error(tmp_path, capsys, monkeypatch):
    # e_shoff: 0x80 in its top byte seeks before the start of the file (EINVAL from a real
    # file); 0x1d in its second byte (the case) puts the section headers past its end
    for at, value, words in ((40, 0x80, "ELF"), (41, 0x1d, "e_shoff")):
        data = bytearray(elf_with_blob(blob_seeds()[0], SYMBOL_FFI, shared=True))
        data[at] = value
        (tmp_path / "bad.so").write_bytes(bytes(data))
        with pytest.raises(MlfError):
            blob.read(tmp_path / "bad.so")
        for args in (["blob", "dump", "bad.so"], ["blob", "check", "bad.so"], ["check", "bad.so"],
                     ["blob", "extract", "bad.so", "-o", "out.bin"]):
            status, out, err = cli(args, tmp_path, capsys, monkeypatch)
            assert status == 2 and words in err and err.count("\n") == 1, (args, err)
        assert not (tmp_path / "out.bin").exists()


def npz_bytes(arrays: dict[str, np.ndarray], meta: object | None = None) -> bytes:
    buf = io.BytesIO()
    extra = {} if meta is None else {"__mlf_spec__": np.array(json.dumps(meta))}
    np.savez(buf, **arrays, **extra)
    return buf.getvalue()


def npy_member(header: dict, data: bytes) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, header)
    return buf.getvalue() + data


def zip_of(members: dict[str, bytes], compression: int = zipfile.ZIP_STORED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression) as z:
        for n, d in members.items():
            z.writestr(n, d)
    return buf.getvalue()


def test_npz_and_safetensors_defects_are_clean_errors(tmp_path):
    a = np.arange(6, dtype="f4")
    cases = {
        "list_meta.npz": npz_bytes({"a": a}, [1, 2]),
        "bad_types.npz": npz_bytes({"a": a}, {"stored": {"a": {"code": "x", "shape": [6]}}}),
        "no_fields.npz": npz_bytes({"a": a}, {"stored": {"a": {}}}),
        "bad_order.npz": npz_bytes({"a": a}, {"order": ["zz"]}),
        "huge_shape.npz": zip_of({"a.npy": npy_member({"descr": "<f8", "fortran_order": False,
                                                       "shape": (1 << 40,)}, b"")}),
        "garbage_header.npz": zip_of({"a.npy": b"\x93NUMPY\x01\x00\x10\x00{'descr': (((((\n"}),
        "truncated.npz": npz_bytes({"a": a})[:-30],
        "bomb.npz": zip_of({"a.npy": npy_member({"descr": "|u1", "fortran_order": False, "shape": (96 * MiB,)},
                                                bytes(96 * MiB))}, zipfile.ZIP_DEFLATED),
        "garbage.safetensors": b"\x10\x00\x00\x00\x00\x00\x00\x00{not json at all}",
        "huge.safetensors": (lambda h: len(h).to_bytes(8, "little") + h)(
            json.dumps({"a": {"dtype": "F32", "shape": [1 << 40], "data_offsets": [0, 4 << 40]}}).encode()),
    }
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
    assert (tmp_path / "bomb.npz").stat().st_size < 1 * MiB
    (tmp_path / "good.npz").write_bytes(npz_bytes({"a": a}))
    p = run(["params", "convert", *cases, "good.npz", "-o", "outdir", "--to", "params"], tmp_path, cap=1024 * MiB)
    assert p.returncode == 2 and (tmp_path / "outdir" / "good.params").exists()  # the batch went on
    errors = [line for line in p.stderr.decode().splitlines() if line.startswith("mlf-spec: error:")]
    assert sorted(line.split(": ")[2] for line in errors) == sorted(cases), errors
    assert params.load(tmp_path / "outdir" / "good.params")
    assert sorted(os.listdir(tmp_path / "outdir")) == ["good.params"]


def test_a_bad_npz_converted_alone_leaves_nothing(tmp_path, capsys, monkeypatch):
    (tmp_path / "t.npz").write_bytes(npz_bytes({"a": np.ones(2)})[:-30])
    status, out, err = cli(["params", "convert", "t.npz", "o.params"], tmp_path, capsys, monkeypatch)
    assert status == 2 and err.count("\n") == 1 and not leftovers(tmp_path)
    assert sorted(os.listdir(tmp_path)) == ["t.npz"]


def test_names_an_npz_cannot_hold_are_refused(tmp_path):
    for name in ("caf\udce9", "n" * MiB):
        params.save({name: np.zeros(2, "f4")}, tmp_path / "x.params")
        p = run(["params", "convert", "x.params", "x.npz", "--force"], tmp_path)
        assert p.returncode == 2 and b"npz" in p.stderr and not (tmp_path / "x.npz").exists()


def test_testee_serve_answers_every_line(tmp_path):
    lines = b"[" * 100_000 + b"\n" + b'{"id": 2, "op": "decode", "format": "params", "input": ""}\n'
    p = run(["conformance", "testee", "serve"], tmp_path, stdin=lines)
    answers = [json.loads(x) for x in p.stdout.splitlines()]
    assert [a["id"] for a in answers] == [-1, 2] and answers[0]["error"]["class"] == "protocol"


def test_pax_sparse_map_message_is_ours(tmp_path):
    ti = tarfile.TarInfo("x")
    payload = b"garbage\n" + bytes(504) + b"data"
    ti.size = len(payload)
    ti.pax_headers = {"GNU.sparse.major": "1", "GNU.sparse.minor": "0", "GNU.sparse.name": "x",
                      "GNU.sparse.realsize": "10"}
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        t.addfile(ti, io.BytesIO(payload))
    (tmp_path / "s.tar").write_bytes(buf.getvalue())
    p = run(["check", "s.tar"], tmp_path)
    assert p.returncode == 2 and b"sparse" in p.stderr and b"invalid literal" not in p.stderr


# ----------------------------------------------------------------- faults


def test_fifos_in_folders_are_skipped_and_counted(tmp_path):
    d = tmp_path / "in"
    (d / "sub").mkdir(parents=True)
    shutil.copy(V7, d / "m.tar")
    params.save({"w": np.ones(3, "f4")}, d / "w.params")
    os.mkfifo(d / "pipe")
    os.mkfifo(d / "sub" / "p.params")
    (d / "lib.bin").write_bytes(lib_chain(3))
    os.mkfifo(d / "sub" / "q.bin")
    for args in (["check", "in"], ["params", "dump", "in"], ["upgrade", "in", "--dry-run"],
                 ["params", "convert", "in", "-o", "cv", "--to", "npz"], ["inspect", "in"], ["blob", "dump", "in"]):
        p = run(args, tmp_path, timeout=300)  # a FIFO opened would block until the (wall) timeout
        assert b"3 not a regular file" in p.stdout + p.stderr, (args, p.stderr)


def _tmpfs(tmp_path: Path, size: str) -> list[str] | None:
    """A command prefix that runs inside a user+mount namespace with a tiny tmpfs mounted
    at tmp_path/mnt (real ENOSPC), or None where namespaces are not allowed."""
    if shutil.which("unshare") is None:
        return None
    (tmp_path / "mnt").mkdir()
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", f"mount -t tmpfs -o size={size} tmpfs mnt"],
                           cwd=tmp_path, capture_output=True)
    return None if probe.returncode else ["unshare", "-rm", "sh", "-c"]


WRITERS = [
    ["params", "convert", "big.params", "{out}/o.npz"],
    ["params", "convert", "big.params", "{out}/o.params"],
    ["params", "convert", "big.params", "-o", "{out}/d", "--to", "npz"],
    ["blob", "extract", "b.bin", "-o", "{out}/b.bin"],
    ["conformance", "vectors", "{out}/v"],
    ["export", "ksy", "{out}/k"],
]


#: (how, which writers): EFBIG from RLIMIT_FSIZE for all of them (everywhere); a real
#: ENOSPC and EROFS from a tiny tmpfs in a user namespace, where the machine allows one.
WRITE_CASES = [("fsize", range(len(WRITERS))), ("enospc", (0, 2, 4, 5)), ("erofs", (1, 3))]


@pytest.mark.parametrize(("how", "which"), WRITE_CASES, ids=[c[0] for c in WRITE_CASES])
def test_write_errors_are_one_line_and_leave_nothing(tmp_path, how, which):
    params.save({"w": np.zeros(256 * 1024, "f4")}, tmp_path / "big.params")
    (tmp_path / "b.bin").write_bytes(lib_dag(5_000))
    (tmp_path / "out").mkdir()
    prefix = None
    if how != "fsize":
        prefix = _tmpfs(tmp_path, "16k")
        if prefix is None:
            pytest.skip("no user namespaces here: the fsize case covers the write errors")
    for argv in (WRITERS[i] for i in which):
        args = [a.format(out="mnt" if how != "fsize" else "out") for a in argv]
        if how == "fsize":  # RLIMIT_FSIZE: EFBIG on the write (Python ignores SIGXFSZ)
            def limits() -> None:
                resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

            p = subprocess.run([sys.executable, "-m", "mlf_spec", *args], cwd=tmp_path, capture_output=True,
                               preexec_fn=limits, timeout=120)
            left = [str(x) for x in (tmp_path / "out").iterdir()]
        else:
            ro = "mount -o remount,ro mnt && " if how == "erofs" else ""
            script = (f"mount -t tmpfs -o size=16k tmpfs mnt && {ro}{sys.executable} -m mlf_spec "
                      + " ".join(args) + "; s=$?; find mnt -mindepth 1; exit $s")
            p = subprocess.run([*prefix, script], cwd=tmp_path, capture_output=True, timeout=120)
            left = p.stdout.decode().split()  # what the tmpfs held before it went with the namespace
        err = p.stderr.decode()
        assert "Traceback" not in err and p.returncode == 2, (args, p.returncode, err)
        assert err.count("\n") == 1 and "cannot" in err, (args, err)
        assert not left, (args, left)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_signals_remove_temporary_files(tmp_path, sig):
    params.save({"w": np.zeros(32 * MiB, "f4")}, tmp_path / "big.params")
    removed = 0
    for _ in range(8):  # stop it while the temporary file exists (under load a try can miss the window)
        proc = subprocess.Popen([sys.executable, "-m", "mlf_spec", "params", "convert", "big.params", "o.npz",
                                 "--force"], cwd=tmp_path, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 20
        while not leftovers(tmp_path) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        if proc.poll() is None and leftovers(tmp_path):
            proc.send_signal(sig)
            err = proc.communicate(timeout=30)[1].decode()
            assert "Traceback" not in err
            if proc.returncode == 128 + sig:
                removed += 1
                assert not leftovers(tmp_path), leftovers(tmp_path)
                break
        else:
            proc.communicate(timeout=30)
    assert removed, "never caught the writer with its temporary file"


def test_sigterm_during_a_downgrade_removes_its_temporary_archive(tmp_path):
    """The issue's third leftover (``.dg.tar.*.tmp``, 240 MB): the archive writer streams the
    members into a temporary file beside the output, removed on SIGTERM."""
    source = b"// a line of a generated source file\n" * (48 * MiB // 37)  # a 48 MiB member to copy
    (tmp_path / "m.tar").write_bytes(rewrite_tar(V7, {"./codegen/host/src/default_lib0.cc": source}))
    removed = 0
    for _ in range(4):
        proc = subprocess.Popen([sys.executable, "-m", "mlf_spec", "downgrade", "m.tar", "--to", "6", "-o", "dg.tar",
                                 "--force"], cwd=tmp_path, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 30
        while not leftovers(tmp_path) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.002)
        if proc.poll() is None and leftovers(tmp_path):
            proc.send_signal(signal.SIGTERM)
            err = proc.communicate(timeout=30)[1].decode()
            assert "Traceback" not in err
            if proc.returncode == 128 + signal.SIGTERM:
                removed += 1
                assert not leftovers(tmp_path) and not (tmp_path / "dg.tar").exists(), leftovers(tmp_path)
                break
        else:
            proc.communicate(timeout=30)
    assert removed, "never caught the writer with its temporary file"


def test_a_later_write_clears_what_sigkill_left(tmp_path):
    stale = tmp_path / ".o.npz.mlf-spec-999999999-abcdefgh.tmp"
    stale.write_bytes(b"x")
    live = tmp_path / f".o.npz.mlf-spec-{os.getpid()}-abcdefgh.tmp"
    live.write_bytes(b"x")
    params.save({"w": np.ones(3, "f4")}, tmp_path / "w.params")
    run(["params", "convert", "w.params", "o.npz"], tmp_path)
    assert not stale.exists() and live.exists()  # a running writer's file is left alone


def test_extract_force_refuses_an_output_holding_the_input(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    shutil.copy(V7, d / "model.tar")
    p = run(["extract", "d/model.tar", "-o", "d", "--force"], tmp_path)
    assert p.returncode == 1 and (d / "model.tar").exists()
    p = run(["extract", "model.tar", "-o", ".", "--force"], d)
    assert p.returncode == 1 and (d / "model.tar").exists() and not [x for x in os.listdir(d) if x.endswith(".old")]


def test_a_symlinked_output_is_written_through(tmp_path):
    params.save({"w": np.ones(3, "f4")}, tmp_path / "w.params")
    target = tmp_path / "real.npz"
    target.write_bytes(b"old")
    (tmp_path / "link.npz").symlink_to(target)
    run(["params", "convert", "w.params", "link.npz", "--force"], tmp_path)
    assert (tmp_path / "link.npz").is_symlink() and np.load(target)["w"].tolist() == [1, 1, 1]


# ----------------------------------------------------------------- the terminal


def test_no_control_character_reaches_the_terminal(tmp_path, capsys, monkeypatch):
    evil = "\x1b]0;owned\x07\x1b[2J\x9b31m"
    (tmp_path / "m.tar").write_bytes(_tar_with_member(V7, "./" + evil))
    params.save({evil: np.ones(2, "f4")}, tmp_path / "e.params")
    odd = Module.of(evil, data=b"abc")  # a module kind with no grammar: blob dump prints it twice
    for name, root in (("k.bin", Module.lib(odd)), ("k2.bin", Module.lib(odd, odd))):
        (tmp_path / name).write_bytes(blob.build(root, order=[root, odd]))
    for args in (["check", "m.tar"], ["inspect", "m.tar"], ["params", "dump", "e.params"],
                 ["params", "check", "e.params"], ["check", evil], ["blob", "dump", "k.bin"],
                 ["blob", "check", "k.bin"], ["diff", "k.bin", "k2.bin"]):
        for extra in ([], ["--json"]):
            if args[0] == "inspect" or args[-1] == evil:
                extra = []
            status, out, err = cli(args + extra, tmp_path, capsys, monkeypatch)
            assert not any(c in out + err for c in "\x1b\x07\x9b"), (args, out, err)
            if args[:2] != ["params", "check"]:  # a conformant file's check names no tensor
                assert "\\u001b" in out + err or "\\x1b" in out + err, (args, out, err)
            for line in out.splitlines():
                if line.startswith("{"):
                    json.loads(line)


def _tar_with_member(src: Path, name: str) -> bytes:
    out = io.BytesIO()
    with tarfile.open(src) as t, tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as w:
        for m in t.getmembers():
            w.addfile(m, t.extractfile(m) if m.isfile() else None)
        extra = tarfile.TarInfo(name)
        extra.size = 1
        w.addfile(extra, io.BytesIO(b"x"))
    return out.getvalue()


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_narrow_encodings_get_escapes_not_tracebacks(tmp_path, encoding):
    params.save({"名前\udcff": np.ones(2, "f4")}, tmp_path / "n.params")
    (tmp_path / "n.tar").write_bytes(_tar_with_member(V7, "./名前\udcff"))
    for args in (["params", "dump", "n.params"], ["params", "check", "n.params"], ["inspect", "n.tar"],
                 ["check", "n.tar"]):
        p = run(args, tmp_path, env={"PYTHONIOENCODING": encoding})
        assert p.returncode in (0, 1) and b"Traceback" not in p.stderr, (args, p.stderr)
    assert b"\\u540d" in run(["params", "dump", "n.params"], tmp_path, env={"PYTHONIOENCODING": "ascii"}).stdout


# ----------------------------------------------------------------- blob round trip


def test_duplicate_import_edges_and_unreachable_modules_round_trip():
    child = Module.lib()
    root = Module.lib(child, child)
    data = blob.build(root, order=[root, child])
    b = blob.read(data)[0]
    m = b.modules()
    assert blob.build(m[0], order=m, format=b.format, era=b.era) == b.data
    lone = Module.lib()
    data = blob.build(root, order=[root, child, lone])  # a module the root does not reach
    b = blob.read(data)[0]
    m = b.modules()
    assert blob.build(m[0], order=m, format=b.format, era=b.era) == b.data
    with pytest.raises(MlfError):
        blob.build(root, order=[root])  # leaves out the child: an MlfError, not ValueError


# the CLI in a child that writes its own peak RSS (VmHWM: the memory of this process image;
# ru_maxrss of a child also counts the parent's pages it had at the fork)
OWN_PEAK = """
import sys
from mlf_spec.cli import main
status = main(sys.argv[2:])
with open("/proc/self/status") as f:
    hwm = next(line for line in f if line.startswith("VmHWM:"))
with open(sys.argv[1], "w") as out:
    out.write(hwm.split()[1])
sys.exit(status)
"""


def _peak_rss(args: list[str], cwd: Path) -> tuple[int, bytes]:
    """(peak RSS in bytes of the CLI's own process, standard output) of ``mlf-spec ARGS``."""
    p = subprocess.run([sys.executable, "-c", OWN_PEAK, str(cwd / "hwm.txt"), *args], cwd=cwd, capture_output=True,
                       timeout=120, env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    assert p.returncode == 0, p.stderr[-2000:]
    return int((cwd / "hwm.txt").read_text()) * 1024, p.stdout


def test_a_member_read_whole_costs_about_its_size(tmp_path):
    """``blob dump`` of an export tar reads the member holding the blob whole (README: memory
    about the largest such member, up to ``max_size``): a 64 MiB member costs about 64 MiB
    more than a small one, not a multiple of the archive; over ``max_size`` it is refused."""

    def export_tar(pad: int) -> bytes:
        out = io.BytesIO()
        with tarfile.open(fileobj=out, mode="w") as t:
            for name, data in (("lib0.o", bytes(1000)),
                               ("devc.o", elf_with_blob(lib_chain(3), SYMBOL_FFI, shared=False) + bytes(pad))):
                info = tarfile.TarInfo(name)
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))
        return out.getvalue()

    (tmp_path / "small.tar").write_bytes(export_tar(0))
    (tmp_path / "big.tar").write_bytes(export_tar(64 * MiB))
    base, small = _peak_rss(["blob", "dump", "small.tar"], tmp_path)
    rss, big = _peak_rss(["blob", "dump", "big.tar"], tmp_path)
    assert big.replace(b"big.tar", b"small.tar") == small
    assert 48 * MiB < rss - base < 160 * MiB, (rss - base) / MiB  # 64 MiB measured
    with pytest.raises(MlfError, match="max_size"):
        blob.read(tmp_path / "big.tar", max_size=32 * MiB)


def test_params_dump_of_many_zero_dimensional_tensors_costs_under_a_kib_each(tmp_path):
    """10^6 such tensors took 8.6 s of CPU and 1.3 GB in ``params dump`` (1.3 KiB each)."""
    from mlf_spec.params.codec import ParamsFile, dumps

    n = 200_000
    zero = np.zeros((), "i1")
    (tmp_path / "many.params").write_bytes(dumps(ParamsFile([(f"t{i}", zero, None) for i in range(n)])))
    (tmp_path / "one.params").write_bytes(dumps(ParamsFile([("t0", zero, None)])))
    base, _ = _peak_rss(["params", "dump", "one.params"], tmp_path)
    rss, out = _peak_rss(["params", "dump", "many.params"], tmp_path)
    lines = out.decode().splitlines()
    assert len(lines) == n + 3 and lines[-1].split()[:3] == [f"t{n - 1}", "int8", "scalar"]
    assert (rss - base) / n < 1024, (rss - base) / n
    # --json is streamed: beside the file's index (the library's, measured alone below) it
    # holds 32 bytes per tensor (the digest) and a MiB of text (10^6 tensors: 1.10 -> 0.57 GB)
    rss_json, out = _peak_rss(["params", "dump", "--json", "many.params"], tmp_path)
    assert len(json.loads(out)["tensors"]) == n
    index = subprocess.run([sys.executable, "-c", INDEX_ONLY, "many.params"], cwd=tmp_path, capture_output=True,
                           text=True, check=True, env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    rss_index = int(index.stdout)
    assert (rss_json - rss_index) / n < 160, ((rss_json - rss_index) / n, rss_json, rss_index)
    assert (rss_json - base) / n < 1024, (rss_json - base) / n


# the peak RSS of the CLI's imports and the opened file's index, nothing printed
INDEX_ONLY = """
import sys
import mlf_spec.cli, mlf_spec.params.listing, mlf_spec.params.stats  # what params dump imports
from mlf_spec.params import codec
with codec.open(sys.argv[1], strict=False, mapped=False) as lazy:
    assert lazy.index
with open("/proc/self/status") as f:
    print(int(next(line for line in f if line.startswith("VmHWM:")).split()[1]) * 1024)
"""


def test_streamed_json_dump_is_the_document_byte_for_byte(tmp_path, monkeypatch):
    """``params dump --json`` writes json_pieces; they join to json.dumps of dump_document,
    also across piece boundaries, with stats and values, a name that is not UTF-8 and a
    path that is not either (the whole line then ASCII-escaped, as before)."""
    from mlf_spec.params import listing
    from mlf_spec.params.codec import ParamsFile, dumps
    from mlf_spec.params.codec import open as open_params

    tensors = [(f"w{i}", np.arange(i + 3, dtype=np.float32) - 1.5, None) for i in range(40)]
    tensors += [("é\udcff", np.array([np.nan, np.inf, 0], np.float32), None), ("z", np.zeros((0, 2), "i1"), None),
                ("c", np.array([1 + 2j], np.complex64), None)]
    f = tmp_path / "x.params"
    f.write_bytes(dumps(ParamsFile(tensors)))
    monkeypatch.setattr(listing, "_PIECE", 100)  # many pieces
    for path in ("x.params", "bad\udcffname.params"):
        for stats, values in ((False, None), (True, 3)):
            with open_params(f, strict=False, mapped=False) as lazy:
                doc = listing.dump_document(lazy, path=path, stats=stats, values=values)
            want = json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
            try:
                want.encode("utf-8")
            except UnicodeEncodeError:
                want = json.dumps(doc, ensure_ascii=True, separators=(",", ":"))
            pieces = list(listing.json_pieces(open_params(f, strict=False, mapped=False), path=path, stats=stats,
                                              values=values))
            assert len(pieces) > 10 and "".join(pieces) == want, path


def test_a_json_dump_cut_short_ends_its_line_and_says_why(tmp_path, capsys, monkeypatch):
    """An MlfError while the pieces are written (the file read again for --stats, cut
    meanwhile) ends the line, prints the error object and the error line: exit 2."""
    from mlf_spec.params import listing

    params.save({"a": np.ones(3, np.float32)}, tmp_path / "x.params")
    real = listing.json_pieces

    def failing(lazy, **kw):
        pieces = real(lazy, **kw)

        def gen():
            yield next(pieces)
            raise MlfError("file shrank while it was being read", offset=7)
        return gen()

    monkeypatch.setattr(listing, "json_pieces", failing)
    status, out, err = cli(["params", "dump", "--json", "x.params"], tmp_path, capsys, monkeypatch)
    assert status == 2
    lines = out.splitlines()
    assert len(lines) == 2 and lines[0].startswith('{"path":"x.params"'), out
    assert json.loads(lines[1])["error"]["message"] == "file shrank while it was being read"
    assert err.strip().splitlines() == ["mlf-spec: error: x.params: offset 7 (0x7): file shrank while it was being read"]
