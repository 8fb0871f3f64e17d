"""The format's floor for benchmarks/params.py: the minimal C walkers of params_floor.c
(built with the C compiler found, called through ctypes) and the least Python loop that
lists a .params file's tensors."""

from __future__ import annotations

import ctypes
import os
import shutil
import struct
import subprocess
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def floor_walkers(work: Path) -> dict[str, Any]:
    """The C walkers of params_floor.c by name (walk_pread, walk_mmap), built with gcc now;
    none when no C compiler is found."""
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        return {}
    lib_path = work / "params_floor.so"
    subprocess.run([cc, "-O2", "-shared", "-fPIC", "-o", str(lib_path), str(HERE / "params_floor.c")],
                   check=True)
    lib = ctypes.CDLL(str(lib_path))
    out = {}
    for name in ("walk_pread", "walk_mmap"):
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = [ctypes.c_char_p], ctypes.c_long
        out[name] = fn
    return out


_U64 = struct.Struct("<Q").unpack_from
_I32 = struct.Struct("<i").unpack_from


def python_floor(path: Path) -> list[str]:
    """The least Python does to list a .params file's tensors: the names, then each
    header's dimension count and data size by pread, windows as the library's; no check,
    no index (a file whose names fit in its first 16 KiB)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        b = os.pread(fd, min(size, 16 << 10), 0)
        n, pos, names = _U64(b, 16)[0], 24, []
        for _ in range(n):
            ln = _U64(b, pos)[0]
            names.append(b[pos + 8:pos + 8 + ln].decode())
            pos += 8 + ln
        pos, base, last = pos + 8, 0, 0
        for _ in range(n):
            off = pos - base
            if off + 28 > len(b) or off + 40 + 8 * _I32(b, off + 24)[0] > len(b):
                b = os.pread(fd, min(size - pos, 1024 if not last or last > 16 << 10 else 2 * last + 1024), pos)
                base, off = pos, 0
            k = _I32(b, off + 24)[0]
            last = 40 + 8 * k + _U64(b, off + 32 + 8 * k)[0]
            pos += last
        return names
    finally:
        os.close(fd)
