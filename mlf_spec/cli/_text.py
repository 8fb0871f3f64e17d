"""Text output helpers of the command line: tables, and names made safe for one cell."""

from __future__ import annotations

from mlf_spec._text import printable

__all__ = ["printable", "table"]


def table(rows: list[tuple[str, ...]], right: int) -> list[str]:
    """Rows padded into columns; columns from index ``right`` on are right-aligned."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) if i < right else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()
            for r in rows]
