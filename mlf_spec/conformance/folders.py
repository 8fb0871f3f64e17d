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

#: the formats whose artifacts are folders
FOLDER_FORMATS: frozenset[str] = frozenset({"tensor-cache"})
#: the request keys (and one-shot arguments) that carry a folder's path
INPUT_DIR, OUTPUT_DIR = "input_dir", "output_dir"
#: the most files and bytes a case folder may hold (a vector is small; a bigger one is a mistake)
MAX_FILES, MAX_BYTES = 4096, 1 << 30


def is_folder_format(fmt: str) -> bool:
    """Whether artifacts of ``fmt`` are folders (tensor-cache)."""
    return fmt in FOLDER_FORMATS


def read_files(root: Path) -> dict[str, bytes]:
    """The files below ``root`` as relative path (``/`` between folders) -> bytes; MlfError
    for a link or anything that is not a regular file or folder, or a folder too big."""
    out: dict[str, bytes] = {}
    total = 0
    if not root.is_dir() or root.is_symlink():
        raise MlfError("not a folder (a folder-shaped case's input is a folder next to the case file)", file=str(root))
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in sorted(dirnames + filenames):
            p = Path(dirpath) / name
            mode = os.lstat(p).st_mode
            if stat.S_ISDIR(mode):
                continue
            if not stat.S_ISREG(mode):
                raise MlfError("a case folder holds only regular files and folders (no links)", file=str(p))
            rel = p.relative_to(root).as_posix()
            out[rel] = p.read_bytes()
            total += len(out[rel])
            if len(out) > MAX_FILES or total > MAX_BYTES:
                raise MlfError(f"a case folder holds at most {MAX_FILES} files and {MAX_BYTES} bytes", file=str(root))
    return out


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
        shutil.rmtree(base, ignore_errors=True)


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
           "manifest", "private_copy", "read_files", "read_output", "scratch", "write_files"]
