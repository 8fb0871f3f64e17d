"""Seed inputs for the fuzz targets, produced deterministically.

Each ``*_seeds()`` function draws a fixed number of examples from the project's hypothesis
strategies with a fixed seed (the same bytes on every run with the same hypothesis
version), adds a few hand-made inputs the strategies do not produce (ELF files built
here, compressed containers, C sources in every TVM style), and, when a ``vectors/``
directory of conformance vectors exists, the inputs of its cases for that format.
"""

from __future__ import annotations

import io
import json
import struct
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any


def draw(strategy: Any, n: int, seed: int) -> list[Any]:
    """``n`` examples of a hypothesis ``strategy``, the same ones for the same ``seed``
    (fewer if the strategy runs out of distinct examples)."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed

    from mlf_spec._internal.pinned_draw import seed_only

    out: list[Any] = []

    @hseed(seed)
    @settings(max_examples=n, database=None, deadline=None, phases=[Phase.generate], derandomize=False,
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def collect(x: Any) -> None:
        out.append(x)

    with seed_only():
        collect()
    return out


def vector_inputs(formats: Iterable[str], root: str | Path | None = None) -> list[bytes]:
    """The input files of the decode and migrate cases in ``vectors/<format>/*.case.json``
    (the conformance suite) for the given formats; [] when there is no vectors directory."""
    base = Path(root) if root is not None else _repo_root() / "vectors"
    wanted = set(formats)
    out: list[bytes] = []
    if not base.is_dir():
        return out
    for case in sorted(base.glob("*/*.case.json")):
        try:
            doc = json.loads(case.read_text("utf-8"))
            if doc.get("format") not in wanted or doc.get("role") not in ("decode", "migrate"):
                continue
            out.append((case.parent / doc["input"]).read_bytes())
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return out


def _repo_root() -> Path:
    return Path(__file__).resolve().parent.parent.parent


def _unique(items: Iterable[bytes]) -> list[bytes]:
    return list(dict.fromkeys(bytes(i) for i in items if i))


# ----------------------------------------------------------------- per format


def params_seeds() -> list[bytes]:
    """Valid .params files of every era, broken ones of every named kind, the reference example."""
    import numpy as np

    from mlf_spec import params
    from mlf_spec import strategies as ms

    valid = draw(ms.params_bytes(), 40, 1)
    broken = [b.data for b in draw(ms.broken_params_bytes(), 30, 2)]
    made = [params.dumps({}), params.dumps({"w": np.arange(6, dtype="float32").reshape(2, 3), "b": np.arange(3)})]
    return _unique(made + valid + broken + vector_inputs(["params"]))


def npz_seeds() -> list[bytes]:
    """NumPy .npz files as ``params convert`` writes them (with the ``__mlf_spec__`` entry
    for tensors NumPy cannot hold) and as NumPy alone does, stored and deflated."""
    import tempfile

    import numpy as np

    from mlf_spec import params
    from mlf_spec.params import convert

    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, data in enumerate(params_seeds()[:24]):
            try:
                tensors = convert.read_any(data, fmt="params")
                convert.write_any(tensors, f"{tmp}/{i}.npz", fmt="npz")
            except Exception:  # broken seeds, names an .npz cannot hold
                continue
            with open(f"{tmp}/{i}.npz", "rb") as f:
                out.append(f.read())
    for save in (np.savez, np.savez_compressed):
        buf = io.BytesIO()
        save(buf, w=np.arange(6, dtype="f4").reshape(2, 3), b=np.zeros((), "i8"), e=np.zeros((0, 3), "u1"))
        out.append(buf.getvalue())
    del params
    return _unique(out)


def blob_seeds() -> list[bytes]:
    """Valid blobs of both layouts and every era, and broken ones of every named kind."""
    from mlf_spec import strategies as ms

    valid = draw(ms.blob_bytes(), 40, 3)
    broken = [b.data for b in draw(ms.broken_blob_bytes(), 30, 4)]
    return _unique(valid + broken + vector_inputs(["blob"]))


def payload_seeds() -> list[bytes]:
    """``<format> <era> <kind>\\n<payload>`` for a payload of every kind with a grammar."""
    from mlf_spec import blob
    from mlf_spec import strategies as ms
    from mlf_spec.blob.codec import FORMATS

    out = []
    for i, fmt in enumerate(FORMATS):
        era = ms.BLOB_ERAS[fmt][0]
        for j, kind in enumerate(sorted(blob.known_kinds(fmt))):
            if kind == "_lib":
                continue
            for p in draw(ms.blob_payloads(kind, fmt, era), 2, 100 + 50 * i + j):
                out.append(payload_input(fmt, era, kind, p.to_bytes(era)))
    return _unique(out)


def payload_input(fmt: str, era: str | tuple[int, ...], kind: str, payload: bytes) -> bytes:
    """The input of the blob_payload target for one payload (era: ``"0.24"`` or a tuple)."""
    label = era if isinstance(era, str) else ".".join(map(str, era[:2]))
    return f"{fmt} {label} {kind}\n".encode() + payload


def container_seeds() -> list[bytes]:
    """Blobs in every container the locator reads: raw, C source in each TVM style, ELF
    objects and shared libraries (32/64-bit, both byte orders, built here), and export
    tarballs plain and compressed."""
    from mlf_spec import blob
    from mlf_spec.blob.locate import C_SOURCE_STYLES, c_source_for_blob

    blobs = blob_seeds()[:8]
    out: list[bytes] = []
    for i, b in enumerate(blobs):
        parsed = blob.parse(b)  # the first seeds are valid: name each under its own layout's symbol
        sym = blob.symbol_for(parsed.format, parsed.era)
        out.append(b)
        text = c_source_for_blob(b, sym, "sys_" if i % 3 == 0 else None, C_SOURCE_STYLES[i % len(C_SOURCE_STYLES)],
                                 check=False).encode()
        out.append(text)
        out.append(elf_with_blob(b, sym, is64=i % 4 != 3, big_endian=i % 4 == 2, shared=i % 2 == 1))
        tar = tar_of({"devc.c" if i % 2 else "lib0.o": text if i % 2 else out[-1], "lib1.c": b"int x;\n"})
        out.append(compress(tar, (None, "gzip", "bzip2", "xz")[i % 4]))
    return _unique(out + vector_inputs(["blob"]))


def graph_seeds() -> list[bytes]:
    """GraphExecutor JSON documents in dmlc's layout."""
    from mlf_spec import strategies as ms

    return _unique(g.encode() for g in draw(ms.graph_jsons(), 40, 5)) + vector_inputs(["graph-json"])


def metadata_seeds() -> list[bytes]:
    """metadata.json of every version and style, valid and broken in every named way."""
    from mlf_spec import metadata
    from mlf_spec import strategies as ms

    valid = [metadata.dumps(doc, v, s) for v, s, doc in draw(ms.mlf_metadata(), 50, 6)]
    broken = [b.data for b in draw(ms.broken_mlf_metadata(), 30, 7)]
    return _unique(valid + broken + vector_inputs(["mlf-metadata"]))


def archive_seeds() -> list[bytes]:
    """MLF archives of every version and style as TVM wrote them (some compressed), and
    archives broken in every named way."""
    from mlf_spec import strategies as ms

    valid = [t for _, _, t in draw(ms.mlf_archives(), 30, 8)]
    broken = [b.data for b in draw(ms.broken_mlf_archives(), 30, 9)]
    packed = [compress(t, kind) for t, kind in zip(valid[:3], ("gzip", "bzip2", "xz"))]
    return _unique(valid + packed + broken + vector_inputs(["mlf-archive"]))


def migration_seeds() -> list[bytes]:
    """Archives that check clean, of every version and style, and bare metadata documents."""
    from mlf_spec import metadata
    from mlf_spec import strategies as ms

    tars = [t for _, _, t in draw(ms.mlf_archives(), 30, 10)]
    docs = [metadata.dumps(doc, v, s) for v, s, doc in draw(ms.mlf_metadata(), 10, 11)]
    return _unique(tars + docs + vector_inputs(["mlf-archive", "mlf-metadata"]))


# ----------------------------------------------------------------- containers


def compress(data: bytes, kind: str | None) -> bytes:
    """``data`` compressed with ``kind`` (see :func:`mlf_spec.fuzzing.mutate_tar.compress`)."""
    from .mutate_tar import compress as _c

    return _c(data, kind)


def tar_of(files: dict[str, bytes]) -> bytes:
    """A plain tar of ``files`` (as ``export_library(... .tar)`` lays them out)."""
    import tarfile  # not at module level: the fuzz entry points import this module before
    # they instrument tarfile, and an already imported module is not instrumented
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tf:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def elf_with_blob(blob: bytes, symbol: str, *, is64: bool = True, big_endian: bool = False,
                  shared: bool = False) -> bytes:
    """A minimal ELF file whose ``.rodata`` holds ``blob`` under a global object symbol:
    a relocatable object (``devc.o``) or, with ``shared``, a shared object whose symbol
    value is a virtual address (found through ``.dynsym``)."""
    e = ">" if big_endian else "<"
    addr = 0x1000 if shared else 0
    names = b"\0" + symbol.encode() + b"\0"
    shnames = b"\0.rodata\0.symtab\0.strtab\0.shstrtab\0"
    if is64:
        sym = struct.pack(e + "IBBHQQ", 0, 0, 0, 0, 0, 0) + struct.pack(e + "IBBHQQ", 1, 0x11, 0, 1, addr, len(blob))
    else:
        sym = struct.pack(e + "IIIBBH", 0, 0, 0, 0, 0, 0) + struct.pack(e + "IIIBBH", 1, addr, len(blob), 0x11, 0, 1)
    ehsize, shentsize = (64, 64) if is64 else (52, 40)
    body = bytearray()
    offsets = []
    for part in (blob, sym, names, shnames):
        body += bytes((-(ehsize + len(body))) % 8)
        offsets.append(ehsize + len(body))
        body += part
    body += bytes((-(ehsize + len(body))) % 8)
    shoff = ehsize + len(body)
    symtype = 11 if shared else 2
    rows = [(0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
            (1, 1, 2, addr, offsets[0], len(blob), 0, 0, 16, 0),
            (9, symtype, 2 if shared else 0, 0, offsets[1], len(sym), 3, 1, 8, 24 if is64 else 16),
            (17, 3, 0, 0, offsets[2], len(names), 0, 0, 1, 0),
            (25, 3, 0, 0, offsets[3], len(shnames), 0, 0, 1, 0)]
    fmt = e + ("IIQQQQIIQQ" if is64 else "IIIIIIIIII")
    shdrs = b"".join(struct.pack(fmt, *r) for r in rows)
    ident = b"\x7fELF" + bytes([2 if is64 else 1, 2 if big_endian else 1, 1, 0]) + bytes(8)
    etype = 3 if shared else 1
    if is64:
        header = ident + struct.pack(e + "HHIQQQIHHHHHH", etype, 62, 1, 0, 0, shoff, 0, 64, 0, 0, 64, len(rows), 4)
    else:
        header = ident + struct.pack(e + "HHIIIIIHHHHHH", etype, 3, 1, 0, 0, shoff, 0, 52, 0, 0, 40, len(rows), 4)
    return header + bytes(body) + shdrs


def cache_seeds() -> list[bytes]:
    """Tensor cache folders (the cases of mlf_spec.cache.cases) as tars of their files."""
    from mlf_spec.cache.fuzz_target import cache_seeds as seeds_of_cases

    return seeds_of_cases()


SEEDS: dict[str, Callable[[], list[bytes]]] = {
    "params": params_seeds, "blob": blob_seeds, "payload": payload_seeds, "container": container_seeds,
    "graph": graph_seeds, "metadata": metadata_seeds, "archive": archive_seeds, "migration": migration_seeds,
    "npz": npz_seeds, "cache": cache_seeds,
}


def write_corpus(directory: str | Path, items: Iterable[bytes]) -> int:
    """Write each input to ``directory`` under its SHA-1 (libFuzzer's naming); returns the
    number of files written."""
    import hashlib

    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    n = 0
    for data in items:
        (d / hashlib.sha1(data).hexdigest()).write_bytes(data)
        n += 1
    return n


def iter_corpus(*paths: str | Path) -> Iterator[tuple[Path, bytes]]:
    """(path, bytes) of every file under the given files or directories, sorted."""
    for p in map(Path, paths):
        files = sorted(x for x in p.rglob("*") if x.is_file()) if p.is_dir() else [p]
        for f in files:
            yield f, f.read_bytes()


__all__ = ["SEEDS", "archive_seeds", "blob_seeds", "container_seeds", "draw", "elf_with_blob", "graph_seeds",
           "iter_corpus", "metadata_seeds", "migration_seeds", "npz_seeds", "params_seeds", "payload_seeds", "tar_of",
           "vector_inputs", "write_corpus"]
