"""Writer conformance of the MLF container (notes/mlf-truths.md §4, §6.3): archives made the
way TVM's writer made them under each Python (tarfile.add of a temporary tree with the root
reset filter, then the CRT tree and the template files without it) give no warning; what a
third-party writer does differently (modes, owners, formats, member types, padding) does."""

from __future__ import annotations

import io
import os
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest

from mlf_spec import archive, check, migrate
from mlf_spec.mlf import _tar
from mlf_spec.mlf.strategies import ArchiveSpec, build_archive
from tests.support.models import add_module


def aot_crt(name: str = "default", sources: int = 2) -> ArchiveSpec:
    m = add_module("aot", name=name, crt=True, header=True)
    m.sources = sources
    return ArchiveSpec(7, "v7.templates", "full-model", [m], 1.7e9)


def _reset(ti: tarfile.TarInfo) -> tarfile.TarInfo:
    ti.uid = ti.gid = 0
    ti.uname = ti.gname = "root"
    return ti


def tvm_tar(tmp: Path, spec: ArchiveSpec, *, fmt: int = tarfile.PAX_FORMAT,
            listing: Callable[[list[str]], list[str]] = sorted, umask: int = 0o022, root_mode: int = 0o700,
            main_filter: Callable[[tarfile.TarInfo], tarfile.TarInfo] = _reset,
            source_owner: tuple[int, int, str, str] = (1000, 1000, "ubuntu", "ubuntu")) -> bytes:
    """What export_model_library_format's tar calls give for ``spec``'s tree: the files as
    Python's open() and os.makedirs left them under ``umask``, walked like tarfile.add with
    directory listings ordered by ``listing`` (``sorted`` from Python 3.7, os.listdir order
    in 3.6), in tarfile format ``fmt`` (GNU before Python 3.8)."""
    tree = tmp / "tree"
    archive.open(build_archive(spec).to_bytes()).extract(tree)
    crt = tmp / "crt"
    templates = []
    if (tree / "runtime").exists():
        (tree / "runtime").rename(crt)
    if (tree / "templates").exists():
        templates = sorted((tree / "templates").iterdir())
        for t in templates:
            t.rename(tmp / t.name)
        (tree / "templates").rmdir()
    for d, dirs, files in os.walk(tree):
        for f in files:
            os.chmod(Path(d) / f, 0o666 & ~umask)
        for x in dirs:
            os.chmod(Path(d) / x, 0o777 & ~umask)
    os.chmod(tree, root_mode)

    def owner(ti: tarfile.TarInfo) -> tarfile.TarInfo:
        ti.uid, ti.gid, ti.uname, ti.gname = source_owner
        return ti

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as t:
        def walk(path: Path, arcname: str, flt: Callable[[tarfile.TarInfo], tarfile.TarInfo]) -> None:
            t.add(path, arcname=arcname, recursive=False, filter=flt)
            if path.is_dir():
                for child in listing(os.listdir(path)):
                    walk(path / child, f"{arcname}/{child}" if arcname != "." else f"./{child}", flt)

        walk(tree, ".", main_filter)
        if crt.exists():
            walk(crt, "./runtime", owner)
        for f in templates:
            t.add(tmp / f.name, arcname=f"./templates/{f.name}", filter=owner)
    return buf.getvalue()


def codes(data: bytes) -> list[tuple[str, str]]:
    return [(f.code, f.severity) for f in check.check(data).findings]


def test_python_38_and_later_pax_archive_is_clean(tmp_path):
    """§6.3 case 18: a PAX header with the float mtime before every member; runtime/ and
    templates/ keep their owner (case 19)."""
    data = tvm_tar(tmp_path, aot_crt())
    assert codes(data) == []
    a = archive.open(data)
    assert a.tar_format == "pax"
    assert all(m.header.format == "pax" and "mtime" in m.header.pax_keywords for m in a.members)
    assert a.member("runtime").uname == "ubuntu" and a.member("templates/platform.c.template").uid == 1000
    assert len(data) % 10240 == 0


def test_python_37_gnu_archive_is_info_only(tmp_path):
    """§6.3 case 17: Python 3.7 wrote GNU format with sorted listings: the writer's, an info."""
    data = tvm_tar(tmp_path, aot_crt(), fmt=tarfile.GNU_FORMAT)
    report = check.check(data)
    assert codes(data) == [("layout.python", "info")]
    assert "Python 3.6 and 3.7" in report.findings[0].message
    assert archive.open(data).tar_format == "gnu"


def test_python_36_unsorted_listing_is_not_an_order_finding(tmp_path):
    """§6.3 case 16: Python 3.6 listed directories in os.listdir order (reverse creation on
    tmpfs): in a GNU archive any sibling order of a depth-first walk is TVM's."""
    data = tvm_tar(tmp_path, aot_crt(), fmt=tarfile.GNU_FORMAT, listing=lambda xs: sorted(xs, reverse=True))
    names = [m.name for m in archive.open(data).members]
    assert names.index("./src") < names.index("./codegen")  # not sorted
    report = check.check(data)
    assert codes(data) == [("layout.python", "info")] and "Python 3.6" in report.findings[0].message
    # the same member order in a PAX archive (Python >= 3.8 sorted listings) is not the writer's
    pax = tvm_tar(tmp_path / "p", aot_crt(), listing=lambda xs: sorted(xs, reverse=True))
    assert codes(pax) == [("layout.order", "warning")]


def test_a_directory_before_its_content_even_in_gnu_archives(tmp_path):
    a = archive.open(tvm_tar(tmp_path, aot_crt(), fmt=tarfile.GNU_FORMAT))
    src = [m for m in a.members if m.path == "src" or m.path.startswith("src/")]
    a.members = [a.members[0]] + src + [m for m in a.members[1:] if m not in src]
    assert ("layout.order", "warning") not in codes(a.to_bytes())  # src/ before codegen/: Python 3.6
    k = next(k for k, x in enumerate(a.members) if x.path == "codegen/host")
    a.members.insert(1, a.members.pop(k))  # a directory before its parent is no writer's
    assert ("layout.order", "warning") in codes(a.to_bytes())


@pytest.mark.parametrize("umask, root", [(0o022, 0o700), (0o002, 0o700), (0o002, 0o775), (0o022, 0o755),
                                         (0o077, 0o700)])
def test_umask_derived_modes_are_tvms(tmp_path, umask, root):
    """§6.3 case 19: modes come from the process umask; the root from mkdtemp (0o700) or,
    in keep-for-debug temp dirs, os.mkdir."""
    assert codes(tvm_tar(tmp_path, aot_crt(), umask=umask, root_mode=root)) == []


def test_third_party_writer_is_told_where_it_differs(tmp_path):
    """Issue 9: modes 0666, owner alice and GNU format from another writer: the modes and
    the owner are warnings, the GNU format alone is TVM's (Python 3.6/3.7), an info."""
    def alice(ti: tarfile.TarInfo) -> tarfile.TarInfo:
        ti.uid = ti.gid = 1001
        ti.uname = ti.gname = "alice"
        return ti

    data = tvm_tar(tmp_path, aot_crt(), fmt=tarfile.GNU_FORMAT, umask=0o000, main_filter=alice)
    report = check.check(data)
    assert codes(data) == [("layout.python", "info"), ("layout.owner", "warning"), ("layout.mode", "warning")]
    by = {f.code: f.message for f in report.findings}
    assert "alice" in by["layout.owner"] and "0o666" in by["layout.mode"] and "umask 0o022" in by["layout.mode"]
    assert report.conformant  # warnings: TVM's consumers read it


def test_executable_files_and_mixed_umasks(tmp_path):
    a = archive.open(tvm_tar(tmp_path, aot_crt()))
    a.member("metadata.json").mode = 0o755
    a.member("metadata.json").raw_header = None
    assert ("layout.mode", "warning") in codes(a.to_bytes())
    a.member("metadata.json").mode = 0o664  # umask 002 while the rest is 022
    assert [c for c in codes(a.to_bytes()) if c[0] == "layout.mode"] == [("layout.mode", "warning")]
    assert "different umasks" in next(f.message for f in check.check(a.to_bytes()).findings)


def test_formats_tarfile_never_wrote_for_tvm(tmp_path):
    """ustar without PAX records (tarfile's USTAR_FORMAT, `tar --format=ustar`) and PAX
    keywords tarfile does not write (GNU tar's atime/ctime) are another writer's."""
    assert codes(tvm_tar(tmp_path, aot_crt(), fmt=tarfile.USTAR_FORMAT)) == [("layout.format", "warning")]
    a = archive.open(tvm_tar(tmp_path / "x", aot_crt()))
    m = a.member("metadata.json")
    m.pax_headers["atime"] = "1700000000.5"
    m.raw_header = None
    report = check.check(a.to_bytes())
    assert [f.code for f in report.findings] == ["layout.format"] and "atime" in report.findings[0].message


def test_member_types_and_padding(tmp_path):
    data = bytearray(tvm_tar(tmp_path, aot_crt()))
    a = archive.open(bytes(data))
    m = a.member("metadata.json")
    # rewrite the member's type flag '0' as the pre-POSIX '\0' (a regular file to every reader)
    block = m.raw_header[-512:]
    start = a.to_bytes().index(block)
    new = block[:156] + b"\0" + block[157:]
    chk = 256 + sum(new[:148]) + sum(new[156:])
    new = new[:148] + b"%06o\0 " % chk + new[156:]
    data[start:start + 512] = new
    assert codes(bytes(data)) == [("layout.member-type", "warning")]
    short = tvm_tar(tmp_path / "s", aot_crt())
    end = len(short) - len(bytes(archive.open(short).trailer)) + 1024
    assert codes(short[:end]) == [("layout.padding", "warning")]


def test_sources_sort_as_python_strings(tmp_path):
    """§6.3 case 20: with 11 sources TVM's order is lib0, lib1, lib10, lib2 (sorted listing)."""
    data = tvm_tar(tmp_path, aot_crt(sources=11))
    names = [m.name for m in archive.open(data).members if "_lib" in m.name]
    assert names[:4] == ["./codegen/host/src/default_lib0.c", "./codegen/host/src/default_lib1.c",
                         "./codegen/host/src/default_lib10.c", "./codegen/host/src/default_lib2.c"]
    assert codes(data) == []


def test_migrating_a_gnu_archive_keeps_it_gnu(tmp_path):
    """Members a migration renames are re-encoded in the archive's own format."""
    m = add_module("graph", name="default")
    data = tvm_tar(tmp_path, ArchiveSpec(6, "v6", "full-model", [m], 1.7e9), fmt=tarfile.GNU_FORMAT)
    with migrate.plan(data, 7) as p:
        out = migrate.apply(p, p.loss_names()).to_bytes()
    a = archive.open(out)
    assert a.tar_format == "gnu" and a.member("src/default.relay").header.format == "gnu"
    assert codes(out) == [("layout.python", "info")]


def test_gnu_header_encoding_matches_python_37():
    """The GNU encoder writes what Python 3.7's tarfile wrote (octal device fields, integer
    mtime, a ././@LongLink block for long names)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as t:
        ti = tarfile.TarInfo("./codegen/host/src/" + "x" * 120 + ".c")
        ti.size, ti.mtime, ti.mode, ti.uname, ti.gname = 3, 1650000000, 0o644, "root", "root"
        t.addfile(ti, io.BytesIO(b"abc"))
    data = buf.getvalue()
    [e] = list(_tar.read_entries(io.BytesIO(data), len(data)))
    got = _tar.encode_header(e, format="gnu")
    assert _tar.describe_header(got) == _tar.describe_header(e.raw_header) == _tar.HeaderInfo("gnu", "0", ("L",))

    def masked(raw: bytes) -> bytes:  # newer Pythons leave device fields empty (3.7: zeros), so the checksum moves
        blocks = [raw[i:i + 512] for i in range(0, len(raw), 512)]
        return b"".join(b[:148] + b[156:329] + b[345:] if b[257:262] == b"ustar" else b for b in blocks)

    assert masked(got) == masked(e.raw_header)


def test_extracted_directory_gets_no_container_findings(tmp_path):
    root = archive.open(tvm_tar(tmp_path, aot_crt())).extract(tmp_path / "x")
    assert codes(str(root)) == []


def test_pax_global_headers_are_another_writers(tmp_path):
    data = tvm_tar(tmp_path, aot_crt())
    src = tarfile.open(fileobj=io.BytesIO(data))
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT, pax_headers={"comment": "made by bsdtar"}) as t:
        for ti in src.getmembers():
            t.addfile(ti, src.extractfile(ti) if ti.isfile() else None)
    report = check.check(buf.getvalue())
    assert [f.code for f in report.findings] == ["layout.format"] and "'g' block" in report.findings[0].message


@pytest.mark.parametrize("compress, name", [(__import__("gzip").compress, "gzip"), (__import__("bz2").compress, "bzip2"),
                                           (__import__("lzma").compress, "xz")])
def test_compressed_archives_open_and_are_reported(tmp_path, compress, name):
    data = tvm_tar(tmp_path, aot_crt())
    a = archive.open(compress(data))
    assert a.compression == name and a.to_bytes() == data
    assert codes(compress(data)) == [("layout.compressed", "warning")]


def test_global_headers_survive_a_round_trip():
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT, pax_headers={"comment": "x"}) as t:
        ti = tarfile.TarInfo("./a")
        ti.size = 1
        t.addfile(ti, io.BytesIO(b"z"))
    data = buf.getvalue()
    a = archive.open(data)
    assert a.to_bytes() == data and a.members[0].header.extended == ("g",)
