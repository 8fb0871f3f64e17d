"""Input sources and safe output: paths, bytes and file objects in; atomic writes out."""

from __future__ import annotations

import builtins
import contextlib
import mmap
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from .errors import MlfError, OutputExistsError

Source = str | os.PathLike | bytes | bytearray | memoryview | IO[bytes]


def describe(source: Any) -> str:
    """A name for ``source`` in error messages."""
    if isinstance(source, (str, os.PathLike)):
        return os.fspath(source)
    if isinstance(source, (bytes, bytearray, memoryview)):
        return "<bytes>"
    return str(getattr(source, "name", "<stream>"))


@contextlib.contextmanager
def read_source(source: Source) -> Iterator[tuple[Any, int, int | None]]:
    """Yield (buffer, size, fd or None) for a path (memory-mapped), bytes-like object or
    binary file object (read from its current position)."""
    if isinstance(source, (str, os.PathLike)):
        try:
            f = builtins.open(source, "rb")
        except OSError as exc:
            raise MlfError(f"cannot open: {exc.strerror}", file=os.fspath(source)) from None
        with f:
            size = os.fstat(f.fileno()).st_size
            if size == 0:
                yield b"", 0, None
                return
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            try:
                yield mm, size, f.fileno()
            finally:
                try:
                    mm.close()
                except BufferError:
                    pass  # a caller kept a view; the mapping goes when the view does
        return
    if isinstance(source, (bytes, bytearray, memoryview)):
        view = memoryview(source)
        if view.ndim != 1 or view.format not in ("B", "b", "c"):
            view = view.cast("B")
        yield view, view.nbytes, None
        return
    if hasattr(source, "read"):
        data = source.read()
        if not isinstance(data, (bytes, bytearray)):
            raise MlfError("file object must be opened in binary mode", file=describe(source))
        yield memoryview(data), len(data), None
        return
    raise TypeError(f"expected a path, bytes or a binary file object, got {type(source).__name__}")


def atomic_write_chunks(path: Path, chunks: Iterable[Any], *, overwrite: bool = True) -> None:
    """Write ``chunks`` (buffers) to ``path`` through a temporary file in the same
    directory, fsync'd and renamed into place: the old file survives any failure."""
    path = Path(path)
    if not overwrite and path.exists():
        raise OutputExistsError("output exists; pass overwrite to replace it", file=str(path))
    directory = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            pending: list[Any] = []
            pending_bytes = 0
            for chunk in chunks:
                pending.append(chunk)
                pending_bytes += memoryview(chunk).nbytes
                if len(pending) >= 512 or pending_bytes >= (64 << 20):
                    _writev(f, pending)
                    pending, pending_bytes = [], 0
            _writev(f, pending)
            f.flush()
            os.fsync(f.fileno())
        if path.exists():
            with contextlib.suppress(OSError):
                os.chmod(tmp, path.stat().st_mode & 0o7777)
        else:
            os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def atomic_writer(path: Path, *, overwrite: bool = True) -> Iterator[IO[bytes]]:
    """A binary file object whose content replaces ``path`` only if the block succeeds."""
    path = Path(path)
    if not overwrite and path.exists():
        raise OutputExistsError("output exists; pass overwrite to replace it", file=str(path))
    directory = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, (path.stat().st_mode & 0o7777) if path.exists() else (0o666 & ~_umask()))
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def atomic_write_bytes(path: Path, data: bytes, *, overwrite: bool = True) -> None:
    """``atomic_write_chunks`` for one buffer."""
    atomic_write_chunks(path, [data], overwrite=overwrite)


def _writev(f: IO[bytes], bufs: list[Any]) -> None:
    if not bufs:
        return
    if hasattr(os, "writev"):
        f.flush()
        fd = f.fileno()
        views = [
            memoryview(b).cast("B")
            if memoryview(b).format != "B" or memoryview(b).ndim != 1
            else memoryview(b)
            for b in bufs
        ]
        while views:
            written = os.writev(fd, views[:1024])
            while views and written >= views[0].nbytes:
                written -= views[0].nbytes
                views.pop(0)
            if views and written:
                views[0] = views[0][written:]
    else:  # pragma: no cover - platforms without writev
        for b in bufs:
            f.write(b)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
