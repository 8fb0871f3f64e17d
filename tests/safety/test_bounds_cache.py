"""Issue 32, items 1-5 and 12: the tensor cache's writers and readers on hostile folders
(an update of a cache whose dataPath leaves the folder or whose records lie outside their
shards, outputs over their input, a shard named like an index, files changing while read,
more shards than open descriptors). Memory and time bounds run in a child under RLIMIT_AS
and RLIMIT_CPU (tests.safety.test_hostile_resources.run)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mlf_spec import cache
from mlf_spec.cache import cases, codec
from mlf_spec.cache.folder import UnsafePathError
from mlf_spec.errors import MlfError

from .test_hostile_resources import leftovers

MiB = 1 << 20


def _folder(where: Path, files: dict[str, bytes], name: str = "c") -> Path:
    d = where / name
    d.mkdir(parents=True)
    for n, data in files.items():
        (d / n).write_bytes(data)
    return d


def _snapshot(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file() and not p.is_symlink()}


def _one_tensor_cache(where: Path, name: str = "c", **edit: object) -> Path:
    """A cache of one 8-byte tensor ``w`` (raw int32 [2]) with ``edit`` applied to its record."""
    files = codec.render({"w": np.arange(2, dtype="<i4")}, encode_format="raw")
    files = cases._edit(files, lambda d: cases._t(d, 0).update(**edit))
    return _folder(where, files, name)


# -- items 1, 2: update_if_exists gets every check of the read path -------------------------

def test_update_through_a_symlinked_folder_writes_nothing_outside(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    files = codec.render({"w": np.arange(2, dtype="<i4")}, encode_format="raw")
    (outside / "params_shard_0.bin").write_bytes(files.pop("params_shard_0.bin"))
    files = cases._edit(files, lambda d: d["records"][0].update(dataPath="sub/params_shard_0.bin"))
    d = _folder(tmp_path, files)
    (d / "sub").symlink_to(outside)
    before, target = _snapshot(d), (outside / "params_shard_0.bin").read_bytes()
    with pytest.raises(UnsafePathError):
        cache.write(d, {"w": np.array([7, 8], "<i4")}, encode_format="raw", update_if_exists=True)
    assert (outside / "params_shard_0.bin").read_bytes() == target
    assert _snapshot(d) == before and leftovers(tmp_path) == []


def test_update_of_a_shard_in_a_subfolder_leaves_the_input_as_it_was_on_failure(tmp_path):
    """The shard in a subfolder is carried over as a hard link: the patch must not write
    through it (the old folder would change even when the update is refused later)."""
    files = codec.render({"w": np.arange(2, dtype="<i4")}, encode_format="raw")
    files = cases._edit(files, lambda d: d["records"][0].update(dataPath="sub/s.bin"))
    shard = files.pop("params_shard_0.bin")
    d = _folder(tmp_path, files)
    (d / "sub").mkdir()
    (d / "sub" / "s.bin").write_bytes(shard)
    keep = os.open(d / "sub" / "s.bin", os.O_RDONLY)  # the old inode, after the rename
    try:
        cache.write(d, {"w": np.array([7, 8], "<i4")}, encode_format="raw", update_if_exists=True)
        assert os.pread(keep, 8, 0) == shard
    finally:
        os.close(keep)
    assert (d / "sub" / "s.bin").read_bytes() == np.array([7, 8], "<i4").tobytes()
    assert cache.load(d)[0]["w"].tolist() == [7, 8]


@pytest.mark.parametrize("offset", [1 << 62, 1 << 28, -4, 4])
def test_update_of_a_record_outside_its_shard_is_refused_in_bounded_memory(tmp_path, offset):
    d = _one_tensor_cache(tmp_path, byteOffset=offset)
    before = _snapshot(d)
    script = ("import numpy as np, sys\nfrom mlf_spec import cache\nfrom mlf_spec.errors import MlfError\n"
              "try:\n    cache.write(sys.argv[1], {'w': np.array([7, 8], '<i4')}, encode_format='raw', "
              "update_if_exists=True)\nexcept MlfError as e:\n    print('refused', e); sys.exit(2)\n")
    p = _child(script, str(d), cwd=tmp_path)
    assert p.returncode == 2 and b"refused" in p.stdout, p.stderr[-2000:]
    assert b"inside the shard" in p.stdout
    assert _snapshot(d) == before and leftovers(tmp_path) == []


def test_update_of_a_sparse_1gib_index_is_refused_in_bounded_memory(tmp_path):
    d = tmp_path / "c"
    d.mkdir()
    with open(d / "tensor-cache.json", "wb") as f:
        f.write(b'{"metadata": {}, "records": [')
        f.truncate(1 << 30)
    script = ("import numpy as np, sys\nfrom mlf_spec import cache\nfrom mlf_spec.errors import MlfError\n"
              "try:\n    cache.write(sys.argv[1], {'w': np.array([7, 8], '<i4')}, update_if_exists=True)\n"
              "except MlfError as e:\n    print('refused', e); sys.exit(2)\n")
    p = _child(script, str(d), cwd=tmp_path)
    assert p.returncode == 2 and b"more than the" in p.stdout, p.stderr[-2000:]
    assert os.path.getsize(d / "tensor-cache.json") == 1 << 30 and sorted(os.listdir(d)) == ["tensor-cache.json"]


def _child(script: str, *args: str, cwd: Path, cap: int = 768 * MiB, cpu: int = 30) -> subprocess.CompletedProcess:
    import resource

    def limits() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))

    p = subprocess.run([sys.executable, "-c", script, *args], cwd=cwd, capture_output=True, timeout=300,
                       preexec_fn=limits, env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    assert b"Traceback" not in p.stderr, p.stderr[-3000:]
    return p


# -- item 3 (and issue 30 item 15): one rule for every command's output ---------------------

def _cli(args: list[str], cwd: Path) -> tuple[int, str]:
    """``mlf-spec ARGS`` as a child; asserts one line on stderr when the status is 2."""
    p = subprocess.run([sys.executable, "-m", "mlf_spec", *args], cwd=cwd, capture_output=True, timeout=120)
    err = p.stderr.decode()
    assert "Traceback" not in err, err
    if p.returncode == 2:
        assert len(err.strip().splitlines()) == 1 and err.startswith("mlf-spec: error: "), err
    return p.returncode, err


@pytest.fixture
def inputs(tmp_path: Path) -> Path:
    from mlf_spec import params

    cache.write(tmp_path / "C", {"w": np.ones(3, "f4")})
    (tmp_path / "X").mkdir()
    cache.write(tmp_path / "X" / "inner", {"w": np.ones(3, "f4")})
    (tmp_path / "D").mkdir()
    params.save({"w": np.ones(3, "f4")}, tmp_path / "D" / "w.params")
    return tmp_path


@pytest.mark.parametrize("args, what", [
    (["cache", "upgrade", "X/inner", "-o", "X", "--force"], "holds the input"),
    (["cache", "upgrade", "C", "-o", "C", "--force"], "is the input"),
    (["cache", "downgrade", "C/tensor-cache.json", "-o", "C", "--force"], "holds the input"),
    (["cache", "upgrade", "C", "-o", "C/new"], "lies inside the input"),
    (["cache", "convert", "C", "C", "--force"], "is the input"),
    (["cache", "convert", "D/w.params", "D", "--force"], "holds the input"),
    (["cache", "convert", "C", "C/w.npz"], "lies inside the input"),
    (["params", "convert", "D/w.params", "D/w.params", "--force"], "is the input"),
])
def test_an_output_over_around_or_inside_the_input_is_refused(inputs, args, what):
    before = {p: _snapshot(inputs / p) for p in ("C", "X", "D")}
    status, err = _cli(args, inputs)
    assert status == 2 and what in err, err
    assert {p: _snapshot(inputs / p) for p in ("C", "X", "D")} == before
    assert leftovers(inputs) == []


@pytest.mark.parametrize("args", [
    ["params", "convert", "D/w.params", "missing/x.npz"],
    ["cache", "convert", "C", "missing/x.npz"],
    ["cache", "convert", "D/w.params", "missing/cache"],
    ["cache", "upgrade", "C", "-o", "missing/cache"],
    ["conformance", "vectors", "missing/vec"],
    ["export", "ksy", "missing/ksy"],
    ["blob", "extract", str(Path(__file__).resolve().parents[2] / "vectors" / "blob" / "blob.ffi.0.23.c_source_payload.bin"),
     "-o", "missing/x.bin"],
])
def test_a_missing_parent_folder_is_refused_by_every_command(inputs, args):
    status, err = _cli(args, inputs)
    assert status == 2 and "does not exist (mlf-spec does not create it)" in err, err
    assert not (inputs / "missing").exists()


def test_the_folder_of_minus_o_dir_is_created_as_the_output(inputs):
    status, err = _cli(["params", "convert", "D/w.params", "-o", "out", "--to", "npz"], inputs)
    assert status == 0, err
    assert (inputs / "out" / "w.npz").is_file()


def test_conformance_vectors_minus_writes_no_folder_named_minus(inputs):
    status, err = _cli(["conformance", "vectors", "-"], inputs)
    assert status == 2 and "standard output" in err, err
    assert not (inputs / "-").exists()


# -- item 4: a shard named like an index -------------------------------------------------------

def _renamed_shard(where: Path, new: str, version: int = 2) -> Path:
    files = codec.render({"w": np.arange(2, dtype="<i4")}, encode_format="raw", version=version)
    index = "tensor-cache.json" if version == 2 else "ndarray-cache.json"
    files = cases._edit(files, lambda d: d["records"][0].update(dataPath=new), index)
    files[new] = files.pop("params_shard_0.bin")
    d = _folder(where, files, "C")
    cache.open(d / index).close()  # conformant: the loaders read it
    return d


@pytest.mark.parametrize("shard, args", [
    ("ndarray-cache.json", ["cache", "downgrade", "C", "--to", "1", "-o", "out"]),
    ("tensor-cache.json", ["cache", "upgrade", "C/ndarray-cache.json", "--to", "2", "-o", "out"]),
    ("ndarray-cache-b16.json", ["cache", "downgrade", "C", "--to", "1", "-o", "out"]),
])
def test_a_shard_named_like_the_new_index_is_refused(tmp_path, shard, args):
    _renamed_shard(tmp_path, shard, version=1 if shard == "tensor-cache.json" else 2)
    status, err = _cli(args, tmp_path)
    assert status == 2 and "has the name of" in err, err
    assert not (tmp_path / "out").exists() and leftovers(tmp_path) == []


# -- item 5: files changing while read -------------------------------------------------------

# In the child: when the command creates a file named like the shard anywhere but in the
# input (its copy in the output), the input's shard is cut to a quarter or grown by 4 KiB.
CHANGE_HOOK = """
import builtins, os, sys
target, how = sys.argv[1], sys.argv[2]
real_open, state = builtins.open, {"done": False}

def hooked(file, mode="r", *a, **k):
    if (not state["done"] and isinstance(file, (str, os.PathLike)) and "w" in mode
            and os.path.basename(file) == os.path.basename(target) and os.path.abspath(file) != target):
        state["done"] = True
        if how == "cut":
            os.truncate(target, os.path.getsize(target) // 4)
        else:
            with real_open(target, "ab") as f:
                f.write(bytes(4096))
    return real_open(file, mode, *a, **k)

builtins.open = hooked
from mlf_spec.cli import main
sys.exit(main(sys.argv[3:]))
"""


@pytest.mark.parametrize("how", ["cut", "grow"])
@pytest.mark.parametrize("command", [["cache", "upgrade", "C", "-o", "out"],
                                     ["cache", "downgrade", "C", "--to", "1", "-o", "out"]])
def test_a_shard_changing_while_read_is_one_error_and_nothing_written(tmp_path, how, command):
    cache.write(tmp_path / "C", {f"w{i}": np.full(4096, i, "f4") for i in range(8)}, encode_format="raw")
    shard = tmp_path / "C" / "params_shard_0.bin"
    p = subprocess.run([sys.executable, "-c", CHANGE_HOOK, str(shard), how, *command], cwd=tmp_path,
                       capture_output=True, timeout=120)
    err = p.stderr.decode()
    assert "Traceback" not in err, err
    assert p.returncode == 2 and len(err.strip().splitlines()) == 1, (p.returncode, err)
    assert "while it was" in err, err
    assert not (tmp_path / "out").exists() and leftovers(tmp_path) == []


# -- item 12: more shards than the process may open files ------------------------------------

@pytest.fixture(scope="module")
def many_shards(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("many") / "big"
    cache.write(d, {f"t{i}": np.full(300, i, "f4") for i in range(1100)}, shard_cap_mb=0.001, encode_format="raw")
    assert len(list(d.glob("params_shard_*.bin"))) == 1100
    return d


@pytest.mark.parametrize("args", [["cache", "dump", "{c}"], ["cache", "check", "{c}"], ["cache", "diff", "{c}", "{c}"],
                                  ["cache", "upgrade", "{c}", "-o", "out"], ["cache", "convert", "{c}", "out.npz"],
                                  ["cache", "convert", "{c}", "out"]])
def test_a_cache_of_1100_shards_is_read_under_1024_open_files(many_shards, tmp_path, args):
    import resource

    def limits() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))
        resource.setrlimit(resource.RLIMIT_AS, (1024 * MiB, 1024 * MiB))
        resource.setrlimit(resource.RLIMIT_CPU, (60, 60))

    argv = [a.format(c=many_shards) for a in args]
    p = subprocess.run([sys.executable, "-m", "mlf_spec", *argv], cwd=tmp_path, capture_output=True, timeout=300,
                       preexec_fn=limits)
    assert p.returncode == 0, p.stderr.decode()[-2000:]
    if args[1] == "convert" and args[-1] == "out":
        assert cache.load(tmp_path / "out")[0]["t1099"].tolist() == [1099.0] * 300


def test_a_shard_replaced_between_two_openings_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setattr(codec, "MAX_OPEN", 1)
    cache.write(tmp_path / "c", {"a": np.ones(300, "f4"), "b": np.ones(300, "f4")}, shard_cap_mb=0.001,
                encode_format="raw")
    with cache.open(tmp_path / "c") as lazy:
        assert lazy.array("a").sum() == 300 and lazy.array("b").sum() == 300  # shard 0 closed again
        shard = tmp_path / "c" / lazy.index.shards[0].data_path
        shard.rename(tmp_path / "old.bin")  # kept: its inode is not reused by the new file
        shard.write_bytes(bytes(1200))  # the same size, another file
        with pytest.raises(MlfError, match="changed while the cache was read"):
            lazy.array("a")
        assert len(lazy._fds) <= 1
