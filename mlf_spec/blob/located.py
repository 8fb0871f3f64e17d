"""What a located module blob is: the blob symbols, :class:`LocatedBlob`, and the size
prefix every container shares (8 bytes, little-endian body length)."""

from __future__ import annotations

import dataclasses
from typing import BinaryIO

# The blob symbols (longest first) and their layouts: spec/tables/blob_facts.yaml.
from mlf_spec._blob_facts import BLOB_SYMBOLS, SYMBOL_LAYOUT
from mlf_spec.errors import (
    LengthError,
    TruncatedError,
)

PREFIX_SIZE = 8  # the size prefix every container shares
DEFAULT_MAX_SIZE = 8 << 30  # the default bounds of locate(): bytes of an artifact, members of a tar
DEFAULT_MAX_MEMBERS = 20_000
SNIFF_SIZE = 4096  # the bytes read to tell what an artifact is
MAX_BLOB_SYMBOLS = 64  # a library defines one blob (rarely a few); each is read into memory



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
        return SYMBOL_LAYOUT[self.symbol]


def split_blob_symbol(name: str) -> tuple[str, str] | None:
    """Split a symbol name into ``(prefix, blob_symbol)``, or return None if it is no blob."""
    for sym in BLOB_SYMBOLS:
        if name.endswith(sym):
            return name[: -len(sym)], sym
    return None


def read_exact(stream: BinaryIO, offset: int, n: int, *, file: str, field: str) -> bytes:
    """``n`` bytes of ``stream`` at ``offset`` (TruncatedError naming ``file`` and ``field``
    if it ends first)."""
    stream.seek(offset)
    data = stream.read(n)
    if len(data) != n:
        raise TruncatedError(
            f"needed {n} bytes, the input ends after {len(data)}", file=file, field=field, offset=offset
        )
    return data


def line_of(text: bytes, offset: int) -> int:
    """The 1-based line of ``text`` that byte ``offset`` lies on."""
    return text.count(b"\n", 0, offset) + 1


def blob_length(prefix: bytes, limit: int, *, file: str, field: str, offset: int, what: str) -> int:
    """Return 8 + nbytes after checking it against ``limit`` bytes available."""
    if limit < PREFIX_SIZE:
        raise TruncatedError(
            f"{what} holds {limit} bytes, fewer than the 8-byte size prefix",
            file=file,
            field=field,
            offset=offset,
        )
    nbytes = int.from_bytes(prefix[:PREFIX_SIZE], "little")
    if nbytes > limit - PREFIX_SIZE:
        raise LengthError(
            f"size prefix claims {nbytes} body bytes but {what} holds only {limit - PREFIX_SIZE} after the prefix",
            file=file,
            field=f"{field}.nbytes",
            offset=offset,
        )
    return PREFIX_SIZE + nbytes

# the names before they were public
_PREFIX_SIZE, _DEFAULT_MAX_SIZE, _DEFAULT_MAX_MEMBERS, _SNIFF_SIZE, _MAX_BLOB_SYMBOLS = (
    PREFIX_SIZE, DEFAULT_MAX_SIZE, DEFAULT_MAX_MEMBERS, SNIFF_SIZE, MAX_BLOB_SYMBOLS)
_read_exact, _line_of, _blob_length = read_exact, line_of, blob_length
