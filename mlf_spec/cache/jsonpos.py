"""Byte offsets of JSON paths in a document's text, computed only when an error is reported
(so that an ``MlfError`` about ``records[2].records[0].nbytes`` can give where it is)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

_WS = re.compile(r"[ \t\n\r]*")


def _skip(text: str, i: int) -> int:
    """The index of the first non-whitespace character at or after ``i``."""
    m = _WS.match(text, i)
    return m.end() if m is not None else i
_DECODER = json.JSONDecoder()
#: json.decoder.scanstring: public in CPython, not in typeshed (hence looked up by name)
_SCANSTRING: Callable[[str, int], tuple[str, int]] = vars(json.decoder)["scanstring"]
_PART = re.compile(r"\.?([^.\[\]]+)|\[(\d+)\]")


def parts(path: str) -> list[str | int]:
    """``records[1].dtype`` -> ``['records', 1, 'dtype']``."""
    return [int(i) if i else k for k, i in _PART.findall(path)]


def char_offset(text: str, path: str) -> int | None:
    """The character offset of the value at ``path`` in ``text`` (the key's value; the
    closest enclosing value when the path does not exist), or None if ``text`` is not JSON."""
    pos = _skip(text, 0)
    try:
        for part in parts(path):
            found = _child(text, pos, part)
            if found is None:
                return pos
            pos = found
    except (ValueError, IndexError):
        return None
    return pos


def _child(text: str, pos: int, part: str | int) -> int | None:
    opening = text[pos]
    if opening == "{" and isinstance(part, str):
        i = _skip(text, pos + 1)
        while text[i] != "}":
            key, i = _SCANSTRING(text, i + 1)
            i = _skip(text, i) + 1  # the colon
            i = _skip(text, i)
            if key == part:
                return i
            i = _skip(text, _DECODER.raw_decode(text, i)[1])
            if text[i] == ",":
                i = _skip(text, i + 1)
        return None
    if opening == "[" and isinstance(part, int):
        i = _skip(text, pos + 1)
        k = 0
        while text[i] != "]":
            if k == part:
                return i
            i = _skip(text, _DECODER.raw_decode(text, i)[1])
            if text[i] == ",":
                i = _skip(text, i + 1)
            k += 1
    return None


def byte_offset(raw: bytes, path: str) -> int | None:
    """The byte offset of the value at ``path`` in the UTF-8 document ``raw``."""
    text = raw.decode("utf-8", "surrogateescape")
    at = char_offset(text, path)
    return None if at is None else len(text[:at].encode("utf-8", "surrogateescape"))
