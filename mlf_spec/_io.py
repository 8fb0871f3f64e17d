"""Input sources and safe output: paths, bytes and file objects in; atomic writes out."""

from __future__ import annotations

import builtins
import contextlib
import mmap
import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any, BinaryIO

from .errors import CannotOpenError, MlfError, OutputExistsError

Source = str | os.PathLike | bytes | bytearray | memoryview | IO[bytes]


def describe(source: Any) -> str:
    """A name for ``source`` in error messages."""
    if isinstance(source, (str, os.PathLike)):
        return os.fspath(source)
    if isinstance(source, (bytes, bytearray, memoryview)):
        return "<bytes>"
    return str(getattr(source, "name", "<stream>"))


@contextlib.contextmanager
def read_source(source: Source, mapped: bool = True) -> Iterator[tuple[Any, int, int | None]]:
    """Yield (buffer, size, fd or None) for a path (memory-mapped; with ``mapped=False``
    read into memory), bytes-like object or binary file object (read from its current
    position).

    A mapped file must not shrink while its views are in use: as with ``numpy.memmap``,
    touching a page that another process truncated away raises SIGBUS, which no Python
    code can catch. Read a file that may change with ``mapped=False`` (a file that shrinks
    while it is read is then an MlfError), or as bytes."""
    if isinstance(source, (str, os.PathLike)):
        f = open_regular(source)
        with f:
            size = os.fstat(f.fileno()).st_size
            if size == 0:
                yield b"", 0, None
                return
            if not mapped:
                yield memoryview(read_whole(f.fileno(), size)), size, f.fileno()
                return
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            if len(mm) < size:
                mm.close()
                raise MlfError("file shrank while it was being read", file=os.fspath(source), offset=size)
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


def open_regular(path: str | os.PathLike[str]) -> BinaryIO:
    """``path`` opened for reading, if it is a regular file; MlfError otherwise (see
    :func:`open_regular_fd`)."""
    return builtins.open(open_regular_fd(path), "rb")


def open_regular_fd(path: str | os.PathLike[str]) -> int:
    """A descriptor of ``path`` opened for reading, if it is a regular file; MlfError
    otherwise. Opened without blocking, so a FIFO (which would wait for a writer, and reads
    as 0 bytes by its size) or a device (``/dev/zero`` never ends) is refused before it is
    read."""
    name = os.fspath(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise CannotOpenError(f"cannot open: {exc.strerror}", file=name) from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise CannotOpenError("cannot open: Is a directory", file=name)
        if not stat.S_ISREG(mode):
            raise MlfError("not a regular file (a FIFO, a device or a socket): read it from a file, or as bytes",
                           file=name)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


#: The most a side file (a run report, a known-failures list, a case file) is read up to.
SIDE_FILE_LIMIT = 256 << 20


def read_limited(path: str | os.PathLike[str], limit: int = SIDE_FILE_LIMIT) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them: MlfError for more
    (``/dev/zero`` as a report filled memory), for a FIFO or a device, or when it cannot be
    read. OSError is not raised."""
    with open_regular(path) as f:
        try:
            data = f.read(limit + 1)
        except OSError as exc:
            raise MlfError(f"cannot read: {exc.strerror}", file=os.fspath(path)) from None
    if len(data) > limit:
        raise MlfError(f"larger than {limit} bytes, the most this file is read up to", file=os.fspath(path))
    return data


def read_whole(fd: int, size: int) -> bytearray:
    """The ``size`` bytes of the file ``fd`` read into memory by pread (MlfError if the file
    ends first: it shrank while it was being read)."""
    return read_at(fd, 0, size)


def read_at(fd: int, offset: int, n: int, *, file: str | None = None) -> bytearray:
    """``n`` bytes of the file ``fd`` from ``offset``, read by pread (MlfError naming ``file``
    if the file ends first: it shrank while it was being read)."""
    out = bytearray(n)
    pread_into(fd, memoryview(out), offset, file=file)
    return out


def pread_into(fd: int, view: memoryview, offset: int, *, file: str | None = None) -> None:
    """Fill ``view`` with the bytes of the file ``fd`` from ``offset``, by pread (the one
    read loop of the package: a short read need not be the end, one that returns nothing
    is). MlfError naming ``file`` if the file ends first: it shrank while it was being read."""
    done, n = 0, len(view)
    while done < n:
        got = os.preadv(fd, [view[done:]], offset + done)
        if got <= 0:
            raise MlfError("file shrank while it was being read", file=file, offset=offset + done)
        done += got


class FileSpan:
    """``length`` bytes of the open binary file object ``f`` from ``offset``, read by pread
    only when asked for (never mapped: a file that another process truncates meanwhile gives
    an MlfError, "file shrank while it was being read", where a mapping would die of SIGBUS).
    Once ``f`` is closed, reading raises ValueError (never another file's bytes)."""

    __slots__ = ("f", "offset", "length", "file")

    def __init__(self, f: IO[bytes], offset: int, length: int, file: str | None = None) -> None:
        self.f, self.offset, self.length, self.file = f, offset, length, file

    def __len__(self) -> int:
        return self.length

    def read(self) -> memoryview:
        """The whole span, as a copy in memory."""
        return memoryview(read_at(self.f.fileno(), self.offset, self.length, file=self.file))

    def pieces(self, chunk: int = 1 << 20) -> Iterator[memoryview]:
        """The span in order, in copies of at most ``chunk`` bytes (one at a time in memory)."""
        for start in range(0, self.length, chunk):
            yield memoryview(read_at(self.f.fileno(), self.offset + start, min(chunk, self.length - start),
                                     file=self.file))


class PreadWindow:
    """The ``size`` bytes of the file ``fd`` for a reader that slices them (``w[a:b]``, as it
    would slice bytes), read by pread through a window of ``window`` bytes: many small fields
    cost one read, a slice larger than the window is read alone, and the file is never held
    whole (its size bounds nothing in memory). A slice past the end is cut short, as a bytes
    object's is; a file that shrank meanwhile gives MlfError ("file shrank ...") naming ``file``."""

    __slots__ = ("fd", "size", "file", "window", "_win", "_lo")

    def __init__(self, fd: int, size: int, file: str | None = None, window: int = 64 << 10) -> None:
        self.fd, self.size, self.file, self.window = fd, size, file, window
        self._win, self._lo = b"", 0

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, key: slice) -> bytes | bytearray:
        start, stop, step = key.indices(self.size)
        if step != 1:
            raise ValueError("a PreadWindow is sliced with step 1")
        n, lo = max(0, stop - start), self._lo
        if lo <= start and start + n <= lo + len(self._win):
            return self._win[start - lo:start - lo + n]
        if n >= self.window:
            return read_at(self.fd, start, n, file=self.file)
        self._win = bytes(read_at(self.fd, start, min(self.window, self.size - start), file=self.file))
        self._lo = start
        return self._win[:n]


def check_output(path: str | os.PathLike[str], *, inputs: Iterable[Any] = (), directory: bool = False) -> None:
    """Raise MlfError (one line: the path and what is wrong) when ``path`` cannot be the
    output of a command, before anything is written. The rule of every command: mlf-spec
    creates the output it is given (a file, or a folder), never the folders above it (a
    missing parent folder is refused); a file output may not name a directory, nor a
    ``directory`` output a file, nor a folder output ``-`` (standard output holds no folder);
    and an output that is one of ``inputs``, holds one (replacing it would delete the input)
    or lies inside an input folder is refused (mlf-spec never modifies its input)."""
    p = Path(path)
    parent = p.parent if str(p.parent) else Path(".")
    if directory:
        if os.fspath(path) == "-":
            raise MlfError("the output '-': a folder cannot be written to standard output; name a folder")
        if p.exists() and not p.is_dir():
            raise MlfError("the output exists and is not a directory", file=str(p))
    elif p.is_dir():
        raise MlfError("the output is a directory; name a file", file=str(p))
    if not p.exists():
        if not parent.exists():
            raise MlfError(f"the folder {parent} does not exist (mlf-spec does not create it)", file=str(p))
        if not parent.is_dir():
            raise MlfError(f"{parent} is not a folder", file=str(p))
    problem = output_overlap(p, inputs)
    if problem is not None:
        raise MlfError(problem, file=str(p))


def output_overlap(path: str | os.PathLike[str], inputs: Iterable[Any]) -> str | None:
    """Why the output ``path`` may not be written over ``inputs`` (it is one, holds one or
    lies inside an input folder; symbolic links resolved), or None."""
    out = os.path.realpath(path)
    for src in inputs:
        if not isinstance(src, (str, os.PathLike)) or os.fspath(src) == "-":
            continue
        try:
            same = os.path.samefile(src, path)
        except OSError:
            same = False
        real = os.path.realpath(src)
        if same or real == out:
            return "the output is the input; mlf-spec never modifies its input"
        if real.startswith(out.rstrip(os.sep) + os.sep):
            return f"the output holds the input {os.fspath(src)}; writing it would replace the input"
        if os.path.isdir(real) and out.startswith(real.rstrip(os.sep) + os.sep):
            return f"the output lies inside the input {os.fspath(src)}; mlf-spec never writes into its input"
    return None


#: Every temporary name this package makes holds this tag and the writing process's id
#: (``.NAME.mlf-spec-PID-XXXXXXXX.tmp``), so that what a killed writer left behind is
#: recognised and removed by the next write into the same directory.
TEMP_TAG = "mlf-spec"


def temp_prefix(name: str) -> str:
    """The prefix of a temporary file or directory standing for ``name`` in this process."""
    return f".{name}.{TEMP_TAG}-{os.getpid()}-"


def write_error(exc: OSError, path: str | os.PathLike) -> MlfError:
    """The MlfError for a failed write (no space, read-only file system, file too large...)."""
    return MlfError(f"cannot write: {exc.strerror or exc}", file=os.fspath(path))


_cleared: set[str] = set()


def clear_stale(directory: str | os.PathLike) -> int:
    """Remove the temporary files and directories that writers of this package left in
    ``directory`` when they were killed (their process no longer exists); once per
    directory and process. Returns how many were removed."""
    import shutil

    key = os.path.abspath(os.fspath(directory))
    if key in _cleared:
        return 0
    _cleared.add(key)
    removed = 0
    try:
        entries = list(os.scandir(os.fspath(directory)))
    except OSError:
        return 0
    tag = f".{TEMP_TAG}-"
    for e in entries:
        if not e.name.startswith(".") or tag not in e.name or not e.name.endswith((".tmp", ".old")):
            continue
        pid_text = e.name.rsplit(tag, 1)[1].split("-", 1)[0]
        if not pid_text.isdigit() or _alive(int(pid_text)):
            continue
        try:
            if e.is_dir(follow_symlinks=False):
                shutil.rmtree(e.path)
            else:
                os.unlink(e.path)
            removed += 1
        except OSError:
            pass
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, not ours
    return True


@contextlib.contextmanager
def atomic_writer(path: Path, *, overwrite: bool = True, durable: bool = False) -> Iterator[IO[bytes]]:
    """A binary file object (a temporary file beside ``path``) whose content replaces
    ``path`` by an atomic rename only if the block succeeds; on any failure the old file
    is untouched and the temporary file removed. ``durable`` adds an fsync before the
    rename (survives power loss, at the cost of waiting for the disk). A write that fails
    (no space left, read-only file system, file too large) is an MlfError naming ``path``.

    A symbolic link at ``path`` is followed: its target is replaced (atomically, by a
    temporary file beside the target) and the link stays, as ``cp`` and editors do."""
    path = Path(path)
    if path.is_symlink():
        path = Path(os.path.realpath(path))
    if not overwrite and path.exists():
        raise OutputExistsError("output exists; pass overwrite to replace it", file=str(path))
    directory = path.parent if str(path.parent) else Path(".")
    clear_stale(directory)
    # The name is chosen before the file is made, so that a signal raised at any point
    # (SIGTERM/SIGHUP raise in Python, perhaps just after the file was created) finds the
    # name in the cleanup below.
    tmp = directory / f"{temp_prefix(path.name)}{os.urandom(4).hex()}.tmp"
    try:
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
        except OSError as exc:
            check_output(path)  # a path mistake (no such folder, not a folder) named as such
            raise write_error(exc, path) from None
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            if durable:
                os.fsync(f.fileno())
        old = _stat_or_none(path)
        os.chmod(tmp, (old.st_mode & 0o7777) if old else (0o666 & ~_umask()))
        held = _hold_if_large(path, old)
        os.replace(tmp, path)
        if held is not None:
            _release_later(held)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and not isinstance(exc, BrokenPipeError):
            raise write_error(exc, path) from None
        raise


@contextlib.contextmanager
def atomic_directory(path: Path, *, replace: bool = False, keep: Iterable[str | os.PathLike] = ()) -> Iterator[Path]:
    """A new empty directory beside ``path`` to fill; when the block succeeds it is renamed
    to ``path``, so ``path`` never holds a partial result; on any failure it is removed and
    ``path`` is as it was. An existing empty directory at ``path`` is replaced; a non-empty
    one only with ``replace`` (it is moved aside, the new one renamed in, then the old one
    deleted); a file, or a symbolic link, at ``path`` is refused. So is replacing a
    directory that holds the current directory or one of the paths in ``keep`` (the input)."""
    import shutil
    import tempfile

    path = Path(path)
    if path.is_symlink():
        raise MlfError("the output is a symbolic link; name a directory", file=str(path))
    if path.exists() and not path.is_dir():
        raise MlfError("the output exists and is not a directory", file=str(path))
    occupied = path.is_dir() and any(path.iterdir())
    if occupied and not replace:
        raise OutputExistsError("the output directory exists and is not empty", file=str(path))
    if occupied:
        here = path.resolve()
        for inner in (Path.cwd(), *map(Path, keep)):
            inner = inner.resolve()
            if inner == here or here in inner.parents:
                what = "the current directory" if inner == Path.cwd().resolve() else f"the input {os.fspath(inner)}"
                raise OutputExistsError(f"the output directory holds {what}; replacing it would delete it",
                                        file=str(path))
    parent = path.parent if str(path.parent) else Path(".")
    check_output(path, directory=True, inputs=keep)
    tmp = parent / f"{temp_prefix(path.name)}{os.urandom(4).hex()}.tmp"  # named first: see atomic_writer
    try:
        try:
            parent.mkdir(parents=True, exist_ok=True)
            clear_stale(parent)
            os.mkdir(tmp, 0o700)
        except OSError as exc:
            raise MlfError(f"cannot create the output directory: {exc.strerror or exc}", file=str(path)) from None
        os.chmod(tmp, 0o777 & ~_umask())
        yield tmp
        if occupied:
            old = Path(tempfile.mkdtemp(prefix=temp_prefix(path.name), suffix=".old", dir=parent))
            os.rename(path, old / "dir")
            try:
                os.rename(tmp, path)
            except BaseException:
                os.rename(old / "dir", path)
                raise
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(tmp, path)  # replaces an empty directory
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(exc, OSError) and not isinstance(exc, BrokenPipeError):
            raise write_error(exc, path) from None
        raise


@contextlib.contextmanager
def output_directory(path: str | os.PathLike) -> Iterator[Path]:
    """Create the directory ``path`` (and missing parents) for a writer that fills it file
    by file; if the block fails, the directories this call created are removed with what
    was written into them (no empty or partial folder is left), and an OSError becomes an
    MlfError naming ``path``."""
    import shutil

    path = Path(path)
    top = None
    p = path
    while not p.exists() and p != p.parent:
        top, p = p, p.parent
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        if top is not None:
            shutil.rmtree(top, ignore_errors=True)
        raise MlfError(f"cannot create the output directory: {exc.strerror or exc}", file=str(path)) from None
    try:
        yield path
    except BaseException as exc:
        if top is not None:
            shutil.rmtree(top, ignore_errors=True)
        if isinstance(exc, OSError) and not isinstance(exc, BrokenPipeError):
            raise write_error(exc, path) from None
        raise


def atomic_write_chunks(path: Path, chunks: Iterable[Any], *, overwrite: bool = True, durable: bool = False) -> None:
    """Write the buffers ``chunks`` to ``path`` atomically (see ``atomic_writer``), with
    vectored writes straight from the buffers' memory."""
    with atomic_writer(path, overwrite=overwrite, durable=durable) as f:
        write_buffers(f, chunks)


def atomic_write_bytes(path: Path, data: bytes, *, overwrite: bool = True, durable: bool = False) -> None:
    """``atomic_write_chunks`` for one buffer."""
    atomic_write_chunks(path, [data], overwrite=overwrite, durable=durable)


_SMALL = 64 << 10  # buffers below this are gathered into one write; larger ones go straight from their memory
_GATHER = 1 << 20


def write_buffers(f: IO[bytes], chunks: Iterable[Any]) -> None:
    """Write every buffer of ``chunks`` to the file ``f`` in order: small buffers are
    joined into one write per MiB, large ones are written from their own memory."""
    batch: list[Any] = []
    pending = 0
    for c in chunks:
        n = getattr(c, "nbytes", None)
        if n is None:
            n = len(c)  # bytes / bytearray
        if n < _SMALL:
            batch.append(c)
            pending += n
            if pending >= _GATHER:
                f.write(b"".join(batch))
                batch, pending = [], 0
        else:
            if batch:
                f.write(b"".join(batch))
                batch, pending = [], 0
            f.write(c)
    if batch:
        f.write(b"".join(batch))


def _stat_or_none(path: Path) -> os.stat_result | None:
    try:
        return path.stat()
    except OSError:
        return None


def _hold_if_large(path: Path, st: os.stat_result | None) -> int | None:
    # Freeing a big replaced file's pages takes tens of ms; keep it open across the
    # rename and let a background thread drop the last reference.
    if st is None or st.st_size < (32 << 20):
        return None
    try:
        return os.open(path, os.O_RDONLY)
    except OSError:
        return None


def _release_later(fd: int) -> None:
    import threading

    threading.Thread(target=os.close, args=(fd,), name="mlf-spec-release", daemon=True).start()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
