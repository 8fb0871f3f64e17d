"""Folder-shaped conformance cases (docs/conformance/protocol.md, "Folder-shaped formats"): a
tensor cache is a folder (an index and its shards), not one file. A case's ``input`` then
names a folder next to the case file; its ``input_sha256`` is the SHA-256 of the folder's
manifest (one ``<sha256>  <relative path>`` line per file, sorted, as ``sha256sum`` prints
it); a testee gets the absolute path of a private copy of the folder (``input_dir``), and
for encode the path of an empty folder to write into (``output_dir``).

Only regular files and folders are taken: a vector folder holding a link, a FIFO or a
device is refused (MlfError), so copying a case never reads outside it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from mlf_spec.errors import MlfError
from mlf_spec.generated.formats import FOLDER_FORMATS  # the formats whose artifacts are folders

#: the request keys (and one-shot arguments) that carry a folder's path
INPUT_DIR, OUTPUT_DIR = "input_dir", "output_dir"
#: the most files and bytes a case folder may hold (a vector is small; a bigger one is a mistake)
MAX_FILES, MAX_BYTES = 4096, 1 << 30


def is_folder_format(fmt: str) -> bool:
    """Whether artifacts of ``fmt`` are folders (tensor-cache)."""
    return fmt in FOLDER_FORMATS


#: the deepest nesting of folders a case folder may have
MAX_DEPTH = 64


def read_files(root: Path) -> dict[str, bytes]:
    """The files below ``root`` as relative path (``/`` between folders) -> bytes; MlfError
    for a link or anything that is not a regular file or folder, a folder nested deeper
    than :data:`MAX_DEPTH`, or a folder too big (the sizes are taken before a byte is read;
    a file that grows while it is read is cut at the cap and refused)."""
    out: dict[str, bytes] = {}
    total = 0
    if not root.is_dir() or root.is_symlink():
        raise MlfError("not a folder (a folder-shaped case's input is a folder next to the case file)", file=str(root))
    too_big = f"a case folder holds at most {MAX_FILES} files and {MAX_BYTES} bytes"
    pending: list[tuple[Path, int]] = [(root, 0)]  # iterative: a deep tree costs no recursion
    while pending:
        folder, depth = pending.pop()
        with os.scandir(folder) as it:
            entries = sorted(it, key=lambda e: e.name)
        for entry in entries:
            p = Path(entry.path)
            st = entry.stat(follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                if depth + 1 > MAX_DEPTH:
                    raise MlfError(f"a case folder is nested at most {MAX_DEPTH} folders deep", file=str(root))
                pending.append((p, depth + 1))
                continue
            if not stat.S_ISREG(st.st_mode):
                raise MlfError("a case folder holds only regular files and folders (no links)", file=str(p))
            total += st.st_size
            if len(out) + 1 > MAX_FILES or total > MAX_BYTES:
                raise MlfError(too_big, file=str(root))
            data = _read_regular(p, st.st_size + 1)
            if len(data) != st.st_size:
                raise MlfError("a file of the case folder changed size while it was read", file=str(p))
            out[p.relative_to(root).as_posix()] = data
    return out


def _read_regular(path: Path, limit: int) -> bytes:
    """At most ``limit`` bytes of the regular file ``path``, opened without following a
    link and without blocking (a FIFO put in its place is refused, never waited on)."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise MlfError(f"cannot read: {exc.strerror}", file=str(path)) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise MlfError("not a regular file", file=str(path))
        chunks, got = [], 0
        while got < limit:
            chunk = os.read(fd, min(1 << 22, limit - got))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_regular(path: str | os.PathLike[str], limit: int = MAX_BYTES) -> bytes:
    """The bytes of the regular file ``path`` (a case's input): MlfError for anything else
    (a FIFO, a device, a folder: never blocks) or a file larger than ``limit``."""
    p = Path(path)
    data = _read_regular(p, limit + 1)
    if len(data) > limit:
        raise MlfError(f"the file is larger than the {limit} bytes mlf-spec reads here", file=str(p))
    return data


def remove_tree(root: str | os.PathLike[str]) -> None:
    """Remove ``root`` and everything below it, however deep (each folder below the first
    level is first moved up to ``root``, so no path grows long and nothing recurses);
    folders left without permissions are given them back. Errors are ignored, as
    ``shutil.rmtree(ignore_errors=True)`` does."""
    top = os.fspath(root)
    order: list[str] = []
    pending = [top]
    n = 0
    while pending:
        folder = pending.pop()
        try:
            os.chmod(folder, 0o700)
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    if folder == top:
                        pending.append(entry.path)
                        continue
                    while True:
                        n += 1
                        moved = os.path.join(top, f".mlf-rm-{n}")
                        if not os.path.lexists(moved):
                            break
                    os.rename(entry.path, moved)
                    pending.append(moved)
                else:
                    os.unlink(entry.path)
            except OSError:
                pass
        order.append(folder)
    for folder in reversed(order):
        try:
            os.rmdir(folder)
        except OSError:
            pass
    if os.path.lexists(top):  # what could not be moved (another file system below): the usual way
        shutil.rmtree(top, ignore_errors=True)


def manifest(files: Mapping[str, bytes]) -> str:
    """The folder's manifest: ``<sha256>  <path>`` per file, sorted by the path's UTF-8 bytes."""
    return "".join(f"{hashlib.sha256(files[rel]).hexdigest()}  {rel}\n"
                   for rel in sorted(files, key=lambda r: r.encode("utf-8")))


def folder_sha256(files: Mapping[str, bytes]) -> str:
    """The ``input_sha256`` of a folder: the SHA-256 of its manifest."""
    return hashlib.sha256(manifest(files).encode("utf-8")).hexdigest()


def write_files(root: Path, files: Mapping[str, bytes]) -> None:
    """Write ``files`` (relative path -> bytes) below ``root`` (which exists); MlfError for a
    path that is absolute or climbs with ``..``."""
    for rel, data in files.items():
        parts = rel.split("/")
        if not rel or rel.startswith("/") or any(p in ("", ".", "..") for p in parts) or "\\" in rel:
            raise MlfError(f"not a relative path inside the folder: {rel!r}", file=str(root))
        dest = root.joinpath(*parts)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data)


def _scratch_base() -> str | None:
    """Where private copies go: memory-backed /dev/shm where it is writable and TMPDIR is not
    set (a case folder is a few KiB; making and removing it on a disk costs ~7 ms, which
    would dominate a case), else the usual temporary folder."""
    if "TMPDIR" not in os.environ and os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK | os.X_OK):
        return "/dev/shm"
    return None


@contextmanager
def scratch(prefix: str = "mlf-conf-") -> Iterator[Path]:
    """A private temporary folder, removed (whatever is in it) when the block ends."""
    base = Path(tempfile.mkdtemp(prefix=prefix, dir=_scratch_base()))
    try:
        yield base
    finally:
        remove_tree(base)


@contextmanager
def private_copy(files: Mapping[str, bytes], name: str) -> Iterator[Path]:
    """A fresh copy of a case folder, named ``name`` (the vector folder's own name, so that a
    ``dataPath`` climbing out with ``../<name>/`` and back finds the shard as it would beside
    the vector) alone in a private temporary folder; removed when the block ends, so that a
    testee can neither change the vectors nor leave anything behind."""
    with scratch() as base:
        root = base / name
        root.mkdir()
        write_files(root, files)
        yield root


def read_output(root: Path) -> dict[str, bytes]:
    """What a testee wrote into its ``output_dir`` (MlfError for links or special files)."""
    return read_files(root)


__all__ = ["FOLDER_FORMATS", "INPUT_DIR", "MAX_BYTES", "MAX_FILES", "OUTPUT_DIR", "folder_sha256", "is_folder_format",
           "manifest", "private_copy", "read_files", "read_output", "read_regular", "remove_tree", "scratch", "write_files"]
