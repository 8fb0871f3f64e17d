"""Numbers of a tensor's values for ``params dump --stats`` / ``--values N``: vectorised over
the whole tensor (no per-element Python loop), for every dtype NumPy can hold (bfloat16 and
the float8/float6/float4 types through ml_dtypes), sub-byte integers and floats unpacked from
their stored layout (one element per byte, or bit-packed), a vector dtype as the scalars TVM
stores for it (numel of them: TVM's writer leaves the lanes out of the byte count).

    >>> import numpy as np
    >>> tensor_stats(np.array([1.0, np.nan, 0.0, np.inf], "float32"))["nan"]
    1
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from . import dtypes as _dt

#: Elements reduced at once (bounds the float64 copy of a large tensor).
_CHUNK = 1 << 22


def values_of(t: Any, dialect: _dt.Dialect) -> np.ndarray | None:
    """The elements of a tensor read by :mod:`mlf_spec.params` (an array, or a
    :class:`~mlf_spec.params.codec.StoredTensor`) as a flat NumPy array: sub-byte values
    unpacked, vector dtypes as their stored scalars; None for what has no numeric value (handles,
    custom and unknown codes)."""
    if isinstance(t, np.ndarray):
        return t.reshape(-1)
    dt = t.dtype
    base = _dt.lookup(dialect, dt.code, dt.bits, 1)
    row = _dt.row_of(dialect, dt.code, dt.bits)
    if row is None or row["kind"] in ("handle", "custom"):
        return None
    numel = int(np.prod(t.shape, dtype=np.int64))  # TVM stores numel * ceil(bits / 8) bytes: lanes are not stored
    raw = np.frombuffer(memoryview(t.data).cast("B"), np.uint8)
    if dt.bits % 8 == 0:
        if base.numpy_name is None:
            return None
        return raw[: numel * dt.bits // 8].view(_dt._numpy_type(base.numpy_name))
    if dt.bits > 64:
        return None  # no NumPy integer holds such a code
    if _dt.layout(dialect, dt.code, dt.bits) == "packed":
        bits = np.unpackbits(raw[: (numel * dt.bits + 7) // 8], bitorder="little")[: numel * dt.bits]
        codes = _little_endian(bits.reshape(numel, dt.bits), 1)
    else:  # one element per ceil(bits / 8) bytes, the value in its low bits
        width = -(-dt.bits // 8)
        codes = _little_endian(raw[: numel * width].reshape(numel, width), 8) & np.uint64((1 << dt.bits) - 1)
    if dt.bits <= 8:
        codes = codes.astype(np.uint8)
    if row["kind"] == "int":
        sign = 1 << (dt.bits - 1)  # bits < 64 here: a whole multiple of 8 was viewed above
        signed = (codes.astype(np.int64) ^ sign) - sign
        return signed.astype(np.int8) if dt.bits <= 8 else signed
    if row["kind"] in ("uint", "bool"):
        return codes
    if row["kind"] in ("float4", "float6", "float"):  # float4_e2m1fn, float6_e2m3fn ...: ml_dtypes holds them
        try:
            import ml_dtypes

            return codes.view(getattr(ml_dtypes, base.name))
        except (AttributeError, TypeError, ValueError):
            return None
    return None


def _little_endian(digits: np.ndarray, width: int) -> np.ndarray:
    """The unsigned integers (uint64) whose little-endian digits of ``width`` bits are the
    rows of ``digits`` (bits: width 1; bytes: width 8; at most 64 bits in all)."""
    codes = np.zeros(digits.shape[0], np.uint64)
    for k in range(digits.shape[1]):
        codes |= digits[:, k].astype(np.uint64) << np.uint64(k * width)
    return codes


def tensor_stats(v: np.ndarray | None) -> dict[str, Any] | None:
    """min, max, mean, std (over the finite values), NaN, Inf and zero counts and the
    element count of a flat array (complex: of the magnitudes); None for no values."""
    if v is None:
        return None
    n = int(v.size)
    out: dict[str, Any] = {"elements": n, "min": None, "max": None, "mean": None, "std": None, "nan": 0, "inf": 0,
                           "zeros": 0}
    if n == 0:
        return out
    if v.dtype.kind in "iub":
        x = v.astype(np.int64) if v.dtype.kind == "b" else v
        out.update(min=int(x.min()), max=int(x.max()), zeros=int(np.count_nonzero(x == 0)))
        total = 0.0
        sq = 0.0
        for i in range(0, n, _CHUNK):
            c = x[i:i + _CHUNK].astype(np.float64)
            total += float(c.sum())
        mean = total / n
        for i in range(0, n, _CHUNK):
            c = x[i:i + _CHUNK].astype(np.float64) - mean
            sq += float(np.dot(c, c))
        out.update(mean=mean, std=(sq / n) ** 0.5)
        return out
    nan = inf = zeros = finite = 0
    total = 0.0
    lo, hi = np.inf, -np.inf
    with np.errstate(over="ignore", invalid="ignore"):  # a sum past float64's range is redone scaled below
        for i in range(0, n, _CHUNK):
            c = _as_float(v[i:i + _CHUNK])
            isnan = np.isnan(c)
            isinf = np.isinf(c)
            nan += int(isnan.sum())
            inf += int(isinf.sum())
            zeros += int(np.count_nonzero(c == 0))
            f = c[~(isnan | isinf)]
            if f.size:
                finite += int(f.size)
                total += float(f.sum())
                lo, hi = min(lo, float(f.min())), max(hi, float(f.max()))
        out.update(nan=nan, inf=inf, zeros=zeros)
        if finite:
            scale = max(abs(lo), abs(hi)) or 1.0
            mean = total / finite
            if not np.isfinite(mean):  # the sum overflowed: the mean of the values scaled down, scaled up
                mean = sum(float((f / scale).sum()) for f in _finite(v)) / finite * scale
            sq = sum(float(np.dot(d, d)) for d in (f - mean for f in _finite(v)))
            if np.isfinite(sq):
                std = (sq / finite) ** 0.5
            else:  # the squares overflowed: std <= max |value|, so the scaled sum gives a finite one
                sq = sum(float(np.dot(d, d)) for d in (f / scale - mean / scale for f in _finite(v)))
                std = (sq / finite) ** 0.5 * scale
            out.update(min=lo, max=hi, mean=mean, std=std)
    return out


def _as_float(c: np.ndarray) -> np.ndarray:
    """A chunk as float64 (complex: its magnitudes)."""
    return np.abs(c.astype(np.complex128)) if c.dtype.kind == "c" else c.astype(np.float64)


def _finite(v: np.ndarray) -> Iterator[np.ndarray]:
    """The finite values of ``v`` as float64, a chunk at a time."""
    for i in range(0, v.size, _CHUNK):
        c = _as_float(v[i:i + _CHUNK])
        yield c[np.isfinite(c)]


def first_values(v: np.ndarray | None, count: int) -> list[Any] | None:
    """The first ``count`` elements as JSON values (floats as Python floats, NaN/Inf as the
    strings 'nan', 'inf', '-inf'; complex as [re, im])."""
    if v is None:
        return None
    head = v[:count]
    if head.dtype.kind in "iu":
        return [int(x) for x in head.tolist()]
    if head.dtype.kind == "b":
        return [bool(x) for x in head.tolist()]
    if head.dtype.kind == "c":
        return [[_float(z.real), _float(z.imag)] for z in head.astype(np.complex128)]
    return [_float(x) for x in head.astype(np.float64).tolist()]


def _float(x: float) -> float | str:
    if x != x:
        return "nan"
    if x in (float("inf"), float("-inf")):
        return "inf" if x > 0 else "-inf"
    return float(x)


__all__ = ["first_values", "tensor_stats", "values_of"]
