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
    s = _ARRAYS.get(key)
    if s is None:
        s = _ARRAYS[key] = struct.Struct(f"<{n}{code}{tail}")
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
    """Read ``n`` length-prefixed strings in one pass. Once 8 strings in a row have one
    length, the rest of that run is sliced in bulk; the bulk window starts small and
    doubles while the run lasts, so strings of varying length never make it look far
    ahead (and cost one comparison each)."""
    out: list = []
    append = out.append
    window = 32
    i = 0
    last = -1
    same = 0
    while i < n:
        if end - pos < 8:
            raise TruncatedError("input ends inside a string length", field=f"[{i}]", offset=pos)
        ln = U64(buf, pos)[0]
        if ln > end - pos - 8:
            raise LengthError(f"string claims {ln} bytes but {end - pos - 8} remain", field=f"[{i}]", offset=pos)
        if ln != last:
            last, same, window = ln, 0, 32
        elif same < 8:
            same += 1
        elif n - i >= 32:
            stride = 8 + ln
            k = min(n - i, (end - pos) // stride, window)
            if k >= 32:
                import numpy as np

                lens = np.ndarray((k,), "<u8", buf, pos, (stride,))
                eq = lens == ln
                m = k if bool(eq.all()) else int(eq.argmin())
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
                i += m
                window = min(window * 2, 1 << 16) if m == k else 32
                continue
        nxt = pos + 8 + ln
        append(str(buf[pos + 8:nxt], "utf-8", "surrogateescape") if text else bytes(buf[pos + 8:nxt]))
        pos = nxt
        i += 1
    return out, pos


def write_strs(append: Any, items: list, text: bool) -> None:
    """Append a vec<str>: the count, then each length and its bytes, as one chunk."""
    if text:
        enc = [s.encode("utf-8", "surrogateescape") if type(s) is str else s for s in items]
    else:
        enc = items
    append(U64P(len(enc)))
    append(b"".join([part for e in enc for part in (U64P(len(e)), e)]))


def era_text(era: tuple[int, ...]) -> str:
    """A writer's era for messages: ``0.16``, or ``0.24 and later`` for LATEST."""
    return "0.24 and later" if era == LATEST else ".".join(map(str, era))


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


# ------------------------------------------------------------------ expression helpers
# (used by specs that say so: import trees, keyed lists, version-dependent sections)

def nondecreasing(seq: Any) -> bool:
    """Whether every element is >= the one before."""
    return all(a <= b for a, b in zip(seq, seq[1:]))


def unique(seq: Any) -> bool:
    """Whether no element occurs twice."""
    return len(set(seq)) == len(seq)


def _field_of(rec: Any, name: str) -> Any:
    return rec[name] if isinstance(rec, dict) else getattr(rec, name)


def count_where(seq: Any, name: str, value: Any) -> int:
    """How many records of ``seq`` have ``value`` in field ``name``."""
    return sum(1 for rec in seq if _field_of(rec, name) == value)


def find_where(seq: Any, name: str, value: Any) -> Any:
    """The first record of ``seq`` with ``value`` in field ``name`` (None if there is none)."""
    for rec in seq:
        if _field_of(rec, name) == value:
            return rec
    return None


def find_last_where(seq: Any, name: str, value: Any) -> Any:
    """The last record of ``seq`` with ``value`` in field ``name`` (None if there is none)."""
    found = None
    for rec in seq:
        if _field_of(rec, name) == value:
            found = rec
    return found


def acyclic(row_ptr: Any, child_indices: Any) -> bool:
    """Whether the CSR graph (row i -> child_indices[row_ptr[i]:row_ptr[i+1]]) has no
    cycle. Iterative, linear in its size; indices out of range are not edges."""
    n = max(len(row_ptr) - 1, 0)
    m = len(child_indices)
    state = [0] * n  # 0 new, 1 on the stack, 2 done
    for start in range(n):
        if state[start]:
            continue
        stack = [(start, min(row_ptr[start], m))]
        state[start] = 1
        while stack:
            node, j = stack[-1]
            stop = min(row_ptr[node + 1], m)
            if j >= stop:
                state[node] = 2
                stack.pop()
                continue
            stack[-1] = (node, j + 1)
            child = child_indices[j]
            if child >= n:
                continue
            if state[child] == 1:
                return False
            if state[child] == 0:
                state[child] = 1
                stack.append((child, min(row_ptr[child], m)))
    return True


def _version_key(v: Any) -> tuple[int, ...]:
    if isinstance(v, tuple):
        return v
    if isinstance(v, (bytes, bytearray, memoryview)):
        v = bytes(v).decode("ascii", "replace")
    import re

    m = re.match(r"v?([0-9]{1,4})[.]([0-9]{1,4})", v)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def at_least(version: Any, minimum: str) -> bool:
    """Whether a TVM version (a string such as 0.16.dev0, or a tuple) is ``minimum`` or later;
    an unreadable version counts as the oldest."""
    return _version_key(version) >= _version_key(minimum)


def decimal(s: Any) -> int:
    """The value of a decimal string of at most 19 digits, -1 for anything else."""
    if isinstance(s, (bytes, bytearray, memoryview)):
        s = bytes(s).decode("ascii", "replace")
    return int(s) if 0 < len(s) <= 19 and s.isascii() and s.isdigit() else -1


#: Runtime registries of extra switch cases (spec `switch.extensible`): registry name ->
#: {case value -> codec with read(buf, pos, end, era) -> (value, pos) and
#: write(append, value, era)}. mlf_spec.blob.register_payload fills "module_payloads".
EXTENSIONS: dict[str, dict[Any, Any]] = {}


def ext_lookup(registry: str, key: Any) -> Any:
    """The codec registered for ``key`` in ``registry``, or None."""
    table = EXTENSIONS.get(registry)
    return table.get(key) if table else None
