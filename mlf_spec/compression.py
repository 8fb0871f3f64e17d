"""Bounded decompression of gzip, bzip2 and xz streams (compressed tarballs).

One streaming loop for the three formats, so that each gets the same limits: at most
``limit`` decompressed bytes (then :class:`~mlf_spec.errors.UnsafeArchiveError`), output
produced in slices of at most ``SLICE`` bytes (memory stays bounded whatever the
compression ratio), and for xz a cap on the decoder's own memory (a stream header may ask
for a dictionary of up to 4 GiB). Concatenated streams are read one after the other, as
``gzip``/``bz2``/``lzma`` do; zero bytes after the last stream are ignored (tar writers pad
compressed output); anything else after it is an error.
"""

from __future__ import annotations

import bz2
import lzma
import zlib
from typing import IO, Any, Protocol

from .errors import MalformedError, TruncatedError, UnsafeArchiveError

#: The magic numbers of the compressions a tarball may come in (mlf_spec.sniff and the blob
#: locator recognise compressed input by them).
COMPRESSION_MAGIC: dict[str, bytes] = {"gzip": b"\x1f\x8b", "bzip2": b"BZh", "xz": b"\xfd7zXZ\x00"}
KINDS = ("gzip", "bzip2", "xz")
MAGIC = COMPRESSION_MAGIC
SLICE = 1 << 20
READ = 1 << 16
DEFAULT_XZ_MEMLIMIT = 256 << 20


class Sink(Protocol):
    """Where decompressed bytes go: anything with ``write`` (a file, or a collecting or
    counting object)."""

    def write(self, data: bytes, /) -> object:
        """Take the next slice of output."""
        ...


def _decompressor(kind: str, memlimit: int) -> Any:
    if kind == "gzip":
        return zlib.decompressobj(16 + zlib.MAX_WBITS)
    if kind == "bzip2":
        return bz2.BZ2Decompressor()
    return lzma.LZMADecompressor(format=lzma.FORMAT_XZ, memlimit=memlimit)


def decompress_to(src: IO[bytes], kind: str, dst: Sink, limit: int, *, file: str | None,
                  memlimit: int = DEFAULT_XZ_MEMLIMIT) -> int:
    """Decompress ``src`` (a ``kind`` stream, possibly several concatenated) into ``dst``,
    streaming; return the number of bytes written. Raises UnsafeArchiveError beyond
    ``limit`` output bytes or when an xz decoder needs more than ``memlimit`` bytes,
    TruncatedError when the input ends inside a stream, MalformedError otherwise."""
    if kind not in KINDS:
        raise ValueError(f"unknown compression {kind!r}")
    magic = MAGIC[kind]
    total = 0
    consumed = 0  # compressed bytes handed to decompressors so far (for error offsets)
    pending = b""
    eof = False
    d: Any = None

    def more() -> bytes:
        nonlocal eof
        chunk = b"" if eof else src.read(READ)
        if not chunk:
            eof = True
        return chunk

    def emit(out: bytes) -> None:
        nonlocal total
        if not out:
            return
        total += len(out)
        if total > limit:
            raise UnsafeArchiveError(f"decompressed archive exceeds {limit} bytes", file=file)
        dst.write(out)

    try:
        while True:
            if d is None:
                # Between streams: skip zero padding; a non-zero byte must start a new stream.
                while len(pending) < len(magic) and not eof:
                    pending += more()
                if not pending.strip(b"\0"):
                    if eof:
                        break
                    consumed += len(pending)
                    pending = b""
                    continue
                if not pending.startswith(magic):
                    if total == 0:
                        raise MalformedError(f"not a {kind} stream", file=file, offset=consumed)
                    raise MalformedError(f"unexpected data after the {kind} stream", file=file, offset=consumed)
                d = _decompressor(kind, memlimit)
            if not pending:
                pending = more()
                if not pending:
                    raise TruncatedError(f"the {kind} stream ends early", file=file, offset=consumed)
            if kind == "gzip":
                data = pending
                while True:
                    out = d.decompress(data, SLICE)
                    emit(out)
                    data = d.unconsumed_tail
                    if d.eof or (not data and len(out) < SLICE):
                        break
            else:
                emit(d.decompress(pending, SLICE))
                while not d.eof and not d.needs_input:
                    emit(d.decompress(b"", SLICE))
            if d.eof:
                rest = d.unused_data
                consumed += len(pending) - len(rest)
                pending, d = rest, None
            else:
                consumed += len(pending)
                pending = b""
    except (OSError, EOFError, lzma.LZMAError, zlib.error, ValueError) as exc:
        if isinstance(exc, lzma.LZMAError) and "memory" in str(exc).lower():
            raise UnsafeArchiveError(f"the xz stream needs more than {memlimit} bytes of decoder memory",
                                     file=file, offset=consumed) from None
        reason = str(exc)
        if "incorrect data check" in reason:  # zlib's words for a failed gzip CRC32 / length trailer
            reason = "CRC check failed: the compressed data is corrupt"
        raise MalformedError(f"cannot decompress ({kind}): {reason}", file=file, offset=consumed) from None
    return total


class _Enough(Exception):
    pass


def peek(src: IO[bytes], kind: str, n: int, *, memlimit: int = DEFAULT_XZ_MEMLIMIT) -> bytes:
    """The first ``n`` decompressed bytes of ``src`` (fewer if the stream holds fewer),
    with the limits of :func:`decompress_to`; raises MlfError for a stream that breaks
    before them."""
    out = bytearray()

    class _Head:
        def write(self, chunk: bytes) -> None:
            out.extend(chunk)
            if len(out) >= n:
                raise _Enough

    try:
        decompress_to(src, kind, _Head(), 1 << 62, file=None, memlimit=memlimit)
    except _Enough:
        pass
    return bytes(out[:n])


__all__ = ["COMPRESSION_MAGIC", "DEFAULT_XZ_MEMLIMIT", "KINDS", "MAGIC", "READ", "SLICE", "Sink", "decompress_to", "peek"]
