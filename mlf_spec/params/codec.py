"""Read and write TVM ``.params`` files (what ``tvm.runtime.save_param_dict`` writes).

    >>> from mlf_spec import params
    >>> data = params.dumps({"w": np.ones((2, 3), "float32")})
    >>> params.loads(data)["w"].shape
    (2, 3)

``load``/``loads`` return a :class:`ParamsFile`, an ordered mapping name -> array whose
tensor data was copied once, straight from the input into aligned arrays. ``open``
returns a :class:`LazyParams` over an mmap: an index built from the headers alone and
zero-copy views on request. ``save``/``dumps`` write TVM's exact bytes from the arrays'
own memory. The layout itself comes from spec/binary/params.yaml through the generated
reader and writer; this module adds dtypes, NumPy and files.

Tensors whose bytes NumPy cannot hold faithfully (sub-byte types, vector lanes, handles,
custom or unknown codes) are returned as :class:`StoredTensor`: their stored bytes plus
their DLDataType, never reinterpreted.
"""
from __future__ import annotations

import functools
import gc
import mmap
import os
from typing import IO, Any

import numpy as np

from mlf_spec._io import describe, open_regular_fd, pread_into, read_source
from mlf_spec.errors import MlfError
from mlf_spec.generated.params_fast import PARAMS_MAGIC as PARAMS_MAGIC
from mlf_spec.generated.params_fast import read_params_file as read_params_file
from mlf_spec.generated.tensor_fast import TensorRecord
from mlf_spec.generated.tensor_fast import read_tensor_record_heads as read_tensor_record_heads
from mlf_spec.generated.tensor_fast import start_of_tensor_record as start_of_tensor_record

from . import accel as _accel
from . import dtypes as _dt
from .index import (
    FIRST,
    ONE_DTYPE,
    Index,
    build_index,
    choose_walked,
    data_max,
    gc_paused,
    pread,
    pread_index,
    shrank,
)
from .index import max_bytes as max_bytes
from .models import LazyParams as LazyParams
from .models import ParamsFile, Rows, StoredTensor, numpy_holds
from .models import Tensor as Tensor
from .models import TensorInfo as TensorInfo
from .models import json_name as json_name
from .models import name_bytes as name_bytes
from .writing import dumps as dumps
from .writing import dumps_into as dumps_into
from .writing import nbytes as nbytes
from .writing import save as save

Source = str | os.PathLike | bytes | bytearray | memoryview | IO[bytes]
ALIGNMENT = 64
_PREAD_MIN = 1 << 20  # tensors this large are read with pread, not copied out of the mmap

# the names before the index and the models had their own modules (conformance/canonical.py
# and tests read some of them)
_Index, _index, _pread_index, _pread, _FIRST, _gc_paused = Index, build_index, pread_index, pread, FIRST, gc_paused


def load(source: Source, *, dialect: str | _dt.Dialect | None = None, strict: bool = True,
         mapped: bool = True) -> ParamsFile:
    """Read a .params file from a path, bytes or a binary file object.

    Tensor data is copied once, from the input into one 64-byte-aligned arena, and the
    arrays are views of that arena (writable, independent of the input). ``dialect``
    names the TVM version whose dtype codes apply (default: detected; see
    ``ParamsFile.choice``). With ``strict`` (default) a code the dialect does not define
    is an error; without, such tensors come back as StoredTensor. ``mapped=False`` reads a
    path by pread alone, never mapping it (a file another process truncates meanwhile is
    then an MlfError, "file shrank while it was being read", not SIGBUS). Raises MlfError.
    """
    name = describe(source)
    if not mapped and isinstance(source, (str, os.PathLike)):
        file_fd = open_regular_fd(source)
        try:
            size = os.fstat(file_fd).st_size
            with gc_paused():
                if not size:
                    build_index(b"", 0, dialect, strict)  # names the error
                idx = pread_index(file_fd, size, dialect, strict, True)
                assert idx is not None
                return _materialise(idx, None, size, file_fd)
        except MlfError as exc:
            raise exc.with_file(name) from None
        finally:
            os.close(file_fd)
    try:
        with read_source(source) as (buf, size, fd), gc_paused():
            idx = build_index(buf, size, dialect, strict)
            return _materialise(idx, buf, size, fd)
    except MlfError as exc:
        raise exc.with_file(name) from None


def loads(
    data: bytes | bytearray | memoryview, *, dialect: str | _dt.Dialect | None = None, strict: bool = True
) -> ParamsFile:
    """``load`` from bytes."""
    return load(memoryview(data), dialect=dialect, strict=strict)


def _materialise(idx: Index, buf: Any, size: int, fd: int | None) -> ParamsFile:
    d = idx.choice.dialect
    lookup = _dt.lookup
    runs = idx.runs
    # Arena layout: every tensor starts on an ALIGNMENT boundary.
    total = 0
    for r, m, _ in runs:
        total += -(-r.data_byte_size // ALIGNMENT) * ALIGNMENT * m
    raw = np.empty(total + ALIGNMENT, np.uint8)
    shift = (-raw.ctypes.data) % ALIGNMENT
    arena = raw[shift:shift + total]
    dst = memoryview(arena)
    src = (memoryview(buf) if not isinstance(buf, memoryview) else buf) if buf is not None else None
    values: list[Any] = []
    records: list[TensorRecord | None] = []
    new_array = np.ndarray
    start = 0
    i = 0  # index of the run's first tensor in the file
    for r, m, stride in runs:
        dt = lookup(d, r.dtype_code, r.dtype_bits, r.dtype_lanes)
        n = r.data_byte_size
        step = -(-n // ALIGNMENT) * ALIGNMENT
        if m >= 8 and 0 < n < _PREAD_MIN:
            # a run of identical headers: one strided copy; the arrays are made on first use
            block = new_array((m, n), np.uint8, arena, start, (step, 1))
            if src is not None:
                block[...] = new_array((m, n), np.uint8, buf, r.data_offset, (stride, 1))
            else:  # by pread, some rows at a time
                per_read = max(1, _PREAD_MIN // stride)
                assert fd is not None
                for j in range(0, m, per_read):
                    k = min(per_read, m - j)
                    span = pread(fd, stride * (k - 1) + n, r.data_offset + j * stride)
                    block[j:j + k] = new_array((k, n), np.uint8, span, 0, (stride, 1))
            if dt.numpy is not None:  # n > 0 here, so the shape fits the file and NumPy
                itemsize = dt.numpy.itemsize
                inner = tuple(np.cumprod((1,) + r.shape[:0:-1])[::-1] * itemsize) if r.shape else ()
                rows = Rows(new_array((m, *r.shape), dt.numpy, arena, start, (step, *inner)), i)
                values += [rows] * m
            else:
                values.extend(StoredTensor(dt, r.shape, row) for row in block)
        else:
            fits = dt.numpy is not None and (n or numpy_holds(dt, r.shape))  # n > 0: the shape fits the file
            at = r.data_offset
            for j in range(m):
                s0 = start + j * step
                if n:
                    if fd is not None and (n >= _PREAD_MIN or src is None):
                        pread_into(fd, dst[s0:s0 + n], at)
                    else:
                        assert src is not None
                        dst[s0:s0 + n] = src[at:at + n]
                values.append(new_array(r.shape, dt.numpy, arena, s0) if fits else StoredTensor(dt, r.shape, arena[s0:s0 + n]))
                at += stride
        # one record object for the run: writing it back needs its header, not its offset
        records += [r] * m
        start += step * m
        i += m
    if src is not None:
        trailing = bytes(src[idx.end:size])
    else:
        assert fd is not None
        trailing = pread(fd, size - idx.end, idx.end)
    return ParamsFile._of_columns(idx.names, values, records, idx.reserved, trailing, idx.choice, idx.by_name)


def open(source: Source, *, dialect: str | _dt.Dialect | None = None, strict: bool = False,  # noqa: A001
         mapped: bool = True) -> LazyParams:
    """Open a .params file lazily: build the index (name, dtype, shape, offset, nbytes)
    from the headers without touching tensor bytes; arrays are zero-copy views on request.
    A path's headers are read by pread and the file is memory-mapped on the first data
    access; with ``mapped=False`` it is never mapped, and data is read by pread (copies:
    safe when another process may truncate the file). Bytes are used in place. Raises
    MlfError."""
    if isinstance(source, (str, os.PathLike)):
        name = os.fspath(source)  # (what describe says of a path)
        walker = _accel.walker()
        opened: tuple[int, int, tuple | None] | None = None
        walked = False  # whether the compiled walker has read this file's headers (or refused them)
        if walker is not None:
            try:  # opens the path as open_regular_fd does and walks it, in one call
                opened = walker.open_path(source, not mapped)
            except walker.Refusal:
                walked = True  # (it closed the file) the generated reader below names the error
        if opened is None:  # not walked, or refused: the error (if any) comes from here
            fd = open_regular_fd(source)
        else:
            fd, size, got = opened
            walked = True
        mm: mmap.mmap | None = None
        try:
            if opened is None:
                size = os.fstat(fd).st_size
            elif got is not None:  # the compiled walk makes few objects: no GC pause needed
                magic, reserved, names, by_name, packed, keys, end = got
                # the common case inline (few Python calls: each costs microseconds in a cold
                # process): no dialect given, not strict, one dtype whose choice is remembered
                choice = (ONE_DTYPE.get(next(iter(keys))) if dialect is None and not strict and len(keys) == 1
                          else None)
                if choice is not None:
                    walked_idx = Index(names, None, magic, reserved, end, choice,
                                        functools.partial(walker.unpack, packed), by_name)
                else:
                    top = lambda v, at: data_max(fd, at, v[-1])  # noqa: E731
                    walked_idx = choose_walked(walker, got, dialect, strict, top)
                return LazyParams(walked_idx, None, size, fd, name, mapped)
            was_enabled = gc.isenabled()
            gc.disable()  # many small acyclic objects: a collection pass would cost more than reading them
            try:
                # (a file the compiled walker opened and did not walk: empty, or small tensors read as runs)
                idx = pread_index(fd, size, dialect, strict, not mapped, walked) if size and opened is None else None
                if idx is not None:
                    return LazyParams(idx, None, size, fd, name, mapped)
                # small tensors: their headers are read as runs over a mapping
                mm = mmap.mmap(fd, 0, access=mmap.ACCESS_READ) if size else None
                if mm is not None and len(mm) < size:
                    raise shrank(len(mm))
                idx = build_index(mm if mm is not None else b"", size, dialect, strict)
                return LazyParams(idx, mm, size, fd, name, mapped, mm)
            finally:
                if was_enabled:
                    gc.enable()
        except BaseException as exc:
            if mm is not None:
                mm.close()
            os.close(fd)
            if isinstance(exc, MlfError):
                raise exc.with_file(name) from None
            raise
    name = describe(source)
    with read_source(source) as (buf, size, _):
        try:
            idx = build_index(buf, size, dialect, strict)
        except MlfError as exc:
            raise exc.with_file(name) from None
        return LazyParams(idx, buf, size, None, name)


__all__ = [
    "json_name",
    "max_bytes",
    "name_bytes",
    "dumps_into",
    "nbytes",
    "ALIGNMENT",
    "LazyParams",
    "ParamsFile",
    "StoredTensor",
    "TensorInfo",
    "PARAMS_MAGIC",
    "dumps",
    "load",
    "loads",
    "open",
    "save",
]

