"""Writing tar headers as CPython's ``tarfile`` does, and telling which writer made one.

Writing encodes headers the way CPython's ``tarfile`` does for ``PAX_FORMAT`` (what TVM's
``tarfile.open(path, "w")`` produced from Python 3.8 on): a ``././@PaxHeader`` record before
every member whose mtime is fractional or whose name or owner does not fit ustar, then the
ustar block; the archive ends with two zero blocks and is padded to 10240 bytes
(:func:`end_blocks`). ``GNU_FORMAT`` (Python 3.6/3.7) is written too. :func:`describe_header`
classifies the header blocks kept by the reader (:mod:`mlf_spec.tar.read`).
"""

from __future__ import annotations

import tarfile
from typing import Any

from mlf_spec._internal.lean_dataclass import dataclass

from .read import BLOCK, DIRECTORY, FILE, RECORD, TarEntry


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


__all__ = ["GNU_MAGIC", "HeaderInfo", "describe_header", "encode_header", "end_blocks"]
