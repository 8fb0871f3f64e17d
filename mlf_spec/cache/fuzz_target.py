"""What the tensor cache's fuzz target (``cache_check`` of mlf_spec.fuzzing.targets) runs,
and its seeds.

An input is a tar of the cache folder's files (flat names; the seeds are the vectors of
mlf_spec.cache.cases), or, when it is not a tar, the index JSON alone. The target writes the
files into the sandbox, then asserts: check and open raise nothing but MlfError; the strict
open accepts exactly the caches without fatal findings; every tensor of an accepted cache
loads (or is refused as a dtype without a NumPy type) with the shape of its record."""

from __future__ import annotations

import io
import os
import tempfile

from mlf_spec.fuzzing.invariants import InvariantBreak, attempt

from . import cases, check, codec, rules

_MAX_FILES = 16


def tar_of(files: dict[str, bytes]) -> bytes:
    """A plain tar of a cache folder's files."""
    import tarfile

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tf:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def words() -> list[str]:
    """The index's keys and the values its rules turn on (libFuzzer dictionary tokens)."""
    from .encodings import ENCODINGS
    from .index import KEYS

    keys = [k for ks in KEYS.values() for k in ks]
    return keys + list(ENCODINGS) + ["raw-shard", "float32", "bfloat16", "int4", "float8_e4m3fn", "e4m3_float8"]


def cache_seeds() -> list[bytes]:
    """Every case of mlf_spec.cache.cases as a tar of its files."""
    return [tar_of(c.files) for c in cases.all_cases()]


def unpack(data: bytes) -> dict[str, bytes]:
    """The files of an input: its tar's regular files with flat names, else the index alone."""
    import tarfile

    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tf:
            out: dict[str, bytes] = {}
            for m in tf:
                if len(out) >= _MAX_FILES:
                    break
                name = os.path.basename(m.name)
                if m.isreg() and name and name not in (".", "..") and m.size <= len(data):
                    f = tf.extractfile(m)
                    if f is not None:
                        out[name] = f.read()
            if out:
                return out
    except (tarfile.TarError, EOFError, OSError, ValueError):
        pass
    return {"tensor-cache.json": data}


def check_input(data: bytes) -> None:
    """cache check and the strict open agree; what opens loads (InvariantBreak otherwise)."""
    files = unpack(data)
    with tempfile.TemporaryDirectory() as d:
        for name, content in files.items():
            with open(os.path.join(d, name), "wb") as f:
                f.write(content)
        report = attempt(check.check, d, tvm="0.27")
        lazy = attempt(codec.open, d)
        if lazy is None:
            if report is not None and not rules.FATAL.intersection(report.codes()):
                raise InvariantBreak("consistency", "the strict open refuses a cache whose check has no fatal finding")
            return
        try:
            if report is None:
                raise InvariantBreak("consistency", "cache.check fails on a cache the strict open accepts")
            if rules.FATAL.intersection(report.codes()):
                raise InvariantBreak("consistency", "the strict open accepts a cache with a fatal finding")
            for t in lazy.tensors[:64]:
                arr = attempt(lazy.array, t)
                if arr is not None and arr.shape != t.shape:
                    raise InvariantBreak("consistency", f"{t.name!r} loads with shape {arr.shape}, not {t.shape}")
        finally:
            lazy.close()

