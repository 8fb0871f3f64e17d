"""Names made safe for one table cell or one line of text output, or for JSON (valid UTF-8)."""

from __future__ import annotations

_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}
# Bidirectional overrides and isolates reorder what follows them on a terminal.
_BIDI = {chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))}


def printable(text: str) -> str:
    """``text`` with control characters (and bidi overrides) escaped as ``\\t``, ``\\n``,
    ``\\xNN`` or ``\\uNNNN``, so that a name holding them stays in its table cell."""
    if text.isprintable():
        return text
    out = []
    for ch in text:
        if ch in _NAMED:
            out.append(_NAMED[ch])
        elif ord(ch) < 0x20 or 0x7F <= ord(ch) < 0xA0:
            out.append(f"\\x{ord(ch):02x}")
        elif ch in _BIDI or ch in ("\u2028", "\u2029"):
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "".join(out)


def text_and_hex(name: str | bytes) -> tuple[str, str | None]:
    """How the canonical readings and JSON outputs write a name or a module kind read from
    bytes (a str holds undecodable bytes as surrogate escapes): the text decoded as UTF-8 with
    each maximal invalid subsequence replaced by U+FFFD, and the bytes in hex when they are not
    valid UTF-8 (None when they are). Never a lone surrogate: the text always encodes."""
    raw = name if isinstance(name, bytes) else name.encode("utf-8", "surrogateescape")
    text = raw.decode("utf-8", "replace")
    return text, (None if text.encode("utf-8") == raw else raw.hex())


__all__ = ["printable", "text_and_hex"]
