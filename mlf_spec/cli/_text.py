"""Text output helpers of the command line: tables, and names made safe for one cell."""

from __future__ import annotations

import unicodedata

from mlf_spec._text import printable

__all__ = ["elide", "printable", "table", "width"]

#: The widest a table cell is shown (longer text is elided in the middle).
CELL = 60


def width(text: str) -> int:
    """The columns ``text`` takes on a terminal: East Asian wide and fullwidth characters
    (CJK, most emoji) take two, combining marks and zero-width characters none."""
    if text.isascii():
        return len(text)
    n = 0
    for ch in text:
        if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
            continue
        n += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return n


def elide(text: str, limit: int = CELL) -> str:
    """``text`` cut to at most ``limit`` columns with '...' in the middle."""
    if width(text) <= limit:
        return text
    keep = limit - 3
    head, tail = _take(text, (keep + 1) // 2), _take(text[::-1], keep // 2)[::-1]
    return head + "..." + tail


def _take(text: str, columns: int) -> str:
    out, used = [], 0
    for ch in text:
        w = width(ch)
        if used + w > columns:
            break
        out.append(ch)
        used += w
    return "".join(out)


def table(rows: list[tuple[str, ...]], right: int) -> list[str]:
    """Rows padded into columns by display width (cells longer than :data:`CELL` columns
    elided); columns from index ``right`` on are right-aligned."""
    rows = [tuple(elide(c) for c in r) for r in rows]
    widths = [max(width(r[i]) for r in rows) for i in range(len(rows[0]))]

    def pad(c: str, w: int, i: int) -> str:
        fill = " " * (w - width(c))
        return c + fill if i < right else fill + c

    return ["  ".join(pad(c, w, i) for i, (c, w) in enumerate(zip(r, widths))).rstrip() for r in rows]
