"""Helpers shared by the generated fast readers and writers."""

from __future__ import annotations

import struct

from mlf_spec.errors import TruncatedError

U64 = struct.Struct("<Q").unpack_from
U64P = struct.Struct("<Q").pack
LATEST = (999, 0)
_ARRAYS: dict[tuple[str, int], struct.Struct] = {}


def array_struct(code: str, n: int) -> struct.Struct:
    """A cached Struct for ``n`` little-endian scalars of format ``code``."""
    s = _ARRAYS.get((code, n))
    if s is None:
        s = _ARRAYS[(code, n)] = struct.Struct(f"<{n}{code}")
    return s


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
