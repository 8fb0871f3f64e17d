"""One safe-tar reader (issue 21 item 1): MLF archives, the blob locator and the export-tar
evidence read tars through mlf_spec.tar, with one set of messages and field paths."""

from __future__ import annotations

import gzip
import io
import tarfile

import pytest

from mlf_spec import tar
from mlf_spec.blob import evidence
from mlf_spec.blob.export_tar import decompressed_bound
from mlf_spec.blob.locate import locate_blobs
from mlf_spec.errors import MalformedError, MlfError, UnsafeArchiveError
from mlf_spec.mlf import archive


def _tar(*members: tarfile.TarInfo, data: dict[str, bytes] | None = None) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tf:
        for ti in members:
            body = (data or {}).get(ti.name, b"")
            ti.size = len(body) if ti.isreg() else 0
            tf.addfile(ti, io.BytesIO(body) if body else None)
    return buf.getvalue()


def _info(name: str, **attrs: object) -> tarfile.TarInfo:
    ti = tarfile.TarInfo(name)
    for k, v in attrs.items():
        setattr(ti, k, v)
    return ti


def _error(reader: object, data: bytes) -> MlfError:
    with pytest.raises(MlfError) as info:
        reader(data)  # type: ignore[operator]
    return info.value


UNSAFE = {
    "symlink": _tar(_info("lib0.o"), _info("devc.o", type=tarfile.SYMTYPE, linkname="/etc/passwd")),
    "parent": _tar(_info("lib0.o"), _info("../devc.o"), data={"../devc.o": b"x"}),
    "absolute": _tar(_info("lib0.o"), _info("/devc.o"), data={"/devc.o": b"x"}),
    "duplicate": _tar(_info("devc.o"), _info("./devc.o"), data={"devc.o": b"x", "./devc.o": b"y"}),
    "device": _tar(_info("lib0.o"), _info("devc.o", type=tarfile.CHRTYPE)),
}


@pytest.mark.parametrize("kind", sorted(UNSAFE))
def test_archives_and_the_blob_locator_refuse_a_member_in_the_same_words(kind: str) -> None:
    data = UNSAFE[kind]
    a, b = _error(archive.open, data), _error(locate_blobs, data)
    assert type(a) is type(b) is UnsafeArchiveError
    assert (a.message, a.field, a.offset) == (b.message, b.field, b.offset)
    assert a.field is not None and a.field.startswith("tar.members[1](")


def test_what_follows_the_last_member_has_one_field_path() -> None:
    good = _tar(_info("lib0.c"), _info("devc.c"), data={"lib0.c": b"int x;\n", "devc.c": b"int y;\n"})
    bad = bytearray(good)
    bad[1024 + 148:1024 + 156] = b"0000000\0"  # the second header's checksum: tarfile stops there silently
    a, b = _error(archive.open, bytes(bad)), _error(locate_blobs, bytes(bad))
    assert isinstance(a, MalformedError) and (a.message, a.field, a.offset) == (b.message, b.field, b.offset)
    assert a.field == tar.END_FIELD and a.offset == 1024


def test_member_limits_name_the_callers_keyword() -> None:
    data = _tar(*(_info(f"m{i}.o") for i in range(3)), data={f"m{i}.o": bytes(100) for i in range(3)})
    a = _error(lambda d: archive.open(d, max_member_size=99), data)
    b = _error(lambda d: locate_blobs(d, max_size=99), data)
    assert a.message.replace("max_member_size", "max_size") == b.message and a.field == b.field == "tar.members[0](m0.o)"
    a = _error(lambda d: archive.open(d, max_members=2), data)
    b = _error(lambda d: locate_blobs(d, max_members=2), data)
    assert (a.message, a.field, a.offset) == (b.message, b.field, b.offset) == (
        "more than 2 members (max_members)", "tar.members[2](m2.o)", 2048)


def test_export_tar_evidence_reads_through_the_same_reader() -> None:
    names = {"lib0.c": b"int y;\n", "devc.c": b"int x;\n"}
    plain = _tar(*(_info(n) for n in names), data=names)
    assert evidence.evidence(plain) is not None
    assert evidence.evidence(gzip.compress(plain)) is not None
    # what the reader refuses is no evidence (the tarfile walk it replaces took a link by its name)
    linked = _tar(_info("lib0.o"), _info("devc.o", type=tarfile.SYMTYPE, linkname="/etc/passwd"))
    assert evidence.evidence(linked) is None
    # a gzip layer is inflated with the decompression limits: past them, no evidence
    bomb = gzip.compress(plain + bytes(8 << 20))
    bound = decompressed_bound(1 << 20, 10)
    with pytest.raises(UnsafeArchiveError, match="exceeds"):
        with tar.plain_tar(io.BytesIO(bomb), bound, file=None):
            pass
    assert locate_blobs(gzip.compress(plain)) == []


def test_the_mlf_name_is_the_shared_reader() -> None:
    from mlf_spec.mlf import _tar

    assert _tar.read_entries is tar.read_entries and _tar.normalize is tar.normalize
