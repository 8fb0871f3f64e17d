"""The integer values a reader gets wrong, per field width: shared by the conformance
vectors' boundary variants (:mod:`mlf_spec.conformance.suite.rules`) and the strategies'
edge draws (:mod:`mlf_spec.blob.edges`, :mod:`mlf_spec.params.edges`), so all of them probe
the same places."""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from mlf_spec._internal.spec_engine import SCALAR_FORMATS

#: the struct code of each integer type of the binary spec, and its bytes
FORMAT = {t: code for t, code in SCALAR_FORMATS.items() if t[0] in "ui"}
WIDTH = {t: struct.calcsize("<" + code) for t, code in FORMAT.items()}


def unpack(type_name: str, data: bytes | memoryview, offset: int) -> int:
    """The little-endian integer of ``type_name`` at ``offset`` of ``data``."""
    return struct.unpack_from("<" + FORMAT[type_name], data, offset)[0]


def raw(type_name: str, value: int) -> bytes:
    """``value`` as the little-endian bytes of an integer of ``type_name``'s width, two's
    complement, reduced modulo 2^bits (so 2^64 - 1 in an i64 is -1)."""
    w = WIDTH[type_name]
    return (value % (1 << (8 * w))).to_bytes(w, "little")


def patch(data: bytes, offset: int, raw: bytes) -> bytes:
    """``data`` with the bytes at ``offset`` replaced by ``raw`` (same length)."""
    return data[:offset] + raw + data[offset + len(raw):]


def edge_values(type_name: str, good: int, lo: int | None = None, hi: int | None = None) -> list[int]:
    """The integers a reader gets wrong, for a field of ``type_name`` whose valid value here
    is ``good`` (bounds ``lo``/``hi`` if the spec states them): 0, 1, the bounds and the
    bounds +/- 1, the sign bit, 2^31, 2^32, 2^63, 2^64 - 1 (each reduced to the width), and
    ``good`` differing in its highest byte only."""
    w = WIDTH[type_name]
    bits = 8 * w
    cands = [0, 1, 1 << (bits - 1), (1 << bits) - 1, good + (1 << (bits - 8)), good | 0x10000 if w >= 4 else good]
    cands += [1 << k for k in (31, 32, 63) if k < bits] + [(1 << 31) - 1] * (w >= 4)
    for b in (lo, hi):
        if b is not None:
            cands += [b - 1, b, b + 1]
    seen, out = set(), []
    for v in cands:
        v %= 1 << bits
        if v not in seen and v != good % (1 << bits):
            seen.add(v)
            out.append(v)
    return out


def length_lies(n: int) -> list[int]:
    """Values a count or length ``n`` is replaced by: off by one, 2n + 1, ``n`` plus 2^32 (right
    in its low half), 2^40 (terabytes), 2^63 (the sign bit) and 2^64 - 1."""
    vals = [n + 1, n - 1, n * 2 + 1, n + (1 << 32), 1 << 40, 1 << 63, (1 << 64) - 1]
    seen, out = set(), []
    for v in vals:
        if 0 <= v < 1 << 64 and v != n and v not in seen:
            seen.add(v)
            out.append(v)
    return out


def rooms(data: bytes, spans: list[Any]) -> Callable[[Any], int]:
    """For the traced ``spans`` of ``data``: the bytes that remain after a count or length
    span's 8 bytes, up to the end of the innermost sized region holding it (a size prefix and
    what it counts) or of the input; a claim past it lies."""
    regions = [(s.path[:-1], s.offset + 8, s.offset + 8 + int.from_bytes(data[s.offset:s.offset + 8], "little"))
               for s in spans if s.role == "length" and s.field.get("sized")]

    def room(s: Any) -> int:
        inner = [end for path, start, end in regions if s.path[:len(path)] == path and start <= s.offset]
        return (min(inner) if inner else len(data)) - s.offset - 8

    return room


__all__ = ["FORMAT", "WIDTH", "edge_values", "length_lies", "patch", "raw", "rooms", "unpack"]
