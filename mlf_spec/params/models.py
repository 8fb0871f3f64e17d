"""What a .params file reads as: :class:`StoredTensor` (a tensor kept as its stored bytes),
:class:`TensorInfo` (an index entry), :class:`ParamsFile` (the tensors, copied, and everything
else in the file for a byte-exact write back) and :class:`LazyParams` (the index over an mmap or
pread, with zero-copy views on request)."""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterator, KeysView, Mapping, MutableMapping
from operator import itemgetter
from typing import TYPE_CHECKING, Any

import numpy as np

from mlf_spec.errors import MlfError, UnsupportedError
from mlf_spec.generated._fastlib import Record
from mlf_spec.generated.tensor_fast import TensorRecord, new_tensor_record

from . import dtypes as _dt
from .index import H_KEY, H_SHAPE, H_TAIL, Index, pread


class StoredTensor:
    """A tensor kept as its stored bytes plus its DLDataType (sub-byte, vector-lane,
    handle, custom and unknown dtypes, and empty tensors whose other dimensions multiply
    past what a NumPy array can describe). ``data`` holds ``numel * ceil(bits/8)`` bytes."""

    __slots__ = ("dtype", "shape", "data")

    def __init__(self, dtype: _dt.DType, shape: tuple[int, ...], data: bytes | memoryview | np.ndarray) -> None:
        self.dtype, self.shape, self.data = dtype, shape, data

    def __repr__(self) -> str:
        return f"StoredTensor({self.dtype.name}, shape={self.shape}, nbytes={self.nbytes})"

    @property
    def nbytes(self) -> int:
        """Size of the stored data in bytes."""
        return memoryview(self.data).nbytes

    @classmethod
    def of(
        cls,
        code: int,
        bits: int,
        lanes: int,
        shape: tuple[int, ...],
        data: Any,
        dialect: str | _dt.Dialect | None = None,
    ) -> StoredTensor:
        """A stored tensor from raw parts (checks the byte count)."""
        dt = _dt.lookup(_dt.dialect(dialect), code, bits, lanes)
        t = cls(dt, tuple(int(s) for s in shape), data)
        expected = new_tensor_record(dtype_code=code, dtype_bits=bits, dtype_lanes=lanes, shape=t.shape).data_byte_size
        if t.nbytes != expected:
            raise UnsupportedError(f"stored tensor has {t.nbytes} bytes, its shape and dtype need {expected}")
        return t


Tensor = np.ndarray | StoredTensor


class TensorInfo(Record):
    """Index entry of one tensor: where its data is, without reading it.
    A tuple (name, dtype, shape, offset, nbytes) with those fields as attributes."""

    __slots__ = ()
    _fields = ("name", "dtype", "shape", "offset", "nbytes")
    if TYPE_CHECKING:  # what the properties below give
        name: str
        dtype: _dt.DType
        shape: tuple[int, ...]
        offset: int
        nbytes: int
    else:  # a tuple subclass exposing its fields through properties (fast and small per record)
        name = property(itemgetter(0))
        dtype = property(itemgetter(1))
        shape = property(itemgetter(2))
        offset = property(itemgetter(3))
        nbytes = property(itemgetter(4))



def name_bytes(name: str) -> bytes:
    """The exact stored bytes of a name as read (undecodable bytes were kept with
    surrogateescape)."""
    return name.encode("utf-8", "surrogateescape")


def json_name(name: str) -> dict[str, str]:
    """A name for JSON output: ``{"name": text}``, plus ``"name_hex"`` (the exact bytes)
    when the stored bytes are not valid UTF-8 (the text then shows U+FFFD for them)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raw = name_bytes(name)
        return {"name": raw.decode("utf-8", "replace"), "name_hex": raw.hex()}
    return {"name": name}


class Rows:
    """Tensors of one run still held as a block ``(count, *shape)`` of the arena: the
    array of tensor ``i`` of the file is ``block[i - first]``, made when first asked for."""

    __slots__ = ("block", "first")

    def __init__(self, block: np.ndarray, first: int) -> None:
        self.block, self.first = block, first


class ParamsFile(MutableMapping):
    """An ordered mapping name -> tensor read from (or to be written as) a .params file.

    Everything in the file is kept so that ``dumps(loads(b)) == b``: the reserved words,
    each record's device id, duplicate names (the mapping shows the later one, as TVM
    does; ``entries`` has all) and bytes after the last record (``trailing``).
    """

    def __init__(
        self,
        entries: list[tuple[str, Tensor, TensorRecord | None]] | None = None,
        *,
        reserved: int = 0,
        trailing: bytes = b"",
        choice: _dt.DialectChoice | None = None,
    ) -> None:
        entries = entries or []
        self._init([e[0] for e in entries], [e[1] for e in entries], [e[2] for e in entries], reserved, trailing,
                   choice)

    def _init(self, names: list[str], values: list[Any], records: list[TensorRecord | None], reserved: int,
              trailing: bytes, choice: _dt.DialectChoice | None, by_name: dict[str, int] | None = None) -> None:
        # three parallel lists (no tuple per tensor); a value may still be a Rows block
        self._names, self._values, self._records = names, values, records
        self.reserved = reserved
        self.trailing = trailing
        self.choice = choice or _dt.given(_dt.LATEST)
        # dict() keeps the last index of a repeated name: the later entry wins, as in TVM (the
        # compiled walker's by_name says the same)
        self._map: dict[str, int] = dict(zip(names, range(len(names)))) if by_name is None else by_name

    @classmethod
    def _of_columns(cls, names: list[str], values: list[Any], records: list[TensorRecord | None], reserved: int,
                    trailing: bytes, choice: _dt.DialectChoice, by_name: dict[str, int] | None = None) -> ParamsFile:
        self = cls.__new__(cls)
        self._init(names, values, records, reserved, trailing, choice, by_name)
        return self

    def _value(self, i: int) -> Tensor:
        v = self._values[i]
        if type(v) is Rows:
            v = self._values[i] = v.block[i - v.first]
        return v

    @property
    def dialect(self) -> _dt.Dialect:
        """The dtype dialect the file was read in (and is written in)."""
        return self.choice.dialect

    @property
    def entries(self) -> list[tuple[str, Tensor]]:
        """Every (name, tensor) in file order, duplicates included."""
        return [(n, self._value(i)) for i, n in enumerate(self._names)]

    def __getitem__(self, name: str) -> Tensor:
        return self._value(self._map[name])

    def __setitem__(self, name: str, value: Tensor) -> None:
        i = self._map.get(name)
        if i is not None:
            self._values[i], self._records[i] = value, None
        else:
            self._map[name] = len(self._names)
            self._names.append(name)
            self._values.append(value)
            self._records.append(None)

    def __delitem__(self, name: str) -> None:
        if name not in self._map:
            raise KeyError(name)
        keep = [i for i, n in enumerate(self._names) if n != name]
        values = [self._value(i) for i in keep]
        self._names = [self._names[i] for i in keep]
        self._records = [self._records[i] for i in keep]
        self._values = values
        self._map = dict(zip(self._names, range(len(self._names))))

    def __iter__(self) -> Iterator[str]:
        if len(self._map) == len(self._names):  # no repeated name: the names are the keys
            yield from list(self._names)
            return
        seen = set()
        for name in self._names:
            if name not in seen:
                seen.add(name)
                yield name

    def __len__(self) -> int:
        return len(self._map)

    def __repr__(self) -> str:
        items = ", ".join(f"{n!r}: {_describe_tensor(self._value(i))}" for i, n in enumerate(self._names[:8]))
        more = ", …" if len(self._names) > 8 else ""
        return f"ParamsFile({{{items}{more}}}, dialect={self.dialect.id})"


def _describe_tensor(t: Tensor) -> str:
    if isinstance(t, StoredTensor):
        return f"StoredTensor({t.dtype.name}, {t.shape})"
    return f"array({t.dtype}, {t.shape})"


_MAX_NUMPY_BYTES = np.iinfo(np.intp).max


def numpy_holds(dt: _dt.DType, shape: tuple[int, ...]) -> bool:
    """Whether a NumPy array can describe ``shape`` of ``dt``: NumPy refuses a shape whose
    non-zero dimensions multiply (times the item size) past its index range, even when
    another dimension is 0 and the tensor is empty (TVM reads such a file)."""
    if dt.numpy is None:
        return False
    n = dt.numpy.itemsize
    for d in shape:
        if d:
            n *= d
            if n > _MAX_NUMPY_BYTES:
                return False
    return True



class LazyParams(Mapping):
    """A .params file opened lazily: ``index`` was built from the headers only;
    ``self[name]`` is a zero-copy read-only view of the file's bytes (an mmap of a path,
    made on the first data access), or with ``mapped=False`` a copy read by pread.

    The format has no padding, so views may be unaligned (NumPy handles that, at some
    cost for vectorised math); use ``load`` or ``np.array(view)`` for aligned copies.
    Close it (or use ``with``) to release the mapping; views must not outlive it.

    As with ``numpy.memmap``, a view of a file that another process truncates raises
    SIGBUS when a page past the new end is touched, which no Python code can catch: open
    a file that may change while it is read with ``mapped=False`` (what the CLI does).
    Its reads then fail with an MlfError ("file shrank while it was being read").
    """

    def __init__(self, idx: Index, buf: Any, size: int, fd: int | None, name: str, mapped: bool = True,
                 mm: mmap.mmap | None = None) -> None:
        self._mem = buf  # None: a path whose mapping is made on the first data access
        self._mm = mm  # the mapping this object made (and closes)
        self._fd = fd
        self._mapped = mapped
        self.file = name
        self.choice = idx.choice
        self.size = size
        self.reserved = idx.reserved
        self.trailing_bytes = size - idx.end
        self._idx = idx
        self._names = idx.names
        self._index: list[TensorInfo] | None = None
        # name -> position of its last tensor (a repeated name reads as the later one, as in TVM)
        self._by_name: dict[str, int] = (idx.by_name if idx.by_name is not None
                                         else dict(zip(idx.names, range(len(idx.names)))))

    @property
    def _buf(self) -> Any:
        """The file's bytes: the buffer given, or the mapping of the path (made now)."""
        if self._mem is None:
            if self._fd is None:
                raise ValueError("the file is closed")
            self._mm = mmap.mmap(self._fd, 0, access=mmap.ACCESS_READ)
            self._mem = self._mm
        return self._mem

    @property
    def index(self) -> list[TensorInfo]:
        """(name, dtype, shape, offset, nbytes) of every tensor in file order, duplicates
        included (made on first use from the headers)."""
        if self._index is None:
            d = self.choice.dialect
            lookup, new = _dt.lookup, tuple.__new__
            out: list[TensorInfo] = []
            names = self._names
            idx = self._idx
            if idx.heads is not None:
                assert idx.offsets is not None
                types: dict[tuple[int, int, int], _dt.DType] = {}
                for name, v, at in zip(names, idx.heads, idx.offsets):
                    key = H_KEY(v)
                    dt = types.get(key)
                    if dt is None:
                        dt = types[key] = lookup(d, *key)
                    out.append(new(TensorInfo, (name, dt, v[H_SHAPE:len(v) - H_TAIL], at, v[-1])))
            else:
                i = 0
                for r, m, stride in idx.runs:
                    dt = lookup(d, r.dtype_code, r.dtype_bits, r.dtype_lanes)
                    shape, at, n = r.shape, r.data_offset, r.data_byte_size
                    for j in range(m):
                        out.append(new(TensorInfo, (names[i + j], dt, shape, at + j * stride, n)))
                    i += m
            self._index = out
        return self._index

    def records(self) -> list[TensorRecord]:
        """The header record (generated ``TensorRecord``) of every tensor in file order,
        duplicates included, each with its own data offset (made from the headers when asked)."""
        return self._idx.records

    def names(self) -> list[str]:
        """Every tensor's name in file order, duplicates included (:meth:`keys` has each once)."""
        return list(self._names)

    def _info(self, name: str | TensorInfo) -> TensorInfo:
        if isinstance(name, TensorInfo):
            return name
        return self.index[self._by_name[name]]

    @property
    def dialect(self) -> _dt.Dialect:
        """The dtype dialect used to name the codes."""
        return self.choice.dialect

    def read_bytes(self, offset: int, n: int) -> Any:
        """``n`` bytes of the file at ``offset``: a view, or with ``mapped=False`` a copy
        read by pread (MlfError if the file shrank meanwhile)."""
        if offset < 0 or n < 0 or offset + n > self.size:
            raise ValueError(f"{n} bytes at {offset} are not inside the file's {self.size}")
        return self._read(offset, n)

    def _read(self, offset: int, n: int) -> Any:
        if self._mapped or self._fd is None:
            return memoryview(self._buf)[offset:offset + n]
        try:
            return memoryview(pread(self._fd, n, offset))
        except MlfError as exc:
            raise exc.with_file(self.file) from None

    def raw(self, name: str | TensorInfo) -> memoryview:
        """The stored data bytes of tensor ``name`` (the last of that name, as TVM reads
        it) or of one :attr:`index` entry (zero-copy unless opened with ``mapped=False``)."""
        info = self._info(name)
        return self._read(info.offset, info.nbytes)

    def raws(self, infos: list[TensorInfo] | None = None) -> Iterator[memoryview]:
        """The stored bytes of each of ``infos`` (default: every :attr:`index` entry), in
        order: views, or with ``mapped=False`` copies read by pread, a window of up to
        1 MiB at a time when they lie close together (many small tensors: one read for many)."""
        infos = self.index if infos is None else infos
        if self._mapped or self._fd is None:
            whole = memoryview(self._buf) if self.size else memoryview(b"")
            for info in infos:
                yield whole[info.offset:info.offset + info.nbytes]
            return
        win, lo, hi = memoryview(b""), 0, 0
        for info in infos:
            at, n = info.offset, info.nbytes
            if lo <= at and at + n <= hi:
                yield win[at - lo:at - lo + n]
            elif n >= _RAWS_WINDOW:
                yield self._read(at, n)
            else:
                hi = at + min(_RAWS_WINDOW, self.size - at)
                win, lo = self._read(at, hi - at), at
                yield win[:n]

    def raw_file(self) -> memoryview:
        """The whole file's bytes (zero-copy unless opened with ``mapped=False``)."""
        return self._read(0, self.size)

    def tensor(self, info: TensorInfo) -> Tensor:
        """The tensor of one :attr:`index` entry (duplicates included): a zero-copy array,
        or a StoredTensor for dtypes NumPy cannot hold."""
        if not numpy_holds(info.dtype, info.shape):
            return StoredTensor(info.dtype, info.shape, self.raw(info))
        if self._mapped or self._fd is None:
            return np.ndarray(info.shape, info.dtype.numpy, self._buf, info.offset)
        return np.ndarray(info.shape, info.dtype.numpy, self.raw(info))

    def __getitem__(self, name: str) -> Tensor:
        return self.tensor(self._info(name))

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_name)

    def keys(self) -> KeysView[str]:
        """The names, in file order (a repeated name once)."""
        return self._by_name.keys()

    def __len__(self) -> int:
        return len(self._by_name)

    def close(self) -> None:
        """Release the mapping and the file."""
        if self._mm is not None:
            try:
                self._mm.close()
            except BufferError:  # views still exported; the mapping goes when they do
                pass
            self._mm = None
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> LazyParams:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._mm is None and self._fd is not None:  # (no mapping made: what close does, one call fewer)
            os.close(self._fd)
            self._fd = None
        else:
            self.close()



_RAWS_WINDOW = 1 << 20
