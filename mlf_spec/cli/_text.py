"""Text output helpers: names made safe for one table cell or one line."""

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


def table(rows: list[tuple[str, ...]], right: int) -> list[str]:
    """Rows padded into columns; columns from index ``right`` on are right-aligned."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) if i < right else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()
            for r in rows]
