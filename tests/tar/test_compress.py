"""Compressed tarballs: gzip, bzip2 and xz read the same way, with the same limits.

Until issue 11 a .tar.bz2 or .tar.xz (or any input starting with ``BZh``) gave a
TypeError traceback from every command (``BZ2File(fileobj=...)``).
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import struct
import tarfile
import zlib

import pytest

from mlf_spec import _compress, archive, blob, check
from mlf_spec.blob.locate import c_source_for_blob, locate_blobs
from mlf_spec.cli import main
from mlf_spec.errors import MalformedError, MlfError, TruncatedError, UnsafeArchiveError
from mlf_spec.mlf.strategies import ArchiveSpec, ModuleSpec, Tensor, build_archive

COMPRESSORS = {"gzip": gzip.compress, "bzip2": bz2.compress, "xz": lzma.compress}


@pytest.fixture(scope="module")
def plain_tar() -> bytes:
    m = ModuleSpec("m", "aot", "c -keys=cpu", "2026-01-02 03:04:05Z", inputs=[Tensor("x", "int8", [1, 4])],
                   outputs=[Tensor("y", "int8", [1, 4])], params=[Tensor("p", "float32", [2])], sources=1,
                   op_functions=[("tvmgen_m_add", 0)], workspace=0)
    return build_archive(ArchiveSpec(7, "v7.templates", "full-model", [m], 1_700_000_000.0)).to_bytes()


@pytest.mark.parametrize("kind", sorted(COMPRESSORS))
def test_compressed_archives_open_and_round_trip(plain_tar, kind, tmp_path):
    data = COMPRESSORS[kind](plain_tar)
    with archive.open(data) as a:
        assert a.compression == kind and a.to_bytes() == plain_tar and a.version == 7
    path = tmp_path / f"m.tar.{ {'gzip': 'gz', 'bzip2': 'bz2', 'xz': 'xz'}[kind]}"
    path.write_bytes(data)
    report = check.check(path)
    assert report.conformant and report.codes() == ["layout.compressed"]
    assert main(["inspect", str(path), "--json"]) == 0


@pytest.mark.parametrize("kind", sorted(COMPRESSORS))
def test_concatenated_streams_and_zero_padding(plain_tar, kind):
    c = COMPRESSORS[kind]
    data = c(plain_tar[:3000]) + c(plain_tar[3000:]) + bytes(700)
    with archive.open(data) as a:
        assert a.to_bytes() == plain_tar


@pytest.mark.parametrize("data", [b"BZh", b"BZh91AY&SY", b"BZhjunk" * 100, b"\xfd7zXZ\x00", b"\x1f\x8b"])
def test_a_compression_magic_alone_is_an_mlf_error_not_a_traceback(data, tmp_path, capsys):
    with pytest.raises(MlfError):
        archive.open(data)
    with pytest.raises(MlfError):
        locate_blobs(data)
    p = tmp_path / "x.tar"
    p.write_bytes(data)
    for argv in (["inspect", str(p)], ["check", str(p)], ["upgrade", str(p), "--dry-run"], ["blob", "dump", str(p)]):
        assert main(argv) == 2, argv
        assert capsys.readouterr().err.startswith("mlf-spec: error: ")


@pytest.mark.parametrize("kind", sorted(COMPRESSORS))
def test_truncated_and_trailing_garbage(plain_tar, kind):
    data = COMPRESSORS[kind](plain_tar)
    with pytest.raises(TruncatedError):
        archive.open(data[: len(data) - 5])
    with pytest.raises(MalformedError, match="after the"):
        archive.open(data + b"garbage")


def test_corrupt_gzip_crc_is_named():
    data = bytearray(gzip.compress(bytes(20000)))
    data[-8] ^= 0xFF
    with pytest.raises(MalformedError, match="CRC"):
        _compress.decompress_to(io.BytesIO(bytes(data)), "gzip", io.BytesIO(), 1 << 20, file=None)


@pytest.mark.parametrize("kind", sorted(COMPRESSORS))
def test_decompression_bomb_stops_at_the_limit(kind):
    bomb = COMPRESSORS[kind](bytes(50 << 20))
    out = io.BytesIO()
    with pytest.raises(UnsafeArchiveError, match="exceeds"):
        _compress.decompress_to(io.BytesIO(bomb), kind, out, 4 << 20, file="bomb")
    # output is produced in bounded slices, so no more than one slice past the limit is written
    assert out.tell() <= (4 << 20)
    with pytest.raises(UnsafeArchiveError):
        archive.open(bomb, max_total_size=4 << 20)
    with pytest.raises(UnsafeArchiveError):
        check.check(bomb, max_total_size=4 << 20)


def _xz_with_dictionary(code: int) -> bytes:
    """An xz stream whose LZMA2 block header asks for dictionary size ``code`` (40: 4 GiB)."""
    data = bytearray(lzma.compress(b"x" * 1000, format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC32,
                                   filters=[{"id": lzma.FILTER_LZMA2, "dict_size": 4096}]))
    start = 12  # stream header
    size = (data[start] + 1) * 4
    header = data[start:start + size - 4]
    i = header.index(b"\x21\x01")  # filter id LZMA2, one property byte
    header[i + 2] = code
    data[start:start + size - 4] = header
    data[start + size - 4:start + size] = struct.pack("<I", zlib.crc32(bytes(header)))
    return bytes(data)


def test_xz_decoder_memory_is_capped():
    assert lzma.decompress(_xz_with_dictionary(0)) == b"x" * 1000  # the crafting keeps it valid
    with pytest.raises(UnsafeArchiveError, match="decoder memory"):
        _compress.decompress_to(io.BytesIO(_xz_with_dictionary(40)), "xz", io.BytesIO(), 1 << 30, file=None,
                                memlimit=64 << 20)


@pytest.mark.parametrize("kind", sorted(COMPRESSORS))
def test_blobs_are_located_in_compressed_export_tarballs(kind):
    body = bytes(8 * 3)  # row_ptr = [] is enough for locating: the locator does not decode bodies
    raw = len(body).to_bytes(8, "little") + body
    text = c_source_for_blob(raw).encode()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        info = tarfile.TarInfo("devc.c")
        info.size = len(text)
        tf.addfile(info, io.BytesIO(text))
    found = locate_blobs(COMPRESSORS[kind](buf.getvalue()))
    assert [b.data for b in found] == [raw]
    with pytest.raises(UnsafeArchiveError):
        locate_blobs(COMPRESSORS[kind](buf.getvalue() + bytes(1 << 20)), max_size=1024, max_members=4)
    with pytest.raises(MlfError):
        blob.read(COMPRESSORS[kind](buf.getvalue())[:-4])


def test_closing_an_archive_from_a_compressed_source_releases_its_temporary_file(plain_tar):
    # Found by the fuzz harness's leak check (issue 11): the archive's own view of its end
    # blocks kept the mapping of the decompressed temporary file, and its descriptor, open
    # after close() until the garbage collector ran.
    import gc
    import os

    def fds() -> int:
        return len(os.listdir("/proc/self/fd"))

    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("needs /proc")
    gc.disable()
    try:
        before = fds()
        a = archive.open(gzip.compress(plain_tar))
        a.to_bytes()
        a.close()
        assert fds() == before
    finally:
        gc.enable()
