"""Opening an MLF archive: a tar (mapped, or read by pread), a compressed tar, bytes, a file
object or an extracted directory, each checked member by member as it is read."""

from __future__ import annotations

import builtins
import contextlib
import io
import mmap
import os
import stat
from pathlib import Path
from typing import IO, Any

from mlf_spec import sniff as _sniff
from mlf_spec import tar as _tar
from mlf_spec._io import FileSpan, describe, open_regular, read_at
from mlf_spec.errors import MalformedError, MlfError, UnsafeArchiveError

from . import layout as _layout
from .archive_model import (
    DEFAULT_MAX_MEMBER_SIZE,
    DEFAULT_MAX_MEMBERS,
    DEFAULT_MAX_TOTAL_SIZE,
    Archive,
    Member,
    Source,
    group_of,
    owner_names,
)

# ----------------------------------------------------------------- opening


def open(source: Source, *, max_member_size: int = DEFAULT_MAX_MEMBER_SIZE,  # noqa: A001
         max_members: int = DEFAULT_MAX_MEMBERS, max_total_size: int = DEFAULT_MAX_TOTAL_SIZE,
         mapped: bool = True) -> Archive:
    """Open an MLF archive: a path to a tar (uncompressed, or gzip/bz2/xz: decompressed to a
    temporary file first) or to a directory (an extracted archive), bytes, or a binary file
    object. Headers are read streaming and checked; member data stays where it is (mmap)
    until asked for. Raises MlfError (UnsafeArchiveError for unsafe members).

    As with ``numpy.memmap``, a view of a mapped file that another process truncates raises
    SIGBUS, which no Python code can catch. With ``mapped=False`` the file is never mapped:
    a member's bytes are read by pread when asked for (a copy of that member; ``Member.pieces``
    and writing the archive read a MiB at a time), and a file that shrinks meanwhile is an
    MlfError, "file shrank while it was being read" (what the command line does)."""
    name = describe(source)
    if isinstance(source, (str, os.PathLike)):
        p = Path(source)
        if p.is_dir():
            return _open_directory(p, max_member_size=max_member_size, max_members=max_members)
        f = open_regular(p)
        return _open_file(f, name, own=True, max_member_size=max_member_size, max_members=max_members,
                          max_total_size=max_total_size, mapped=mapped)
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = source if isinstance(source, bytes) else bytes(source)
        # the BytesIO shares ``data`` while it is only read; member views come from ``data``
        # itself (BytesIO.getbuffer() would copy it)
        return _open_file(io.BytesIO(data), name, own=True, max_member_size=max_member_size,
                          max_members=max_members, max_total_size=max_total_size, buffer=memoryview(data),
                          mapped=mapped)
    if hasattr(source, "read"):
        seekable = False
        with contextlib.suppress(Exception):
            seekable = source.seekable() and source.tell() == 0
        if not seekable:
            import tempfile  # only for compressed input: not on every start

            tmp = tempfile.TemporaryFile()
            total = 0
            while True:
                chunk = source.read(1 << 20)
                if not chunk:
                    break
                if not isinstance(chunk, (bytes, bytearray)):
                    tmp.close()
                    raise MlfError("file object must be opened in binary mode", file=name)
                total += len(chunk)
                if total > max_total_size:
                    tmp.close()
                    raise UnsafeArchiveError(f"archive exceeds {max_total_size} bytes", file=name)
                tmp.write(chunk)
            tmp.seek(0)
            return _open_file(tmp, name, own=True, max_member_size=max_member_size, max_members=max_members,
                              max_total_size=max_total_size, mapped=mapped)
        return _open_file(source, name, own=False, max_member_size=max_member_size,
                          max_members=max_members, max_total_size=max_total_size, mapped=mapped)
    raise TypeError(f"expected a path, bytes or a binary file object, got {type(source).__name__}")


def _size_of(f: IO[bytes]) -> int:
    pos = f.tell()
    f.seek(0, os.SEEK_END)
    size = f.tell()
    f.seek(pos)
    return size


def _buffer_of(f: IO[bytes], size: int) -> tuple[Any, Any]:
    """A zero-copy buffer over the container and its closer."""
    if isinstance(f, io.BytesIO):
        return f.getbuffer(), None
    if size == 0:
        return memoryview(b""), None
    try:
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError, io.UnsupportedOperation):
        f.seek(0)
        return memoryview(f.read()), None

    def close() -> None:
        with contextlib.suppress(BufferError):
            mm.close()

    return mm, close


def _open_file(f: IO[bytes], name: str, *, own: bool, max_member_size: int, max_members: int,
               max_total_size: int, buffer: memoryview | None = None, mapped: bool = True) -> Archive:
    closers: list[Any] = []
    if own:
        closers.append(f.close)

    def close_all() -> None:
        for c in reversed(closers):
            with contextlib.suppress(Exception):
                c()

    try:
        f.seek(0)
        head = f.read(_tar.BLOCK)
        f.seek(0)
        kind = _sniff.compression(head)
        compression = None
        if kind is not None:
            tmp = _tar.decompressed(f, kind, max_total_size, file=name)
            closers.append(tmp.close)
            f, compression = tmp, kind
        elif not head:
            raise MalformedError("empty file: not a tar archive", file=name, offset=0)
        # mapped=False: members read by pread from the file (or from the decompressed temporary file)
        fd = _fileno(f) if not mapped and (buffer is None or compression is not None) else None
        size = os.fstat(fd).st_size if fd is not None else _size_of(f)
        if fd is not None:
            buf: Any = None
        elif buffer is not None and compression is None:
            buf = buffer
        else:
            buf, close_buf = _buffer_of(f, size)
            if close_buf is not None:
                closers.append(close_buf)
        members: list[Member] = []
        limits = _tar.TarLimits(max_members=max_members, max_member_size=max_member_size)
        it = _tar.read_entries(f, size, file=name, limits=limits)
        while True:
            try:
                e = next(it)
            except StopIteration as stop:
                end = stop.value
                if fd is not None:
                    _check_size(fd, size, name)  # tarfile takes a cut-short file for its end
                break
            except MlfError:
                if fd is not None:
                    _check_size(fd, size, name)  # a header cut short by a truncation says so
                raise
            loader: Any = None
            if e.type == _tar.FILE:
                loader = FileSpan(f, e.data_offset, e.size, name) if fd is not None else \
                    _slicer(buf, e.data_offset, e.size)
            m = Member(e.name, e.path, e.type == _tar.DIRECTORY, e.size, mode=e.mode, uid=e.uid,
                       gid=e.gid, uname=e.uname, gname=e.gname, mtime=e.mtime,
                       pax_headers=e.pax_headers, raw_header=e.raw_header, loader=loader,
                       group=group_of(e.path))
            if e.type == _tar.FILE and e.size % _tar.BLOCK:
                end_of_data = e.data_offset + e.size
                pad = (-e.size) % _tar.BLOCK
                padding = bytes(read_at(fd, end_of_data, pad, file=name)) if fd is not None else \
                    bytes(buf[end_of_data:end_of_data + pad])
                if padding.strip(b"\0"):
                    m.raw_padding = padding
            members.append(m)
        trailer: memoryview | FileSpan = FileSpan(f, end, size - end, name) if fd is not None else \
            memoryview(buf)[end:size]
    except BaseException:
        close_all()
        raise
    return Archive(members, file=name, container="tar", compression=compression, trailer=trailer, closer=close_all,
                   size=size)


def _fileno(f: IO[bytes]) -> int | None:
    """The descriptor of a real file (None for BytesIO and other file-like objects)."""
    if isinstance(f, io.BytesIO):
        return None
    try:
        return f.fileno()
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        return None


def _check_size(fd: int, size: int, name: str) -> None:
    """MlfError if the file ``fd`` is now shorter than the ``size`` it had when opened."""
    with contextlib.suppress(OSError):
        now = os.fstat(fd).st_size
        if now < size:
            raise MlfError("file shrank while it was being read", file=name, offset=now)


def _slicer(buf: Any, start: int, n: int) -> Any:
    return lambda: memoryview(buf)[start:start + n]




def _open_directory(root: Path, *, max_member_size: int, max_members: int) -> Archive:
    """An extracted archive: members in TVM's order, headers as TVM's tarfile.add would have
    made them from this tree (main group reset to root, runtime/templates as on disk)."""
    name = os.fspath(root)
    found: list[tuple[str, os.stat_result]] = []
    try:
        st_root = os.lstat(root)
    except OSError as exc:
        raise MlfError(f"cannot read: {exc.strerror}", file=name) from None
    found.append((".", st_root))
    stack = [(root, "")]
    while stack:
        d, rel = stack.pop()
        try:
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except OSError as exc:
            raise MlfError(f"cannot list: {exc.strerror}", file=os.fspath(d)) from None
        for e in entries:
            path = f"{rel}/{e.name}" if rel else e.name
            _tar.normalize(path, file=name, offset=None)
            st = os.lstat(e.path)
            if stat.S_ISLNK(st.st_mode):
                raise UnsafeArchiveError("symbolic link in the archive directory", file=name, field=path)
            if not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
                raise UnsafeArchiveError("special file (device, FIFO or socket) in the archive directory", file=name,
                                         field=path)
            if stat.S_ISREG(st.st_mode) and st.st_size > max_member_size:
                raise UnsafeArchiveError(f"file of {st.st_size} bytes exceeds the limit of {max_member_size}",
                                         file=name, field=path)
            found.append((path, st))
            if len(found) > max_members:
                raise UnsafeArchiveError(f"more than {max_members} members", file=name)
            if stat.S_ISDIR(st.st_mode):
                stack.append((Path(e.path), path))
    members: list[Member] = []
    for path, st in found:
        group = group_of(path)
        info = _layout.GROUP_INFO.get(group, {"directories": True, "owner": "reset"})
        is_dir = stat.S_ISDIR(st.st_mode)
        if is_dir and not info["directories"] and path != ".":
            continue
        if info["owner"] == "reset":
            uid = gid = 0
            uname = gname = "root"
        else:
            uid, gid = st.st_uid, st.st_gid
            uname, gname = owner_names(uid, gid)
        full = root / path if path != "." else root
        loader = None if is_dir else (lambda p=full: _read_file(p, max_member_size))
        members.append(Member("." if path == "." else _layout.TAR["prefix"] + path, path, is_dir,
                              0 if is_dir else st.st_size, mode=stat.S_IMODE(st.st_mode), uid=uid, gid=gid,
                              uname=uname, gname=gname, mtime=st.st_mtime, loader=loader, group=group))
    order = _layout.tvm_order((m.path, m.group) for m in members)
    rank = {p: i for i, p in enumerate(order)}
    members.sort(key=lambda m: rank[m.path])
    return Archive(members, file=name, container="directory")


def _read_file(path: Path, limit: int) -> bytes:
    try:
        with builtins.open(path, "rb") as f:
            data = f.read(limit + 1)
    except OSError as exc:
        raise MlfError(f"cannot read: {exc.strerror}", file=os.fspath(path)) from None
    if len(data) > limit:
        raise UnsafeArchiveError(f"file grew beyond the limit of {limit}", file=os.fspath(path))
    return data
