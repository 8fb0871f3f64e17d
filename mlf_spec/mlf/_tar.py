"""Tar containers: a safe reader that keeps every header block, and a PAX writer.

Reading walks the headers with :mod:`tarfile` over a seekable file, member by member (no
data is read until asked for), refuses unsafe members before anything else happens
(absolute paths, ``..``, backslashes, links, devices and other special members, duplicate
paths, members inside file members, members larger than a limit, oversized extended
headers) and records, per member, the exact bytes of its header blocks, so that writing
the archive back reproduces it byte for byte. Nothing is ever extracted by this module.

Writing encodes headers the way CPython's ``tarfile`` does for ``PAX_FORMAT`` (what TVM's
``tarfile.open(path, "w")`` produced from Python 3.8 on): a ``././@PaxHeader`` record before
every member whose mtime is fractional or whose name or owner does not fit ustar, then the
ustar block; the archive ends with two zero blocks and is padded to 10240 bytes.
"""

from __future__ import annotations

import math
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from mlf_spec import _compress
from mlf_spec.errors import LengthError, MalformedError, TruncatedError, UnsafeArchiveError

BLOCK = 512
RECORD = 20 * BLOCK
DEFAULT_MAX_MEMBER = 1 << 30
DEFAULT_MAX_MEMBERS = 20_000
MAX_EXTENDED_HEADER = 1 << 20
MAX_EXTENDED_CHAIN = 8  # extended headers (PAX x/g, GNU L/K) in a row before one member
MAX_NAME_LENGTH = 4096  # characters of a member name (PATH_MAX on Linux)
MAX_NAME_DEPTH = 64  # components of a member path (TVM's deepest are about ten)

FILE, DIRECTORY = "file", "directory"


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


def normalize(name: str, *, file: str | None, offset: int | None) -> str:
    """The path of a member name relative to the archive root (``.`` for the root).
    Raises UnsafeArchiveError for names that could leave the root, and for names longer
    than MAX_NAME_LENGTH or deeper than MAX_NAME_DEPTH (work on paths stays bounded)."""
    if len(name) > MAX_NAME_LENGTH:
        raise UnsafeArchiveError(f"member name of {len(name)} characters (the limit is {MAX_NAME_LENGTH})", file=file,
                                 field=name[:200] + "...", offset=offset)
    if name.count("/") > 2 * MAX_NAME_DEPTH:
        raise UnsafeArchiveError(f"member path deeper than {MAX_NAME_DEPTH} components", file=file,
                                 field=name[:200] + "...", offset=offset)
    if "\\" in name:
        raise UnsafeArchiveError("member name contains a backslash", file=file, field=name, offset=offset)
    if name.startswith("/") or (len(name) > 1 and name[1] == ":" and name[0].isalpha()):
        raise UnsafeArchiveError("absolute member name", file=file, field=name, offset=offset)
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if len(parts) > MAX_NAME_DEPTH:
        raise UnsafeArchiveError(f"member path deeper than {MAX_NAME_DEPTH} components", file=file,
                                 field=name[:200] + "...", offset=offset)
    if ".." in parts:
        raise UnsafeArchiveError("member name has a '..' component", file=file, field=name, offset=offset)
    if any("\x00" in p for p in parts):
        raise UnsafeArchiveError("member name contains NUL", file=file, field=name, offset=offset)
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


def read_entries(f: IO[bytes], size: int, *, file: str | None = None, max_member_size: int = DEFAULT_MAX_MEMBER,
                 max_members: int = DEFAULT_MAX_MEMBERS) -> Iterator[TarEntry]:
    """Yield the members of an uncompressed tar in ``f`` (seekable, ``size`` bytes), one at a
    time, after the safety checks. At the end the generator returns the offset where the
    end-of-archive blocks start (``StopIteration.value``)."""
    check_extended_header(f, 0, size, file)  # TarFile() reads the first header at once
    f.seek(0)
    try:
        tar = tarfile.TarFile(fileobj=f, mode="r", encoding="utf-8", errors="surrogateescape")
    except tarfile.TarError as exc:
        raise MalformedError(f"not a tar archive: {exc}", file=file, offset=0) from None
    except (EOFError, OSError, ValueError, UnicodeError, OverflowError, RecursionError) as exc:
        raise MalformedError(f"not a tar archive: {_header_failure(exc)}", file=file, offset=0) from None
    seen: dict[str, str] = {}
    count = 0
    # tarfile read the first header while opening; rewind so that every member goes through
    # the same checks (it re-reads from its own offset).
    tar.members = []
    tar.offset = 0
    tar.firstmember = None
    while True:
        here = tar.offset
        check_extended_header(f, here, size, file)
        f.seek(here)
        try:
            info = tar.next()
        except tarfile.TarError as exc:
            raise MalformedError(f"bad tar header: {exc}", file=file, offset=here) from None
        except Exception as exc:  # tarfile raises many kinds on hostile headers
            raise MalformedError(f"bad tar header: {_header_failure(exc)}", file=file, offset=here) from None
        if info is None:
            tar.members = []
            return here
        tar.members = []  # keep no history: members are streamed
        count += 1
        if count > max_members:
            raise UnsafeArchiveError(f"more than {max_members} members", file=file, offset=here)
        name = info.name
        kind = _KIND.get(info.type)
        if kind is None and info.type not in (tarfile.REGTYPE, tarfile.AREGTYPE, tarfile.DIRTYPE):
            kind = "sparse file" if info.type == tarfile.GNUTYPE_SPARSE else f"special member (type {info.type!r})"
        if kind is None and info.sparse is not None:
            kind = "sparse file (PAX)"
        if kind is not None:
            raise UnsafeArchiveError(f"member is a {kind}; only files and directories are allowed", file=file,
                                     field=name, offset=info.offset)
        path = normalize(name, file=file, offset=info.offset)
        mtype = DIRECTORY if info.type == tarfile.DIRTYPE else FILE
        if path in seen:
            raise UnsafeArchiveError(f"duplicate member {path!r}", file=file, field=name, offset=info.offset)
        parent = path
        while "/" in parent:
            parent = parent.rsplit("/", 1)[0]
            if seen.get(parent) == FILE:
                raise UnsafeArchiveError(f"member inside file member {parent!r}", file=file, field=name,
                                         offset=info.offset)
        if mtype == FILE and path == ".":
            raise UnsafeArchiveError("a file member at the archive root path", file=file, field=name, offset=info.offset)
        seen[path] = mtype
        if info.size < 0:
            raise MalformedError(f"negative member size {info.size}", file=file, field=name, offset=info.offset)
        if not math.isfinite(info.mtime):  # a PAX mtime of "inf" or "1e999", which no header can hold again
            raise MalformedError(f"mtime {info.mtime} is not a finite number", file=file, field=name,
                                 offset=info.offset)
        if info.size > max_member_size:
            raise UnsafeArchiveError(f"member of {info.size} bytes exceeds the limit of {max_member_size}", file=file,
                                     field=name, offset=info.offset)
        if info.offset_data + info.size > size:
            raise TruncatedError(f"member data needs {info.size} bytes, {max(0, size - info.offset_data)} remain",
                                 file=file, field=name, offset=info.offset_data)
        # From where this member's header blocks start: a global PAX header before it is not
        # part of tarfile's member offset but must be kept for an exact rewrite.
        f.seek(here)
        raw = f.read(info.offset_data - here)
        yield TarEntry(name=name, path=path, type=mtype, size=info.size if mtype == FILE else 0,
                       mode=info.mode, uid=info.uid, gid=info.gid, uname=info.uname, gname=info.gname,
                       mtime=info.mtime, pax_headers=dict(info.pax_headers), header_offset=info.offset,
                       data_offset=info.offset_data, raw_header=raw)


def check_end(f: IO[bytes], end: int, size: int, *, file: str | None = None) -> None:
    """Check what follows the last member: the end-of-archive marker (whatever follows it
    is kept, not read, for an exact rewrite). Raises if the container stops before the
    marker or a non-zero block follows the last member (a corrupt header that tarfile
    would silently treat as the end)."""
    if end >= size:
        raise TruncatedError("the archive ends without its end-of-archive blocks", file=file, offset=end)
    f.seek(end)
    first = f.read(BLOCK)
    if len(first) < BLOCK and first.strip(b"\0"):
        raise TruncatedError("the archive ends inside a header", file=file, offset=end)
    if first.strip(b"\0"):
        raise MalformedError("invalid tar header (neither a member nor the end of the archive)", file=file,
                             offset=end)


# ----------------------------------------------------------------- writing


def _itn(n: int, digits: int) -> bytes:
    if not 0 <= n < 8 ** (digits - 1):
        raise ValueError("number does not fit its field")
    return b"%0*o" % (digits - 1, n) + b"\0"


def _stn(s: str, length: int, encoding: str, errors: str) -> bytes:
    b = s.encode(encoding, errors)[:length]
    return b + b"\0" * (length - len(b))


def _itn_gnu(n: int, digits: int) -> bytes:
    """An octal field, or GNU base-256 when the value does not fit (tarfile's GNU_FORMAT)."""
    n = int(n)
    if 0 <= n < 8 ** (digits - 1):
        return b"%0*o" % (digits - 1, n) + b"\0"
    if -(256 ** (digits - 1)) <= n < 256 ** (digits - 1):
        return bytes([0o377 if n < 0 else 0o200]) + (n % 256 ** (digits - 1)).to_bytes(digits - 1, "big")
    raise ValueError("number does not fit its field")


def _header_block(info: dict[str, Any], magic: bytes, encoding: str, errors: str, *, gnu: bool = False) -> bytes:
    itn = _itn_gnu if gnu else _itn
    # Python 3.6/3.7 (the GNU-format years) wrote zero device numbers in octal; later
    # versions leave the fields empty for members that are not devices.
    dev = b"0000000\0" if gnu else b"\0" * 8
    parts = [
        _stn(info.get("name", ""), 100, encoding, errors),
        itn(info.get("mode", 0) & 0o7777, 8),
        itn(info.get("uid", 0), 8),
        itn(info.get("gid", 0), 8),
        itn(info.get("size", 0), 12),
        itn(int(info.get("mtime", 0)), 12),
        b"        ",
        info.get("type", tarfile.REGTYPE),
        _stn(info.get("linkname", ""), 100, encoding, errors),
        magic,
        _stn(info.get("uname", ""), 32, encoding, errors),
        _stn(info.get("gname", ""), 32, encoding, errors),
        dev,
        dev,
        _stn(info.get("prefix", ""), 155, encoding, errors),
    ]
    buf = b"".join(parts)
    buf += b"\0" * (BLOCK - len(buf))
    chksum = 256 + sum(buf[:148]) + sum(buf[156:])
    return buf[:148] + b"%06o\0" % chksum + buf[155:]


def _pax_records(headers: dict[str, str]) -> bytes:
    binary = False
    for value in headers.values():
        try:
            value.encode("utf-8", "strict")
        except UnicodeEncodeError:
            binary = True
            break
    records = b"21 hdrcharset=BINARY\n" if binary else b""
    for keyword, value in headers.items():
        # tarfile decodes keywords with surrogateescape: a keyword that is not UTF-8 goes back
        # as the bytes it was read from
        k = keyword.encode("utf-8", "surrogateescape")
        v = value.encode("utf-8", "surrogateescape") if binary else value.encode("utf-8")
        length = len(k) + len(v) + 3
        n = p = 0
        while True:
            n = length + len(str(p))
            if n == p:
                break
            p = n
        records += str(p).encode("ascii") + b" " + k + b"=" + v + b"\n"
    return records


def _payload(data: bytes) -> bytes:
    pad = (-len(data)) % BLOCK
    return data + b"\0" * pad


GNU_MAGIC = b"ustar  \0"


def _encode_gnu(entry: TarEntry, name: str, encoding: str) -> bytes:
    """``TarInfo.tobuf(GNU_FORMAT)`` of Python 3.6/3.7: a ``././@LongLink`` block for a name
    over 100 bytes, then the header with the GNU magic and integer mtime."""
    out = b""
    raw = name.encode(encoding, "surrogateescape")
    if len(raw) > 100:
        data = raw + b"\0"
        out = _header_block({"name": "././@LongLink", "type": tarfile.GNUTYPE_LONGNAME, "size": len(data)},
                            GNU_MAGIC, "ascii", "replace", gnu=True) + _payload(data)
    info = {"name": name, "mode": entry.mode, "uid": entry.uid, "gid": entry.gid,
            "size": entry.size if entry.type == FILE else 0, "mtime": entry.mtime,
            "type": tarfile.DIRTYPE if entry.type == DIRECTORY else tarfile.REGTYPE,
            "uname": entry.uname, "gname": entry.gname}
    return out + _header_block(info, GNU_MAGIC, encoding, "surrogateescape", gnu=True)


def encode_header(entry: TarEntry, *, encoding: str = "utf-8", format: str = "pax") -> bytes:  # noqa: A002
    """The header blocks of ``entry`` as CPython's tarfile writes them: ``pax``
    (``TarInfo.tobuf(PAX_FORMAT)``, with the ``././@PaxHeader`` record when needed) or
    ``gnu`` (``GNU_FORMAT``, tarfile's default before Python 3.8)."""
    name = entry.name + ("/" if entry.type == DIRECTORY and not entry.name.endswith("/") else "")
    if format == "gnu":
        return _encode_gnu(entry, name, encoding)
    info: dict[str, Any] = {
        "name": name, "mode": entry.mode, "uid": entry.uid, "gid": entry.gid,
        "size": entry.size if entry.type == FILE else 0, "mtime": entry.mtime,
        "type": tarfile.DIRTYPE if entry.type == DIRECTORY else tarfile.REGTYPE,
        "linkname": "", "uname": entry.uname, "gname": entry.gname,
    }
    pax = dict(entry.pax_headers)
    for key, hname, length in (("name", "path", 100), ("linkname", "linkpath", 100), ("uname", "uname", 32),
                               ("gname", "gname", 32)):
        if hname in pax:
            continue
        try:
            info[key].encode("ascii", "strict")
        except UnicodeEncodeError:
            pax[hname] = info[key]
            continue
        if len(info[key]) > length:
            pax[hname] = info[key]
    for key, digits in (("uid", 8), ("gid", 8), ("size", 12), ("mtime", 12)):
        needs = False
        val = info[key]
        is_float = isinstance(val, float)
        val_int = round(val) if is_float else val
        if not 0 <= val_int < 8 ** (digits - 1):
            info[key] = 0
            needs = True
        elif is_float:
            info[key] = val_int
            needs = True
        if needs and key not in pax:
            pax[key] = str(val)
    out = b""
    if pax:
        records = _pax_records(pax)
        out = _header_block({"name": "././@PaxHeader", "type": tarfile.XHDTYPE, "size": len(records)},
                            tarfile.POSIX_MAGIC, "ascii", "replace") + _payload(records)
    return out + _header_block(info, tarfile.POSIX_MAGIC, "ascii", "replace")


@dataclass(frozen=True)
class HeaderInfo:
    """What a member's header blocks say about the writer: ``format`` (``pax``: the POSIX
    magic after PAX records; ``ustar``: the POSIX magic alone; ``gnu``: the GNU magic;
    ``v7``: no magic), the member's ``typeflag``, the types of the extended blocks before
    it (``x``, ``g``, ``L``, ``K``) and the PAX keywords they hold."""

    format: str
    typeflag: str
    extended: tuple[str, ...] = ()
    pax_keywords: tuple[str, ...] = ()


def describe_header(raw: bytes) -> HeaderInfo:
    """Classify the header blocks of one member (``TarEntry.raw_header``)."""
    pos, ext, keys = 0, [], []
    while pos + BLOCK <= len(raw):
        block = raw[pos:pos + BLOCK]
        flag = block[156:157]
        if flag in (b"x", b"g", b"L", b"K"):
            try:
                size = tarfile.nti(block[124:136])
            except (tarfile.InvalidHeaderError, ValueError):
                size = 0
            data = raw[pos + BLOCK:pos + BLOCK + size]
            ext.append(flag.decode())
            if flag in (b"x", b"g"):
                for rec in data.split(b"\n"):
                    _, _, kv = rec.partition(b" ")
                    k, sep, _ = kv.partition(b"=")
                    if sep:
                        keys.append(k.decode("utf-8", "replace"))
            pos += BLOCK + -(-size // BLOCK) * BLOCK
            continue
        magic = block[257:265]
        if magic == GNU_MAGIC:
            fmt = "gnu"
        elif magic[:6] == b"ustar\0":
            fmt = "pax" if "x" in ext else "ustar"
        else:
            fmt = "v7"
        return HeaderInfo(fmt, flag.decode("latin-1"), tuple(ext), tuple(keys))
    return HeaderInfo("v7", "", tuple(ext), tuple(keys))


def end_blocks(offset: int) -> bytes:
    """Two zero blocks, then zeros up to a multiple of RECORD (tarfile.TarFile.close)."""
    offset += 2 * BLOCK
    return b"\0" * (2 * BLOCK + ((-offset) % RECORD))


def decompress_to(src: IO[bytes], kind: str, dst: IO[bytes], limit: int, *, file: str | None,
                  memlimit: int = _compress.DEFAULT_XZ_MEMLIMIT) -> int:
    """Decompress ``src`` into ``dst`` streaming, refusing more than ``limit`` bytes (see
    :func:`mlf_spec._compress.decompress_to`: gzip, bzip2 and xz with the same limits)."""
    return _compress.decompress_to(src, kind, dst, limit, file=file, memlimit=memlimit)


__all__ = ["BLOCK", "DEFAULT_MAX_MEMBER", "DIRECTORY", "FILE", "GNU_MAGIC", "RECORD", "HeaderInfo", "TarEntry",
           "check_end", "check_extended_header", "decompress_to", "describe_header", "encode_header", "end_blocks",
           "normalize", "read_entries"]

