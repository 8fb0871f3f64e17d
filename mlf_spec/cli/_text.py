"""Text output helpers of the command line: tables, names made safe for one cell, and
standard streams that let no control character from the input reach the terminal."""

from __future__ import annotations

import contextlib
import io
import sys
import unicodedata
from collections.abc import Iterator
from typing import Any

from mlf_spec._text import printable, terminal_safe

__all__ = ["SafeStream", "elide", "printable", "safe_output", "table", "terminal_safe", "width", "write_table"]


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
    columns = list(zip(*rows))
    if all("".join(col).isascii() and max(map(len, col)) <= CELL for col in columns):
        # plain ASCII cells (the common case): widths are lengths, padding is done in C
        widths = [max(map(len, col)) for col in columns]
        padded = [list(map(str.ljust if i < right else str.rjust, col, [w] * len(col)))
                  for i, (col, w) in enumerate(zip(columns, widths))]
        return [line.rstrip() for line in map("  ".join, zip(*padded))]
    rows = [tuple(elide(c) for c in r) for r in rows]
    widths = [max(width(r[i]) for r in rows) for i in range(len(rows[0]))]

    def pad(c: str, w: int, i: int) -> str:
        fill = " " * (w - width(c))
        return c + fill if i < right else fill + c

    return ["  ".join(pad(c, w, i) for i, (c, w) in enumerate(zip(r, widths))).rstrip() for r in rows]


def write_table(out: Any, columns: list[list[str]], right: int, chunk: int = 4096) -> None:
    """Write the rows of ``columns`` (one list of cells per column) to ``out`` as
    :func:`table` lays them out, ``chunk`` rows at a time: the padded cells and lines of
    a long table are never all in memory at once."""
    n = len(columns[0]) if columns else 0
    if not all("".join(col).isascii() and max(map(len, col)) <= CELL for col in columns):
        for line in table(list(zip(*columns)), right):
            out.write(line + "\n")
        return
    widths = [max(map(len, col)) for col in columns]
    pads = [str.ljust if i < right else str.rjust for i in range(len(columns))]
    for lo in range(0, n, chunk):
        hi = min(n, lo + chunk)
        padded = [list(map(pad, col[lo:hi], [w] * (hi - lo))) for pad, col, w in zip(pads, columns, widths)]
        out.write("".join(line.rstrip() + "\n" for line in map("  ".join, zip(*padded))))


class SafeStream:
    """A text stream whose every write goes through :func:`terminal_safe` (what is written
    can be names from the input: an escape sequence in them must not reach the terminal);
    ``unescaped`` is the stream underneath, for the progress line's own control codes.
    Anything else (``buffer``, ``fileno``, ``isatty``...) is the stream's own."""

    def __init__(self, stream: Any) -> None:
        self.unescaped = stream

    def write(self, text: str) -> int:
        """Write ``text`` escaped; returns the length of ``text``."""
        self.unescaped.write(terminal_safe(text))
        return len(text)

    def writelines(self, lines: Any) -> None:
        """Write each of ``lines`` escaped."""
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.unescaped, name)


@contextlib.contextmanager
def safe_output() -> Iterator[None]:
    """Inside the block, standard output and error escape control characters (see
    :class:`SafeStream`) and write what their encoding cannot hold as backslash escapes
    (``PYTHONIOENCODING=ascii`` or a latin-1 terminal give no UnicodeEncodeError)."""
    saved = sys.stdout, sys.stderr
    for stream in saved:
        reconfigure = getattr(stream, "reconfigure", None)  # a TextIOWrapper's; not StringIO's
        if reconfigure is not None:
            with contextlib.suppress(ValueError, io.UnsupportedOperation):
                reconfigure(errors="backslashreplace")
    sys.stdout, sys.stderr = SafeStream(saved[0]), SafeStream(saved[1])
    try:
        yield
    finally:
        if isinstance(sys.stdout, SafeStream):
            sys.stdout = saved[0]
        if isinstance(sys.stderr, SafeStream):
            sys.stderr = saved[1]
