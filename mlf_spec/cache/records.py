"""The tensor records of an index held as columns (issue 32 item 11): offsets, sizes and shard
numbers in NumPy arrays, the names in one byte buffer, dtype, format and shape interned. About
50 bytes a record against about 400 for a record object with its strings and integers; a
:class:`~mlf_spec.cache.index.TensorEntry` is made when one is asked for (by position, by name
or while iterating), and the name index is hashes in arrays rather than a dict."""

from __future__ import annotations

from array import array
from collections.abc import ItemsView, Iterable, Iterator, Mapping, Sequence, ValuesView
from itertools import accumulate, islice
from typing import Annotated, Any, cast, overload

import msgspec
import numpy as np

INT64_MAX = (1 << 63) - 1
#: the prefix of the TensorEntry fields that are no key of the index (an index holding it is read
#: by the general path, so that no JSON key is taken for them)
INTERNAL = "mlf-spec internal:"
Int64 = Annotated[int, msgspec.Meta(ge=-INT64_MAX - 1, le=INT64_MAX)]


class TensorEntry(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """One tensor record: where its bytes are and how they are encoded (``shard`` and
    ``position`` index the index's lists; ``extra`` holds the keys the writer never writes,
    None when there are none). A compact record (about 100 bytes beside its strings): an
    index of the writer's layout is decoded straight into these (:func:`parse`)."""

    name: str
    shape: tuple[Int64, ...]
    dtype: str
    format: str
    nbytes: Int64
    offset: Int64 = msgspec.field(name="byteOffset")
    # not keys of the index: names no JSON key of a record is taken for (a record holding one
    # of them is read by the general path, see _fast_index)
    shard: int = msgspec.field(default=-1, name=INTERNAL + "shard")
    position: int = msgspec.field(default=-1, name=INTERNAL + "position")
    extra: dict[str, Any] | None = msgspec.field(default=None, name=INTERNAL + "extra")

    @property
    def path(self) -> str:
        """The record's JSON path in the index."""
        return f"records[{self.shard}].records[{self.position}]"


_BATCH = 4096  # records made per step when iterating (columns read with tolist())


class Builder:
    """Collects records shard by shard into :class:`Records`."""

    def __init__(self) -> None:
        self.names = bytearray()
        self.hashes = array("q")  # hash() of each name, for ByName (the names are str here already)
        self.ends = array("q")
        self.offsets = array("q")
        self.nbytes = array("q")
        self.shard = array("i")
        self.starts: list[int] = [0]
        self.dtype_ids, self.format_ids, self.shape_ids = array("i"), array("i"), array("i")
        self.dtypes: dict[str, int] = {}
        self.formats: dict[str, int] = {}
        self.shapes: dict[tuple[int, ...], int] = {}
        self.extras: dict[int, dict[str, Any]] = {}

    def add(self, entries: Sequence[TensorEntry], shard: int) -> None:
        """Append a batch of ``shard``'s records (their ``shard``/``position`` are not read)."""
        if any([t.extra for t in entries]):
            base = len(self.offsets)
            self.extras.update((base + k, t.extra) for k, t in enumerate(entries) if t.extra)
        strs = [t.name for t in entries]
        self.hashes.fromlist(list(map(hash, strs)))
        names = [n.encode("utf-8", "surrogatepass") for n in strs]
        self.ends.fromlist(list(islice(accumulate(map(len, names), initial=len(self.names)), 1, None)))
        self.names += b"".join(names)
        self.offsets.fromlist([t.offset for t in entries])
        self.nbytes.fromlist([t.nbytes for t in entries])
        self.shard.fromlist([shard] * len(entries))
        self.dtype_ids.fromlist(_intern(self.dtypes, [t.dtype for t in entries]))
        self.format_ids.fromlist(_intern(self.formats, [t.format for t in entries]))
        self.shape_ids.fromlist(_intern(self.shapes, [t.shape for t in entries]))

    def end_shard(self) -> None:
        """Close the current shard (its records are those added since the last call)."""
        self.starts.append(len(self.offsets))

    def build(self) -> Records:
        """The columns (the builder is spent)."""
        return Records(bytes(self.names), _np(self.ends, np.int64), _np(self.offsets, np.int64),
                       _np(self.nbytes, np.int64), _np(self.shard, np.int32), np.asarray(self.starts, np.int64),
                       (list(self.dtypes), _np(self.dtype_ids, np.int32)),
                       (list(self.formats), _np(self.format_ids, np.int32)),
                       (list(self.shapes), _np(self.shape_ids, np.int32)), self.extras,
                       _np(self.hashes, np.int64))


def _intern(table: dict[Any, int], values: list[Any]) -> list[int]:
    """The number of each value in ``table`` (a new value gets the next number)."""
    ids = list(map(table.get, values))
    if None in ids:  # numbered in order of first appearance, each distinct value looked at once
        for v in dict.fromkeys(values):
            if v not in table:
                table[v] = len(table)
        return list(map(table.__getitem__, values))
    return cast("list[int]", ids)


def _take(table: list[Any], ids: np.ndarray) -> list[Any]:
    return [table[i] for i in ids.tolist()] if len(table) > 1 else [table[0]] * len(ids) if table else []


def _np(a: array, dtype: Any) -> np.ndarray:
    return np.frombuffer(a, dtype=dtype) if len(a) else np.zeros(0, dtype)


class Records(Sequence[TensorEntry]):
    """Every tensor record of an index, in stored order (a sequence of TensorEntry made on
    demand: two reads of one position give equal, not identical, objects)."""

    def __init__(self, names: bytes, ends: np.ndarray, offsets: np.ndarray, nbytes: np.ndarray, shard: np.ndarray,
                 starts: np.ndarray, dtypes: tuple[list[str], np.ndarray], formats: tuple[list[str], np.ndarray],
                 shapes: tuple[list[tuple[int, ...]], np.ndarray], extras: dict[int, dict[str, Any]],
                 hashes: np.ndarray | None = None) -> None:
        self._names, self._ends, self.offsets, self.nbytes, self.shard = names, ends, offsets, nbytes, shard
        self.starts = starts
        self._dtypes, self._dtype_ids = dtypes
        self._formats, self._format_ids = formats
        self._shapes, self._shape_ids = shapes
        self._extras = extras
        self._by_name: ByName | None = None
        self._hashes = hashes

    def __len__(self) -> int:
        return len(self.offsets)

    def name(self, i: int) -> str:
        """The name of record ``i``."""
        start = int(self._ends[i - 1]) if i else 0
        return self._names[start:int(self._ends[i])].decode("utf-8", "surrogatepass")

    def names(self) -> Iterator[str]:
        """Every record's name, in stored order."""
        for a in range(0, len(self), _BATCH):
            yield from self._names_of(a, min(len(self), a + _BATCH))

    @overload
    def __getitem__(self, i: int) -> TensorEntry: ...

    @overload
    def __getitem__(self, i: slice) -> list[TensorEntry]: ...

    def __getitem__(self, i: int | slice) -> TensorEntry | list[TensorEntry]:
        return _item(self, 0, len(self), i)

    def __iter__(self) -> Iterator[TensorEntry]:
        return self.range(0, len(self))

    def range(self, lo: int, hi: int) -> Iterator[TensorEntry]:
        """The records ``lo`` to ``hi - 1``, made a batch at a time."""
        extras, dtypes, formats, shapes = self._extras, self._dtypes, self._formats, self._shapes
        for a in range(lo, hi, _BATCH):
            b = min(hi, a + _BATCH)
            shard = self.shard[a:b]
            positions = (np.arange(a, b) - self.starts[shard]).tolist()
            rows = zip(self._names_of(a, b), _take(shapes, self._shape_ids[a:b]), _take(dtypes, self._dtype_ids[a:b]),
                       _take(formats, self._format_ids[a:b]), self.nbytes[a:b].tolist(), self.offsets[a:b].tolist(),
                       shard.tolist(), positions)
            if not extras:
                for name, shape, dtype, fmt, nb, off, sh, pos in rows:
                    yield TensorEntry(name, shape, dtype, fmt, nb, off, sh, pos, None)
            else:
                for row, (name, shape, dtype, fmt, nb, off, sh, pos) in enumerate(rows, a):
                    yield TensorEntry(name, shape, dtype, fmt, nb, off, sh, pos, extras.get(row))

    def names_of(self, a: int, b: int) -> list[str]:
        """The names of records ``a`` to ``b - 1``."""
        return self._names_of(a, b)

    def _names_of(self, a: int, b: int) -> list[str]:
        names = self._names
        ends = self._ends[a:b].tolist()
        starts = [int(self._ends[a - 1]) if a else 0, *ends[:-1]]
        return [names[s:e].decode("utf-8", "surrogatepass") for s, e in zip(starts, ends)]

    def name_hashes(self) -> np.ndarray:
        """``hash()`` of every record's name, in stored order (this process's string hashes)."""
        if self._hashes is None or len(self._hashes) != len(self):
            self._hashes = np.fromiter(map(hash, self.names()), dtype=np.int64, count=len(self))
        return self._hashes

    def has_extras(self, lo: int, hi: int) -> bool:
        """Whether some record from ``lo`` to ``hi - 1`` has unknown keys."""
        return bool(self._extras) and any(lo <= k < hi for k in self._extras)

    def kind_ids(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The shape, dtype and format numbers of records ``lo`` to ``hi - 1`` (see
        :meth:`kind_tables`)."""
        return self._shape_ids[lo:hi], self._dtype_ids[lo:hi], self._format_ids[lo:hi]

    def kind_tables(self) -> tuple[list[tuple[int, ...]], list[str], list[str]]:
        """The distinct shapes, dtypes and formats the numbers of :meth:`kind_ids` index."""
        return self._shapes, self._dtypes, self._formats

    def kind_counts(self) -> tuple[int, int, int]:
        """How many distinct shapes, dtypes and formats there are."""
        return len(self._shapes), len(self._dtypes), len(self._formats)

    def extras(self) -> Iterable[dict[str, Any]]:
        """The unknown keys of the records that have some."""
        return self._extras.values()

    def shard_records(self, shard: int) -> ShardRecords:
        """The records of shard ``shard``."""
        return ShardRecords(self, int(self.starts[shard]), int(self.starts[shard + 1]))

    def by_name(self) -> ByName:
        """The records by name (made on first use)."""
        if self._by_name is None:
            self._by_name = ByName(self)
        return self._by_name

    def nbytes_total(self) -> int:
        """The sum of every record's nbytes (as Python integers: no overflow)."""
        return sum(self.nbytes.tolist())


def _item(records: Records, base: int, n: int, i: int | slice) -> TensorEntry | list[TensorEntry]:
    """``window[i]`` of the ``n`` records of ``records`` from ``base`` (an index or a slice)."""
    if isinstance(i, slice):
        lo, hi, step = i.indices(n)
        if step == 1:
            return list(records.range(base + lo, base + max(lo, hi)))
        return [next(records.range(base + k, base + k + 1)) for k in range(lo, hi, step)]
    if i < 0:
        i += n
    if not 0 <= i < n:
        raise IndexError("record index out of range")
    return next(records.range(base + i, base + i + 1))


class ShardRecords(Sequence[TensorEntry]):
    """The records of one shard: a window on :class:`Records`."""

    def __init__(self, records: Records, lo: int, hi: int) -> None:
        self._records, self._lo, self._hi = records, lo, hi

    def __len__(self) -> int:
        return self._hi - self._lo

    @overload
    def __getitem__(self, i: int) -> TensorEntry: ...

    @overload
    def __getitem__(self, i: slice) -> list[TensorEntry]: ...

    def __getitem__(self, i: int | slice) -> TensorEntry | list[TensorEntry]:
        return _item(self._records, self._lo, len(self), i)

    def __iter__(self) -> Iterator[TensorEntry]:
        return self._records.range(self._lo, self._hi)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, (str, bytes)):
            return list(self) == list(other)
        return NotImplemented


    def __repr__(self) -> str:
        return f"ShardRecords({self._hi - self._lo} records)"

    def columns(self) -> tuple[Records, int, int]:
        """The columns this window is on, and its first and past-the-last record."""
        return self._records, self._lo, self._hi


class ByName(Mapping[str, TensorEntry]):
    """The records by name as the loaders keep them (a repeated name: the last record, in the
    place of the first), like ``{t.name: t for t in records}`` but held as two arrays of
    hashes and positions."""

    def __init__(self, records: Records) -> None:
        self._records = records
        hashes = records.name_hashes()
        self._order = np.argsort(hashes, kind="stable")
        self._hashes = hashes[self._order]
        self._later: dict[int, int] = {}  # first position of a repeated name -> its last
        self._hidden: set[int] = set()  # positions of a repeated name after its first
        same = np.flatnonzero(self._hashes[1:] == self._hashes[:-1])
        groups: dict[int, list[int]] = {}
        for k in same.tolist():
            groups.setdefault(int(self._hashes[k]), []).extend((int(self._order[k]), int(self._order[k + 1])))
        for rows in groups.values():
            by: dict[str, list[int]] = {}
            for r in sorted(set(rows)):
                by.setdefault(records.name(r), []).append(r)
            for rs in by.values():
                if len(rs) > 1:
                    self._later[rs[0]] = rs[-1]
                    self._hidden.update(rs[1:])

    def dropped(self) -> set[int]:
        """The positions of the records a later record of the same name hides (the loaders
        keep the last): every record of a repeated name but its last."""
        return set(self._later) | (self._hidden - set(self._later.values()))

    def position(self, name: str) -> int | None:
        """The position of the record ``name`` names (the last of a repeated name)."""
        h = hash(name)
        lo = int(np.searchsorted(self._hashes, h, "left"))
        hi = int(np.searchsorted(self._hashes, h, "right"))
        found = [r for r in self._order[lo:hi].tolist() if self._records.name(r) == name]
        return max(found) if found else None

    def __getitem__(self, name: str) -> TensorEntry:
        if not isinstance(name, str):
            raise KeyError(name)
        r = self.position(name)
        if r is None:
            raise KeyError(name)
        return self._records[r]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.position(name) is not None

    def __len__(self) -> int:
        return len(self._records) - len(self._hidden)

    def __iter__(self) -> Iterator[str]:
        hidden = self._hidden
        for i, name in enumerate(self._records.names()):
            if i not in hidden:
                yield name

    def values(self) -> ValuesView[TensorEntry]:
        """The records, in the order of their names' first appearance."""
        return _Values(self)

    def items(self) -> ItemsView[str, TensorEntry]:
        """(name, record) pairs in the order of the names' first appearance."""
        return _Items(self)

    def _iter_values(self) -> Iterator[TensorEntry]:
        later, hidden, records = self._later, self._hidden, self._records
        if not later:
            yield from records
            return
        for i, t in enumerate(records):
            if i in hidden:
                continue
            yield records[later[i]] if i in later else t


class _Values(ValuesView[TensorEntry]):
    _mapping: ByName

    def __iter__(self) -> Iterator[TensorEntry]:
        return self._mapping._iter_values()


class _Items(ItemsView[str, TensorEntry]):
    _mapping: ByName

    def __iter__(self) -> Iterator[tuple[str, TensorEntry]]:
        return ((t.name, t) for t in self._mapping._iter_values())
