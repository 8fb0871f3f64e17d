"""The compiled header walker (mlf_spec/params/_walker.c) against the generated Python reader,
its reference: on every .params vector, on hypothesis-drawn valid and broken files, on every
truncation and header byte flip of a small file and on hostile counts, both give the same
index (names, header values, data offsets, end, dtypes) or the same error (class, field
path, byte offset); the public ``params.open`` / ``load`` give the same result either way.
The walker must be built in the test environment (so CI never runs the fallback unawares)."""

from __future__ import annotations

import contextlib
import os
import struct
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mlf_spec.generated.params_fast import PARAMS_MAGIC
from mlf_spec.generated.tensor_fast import TENSOR_MAGIC

from mlf_spec import params
from mlf_spec.errors import MlfError
from mlf_spec.params import accel, codec
from mlf_spec.strategies import broken_params_bytes, params_bytes

ROOT = Path(__file__).resolve().parents[2]
VECTORS = sorted((ROOT / "vectors" / "params").glob("*.params"))
W = accel._load()


def test_the_compiled_walker_is_built_and_used():
    assert W is not None, "mlf_spec.params._walker was not built: install with a C compiler (pip install -e .)"
    if os.environ.get(accel.ENV, "") in ("", "0"):
        assert accel.walker() is W
    assert (W.PARAMS_MAGIC, W.TENSOR_MAGIC) == (PARAMS_MAGIC, TENSOR_MAGIC)
    with accel.pure_python():
        assert accel.walker() is None


def test_the_walker_takes_its_constants_from_the_generated_header():
    """The magics, the ndim bound, the header offsets and the read windows are stated once, in
    the spec: _walker.c includes generated/params_walker.h and defines none of them itself,
    and the Python index reader reads the same windows."""
    import re

    from mlf_spec.generated import params_read_windows_table as windows
    from mlf_spec.generated.tensor_fast import TENSOR_RECORD_OFFSETS

    from mlf_spec.params import index

    source = (ROOT / "mlf_spec" / "params" / "_walker.c").read_text()
    header = (ROOT / "generated" / "params_walker.h").read_text()
    defined = dict(re.findall(r"^#define (\w+) (\S+)", header, re.M))
    assert '#include "params_walker.h"' in source
    own = set(re.findall(r"^\s*#define (\w+)", source, re.M))
    assert not own & set(defined), own & set(defined)
    assert int(defined["MAX_NDIM"]) == W.MAX_NDIM == 64
    assert int(defined["PARAMS_MAGIC"].removesuffix("ULL"), 16) == PARAMS_MAGIC
    assert int(defined["TENSOR_MAGIC"].removesuffix("ULL"), 16) == TENSOR_MAGIC
    assert {k: int(defined[f"REC_{k.upper()}"]) for k in ("magic", "reserved", "ndim")} == {
        k: TENSOR_RECORD_OFFSETS[k] for k in ("magic", "reserved", "ndim")}
    assert int(defined["REC_DEVICE_TYPE"]) == TENSOR_RECORD_OFFSETS["device"]
    assert int(defined["REC_DTYPE_CODE"]) == TENSOR_RECORD_OFFSETS["dtype"]
    rows = {r["id"]: r["bytes"] for r in windows.ROWS}
    for r in windows.ROWS:
        if r["reader"] != "python":
            assert int(defined[r["id"].upper()]) == r["bytes"]
    assert (index.FIRST, index._WINDOW, index._HEAD_WINDOW, index._DENSE_WINDOW, index._SPARSE_MIN) == (
        rows["first"], rows["window"], rows["head_window"], rows["dense_window"], rows["sparse_min"])


def _reference(path: Path) -> tuple:
    """The generated reader's walk (by pread, every record) or its error."""
    with accel.pure_python():
        fd = os.open(path, os.O_RDONLY)
        try:
            idx = codec._pread_index(fd, os.fstat(fd).st_size, None, False, True)
        except MlfError as e:
            return ("error", type(e).__name__, e.field, e.offset)
        finally:
            os.close(fd)
    assert idx is not None
    keys = {(v[5], v[6], v[7]) for v in idx.heads}
    by_name = dict(zip(idx.names, range(len(idx.names))))  # what LazyParams made of the names
    return ("ok", idx.magic, idx.reserved, idx.names, list(by_name.items()), idx.heads, idx.offsets, idx.end, keys)


def _opened(path: Path, size: int) -> tuple:
    """``open_path``'s walk (dense), the descriptor it opened closed again."""
    got = W.open_path(path, True)
    assert got is not None
    fd, seen, walked = got
    try:
        assert seen == size and os.get_blocking(fd) and not os.get_inheritable(fd)
    finally:
        os.close(fd)
    assert walked is not None or size == 0
    return walked


def _compiled(raw: bytes, path: Path) -> tuple:
    """The compiled walk over the buffer, over the descriptor and from the path (which must
    agree) or its refusal."""
    outs = []
    fd = os.open(path, os.O_RDONLY)
    try:
        calls = [lambda: W.index_buffer(raw, len(raw), True), lambda: W.index_fd(fd, len(raw), True)]
        if raw:  # (an empty file is not walked: the generated reader names its error)
            calls.append(lambda: _opened(path, len(raw)))
        for call in calls:
            try:
                magic, reserved, names, by_name, packed, keys, end = call()
            except W.Refusal as r:
                outs.append(("error", *r.args))
                continue
            heads, offsets = W.unpack(packed)
            outs.append(("ok", magic, reserved, names, list(by_name.items()), heads, offsets, end, keys))
    finally:
        os.close(fd)
    assert all(out == outs[0] for out in outs)
    return outs[0]


def _public(path: Path, **kw: object) -> tuple:
    try:
        with params.open(path, **kw) as p:
            return ("ok", [tuple(i) for i in p.index], p.choice, p.trailing_bytes, list(p.keys()))
    except MlfError as e:
        return ("error", type(e).__name__, e.field, e.offset, str(e))


def _agree(raw: bytes, path: Path) -> tuple:
    path.write_bytes(raw)
    ref = _reference(path)
    assert _compiled(raw, path) == ref
    for kw in ({}, {"mapped": False}):
        with accel.pure_python():
            slow = _public(path, **kw)
        assert _public(path, **kw) == slow
    return ref


@pytest.mark.parametrize("vector", VECTORS, ids=[v.stem for v in VECTORS])
def test_every_vector(vector, tmp_path):
    _agree(vector.read_bytes(), tmp_path / "v.params")


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=params_bytes())
def test_drawn_valid_files(data, tmp_path):
    assert _agree(bytes(data), tmp_path / "v.params")[0] == "ok"


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(broken=broken_params_bytes())
def test_drawn_broken_files(broken, tmp_path):
    _agree(bytes(broken.data), tmp_path / "b.params")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=params_bytes(), at=st.integers(0, 1 << 20), value=st.integers(0, 255), cut=st.booleans())
def test_drawn_damage(data, at, value, cut, tmp_path):
    raw = bytearray(bytes(data))
    at %= max(len(raw), 1)
    if cut:
        del raw[at:]
    elif raw:
        raw[at] = value
    _agree(bytes(raw), tmp_path / "d.params")


def _small() -> bytes:
    return params.dumps({"a": np.arange(6, dtype=np.float32).reshape(2, 3), "bb": np.int8(-1),
                         "c": np.zeros((0, 5), np.float16), "d": np.ones((1, 1, 1, 1, 2), np.uint8)})


def test_every_truncation_and_header_byte(tmp_path):
    raw = _small()
    path = tmp_path / "t.params"
    errors = set()
    for n in range(len(raw) + 1):
        got = _agree(raw[:n], path)
        assert (got[0] == "ok") is (n == len(raw))
        errors.add(got[2])
    # (a cut before the last records is mostly "arrays": the count claims more than remains)
    assert {"magic", "reserved", "names", "names[3]", "count", "arrays", "arrays[2].shape", "arrays[3].dtype",
            "arrays[3].data_byte_size", "arrays[3].data"} <= errors
    for i in range(len(raw)):
        for flip in (0x01, 0x80, 0xFF):
            bad = bytearray(raw)
            bad[i] ^= flip
            _agree(bytes(bad), path)


def _file(names: list[bytes], records: list[bytes], count: int | None = None, n_names: int | None = None) -> bytes:
    out = struct.pack("<QQQ", PARAMS_MAGIC, 0, len(names) if n_names is None else n_names)
    out += b"".join(struct.pack("<Q", len(s)) + s for s in names)
    return out + struct.pack("<Q", len(records) if count is None else count) + b"".join(records)


def _record(shape: tuple[int, ...], bits: int = 32, size: int | None = None, ndim: int | None = None,
            data: bytes | None = None) -> bytes:
    n = int(np.prod(shape, dtype=object)) * -(-bits // 8) if size is None else size
    head = struct.pack("<QQiiiBBH", TENSOR_MAGIC, 0, 1, 0, len(shape) if ndim is None else ndim, 2, bits, 1)
    return head + struct.pack(f"<{len(shape)}q", *shape) + struct.pack("<q", n) + (
        bytes(max(min(n, 64), 0)) if data is None else data)


HOSTILE = {
    "names count 2**64-1": _file([b"a"], [_record((4,))], n_names=(1 << 64) - 1),
    "names count 2**61": _file([b"a"], [_record((4,))], n_names=1 << 61),
    "names count one past the bytes": _file([], [], n_names=2),
    "name length 2**64-1": struct.pack("<QQQQ", PARAMS_MAGIC, 0, 1, (1 << 64) - 1) + bytes(64),
    "count 2**63": _file([b"a"], [_record((4,))], count=1 << 63),
    "tensor count past the bytes": _file([b"a"] * 5, [_record((1,), data=b"")], count=5)[:-4],
    "ndim 65": _file([b"a"], [_record((), ndim=65) + bytes(600)]),
    "ndim 64": _file([b"a"], [_record((1,) * 64)]),
    "ndim -1": _file([b"a"], [_record((), ndim=-1)]),
    "ndim 2**31-1": _file([b"a"], [_record((), ndim=(1 << 31) - 1)]),
    "extent product past int64": _file([b"a"], [_record((1 << 62, 4), size=0, data=b"")]),
    "extent product wraps to 0": _file([b"a"], [_record((1 << 32, 1 << 32), bits=8, size=0, data=b"")]),
    "zero extent beside a huge one": _file([b"a"], [_record((0, (1 << 63) - 1), data=b"")]),
    "negative extent": _file([b"a"], [_record((2, -1), size=-8, data=b"")]),
    "data size 2**63-1": _file([b"a"], [_record(((1 << 63) - 1,), bits=8, data=b"")]),
    "bits 0": _file([b"a"], [_record((3,), bits=0, data=b"")]),
    "bits 255": _file([b"a"], [_record((3,), bits=255)]),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_counts_allocate_nothing_before_the_bytes(name, tmp_path):
    raw = HOSTILE[name]
    _agree(raw, tmp_path / "h.params")
    tracemalloc.start()
    try:
        W.index_buffer(raw, len(raw), True)
    except W.Refusal:
        pass
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 64 << 10, f"{peak} bytes for a {len(raw)}-byte file"


def test_large_tensors_and_long_name_tables(tmp_path):
    """The walker's windows: large tensors (one read per header), a name table past the
    first read, five to seven dimensions, a bool tensor (its bytes decide the dialect)."""
    rng = np.random.default_rng(5)
    data = {f"{'n' * 40}{i}": rng.standard_normal(n).astype(np.float32)
            for i, n in enumerate([70_000, 64, 5, 40_000, 1, 300_000, 2048])}
    data["cube"] = np.ones((2, 3, 4, 5, 6, 7), np.int8)
    data["flags"] = np.array([True, False] * 9000)
    data.update({f"{'x' * 60}{i}": np.float32(i) for i in range(400)})
    raw = params.dumps(data)
    assert _agree(raw, tmp_path / "l.params")[0] == "ok"
    big = {f"w{i}": rng.standard_normal(20_000).astype(np.float32) for i in range(30)}
    raw = params.dumps(big)
    assert _agree(raw, tmp_path / "s.params")[0] == "ok"
    with params.open(tmp_path / "s.params") as p:  # sparse: read by the walker, data by mapping
        assert all(np.array_equal(p[k], v) for k, v in big.items())
    assert all(np.array_equal(params.load(tmp_path / "s.params", mapped=False)[k], v) for k, v in big.items())


def test_start_up_does_not_load_the_extension():
    """The walker is imported on first use: importing the package, the CLI and the params
    reader (what `check` and `upgrade` start with) leaves it unloaded."""
    import subprocess
    import sys

    code = ("import sys, mlf_spec, mlf_spec.cli, mlf_spec.params, mlf_spec.params.codec; "
            "assert 'mlf_spec.params._walker' not in sys.modules, 'loaded at import'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_a_file_that_shrinks_under_the_walker(tmp_path):
    """A file shorter than the size taken (cut after fstat): the walker refuses ("io") and
    the generated reader names the error, as it does alone."""
    rng = np.random.default_rng(2)
    raw = params.dumps({f"w{i}": rng.standard_normal(9000).astype(np.float32) for i in range(6)})
    path = tmp_path / "cut.params"
    path.write_bytes(raw[: len(raw) // 2])
    fd = os.open(path, os.O_RDONLY)
    try:
        with pytest.raises(W.Refusal) as refusal:
            W.index_fd(fd, len(raw), False)
        assert refusal.value.args[0] == "io"
        said = []
        for use_walker in (True, False):
            with accel.pure_python() if not use_walker else contextlib.nullcontext():
                with pytest.raises(MlfError) as err:
                    codec._pread_index(fd, len(raw), None, False, False)
            said.append((type(err.value), err.value.field, err.value.offset, str(err.value)))
        assert said[0] == said[1] and "shrank" in said[0][3]
    finally:
        os.close(fd)



def _open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def _said(path: object, **kw: object) -> tuple:
    try:
        with params.open(path, **kw) as p:  # type: ignore[arg-type]
            return ("ok", list(p.keys()))
    except (MlfError, ValueError, TypeError) as e:
        return ("error", type(e).__name__, str(e))


def _same_error_either_way(path) -> None:
    """``params.open`` of ``path`` (mapped or not) fails, with the compiled walker as without it."""
    for kw in ({}, {"mapped": False}):
        with accel.pure_python():
            slow = _said(path, **kw)
        assert _said(path, **kw) == slow and slow[0] == "error"


def test_open_path_leaves_what_it_cannot_open_to_open_regular_fd(tmp_path):
    """``open_path`` opens as ``open_regular_fd`` does: a path it cannot open as a regular
    file (missing, a folder, a FIFO, a NUL in the name) gives None with nothing left open,
    and ``params.open`` then says what the generated reader's path says."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    (tmp_path / "folder").mkdir()
    before = _open_fds()
    for path in (tmp_path / "missing.params", tmp_path / "folder", fifo, str(tmp_path / "a\0b")):
        assert W.open_path(path, False) is None
        _same_error_either_way(path)
    assert _open_fds() == before


def test_open_path_takes_what_os_open_takes(tmp_path):
    """A str, bytes or PathLike path; an empty file is opened and not walked."""
    raw = params.dumps({f"w{i}": np.ones(5000, np.float32) for i in range(3)})
    path = tmp_path / "w.params"
    path.write_bytes(raw)
    (tmp_path / "empty.params").write_bytes(b"")
    for p in (path, str(path), os.fsencode(path)):
        fd, size, walked = W.open_path(p, False)
        os.close(fd)
        assert size == len(raw) and walked is not None and walked[2] == ["w0", "w1", "w2"]
    fd, size, walked = W.open_path(tmp_path / "empty.params", False)
    os.close(fd)
    assert (size, walked) == (0, None)


def test_a_refused_file_leaves_no_descriptor_open(tmp_path):
    """On a refusal ``open_path`` closes its descriptor; the error is the generated reader's
    (a file of large tensors cut short, walked either way; small hostile ones, walked when
    opened with ``mapped=False``)."""
    good = params.dumps({f"w{i}": np.ones(5000, np.float32) for i in range(3)})
    cut = good[: len(good) - 100]
    before = _open_fds()
    for bad in (cut, HOSTILE["ndim 65"], HOSTILE["negative extent"]):
        path = tmp_path / "bad.params"
        path.write_bytes(bad)
        _same_error_either_way(path)
    assert _open_fds() == before


def test_open_path_is_audited_as_os_open(tmp_path):
    """Audit hooks see the compiled open as they see os.open's ("open", path, None, flags)."""
    import subprocess
    import sys

    path = tmp_path / "w.params"
    path.write_bytes(params.dumps({f"w{i}": np.ones(5000, np.float32) for i in range(3)}))
    code = ("import sys\n"
            "seen = []\n"
            "sys.addaudithook(lambda e, a: seen.append(a) if e == 'open' and a[0] == sys.argv[1] else None)\n"
            "from mlf_spec import params\n"
            "with params.open(sys.argv[1]) as p: assert list(p) == ['w0', 'w1', 'w2']\n"
            "print(seen)\n")
    said = [subprocess.run([sys.executable, "-c", code, str(path)], check=True, cwd=ROOT, capture_output=True,
                           text=True, env={**os.environ, accel.ENV: pure}).stdout for pure in ("0", "1")]
    assert said[0] == said[1] and said[0].count("None") == 1, said
