"""Is a file that holds no module blob still a TVM library? The evidence taken.

``export_library`` embeds a blob only when the root module has imports, so a real TVM
library may hold none. Without a blob, mlf-spec calls a file a TVM library only on this
evidence (anything else is "not a TVM artifact"):

* ELF shared object or object file: it *defines* (not merely references) a global symbol
  that TVM's host code generator emits: a function exported as ``__tvm_ffi_<name>`` (v0.22 on;
  a TVM 0.27 llvm export without imports defines ``__tvm_ffi_<func>`` and ``__tvm_ffi_main``
  and nothing else of TVM's), the module context ``__tvm_module_ctx`` (up to v0.20),
  ``__tvm_ffi_library_ctx`` (v0.21) or ``__tvm_ffi__library_ctx`` (v0.22 on, possibly after a
  system-lib prefix), or ``__tvm_main__`` (the entry function of older graph/AOT host modules).
  A program that only mentions the names in its strings, or references them, is not taken.
* export tar: every member is named as ``export_library`` names its files (``lib<N>.o`` /
  ``lib<N>.c``, one per host module, plus ``devc.o`` / ``devc.c`` / ``devc.cc``), and there is
  at least one ``lib<N>`` member.
* C source: none. ``devc.c`` exists only to carry the blob, so C text without a C array
  definition of a blob symbol (a file that merely mentions ``__tvm_dev_mblob``) is not TVM's.
"""

from __future__ import annotations

import io
import os
import posixpath
import re
from typing import Any

from mlf_spec import tar as _tar
from mlf_spec._blob_facts import CONTEXT_SYMBOLS, EXPORT_MEMBER, FFI_FUNCTION_PREFIX
from mlf_spec._io import open_regular
from mlf_spec.errors import MlfError
from mlf_spec.sniff import compression

#: The symbols whose definition shows TVM's host code generator wrote an ELF file.
CONTEXT_SYMBOLS: tuple[bytes, ...] = CONTEXT_SYMBOLS
#: The member names of an export_library tar.
EXPORT_MEMBER: re.Pattern[str] = EXPORT_MEMBER


def evidence(source: str | os.PathLike[str] | bytes) -> str | None:
    """What shows that ``source`` (holding no module blob) was written by TVM, or None."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        f: Any = io.BytesIO(bytes(source))
    else:
        try:
            f = open_regular(source)
        except MlfError:
            return None
    with f:
        head = f.read(512)
        f.seek(0)
        if head[:4] == b"\x7fELF":
            return _elf_evidence(f)
        if len(head) >= 262 and head[257:262] == b"ustar" or compression(head) is not None:
            return _tar_evidence(f)
    return None


def _elf_evidence(f: Any) -> str | None:
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile
    from elftools.elf.sections import SymbolTableSection

    from .elf import symbols_named

    try:
        elf = ELFFile(f)
        for tab in elf.iter_sections():
            if not isinstance(tab, SymbolTableSection) or tab["sh_link"] >= elf.num_sections():
                continue
            strings = elf.get_section(tab["sh_link"]).data()
            offsets = _tvm_name_offsets(strings)
            if not offsets or not tab["sh_entsize"]:
                continue
            import numpy as np

            hits = symbols_named(tab.data(), tab["sh_entsize"], tab.num_symbols(), elf.little_endian,
                                  elf.elfclass == 64, np.array(sorted(offsets), dtype=np.uint64))
            for i in hits[:1]:
                name = tab.get_symbol(i).name
                return f"it defines {name}, a symbol TVM's host code generator emits"
    except (ELFError, MlfError, ValueError, OSError, KeyError, IndexError, ZeroDivisionError):
        return None
    return None


def _tvm_name_offsets(strings: bytes) -> set[int]:
    """String-table offsets of the names TVM's code generator emits (see the module doc): a
    ``__tvm_ffi_`` function, or a context / main symbol, possibly after a system-lib prefix."""
    found: set[int] = set()
    pos = strings.find(b"__tvm_")
    while pos >= 0 and len(found) < 100_000:
        start = strings.rfind(b"\0", 0, pos) + 1
        end = strings.find(b"\0", pos)
        end = len(strings) if end < 0 else end
        tail = strings[pos:end]
        if tail.startswith(FFI_FUNCTION_PREFIX) and pos == start or tail in CONTEXT_SYMBOLS:
            found.update(range(start, pos + 1))
        pos = strings.find(b"__tvm_", end)
    return found


def _tar_evidence(f: Any) -> str | None:
    """The member names of an export tar, read by the package's tar reader with the blob
    locator's limits (a compressed tar is decompressed within them first)."""
    from .export_tar import decompressed_bound, members
    from .located import DEFAULT_MAX_MEMBERS, DEFAULT_MAX_SIZE

    try:
        with _tar.plain_tar(f, decompressed_bound(DEFAULT_MAX_SIZE, DEFAULT_MAX_MEMBERS), file=None) as plain:
            names = [posixpath.basename(e.path) for e in members(plain, "<tar>", DEFAULT_MAX_SIZE,
                                                                 DEFAULT_MAX_MEMBERS)]
    except (MlfError, OSError):
        return None
    if names and all(EXPORT_MEMBER.fullmatch(n) for n in names) and any(n.startswith("lib") for n in names):
        return f"its members ({', '.join(names[:4])}) are named as export_library names them"
    return None


__all__ = ["CONTEXT_SYMBOLS", "EXPORT_MEMBER", "evidence"]
