"""Text output helpers of the command line: tables, names made safe for one cell, and
standard streams that let no control character from the input reach the terminal."""

from __future__ import annotations

import contextlib
import io
import sys
from collections.abc import Iterator
from typing import Any

from mlf_spec._text import printable, terminal_safe

__all__ = ["SafeStream", "printable", "safe_output", "table", "terminal_safe"]


def table(rows: list[tuple[str, ...]], right: int) -> list[str]:
    """Rows padded into columns; columns from index ``right`` on are right-aligned."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) if i < right else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()
            for r in rows]


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
