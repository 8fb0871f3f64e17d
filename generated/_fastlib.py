"""Helpers shared by the generated fast readers and writers."""

from __future__ import annotations

import struct

from typing import Any

from mlf_spec.errors import LengthError, TruncatedError

U64 = struct.Struct("<Q").unpack_from
U64P = struct.Struct("<Q").pack
LATEST = (999, 0)
_ARRAYS: dict[tuple, struct.Struct] = {}


class Record(tuple):
    """Base of the generated records: a tuple with named, read-only fields (like a
    NamedTuple, but without the per-class code generation that slows imports)."""

    __slots__ = ()
    _fields: tuple[str, ...] = ()

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in zip(self._fields, self))
        return f"{type(self).__name__}({inner})"

    def _asdict(self) -> dict[str, Any]:
        return dict(zip(self._fields, self))

    def _replace(self, **changes: Any) -> Any:
        values = [changes.pop(k, v) for k, v in zip(self._fields, self)]
        if changes:
            raise TypeError(f"unknown fields {sorted(changes)}")
        return tuple.__new__(type(self), values)


def array_struct(code: str, n: int) -> struct.Struct:
    """A cached Struct for ``n`` little-endian scalars of format ``code``."""
    s = _ARRAYS.get((code, n))
    if s is None:
        s = _ARRAYS[(code, n)] = struct.Struct(f"<{n}{code}")
    return s


def array_run_struct(code: str, n: int, tail: str) -> struct.Struct:
    """A cached Struct for ``n`` scalars of format ``code`` followed by the fixed ``tail``."""
    key = (code, n, tail)
    s = _ARRAYS.get(key)  # type: ignore[call-overload]
    if s is None:
        s = _ARRAYS[key] = struct.Struct(f"<{n}{code}{tail}")  # type: ignore[index]
    return s


def same_heads(buf: Any, first: int, start: int, stride: int, head: int, k: int) -> int:
    """How many of the ``k`` records at ``start``, ``start + stride``, ... begin with the
    same ``head`` bytes as the record at ``first`` (compared in C by NumPy, no copy)."""
    import numpy as np

    if head == 0:
        return k
    ref = np.ndarray((head,), np.uint8, buf, first)
    block = np.ndarray((k, head), np.uint8, buf, start, (stride, 1))
    same = (block == ref).all(axis=1)
    return k if bool(same.all()) else int(same.argmin())


def read_strs(buf: Any, pos: int, end: int, n: int, text: bool) -> tuple[list, int]:
    """Read ``n`` length-prefixed strings; runs of equal length are sliced in bulk."""
    out: list = []
    while len(out) < n:
        i = len(out)
        if end - pos < 8:
            raise TruncatedError("input ends inside a string length", field=f"[{i}]", offset=pos)
        ln = U64(buf, pos)[0]
        if ln > end - pos - 8:
            raise LengthError(f"string claims {ln} bytes but {end - pos - 8} remain", field=f"[{i}]", offset=pos)
        stride = 8 + ln
        k = min(n - i, (end - pos) // stride)
        if k >= 32:
            import numpy as np

            lens = np.ndarray((k,), "<u8", buf, pos, (stride,))
            same = lens == ln
            m = k if bool(same.all()) else int(same.argmin())
            if m >= 32:
                raw = np.ndarray((m, ln), np.uint8, buf, pos + 8, (stride, 1)).tobytes()
                if text and raw.isascii():
                    joined = raw.decode("ascii")
                    out.extend([joined[j:j + ln] for j in range(0, m * ln, ln)] if ln else [""] * m)
                elif text:
                    out.extend([str(raw[j:j + ln], "utf-8", "surrogateescape") for j in range(0, m * ln, ln)]
                               if ln else [""] * m)
                else:
                    out.extend([raw[j:j + ln] for j in range(0, m * ln, ln)] if ln else [b""] * m)
                pos += m * stride
                continue
        chunk = buf[pos + 8:pos + stride]
        out.append(str(chunk, "utf-8", "surrogateescape") if text else bytes(chunk))
        pos += stride
    return out, pos


def numel(shape: tuple[int, ...] | list[int]) -> int:
    """Number of elements of a shape (1 for a 0-d shape)."""
    n = 1
    for extent in shape:
        n *= extent
    return n


def ceil_div(a: int, b: int) -> int:
    """Ceiling of a / b for non-negative a and positive b."""
    return -(-a // b)


def truncated(pos: int, end: int, ends: tuple[tuple[int, int, str], ...]) -> TruncatedError:
    """The error for a fixed-size run cut short: names the first field that does not fit."""
    avail = end - pos
    for start, stop, name in ends:
        if stop > avail:
            return TruncatedError(
                f"input ends inside {name}: it needs {stop - start} bytes, {max(avail - start, 0)} remain",
                field=name,
                offset=pos + start,
            )
    return TruncatedError("input ends early", offset=pos)
