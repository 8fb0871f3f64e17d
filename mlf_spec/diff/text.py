"""The text form of a :class:`~mlf_spec.diff.Diff`: a header naming both inputs, one line
per change (``+`` added, ``-`` removed, ``~`` changed) and a verdict line."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mlf_spec._text import printable

if TYPE_CHECKING:
    from ._model import Change, Diff

_SIGN = {"added": "+", "removed": "-"}
_KINDS = {"params": ".params files", "mlf-archive": "MLF archives", "blob": "module blobs",
          "graph-json": "GraphExecutor JSON documents", "mlf-metadata": "metadata.json documents"}


def change_line(c: Change) -> str:
    """One change as one line (names with control characters escaped)."""
    where = f"{c.scope} {c.path}" if c.path else c.scope
    inside = []
    if c.member and c.scope != "member":
        inside.append(f"in {c.member}")
    if c.module and c.scope not in ("module", "payload"):
        inside.append(f"module {c.module}")
    if c.scope == "payload":
        where = f"payload of {c.module}"
    ctx = f" ({', '.join(inside)})" if inside else ""
    return printable(f"{_SIGN.get(c.change, '~')} {where}{ctx}: {c.detail}")


def diff_text(d: Diff) -> str:
    """The whole report."""
    lines = [f"--- {printable(d.a)}", f"+++ {printable(d.b)}"]
    lines += [f"  {change_line(c)}" for c in d.changes]
    if d.same:
        lines.append(f"same: the {_KINDS.get(d.kind, d.kind)} do not differ")
    else:
        counts = d.counts()  # the JSON form's counts: added, removed, then the kinds of change by name
        order = [k for k in ("added", "removed") if k in counts] + sorted(set(counts) - {"added", "removed"})
        parts = ", ".join(f"{counts[k]} {k}" for k in order)
        lines.append(f"{len(d.changes)} difference(s): {parts}")
    return "\n".join(lines)
