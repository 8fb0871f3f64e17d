"""The index of a .params file from its headers alone, and the read windows: the names and
the records as runs of identical headers (one record object per run) or, for a file of large
tensors, as flat header tuples read by the compiled walker (``accel``) or the generated
``read_tensor_record_heads``, from a buffer or by pread a window at a time (never mapped). The
dialect is detected here (or given), from the dtype keys and, where they tell dialects apart,
the tensors' bytes."""

from __future__ import annotations

import contextlib
import functools
import gc
import os
import struct
from collections.abc import Callable, Iterator
from operator import itemgetter
from typing import Any

import numpy as np

from mlf_spec._io import pread_into
from mlf_spec.errors import MlfError
from mlf_spec.generated import params_read_windows_table as _windows_table
from mlf_spec.generated.params_fast import read_params_file
from mlf_spec.generated.tensor_fast import (
    TENSOR_RECORD_HEAD_FIELDS,
    TENSOR_RECORD_OFFSETS,
    TensorRecord,
    read_tensor_record,
    read_tensor_record_heads,
    start_of_tensor_record,
)

from . import accel as _accel
from . import dtypes as _dt

#: A run of records with identical header bytes: (first record, count, stride). The
#: records of a run differ only in where their data starts (``stride`` bytes apart).
Run = tuple[TensorRecord, int, int]


class Index:
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
    return _new_record(v[:H_SHAPE] + (v[H_SHAPE:len(v) - H_TAIL],) + v[len(v) - H_TAIL:] + (at,))


def build_index(buf: Any, size: int, dialect: str | _dt.Dialect | None, strict: bool, fd: int | None = None) -> Index:
    """The index in one pass over the header bytes: the names, and the records as runs of
    identical headers (one record object per run, not per tensor), or for a file of large
    tensors (``_sparse``) as flat header tuples: with ``fd`` (the file behind ``buf``)
    read by pread, else from ``buf``."""
    if _sparse(buf, size):
        if fd is not None:
            idx = pread_index(fd, size, dialect, strict, False)
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
    choice = _dt.detect(keys, max_bytes_of_runs(buf, runs)) if dialect is None else _dt.given(_dt.dialect(dialect))
    d = choice.dialect
    if strict and not all(_dt.lookup(d, *k).known for k in keys):
        i = 0
        for r, m, _ in runs:
            dt = _dt.lookup(d, r.dtype_code, r.dtype_bits, r.dtype_lanes)
            _dt.require_known(dt, d, f"arrays[{i}].dtype", start_of_tensor_record(r) + TENSOR_RECORD_OFFSETS["dtype"])
            i += m
    return Index(rec.names, runs, rec.magic, rec.reserved, end, choice)


def _sparse(buf: Any, size: int) -> bool:
    """Whether the file's tensors average ``_SPARSE_MIN`` bytes or more (from its first 24
    bytes: the name count), so that record headers are best read one by one."""
    if size < 24:
        return False
    n = _U64(buf, 16)[0]
    return bool(n) and size // n >= _SPARSE_MIN


def _buffer_index(buf: Any, size: int, dialect: str | _dt.Dialect | None, strict: bool) -> Index:
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
                return choose_walked(walker, got, dialect, strict, top)

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


# The read windows, shared with the compiled walker (spec/tables/params_read_windows.yaml)
_WINDOWS = {r["id"]: r["bytes"] for r in _windows_table.ROWS}
_SPARSE_MIN = _WINDOWS["sparse_min"]  # tensors this large on average: each header lies on its own page
FIRST = _WINDOWS["first"]  # bytes of the first pread: the file header, the names and the first records
_WINDOW = _WINDOWS["window"]  # the largest further pread, large tensors: the next few small ones
_HEAD_WINDOW = _WINDOWS["head_window"]  # the smallest: a header (at most 552 bytes) and maybe the next ones
_DENSE_WINDOW = _WINDOWS["dense_window"]  # the same, small tensors: many headers per pread
_H_CODE, _H_BITS, _H_LANES, H_SHAPE = (TENSOR_RECORD_HEAD_FIELDS.index(f) for f in
                                        ("dtype_code", "dtype_bits", "dtype_lanes", "shape"))
H_TAIL = len(TENSOR_RECORD_HEAD_FIELDS) - 1 - H_SHAPE  # values after the shape (data_byte_size)
H_KEY = itemgetter(_H_CODE, _H_BITS, _H_LANES)


class _Doubt(Exception):
    """The heads reader cannot decide (a record it does not read): the runs reader decides."""


def shrank(offset: int) -> MlfError:
    return MlfError("file shrank while it was being read", offset=offset)


def pread(fd: int, n: int, offset: int) -> bytes:
    """``n`` bytes at ``offset`` (MlfError if the file ends first: it shrank since its size was taken)."""
    got = os.pread(fd, n, offset)
    if len(got) < n:  # a short read need not be the end: the rest by the package's read loop
        rest = bytearray(n - len(got))
        pread_into(fd, memoryview(rest), offset + len(got))
        got += rest
    return got


def pread_index(fd: int, size: int, dialect: str | _dt.Dialect | None, strict: bool,
                 dense: bool, walked: bool = False) -> Index | None:
    """The index from pread alone (no mmap): the header and the names from the first
    window, then the record headers a window at a time, read by the generated
    ``read_tensor_record_heads`` with every check (errors name their true offsets). None
    for a file of small tensors unless ``dense`` (the caller reads those as runs). The
    compiled walker (``accel``) reads it when built (unless it has ``walked`` it already);
    on bad input the generated reader reads it again and raises the error."""
    top = lambda v, at: data_max(fd, at, v[-1])  # noqa: E731
    walker = None if walked else _accel.walker()
    if walker is not None:
        try:
            got = walker.index_fd(fd, size, dense)
        except walker.Refusal:
            pass  # the generated reader below names the error
        else:
            return None if got is None else choose_walked(walker, got, dialect, strict, top)
    first = pread(fd, min(size, FIRST), 0)
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
            first = pread(fd, min(size, len(first) * 8), 0)
    return _choose_read(rec, end, dialect, strict, top)


def _choose_read(rec: Any, end: int, dialect: str | _dt.Dialect | None, strict: bool, top: Any) -> Index:
    """``_choose`` for a file read by the generated reader (its last field: heads, offsets)."""
    heads, offsets = rec.arrays
    return _choose(rec.magic, rec.reserved, rec.names, set(map(H_KEY, heads)), lambda: (heads, offsets), end,
                   dialect, strict, top)


def choose_walked(walker: Any, got: tuple, dialect: str | _dt.Dialect | None, strict: bool, top: Any) -> Index:
    """``_choose`` for a file read by the compiled walker (its headers packed until asked for)."""
    magic, reserved, names, by_name, packed, keys, end = got
    return _choose(magic, reserved, names, keys, functools.partial(walker.unpack, packed), end, dialect, strict,
                   top, by_name)


def _choose(magic: int, reserved: int, names: list[str], keys: set[tuple[int, int, int]],
            heads_of: Callable[[], tuple[list[tuple], list[int]]], end: int,
            dialect: str | _dt.Dialect | None, strict: bool, top: Any, by_name: dict[str, int] | None = None
            ) -> Index:
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
                    if H_KEY(v) == k:
                        tops[k] = max(tops.get(k, -1), top(v, at) if v[-1] else -1)
        choice = _dt.detect(keys, tops)
    else:
        choice = _dt.given(_dt.dialect(dialect))
    d = choice.dialect
    if strict and not all(_dt.lookup(d, *k).known for k in keys):
        for i, (v, at) in enumerate(zip(*heads_of())):
            r = _record_of_head(v, at)
            _dt.require_known(_dt.lookup(d, *H_KEY(v)), d, f"arrays[{i}].dtype",
                              start_of_tensor_record(r) + TENSOR_RECORD_OFFSETS["dtype"])
    return Index(names, None, magic, reserved, end, choice, heads_of, by_name)


ONE_DTYPE: dict[tuple[int, int, int], _dt.DialectChoice] = {}


def _one_dtype_choice(keys: set[tuple[int, int, int]]) -> _dt.DialectChoice | None:
    """The detected dialect of a file of one dtype whose bytes need not be read (most
    files), remembered; None otherwise."""
    if len(keys) != 1:
        return None
    (k,) = keys
    choice = ONE_DTYPE.get(k)
    if choice is None and not _dt.needs_data(k[0], k[1]):
        choice = ONE_DTYPE[k] = _dt.detect(keys)
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
                    raise shrank(base)  # (not reached: the header fits when the file is whole)
                pos = nxt
                # the next records are guessed to be as large as the last one: a window for
                # two of them, unless that one was large (then a header's worth)
                last = heads[-1][-1] if heads else window
                want = min(end - pos, window if window == _DENSE_WINDOW or last <= window and 2 * last > window
                           else _HEAD_WINDOW if last > window else 2 * last + _HEAD_WINDOW)
                win, base = os.pread(fd, want, pos), pos
                if len(win) < want:
                    win = win + pread(fd, want - len(win), pos + len(win))
        except MlfError as exc:
            raise exc.shifted(base).prefixed(f"[{len(heads)}]") from None

    return read


def data_max(fd: int, at: int, n: int) -> int:
    """The largest byte of ``n`` bytes at ``at``, read by pread in pieces (never mapped,
    never whole in memory)."""
    top, done = -1, 0
    while done < n:
        piece = pread(fd, min(n - done, 1 << 20), at + done)
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
    return max_bytes_of_runs(buf, [(r, 1, 0) for r in records])


def max_bytes_of_runs(buf: Any, runs: list[Run]) -> dict[tuple[int, int, int], int]:
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



@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while building many acyclic objects (records,
    arrays): its passes over them would cost more than the parsing itself."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()

