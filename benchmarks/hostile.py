"""Time and peak memory of the readers on hostile inputs at full size (issue 11), against
the limits the README's "Safety and limits" section states.

    python benchmarks/hostile.py            # prints a Markdown table

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
    main()
