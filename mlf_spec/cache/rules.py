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

from . import dtypes, encodings
from .index import INDEX_NAMES, INT64_MAX

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


def structural(lazy: LazyCache) -> Iterator[Problem]:
    """The rules that decide whether the loaders can read the tensors at all, plus the
    observations that need no data (no shard byte is read)."""
    idx = lazy.index
    if not idx.has_metadata:
        yield Problem("cache.metadata-missing", "", "no 'metadata' key: TVM's Python loader raises KeyError (the C++ "
                      "loader and the web runtime do not read it)")
    if idx.nonfinite:
        yield Problem("cache.json-nonfinite", "", f"{idx.nonfinite} NaN / Infinity literal(s): not RFC 8259 JSON; the "
                      "web runtime's JSON.parse refuses the index (Python's json and tvm-ffi's parser read them); "
                      "mlf-spec reads each as null")
    if idx.surrogates:
        yield Problem("cache.lone-surrogate", "", "a string holds a lone surrogate escape (\\ud800 alone): the C++ "
                      "loader (tvm-ffi's JSON parser) refuses the index, Python's json and the web runtime read it")
    if idx.version is None:
        yield Problem("cache.index-name", "", f"the index is named {lazy.index_name!r}; TVM's C++ loader opens only "
                      "tensor-cache.json (0.22 on) or ndarray-cache.json (0.16 to 0.21) in a folder")
    if idx.version is not None:
        other = INDEX_NAMES[3 - idx.version] if 3 - idx.version in INDEX_NAMES else None
        if other is not None and os.path.lexists(lazy.folder / other):
            yield Problem("cache.two-indexes", "", f"the folder also holds {other}: TVM 0.16 to 0.21 read "
                          f"ndarray-cache.json, 0.22 on tensor-cache.json; mlf-spec reads {lazy.index_name}")
    for key in idx.extra:
        yield Problem("cache.unknown-key", key, f"key {key!r} is not written by dump_tensor_cache; loaders ignore it")
    seen: dict[str, Any] = {}
    repeated = len(lazy.by_name) != len(lazy.tensors)  # some name is stored twice
    for i, shard in enumerate(idx.shards):
        sp = shard.path
        for key in shard.extra:
            yield Problem("cache.unknown-key", f"{sp}.{key}", f"key {key!r} is not written by dump_tensor_cache")
        if shard.format != "raw-shard":
            yield Problem("shard.format", f"{sp}.format", f"shard format {shard.format!r}: only raw-shard is loaded")
        m = _SHARD_NAME.fullmatch(shard.data_path)
        if m is None or int(m.group(1)) != i or m.group(1) != str(i):
            yield Problem("shard.data-path", f"{sp}.dataPath",
                          f"dataPath {shard.data_path!r} is not the writer's params_shard_{i}.bin")
        if not shard.has_md5:
            yield Problem("shard.md5-missing", sp, "no md5sum (written before v0.16, or by another tool)")
        elif not shard.md5_syntax_ok:
            yield Problem("shard.md5-syntax", f"{sp}.md5sum", "md5sum is not 32 lower-case hex digits as the writer "
                          "writes it (no loader reads it)" + ("; compared case-insensitively" if shard.md5_comparable
                                                             else "; not compared"))
        if not shard.tensors:
            yield Problem("shard.empty", f"{sp}.records", "a shard without tensor records")
        size = lazy.shard_size(i)
        shard_file = str(lazy.folder / shard.data_path)
        if size is None:
            yield Problem("shard.missing", f"{sp}.dataPath", f"shard file {shard.data_path!r} does not exist")
        elif size != shard.nbytes:
            yield Problem("shard.size", f"{sp}.nbytes", f"the shard holds {size} bytes, its record says {shard.nbytes} "
                          f"({'shorter' if size < shard.nbytes else 'longer'}): the loaders refuse it", shard_file, min(size, shard.nbytes))
        limit = shard.nbytes if size is None else min(size, shard.nbytes)
        covered_plain = None if repeated else _plain(shard.tensors, limit, idx.version)
        if covered_plain is not None:  # the writer's layout: nothing to report but a gap at the end
            if size is not None and size == shard.nbytes and covered_plain < size and shard.tensors:
                yield Problem("shard.gap", sp, f"bytes {covered_plain}..{size} belong to no tensor", shard_file,
                              covered_plain)
            continue
        spans = []
        for t in shard.tensors:
            if t.extra:
                for key in t.extra:
                    yield Problem("cache.unknown-key", f"{t.path}.{key}", f"key {key!r} is not written by dump_tensor_cache")
            if repeated and t.name in seen:
                yield Problem("tensor.duplicate-name", f"{t.path}.name",
                              f"name {t.name!r} also at {seen[t.name].path}: the loaders keep the last one")
            seen[t.name] = t
            kind = _kinds.get((t.dtype, t.format, idx.version))
            if kind is None:
                kind = _kinds[(t.dtype, t.format, idx.version)] = _kind(t.dtype, t.format, idx.version)
            dt, bits, fast = kind
            n = math.prod(t.shape)
            if fast and t.nbytes == (n * bits + 7) // 8 and 0 <= t.offset and t.offset + t.nbytes <= limit \
                    and min(t.shape, default=0) >= 0 and len(t.shape) <= NUMPY_MAX_DIMS \
                    and (n or (t.format == "raw" and dt is not None and not _numpy_too_big(t.shape, dt))):
                spans.append((t.offset, t.offset + t.nbytes, t))
                continue
            tp = t.path
            if dt is None:
                yield Problem("tensor.dtype", f"{tp}.dtype", f"dtype {_short(t.dtype)!r} is not a TVM dtype of the "
                              f"loaders of {idx.version and INDEX_NAMES_OF.get(idx.version) or 'any index'}")
            elif not fast_python(t.dtype):
                yield Problem("tensor.dtype-numpy", f"{tp}.dtype", f"dtype {t.dtype!r}: TVM's Python loader fails in "
                              "np.frombuffer (no NumPy type of that spelling); the C++ loader reads it as "
                              f"{dt.canonical}")
            if t.format not in encodings.ENCODINGS:
                yield Problem("tensor.format-unknown", f"{tp}.format", f"format {t.format!r} is known to no loader: "
                              "the bytes are read raw")
            elif dt is not None and t.format != "raw" and not encodings.applies(t.format, t.dtype):
                yield Problem("tensor.format-ignored", f"{tp}.format",
                              f"format {t.format!r} does not apply to {t.dtype}: the bytes are read raw")
            if any(d < 0 for d in t.shape):
                yield Problem("tensor.negative-extent", f"{tp}.shape", f"negative extent in {_shape_text(t.shape)}")
                continue
            if numpy_shape_bad(t.shape, dt):
                yield Problem("tensor.shape-numpy", f"{tp}.shape", f"shape {_shape_text(t.shape)}: NumPy holds at most "
                              f"{NUMPY_MAX_DIMS} dimensions and {INT64_MAX} bytes of shape, so TVM's Python loader fails "
                              "(np.empty / reshape); the C++ loader reads it")
            if dt is None:
                continue
            want = expected_nbytes(dt, t.format, t.shape)
            if want > INT64_MAX:
                yield Problem("tensor.nbytes", f"{tp}.shape", f"the shape's byte size {_size_text(want)} overflows int64")
                continue
            if want != t.nbytes:
                yield Problem("tensor.nbytes", f"{tp}.nbytes", f"nbytes {t.nbytes} but shape {_shape_text(t.shape)} of {t.dtype} "
                              f"under {t.format if encodings.applies(t.format, t.dtype) else 'raw'} stores {want}")
            if t.format != "raw" and encodings.applies(t.format, t.dtype) and numel(t.shape) == 0:
                yield Problem("tensor.empty-encoded", tp, "an empty tensor under an encoding")
            if t.offset < 0 or t.offset + t.nbytes > limit:
                yield Problem("tensor.out-of-shard", f"{tp}.byteOffset",
                              f"bytes {t.offset}..{t.offset + t.nbytes} are not inside the shard's {limit} bytes",
                              shard_file, max(t.offset, 0))
                continue
            spans.append((t.offset, t.offset + t.nbytes, t))
        spans.sort(key=lambda x: (x[0], x[1]))
        covered = 0
        for start, end, te in spans:
            if start < covered and end > start:
                tp = te.path
                yield Problem("tensor.overlap", f"{tp}.byteOffset", f"bytes {start}..{end} overlap another tensor",
                              shard_file, start)
            elif start > covered:
                yield Problem("shard.gap", sp, f"bytes {covered}..{start} belong to no tensor", shard_file, covered)
            covered = max(covered, end)
        if size is not None and size == shard.nbytes and covered < size and spans:
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


INDEX_NAMES_OF = {1: "ndarray-cache.json (TVM 0.16 to 0.21)", 2: "tensor-cache.json (TVM 0.22 on)"}


def md5_problems(lazy: LazyCache) -> Iterator[Problem]:
    """md5sum against the shard bytes (reads every shard)."""
    for i, shard in enumerate(lazy.index.shards):
        if not shard.md5_comparable or lazy.shard_size(i) is None:
            continue
        h = hashlib.md5(usedforsecurity=False)
        for block in lazy.shard_blocks(i):
            h.update(block)
        if shard.md5sum is not None and h.hexdigest() != shard.md5sum.lower():
            yield Problem("shard.md5", f"{shard.path}.md5sum",
                          f"the shard's MD5 is {h.hexdigest()}, its record says {shard.md5sum}",
                          str(lazy.folder / shard.data_path), 0)


#: Problems that stop the codec from reading (strict open): the rules that have an error
#: class in spec/findings/cache_check.yaml (the loaders refuse or misread).
FATAL = frozenset(code for code, f in FINDINGS.items() if f.get("error_class"))


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
