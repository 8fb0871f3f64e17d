"""Opening the files of a cache folder without ever leaving it: every path component is
opened relative to the folder's descriptor with O_NOFOLLOW, so that a ``dataPath`` that is
absolute, climbs with ``..`` or passes through a symbolic link is refused before anything
outside the folder is opened; only regular files are read (a FIFO never blocks a read)."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from mlf_spec.errors import MlfError, UnsafeArchiveError, UnsupportedError

from .index import INDEX_NAMES, LATEST

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRFLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_FILEFLAGS = os.O_RDONLY | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)


class UnsafePathError(UnsafeArchiveError):
    """A dataPath that would leave the cache folder (absolute, ``..``, a symbolic link): the
    same hazard as an archive member escaping its root (conformance error class ``unsafe``)."""


def data_path_problem(data_path: str) -> str | None:
    """Why ``data_path`` may not be opened inside the folder, or None if it may."""
    if not data_path:
        return "an empty dataPath names no file"
    if "\x00" in data_path:
        return "a dataPath with a NUL character"
    if data_path.startswith("/") or (len(data_path) > 1 and data_path[1] == ":"):
        return "an absolute dataPath leaves the cache folder"
    if ".." in data_path.split("/") or ".." in data_path.split("\\"):
        return "a dataPath with '..' leaves the cache folder"
    return None


def locate(path: str | os.PathLike[str]) -> tuple[Path, str]:
    """The cache folder and index file name of ``path`` (a folder: tensor-cache.json, else
    ndarray-cache.json; a file: itself)."""
    p = Path(path)
    if p.is_dir():
        for version in sorted(INDEX_NAMES, reverse=True):
            if (p / INDEX_NAMES[version]).is_file():
                return p, INDEX_NAMES[version]
        raise MlfError(f"no {INDEX_NAMES[LATEST]} or {INDEX_NAMES[1]} in this folder: not a tensor cache", file=str(p))
    if not p.exists():
        raise MlfError("no such file or folder", file=str(p))
    return (p.parent if str(p.parent) else Path(".")), p.name


class Folder:
    """A cache folder opened once; files inside it are opened relative to it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self.fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
        except OSError as exc:
            raise MlfError(f"cannot open the cache folder: {exc.strerror}", file=str(path)) from None

    def close(self) -> None:
        """Close the folder's descriptor."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def open(self, rel: str, *, field: str | None = None) -> int | None:
        """A read descriptor of the regular file ``rel`` inside the folder, None if it does
        not exist; :class:`UnsafePathError` if it would leave the folder or is not a file."""
        where = str(self.path / rel)
        problem = data_path_problem(rel)
        if problem:
            raise UnsafePathError(problem, file=where, field=field)
        parts = [p for p in rel.split("/") if p not in ("", ".")]
        if not parts:
            raise UnsafePathError("the dataPath names the folder itself", file=where, field=field)
        fd = self.fd
        opened: list[int] = []
        try:
            for comp in parts[:-1]:
                fd = os.open(comp, _DIRFLAGS, dir_fd=fd)
                opened.append(fd)
            fd = os.open(parts[-1], _FILEFLAGS, dir_fd=fd)
        except OSError as exc:
            if exc.errno == errno.ENOENT:
                return None
            if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                raise UnsafePathError("the dataPath passes through a symbolic link (or a non-folder); "
                                      "mlf-spec opens nothing outside the cache folder", file=where, field=field) from None
            raise MlfError(f"cannot open: {exc.strerror}", file=where, field=field) from None
        finally:
            for d in opened:
                os.close(d)
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            raise UnsupportedError("not a regular file", file=where, field=field)
        return fd
