"""Structure-aware mutation of tarballs (MLF archives, export_library tarballs).

:class:`TarMutator` reads the members (after decompressing a gzip/bzip2/xz container),
changes one thing and writes a tar again, possibly in another tar format or compressed
otherwise. Changes: a member's content mutated by the mutator registered for its name
(metadata.json with the JSON mutator, ``*.params`` with the spec mutator, ...); a member
renamed (to a path of the layout, a long name that needs a GNU or PAX record, a ``..``
path), retyped (link, device, FIFO, sparse), added, removed, duplicated or moved; a header
field written wrong in place (size, checksum, type flag, mode, numeric fields in base-256).
"""

from __future__ import annotations

import bz2
import fnmatch
import gzip
import io
import lzma
import random
import tarfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from mlf_spec import compression as _compress
from mlf_spec import sniff as _sniff

from .mutators import Mutator, ParseCache

_FORMATS = (tarfile.PAX_FORMAT, tarfile.GNU_FORMAT, tarfile.USTAR_FORMAT)
_LIMIT = 4 << 20  # mutate tarballs that decompress to at most this many bytes
_FIELDS = {"name": (0, 100), "mode": (100, 8), "uid": (108, 8), "gid": (116, 8), "size": (124, 12),
           "mtime": (136, 12), "chksum": (148, 8), "type": (156, 1), "linkname": (157, 100),
           "magic": (257, 8), "uname": (265, 32), "prefix": (345, 155)}


@dataclass
class _Member:
    info: tarfile.TarInfo
    data: bytes


@dataclass
class _Tar:
    members: list[_Member]
    compression: str | None
    plain: bytes
    headers: list[int]  # offsets of the header blocks of the members in ``plain``


def _read(data: bytes) -> _Tar | None:
    kind = _sniff.compression(data[:8])
    plain = data
    if kind is not None:
        out = io.BytesIO()
        _compress.decompress_to(io.BytesIO(data), kind, out, _LIMIT, file=None)
        plain = out.getvalue()
    members = []
    headers = []
    with tarfile.open(fileobj=io.BytesIO(plain), mode="r:", ignore_zeros=False) as tf:
        for info in tf:
            f = tf.extractfile(info) if info.isreg() else None
            members.append(_Member(info, f.read() if f is not None else b""))
            headers.append(info.offset)
            if len(members) > 2000:
                break
    if not members:
        return None
    return _Tar(members, kind, plain, headers)


def _write(members: Sequence[_Member], fmt: int, compression: str | None, rng: random.Random) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as tf:
        for m in members:
            info = m.info
            if info.isreg():
                info.size = len(m.data)
                tf.addfile(info, io.BytesIO(m.data))
            else:
                tf.addfile(info)
    return compress(buf.getvalue(), compression)


def compress(data: bytes, kind: str | None) -> bytes:
    """``data`` in a ``gzip``, ``bzip2`` or ``xz`` container (fast settings), or as it is."""
    if kind == "gzip":
        return gzip.compress(data, compresslevel=1, mtime=0)
    if kind == "bzip2":
        return bz2.compress(data, compresslevel=1)
    if kind == "xz":
        return lzma.compress(data, preset=0)
    return data


class TarMutator:
    """Mutate tarballs. ``inner`` maps glob patterns of member paths (``*metadata.json``)
    to the mutator for their content; ``paths`` are member names worth trying (the
    layout's). Inputs over 4 MiB decompressed are left to byte mutation."""

    def __init__(self, inner: dict[str, Mutator] | None = None, paths: Iterable[str] = ()) -> None:
        self.inner = dict(inner or {})
        self.paths = sorted(set(paths))
        self.parse = ParseCache(_read, size=32)

    def mutate(self, data: bytes, rng: random.Random) -> bytes | None:
        """A variant of ``data`` with one member or header changed (None if not a tar)."""
        t = self.parse(data)
        if t is None:
            return None
        r = rng.random()
        if r < 0.15:
            return self._header_in_place(t, rng)
        members = [_Member(_copy_info(m.info), m.data) for m in t.members]
        fmt = rng.choice(_FORMATS) if rng.random() < 0.2 else tarfile.PAX_FORMAT
        compression = t.compression
        if rng.random() < 0.05:
            compression = rng.choice((None, "gzip", "bzip2", "xz"))
        if r < 0.55:
            if not self._edit_content(members, rng):
                return None
        else:
            self._edit_members(members, rng)
        try:
            return _write(members, fmt, compression, rng)
        except (ValueError, tarfile.TarError, OverflowError, UnicodeError):
            return None

    def _edit_content(self, members: list[_Member], rng: random.Random) -> bool:
        files = [m for m in members if m.info.isreg()]
        rng.shuffle(files)
        for m in files:
            name = m.info.name
            for pattern, mut in self.inner.items():
                if fnmatch.fnmatch(name, pattern):
                    out = mut.mutate(m.data, rng)
                    if out is not None:
                        m.data = out
                        return True
        if files:
            m = rng.choice(files)
            op = rng.randrange(3)
            if op == 0:
                m.data = m.data[:rng.randint(0, len(m.data))]
            elif op == 1:
                m.data = m.data + bytes(rng.randint(1, 4096))
            else:
                other = rng.choice(files)
                m.data = other.data
            return True
        return False

    def _edit_members(self, members: list[_Member], rng: random.Random) -> None:
        op = rng.randrange(8)
        m = rng.choice(members)
        info = m.info
        if op == 0:
            info.name = self._name(rng, [x.info.name for x in members])
        elif op == 1:
            kind = rng.choice((tarfile.SYMTYPE, tarfile.LNKTYPE, tarfile.DIRTYPE, tarfile.FIFOTYPE, tarfile.CHRTYPE,
                               tarfile.GNUTYPE_SPARSE, tarfile.CONTTYPE, b"Z"))
            info.type = kind
            info.linkname = rng.choice(("../../etc/passwd", "/etc/passwd", "metadata.json", "./codegen", "x" * 200))
        elif op == 2:
            members.remove(m)
        elif op == 3:
            members.insert(rng.randrange(len(members) + 1), _Member(_copy_info(info), m.data))
        elif op == 4:
            i, j = rng.randrange(len(members)), rng.randrange(len(members))
            members[i], members[j] = members[j], members[i]
        elif op == 5:
            new = tarfile.TarInfo(self._name(rng, [x.info.name for x in members]))
            if rng.random() < 0.3:
                new.type = tarfile.DIRTYPE
                data = b""
            else:
                data = rng.choice(members).data if rng.random() < 0.5 else b"{}"
            members.insert(rng.randrange(len(members) + 1), _Member(new, data))
        elif op == 6:
            field = rng.choice(("mode", "uid", "gid", "mtime", "uname", "gname"))
            value: object = rng.choice((0, 0o7777, 2**21, 2**33, 1.5, -1, 1e10)) if field in (
                "mode", "uid", "gid", "mtime") else rng.choice(("", "root", "x" * 40, "\udcff"))
            if field == "mode" and not isinstance(value, int):
                value = 0o644
            setattr(info, field, value)
        else:
            info.pax_headers = dict(info.pax_headers)
            key = rng.choice(("size", "path", "mtime", "uid", "GNU.sparse.size", "GNU.sparse.map", "linkpath",
                              "hdrcharset", "comment"))
            info.pax_headers[key] = rng.choice(("99999999999999999999", "-1", "1e400", "x" * 300, "0", "",
                                                "0,1,2", "../x"))

    def _name(self, rng: random.Random, existing: list[str]) -> str:
        r = rng.random()
        if self.paths and r < 0.4:
            name = rng.choice(self.paths)
            return ("./" + name) if rng.random() < 0.7 else name
        if r < 0.55 and existing:
            return rng.choice(existing)
        return rng.choice(("../evil", "/abs/path", "a\\b", "./" + "d/" * 200 + "f", "./" + "n" * 300, "x\x00y",
                           "./codegen/host/src/" + "x" * 120 + ".c", ".", "./", "C:/x", "./\udcff"))

    def _header_in_place(self, t: _Tar, rng: random.Random) -> bytes | None:
        if not t.headers:
            return None
        data = bytearray(t.plain)
        at = rng.choice(t.headers)
        if at + 512 > len(data):
            return None
        field = rng.choice(list(_FIELDS))
        off, size = _FIELDS[field]
        if field in ("name", "linkname", "prefix", "uname", "magic"):
            value = rng.choice((b"", b"../x", b"/etc/x", b"\xff" * 4, b"ustar\x0000", b"ustar  \x00", b"a" * size))
        elif field == "type":
            value = rng.choice((b"0", b"1", b"2", b"3", b"5", b"6", b"7", b"K", b"L", b"S", b"x", b"g", b"\x00", b"Z"))
        elif rng.random() < 0.3:
            value = b"\x80" + rng.randbytes(size - 1)  # base-256 (GNU) number
        else:
            n = rng.choice((0, 1, 511, 512, 513, 8**(size - 1) - 1, len(data), len(data) - at, 10**9))
            value = (b"%0*o" % (size - 1, n))[-(size - 1):] + b"\0"
        data[at + off:at + off + size] = value[:size].ljust(size, b"\0")
        if field != "chksum" and rng.random() < 0.8:
            block = data[at:at + 512]
            chk = 256 + sum(block[:148]) + sum(block[156:])
            data[at + 148:at + 156] = b"%06o\0 " % chk
        return compress(bytes(data), t.compression)


def _copy_info(info: tarfile.TarInfo) -> tarfile.TarInfo:
    new = tarfile.TarInfo(info.name)
    for attr in ("mode", "uid", "gid", "size", "mtime", "type", "linkname", "uname", "gname", "devmajor",
                 "devminor"):
        setattr(new, attr, getattr(info, attr))
    new.pax_headers = dict(info.pax_headers)
    return new


__all__ = ["TarMutator", "compress"]
