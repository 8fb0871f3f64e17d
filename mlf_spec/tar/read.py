"""Reading a tar safely: one walk, one set of limits, messages and field paths.

Every tar the package reads goes through :func:`read_entries`: MLF archives
(:mod:`mlf_spec.mlf.archive`), the tars ``export_library`` writes (the blob locator,
:mod:`mlf_spec.blob.tar`) and the export-tar evidence (:mod:`mlf_spec.blob.evidence`).
The walk uses :mod:`tarfile` over a seekable file, member by member (no data is read until
asked for), and refuses unsafe members before anything else happens: absolute paths, ``..``,
links, devices and other special members, sparse members, duplicate paths, members larger
than a limit, too many members, oversized or chained extended headers. Nothing is ever
extracted here.

Errors about one member carry the field path ``tar.members[<index>](<name>)``; errors about
what follows the last member carry ``tar.end``; errors in a header that could not be read
carry no field (no member name is known yet). A compressed tar is first decompressed into a
temporary file by :func:`decompressed` with the limits of :mod:`mlf_spec.compression`.
"""

from __future__ import annotations

import contextlib
import math
import os
import tarfile
from collections.abc import Generator, Iterator
from typing import IO, cast

from mlf_spec import compression as _compress
from mlf_spec._internal.lean_dataclass import dataclass, field
from mlf_spec.errors import LengthError, MalformedError, TruncatedError, UnsafeArchiveError
from mlf_spec.sniff import compression

BLOCK = 512
RECORD = 20 * BLOCK
DEFAULT_MAX_MEMBER = 1 << 30
DEFAULT_MAX_MEMBERS = 20_000
MAX_EXTENDED_HEADER = 1 << 20
MAX_EXTENDED_CHAIN = 8  # extended headers (PAX x/g, GNU L/K) in a row before one member
MAX_NAME_LENGTH = 4096  # characters of a member name (PATH_MAX on Linux)
MAX_NAME_DEPTH = 64  # components of a member path (TVM's deepest are about ten)
TRAILER_READ = 1 << 16

FILE, DIRECTORY = "file", "directory"
END_FIELD = "tar.end"


@dataclass(frozen=True)
class TarLimits:
    """The limits of one tar walk.

    ``max_members`` and ``max_member_size`` bound the number of members and the size of one
    (``member_size_name`` is the keyword the caller exposes it as, named in messages);
    ``max_total_size`` bounds member data together (None: only the container bounds it).
    ``extraction_names`` checks names as for writing them to disk (length, depth,
    backslashes, NUL, a member inside a file member), which an archive that may be extracted
    needs and a reader that only looks inside members does not. ``zero_trailer`` (None: what
    follows the end-of-archive blocks is kept unread) requires that only zero bytes, at most
    that many, follow the last member.
    """

    max_members: int = DEFAULT_MAX_MEMBERS
    max_member_size: int = DEFAULT_MAX_MEMBER
    member_size_name: str = "max_member_size"
    max_total_size: int | None = None
    extraction_names: bool = True
    zero_trailer: int | None = None


@dataclass
class TarEntry:
    """One member as stored: its name, normalised path, type, size, header fields and
    where its header blocks and data are in the container."""

    name: str
    path: str
    type: str
    size: int
    mode: int
    uid: int
    gid: int
    uname: str
    gname: str
    mtime: float
    pax_headers: dict[str, str] = field(default_factory=dict)
    header_offset: int = 0
    data_offset: int = 0
    raw_header: bytes | None = None
    index: int = 0

    @property
    def field(self) -> str:
        """The field path that names this member in errors."""
        return member_field(self.index, self.name)


def member_field(index: int, name: str) -> str:
    """``tar.members[<index>](<name>)``: the field path of a member in errors."""
    return f"tar.members[{index}]({name})"


def _escapes(name: str, file: str | None, field: str, offset: int | None) -> UnsafeArchiveError | None:
    if name.startswith("/") or (len(name) > 1 and name[1] == ":" and name[0].isalpha()):
        return UnsafeArchiveError("absolute member name (it escapes the archive root)", file=file, field=field,
                                  offset=offset)
    return None


def normalize(name: str, *, file: str | None, offset: int | None, field: str | None = None,
              extraction: bool = True) -> str:
    """The path of a member name relative to the archive root (``.`` for the root).
    Raises UnsafeArchiveError for names that could leave the root and, with ``extraction``,
    for names longer than MAX_NAME_LENGTH or deeper than MAX_NAME_DEPTH (work on paths
    stays bounded), with a backslash or a NUL. ``field`` names the member in errors (its
    name by default)."""
    where = name if field is None else field
    short = name[:200] + "..." if field is None else field
    if extraction:
        if len(name) > MAX_NAME_LENGTH:
            raise UnsafeArchiveError(f"member name of {len(name)} characters (the limit is {MAX_NAME_LENGTH})",
                                     file=file, field=short, offset=offset)
        if name.count("/") > 2 * MAX_NAME_DEPTH:
            raise UnsafeArchiveError(f"member path deeper than {MAX_NAME_DEPTH} components", file=file,
                                     field=short, offset=offset)
        if "\\" in name:
            raise UnsafeArchiveError("member name contains a backslash", file=file, field=where, offset=offset)
    escape = _escapes(name, file, where, offset)
    if escape is not None:
        raise escape
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if extraction and len(parts) > MAX_NAME_DEPTH:
        raise UnsafeArchiveError(f"member path deeper than {MAX_NAME_DEPTH} components", file=file,
                                 field=short, offset=offset)
    if ".." in parts:
        raise UnsafeArchiveError("member name has a '..' component (it escapes the archive root)", file=file,
                                 field=where, offset=offset)
    if extraction and any("\x00" in p for p in parts):
        raise UnsafeArchiveError("member name contains NUL", file=file, field=where, offset=offset)
    return "/".join(parts) or "."


_KIND = {
    tarfile.SYMTYPE: "symlink",
    tarfile.LNKTYPE: "hardlink",
    tarfile.CHRTYPE: "device",
    tarfile.BLKTYPE: "device",
    tarfile.FIFOTYPE: "fifo",
}


def check_extended_header(f: IO[bytes], offset: int, size: int, file: str | None) -> None:
    """Refuse the extended headers (PAX, GNU long name) in front of the member at
    ``offset`` when one is larger than MAX_EXTENDED_HEADER or than what follows it, or
    when more than MAX_EXTENDED_CHAIN come in a row (tarfile reads each into memory, and
    a chain recursively), before tarfile reads them."""
    at = offset
    for _ in range(MAX_EXTENDED_CHAIN + 1):
        f.seek(at)
        block = f.read(BLOCK)
        if len(block) < BLOCK or block[156:157] not in (b"x", b"g", b"L", b"K"):
            return
        try:
            n = tarfile.nti(block[124:136])
        except (tarfile.InvalidHeaderError, ValueError):
            return
        if n < 0 or n > MAX_EXTENDED_HEADER or at + BLOCK + n > size:
            raise LengthError(f"extended header of {n} bytes", file=file, offset=at)
        at += BLOCK + -(-n // BLOCK) * BLOCK
    raise MalformedError(f"more than {MAX_EXTENDED_CHAIN} extended headers in a row", file=file, offset=offset)


def _header_failure(exc: BaseException) -> str:
    """What tarfile's own exception (not a TarError) says about a header, in our words."""
    if isinstance(exc, ValueError) and "invalid literal for int()" in str(exc):
        # tarfile reads a PAX sparse 1.0 map (decimal lines at the start of the data) with int()
        return "a PAX sparse map (GNU sparse 1.0) that is not decimal numbers; sparse members are not allowed"
    if isinstance(exc, RecursionError):
        return "extended headers nested too deeply"
    return f"{type(exc).__name__}: {exc}"


def _open(f: IO[bytes], size: int, file: str | None) -> tarfile.TarFile:
    check_extended_header(f, 0, size, file)  # TarFile() reads the first header at once
    f.seek(0)
    try:
        tar = tarfile.TarFile(fileobj=f, mode="r", encoding="utf-8", errors="surrogateescape")
    except tarfile.TarError as exc:
        raise MalformedError(f"not a tar archive: {exc}", file=file, offset=0) from None
    except (EOFError, OSError, ValueError, UnicodeError, OverflowError, RecursionError) as exc:
        raise MalformedError(f"not a tar archive: {_header_failure(exc)}", file=file, offset=0) from None
    # tarfile read the first header while opening; rewind so that every member goes through
    # the same checks (it re-reads from its own offset).
    tar.members = []
    tar.offset = 0
    tar.firstmember = None
    return tar


def _next(tar: tarfile.TarFile, f: IO[bytes], size: int, file: str | None) -> tarfile.TarInfo | None:
    here = tar.offset
    check_extended_header(f, here, size, file)
    f.seek(here)
    try:
        info = tar.next()
    except tarfile.TarError as exc:
        raise MalformedError(f"bad tar header: {exc}", file=file, offset=here) from None
    except Exception as exc:  # tarfile raises many kinds on hostile headers
        raise MalformedError(f"bad tar header: {_header_failure(exc)}", file=file, offset=here) from None
    tar.members = []  # keep no history: members are streamed
    return info


def _member_kind(info: tarfile.TarInfo) -> str | None:
    """What makes a member other than a plain file or directory, or None."""
    kind = _KIND.get(info.type)
    if kind is None and info.type not in (tarfile.REGTYPE, tarfile.AREGTYPE, tarfile.DIRTYPE):
        kind = "sparse file" if info.type == tarfile.GNUTYPE_SPARSE else f"special member (type {info.type!r})"
    if kind is None and info.sparse is not None:
        kind = "sparse file (PAX)"
    return kind


class _Seen:
    """The paths met so far, and the checks that need them."""

    def __init__(self, limits: TarLimits) -> None:
        self.limits = limits
        self.types: dict[str, str] = {}
        self.total = 0

    def add(self, info: tarfile.TarInfo, path: str, mtype: str, where: str, file: str | None) -> None:
        at = info.offset
        if path in self.types:
            raise UnsafeArchiveError(f"member {path!r} appears twice", file=file, field=where, offset=at)
        if self.limits.extraction_names:
            parent = path
            while "/" in parent:
                parent = parent.rsplit("/", 1)[0]
                if self.types.get(parent) == FILE:
                    raise UnsafeArchiveError(f"member inside file member {parent!r}", file=file, field=where,
                                             offset=at)
        if mtype == FILE and path == ".":
            raise UnsafeArchiveError("a file member at the archive root path", file=file, field=where, offset=at)
        self.types[path] = mtype

    def add_size(self, info: tarfile.TarInfo, where: str, file: str | None) -> None:
        limits = self.limits
        if info.size > limits.max_member_size:
            raise UnsafeArchiveError(f"member of {info.size} bytes exceeds the limit of {limits.max_member_size} "
                                     f"({limits.member_size_name})", file=file, field=where, offset=info.offset)
        self.total += info.size
        if limits.max_total_size is not None and self.total > limits.max_total_size:
            raise UnsafeArchiveError(f"members total more than {limits.max_total_size} bytes", file=file,
                                     field=where, offset=info.offset)


def _entry(info: tarfile.TarInfo, index: int, seen: _Seen, f: IO[bytes], here: int, size: int,
           file: str | None) -> TarEntry:
    """Check one member and describe it."""
    name = info.name
    where = member_field(index, name)
    kind = _member_kind(info)
    if kind is not None:
        raise UnsafeArchiveError(f"member is a {kind}; only files and directories are allowed", file=file,
                                 field=where, offset=info.offset)
    path = normalize(name, file=file, offset=info.offset, field=where, extraction=seen.limits.extraction_names)
    mtype = DIRECTORY if info.type == tarfile.DIRTYPE else FILE
    seen.add(info, path, mtype, where, file)
    if info.size < 0:
        raise MalformedError(f"negative member size {info.size}", file=file, field=where, offset=info.offset)
    if not math.isfinite(info.mtime):  # a PAX mtime of "inf" or "1e999", which no header can hold again
        raise MalformedError(f"mtime {info.mtime} is not a finite number", file=file, field=where,
                             offset=info.offset)
    if mtype == FILE:
        seen.add_size(info, where, file)
    if info.offset_data + info.size > size:
        raise TruncatedError(f"member data needs {info.size} bytes, {max(0, size - info.offset_data)} remain",
                             file=file, field=where, offset=info.offset_data)
    # From where this member's header blocks start: a global PAX header before it is not
    # part of tarfile's member offset but must be kept for an exact rewrite.
    f.seek(here)
    raw = f.read(info.offset_data - here)
    return TarEntry(name=name, path=path, type=mtype, size=info.size if mtype == FILE else 0,
                    mode=info.mode, uid=info.uid, gid=info.gid, uname=info.uname, gname=info.gname,
                    mtime=info.mtime, pax_headers=dict(info.pax_headers), header_offset=info.offset,
                    data_offset=info.offset_data, raw_header=raw, index=index)


def read_entries(f: IO[bytes], size: int, *, file: str | None = None,
                 limits: TarLimits = TarLimits()) -> Generator[TarEntry, None, int]:  # noqa: B008  # frozen: one shared default
    """Yield the members of an uncompressed tar in ``f`` (seekable, ``size`` bytes), one at a
    time, after the safety checks. At the end the generator checks what follows the last
    member (:func:`check_end`) and returns the offset where the end-of-archive blocks start
    (``StopIteration.value``)."""
    tar = _open(f, size, file)
    seen = _Seen(limits)
    index = 0
    while True:
        here = tar.offset
        info = _next(tar, f, size, file)
        if info is None:
            check_end(f, here, size, file=file, zero_trailer=limits.zero_trailer)
            return here
        if index >= limits.max_members:
            raise UnsafeArchiveError(f"more than {limits.max_members} members (max_members)", file=file,
                                     field=member_field(index, info.name), offset=here)
        yield _entry(info, index, seen, f, here, size, file)
        index += 1


def check_end(f: IO[bytes], end: int, size: int, *, file: str | None = None, zero_trailer: int | None = None) -> None:
    """Check what follows the last member: the end-of-archive marker. Raises if the
    container stops before the marker or a non-zero block follows the last member (a
    corrupt header that tarfile would silently treat as the end). What follows the marker
    is kept, not read, for an exact rewrite, unless ``zero_trailer`` asks that it be zero
    bytes, at most that many."""
    if end >= size:
        raise TruncatedError("the archive ends without its end-of-archive blocks", file=file, field=END_FIELD,
                             offset=end)
    f.seek(end)
    first = f.read(BLOCK)
    if len(first) < BLOCK and first.strip(b"\0"):
        raise TruncatedError("the archive ends inside a header", file=file, field=END_FIELD, offset=end)
    if first.strip(b"\0"):
        raise MalformedError("invalid tar header (neither a member nor the end of the archive)", file=file,
                             field=END_FIELD, offset=end)
    if zero_trailer is not None:
        _check_zero_trailer(f, end + len(first), end, zero_trailer, file)


def _check_zero_trailer(f: IO[bytes], pos: int, end: int, limit: int, file: str | None) -> None:
    while True:
        chunk = f.read(TRAILER_READ)
        if not chunk:
            return
        if chunk.count(0) != len(chunk):
            bad = pos + len(chunk) - len(chunk.lstrip(b"\0"))
            raise MalformedError("non-zero bytes after the end of the archive", file=file, field=END_FIELD,
                                 offset=bad)
        pos += len(chunk)
        if pos - end > limit:
            raise UnsafeArchiveError(f"more than {limit} bytes of padding after the last member", file=file,
                                     field=END_FIELD, offset=pos)


def stream_size(f: IO[bytes]) -> int:
    """The size of a seekable stream (its position is kept)."""
    pos = f.tell()
    end = f.seek(0, os.SEEK_END)
    f.seek(pos)
    return end


class _FirstBlockChecked:
    """A writer passing bytes to ``dst`` that refuses, from the first block, a stream that is
    no tar: a 4 GiB stream of text was decompressed whole (5 s, 4 GiB of temporary file)
    before its first header was found invalid. Only a header that the reader refuses at
    offset 0 is refused here, with the reader's own error."""

    def __init__(self, dst: IO[bytes], file: str | None) -> None:
        self.dst, self.file = dst, file
        self.head: bytes | None = b""

    def write(self, data: bytes) -> int:
        """Write ``data`` (checking the first block once it is whole); a chunk of zeros is
        skipped over instead (a hole: a bomb of zeros takes no disk), the size set at the end."""
        if self.head is not None:
            self.head += bytes(data[:BLOCK - len(self.head)])
            if len(self.head) == BLOCK:
                head, self.head = self.head, None
                _refuse_first_block(head, self.file)
        if len(data) >= BLOCK and data.count(0) == len(data):
            self.dst.seek(len(data), os.SEEK_CUR)
            return len(data)
        return self.dst.write(data)


def _refuse_first_block(block: bytes, file: str | None) -> None:
    """Raise the reader's MalformedError when ``block``, the first of a tar, is neither the
    end of the archive nor a valid header (its checksum or numbers); else nothing."""
    import io

    if block[156:157] in (b"x", b"g", b"L", b"K"):
        return  # an extended header: whether it fits depends on the whole size (check_extended_header)
    try:
        tarfile.TarInfo.frombuf(block, "utf-8", "surrogateescape")
    except tarfile.EOFHeaderError:
        return  # zeros: the end of an empty archive
    except tarfile.HeaderError:
        pass  # invalid: the reader refuses it below
    else:
        return
    _open(io.BytesIO(block), BLOCK, file)  # raises the reader's error at offset 0


def decompressed(src: IO[bytes], kind: str, limit: int, *, file: str | None,
                 memlimit: int = _compress.DEFAULT_XZ_MEMLIMIT) -> IO[bytes]:
    """A temporary file holding ``src`` (a ``kind`` stream: gzip, bzip2 or xz) decompressed,
    at offset 0; refuses more than ``limit`` bytes (see :func:`mlf_spec.compression.decompress_to`).
    Runs of zeros are left as holes (no disk for a bomb of zeros). The caller closes it."""
    import tempfile  # only for compressed input: not on every start

    tmp = tempfile.TemporaryFile()
    try:
        dst = cast(IO[bytes], _FirstBlockChecked(tmp, file))  # decompress_to only writes to it
        size = _compress.decompress_to(src, kind, dst, limit, file=file, memlimit=memlimit)
        tmp.truncate(size)  # the holes the writer skipped at the end
        tmp.flush()
        tmp.seek(0)
    except BaseException:
        tmp.close()
        raise
    return tmp


@contextlib.contextmanager
def plain_tar(src: IO[bytes], limit: int, *, file: str | None) -> Iterator[IO[bytes]]:
    """``src`` itself when it holds an uncompressed tar, else the tar decompressed (at most
    ``limit`` bytes) into a temporary file, closed on leaving."""
    src.seek(0)
    kind = compression(src.read(8))
    src.seek(0)
    if kind is None:
        yield src
        return
    tmp = decompressed(src, kind, limit, file=file)
    with tmp:
        yield tmp


def decompress_to(src: IO[bytes], kind: str, dst: IO[bytes], limit: int, *, file: str | None,
                  memlimit: int = _compress.DEFAULT_XZ_MEMLIMIT) -> int:
    """Decompress ``src`` into ``dst`` streaming, refusing more than ``limit`` bytes (see
    :func:`mlf_spec.compression.decompress_to`: gzip, bzip2 and xz with the same limits)."""
    return _compress.decompress_to(src, kind, dst, limit, file=file, memlimit=memlimit)


__all__ = ["BLOCK", "DEFAULT_MAX_MEMBER", "DEFAULT_MAX_MEMBERS", "DIRECTORY", "END_FIELD", "FILE",
           "MAX_EXTENDED_CHAIN", "MAX_EXTENDED_HEADER", "MAX_NAME_DEPTH", "MAX_NAME_LENGTH", "RECORD",
           "TarEntry", "TarLimits", "check_end", "check_extended_header", "decompress_to", "decompressed",
           "member_field", "normalize", "plain_tar", "read_entries", "stream_size"]
