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
    if _dt.layout(dialect, dt.code, dt.bits) == "packed":
        bits = np.unpackbits(raw[: (numel * dt.bits + 7) // 8], bitorder="little")[: numel * dt.bits]
        codes = (bits.reshape(numel, dt.bits).astype(np.uint8) << np.arange(dt.bits, dtype=np.uint8)).sum(
            axis=1, dtype=np.uint8)
    else:
        codes = raw[:numel] & np.uint8((1 << dt.bits) - 1)
    if row["kind"] == "int":
        sign = np.int16(1 << (dt.bits - 1))
        return ((codes.astype(np.int16) ^ sign) - sign).astype(np.int8)
    if row["kind"] in ("uint", "bool"):
        return codes
    if row["kind"] in ("float4", "float6", "float"):  # float4_e2m1fn, float6_e2m3fn ...: ml_dtypes holds them
        try:
            import ml_dtypes

            return codes.view(getattr(ml_dtypes, base.name))
        except (AttributeError, TypeError, ValueError):
            return None
    return None


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
    for i in range(0, n, _CHUNK):
        c = v[i:i + _CHUNK]
        c = np.abs(c.astype(np.complex128)) if v.dtype.kind == "c" else c.astype(np.float64)
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
        mean = total / finite
        sq = 0.0
        for i in range(0, n, _CHUNK):
            c = v[i:i + _CHUNK]
            c = np.abs(c.astype(np.complex128)) if v.dtype.kind == "c" else c.astype(np.float64)
            f = c[np.isfinite(c)] - mean
            sq += float(np.dot(f, f))
        out.update(min=lo, max=hi, mean=mean, std=(sq / finite) ** 0.5)
    return out


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
