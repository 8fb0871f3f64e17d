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

import io
import os
from typing import IO, TYPE_CHECKING, BinaryIO

from mlf_spec._blob_facts import BLOB_SYMBOLS, C_SOURCE_STYLES, SYMBOL_FFI, SYMBOL_FFI_V021, SYMBOL_LEGACY
from mlf_spec._io import Source, open_regular
from mlf_spec.errors import (
    LengthError,
    UnsupportedError,
)
from mlf_spec.sniff import compression as _compression
from mlf_spec.tar import stream_size

from .csource import parse_c_source

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer
from .elf import locate_elf
from .export_tar import locate_in_tar
from .located import (
    DEFAULT_MAX_MEMBERS,
    DEFAULT_MAX_SIZE,
    PREFIX_SIZE,
    SNIFF_SIZE,
    LocatedBlob,
    blob_length,
    read_exact,
    split_blob_symbol,
)
from .writers import c_source_for_blob, write_bin

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


# --------------------------------------------------------------------------------------------
# Input handling


class _Window(io.RawIOBase):
    """A read-only, seekable view of ``[base, base + size)`` of a seekable stream."""

    def __init__(self, stream: IO[bytes], base: int, size: int) -> None:
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

    def readinto(self, buffer: WriteableBuffer) -> int:
        view = memoryview(buffer).cast("B")
        n = min(len(view), max(0, self._size - self._pos))
        if n == 0:
            return 0
        self._stream.seek(self._base + self._pos)
        chunk = self._stream.read(n)
        view[: len(chunk)] = chunk
        self._pos += len(chunk)
        return len(chunk)


# --------------------------------------------------------------------------------------------
# Public entry point


def locate_blobs(
    source: Source,
    *,
    kind: str | None = None,
    name: str | None = None,
    max_size: int = DEFAULT_MAX_SIZE,
    max_members: int = DEFAULT_MAX_MEMBERS,
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
        with open_regular(path) as fh:
            return _locate_stream(fh, name or path, kind, max_size, max_members, path)
    if not hasattr(source, "read"):
        raise TypeError(f"expected a path, bytes or a binary file object, got {type(source).__name__}")
    label = name or str(getattr(source, "name", "<stream>"))
    if source.seekable():
        base = source.tell()
        size = stream_size(source) - base
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
    size = stream_size(stream)
    stream.seek(0)
    head = stream.read(SNIFF_SIZE)
    detected = kind or _sniff(head, size, label)
    if detected == "raw" and kind is None and path is not None and path.endswith((".tar", ".tgz", ".tar.gz")):
        # Old v7 tarballs carry no "ustar" magic; trust the extension only as a last resort.
        detected = "tar"
    if detected == "elf":
        return locate_elf(stream, size, label, member=None)
    if detected == "tar":
        return locate_in_tar(stream, label, max_size, max_members)
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
    if size >= PREFIX_SIZE and int.from_bytes(head[:PREFIX_SIZE], "little") == size - PREFIX_SIZE:
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


def _locate_raw(stream: BinaryIO, size: int, label: str, max_size: int) -> LocatedBlob:
    stream.seek(0)
    prefix = stream.read(PREFIX_SIZE)
    total = blob_length(prefix, size, file=label, field="blob", offset=0, what="the file")
    if total > max_size:
        raise LengthError(f"raw blob is larger than max_size={max_size}", file=label, field="blob", offset=0)
    # Bytes after the size-prefixed blob are not part of it (loaders read only the prefixed
    # size); the blob is read without them and after_end says how many there were.
    data = read_exact(stream, 0, total, file=label, field="blob")
    return LocatedBlob(symbol="", prefix="", data=data, source="raw", file_offset=0, after_end=size - total)
