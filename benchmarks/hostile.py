"""Time and peak memory of the readers on hostile inputs at full size (issue 11), against
the limits the README's "Safety and limits" section states.

    python benchmarks/hostile.py            # prints a Markdown table
    python benchmarks/hostile.py --cli      # the command-line cases: time, peak RSS, output size
    python benchmarks/hostile.py --cli --only TEXT   # only the cases whose label holds TEXT

Each case builds its input, runs the reader once to warm up imports and once measured
(wall time; peak allocation traced by tracemalloc in a second run, since tracing slows the
code down), and reports the outcome: a result or the MlfError class.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import struct
import sys
import tarfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mlf_spec import archive, graph_json, metadata  # noqa: E402
from mlf_spec.blob.locate import SYMBOL_FFI, c_source_for_blob, locate_blobs  # noqa: E402
from mlf_spec.errors import MlfError  # noqa: E402
from mlf_spec.fuzzing.seeds import elf_with_blob  # noqa: E402

MiB = 1 << 20


def _tar(n: int, fmt: int = tarfile.USTAR_FORMAT) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as tf:
        for i in range(n):
            tf.addfile(tarfile.TarInfo(f"m{i}"), io.BytesIO(b""))
    return buf.getvalue()


def _members(n: int) -> bytes:
    """n empty members: the first 20,001 real headers, then copies of one header (never
    reached: the reader stops at the limit), then the end blocks."""
    head = _tar(20_001)[:-10240]
    one = tarfile.TarInfo("z").tobuf(tarfile.USTAR_FORMAT)
    return head + one * (n - 20_001) + bytes(1024)


def _bomb(compress: Callable[[bytes], bytes], total: int) -> bytes:
    header = tarfile.TarInfo("x")
    header.size = total
    head = header.tobuf(tarfile.USTAR_FORMAT)
    zeros = compress(bytes(16 * MiB))
    return compress(head + bytes(16 * MiB - len(head))) + zeros * (total // (16 * MiB) - 1) + compress(
        bytes(len(head) + 1024))


def _deep(depth: int) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        ti = tarfile.TarInfo("/".join(["d"] * depth) + "/f")
        tf.addfile(ti, io.BytesIO(b""))
    return buf.getvalue()


def _chain(n: int) -> bytes:
    ti = tarfile.TarInfo("././@LongLink")
    ti.type = tarfile.GNUTYPE_LONGNAME
    ti.size = 200
    block = ti.tobuf(tarfile.GNU_FORMAT) + b"a" * 200 + bytes(312)
    return block * n + tarfile.TarInfo("x").tobuf(tarfile.GNU_FORMAT) + bytes(1024)


def _pax_huge() -> bytes:
    ti = tarfile.TarInfo("./a")
    ti.pax_headers = {"size": "1" + "0" * 30}
    return ti.tobuf(tarfile.PAX_FORMAT) + bytes(2048)


def _elf_symbols(n: int) -> bytes:
    raw = (16).to_bytes(8, "little") + bytes(16)
    data = bytearray(elf_with_blob(raw, SYMBOL_FFI))
    shoff = struct.unpack_from("<Q", data, 40)[0]
    table = bytes(24) + struct.pack("<IBBHQQ", 1, 0x10, 0, 0, 0, 0) * n + struct.pack("<IBBHQQ", 1, 0x11, 0, 1, 0, 24)
    struct.pack_into("<QQ", data, shoff + 2 * 64 + 24, len(data), len(table))
    return bytes(data + table)


def _elf_relocations(n: int) -> bytes:
    """An object whose .rodata blob has n relocations against other bytes of the section."""
    raw = (16).to_bytes(8, "little") + bytes(16)
    data = bytearray(elf_with_blob(raw, SYMBOL_FFI))
    shoff = struct.unpack_from("<Q", data, 40)[0]
    rela = struct.pack("<QQq", 1 << 20, 0, 0) * n  # r_offset far from the blob
    at = len(data)
    data += rela
    shdr = struct.pack("<IIQQQQIIQQ", 0, 4, 0, 0, at, len(rela), 2, 1, 8, 24)  # SHT_RELA for section 1
    new_shoff = len(data)
    count = struct.unpack_from("<H", data, 60)[0]
    data += data[shoff:shoff + 64 * count] + shdr
    struct.pack_into("<Q", data, 40, new_shoff)
    struct.pack_into("<H", data, 60, count + 1)
    return bytes(data)


def _c_array(n: int, decimal: bool) -> bytes:
    blob = n.to_bytes(8, "little") + bytes(n)
    if not decimal:
        return c_source_for_blob(blob).encode()
    return f"unsigned char {SYMBOL_FFI}[] = {{".encode() + b",".join(b"%d" % b for b in blob) + b"};"


CASES: list[tuple[str, Callable[[], bytes], Callable[[bytes], object]]] = [
    ("tar.gz bomb, 256 MiB of zeros", lambda: _bomb(gzip.compress, 256 * MiB), lambda d: archive.open(d)),
    ("tar.bz2 bomb, 256 MiB of zeros", lambda: _bomb(bz2.compress, 256 * MiB), lambda d: archive.open(d)),
    ("tar.xz bomb, 256 MiB of zeros", lambda: _bomb(lzma.compress, 256 * MiB), lambda d: archive.open(d)),
    ("tar.bz2 bomb, 1 GiB, max_total_size=64 MiB", lambda: _bomb(bz2.compress, 1 << 30),
     lambda d: archive.open(d, max_total_size=64 * MiB)),
    ("tar of 10^6 members (archive.open)", lambda: _members(1_000_000), lambda d: archive.open(d)),
    ("tar of 10^6 members (locate_blobs)", lambda: _members(1_000_000), lambda d: locate_blobs(d)),
    ("member path of 100,000 components", lambda: _deep(100_000), lambda d: archive.open(d)),
    ("3,000 chained GNU long-name headers", lambda: _chain(3000), lambda d: archive.open(d)),
    ("PAX size=10^30", _pax_huge, lambda d: archive.open(d)),
    ("ELF, 10^6 symbols named like the blob", lambda: _elf_symbols(1_000_000), lambda d: locate_blobs(d)),
    ("ELF, 10^6 relocations in the blob section", lambda: _elf_relocations(1_000_000), lambda d: locate_blobs(d)),
    ("C source, TVM hex array of 20 MB", lambda: _c_array(20 * MiB, False), lambda d: locate_blobs(d)),
    ("C source, decimal array of 5 MB", lambda: _c_array(5 * MiB, True), lambda d: locate_blobs(d)),
    ("metadata.json nested 10^6 deep", lambda: b"[" * 1_000_000 + b"]" * 1_000_000, lambda d: metadata.parse(d)),
    ("graph JSON of 10^6 nodes", lambda: (b'{"nodes": [' + b",".join([b'{"op": "null", "name": "x", "inputs": []}']
                                                                    * 1_000_000) + b"]}"),
     lambda d: graph_json.parse(d, lenient=True)),
]


# ----------------------------------------------------------------- command-line cases (issue 19)


def _lib_chain(n: int) -> bytes:
    from mlf_spec import blob
    from mlf_spec.blob.codec import Module

    mods = [Module.lib() for _ in range(n)]
    for a, b in zip(mods, mods[1:]):
        a.imports.append(b)
    return blob.build(mods[0], order=mods)


def _lib_dag(n: int, fan: int = 8) -> bytes:
    from mlf_spec import blob
    from mlf_spec.blob.codec import Module

    mods = [Module.lib() for _ in range(n)]
    for i, a in enumerate(mods):
        a.imports.extend(mods[i + 1:i + 1 + fan])
    return blob.build(mods[0], order=mods)


def _params_many(n: int, distinct: int) -> bytes:
    import numpy as np

    from mlf_spec.params.codec import ParamsFile, dumps

    zero = np.zeros((), "i1")
    return dumps(ParamsFile([(f"t{i % distinct}", zero, None) for i in range(n)]))


def _npz_bomb(total: int) -> bytes:
    import zipfile

    import numpy as np

    buf = io.BytesIO()
    head = io.BytesIO()
    np.lib.format.write_array_header_1_0(head, {"descr": "|u1", "fortran_order": False, "shape": (total,)})
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z, z.open("a.npy", "w", force_zip64=True) as f:
        f.write(head.getvalue())
        block = bytes(16 * MiB)
        for _ in range(total // len(block)):
            f.write(block)
    return buf.getvalue()


def _with_trailer(extra: int) -> tuple[bytes, int]:
    base = (Path(__file__).resolve().parent.parent / "vectors" / "mlf-archive"
            / "migration.archive.v7.io.graph.to-v5.tar").read_bytes()
    return base, extra


#: (label, files to make {name: bytes, or (bytes, sparse bytes appended)}, argv, stdin bytes or None)
CLI_CASES: list[tuple[str, Callable[[], dict[str, Any]], list[str], Callable[[], bytes] | None]] = [
    ("`blob dump`, chain of 10^5 imports", lambda: {"in.bin": _lib_chain(100_000)}, ["blob", "dump", "in.bin"], None),
    ("`blob dump`, DAG of 10^5 modules x 8 imports", lambda: {"in.bin": _lib_dag(100_000)},
     ["blob", "dump", "in.bin"], None),
    ("`diff` of that DAG and a 3-module blob", lambda: {"a.bin": _lib_dag(100_000), "b.bin": _lib_chain(3)},
     ["diff", "a.bin", "b.bin"], None),
    ("`diff` of chains of 10^5 and 10^5 + 1 imports", lambda: {"a.bin": _lib_chain(100_000),
                                                              "b.bin": _lib_chain(100_001)}, ["diff", "a.bin", "b.bin"],
     None),
    ("`check`, MLF tar + 3 GiB of zeros (sparse file)", lambda: {"in.tar": _with_trailer(3 << 30)},
     ["check", "in.tar"], None),
    ("`params check`, 2 x 10^5 tensors, 10^5 names twice", lambda: {"in.params": _params_many(200_000, 100_000)},
     ["params", "check", "in.params"], None),
    ("`check -`, 1 GiB of zeros on standard input", lambda: {}, ["check", "-"], lambda: bytes(1 << 30)),
    ("`params convert`, .npz inflating to 1 GiB", lambda: {"in.npz": _npz_bomb(1 << 30)},
     ["params", "convert", "in.npz", "out.params"], None),
    ("`params dump`, 10^6 zero-dimensional tensors", lambda: {"in.params": _params_many(1_000_000, 1_000_000)},
     ["params", "dump", "in.params"], None),
    ("`params dump --json`, 10^6 zero-dimensional tensors",
     lambda: {"in.params": _params_many(1_000_000, 1_000_000)}, ["params", "dump", "--json", "in.params"], None),
]


def run_cli(files: dict[str, Any], argv: list[str], stdin: bytes | None) -> tuple[float, int, int, int]:
    """(seconds, peak RSS in bytes, exit status, bytes printed) of one CLI run in a child."""
    import os
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        input_size = 0
        for name, data in files.items():
            extra = 0
            if isinstance(data, tuple):
                data, extra = data
            with open(os.path.join(tmp, name), "wb") as f:
                f.write(data)
                f.truncate(len(data) + extra)
            input_size += len(data) + extra
        out = tempfile.TemporaryFile()
        stdin_file = tempfile.TemporaryFile()
        stdin_file.write(stdin or b"")
        stdin_file.seek(0)
        t = time.perf_counter()
        p = subprocess.Popen([sys.executable, "-m", "mlf_spec", *argv], cwd=tmp, stdin=stdin_file, stdout=out,
                             stderr=subprocess.STDOUT,
                             env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)})
        _, status, usage = os.wait4(p.pid, 0)
        seconds = time.perf_counter() - t
        p.returncode = os.waitstatus_to_exitcode(status)
        printed = out.seek(0, 2)
        return seconds, usage.ru_maxrss * 1024, p.returncode, printed


def main_cli(only: str | None = None) -> None:
    """The command-line cases (those whose label holds ``only``): each in a fresh child
    (peak RSS is the child's high-water mark)."""
    print("| command and input | input | time | peak RSS | exit | printed |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, make, argv, stdin in CLI_CASES:
        if only is not None and only not in label:
            continue
        files = make()
        data_in = stdin() if stdin else None
        size = sum(len(d[0]) + d[1] if isinstance(d, tuple) else len(d) for d in files.values()) + len(data_in or b"")
        seconds, rss, status, printed = run_cli(files, argv, data_in)
        show = f"{size / MiB:.1f} MiB" if size >= MiB else f"{size / 1024:.1f} KiB"
        print(f"| {label} | {show} | {seconds:.1f} s | {rss / MiB:.0f} MiB | {status} | {printed / MiB:.1f} MiB |",
              flush=True)


def run(fn: Callable[[bytes], object], data: bytes) -> str:
    try:
        out = fn(data)
    except MlfError as exc:
        return type(exc).__name__
    close = getattr(out, "close", None)
    if close is not None:
        close()
    return "result"


def main() -> None:
    """Print the table."""
    print("| input | size | time | peak memory | outcome |")
    print("|---|---:|---:|---:|---|")
    for label, make, fn in CASES:
        data = make()
        run(fn, data)
        t = time.perf_counter()
        outcome = run(fn, data)
        seconds = time.perf_counter() - t
        tracemalloc.start()
        run(fn, data)
        used = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        size = f"{len(data) / MiB:.1f} MiB" if len(data) >= MiB else f"{len(data) / 1024:.1f} KiB"
        print(f"| {label} | {size} | {seconds:.2f} s | {used / MiB:.1f} MiB | {outcome} |", flush=True)


if __name__ == "__main__":
    if "--cli" in sys.argv:
        main_cli(sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else None)
    else:
        main()
