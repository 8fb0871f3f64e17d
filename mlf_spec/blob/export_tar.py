"""Module blobs in the tars ``export_library`` writes (``lib.tar``, possibly compressed):
the blob member (``devc.o`` / ``devc.c``) found by name, else any object file.

The tar is read by the package's one tar reader (:mod:`mlf_spec.tar`) with the limits of
the locator: ``max_size`` per member, ``max_members``, members together at most
``TAR_TOTAL_FACTOR`` times ``max_size``, and only zero bytes (at most ``max_size``) after the
last member, so that a damaged archive is not mistaken for one without a blob.
"""

from __future__ import annotations

import io
import posixpath
from typing import IO, BinaryIO

from mlf_spec import tar as _tar
from mlf_spec._blob_facts import DEVC_MEMBER
from mlf_spec.errors import TruncatedError, UnsupportedError

from .csource import parse_c_source
from .elf import locate_elf
from .located import SNIFF_SIZE, LocatedBlob

#: The members of a tar may total this many times max_size (and a compressed tar may
#: decompress to that plus max_size of padding).
TAR_TOTAL_FACTOR = 4

# export_library names the blob file "<system-lib prefix>devc.<o|c>" (devc.cc up to v0.7).
_DEVC_MEMBER = DEVC_MEMBER


def limits(max_size: int, max_members: int) -> _tar.TarLimits:
    """The tar limits of the blob locator for its ``max_size`` and ``max_members``."""
    return _tar.TarLimits(max_members=max_members, max_member_size=max_size, member_size_name="max_size",
                          max_total_size=max_size * TAR_TOTAL_FACTOR, extraction_names=False,
                          zero_trailer=max_size)


def decompressed_bound(max_size: int, max_members: int) -> int:
    """The most bytes a tar within the limits can hold: member data, max_size of trailing
    padding, and two header blocks (a long-name block and the header) per member."""
    return (TAR_TOTAL_FACTOR + 1) * max_size + (max_members + 2) * 1024 + 20 * 512


def members(stream: IO[bytes], label: str, max_size: int, max_members: int) -> list[_tar.TarEntry]:
    """The file members of the uncompressed tar in ``stream``, after the reader's checks."""
    size = _tar.stream_size(stream)
    return [e for e in _tar.read_entries(stream, size, file=label, limits=limits(max_size, max_members))
            if e.type == _tar.FILE]


def locate_in_tar(stream: BinaryIO, label: str, max_size: int, max_members: int) -> list[LocatedBlob]:
    """Every blob in the export tar in ``stream`` (compressed or not)."""
    with _tar.plain_tar(stream, decompressed_bound(max_size, max_members), file=label) as plain:
        files = members(plain, label, max_size, max_members)
        primary = [e for e in files if _DEVC_MEMBER.fullmatch(posixpath.basename(e.path))]
        found: list[LocatedBlob] = []
        for e in primary:
            found.extend(_locate_member(plain, e, label, only_elf=False))
        if found:
            return found
        for e in files:
            if e in primary or not e.path.endswith((".o", ".obj")):
                continue
            found.extend(_locate_member(plain, e, label, only_elf=True))
        return found


def _locate_member(stream: IO[bytes], entry: _tar.TarEntry, label: str, *, only_elf: bool) -> list[LocatedBlob]:
    name = entry.path
    member_label = f"{label}[{name}]"
    stream.seek(entry.data_offset)
    data = stream.read(entry.size)
    if len(data) != entry.size:
        raise TruncatedError(f"member declares {entry.size} bytes, the archive holds {len(data)}",
                             file=member_label, field="tar.member.size", offset=entry.header_offset)
    if data[:4] == b"\x7fELF":
        return locate_elf(io.BytesIO(data), len(data), member_label, member=name)
    if only_elf:
        return []
    if data and b"\x00" not in data[:SNIFF_SIZE]:
        return [LocatedBlob(symbol=b.symbol, prefix=b.prefix, data=b.data, source=f"tar:{name}", file_offset=None,
                            container_member=name)
                for b in parse_c_source(data, file=member_label)]
    raise UnsupportedError("member is neither an ELF object nor C source", file=member_label, field="magic",
                           offset=0)


__all__ = ["TAR_TOTAL_FACTOR", "decompressed_bound", "limits", "locate_in_tar", "members"]
