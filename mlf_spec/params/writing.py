"""Writing .params files: the bytes TVM's ``save_param_dict`` writes, headers from the
generated writer and tensor data as the arrays' own memory (no copy), to bytes, into a buffer
or to a file by atomic rename."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from mlf_spec._io import atomic_write_chunks
from mlf_spec.errors import MlfError, UnsupportedError
from mlf_spec.generated.params_fast import new_params_file, write_params_file
from mlf_spec.generated.tensor_fast import TensorRecord, new_tensor_record

from . import dtypes as _dt
from .index import gc_paused
from .models import ParamsFile, StoredTensor


def _as_record_and_data(name: str, value: Any, d: _dt.Dialect) -> tuple[TensorRecord, Any]:
    if isinstance(value, StoredTensor):
        dt = value.dtype
        rec = new_tensor_record(dtype_code=dt.code, dtype_bits=dt.bits, dtype_lanes=dt.lanes, shape=value.shape)
        nbytes = memoryview(value.data).nbytes
        if nbytes != rec.data_byte_size:
            raise UnsupportedError(f"stored tensor {name!r} has {nbytes} bytes, needs {rec.data_byte_size}")
        return rec, value.data
    arr = value if type(value) is np.ndarray else np.asarray(value)
    t = arr.dtype
    if t.byteorder == ">" or (t.byteorder == "=" and _BIG_ENDIAN_HOST and t.itemsize > 1):
        arr = arr.astype(t.newbyteorder("<"))
    if not arr.flags.c_contiguous:
        arr = np.ascontiguousarray(arr)
    code, bits, lanes = _dt.from_numpy(arr.dtype, d)
    rec = new_tensor_record(dtype_code=code, dtype_bits=bits, dtype_lanes=lanes, shape=arr.shape)
    return rec, _buffer_of(arr)


_BIG_ENDIAN_HOST = sys.byteorder == "big"
_EXPORTS_BUFFER: dict[np.dtype, bool] = {}


def _buffer_of(arr: np.ndarray) -> Any:
    """A buffer over a C-contiguous array's bytes: the array itself where NumPy exports
    a buffer for its dtype, else a uint8 view (ml_dtypes types such as bfloat16)."""
    t = arr.dtype
    ok = _EXPORTS_BUFFER.get(t)
    if ok is None:
        try:
            memoryview(np.zeros(1, t))
            ok = True
        except (ValueError, TypeError):
            ok = False
        _EXPORTS_BUFFER[t] = ok
    if ok:
        return arr
    return arr.reshape(-1).view(np.uint8)


def _chunks(params: Mapping[str, Any] | ParamsFile, dialect: str | _dt.Dialect | None,
            sizes: list[int] | None = None) -> list[Any]:
    """The file as a list of buffers: headers from the generated writer, data as the
    arrays' own memory (no copy)."""
    if isinstance(params, ParamsFile):
        d = _dt.dialect(dialect) if dialect is not None else params.dialect
        items = [(n, params._value(i), r) for i, (n, r) in enumerate(zip(params._names, params._records))]
        reserved, trailing = params.reserved, params.trailing
    else:
        d = _dt.dialect(dialect)
        items = [(n, v, None) for n, v in params.items()]
        reserved, trailing = 0, b""
    names: list[str] = []
    records: list[TensorRecord] = []
    datas: list[Any] = []
    templates: dict[tuple, TensorRecord] = {}  # (dtype, shape) -> record: one per distinct tensor type
    ndarray = np.ndarray
    for name, value, original in items:
        if original is not None:
            # unchanged since it was read: keep the record's header exactly (reserved, device id)
            rec, data = original, (_buffer_of(value) if type(value) is ndarray else value.data)
        elif type(value) is ndarray and value.flags.c_contiguous and value.dtype.byteorder != ">" and not _BIG_ENDIAN_HOST:
            key = (value.dtype, value.shape)
            rec = templates.get(key)
            if rec is None:
                rec = templates[key] = _as_record_and_data(name, value, d)[0]
            data = _buffer_of(value)
        else:
            rec, data = _as_record_and_data(name, value, d)
        names.append(name)
        records.append(rec)
        datas.append(data)
    if sizes is not None:
        sizes.append(sum(r.data_byte_size for r in records))
    out: list[Any] = []
    payloads = iter(datas)  # the writer asks for payloads in record order
    write_params_file(out.append, new_params_file(names=names, arrays=records, reserved=reserved),
                      lambda _field, _rec: next(payloads))
    if trailing:
        out.append(trailing)
    return out


def dumps(params: Mapping[str, Any] | ParamsFile, *, dialect: str | _dt.Dialect | None = None) -> bytes:
    """The .params bytes TVM writes for ``params`` (name -> NumPy array or StoredTensor).
    A ParamsFile from ``load`` is written back byte for byte. ``dialect`` picks the dtype
    codes (default: the ParamsFile's own, else the newest TVM)."""
    with gc_paused():
        return b"".join(_chunks(params, dialect))


def dumps_into(params: Mapping[str, Any] | ParamsFile, buffer: Any, *,
               dialect: str | _dt.Dialect | None = None) -> int:
    """Write the .params bytes into the writable ``buffer`` (a bytearray, mmap or numpy
    uint8 array you reuse); return the number of bytes written. Raises MlfError if the
    buffer is too small (``nbytes(params)`` tells the size)."""
    chunks = _chunks(params, dialect)
    dst = memoryview(buffer).cast("B") if memoryview(buffer).format != "B" else memoryview(buffer)
    pos = 0
    for c in chunks:
        m = memoryview(c)
        n = m.nbytes
        if pos + n > dst.nbytes:
            raise MlfError(f"buffer of {dst.nbytes} bytes is too small; {sum(memoryview(x).nbytes for x in chunks)} needed")
        dst[pos:pos + n] = m.cast("B") if (m.ndim != 1 or m.format != "B") else m
        pos += n
    return pos


def nbytes(params: Mapping[str, Any] | ParamsFile, *, dialect: str | _dt.Dialect | None = None) -> int:
    """Size in bytes of the .params file ``params`` would be written as."""
    return sum(memoryview(c).nbytes for c in _chunks(params, dialect))


def save(params: Mapping[str, Any] | ParamsFile, path: str | os.PathLike, *,
         dialect: str | _dt.Dialect | None = None, durable: bool = False) -> None:
    """Write ``params`` to ``path`` via a temporary file renamed into place, so a failed
    write never leaves a partial file or destroys an existing one. Large tensors are
    written from the arrays' own memory; small files go out in one write. ``durable``
    fsyncs before the rename."""
    payload: list[int] = []
    with gc_paused():
        chunks = _chunks(params, dialect, payload)
    if len(chunks) > 64 and payload[0] < _JOIN_BELOW:
        chunks = [b"".join(chunks)]  # many small tensors: one C-level join beats many writes
    atomic_write_chunks(Path(path), chunks, durable=durable)


_JOIN_BELOW = 16 << 20
