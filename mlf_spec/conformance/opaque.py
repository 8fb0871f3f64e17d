"""Whether a tvm-ffi blob case's fault lies inside a payload a testee keeps opaque.

A tvm-ffi payload is framed by its length, so a reader that does not parse a kind's payload
grammar (its handshake's ``payloads`` leaves the kind out, ``[]`` for every kind) reads such a
payload as opaque bytes, and a fault inside a length-consistent payload is invisible to it.
The runner skips those cases with the reason. The test: every module of a kind the handshake
leaves out (and that has a grammar in the spec) is renamed to a kind of the same length with
no grammar, which the reference reads as opaque bytes; if the reference then accepts the blob
it rejected, the fault lies inside those payloads.
"""

from __future__ import annotations

import struct
from functools import lru_cache

from mlf_spec.errors import MlfError

_U64 = struct.Struct("<Q")
_LIB = b"_lib"


def _kinds_at(data: bytes) -> list[tuple[int, bytes]] | None:
    """(offset, kind) of every module of a tvm-ffi blob whose framing (size prefix, import
    tree, kinds and payload lengths) holds; None when it does not."""
    pos = 0

    def u64() -> int:
        nonlocal pos
        if pos + 8 > end:
            raise ValueError
        (v,) = _U64.unpack_from(data, pos)
        pos += 8
        return v

    end = len(data)
    try:
        size = u64()
        if size > end - 8:
            return None
        end = 8 + size
        rows = u64()
        if rows > (end - pos) // 8:
            return None
        pos += 8 * rows
        children = u64()
        if children > (end - pos) // 8:
            return None
        pos += 8 * children
        out = []
        for _ in range(max(0, rows - 1)):
            n = u64()
            if n > end - pos:
                return None
            out.append((pos, data[pos:pos + n]))
            pos += n
            if data[pos - n:pos] == _LIB:
                continue
            n = u64()
            if n > end - pos:
                return None
            pos += n
    except ValueError:
        return None
    return out


@lru_cache(maxsize=1)
def _grammar_kinds() -> frozenset[str]:
    from mlf_spec.blob import codec as _blob

    return frozenset(k for k, v in _blob.known_kinds("ffi").items() if v != "opaque_payload")


def hidden_in(data: bytes, options: dict[str, str], declared: frozenset[str]) -> list[str]:
    """The kinds (sorted) of the tvm-ffi blob ``data`` whose payload grammar the handshake does
    not declare and inside whose payloads the reference's rejection lies: read with those
    payloads opaque, the blob is accepted. [] when the fault is elsewhere (or there is none)."""
    return list(_hidden(bytes(data), tuple(sorted(options.items())), declared))


@lru_cache(maxsize=4096)
def _hidden(data: bytes, options: tuple[tuple[str, str], ...], declared: frozenset[str]) -> tuple[str, ...]:
    from . import canonical

    mods = _kinds_at(data)
    if not mods:
        return ()
    grammar = _grammar_kinds()
    edited = bytearray(data)
    kinds = set()
    for pos, kind in mods:
        name = kind.decode("utf-8", "replace")
        if name in grammar and name not in declared:
            edited[pos:pos + len(kind)] = b"~" * len(kind)  # no kind of the spec: read as opaque bytes
            kinds.add(name)
    if not kinds:
        return ()
    opts = dict(options)
    try:
        canonical.decode("blob", data, opts)
        return ()  # not a rejection at all
    except MlfError:
        pass
    try:
        canonical.decode("blob", bytes(edited), opts)
    except MlfError:
        return ()
    return tuple(sorted(kinds))


__all__ = ["hidden_in"]
