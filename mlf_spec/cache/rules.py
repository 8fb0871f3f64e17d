"""The rules a tensor cache must follow for TVM's loaders, evaluated over an opened cache:
each broken rule is a finding (spec/findings/cache_check.yaml). The codec's strict open
raises the first error-severity finding; ``check`` reports them all."""

from __future__ import annotations

import hashlib
import math
import os
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from mlf_spec.errors import MlfError
from mlf_spec.generated import cache_check_findings as _findings
from mlf_spec.generated import cache_check_rows as _rows
from mlf_spec.verdict.facts import Facts, lazy

from . import dtypes, encodings
from .index import INDEX_NAMES, INT64_MAX
from .records import ShardRecords

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence
    from pathlib import Path
    from typing import Protocol

    from .index import CacheIndex, TensorEntry

    class LazyCache(Protocol):
        """What the rules read of an opened cache (mlf_spec.cache.codec.LazyCache)."""

        index: CacheIndex
        folder: Path
        index_name: str
        tensors: Sequence[TensorEntry]
        by_name: Mapping[str, TensorEntry]

        def shard_size(self, i: int) -> int | None: ...

        def shard_blocks(self, i: int) -> Iterable[memoryview]: ...

FINDINGS = _findings.FINDINGS
_SHARD_NAME = re.compile(r"params_shard_([0-9]+)\.bin")


class Problem:
    """A broken rule: finding ``code``, JSON ``path`` in the index, ``message``, and the
    file and byte offset where the bytes concerned are (the index's when None)."""

    __slots__ = ("code", "path", "message", "file", "offset")

    def __init__(self, code: str, path: str, message: str, file: str | None = None, offset: int | None = None) -> None:
        self.code, self.path, self.message, self.file, self.offset = code, path, message, file, offset

    @property
    def severity(self) -> str:
        """The finding's severity from the spec."""
        return FINDINGS[self.code]["severity"]


def numel(shape: tuple[int, ...]) -> int:
    """The number of elements (1 for a scalar)."""
    return math.prod(shape)


def expected_nbytes(dtype: dtypes.CacheDType, fmt: str, shape: tuple[int, ...]) -> int:
    """Bytes a record stores: numel x the stored width under ``fmt`` (bits x lanes, rounded up)."""
    bits = encodings.stored_bits(fmt, dtype.text, dtype.bits)
    return (numel(shape) * bits * dtype.lanes + 7) // 8


def _problems(rows: list[tuple[str, str, str, int | None, str | None]]) -> Iterator[Problem]:
    for code, path, message, offset, file in rows:
        yield Problem(code, path, message, file, offset)


def structural(lazy: LazyCache) -> Iterator[Problem]:
    """The rules that decide whether the loaders can read the tensors at all, plus the
    observations that need no data (no shard byte is read): the rows of
    spec/findings/cache_check.yaml over the index, each shard and each tensor the writer's
    layout does not cover, then the shard bytes no tensor or two tensors cover."""
    idx = lazy.index
    other = INDEX_NAMES.get(3 - idx.version) if idx.version is not None else None
    yield from _problems(_rows.index({
        "has_metadata": int(idx.has_metadata), "nonfinite": int(bool(idx.nonfinite)), "nonfinite_count": idx.nonfinite,
        "lone_surrogate": int(bool(idx.surrogates)), "named": idx.version or 0, "index_name": lazy.index_name,
        "other_index": other if other is not None and os.path.lexists(lazy.folder / other) else "",
        "extra_keys": list(idx.extra)}))
    seen: dict[str, Any] = {}
    repeated = len(lazy.by_name) != len(lazy.tensors)  # some name is stored twice
    for i, shard in enumerate(idx.shards):
        size = lazy.shard_size(i)
        shard_file = str(lazy.folder / shard.data_path)
        m = _SHARD_NAME.fullmatch(shard.data_path)
        yield from _problems(_rows.shard(_SHARD_TEXTS({
            "path": shard.path, "index": i, "extra_keys": shard.extra or (), "format": shard.format,
            "format_ok": int(shard.format == "raw-shard"), "data_path": shard.data_path,
            "data_path_ok": int(m is not None and int(m.group(1)) == i and m.group(1) == str(i)),
            "has_md5": int(shard.has_md5), "md5_syntax_ok": int(shard.md5_syntax_ok), "records": len(shard.tensors),
            "exists": int(size is not None), "size_ok": int(size == shard.nbytes), "size": size, "nbytes": shard.nbytes,
            "file": shard_file, "part": shard})))
        limit = shard.nbytes if size is None else min(size, shard.nbytes)
        covered_plain = None if repeated else _plain(shard.tensors, limit, idx.version)
        if covered_plain is not None:  # the writer's layout: nothing to report but a gap at the end
            if size is not None and size == shard.nbytes and covered_plain < size and shard.tensors:
                yield Problem("shard.gap", shard.path, f"bytes {covered_plain}..{size} belong to no tensor", shard_file,
                              covered_plain)
            continue
        spans = []
        for t in shard.tensors:
            dup_of = seen[t.name].path if repeated and t.name in seen else ""
            seen[t.name] = t
            kind = _kinds.get((t.dtype, t.format, idx.version))
            if kind is None:
                kind = _kinds[(t.dtype, t.format, idx.version)] = _kind(t.dtype, t.format, idx.version)
            dt, bits, fast = kind
            n = math.prod(t.shape)
            if fast and not dup_of and not t.extra and t.nbytes == (n * bits + 7) // 8 and 0 <= t.offset \
                    and t.offset + t.nbytes <= limit and min(t.shape, default=0) >= 0 \
                    and len(t.shape) <= NUMPY_MAX_DIMS \
                    and (n or (t.format == "raw" and dt is not None and not _numpy_too_big(t.shape, dt))):
                spans.append((t.offset, t.offset + t.nbytes, t))  # no row can hold: the writer's record
                continue
            f = _tensor_facts(t, dt, n, dup_of, idx.version, limit, shard_file)
            yield from _problems(_rows.tensor(f))
            if dt is not None and not f["negative"] and f["want"] <= INT64_MAX and 0 <= t.offset \
                    and t.offset + t.nbytes <= limit:  # its bytes lie in the shard: they count for gaps and overlaps
                spans.append((t.offset, t.offset + t.nbytes, t))
        yield from _layout(shard.path, spans, size if size == shard.nbytes else None, shard_file)


#: The facts of a shard record, its texts made when a row reads them (``part``: the record).
_SHARD_TEXTS = lazy("ShardFacts", {
    "md5_compare": lambda f: "; compared case-insensitively" if f["part"].md5_comparable else "; not compared",
    "size_word": lambda f: "shorter" if f["size"] < f["nbytes"] else "longer",
})


def _tensor_facts(t: TensorEntry, dt: dtypes.CacheDType | None, n: int, dup_of: str, version: int | None, limit: int,
                  shard_file: str) -> Facts:
    """The facts of a tensor record the writer's layout does not cover."""
    applies = encodings.applies(t.format, t.dtype)
    return _TENSOR_TEXTS({
        "path": t.path, "name": t.name, "extra_keys": t.extra or (), "dup_of": dup_of, "dtype": t.dtype,
        "dtype_ok": int(dt is not None), "format": t.format, "format_known": int(t.format in encodings.ENCODINGS),
        "applies": int(applies), "negative": int(min(t.shape, default=0) < 0), "numel": n, "nbytes": t.nbytes,
        # read by nearly every record's rows: made now rather than on first read
        "python_reads": int(fast_python(t.dtype)), "numpy_bad": int(numpy_shape_bad(t.shape, dt)),
        "want": expected_nbytes(dt, t.format, t.shape) if dt is not None else 0,
        "offset": t.offset, "limit": limit, "file": shard_file, "int64_max": INT64_MAX, "max_dims": NUMPY_MAX_DIMS,
        "part": (t, dt, version),
    })


#: The facts of a tensor record, its texts and sizes made when a row reads them (``part``: the
#: record, its dtype, the index's version).
_TENSOR_TEXTS = lazy("TensorFacts", {
    "dtype_short": lambda f: _short(f["dtype"]),
    "loaders": lambda f: f["part"][2] and INDEX_NAMES_OF.get(f["part"][2]) or "any index",
    "canonical": lambda f: f["part"][1].canonical, "stored_format": lambda f: f["format"] if f["applies"] else "raw",
    "shape_text": lambda f: _shape_text(f["part"][0].shape), "want_text": lambda f: _size_text(f["want"]),
})


def _layout(sp: str, spans: list, size: int | None, shard_file: str) -> Iterator[Problem]:
    """Overlaps and gaps of the tensors whose bytes lie in a shard (``size``: the file's, when
    it is the record's nbytes; a gap at the end is reported only then)."""
    spans.sort(key=lambda x: (x[0], x[1]))
    covered = 0
    for start, end, te in spans:
        if start < covered and end > start:
            yield Problem("tensor.overlap", f"{te.path}.byteOffset", f"bytes {start}..{end} overlap another tensor",
                          shard_file, start)
        elif start > covered:
            yield Problem("shard.gap", sp, f"bytes {covered}..{start} belong to no tensor", shard_file, covered)
        covered = max(covered, end)
    if size is not None and covered < size and spans:
        yield Problem("shard.gap", sp, f"bytes {covered}..{size} belong to no tensor", shard_file, covered)


#: (dtype, format) -> (parsed dtype, stored bits per element, whether a record of it may take
#: the fast path: a known dtype with a NumPy type, a known format that is raw or applies)
_kinds: dict[tuple[str, str, int | None], tuple[dtypes.CacheDType | None, int, bool]] = {}


def _kind(dtype: str, fmt: str, version: int | None) -> tuple[dtypes.CacheDType | None, int, bool]:
    dt = dtypes.parse(dtype, version)
    if dt is None:
        return None, 0, False
    bits = encodings.stored_bits(fmt, dtype, dt.bits) * dt.lanes
    applies = encodings.applies(fmt, dtype)
    fast = dt.numpy is not None and fast_python(dtype) and (fmt == "raw" or applies)
    return dt, bits, fast


_plain_bits: dict[tuple[str, str, int | None], int] = {}
_plain_numel: dict[tuple[int, ...], int] = {}


def _plain(tensors: Sequence[Any], limit: int, version: int | None) -> int | None:
    """The end of the bytes the shard's records cover when they are laid out as the writer lays
    them out (no unknown key, each dtype and format read as-is by both loaders, nbytes right,
    a nonempty shape NumPy holds, each record starting where the previous one ended, inside
    ``limit``), so that no finding but a gap at the end can apply; None to take the general
    path. About a microsecond a record: the strict open of an index is close to its decoding."""
    if isinstance(tensors, ShardRecords):
        return _plain_columns(tensors, limit, version)
    covered = 0
    bits_of, numel_of = _plain_bits, _plain_numel
    if len(numel_of) > 1 << 16:  # distinct shapes are few in a model; a hostile index cannot grow it
        numel_of.clear()
    for t in tensors:
        if t.extra or t.offset != covered:
            return None
        key = (t.dtype, t.format, version)
        bits = bits_of.get(key)
        if bits is None:
            _dt, b, fast = _kind(t.dtype, t.format, version)
            bits = bits_of[key] = b if fast else 0
        shape = t.shape
        n = numel_of.get(shape)
        if n is None:
            n = numel_of[shape] = math.prod(shape) if len(shape) <= NUMPY_MAX_DIMS and min(shape, default=1) > 0 else 0
        if not bits or not n or t.nbytes != (n * bits + 7) // 8:
            return None
        covered += t.nbytes
    return covered if covered <= limit else None


def _plain_bits_of(dtype: str, fmt: str, version: int | None) -> int:
    key = (dtype, fmt, version)
    bits = _plain_bits.get(key)
    if bits is None:
        _dt, b, fast = _kind(dtype, fmt, version)
        bits = _plain_bits[key] = b if fast else 0
    return bits


def _plain_columns(shard: ShardRecords, limit: int, version: int | None) -> int | None:
    """:func:`_plain` on a shard's columns, without making its records: the same answer, with
    the Python work per distinct (shape, dtype, format) rather than per record."""
    import numpy as np

    cols, lo, hi = shard.columns()
    if hi == lo:
        return 0 if limit >= 0 else None
    if cols.has_extras(lo, hi):
        return None
    nb, off = cols.nbytes[lo:hi], cols.offsets[lo:hi]
    if int(nb.min()) < 1 or int(nb.max()) > limit or int(nb.max()) * (hi - lo) >= 1 << 62:
        return None  # a record of no byte is not plain; past 2^62 the sums would not be exact
    ends = np.cumsum(nb)
    if int(off[0]) != 0 or not np.array_equal(off[1:], ends[:-1]):
        return None
    shape_ids, dtype_ids, format_ids = cols.kind_ids(lo, hi)
    n_dtypes, n_formats = cols.kind_counts()[1:]
    combo = (shape_ids.astype(np.int64) * n_dtypes + dtype_ids) * n_formats + format_ids
    keys, inverse = np.unique(combo, return_inverse=True)
    shapes, dtypes_, formats = cols.kind_tables()
    want = []
    for k in keys.tolist():
        rest, f = divmod(k, n_formats)
        sh, d = divmod(rest, n_dtypes)
        shape = shapes[sh]
        n = math.prod(shape) if len(shape) <= NUMPY_MAX_DIMS and min(shape, default=1) > 0 else 0
        bits = _plain_bits_of(dtypes_[d], formats[f], version)
        size = (n * bits + 7) // 8
        if not bits or not n or size > INT64_MAX:
            return None
        want.append(size)
    if not np.array_equal(np.asarray(want, np.int64)[inverse.reshape(-1)], nb):
        return None
    covered = int(ends[-1])
    return covered if covered <= limit else None


def fast_python(dtype: str) -> bool:
    """Whether TVM's Python loader reads the spelling (dtypes.python_reads)."""
    return dtypes.python_reads(dtype)


#: NumPy's limit on dimensions (numpy.core: NPY_MAXDIMS 64 in NumPy 2)
NUMPY_MAX_DIMS = 64


def _numpy_too_big(shape: tuple[int, ...], dt: dtypes.CacheDType) -> bool:
    """Whether np.empty refuses the shape although it holds no element: NumPy multiplies the
    nonzero extents (and the item size) and refuses a product past int64."""
    size = max(1, (dt.bits * dt.lanes + 7) // 8)
    for d in shape:
        if d:
            size *= d
            if size > INT64_MAX:
                return True
    return False


def numpy_shape_bad(shape: tuple[int, ...], dt: dtypes.CacheDType | None) -> bool:
    """Whether NumPy cannot hold an array of ``shape`` (TVM's Python loader then fails)."""
    if len(shape) > NUMPY_MAX_DIMS:
        return True
    if any(d < 0 for d in shape) or math.prod(shape) != 0:
        return False
    return _numpy_too_big(shape, dt) if dt is not None else False


def _size_text(n: int) -> str:
    """A byte size for a message: its digits, or its power of two when it has more than 30
    (int -> str is refused past 4,300 digits)."""
    return str(n) if n < 10 ** 30 else f"about 2^{n.bit_length() - 1}"


def _shape_text(shape: tuple[int, ...]) -> str:
    """A shape for a message, cut after 8 extents."""
    inner = ", ".join(str(d) for d in shape[:8])
    return f"[{inner}{', ...' if len(shape) > 8 else ''}] ({len(shape)} extents)" if len(shape) > 8 else f"[{inner}]"


def _short(text: str) -> str:
    return text if len(text) <= 40 else text[:40] + "..."


INDEX_NAMES_OF: dict[int, str] = {1: "ndarray-cache.json (TVM 0.16 to 0.21)", 2: "tensor-cache.json (TVM 0.22 on)"}


def md5_problems(lazy: LazyCache) -> Iterator[Problem]:
    """md5sum against the shard bytes (reads every shard): the shard_bytes rows."""
    for i, shard in enumerate(lazy.index.shards):
        if not shard.md5_comparable or lazy.shard_size(i) is None:
            continue
        h = hashlib.md5(usedforsecurity=False)
        for block in lazy.shard_blocks(i):
            h.update(block)
        if shard.md5sum is not None:
            yield from _problems(_rows.shard_bytes({
                "path": shard.path, "md5": h.hexdigest(), "md5sum": shard.md5sum, "recorded": shard.md5sum.lower(),
                "file": str(lazy.folder / shard.data_path)}))


#: Problems that stop the codec from reading (strict open): the findings whose
#: strict_refuses is true in spec/findings/cache_check.yaml (the loaders refuse or misread).
FATAL = _rows.STRICT_REFUSES


def error_type(code: str) -> type[MlfError]:
    """The MlfError subclass of a refusing rule's conformance error class (its
    ``error_class`` in the spec, mapped through spec/tables/conformance_errors.yaml)."""
    from mlf_spec import errors
    from mlf_spec.generated import conformance_errors_table as _classes

    name = FINDINGS[code]["error_class"]
    row = next(r for r in _classes.ROWS if r["error_class"] == name)
    cls = getattr(errors, row["mlf_error"])
    assert isinstance(cls, type) and issubclass(cls, MlfError)
    return cls
