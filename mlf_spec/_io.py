"""Input sources and safe output: paths, bytes and file objects in; atomic writes out."""

from __future__ import annotations

import builtins
import contextlib
import mmap
import os
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


@contextlib.contextmanager
def atomic_writer(path: Path, *, overwrite: bool = True, durable: bool = False) -> Iterator[IO[bytes]]:
    """A binary file object (a temporary file beside ``path``) whose content replaces
    ``path`` by an atomic rename only if the block succeeds; on any failure the old file
    is untouched and the temporary file removed. ``durable`` adds an fsync before the
    rename (survives power loss, at the cost of waiting for the disk)."""
    import tempfile

    path = Path(path)
    if not overwrite and path.exists():
        raise OutputExistsError("output exists; pass overwrite to replace it", file=str(path))
    directory = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            if durable:
                os.fsync(f.fileno())
        mode = (path.stat().st_mode & 0o7777) if path.exists() else (0o666 & ~_umask())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def atomic_write_chunks(path: Path, chunks: Iterable[Any], *, overwrite: bool = True, durable: bool = False) -> None:
    """Write the buffers ``chunks`` to ``path`` atomically (see ``atomic_writer``), with
    vectored writes straight from the buffers' memory."""
    with atomic_writer(path, overwrite=overwrite, durable=durable) as f:
        write_buffers(f, chunks)


def atomic_write_bytes(path: Path, data: bytes, *, overwrite: bool = True, durable: bool = False) -> None:
    """``atomic_write_chunks`` for one buffer."""
    atomic_write_chunks(path, [data], overwrite=overwrite, durable=durable)


def write_buffers(f: IO[bytes], chunks: Iterable[Any]) -> None:
    """Write every buffer of ``chunks`` to the file ``f`` without joining them first."""
    if not hasattr(os, "writev"):  # pragma: no cover - platforms without writev
        for c in chunks:
            f.write(c)
        return
    f.flush()
    fd = f.fileno()
    batch: list[Any] = []
    for c in chunks:
        batch.append(c)
        if len(batch) == 1024:
            _writev_all(fd, batch)
            batch = []
    if batch:
        _writev_all(fd, batch)


def _writev_all(fd: int, bufs: list[Any]) -> None:
    written = os.writev(fd, bufs)
    sizes = [memoryview(b).nbytes for b in bufs]
    if written == sum(sizes):
        return
    # a short write: continue from where it stopped
    views = [memoryview(b).cast("B") if memoryview(b).ndim != 1 or memoryview(b).format != "B" else memoryview(b)
             for b in bufs]
    i = 0
    while i < len(views):
        if written >= sizes[i]:
            written -= sizes[i]
            i += 1
            continue
        views[i] = views[i][written:]
        sizes[i] -= written
        written = os.writev(fd, views[i:i + 1024])


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
