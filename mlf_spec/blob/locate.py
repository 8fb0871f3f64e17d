"""Find the TVM module blob inside exported artifacts, and write it back out.

TVM's ``export_library`` embeds the serialized imports of a module (the "module blob": an
8-byte little-endian body length followed by the body) under one of these symbols:

* ``__tvm_dev_mblob``         TVM <= v0.20, legacy body layout
* ``__tvm_ffi_library_bin``   v0.21, legacy body layout under the new name (b40b6fa52d)
* ``__tvm_ffi__library_bin``  v0.22 and later, tvm-ffi body layout

each optionally preceded by a system-lib prefix (``<prefix>__tvm_ffi__library_bin``, v0.13+).
The symbol lives in an ELF shared object, an ELF relocatable object (``devc.o``), a C source
file (``devc.c`` / ``devc.cc``), a tarball written by ``export_library(... .tar)`` holding one of
those, or a raw ``.bin`` file holding the bytes themselves. :func:`locate_blobs` finds it in all
of these; :func:`write_bin` and :func:`c_source_for_blob` write it back out.

This module only locates the bytes; decoding the body is the job of the blob codec.
"""

from __future__ import annotations

import dataclasses
import io
import os
import posixpath
import re
import struct
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

import numpy as np
from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile
from elftools.elf.relocation import RelocationSection, RelrRelocationSection
from elftools.elf.sections import Section, SymbolTableIndexSection, SymbolTableSection

from mlf_spec import _compress
from mlf_spec._io import Source, atomic_write_bytes
from mlf_spec.errors import (
    ConstraintError,
    CountMismatchError,
    LengthError,
    MalformedError,
    MlfError,
    TruncatedError,
    UnsafeArchiveError,
    UnsupportedError,
)
from mlf_spec.mlf import _tar
from mlf_spec.sniff import compression as _compression

__all__ = [
    "BLOB_SYMBOLS",
    "C_SOURCE_STYLES",
    "SYMBOL_FFI",
    "SYMBOL_FFI_V021",
    "SYMBOL_LEGACY",
    "LocatedBlob",
    "c_source_for_blob",
    "locate_blobs",
    "parse_c_source",
    "split_blob_symbol",
    "write_bin",
]

SYMBOL_LEGACY = "__tvm_dev_mblob"
SYMBOL_FFI_V021 = "__tvm_ffi_library_bin"
SYMBOL_FFI = "__tvm_ffi__library_bin"

# Longest first, so that suffix matching picks the most specific name.
BLOB_SYMBOLS: tuple[str, ...] = (SYMBOL_FFI, SYMBOL_FFI_V021, SYMBOL_LEGACY)
_BLOB_SYMBOL_BYTES: tuple[bytes, ...] = tuple(s.encode() for s in BLOB_SYMBOLS)

C_SOURCE_STYLES: tuple[str, ...] = ("current", "legacy", "legacy-char")

_PREFIX_SIZE = 8
_DEFAULT_MAX_SIZE = 8 << 30
_DEFAULT_MAX_MEMBERS = 20_000
_SNIFF_SIZE = 4096
_MAX_BLOB_SYMBOLS = 64  # a library defines one blob (rarely a few); each is read into memory
# The members of a tar may total this many times max_size (and a compressed tar may
# decompress to that plus max_size of padding).
_TAR_TOTAL_FACTOR = 4


@dataclasses.dataclass(frozen=True)
class LocatedBlob:
    """One module blob found in an artifact.

    ``symbol`` is the blob symbol without prefix (one of :data:`BLOB_SYMBOLS`; ``""`` for a raw
    ``.bin``, which names none) and ``prefix`` the system-lib prefix in front of it (``""`` if
    none). ``data`` is the size prefix plus body. ``source`` says where it came from:
    ``"elf-shared-object"``, ``"elf-object"``, ``"elf-executable"``, ``"c-source"``, ``"raw"``
    or ``"tar:<member>"``. ``file_offset`` is where ``data`` starts inside the file it was read
    from (the member for tar sources; None for C source, whose bytes are not stored literally).
    """

    symbol: str
    prefix: str
    data: bytes = dataclasses.field(repr=False)
    source: str
    file_offset: int | None
    container_member: str | None = None
    after_end: int = 0  # raw files: bytes after the size-prefixed blob (not part of it)

    @property
    def name(self) -> str:
        """The full symbol name, prefix included."""
        return self.prefix + self.symbol

    @property
    def layout(self) -> str | None:
        """The body layout the symbol implies for releases: ``"ffi"`` (v0.22+) or ``"legacy"``;
        None when no symbol tells (raw input).

        Development builds between apache/tvm b8eb80b968 and e1700e1a22 (2025-08/09) wrote the
        new layout still under ``__tvm_ffi_library_bin``; only the body can settle those.
        """
        if not self.symbol:
            return None
        return "ffi" if self.symbol == SYMBOL_FFI else "legacy"


def split_blob_symbol(name: str) -> tuple[str, str] | None:
    """Split a symbol name into ``(prefix, blob_symbol)``, or return None if it is no blob."""
    for sym in BLOB_SYMBOLS:
        if name.endswith(sym):
            return name[: -len(sym)], sym
    return None


# --------------------------------------------------------------------------------------------
# Input handling


class _Window(io.RawIOBase):
    """A read-only, seekable view of ``[base, base + size)`` of a seekable stream."""

    def __init__(self, stream: BinaryIO, base: int, size: int) -> None:
        super().__init__()
        self._stream = stream
        self._base = base
        self._size = size
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if whence == io.SEEK_SET:
            pos = offset
        elif whence == io.SEEK_CUR:
            pos = self._pos + offset
        elif whence == io.SEEK_END:
            pos = self._size + offset
        else:
            raise ValueError(f"bad whence {whence}")
        if pos < 0:
            raise ValueError("negative seek position")
        self._pos = pos
        return pos

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]  # narrower than RawIOBase.readinto on purpose: only memoryviews are passed
        n = min(len(buffer), max(0, self._size - self._pos))
        if n == 0:
            return 0
        self._stream.seek(self._base + self._pos)
        chunk = self._stream.read(n)
        buffer[: len(chunk)] = chunk
        self._pos += len(chunk)
        return len(chunk)


def _stream_size(stream: BinaryIO) -> int:
    pos = stream.tell()
    end = stream.seek(0, io.SEEK_END)
    stream.seek(pos)
    return end


def _read_exact(stream: BinaryIO, offset: int, n: int, *, file: str, field: str) -> bytes:
    stream.seek(offset)
    data = stream.read(n)
    if len(data) != n:
        raise TruncatedError(
            f"needed {n} bytes, the input ends after {len(data)}", file=file, field=field, offset=offset
        )
    return data


def _line_of(text: bytes, offset: int) -> int:
    return text.count(b"\n", 0, offset) + 1


# --------------------------------------------------------------------------------------------
# Public entry point


def locate_blobs(
    source: Source,
    *,
    kind: str | None = None,
    name: str | None = None,
    max_size: int = _DEFAULT_MAX_SIZE,
    max_members: int = _DEFAULT_MAX_MEMBERS,
) -> list[LocatedBlob]:
    """Return every module blob in ``source`` (path, bytes or binary file object).

    The container is detected from the content (ELF, tar possibly compressed, C source, raw
    ``.bin``) unless ``kind`` (``"elf"``, ``"tar"``, ``"c"``, ``"raw"``) is given. An input
    without any blob symbol gives an empty list. ``name`` labels the input in errors;
    ``max_size`` bounds anything read whole into memory (tar members, C text, raw files) and
    ``max_members`` the number of tar members. Bad input raises an :class:`MlfError`.
    """
    if kind is not None and kind not in ("elf", "tar", "c", "raw"):
        raise ValueError(f"unknown kind {kind!r}")
    if isinstance(source, (bytes, bytearray, memoryview)):
        label = name or "<bytes>"
        return _locate_stream(io.BytesIO(bytes(source)), label, kind, max_size, max_members, None)
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        with open(path, "rb") as fh:
            return _locate_stream(fh, name or path, kind, max_size, max_members, path)
    if not hasattr(source, "read"):
        raise TypeError(f"expected a path, bytes or a binary file object, got {type(source).__name__}")
    label = name or str(getattr(source, "name", "<stream>"))
    if source.seekable():
        base = source.tell()
        size = _stream_size(source) - base
        window = io.BufferedReader(_Window(source, base, size))
        return _locate_stream(window, label, kind, max_size, max_members, None)
    data = source.read(max_size + 1)
    if len(data) > max_size:
        raise LengthError(f"input stream is larger than max_size={max_size}", file=label, offset=max_size)
    return _locate_stream(io.BytesIO(data), label, kind, max_size, max_members, None)


def _locate_stream(
    stream: BinaryIO,
    label: str,
    kind: str | None,
    max_size: int,
    max_members: int,
    path: str | None,
) -> list[LocatedBlob]:
    size = _stream_size(stream)
    stream.seek(0)
    head = stream.read(_SNIFF_SIZE)
    detected = kind or _sniff(head, size, label)
    if detected == "raw" and kind is None and path is not None and path.endswith((".tar", ".tgz", ".tar.gz")):
        # Old v7 tarballs carry no "ustar" magic; trust the extension only as a last resort.
        detected = "tar"
    if detected == "elf":
        return _locate_elf(stream, size, label, member=None)
    if detected == "tar":
        return _locate_tar(stream, label, max_size, max_members)
    if detected == "c":
        if size > max_size:
            raise LengthError(f"C source is larger than max_size={max_size}", file=label, offset=max_size)
        stream.seek(0)
        return parse_c_source(stream.read(), file=label)
    return [_locate_raw(stream, size, label, max_size)]


def _sniff(head: bytes, size: int, label: str) -> str:
    """Classify an input from its first bytes."""
    # A raw blob whose prefix matches the size exactly wins over any magic that it happens
    # to resemble (the prefix is an arbitrary number, e.g. 0x5a4d reads as "MZ").
    if size >= _PREFIX_SIZE and int.from_bytes(head[:_PREFIX_SIZE], "little") == size - _PREFIX_SIZE:
        return "raw"
    if head[:4] == b"\x7fELF":
        return "elf"
    if head[257:262] == b"ustar":
        return "tar"
    if _compression(head) is not None:
        return "tar"
    for magic, what in _UNSUPPORTED_MAGICS:
        if head.startswith(magic):
            raise UnsupportedError(f"{what} files are not supported", file=label, field="magic", offset=0)
    # A genuine blob prefix has zero high bytes, so a blob is never free of NUL bytes.
    if head and b"\x00" not in head:
        return "c"
    return "raw"


_UNSUPPORTED_MAGICS: tuple[tuple[bytes, str], ...] = (
    (b"!<arch>\n", "ar archive (static library)"),
    (b"\xfe\xed\xfa\xce", "Mach-O"),
    (b"\xfe\xed\xfa\xcf", "Mach-O"),
    (b"\xce\xfa\xed\xfe", "Mach-O"),
    (b"\xcf\xfa\xed\xfe", "Mach-O"),
    (b"\xca\xfe\xba\xbe", "Mach-O universal"),
    (b"MZ", "PE/COFF"),
    (b"PK\x03\x04", "zip"),
)


# --------------------------------------------------------------------------------------------
# Size prefix


def _blob_length(prefix: bytes, limit: int, *, file: str, field: str, offset: int, what: str) -> int:
    """Return 8 + nbytes after checking it against ``limit`` bytes available."""
    if limit < _PREFIX_SIZE:
        raise TruncatedError(
            f"{what} holds {limit} bytes, fewer than the 8-byte size prefix",
            file=file,
            field=field,
            offset=offset,
        )
    nbytes = int.from_bytes(prefix[:_PREFIX_SIZE], "little")
    if nbytes > limit - _PREFIX_SIZE:
        raise LengthError(
            f"size prefix claims {nbytes} body bytes but {what} holds only {limit - _PREFIX_SIZE} after the prefix",
            file=file,
            field=f"{field}.nbytes",
            offset=offset,
        )
    return _PREFIX_SIZE + nbytes


def _locate_raw(stream: BinaryIO, size: int, label: str, max_size: int) -> LocatedBlob:
    stream.seek(0)
    prefix = stream.read(_PREFIX_SIZE)
    total = _blob_length(prefix, size, file=label, field="blob", offset=0, what="the file")
    if total > max_size:
        raise LengthError(f"raw blob is larger than max_size={max_size}", file=label, field="blob", offset=0)
    # Bytes after the size-prefixed blob are not part of it (loaders read only the prefixed
    # size); the blob is read without them and after_end says how many there were.
    data = _read_exact(stream, 0, total, file=label, field="blob")
    return LocatedBlob(symbol="", prefix="", data=data, source="raw", file_offset=0, after_end=size - total)


# --------------------------------------------------------------------------------------------
# ELF

# What pyelftools raises on malformed input besides its own ELFError.
_ELF_FAILURES: tuple[type[BaseException], ...] = (
    ELFError,
    struct.error,
    ValueError,
    KeyError,
    IndexError,
    TypeError,
    ArithmeticError,
    EOFError,
    AssertionError,
    OSError,  # a file read by path: seeking to a negative offset from a corrupt header (EINVAL)
)

_SHF_COMPRESSED = 0x800


@contextmanager
def _elf_guard(file: str, field: str, offset: int | None) -> Iterator[None]:
    try:
        yield
    except MlfError:
        raise
    except _ELF_FAILURES as exc:
        raise MalformedError(
            f"unreadable ELF structure: {exc}", file=file, field=field, offset=offset
        ) from exc


def _elf_header_checks(stream: BinaryIO, size: int, label: str) -> bool:
    """Check e_ident and the header extent here, for precise errors; return whether ELF64."""
    stream.seek(0)
    ident = stream.read(16)
    if len(ident) < 6:
        raise TruncatedError("file ends inside e_ident", file=label, field="e_ident", offset=len(ident))
    if ident[4] not in (1, 2):
        raise MalformedError(
            f"EI_CLASS is {ident[4]}, expected 1 or 2", file=label, field="e_ident.EI_CLASS", offset=4
        )
    if ident[5] not in (1, 2):
        raise MalformedError(
            f"EI_DATA is {ident[5]}, expected 1 or 2", file=label, field="e_ident.EI_DATA", offset=5
        )
    is64 = ident[4] == 2
    header_size = 64 if is64 else 52
    if size < header_size:
        raise TruncatedError(
            f"file has {size} bytes, the ELF header needs {header_size}",
            file=label,
            field="elf_header",
            offset=size,
        )
    return is64


def _section_extent_check(sec: Section, index: int, size: int, label: str) -> None:
    if sec["sh_type"] == "SHT_NOBITS":
        return
    end = sec["sh_offset"] + sec["sh_size"]
    if end > size:
        raise TruncatedError(
            f"section {sec.name!r} spans [{sec['sh_offset']}, {end}) but the file has {size} bytes",
            file=label,
            field=f"sections[{index}]({sec.name}).sh_size",
            offset=sec["sh_offset"],
        )


@dataclasses.dataclass
class _Elf:
    """What the ELF helpers share while one file is searched."""

    elf: ELFFile
    sections: list[Section]
    stream: BinaryIO
    size: int
    label: str
    e_type: str
    source: str
    member: str | None


def _locate_elf(stream: BinaryIO, size: int, label: str, member: str | None) -> list[LocatedBlob]:
    is64 = _elf_header_checks(stream, size, label)
    with _elf_guard(label, "elf_header", 0):
        elf = ELFFile(stream)
        e_type = elf["e_type"]
        shoff = elf["e_shoff"]
        shentsize = elf["e_shentsize"]
    kinds = {"ET_REL": "elf-object", "ET_DYN": "elf-shared-object", "ET_EXEC": "elf-executable"}
    if e_type not in kinds:
        raise UnsupportedError(
            f"ELF type {e_type} cannot hold a module blob", file=label, field="e_type", offset=16
        )
    if shoff == 0:
        raise UnsupportedError(
            "the ELF file has no section headers, so its symbols cannot be looked up",
            file=label,
            field="e_shoff",
            offset=40 if is64 else 32,
        )
    expected_entsize = 64 if is64 else 40
    if shentsize != expected_entsize:
        raise MalformedError(
            f"e_shentsize is {shentsize}, expected {expected_entsize}",
            file=label,
            field="e_shentsize",
            offset=58 if is64 else 46,
        )
    if shoff + shentsize > size:
        raise TruncatedError(
            f"section header table at {shoff} lies beyond the end of the file ({size} bytes)",
            file=label,
            field="e_shoff",
            offset=shoff,
        )
    with _elf_guard(label, "e_shnum", shoff):
        nsec = elf.num_sections()
    if shoff + nsec * shentsize > size:
        raise TruncatedError(
            f"section header table of {nsec} entries at {shoff} runs past the end of the file ({size} bytes)",
            file=label,
            field="section_headers",
            offset=shoff,
        )
    with _elf_guard(label, "section_headers", shoff):
        sections = [elf.get_section(i) for i in range(nsec)]
    ctx = _Elf(
        elf=elf,
        sections=sections,
        stream=stream,
        size=size,
        label=label,
        e_type=e_type,
        source=kinds[e_type] if member is None else f"tar:{member}",
        member=member,
    )
    # .symtab and .dynsym of a shared object usually both list the blob: keep one.
    found: dict[tuple[str, int], LocatedBlob] = {}
    for tab_index, tab in enumerate(sections):
        if tab["sh_type"] in ("SHT_SYMTAB", "SHT_DYNSYM"):
            for blob in _blobs_in_symtab(ctx, tab_index):
                found.setdefault((blob.name, blob.file_offset or 0), blob)
    return sorted(found.values(), key=lambda b: (b.file_offset or 0, b.name))


def _blobs_in_symtab(ctx: _Elf, tab_index: int) -> Iterator[LocatedBlob]:
    tab = ctx.sections[tab_index]
    field = f"sections[{tab_index}]({tab.name})"
    _section_extent_check(tab, tab_index, ctx.size, ctx.label)
    link = tab["sh_link"]
    if link >= len(ctx.sections):
        raise MalformedError(
            f"symbol table links to section {link}, but there are {len(ctx.sections)}",
            file=ctx.label,
            field=f"{field}.sh_link",
            offset=tab["sh_offset"],
        )
    strtab = ctx.sections[link]
    _section_extent_check(strtab, link, ctx.size, ctx.label)
    with _elf_guard(ctx.label, f"sections[{link}]({strtab.name})", strtab["sh_offset"]):
        strings = strtab.data()
    # Cheap pre-filter: most symbol tables contain no blob name at all.
    if not any(s in strings for s in _BLOB_SYMBOL_BYTES):
        return
    if not isinstance(tab, SymbolTableSection):
        raise MalformedError(
            "symbol table section has an unusable type", file=ctx.label, field=field, offset=tab["sh_offset"]
        )
    with _elf_guard(ctx.label, field, tab["sh_offset"]):
        entsize = tab["sh_entsize"]
        expected = 24 if ctx.elf.elfclass == 64 else 16
        if entsize != expected:
            raise MalformedError(f"symbol table sh_entsize is {entsize}, expected {expected}", file=ctx.label,
                                 field=f"{field}.sh_entsize", offset=tab["sh_offset"])
        count = tab.num_symbols()
        table = tab.data()
    candidates = _symbols_named(table, entsize, count, ctx.elf.little_endian, ctx.elf.elfclass == 64,
                                _blob_name_offsets(strings))
    if len(candidates) > _MAX_BLOB_SYMBOLS:
        raise LengthError(f"{len(candidates)} blob symbols in one symbol table (the limit is {_MAX_BLOB_SYMBOLS})",
                          file=ctx.label, field=field, offset=tab["sh_offset"])
    for i in candidates:
        entry_offset = tab["sh_offset"] + i * entsize
        with _elf_guard(ctx.label, f"{field}.symbols[{i}]", entry_offset):
            sym = tab.get_symbol(i)
            split = split_blob_symbol(sym.name) if sym.name else None
            if split is None:
                continue
            bind = sym["st_info"]["bind"]
            stype = sym["st_info"]["type"]
            shndx = sym["st_shndx"]
            value = sym["st_value"]
            st_size = sym["st_size"]
        if shndx == "SHN_UNDEF" or bind == "STB_LOCAL":
            # A reference to a blob defined elsewhere, or a copy the loader cannot see.
            continue
        where = _SymbolRef(sym.name, split, f"{field}.symbols[{i}]({sym.name})", entry_offset)
        if stype not in ("STT_OBJECT", "STT_NOTYPE"):
            raise UnsupportedError(
                f"blob symbol has type {stype}, expected STT_OBJECT",
                file=ctx.label,
                field=f"{where.field}.st_info",
                offset=entry_offset,
            )
        sec_index = _symbol_section_index(ctx, tab_index, i, shndx, where)
        yield _read_symbol_blob(ctx, sec_index, value, st_size, where)


def _blob_name_offsets(strings: bytes) -> np.ndarray:
    """Every string-table offset whose string ends in a blob symbol name (a symbol may point
    into the middle of a string: linkers share suffixes)."""
    found: list[int] = []
    for sym in _BLOB_SYMBOL_BYTES:
        pos = strings.find(sym)
        while pos >= 0:
            end = pos + len(sym)
            if end == len(strings) or strings[end] == 0:
                found.extend(range(strings.rfind(b"\0", 0, pos) + 1, pos + 1))
            pos = strings.find(sym, pos + 1)
    return np.array(sorted(set(found)), dtype=np.uint64)


def _symbols_named(table: bytes, entsize: int, count: int, little: bool, is64: bool, names: np.ndarray) -> list[int]:
    """Indices of the defined, non-local symbols whose st_name is one of ``names``: the whole
    table is scanned at once instead of decoding every entry with pyelftools (a table of a
    million symbols would take minutes one by one). Entries the scan cannot decode (a
    short entry size, entries past the data) are left to pyelftools to report."""
    info_at, shndx_at = (4, 6) if is64 else (12, 14)
    if len(table) < entsize:
        return list(range(count))
    if not len(names):
        return []
    n = min(count, len(table) // entsize)
    e = "<" if little else ">"

    def column(offset: int, dtype: str) -> np.ndarray:
        return np.ndarray((n,), dtype=e + dtype, buffer=table, offset=offset, strides=(entsize,))

    wanted = np.isin(column(0, "u4").astype(np.uint64), names)
    wanted &= column(shndx_at, "u2") != 0  # SHN_UNDEF: a reference to a blob defined elsewhere
    wanted &= (column(info_at, "u1") >> 4) != 0  # STB_LOCAL: a copy the loader cannot see
    return np.flatnonzero(wanted).tolist() + list(range(n, count))


@dataclasses.dataclass(frozen=True)
class _SymbolRef:
    """A blob symbol's name, its (prefix, symbol) split and where its entry is, for errors."""

    name: str
    split: tuple[str, str]
    field: str
    entry_offset: int


def _symbol_section_index(
    ctx: _Elf, tab_index: int, sym_index: int, shndx: int | str, where: _SymbolRef
) -> int:
    def fail(cls: type[MlfError], message: str) -> MlfError:
        return cls(message, file=ctx.label, field=f"{where.field}.st_shndx", offset=where.entry_offset)

    if shndx == "SHN_XINDEX":
        for sec in ctx.sections:
            if isinstance(sec, SymbolTableIndexSection) and sec["sh_link"] == tab_index:
                with _elf_guard(ctx.label, f"{where.field}.st_shndx", where.entry_offset):
                    shndx = int(sec.get_section_index(sym_index))
                break
        else:
            raise fail(MalformedError, "symbol uses SHN_XINDEX but no SHT_SYMTAB_SHNDX section exists")
    if shndx == "SHN_COMMON":
        raise fail(
            ConstraintError, "blob symbol is a common (uninitialised) symbol with no bytes in the file"
        )
    if not isinstance(shndx, int):
        raise fail(UnsupportedError, f"blob symbol has special section index {shndx}")
    if shndx >= len(ctx.sections):
        raise fail(MalformedError, f"symbol points to section {shndx}, but there are {len(ctx.sections)}")
    return shndx


def _read_symbol_blob(ctx: _Elf, sec_index: int, value: int, st_size: int, where: _SymbolRef) -> LocatedBlob:
    sec = ctx.sections[sec_index]
    name = where.name
    if sec["sh_type"] == "SHT_NOBITS":
        raise ConstraintError(
            f"blob symbol {name} lies in {sec.name!r}, an SHT_NOBITS section with no bytes in the file",
            file=ctx.label,
            field=f"{where.field}.st_shndx",
            offset=where.entry_offset,
        )
    if sec["sh_flags"] & _SHF_COMPRESSED:
        raise UnsupportedError(
            f"blob section {sec.name!r} is compressed (SHF_COMPRESSED)",
            file=ctx.label,
            field=f"sections[{sec_index}]({sec.name}).sh_flags",
            offset=sec["sh_offset"],
        )
    _section_extent_check(sec, sec_index, ctx.size, ctx.label)
    # ET_REL symbol values are section-relative; linked files hold virtual addresses.
    rel = value if ctx.e_type == "ET_REL" else value - sec["sh_addr"]
    if rel < 0 or rel > sec["sh_size"]:
        raise ConstraintError(
            f"symbol value 0x{value:x} is outside section {sec.name!r} "
            f"(addr 0x{sec['sh_addr']:x}, size {sec['sh_size']})",
            file=ctx.label,
            field=f"{where.field}.st_value",
            offset=where.entry_offset,
        )
    available = sec["sh_size"] - rel
    file_offset = sec["sh_offset"] + rel
    if st_size:
        if st_size > available:
            raise LengthError(
                f"st_size {st_size} exceeds the {available} bytes left in section {sec.name!r}",
                file=ctx.label,
                field=f"{where.field}.st_size",
                offset=where.entry_offset,
            )
        limit, what = st_size, f"symbol {name} (st_size {st_size})"
    else:
        # No size recorded (e.g. a symbol added with objcopy): only the prefix bounds the blob.
        limit, what = available, f"section {sec.name!r} after symbol {name}"
    prefix = _read_exact(ctx.stream, file_offset, min(limit, _PREFIX_SIZE), file=ctx.label, field=name)
    total = _blob_length(prefix, limit, file=ctx.label, field=name, offset=file_offset, what=what)
    lo = rel if ctx.e_type == "ET_REL" else value
    _check_no_relocations(ctx, sec_index, lo, lo + total, name)
    data = _read_exact(ctx.stream, file_offset, total, file=ctx.label, field=name)
    return LocatedBlob(
        symbol=where.split[1],
        prefix=where.split[0],
        data=data,
        source=ctx.source,
        file_offset=file_offset,
        container_member=ctx.member,
    )


def _check_no_relocations(ctx: _Elf, sec_index: int, lo: int, hi: int, name: str) -> None:
    """Refuse a blob whose bytes a relocation would patch: the file would not hold what the
    loader sees. TVM never emits such a blob (it is a plain constant byte array).

    ``[lo, hi)`` is section-relative for ET_REL, a virtual address range otherwise.
    """
    for index, sec in enumerate(ctx.sections):
        if not isinstance(sec, (RelocationSection, RelrRelocationSection)):
            continue
        if ctx.e_type == "ET_REL" and sec["sh_info"] != sec_index:
            continue
        field = f"sections[{index}]({sec.name})"
        _section_extent_check(sec, index, ctx.size, ctx.label)
        if sec["sh_type"] != "SHT_RELR" and sec["sh_entsize"] == 0:
            raise MalformedError(
                "relocation section has sh_entsize 0",
                file=ctx.label,
                field=f"{field}.sh_entsize",
                offset=sec["sh_offset"],
            )
        with _elf_guard(ctx.label, field, sec["sh_offset"]):
            hit = _relocation_into(sec, ctx.elf.little_endian, ctx.elf.elfclass == 64, lo, hi)
        if hit is not None:
            k, r_offset = hit
            raise UnsupportedError(
                f"relocation {k} (r_offset 0x{r_offset:x}) patches the bytes of blob symbol {name}",
                file=ctx.label,
                field=f"{field}[{k}].r_offset",
                offset=sec["sh_offset"] + k * (sec["sh_entsize"] or 8),
            )


def _relocation_into(sec: Section, little: bool, is64: bool, lo: int, hi: int) -> tuple[int, int] | None:
    """(index, r_offset) of the first relocation of ``sec`` that patches a byte of
    ``[lo, hi)`` (a relocation patches at most 8 bytes from r_offset), or None. REL and RELA
    tables are scanned at once (r_offset is the first field of an entry); RELR entries are
    expanded one bitmap at a time, skipping bitmaps that cannot reach the range."""
    data = sec.data()
    word = 8 if is64 else 4
    dtype = ("<" if little else ">") + ("u8" if is64 else "u4")
    low = max(lo - 7, 0)
    if isinstance(sec, RelrRelocationSection):
        entries = np.frombuffer(data[: len(data) // word * word], dtype=dtype).tolist()
        base = 0
        for k, e in enumerate(entries):
            if not e & 1:
                if low <= e < hi:
                    return k, e
                base = e + word
                continue
            span = base + (8 * word - 1) * word
            if base < hi and span > low:
                bits = e >> 1
                i = 0
                while bits:
                    if bits & 1 and low <= base + i * word < hi:
                        return k, base + i * word
                    bits >>= 1
                    i += 1
            base += (8 * word - 1) * word
        return None
    entsize = sec["sh_entsize"]
    if entsize < word or len(data) < word:
        return None
    n = (len(data) - word) // entsize + 1
    r_offset = np.ndarray((n,), dtype=dtype, buffer=data, strides=(entsize,))
    hits = np.flatnonzero((r_offset < hi) & (r_offset >= low))
    return (int(hits[0]), int(r_offset[hits[0]])) if len(hits) else None


# --------------------------------------------------------------------------------------------
# C source

# Comments are blanked (same length, newlines kept) so that offsets stay byte offsets;
# string and character literals are matched only so that "//" inside them is left alone.
_C_LEXEMES = re.compile(
    rb"""//[^\n]*|/\*.*?(?:\*/|\Z)|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'""",
    re.S,
)
# Blob names are found by their literal part (fast even in a huge file); the declaration
# around each is then checked with the two patterns below.
_C_BLOB_NAME = re.compile(rb"__tvm_(?:ffi__library_bin|ffi_library_bin|dev_mblob)(?![A-Za-z0-9_])")
_C_TYPE_BEFORE = re.compile(rb"\b(?:char|uint8_t|int8_t)\s+(?:const\s+)?\Z")
_C_ARRAY_AFTER = re.compile(
    rb"""
    \s*\[(?P<count>[^\]\[]*)\]\s*
    (?:__attribute__\s*\(\((?:[^()]|\([^()]*\))*\)\)\s*)*
    """,
    re.X,
)
_C_IDENT_CHARS = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_C_INT = re.compile(
    rb"\s*(?P<sign>[-+]?)\s*(?:0[xX](?P<hex>[0-9a-fA-F]+)|(?P<dec>[1-9][0-9]*)|(?P<oct>0[0-7]*))[uUlL]*\s*"
)


_WS = re.compile(rb"\s*")
_WHITESPACE = b" \t\r\n\v\f"
_SPACE_INSIDE_TOKEN = re.compile(rb"[0-9A-Za-z]\s+[0-9A-Za-z]")
_UNPADDED_HEX = re.compile(rb"\b0[xX]([0-9a-fA-F])\b")


def _hex_initializer_fast(region: bytes) -> bytes | None:
    """Decode an initializer made only of ``0xH`` / ``0xHH`` elements, or return None.

    Every TVM era writes this form, and it is the one that gets big, so it is decoded with
    whole-buffer operations; anything else (other spellings, or an error to report) goes
    through the per-token path.
    """
    if _SPACE_INSIDE_TOKEN.search(region):
        return None
    compact = region.translate(None, _WHITESPACE)
    if not compact.endswith(b","):
        compact += b","
    data = _padded_units(compact)
    if data is None:
        # Eras up to v0.13 did not zero-pad: widen "0xH" to "0x0H" and try again.
        data = _padded_units(_UNPADDED_HEX.sub(rb"0x0\1", compact))
    return data


def _padded_units(compact: bytes) -> bytes | None:
    n, rest = divmod(len(compact), 5)
    if rest or compact[0::5] != b"0" * n or compact[4::5] != b"," * n:
        return None
    if compact[1::5].replace(b"X", b"x") != b"x" * n:
        return None
    digits = bytearray(2 * n)
    digits[0::2] = compact[2::5]
    digits[1::2] = compact[3::5]
    try:
        return bytes.fromhex(digits.decode("ascii"))
    except ValueError:
        return None


def _skip_ws(code: bytes, pos: int) -> int:
    return _WS.match(code, pos).end()  # type: ignore[union-attr]  # _WS matches the empty string, so match() never gives None


def _blank_comments(text: bytes) -> bytes:
    def repl(m: re.Match[bytes]) -> bytes:
        s = m.group(0)
        if s[:1] != b"/":
            return s
        return re.sub(rb"[^\n]", b" ", s)

    return _C_LEXEMES.sub(repl, text)


def _c_int(token: bytes) -> int | None:
    m = _C_INT.fullmatch(token)
    if m is None:
        return None
    if m["hex"] is not None:
        value = int(m["hex"], 16)
    elif m["dec"] is not None:
        # Python refuses to convert more than 4300 decimal digits (ValueError); anything
        # over 30 digits is out of every range this module checks anyway
        value = int(m["dec"]) if len(m["dec"]) <= 30 else 10**30
    else:
        value = int(m["oct"], 8)
    return -value if m["sign"] == b"-" else value


def parse_c_source(text: bytes | str, *, file: str = "<c-source>") -> list[LocatedBlob]:
    """Return the blobs defined as byte arrays in C source text (``devc.c`` as TVM writes it).

    Each ``[const] [unsigned] char <prefix><blob symbol>[N] = { ... };`` definition gives one
    blob; declarations without an initializer are ignored. The initializer is tokenised, its
    element count checked against ``N`` and its size prefix against its length.
    """
    raw = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    if not any(s in raw for s in _BLOB_SYMBOL_BYTES):
        return []
    code = _blank_comments(raw)
    blobs = []
    for hit in _C_BLOB_NAME.finditer(code):
        begin = hit.start()
        while begin > 0 and code[begin - 1] in _C_IDENT_CHARS:
            begin -= 1
        decl = _C_ARRAY_AFTER.match(code, hit.end())
        if decl is None or _C_TYPE_BEFORE.search(code, max(0, begin - 64), begin) is None:
            continue  # a use of the name (registration call, pointer), not an array
        if code[begin] in b"0123456789":
            continue  # not an identifier (C reads "0__tvm_..." as a malformed number)
        name = code[begin : hit.end()].decode("ascii")
        split = split_blob_symbol(name)
        if split is None:
            continue
        after = decl.end()
        if after >= len(code):
            raise TruncatedError(
                f"line {_line_of(raw, begin)}: source ends after the declaration of {name}",
                file=file,
                field=name,
                offset=len(code),
            )
        if code[after : after + 1] != b"=":
            continue  # a declaration (";"), a parameter ("," or ")"): no bytes here
        brace = _skip_ws(code, after + 1)
        if brace >= len(code):
            raise TruncatedError(
                f"line {_line_of(raw, after)}: source ends before the initializer of {name}",
                file=file,
                field=name,
                offset=len(code),
            )
        if code[brace : brace + 1] != b"{":
            raise MalformedError(
                f"line {_line_of(raw, brace)}: initializer of {name} does not start with '{{'",
                file=file,
                field=name,
                offset=brace,
            )
        blobs.append(_parse_c_initializer(raw, code, decl, name, split, brace, file))
    return blobs


def _parse_c_initializer(
    raw: bytes,
    code: bytes,
    decl: re.Match[bytes],
    name: str,
    split: tuple[str, str],
    brace: int,
    file: str,
) -> LocatedBlob:
    start = brace + 1
    close = code.find(b"}", start)
    if close < 0:
        raise TruncatedError(
            f"line {_line_of(raw, brace)}: initializer of {name} has no closing '}}'",
            file=file,
            field=f"{name}.initializer",
            offset=brace,
        )
    semi = _skip_ws(code, close + 1)
    if semi >= len(code):
        raise TruncatedError(
            f"line {_line_of(raw, close)}: source ends before ';' after {name}",
            file=file,
            field=f"{name}.initializer",
            offset=len(code),
        )
    if code[semi : semi + 1] != b";":
        raise MalformedError(
            f"line {_line_of(raw, semi)}: expected ';' after the initializer of {name}",
            file=file,
            field=f"{name}.initializer",
            offset=semi,
        )
    region = code[start:close]
    data = _hex_initializer_fast(region)
    if data is None:
        data = _initializer(region, raw, start, name, file)
    count_text = decl["count"].strip()
    if count_text:
        declared = _c_int(count_text)
        if declared is None:
            raise UnsupportedError(
                f"line {_line_of(raw, decl.start('count'))}: array size {count_text.decode('latin-1')!r} "
                "is not an integer literal",
                file=file,
                field=f"{name}.size",
                offset=decl.start("count"),
            )
        if declared != len(data):
            raise CountMismatchError(
                f"line {_line_of(raw, decl.start('count'))}: array {name} is declared with {declared} elements "
                f"but its initializer has {len(data)}",
                file=file,
                field=f"{name}.size",
                offset=decl.start("count"),
            )
    total = _blob_length(
        data, len(data), file=file, field=name, offset=start, what=f"array {name} ({len(data)} elements)"
    )
    return LocatedBlob(
        symbol=split[1], prefix=split[0], data=data[:total], source="c-source", file_offset=None
    )


_WINDOW = 1 << 16
_UNSIGNED_DECIMALS = re.compile(rb"[0-9,\s]*")
_LEADING_ZERO = re.compile(rb"(?<![0-9])0[0-9]")  # an octal literal: C reads 010 as 8


def _initializer(region: bytes, raw: bytes, start: int, name: str, file: str) -> bytes:
    """Decode an initializer in any spelling, window by window (a window ends at a comma),
    so that memory stays near the size of the result and a bad element is found by
    checking one window token by token. Plain unsigned decimals take a quick path."""
    out = bytearray()
    pos = index = 0
    n = len(region)
    while pos < n:
        cut = region.find(b",", min(n, pos + _WINDOW))
        end = n if cut < 0 else cut + 1
        window = region[pos:end]
        tokens = window.split(b",")
        if end < n or not tokens[-1].strip():
            tokens.pop()  # what follows the window's last comma (a trailing comma at the very end)
        chunk = None
        if _UNSIGNED_DECIMALS.fullmatch(window) and not _LEADING_ZERO.search(window):
            try:
                chunk = bytes(map(int, tokens))  # ValueError for an empty element or one over 255
            except ValueError:
                chunk = None
        if chunk is None:
            values = [_c_int(t) for t in tokens]
            if None in values or any(not -128 <= v <= 255 for v in values if v is not None):
                _raise_bad_element(raw, tokens, values, start + pos, name, file, index)
            chunk = bytes(v & 0xFF for v in values)  # type: ignore[operator]  # the check above raised for any None in values
        out += chunk
        index += len(tokens)
        pos = end
    return bytes(out)


def _raise_bad_element(
    raw: bytes, tokens: list[bytes], values: list[int | None], start: int, name: str, file: str, first: int = 0
) -> None:
    pos = start
    for index, (token, value) in enumerate(zip(tokens, values, strict=True), first):
        if value is None or not -128 <= value <= 255:
            where = pos + (len(token) - len(token.lstrip()))
            shown = token.strip()[:40].decode("latin-1")
            line = _line_of(raw, where)
            if value is None:
                if not shown:
                    msg = f"line {line}: empty element in the initializer of {name}"
                else:
                    msg = f"line {line}: element {shown!r} of {name} is not an integer literal"
                raise MalformedError(msg, file=file, field=f"{name}[{index}]", offset=where)
            raise ConstraintError(
                f"line {line}: element {shown!r} of {name} does not fit in a byte",
                file=file,
                field=f"{name}[{index}]",
                offset=where,
            )
        pos += len(token) + 1


# --------------------------------------------------------------------------------------------
# tar

_TAR_FAILURES: tuple[type[BaseException], ...] = (
    tarfile.TarError,
    OSError,
    EOFError,
    ValueError,
    OverflowError,  # a numeric field in base-256 beyond any offset
    RecursionError,  # tarfile reads chained extended headers recursively (also bounded before)
)


def _tar_error(exc: BaseException) -> type[MlfError]:
    """Pick TruncatedError for the ways tarfile/gzip report a premature end of input."""
    text = str(exc)
    if isinstance(exc, EOFError) or "end of data" in text or "end-of-stream" in text:
        return TruncatedError
    return MalformedError


# export_library names the blob file "<system-lib prefix>devc.<o|c>" (devc.cc up to v0.7).
_DEVC_MEMBER = re.compile(r".*devc\.(?:o|obj|c|cc|cpp)")


def _locate_tar(stream: BinaryIO, label: str, max_size: int, max_members: int) -> list[LocatedBlob]:
    stream.seek(0)
    kind = _compression(stream.read(8))
    stream.seek(0)
    if kind is None:
        return _locate_plain_tar(stream, label, max_size, max_members)
    # Decompressed once, with the archive reader's bounds, into a temporary file: the tar is
    # then read (and seeked in) without decompressing again.
    with tempfile.TemporaryFile() as plain:
        try:
            _compress.decompress_to(stream, kind, plain, _tar_bound(max_size, max_members), file=label)
        except MlfError as exc:
            if exc.field is None:
                exc.field = "tar"
            raise
        plain.seek(0)
        return _locate_plain_tar(plain, label, max_size, max_members)


def _tar_bound(max_size: int, max_members: int) -> int:
    """The most bytes a tar within the limits can hold: member data, max_size of trailing
    padding, and two header blocks (a long-name block and the header) per member."""
    return (_TAR_TOTAL_FACTOR + 1) * max_size + (max_members + 2) * 1024 + 20 * 512


def _locate_plain_tar(stream: BinaryIO, label: str, max_size: int, max_members: int) -> list[LocatedBlob]:
    size = _stream_size(stream)
    _tar.check_extended_header(stream, 0, size, label)  # tarfile reads the first header at once
    stream.seek(0)
    try:
        tf = tarfile.open(fileobj=stream, mode="r:")
    except _TAR_FAILURES as exc:
        raise _tar_error(exc)(
            f"not a readable tar archive: {exc}", file=label, field="tar", offset=0
        ) from exc
    with tf:
        members = _tar_members(tf, label, max_size, max_members)
        primary = [m for m in members if _DEVC_MEMBER.fullmatch(posixpath.basename(_norm(m.name)))]
        found: list[LocatedBlob] = []
        for m in primary:
            found.extend(_locate_member(tf, m, label, max_size, only_elf=False))
        if found:
            return found
        for m in members:
            if m in primary or not _norm(m.name).endswith((".o", ".obj")):
                continue
            found.extend(_locate_member(tf, m, label, max_size, only_elf=True))
        return found


def _norm(name: str) -> str:
    while name.startswith("./"):
        name = name[2:]
    return name


def _tar_members(tf: tarfile.TarFile, label: str, max_size: int, max_members: int) -> list[tarfile.TarInfo]:
    members: list[tarfile.TarInfo] = []
    seen: set[str] = set()
    total = 0
    index = 0
    size = _stream_size(tf.fileobj)
    while True:
        try:
            _tar.check_extended_header(tf.fileobj, tf.offset, size, label)
            tf.fileobj.seek(tf.offset)
            info = tf.next()
        except _TAR_FAILURES as exc:
            raise _tar_error(exc)(
                f"corrupt tar archive: {exc}",
                file=label,
                field=f"tar.members[{index}]",
                offset=getattr(tf, "offset", None),
            ) from exc
        if info is None:
            _check_tar_end(tf, label, max_size)
            return members
        field = f"tar.members[{index}]({info.name})"
        index += 1
        if index > max_members:
            raise UnsafeArchiveError(
                f"archive has more than max_members={max_members} members",
                file=label,
                field=field,
                offset=info.offset,
            )
        if info.issym() or info.islnk():
            raise UnsafeArchiveError(
                f"member {info.name!r} is a link (to {info.linkname!r})",
                file=label,
                field=field,
                offset=info.offset,
            )
        if info.isdir():
            continue
        if info.sparse is not None or info.type == tarfile.GNUTYPE_SPARSE:
            raise UnsafeArchiveError(
                f"member {info.name!r} is a sparse file", file=label, field=field, offset=info.offset
            )
        if info.size < 0:
            raise MalformedError(
                f"member {info.name!r} has a negative size ({info.size})", file=label, field=field, offset=info.offset
            )
        if not info.isreg():
            raise UnsafeArchiveError(
                f"member {info.name!r} is a device, FIFO or other special file",
                file=label,
                field=field,
                offset=info.offset,
            )
        name = _norm(info.name)
        if name.startswith("/") or ".." in name.split("/"):
            raise UnsafeArchiveError(
                f"member name {info.name!r} escapes the archive root",
                file=label,
                field=field,
                offset=info.offset,
            )
        if name in seen:
            raise UnsafeArchiveError(
                f"member {info.name!r} appears twice", file=label, field=field, offset=info.offset
            )
        seen.add(name)
        if info.size > max_size:
            raise UnsafeArchiveError(
                f"member {info.name!r} has {info.size} bytes, over max_size={max_size}",
                file=label,
                field=field,
                offset=info.offset,
            )
        # Declared sizes bound the decompression work spent skipping over member data.
        total += info.size
        if total > max_size * _TAR_TOTAL_FACTOR:
            raise UnsafeArchiveError(
                f"archive members total more than {max_size * _TAR_TOTAL_FACTOR} bytes",
                file=label,
                field=field,
                offset=info.offset,
            )
        members.append(info)


def _check_tar_end(tf: tarfile.TarFile, label: str, max_size: int) -> None:
    """Make sure nothing but zero padding follows the last member.

    tarfile ends the member list silently at the first unreadable header after the first one,
    and a compressed stream's checksum is only verified at its end; reading the rest catches
    both, so a damaged archive is not mistaken for one without a blob.
    """
    end = tf.offset
    stream = tf.fileobj
    try:
        stream.seek(end)
        pos = end
        while True:
            chunk = stream.read(1 << 16)
            if not chunk:
                return
            if chunk.count(0) != len(chunk):
                bad = pos + len(chunk) - len(chunk.lstrip(b"\x00"))
                raise MalformedError(
                    "unreadable tar header or data after the last member",
                    file=label,
                    field="tar.end",
                    offset=bad,
                )
            pos += len(chunk)
            if pos - end > max_size:
                raise UnsafeArchiveError(
                    f"more than max_size={max_size} bytes of padding after the last member",
                    file=label,
                    field="tar.end",
                    offset=pos,
                )
    except _TAR_FAILURES as exc:
        raise _tar_error(exc)(
            f"corrupt archive stream: {exc}", file=label, field="tar.end", offset=end
        ) from exc


def _locate_member(
    tf: tarfile.TarFile, info: tarfile.TarInfo, label: str, max_size: int, *, only_elf: bool
) -> list[LocatedBlob]:
    name = _norm(info.name)
    member_label = f"{label}[{name}]"
    try:
        fh = tf.extractfile(info)
        data = fh.read(info.size) if fh is not None else b""
    except _TAR_FAILURES as exc:
        raise _tar_error(exc)(
            f"cannot read member: {exc}", file=member_label, field="tar.member", offset=info.offset_data
        ) from exc
    if len(data) != info.size:
        raise TruncatedError(
            f"member declares {info.size} bytes, the archive holds {len(data)}",
            file=member_label,
            field="tar.member.size",
            offset=info.offset,
        )
    if data[:4] == b"\x7fELF":
        return _locate_elf(io.BytesIO(data), len(data), member_label, member=name)
    if only_elf:
        return []
    if data and b"\x00" not in data[:_SNIFF_SIZE]:
        return [
            LocatedBlob(
                symbol=b.symbol,
                prefix=b.prefix,
                data=b.data,
                source=f"tar:{name}",
                file_offset=None,
                container_member=name,
            )
            for b in parse_c_source(data, file=member_label)
        ]
    raise UnsupportedError(
        "member is neither an ELF object nor C source", file=member_label, field="magic", offset=0
    )


# --------------------------------------------------------------------------------------------
# Writers


def _check_blob(blob: bytes, what: str) -> None:
    _blob_length(blob, len(blob), file=what, field="blob", offset=0, what="the blob")
    nbytes = int.from_bytes(blob[:_PREFIX_SIZE], "little")
    if _PREFIX_SIZE + nbytes != len(blob):
        raise ConstraintError(
            f"{len(blob) - _PREFIX_SIZE - nbytes} bytes follow the body (size prefix says {nbytes})",
            file=what,
            field="blob.trailing",
            offset=_PREFIX_SIZE + nbytes,
        )


def write_bin(blob: bytes, path: str | os.PathLike[str], *, overwrite: bool = True) -> None:
    """Write ``blob`` (size prefix + body) to ``path`` atomically (temp file + rename).

    The size prefix must match the length. With ``overwrite=False`` an existing file is left
    alone and :class:`~mlf_spec.errors.OutputExistsError` is raised; a replaced file keeps its
    permission bits.
    """
    data = bytes(blob)
    _check_blob(data, "<blob>")
    atomic_write_bytes(Path(path), data, overwrite=overwrite)


_HEX_PADDED = [f"0x{b:02x}," for b in range(256)]
_HEX_PLAIN = [f"0x{b:x}" for b in range(256)]
_C_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def c_source_for_blob(
    blob: bytes,
    symbol: str = SYMBOL_FFI,
    system_lib_prefix: str | None = None,
    style: str = "current",
    *,
    check: bool = True,
) -> str:
    """Return a C source file defining ``blob`` the way TVM's ``PackImportsToC`` writes it.

    ``style`` selects the era's formatting: ``"current"`` (v0.14+, ``0x%02x,`` twenty per
    line), ``"legacy"`` (v0.4-v0.13, unpadded hex, separators between values) or
    ``"legacy-char"`` (v0.2-v0.3, the same with ``const char``). A ``system_lib_prefix``
    (``""`` for a system library without prefix) names the symbol ``<prefix><symbol>`` and adds
    the registration call TVM emits for system libraries. With ``check`` the blob's size
    prefix must match its length.
    """
    if style not in C_SOURCE_STYLES:
        raise ValueError(f"unknown style {style!r}; expected one of {C_SOURCE_STYLES}")
    if not _C_IDENT.fullmatch(symbol):
        raise ValueError(f"symbol {symbol!r} is not a C identifier")
    if system_lib_prefix and not _C_IDENT.fullmatch(system_lib_prefix):
        raise ValueError(f"system_lib_prefix {system_lib_prefix!r} is not a C identifier prefix")
    blob = bytes(blob)
    if check:
        _check_blob(blob, "<blob>")
    elif len(blob) < _PREFIX_SIZE:
        raise ValueError("a blob needs at least its 8-byte size prefix")
    name = (system_lib_prefix or "") + symbol
    ctype = "const char" if style == "legacy-char" else "const unsigned char"
    parts = [
        "#ifdef _WIN32\n#define TVM_EXPORT __declspec(dllexport)\n#else\n#define TVM_EXPORT\n#endif\n",
        '#ifdef __cplusplus\nextern "C" {\n#endif\n',
        f"TVM_EXPORT extern {ctype} {name}[];\n",
        f"{ctype} {name}[{len(blob)}] = {{",
    ]
    if style == "current":
        for i in range(0, len(blob), 20):
            parts.append("\n  ")
            parts.append("".join(map(_HEX_PADDED.__getitem__, blob[i : i + 20])))
    else:
        # The prefix goes on the first line, then the body continues it: a line break every
        # 20 values counted from the start of the array, "," between values, none at the end.
        parts.append("\n  ")
        parts.append(",".join(map(_HEX_PLAIN.__getitem__, blob[:_PREFIX_SIZE])))
        for i in range(_PREFIX_SIZE, len(blob)):
            parts.append(",\n  " if i % 20 == 0 else ",")
            parts.append(_HEX_PLAIN[blob[i]])
    parts.append("\n};\n")
    if system_lib_prefix is not None:
        register = (
            "TVMFFIEnvModRegisterSystemLibSymbol"
            if symbol == SYMBOL_FFI
            else "TVMBackendRegisterSystemLibSymbol"
        )
        parts.append(f"extern int {register}(const char*, void*);\n")
        parts.append(f'static int {name}_reg_ = {register}("{name}", (void*){name});\n')
    parts.append("#ifdef __cplusplus\n}\n#endif\n")
    return "".join(parts)
