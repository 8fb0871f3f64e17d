"""Reading and writing tensor caches: :func:`open` reads the index and checks it against the
shard sizes (no shard byte is read; shards are mapped on first use), arrays are loaded the
way TVM's loader returns them; :func:`write` writes TVM's layout byte for byte
(``tvm.contrib.tvmjs.dump_tensor_cache``) into a new folder, atomically."""

from __future__ import annotations

import builtins
import contextlib
import hashlib
import mmap
import os
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mlf_spec._io import pread_into as _pread_into
from mlf_spec.errors import ConstraintError, MalformedError, MlfError, UnknownDtypeError, UnsupportedError

from . import dtypes, encodings, rules
from .folder import Folder, UnsafePathError, locate
from .index import B16_NAMES, INDEX_NAMES, LATEST, CacheIndex, TensorEntry, is_unicode, parse, shown
from .planning import b16_records as _b16_records
from .planning import index_text, plan, write_indexes, write_shard
from .planning import shard_chunks as _shard_chunks

#: Shards open at once in one opened cache (a least-recently-used set): well under the usual
#: soft limit of 1,024 open files, whatever the number of shards.
MAX_OPEN = 64

#: An index larger than this (bytes) is refused before it is read: opening one costs about
#: twice its size (docs/tensor-cache.md, "Memory").
MAX_INDEX = 256 << 20


class LazyCache:
    """An opened cache: the index, the tensors by name (the last of a repeated name, as the
    loaders keep it), shard sizes; data is read only when an array or raw bytes are asked for."""

    def __init__(self, folder: Path, index_name: str, index: CacheIndex, handle: Folder) -> None:
        self.folder, self.index_name, self.index = folder, index_name, index
        self._folder = handle
        self._fds: OrderedDict[int, int] = OrderedDict()  # open shards, least recently used first
        self._absent: set[int] = set()  # shards whose file does not exist
        self._seen: dict[int, tuple[int, int, int]] = {}  # (device, inode, size) when first opened
        self._maps: dict[int, mmap.mmap | None] = {}
        self.tensors: Sequence[TensorEntry] = index.tensors
        self.by_name: Mapping[str, TensorEntry] = index.tensors.by_name()

    # -- shards -------------------------------------------------------------------------
    def _fd(self, i: int) -> int | None:
        """Shard ``i``'s descriptor, opened on first use. At most :data:`MAX_OPEN` shards are
        open at once (the least recently used is closed): a cache of more shards than the
        process may open files is read all the same. A shard opened again must be the file
        it was (device, inode and size), else it changed while the cache was read."""
        fd = self._fds.get(i)
        if fd is not None:
            self._fds.move_to_end(i)
            return fd
        if i in self._absent:
            return None
        shard = self.index.shards[i]
        if not is_unicode(shard.data_path):
            raise self.index.error(f"a dataPath that is not valid Unicode (a lone surrogate): "
                                   f"{shown(shard.data_path)!r}", f"{shard.path}.dataPath", UnsafePathError)
        if shard.data_path.endswith("/"):  # the loaders' open() fails (ENOTDIR): no such file
            self._absent.add(i)
            return None
        try:
            opened = self._folder.open(shard.data_path, field=f"{shard.path}.dataPath")
        except UnsafePathError as exc:  # name the index, the JSON path and its offset
            raise self.index.error(f"{exc.message}: {shard.data_path!r}", f"{shard.path}.dataPath",
                                   UnsafePathError) from None
        if opened is None:
            if i in self._seen:
                raise MlfError("the shard was removed while the cache was read", file=str(self.folder / shard.data_path))
            self._absent.add(i)
            return None
        st = os.fstat(opened)
        ident = (st.st_dev, st.st_ino, st.st_size)
        if self._seen.setdefault(i, ident) != ident:
            os.close(opened)
            raise MlfError("the shard changed while the cache was read", file=str(self.folder / shard.data_path))
        while len(self._fds) >= MAX_OPEN:
            os.close(self._fds.popitem(last=False)[1])
        self._fds[i] = opened
        return opened

    def shard_size(self, i: int) -> int | None:
        """The size of shard ``i``'s file (None: it does not exist)."""
        fd = self._fd(i)
        return None if fd is None else os.fstat(fd).st_size

    def _map(self, i: int) -> mmap.mmap | None:
        if i not in self._maps:
            fd = self._fd(i)
            size = 0 if fd is None else os.fstat(fd).st_size
            self._maps[i] = mmap.mmap(fd, size, access=mmap.ACCESS_READ) if fd is not None and size else None
        return self._maps[i]

    def shard_blocks(self, i: int, block: int = 1 << 22) -> Iterator[memoryview]:
        """The bytes of shard ``i`` in blocks, copies read by pread one at a time (never
        mapped: a shard that another process truncates meanwhile is an MlfError, not SIGBUS)."""
        fd = self._fd(i)
        if fd is None:
            return
        size = os.fstat(fd).st_size
        for start in range(0, size, block):
            yield self._pread(i, start, min(block, size - start))

    def raw_blocks(self, t: TensorEntry | str, block: int = 1 << 22) -> Iterator[memoryview]:
        """The stored bytes of a tensor in blocks, read by pread as :meth:`shard_blocks`."""
        t = self._entry(t)
        self._require_in_shard(t)
        for start in range(0, t.nbytes, block):
            yield self._pread(t.shard, t.offset + start, min(block, t.nbytes - start))

    def _pread(self, i: int, offset: int, n: int) -> memoryview:
        fd = self._fd(i)
        assert fd is not None
        out = memoryview(bytearray(n))
        try:
            _pread_into(fd, out, offset)
        except MlfError as exc:
            raise exc.with_file(str(self.folder / self.index.shards[i].data_path)) from None
        return out

    def raw(self, t: TensorEntry | str) -> memoryview:
        """The stored bytes of a tensor, as a view of its shard's mapping (no copy). As with
        ``numpy.memmap``, touching it after another process truncated the shard raises
        SIGBUS; :meth:`raw_blocks` reads by pread instead."""
        t = self._entry(t)
        self._require_in_shard(t)
        m = self._map(t.shard)
        if m is None:
            return memoryview(b"")
        return memoryview(m)[t.offset:t.offset + t.nbytes]

    # -- arrays -------------------------------------------------------------------------
    def _entry(self, t: TensorEntry | str) -> TensorEntry:
        if isinstance(t, str):
            try:
                return self.by_name[t]
            except KeyError:
                raise KeyError(f"no tensor named {t!r} in the cache") from None
        return t

    def _require_in_shard(self, t: TensorEntry) -> None:
        size = self.shard_size(t.shard)
        shard = self.index.shards[t.shard]
        if size is None:
            raise self.index.error(f"shard file {shard.data_path!r} does not exist", f"{shard.path}.dataPath",
                                   MalformedError)
        if t.offset < 0 or t.nbytes < 0 or t.offset + t.nbytes > size:
            raise MlfError(f"bytes {t.offset}..{t.offset + t.nbytes} go past the shard's {size} bytes",
                           file=str(self.folder / shard.data_path), field=f"{t.path}.byteOffset", offset=t.offset)

    def decoded_dtype(self, t: TensorEntry | str) -> np.dtype:
        """The NumPy type of the array TVM's loader returns for the tensor."""
        t = self._entry(t)
        dt = dtypes.parse(t.dtype, self.index.version)
        if dt is None:
            raise self.index.error(f"dtype {shown(t.dtype)[:40]!r} is not a TVM dtype", f"{t.path}.dtype", UnknownDtypeError)
        if dt.numpy is None:
            raise self.index.error(f"dtype {t.dtype!r} has no NumPy type (TVM's Python loader cannot read it either); "
                                   "use raw() for its bytes", f"{t.path}.dtype", UnsupportedError)
        return dt.numpy

    def flat(self, t: TensorEntry | str) -> np.ndarray:
        """The tensor's elements as TVM's loader returns them, in C order, as a new 1-D array
        (f32-to-bf16 data decoded to float32): for any shape, also one that NumPy cannot hold
        (more than 64 extents, or no element beside an extent of 2^63-1), without allocating
        more than the elements."""
        t = self._entry(t)
        np_type = self.decoded_dtype(t)
        dt = dtypes.parse(t.dtype, self.index.version)
        assert dt is not None
        if any(d < 0 for d in t.shape):
            raise self.index.error(f"negative extent in shape {list(t.shape)[:8]}", f"{t.path}.shape", ConstraintError)
        want = rules.expected_nbytes(dt, t.format, t.shape)
        if want != t.nbytes:
            raise self.index.error(f"nbytes {t.nbytes} does not match the shape of {t.dtype} under {t.format}",
                                   f"{t.path}.nbytes", ConstraintError)
        self._require_in_shard(t)
        n = rules.numel(t.shape)
        out = np.empty(n, dtype=np_type)
        if t.nbytes == 0:
            return out
        fd = self._fd(t.shard)
        assert fd is not None
        if encodings.applies(t.format, t.dtype):
            words = np.empty(min(n, 1 << 20), dtype="<u2")
            done = 0
            while done < out.size:
                k = min(words.size, out.size - done)
                _pread_into(fd, words[:k].data.cast("B"), t.offset + 2 * done)
                encodings.bf16_to_f32(words[:k], out[done:done + k])
                done += k
        else:
            _pread_into(fd, out.view(np.uint8).data, t.offset)
        return out

    def array(self, t: TensorEntry | str) -> np.ndarray:
        """The tensor as TVM's loader returns it (``.numpy()``): a new C-contiguous array,
        f32-to-bf16 data decoded to float32, bfloat16 and float8 as ml_dtypes types.
        UnsupportedError for a shape NumPy cannot hold (:meth:`flat` reads it)."""
        t = self._entry(t)
        if len(t.shape) > rules.NUMPY_MAX_DIMS:
            raise self.index.error(f"a shape of {len(t.shape)} extents: NumPy holds at most {rules.NUMPY_MAX_DIMS}",
                                   f"{t.path}.shape", UnsupportedError)
        flat = self.flat(t)
        try:
            return flat.reshape(t.shape)
        except ValueError as exc:  # np: "array is too big" for [0, 2^63-1]
            raise self.index.error(f"NumPy cannot hold shape {list(t.shape)[:8]}: {exc}", f"{t.path}.shape",
                                   UnsupportedError) from None

    def arrays(self) -> dict[str, np.ndarray]:
        """Every tensor by name (a repeated name: the last one, as the loaders do)."""
        with _plain_pages():
            return {name: self.array(t) for name, t in self.by_name.items()}

    @property
    def metadata(self) -> Any:
        """The index's metadata (None when the key is missing)."""
        return self.index.metadata

    def problems(self, *, md5: bool = False) -> list[rules.Problem]:
        """Every broken rule (``md5``: also compare each shard's MD5, which reads all data)."""
        found = list(rules.structural(self))
        if md5:
            found += list(rules.md5_problems(self))
        return found

    def close(self) -> None:
        """Unmap the shards and close the files."""
        for m in self._maps.values():
            if m is not None:
                m.close()
        for fd in self._fds.values():
            os.close(fd)
        self._maps.clear()
        self._fds.clear()
        self._folder.close()

    def __enter__(self) -> LazyCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextlib.contextmanager
def _plain_pages() -> Iterator[None]:
    """NumPy asks for transparent huge pages on large arrays (madvise); on a machine whose
    memory is fragmented each first touch may then wait for the kernel to compact memory
    (measured: 0.9 to 6.5 s for 512 MiB with the advice, 1.5 to 1.9 s without, on a loaded
    machine). Loading a whole cache touches every page once: without the advice its time is
    steady. Private NumPy API; skipped where it does not exist."""
    import importlib

    advise: Callable[[bool], bool] | None = None
    for where in ("numpy._core.multiarray", "numpy.core.multiarray"):  # NumPy 2, then 1 (private, untyped)
        try:
            advise = vars(importlib.import_module(where)).get("_set_madvise_hugepage")
        except ImportError:
            continue
        if advise is not None:
            break
    if advise is None:
        yield
        return
    was = advise(False)
    try:
        yield
    finally:
        advise(was)


def open(path: str | os.PathLike[str], *, strict: bool = True, max_index: int = MAX_INDEX) -> LazyCache:  # noqa: A001
    """Open a cache folder or its index file. ``strict``: raise the first problem that stops
    TVM's loaders (a shard missing, shorter or longer; a record out of its shard; nbytes
    that disagree with shape and dtype; ...) as an :class:`MlfError` with file, JSON path
    and byte offset. Nothing is read from the shards and nothing outside the folder is opened.
    An index of more than ``max_index`` bytes is refused before it is read."""
    folder, name = locate(path)
    handle = Folder(folder)
    try:
        fd = handle.open(name)
        if fd is None:
            raise MlfError("no such file", file=str(folder / name))
        try:
            size = os.fstat(fd).st_size
            if size > max_index:
                raise MlfError(f"the index is {size} bytes, more than the {max_index} mlf-spec reads",
                               file=str(folder / name))
            with builtins.open(fd, "rb", closefd=False) as f:
                raw = f.read()
        finally:
            os.close(fd)
        import gc

        paused = gc.isenabled()
        gc.disable()  # many small objects, no cycles: collections would make the open O(n^2)-ish
        try:
            index = parse(raw, str(folder / name), name=name)
        finally:
            if paused:
                gc.enable()
        lazy = LazyCache(folder, name, index, handle)
    except BaseException:
        handle.close()
        raise
    if strict:
        refuse_fatal(lazy)
    return lazy


def refuse_fatal(lazy: LazyCache) -> None:
    """Raise the first problem of ``lazy`` that a loader refuses (rules.FATAL), as the error
    class the spec gives its rule, and close ``lazy`` then; return if there is none."""
    try:
        for p in lazy.problems():
            if p.code in rules.FATAL:
                cls = rules.error_type(p.code)
                if p.file is not None:
                    raise cls(p.message, file=p.file, field=p.path, offset=p.offset)
                raise lazy.index.error(p.message, p.path, cls)
    except BaseException:
        lazy.close()
        raise


def load(path: str | os.PathLike[str]) -> tuple[dict[str, np.ndarray], Any]:
    """``(arrays by name, metadata)`` as ``load_tensor_cache`` gives them (``.numpy()`` of each)."""
    with open(path) as lazy:
        return lazy.arrays(), lazy.metadata


# -- writing -----------------------------------------------------------------------------

def write(path: str | os.PathLike[str], params: Mapping[str, Any] | Iterable[tuple[str, Any]], *,
          encode_format: str | Mapping[str, str] = "f32-to-bf16", shard_cap_mb: float = 32, metadata: Any = None,
          version: int = LATEST, keep_empty: bool = True, b16: bool = True, replace: bool = False,
          update_if_exists: bool = False) -> CacheIndex:
    """Write a cache folder at ``path`` as dump_tensor_cache does (shards params_shard_<n>.bin
    of at most ``shard_cap_mb`` MiB, md5sum, the index ``tensor-cache.json`` for version 2 or
    ``ndarray-cache.json`` for 1, and the bf16 copy of the index when f32-to-bf16 applied).
    The folder is filled beside ``path`` and renamed in when complete; an existing non-empty
    folder is replaced only with ``replace``. With ``update_if_exists``, an existing cache is
    updated as ``dump_tensor_cache(..., update_if_exists=True)`` updates it (new tensors in new
    shards, known names overwritten in place, other files kept: :mod:`.update`), atomically
    too. Returns the index written."""
    from mlf_spec._io import atomic_directory

    if update_if_exists:
        from .update import update

        return update(path, params, encode_format=encode_format, shard_cap_mb=shard_cap_mb, metadata=metadata,
                      version=version, keep_empty=keep_empty, b16=b16, opener=open)

    if version not in INDEX_NAMES:
        raise UnsupportedError(f"cache version {version}: mlf-spec writes {sorted(INDEX_NAMES)}")
    items = params.items() if isinstance(params, Mapping) else params
    shards, triggered = plan(items, encode_format=encode_format, shard_cap_mb=shard_cap_mb, keep_empty=keep_empty)
    metadata = {} if metadata is None else metadata() if callable(metadata) else metadata
    records = []
    with atomic_directory(Path(path), replace=replace) as tmp:
        for i, entries in enumerate(shards):
            records.append(write_shard(tmp, f"params_shard_{i}.bin", entries))
        text = write_indexes(tmp, INDEX_NAMES[version], B16_NAMES[version] if triggered and b16 else None,
                             metadata, records)
    return parse(text.encode(), str(Path(path) / INDEX_NAMES[version]), name=INDEX_NAMES[version])


def render(params: Mapping[str, Any] | Iterable[tuple[str, Any]], *,
           encode_format: str | Mapping[str, str] = "f32-to-bf16",
           shard_cap_mb: float = 32, metadata: Any = None, version: int = LATEST, keep_empty: bool = True,
           b16: bool = True) -> dict[str, bytes]:
    """The files :func:`write` writes, in memory (file name -> bytes), for small caches
    (test vectors, strategies)."""
    if version not in INDEX_NAMES:
        raise UnsupportedError(f"cache version {version}: mlf-spec writes {sorted(INDEX_NAMES)}")
    items = params.items() if isinstance(params, Mapping) else params
    shards, triggered = plan(items, encode_format=encode_format, shard_cap_mb=shard_cap_mb, keep_empty=keep_empty)
    metadata = {} if metadata is None else metadata
    files: dict[str, bytes] = {}
    records = []
    for i, entries in enumerate(shards):
        data = b"".join(bytes(c) for c in _shard_chunks(entries))
        files[f"params_shard_{i}.bin"] = data
        records.append({"dataPath": f"params_shard_{i}.bin", "format": "raw-shard", "nbytes": len(data),
                        "records": [rec for rec, _, _ in entries],
                        "md5sum": hashlib.md5(data, usedforsecurity=False).hexdigest()})
    files[INDEX_NAMES[version]] = index_text(metadata, records).encode()
    if triggered and b16:
        files[B16_NAMES[version]] = index_text(metadata, _b16_records(records)).encode()
    return files


