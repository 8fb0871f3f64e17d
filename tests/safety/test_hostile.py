"""Hostile resources (issue 11): each gives an MlfError or a result, within the memory the
README's "Safety and limits" section states. Sizes are kept small enough for the suite;
benchmarks/hostile.py runs the same cases at full size and measures the time."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import struct
import tarfile
import tracemalloc

import pytest

from mlf_spec import archive, check, graph_json, metadata
from mlf_spec.blob.locate import SYMBOL_FFI, c_source_for_blob, locate_blobs
from mlf_spec.errors import (
    LengthError,
    MalformedError,
    MlfError,
    TruncatedError,
    UnsafeArchiveError,
    ValidationError,
)
from mlf_spec.fuzzing.seeds import elf_with_blob
from mlf_spec.mlf import _tar

MiB = 1 << 20


def peak(fn, *args, **kwargs) -> tuple[object, int]:
    """(result or the MlfError raised, peak traced allocation in bytes)."""
    tracemalloc.start()
    try:
        try:
            out = fn(*args, **kwargs)
        except MlfError as exc:
            out = exc
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def tar_of(members: list[tarfile.TarInfo], data: dict[str, bytes] | None = None,
           fmt: int = tarfile.PAX_FORMAT) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as tf:
        for ti in members:
            payload = (data or {}).get(ti.name)
            if payload is not None:
                ti.size = len(payload)
            tf.addfile(ti, io.BytesIO(payload) if payload is not None else None)
    return buf.getvalue()


# ----------------------------------------------------------------- compression


@pytest.mark.parametrize("compress", [gzip.compress, bz2.compress, lzma.compress], ids=["gz", "bz2", "xz"])
def test_decompression_bomb_is_refused_in_bounded_memory(compress):
    # one member of 64 MiB of zeros, as 16 concatenated streams of 4 MiB (cheap to make)
    header = tarfile.TarInfo("x")
    header.size = 64 * MiB
    head = header.tobuf(tarfile.USTAR_FORMAT)
    zeros = compress(bytes(4 * MiB))
    bomb = compress(head + bytes(4 * MiB - len(head))) + zeros * 15 + compress(bytes(len(head) + 1024))
    assert len(bomb) < 200_000
    err, used = peak(archive.open, bomb, max_total_size=16 * MiB)
    assert isinstance(err, UnsafeArchiveError) and "exceeds" in err.message
    # streamed in 1 MiB slices into a temporary file: the heap holds a few slices, plus the
    # xz decoder's dictionary (8 MiB for lzma.compress's default preset)
    assert used < (12 if compress is lzma.compress else 4) * MiB
    err, _ = peak(locate_blobs, bomb, max_size=1 * MiB)
    assert isinstance(err, UnsafeArchiveError)


# ----------------------------------------------------------------- tar structure


def test_many_members_are_refused_at_the_limit_without_reading_the_rest():
    members = [tarfile.TarInfo(f"m{i}") for i in range(1500)]
    data = tar_of(members, {m.name: b"" for m in members}, tarfile.USTAR_FORMAT)
    err, used = peak(archive.open, data, max_members=500)
    assert isinstance(err, UnsafeArchiveError) and "more than 500 members" in err.message
    assert err.offset == 500 * 512  # the 501st header: nothing after it was read
    assert used < 4 * MiB
    err, _ = peak(locate_blobs, data, max_members=500)
    assert isinstance(err, UnsafeArchiveError)
    assert _tar.DEFAULT_MAX_MEMBERS == 20_000


@pytest.mark.parametrize("depth", [65, 10_000, 100_000])
def test_very_deep_paths_are_refused_at_once(depth):
    ti = tarfile.TarInfo("/".join(["d"] * depth) + "/f")
    data = tar_of([ti], {ti.name: b"x"})
    err, used = peak(archive.open, data)
    assert isinstance(err, UnsafeArchiveError) and ("deeper" in err.message or "characters" in err.message)
    assert used < 4 * MiB + 20 * len(data)
    assert locate_blobs(data) == []  # no devc member: nothing to locate, in linear time


def test_long_names_are_read_up_to_the_limit():
    ok = tarfile.TarInfo("./src/" + "n" * 200 + ".c")
    long = tarfile.TarInfo("./src/" + "n" * (_tar.MAX_NAME_LENGTH + 1))
    for fmt in (tarfile.GNU_FORMAT, tarfile.PAX_FORMAT):
        with archive.open(tar_of([ok], {ok.name: b"int x;"}, fmt)) as a:
            assert [m.name for m in a.members] == [ok.name]
        with pytest.raises(UnsafeArchiveError, match="characters"):
            archive.open(tar_of([long], {long.name: b""}, fmt))
    escaping = tarfile.TarInfo("./" + "a" * 150 + "/../../etc/passwd")
    with pytest.raises(UnsafeArchiveError, match=r"'\.\.'"):
        archive.open(tar_of([escaping], {escaping.name: b""}, tarfile.GNU_FORMAT))


def _gnu_long_name_block(name: bytes) -> bytes:
    ti = tarfile.TarInfo("././@LongLink")
    ti.type = tarfile.GNUTYPE_LONGNAME
    ti.size = len(name)
    return ti.tobuf(tarfile.GNU_FORMAT) + name + bytes(-len(name) % 512)


def test_chains_of_extended_headers_are_refused_before_tarfile_recurses():
    tail = tarfile.TarInfo("x").tobuf(tarfile.GNU_FORMAT) + bytes(1024)
    ok = _gnu_long_name_block(b"a" * 200) + tail
    with archive.open(ok) as a:
        assert a.members[0].name == "a" * 200
    chain = _gnu_long_name_block(b"a" * 200) * 3000 + tail  # tarfile would recurse 3000 deep
    for reader in (archive.open, locate_blobs):
        err, used = peak(reader, chain)
        assert isinstance(err, MalformedError) and "in a row" in err.message
        assert used < 4 * MiB


@pytest.mark.parametrize("size", [_tar.MAX_EXTENDED_HEADER + 1, 8**11 - 1, 10**30])
def test_pax_headers_with_huge_sizes(size):
    ti = tarfile.TarInfo("./a")
    ti.size = 1
    if size < 8**11:  # the extended header itself claims to be huge
        block = bytearray(tarfile.TarInfo("././@PaxHeader").tobuf(tarfile.USTAR_FORMAT))
        block[156:157] = b"x"
        block[124:136] = b"%011o\0" % size
        block[148:156] = b"%06o\0 " % (256 + sum(block[:148]) + sum(block[156:]))
        data = bytes(block) + bytes(4096)
        expected: type[MlfError] = LengthError
    else:  # a PAX record gives the member a size no archive holds
        ti.pax_headers = {"size": str(size)}
        data = ti.tobuf(tarfile.PAX_FORMAT) + b"x" + bytes(1535)
        expected = UnsafeArchiveError
    err, used = peak(archive.open, data)
    assert isinstance(err, expected), err
    assert used < 4 * MiB
    err, _ = peak(locate_blobs, data)
    assert isinstance(err, MlfError)


def test_sparse_and_negative_size_members_are_refused():
    gnu = tarfile.TarInfo("./devc.o")
    gnu.type = tarfile.GNUTYPE_SPARSE
    pax = tarfile.TarInfo("./devc.c")
    pax.size = 10
    pax.pax_headers = {"GNU.sparse.major": "1", "GNU.sparse.minor": "0", "GNU.sparse.realsize": "100000000",
                       "GNU.sparse.name": "./devc.c"}
    negative = tarfile.TarInfo("./devc.c")
    negative.pax_headers = {"size": "-5"}
    cases = [(gnu.tobuf(tarfile.GNU_FORMAT) + bytes(1024), UnsafeArchiveError, "sparse"),
             (pax.tobuf(tarfile.PAX_FORMAT) + b"1\n0\n10\n".ljust(512, b"\0") + bytes(1536), UnsafeArchiveError,
              "sparse"),
             (negative.tobuf(tarfile.PAX_FORMAT) + bytes(2048), MalformedError, "negative")]
    for data, error, word in cases:
        for reader in (archive.open, locate_blobs):
            with pytest.raises(error, match=word):
                reader(data)


# ----------------------------------------------------------------- ELF


def _elf() -> tuple[bytearray, int]:
    raw = (16).to_bytes(8, "little") + bytes(16)
    data = bytearray(elf_with_blob(raw, SYMBOL_FFI))
    return data, struct.unpack_from("<Q", data, 40)[0]


@pytest.mark.parametrize("where, fmt, value", [
    ("e_shnum", "<H", 65535), ("e_shoff", "<Q", 2**63), ("e_shentsize", "<H", 1),
    ("symtab.sh_size", "<Q", 2**40), ("symtab.sh_entsize", "<Q", 1), ("symtab.sh_link", "<I", 999),
    ("symtab.sh_offset", "<Q", 2**62), ("rodata.sh_offset", "<Q", 2**62), ("rodata.sh_type", "<I", 8),
    ("rodata.sh_flags", "<Q", 0x800), ("symbol.st_size", "<Q", 2**63), ("symbol.st_shndx", "<H", 0xFFFF),
    ("symbol.st_value", "<Q", 2**40),
])
def test_elf_files_with_lying_section_tables(where, fmt, value):
    data, shoff = _elf()
    fields = {"e_shnum": 60, "e_shoff": 40, "e_shentsize": 58}
    sections = {"rodata": 1, "symtab": 2}
    shdr = {"sh_type": 4, "sh_flags": 8, "sh_offset": 24, "sh_size": 32, "sh_link": 40, "sh_entsize": 56}
    sym = {"st_shndx": 6, "st_value": 8, "st_size": 16}
    if where in fields:
        at = fields[where]
    elif where.startswith("symbol."):
        symoff = struct.unpack_from("<Q", data, shoff + 2 * 64 + 24)[0]
        at = symoff + 24 + sym[where.split(".")[1]]
    else:
        sec, name = where.split(".")
        at = shoff + sections[sec] * 64 + shdr[name]
    struct.pack_into(fmt, data, at, value)
    err, used = peak(locate_blobs, bytes(data))
    assert isinstance(err, MlfError), err
    assert used < 4 * MiB


def test_elf_symbol_table_of_half_a_million_entries_is_read_in_bounded_memory():
    data, shoff = _elf()
    symtab = shoff + 2 * 64
    table = bytes(24) + struct.pack("<IBBHQQ", 1, 0x10, 0, 0, 0, 0) * 500_000 + struct.pack("<IBBHQQ", 1, 0x11, 0, 1, 0,
                                                                                             24)
    struct.pack_into("<QQ", data, symtab + 24, len(data), len(table))
    data += table
    found, used = peak(locate_blobs, bytes(data))
    assert isinstance(found, list) and len(found) == 1
    assert used < 4 * MiB + 3 * len(data)


# ----------------------------------------------------------------- C sources


def test_c_source_with_an_enormous_array_decodes_in_a_few_times_its_size():
    blob = (1_000_000).to_bytes(8, "little") + bytes(1_000_000)
    text = c_source_for_blob(blob).encode()  # TVM's layout: 5 MB of "0x00," lines
    found, used = peak(locate_blobs, text)
    assert isinstance(found, list) and found[0].data == blob
    assert used < 6 * len(text)
    lying = text.replace(b"[1000008]", b"[" + b"9" * 40 + b"]", 1)
    assert isinstance(peak(locate_blobs, lying)[0], MlfError)
    cut = text[: len(text) // 2]
    err, used = peak(locate_blobs, cut)
    assert isinstance(err, TruncatedError) and used < 6 * len(cut)


# ----------------------------------------------------------------- JSON


@pytest.mark.parametrize("parse", [metadata.parse, graph_json.parse])
def test_deeply_nested_json_is_a_validation_error(parse):
    for text in (b"[" * 1_000_000 + b"]" * 1_000_000, b'{"a":' * 200_000 + b"1" + b"}" * 200_000):
        err, used = peak(parse, text)
        assert isinstance(err, ValidationError)
        assert used < 64 * MiB


def test_check_of_a_member_bomb_stays_a_refusal():
    members = [tarfile.TarInfo(f"m{i}") for i in range(1500)]
    data = bz2.compress(tar_of(members, {m.name: b"" for m in members}, tarfile.USTAR_FORMAT))
    with pytest.raises(UnsafeArchiveError):
        check.check(data, max_members=1000)


def test_opening_bytes_does_not_copy_them():
    # Found measuring the limits (issue 11): archive.open(bytes) took a BytesIO buffer view,
    # which copies, so a 488 MiB tar cost 513 MiB of heap before the first header was read.
    ti = tarfile.TarInfo("big")
    data = tar_of([ti], {"big": bytes(32 * MiB)})
    a, used = peak(archive.open, data)
    with a:  # type: ignore[union-attr]
        assert a.members[0].view().nbytes == 32 * MiB  # type: ignore[union-attr]
    assert used < 1 * MiB
