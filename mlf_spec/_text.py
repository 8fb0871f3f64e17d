"""Names made safe for one table cell or one line of text output, or for JSON (valid UTF-8)."""

from __future__ import annotations

import re

_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}
# Bidirectional overrides and isolates reorder what follows them on a terminal.
_BIDI = {chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))}


def printable(text: str) -> str:
    """``text`` with control characters, bidi overrides, line separators and lone surrogates
    (undecodable bytes) escaped as ``\\uNNNN`` (tab, newline and carriage return as ``\\t``,
    ``\\n``, ``\\r``), so that a name holding them stays in its table cell: what it returns
    is what the terminal shows, and :func:`terminal_safe` leaves it as it is (a table's
    columns are measured on the final text)."""
    if text.isprintable():
        return text
    out = []
    for ch in text:
        if ch in _NAMED:
            out.append(_NAMED[ch])
        elif UNSAFE.match(ch) is not None or not ch.isprintable() and ord(ch) < 0xA0:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "".join(out)


#: What may not reach a terminal raw: C0 controls but tab and newline, DEL, the C1
#: controls (0x9b is the 8-bit CSI), bidi overrides, line/paragraph separators, and lone
#: surrogates (undecodable bytes kept by ``surrogateescape``).
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u2028\u2029\ud800-\udfff]")


def terminal_safe(text: str) -> str:
    """``text`` with every character that a terminal would act on (escape sequences, bell,
    carriage return, C1 controls, bidi overrides) written as ``\\uNNNN``; tab and newline
    are kept. The escape is also valid inside a JSON string, so a JSON line stays JSON."""
    if UNSAFE.search(text) is None:
        return text
    return UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def text_and_hex(name: str | bytes) -> tuple[str, str | None]:
    """How the canonical readings and JSON outputs write a name or a module kind read from
    bytes (a str holds undecodable bytes as surrogate escapes): the text decoded as UTF-8 with
    each maximal invalid subsequence replaced by U+FFFD, and the bytes in hex when they are not
    valid UTF-8 (None when they are). Never a lone surrogate: the text always encodes."""
    raw = name if isinstance(name, bytes) else name.encode("utf-8", "surrogateescape")
    text = raw.decode("utf-8", "replace")
    return text, (None if text.encode("utf-8") == raw else raw.hex())


__all__ = ["UNSAFE", "printable", "terminal_safe", "text_and_hex"]
