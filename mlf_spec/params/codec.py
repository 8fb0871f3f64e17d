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

import contextlib
import functools
import gc
import mmap
import os
import struct
import sys
from collections.abc import Callable, Iterator, KeysView, Mapping, MutableMapping
from operator import itemgetter
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import numpy as np

from mlf_spec._io import atomic_write_chunks, describe, open_regular_fd, pread_into, read_source
from mlf_spec.errors import MlfError, UnsupportedError
from mlf_spec.generated._fastlib import Record
from mlf_spec.generated.params_fast import PARAMS_MAGIC, new_params_file, read_params_file, write_params_file
from mlf_spec.generated.tensor_fast import (
    TENSOR_RECORD_HEAD_FIELDS,
    TENSOR_RECORD_OFFSETS,
    TensorRecord,
    new_tensor_record,
    read_tensor_record,
    read_tensor_record_heads,
    start_of_tensor_record,
)

from . import accel as _accel
from . import dtypes as _dt

Source = str | os.PathLike | bytes | bytearray | memoryview | IO[bytes]
ALIGNMENT = 64
_PREAD_MIN = 1 << 20  # tensors this large are read with pread, not copied out of the mmap


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


#: A run of records with identical header bytes: (first record, count, stride). The
#: records of a run differ only in where their data starts (``stride`` bytes apart).
Run = tuple[TensorRecord, int, int]


class _Index:
    """What the headers say: the names, and the records either as runs of identical
    headers (``runs``) or as flat header tuples with their data offsets (``heads``,
    ``offsets``: see ``read_tensor_record_heads``, made on first use by ``heads_of()``, so
    that the compiled walker's packed headers become tuples only when asked for); runs are
    made from heads when asked for. ``by_name`` maps a name to the position of its last
    tensor when the walk made it (the compiled walker does), else None."""

    __slots__ = ("names", "_runs", "magic", "reserved", "end", "choice", "_heads", "_heads_of", "by_name")

    def __init__(self, names: list[str], runs: list[Run] | None, magic: int, reserved: int, end: int,
                 choice: _dt.DialectChoice, heads_of: Callable[[], tuple[list[tuple], list[int]]] | None = None,
                 by_name: dict[str, int] | None = None) -> None:
        self.names, self._runs, self.magic, self.reserved, self.end, self.choice = (
            names, runs, magic, reserved, end, choice)
        self._heads: tuple[list[tuple], list[int]] | None = None
        self._heads_of = heads_of
        self.by_name = by_name

    def _both(self) -> tuple[list[tuple], list[int]] | None:
        if self._heads is None and self._heads_of is not None:
            self._heads = self._heads_of()
        return self._heads

    @property
    def heads(self) -> list[tuple] | None:
        """The flat header tuples (None when the records were read as runs)."""
        both = self._both()
        return None if both is None else both[0]

    @property
    def offsets(self) -> list[int] | None:
        """Where the data of each of ``heads`` starts."""
        both = self._both()
        return None if both is None else both[1]

    @property
    def runs(self) -> list[Run]:
        """The records as runs (first record, count, stride) of identical headers."""
        if self._runs is None:
            assert self.heads is not None and self.offsets is not None
            runs: list[Run] = []
            last: tuple | None = None
            for v, at in zip(self.heads, self.offsets):
                if v == last:
                    r, m, stride = runs[-1]
                    if at - r.data_offset == m * stride or (m == 1 and at > r.data_offset):
                        runs[-1] = (r, m + 1, at - r.data_offset if m == 1 else stride)
                        continue
                runs.append((_record_of_head(v, at), 1, 0))
                last = v
            self._runs = runs
        return self._runs

    @property
    def records(self) -> list[TensorRecord]:
        """One record per tensor, each with its own data offset (made from the runs)."""
        out: list[TensorRecord] = []
        for r, m, stride in self.runs:
            out.append(r)
            out.extend(r._replace(data_offset=r.data_offset + j * stride) for j in range(1, m))
        return out


def _record_of_head(v: tuple, at: int) -> TensorRecord:
    return _new_record(v[:_H_SHAPE] + (v[_H_SHAPE:len(v) - _H_TAIL],) + v[len(v) - _H_TAIL:] + (at,))


def _index(buf: Any, size: int, dialect: str | _dt.Dialect | None, strict: bool, fd: int | None = None) -> _Index:
    """The index in one pass over the header bytes: the names, and the records as runs of
    identical headers (one record object per run, not per tensor), or for a file of large
    tensors (``_sparse``) as flat header tuples: with ``fd`` (the file behind ``buf``)
    read by pread, else from ``buf``."""
    if _sparse(buf, size):
        if fd is not None:
            idx = _pread_index(fd, size, dialect, strict, False)
            if idx is not None:
                return idx
        else:
            try:
                return _buffer_index(buf, size, dialect, strict)
            except _Doubt:
                pass  # the runs reader below reads it (or names its error)
    rec, end = read_params_file(buf, 0, size, runs=True)
    runs: list[Run] = rec.arrays
    keys = {(r.dtype_code, r.dtype_bits, r.dtype_lanes) for r, _, _ in runs}
    choice = _dt.detect(keys, _max_bytes_of_runs(buf, runs)) if dialect is None else _dt.given(_dt.dialect(dialect))
    d = choice.dialect
    if strict and not all(_dt.lookup(d, *k).known for k in keys):
        i = 0
        for r, m, _ in runs:
            dt = _dt.lookup(d, r.dtype_code, r.dtype_bits, r.dtype_lanes)
            _dt.require_known(dt, d, f"arrays[{i}].dtype", start_of_tensor_record(r) + TENSOR_RECORD_OFFSETS["dtype"])
            i += m
    return _Index(rec.names, runs, rec.magic, rec.reserved, end, choice)


def _sparse(buf: Any, size: int) -> bool:
    """Whether the file's tensors average ``_SPARSE_MIN`` bytes or more (from its first 24
    bytes: the name count), so that record headers are best read one by one."""
    if size < 24:
        return False
    n = _U64(buf, 16)[0]
    return bool(n) and size // n >= _SPARSE_MIN


def _buffer_index(buf: Any, size: int, dialect: str | _dt.Dialect | None, strict: bool) -> _Index:
    """The index of a file of large tensors held in ``buf``, its headers read by the
    compiled walker (``accel``) or the generated ``read_tensor_record_heads``."""
    top = lambda v, at: int(np.frombuffer(buf, np.uint8, v[-1], at).max())  # noqa: E731
    walker = _accel.walker()
    if walker is not None:
        try:
            got = walker.index_buffer(buf, size)
        except walker.Refusal:
            pass  # the generated reader below names the error
        else:
            if got is not None:
                return _choose_walked(walker, got, dialect, strict, top)

    def read(b: Any, pos: int, end: int, n: int, era: tuple[int, ...]) -> tuple[tuple[list, list], int]:
        heads: list[tuple] = []
        offsets: list[int] = []
        try:
            pos = read_tensor_record_heads(b, pos, end, end, n, 0, heads, offsets, era)
            if len(heads) < n:  # the input ends inside a header
                read_tensor_record(b, pos, end, era)  # names the error
                raise _Doubt
        except MlfError as exc:
            raise exc.prefixed(f"[{len(heads)}]") from None
        return (heads, offsets), pos

    rec, end = read_params_file(buf, 0, size, runs=read)
    return _choose_read(rec, end, dialect, strict, top)


_SPARSE_MIN = 16 << 10  # tensors this large on average: each header lies on its own page
_FIRST = 16 << 10  # bytes of the first pread: the file header, the names and the first records
_WINDOW = 32 << 10  # the largest further pread, large tensors: the next few small ones
_HEAD_WINDOW = 1 << 10  # the smallest: a header (at most 552 bytes) and maybe the next ones
_DENSE_WINDOW = 256 << 10  # the same, small tensors: many headers per pread
_H_CODE, _H_BITS, _H_LANES, _H_SHAPE = (TENSOR_RECORD_HEAD_FIELDS.index(f) for f in
                                        ("dtype_code", "dtype_bits", "dtype_lanes", "shape"))
_H_TAIL = len(TENSOR_RECORD_HEAD_FIELDS) - 1 - _H_SHAPE  # values after the shape (data_byte_size)
_H_KEY = itemgetter(_H_CODE, _H_BITS, _H_LANES)


class _Doubt(Exception):
    """The heads reader cannot decide (a record it does not read): the runs reader decides."""


def _shrank(offset: int) -> MlfError:
    return MlfError("file shrank while it was being read", offset=offset)


def _pread(fd: int, n: int, offset: int) -> bytes:
    """``n`` bytes at ``offset`` (MlfError if the file ends first: it shrank since its size was taken)."""
    got = os.pread(fd, n, offset)
    if len(got) < n:  # a short read need not be the end: the rest by the package's read loop
        rest = bytearray(n - len(got))
        pread_into(fd, memoryview(rest), offset + len(got))
        got += rest
    return got


def _pread_index(fd: int, size: int, dialect: str | _dt.Dialect | None, strict: bool,
                 dense: bool, walked: bool = False) -> _Index | None:
    """The index from pread alone (no mmap): the header and the names from the first
    window, then the record headers a window at a time, read by the generated
    ``read_tensor_record_heads`` with every check (errors name their true offsets). None
    for a file of small tensors unless ``dense`` (the caller reads those as runs). The
    compiled walker (``accel``) reads it when built (unless it has ``walked`` it already);
    on bad input the generated reader reads it again and raises the error."""
    top = lambda v, at: _data_max(fd, at, v[-1])  # noqa: E731
    walker = None if walked else _accel.walker()
    if walker is not None:
        try:
            got = walker.index_fd(fd, size, dense)
        except walker.Refusal:
            pass  # the generated reader below names the error
        else:
            return None if got is None else _choose_walked(walker, got, dialect, strict, top)
    first = _pread(fd, min(size, _FIRST), 0)
    sparse = _sparse(first, size)
    if not (sparse or dense):
        return None
    window = _WINDOW if sparse else _DENSE_WINDOW
    while True:
        try:
            rec, end = read_params_file(first, 0, size, runs=_heads_reader(fd, first, window))
            break
        except (struct.error, TypeError, ValueError):
            # the names go on past the first window (the reader over a window too short
            # raises one of these, never returns): read more of the file
            if len(first) >= size:
                raise
            first = _pread(fd, min(size, len(first) * 8), 0)
    return _choose_read(rec, end, dialect, strict, top)


def _choose_read(rec: Any, end: int, dialect: str | _dt.Dialect | None, strict: bool, top: Any) -> _Index:
    """``_choose`` for a file read by the generated reader (its last field: heads, offsets)."""
    heads, offsets = rec.arrays
    return _choose(rec.magic, rec.reserved, rec.names, set(map(_H_KEY, heads)), lambda: (heads, offsets), end,
                   dialect, strict, top)


def _choose_walked(walker: Any, got: tuple, dialect: str | _dt.Dialect | None, strict: bool, top: Any) -> _Index:
    """``_choose`` for a file read by the compiled walker (its headers packed until asked for)."""
    magic, reserved, names, by_name, packed, keys, end = got
    return _choose(magic, reserved, names, keys, functools.partial(walker.unpack, packed), end, dialect, strict,
                   top, by_name)


def _choose(magic: int, reserved: int, names: list[str], keys: set[tuple[int, int, int]],
            heads_of: Callable[[], tuple[list[tuple], list[int]]], end: int,
            dialect: str | _dt.Dialect | None, strict: bool, top: Any, by_name: dict[str, int] | None = None
            ) -> _Index:
    """The index of a file read as heads (see ``read_tensor_record_heads``; ``heads_of()``
    gives them and their data offsets, ``keys`` their (code, bits, lanes)): the dialect
    detected (``top(head, offset)`` gives the largest byte of a tensor whose bytes tell
    dialects apart) or given."""
    choice = _one_dtype_choice(keys) if dialect is None else None
    if choice is not None:
        pass
    elif dialect is None:
        tops: dict[tuple[int, int, int], int] = {}
        for k in keys:
            if _dt.needs_data(k[0], k[1]):
                heads, offsets = heads_of()
                for v, at in zip(heads, offsets):
                    if _H_KEY(v) == k:
                        tops[k] = max(tops.get(k, -1), top(v, at) if v[-1] else -1)
        choice = _dt.detect(keys, tops)
    else:
        choice = _dt.given(_dt.dialect(dialect))
    d = choice.dialect
    if strict and not all(_dt.lookup(d, *k).known for k in keys):
        for i, (v, at) in enumerate(zip(*heads_of())):
            r = _record_of_head(v, at)
            _dt.require_known(_dt.lookup(d, *_H_KEY(v)), d, f"arrays[{i}].dtype",
                              start_of_tensor_record(r) + TENSOR_RECORD_OFFSETS["dtype"])
    return _Index(names, None, magic, reserved, end, choice, heads_of, by_name)


_ONE_DTYPE: dict[tuple[int, int, int], _dt.DialectChoice] = {}


def _one_dtype_choice(keys: set[tuple[int, int, int]]) -> _dt.DialectChoice | None:
    """The detected dialect of a file of one dtype whose bytes need not be read (most
    files), remembered; None otherwise."""
    if len(keys) != 1:
        return None
    (k,) = keys
    choice = _ONE_DTYPE.get(k)
    if choice is None and not _dt.needs_data(k[0], k[1]):
        choice = _ONE_DTYPE[k] = _dt.detect(keys)
    return choice


def _heads_reader(fd: int, first: bytes, window: int) -> Any:
    """A reader of ``n`` records in place of ``read_tensor_record_runs`` (its signature),
    giving (heads, offsets): the headers read by pread, ``window`` bytes at a time, each
    window starting at the first header the last one did not hold whole."""

    def read(buf: Any, pos: int, end: int, n: int, era: tuple[int, ...]) -> tuple[tuple[list, list], int]:
        heads: list[tuple] = []
        offsets: list[int] = []
        win, base = first, 0
        try:
            while True:
                nxt = read_tensor_record_heads(win, pos - base, len(win), end - base, n - len(heads), base, heads,
                                               offsets, era) + base
                if len(heads) == n:
                    return (heads, offsets), nxt
                if nxt == base:  # a fresh window held no whole header: the file ends inside it
                    read_tensor_record(win, 0, end - base, era)  # names the error
                    raise _shrank(base)  # (not reached: the header fits when the file is whole)
                pos = nxt
                # the next records are guessed to be as large as the last one: a window for
                # two of them, unless that one was large (then a header's worth)
                last = heads[-1][-1] if heads else window
                want = min(end - pos, window if window == _DENSE_WINDOW or last <= window and 2 * last > window
                           else _HEAD_WINDOW if last > window else 2 * last + _HEAD_WINDOW)
                win, base = os.pread(fd, want, pos), pos
                if len(win) < want:
                    win = win + _pread(fd, want - len(win), pos + len(win))
        except MlfError as exc:
            raise exc.shifted(base).prefixed(f"[{len(heads)}]") from None

    return read


def _data_max(fd: int, at: int, n: int) -> int:
    """The largest byte of ``n`` bytes at ``at``, read by pread in pieces (never mapped,
    never whole in memory)."""
    top, done = -1, 0
    while done < n:
        piece = _pread(fd, min(n - done, 1 << 20), at + done)
        top = max(top, int(np.frombuffer(piece, np.uint8).max()))
        done += len(piece)
    return top


_new_record = functools.partial(tuple.__new__, TensorRecord)
_SIZE, _AT = TensorRecord._fields.index("data_byte_size"), TensorRecord._fields.index("data_offset")
assert _AT == len(TensorRecord._fields) - 1  # a record at another offset: its fields before _AT, then it
assert TensorRecord._fields[:_AT] == TENSOR_RECORD_HEAD_FIELDS  # a head is a record without its data offset
_U64 = struct.Struct("<Q").unpack_from


def max_bytes(buf: Any, records: list[TensorRecord]) -> dict[tuple[int, int, int], int]:
    """The largest stored byte of the tensors of each (code, bits, lanes) whose bytes can
    tell dialects apart (bool and sub-byte types, :func:`dtypes.needs_data`); -1 when
    they hold no bytes. Only those tensors' data is read."""
    return _max_bytes_of_runs(buf, [(r, 1, 0) for r in records])


def _max_bytes_of_runs(buf: Any, runs: list[Run]) -> dict[tuple[int, int, int], int]:
    out: dict[tuple[int, int, int], int] = {}
    wanted: dict[tuple[int, int], bool] = {}
    for r, m, stride in runs:
        cb = (r.dtype_code, r.dtype_bits)
        need = wanted.get(cb)
        if need is None:
            need = wanted[cb] = _dt.needs_data(*cb)
        if not need:
            continue
        key = (r.dtype_code, r.dtype_bits, r.dtype_lanes)
        n = r.data_byte_size
        # the m tensors of a run: one strided (m, n) view of the input, no copy
        top = int(np.ndarray((m, n), np.uint8, buf, r.data_offset, (stride, 1)).max()) if n else -1
        out[key] = max(out.get(key, -1), top)
    return out


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


class _Rows:
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
        # three parallel lists (no tuple per tensor); a value may still be a _Rows block
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
        if type(v) is _Rows:
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


def _numpy_holds(dt: _dt.DType, shape: tuple[int, ...]) -> bool:
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
            with _gc_paused():
                if not size:
                    _index(b"", 0, dialect, strict)  # names the error
                idx = _pread_index(file_fd, size, dialect, strict, True)
                assert idx is not None
                return _materialise(idx, None, size, file_fd)
        except MlfError as exc:
            raise exc.with_file(name) from None
        finally:
            os.close(file_fd)
    try:
        with read_source(source) as (buf, size, fd), _gc_paused():
            idx = _index(buf, size, dialect, strict)
            return _materialise(idx, buf, size, fd)
    except MlfError as exc:
        raise exc.with_file(name) from None


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while building many acyclic objects (records,
    arrays): its passes over them would cost more than the parsing itself."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def loads(
    data: bytes | bytearray | memoryview, *, dialect: str | _dt.Dialect | None = None, strict: bool = True
) -> ParamsFile:
    """``load`` from bytes."""
    return load(memoryview(data), dialect=dialect, strict=strict)


def _materialise(idx: _Index, buf: Any, size: int, fd: int | None) -> ParamsFile:
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
                    span = _pread(fd, stride * (k - 1) + n, r.data_offset + j * stride)
                    block[j:j + k] = new_array((k, n), np.uint8, span, 0, (stride, 1))
            if dt.numpy is not None:  # n > 0 here, so the shape fits the file and NumPy
                itemsize = dt.numpy.itemsize
                inner = tuple(np.cumprod((1,) + r.shape[:0:-1])[::-1] * itemsize) if r.shape else ()
                rows = _Rows(new_array((m, *r.shape), dt.numpy, arena, start, (step, *inner)), i)
                values += [rows] * m
            else:
                values.extend(StoredTensor(dt, r.shape, row) for row in block)
        else:
            fits = dt.numpy is not None and (n or _numpy_holds(dt, r.shape))  # n > 0: the shape fits the file
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
        trailing = _pread(fd, size - idx.end, idx.end)
    return ParamsFile._of_columns(idx.names, values, records, idx.reserved, trailing, idx.choice, idx.by_name)


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

    def __init__(self, idx: _Index, buf: Any, size: int, fd: int | None, name: str, mapped: bool = True,
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
                    key = _H_KEY(v)
                    dt = types.get(key)
                    if dt is None:
                        dt = types[key] = lookup(d, *key)
                    out.append(new(TensorInfo, (name, dt, v[_H_SHAPE:len(v) - _H_TAIL], at, v[-1])))
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
            return memoryview(_pread(self._fd, n, offset))
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
        if not _numpy_holds(info.dtype, info.shape):
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
                choice = (_ONE_DTYPE.get(next(iter(keys))) if dialect is None and not strict and len(keys) == 1
                          else None)
                if choice is not None:
                    walked_idx = _Index(names, None, magic, reserved, end, choice,
                                        functools.partial(walker.unpack, packed), by_name)
                else:
                    top = lambda v, at: _data_max(fd, at, v[-1])  # noqa: E731
                    walked_idx = _choose_walked(walker, got, dialect, strict, top)
                return LazyParams(walked_idx, None, size, fd, name, mapped)
            was_enabled = gc.isenabled()
            gc.disable()  # many small acyclic objects: a collection pass would cost more than reading them
            try:
                # (a file the compiled walker opened and did not walk: empty, or small tensors read as runs)
                idx = _pread_index(fd, size, dialect, strict, not mapped, walked) if size and opened is None else None
                if idx is not None:
                    return LazyParams(idx, None, size, fd, name, mapped)
                # small tensors: their headers are read as runs over a mapping
                mm = mmap.mmap(fd, 0, access=mmap.ACCESS_READ) if size else None
                if mm is not None and len(mm) < size:
                    raise _shrank(len(mm))
                idx = _index(mm if mm is not None else b"", size, dialect, strict)
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
            idx = _index(buf, size, dialect, strict)
        except MlfError as exc:
            raise exc.with_file(name) from None
        return LazyParams(idx, buf, size, None, name)


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
    with _gc_paused():
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
    with _gc_paused():
        chunks = _chunks(params, dialect, payload)
    if len(chunks) > 64 and payload[0] < _JOIN_BELOW:
        chunks = [b"".join(chunks)]  # many small tensors: one C-level join beats many writes
    atomic_write_chunks(Path(path), chunks, durable=durable)


_JOIN_BELOW = 16 << 20
_RAWS_WINDOW = 1 << 20


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
