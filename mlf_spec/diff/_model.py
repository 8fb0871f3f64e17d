"""What a comparison finds: :class:`Change` and :class:`Diff` (with their text form), and the
JSON tree diff the format-specific comparisons share."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from mlf_spec._records import json_path
from mlf_spec._text import printable

#: A list of scalars that differs in more places than this is reported as one change.
LIST_ELEMENTS = 8


@dataclass
class Change:
    """One difference between A and B.

    ``scope`` says what kind of thing differs (``file``, ``tensor``, ``member``,
    ``metadata``, ``graph``, ``module``, ``payload``), ``change`` how (``added``,
    ``removed``, ``changed``, ``dtype``, ``shape``, ``data``, ``order``, ``header``,
    ``content``, ``kind``), ``path`` where inside its scope (a tensor name, a member name,
    a JSON path, a module path such as ``root.imports[0]``), ``member``/``module`` the
    archive member and MLF module (or blob module path) it sits in, ``a``/``b`` the JSON
    values on each side (None where absent), ``stats`` the numbers of a data change
    (``elements``, ``differing``, ``max_abs``, ``max_rel``) and ``detail`` a sentence.
    """

    scope: str
    change: str
    path: str
    a: Any = None
    b: Any = None
    detail: str = ""
    member: str | None = None
    module: str | None = None
    stats: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (record ``change`` of spec/records/diff_output.yaml)."""
        return {"scope": self.scope, "change": self.change, "path": self.path, "member": self.member,
                "module": self.module, "a": self.a, "b": self.b, "stats": self.stats, "detail": self.detail}


@dataclass
class Diff:
    """The comparison of ``a`` and ``b``, two artifacts of ``kind`` (``params``,
    ``mlf-archive``, ``blob``, ``graph-json`` or ``mlf-metadata``): ``changes`` in the order
    found (file-level first). ``same`` when there are none."""

    a: str
    b: str
    kind: str
    changes: list[Change] = field(default_factory=list)

    @property
    def same(self) -> bool:
        """True when no difference was found."""
        return not self.changes

    def counts(self) -> dict[str, int]:
        """How many changes of each ``change`` kind, in the order first found (the text and
        the JSON form count alike)."""
        counts: dict[str, int] = {}
        for c in self.changes:
            counts[c.change] = counts.get(c.change, 0) + 1
        return counts

    def to_dict(self) -> dict[str, Any]:
        """The JSON form of ``mlf-spec diff --json`` (generated/schemas/diff_output.schema.json)."""
        return {"a": self.a, "b": self.b, "kind": self.kind, "same": self.same, "counts": self.counts(),
                "changes": [c.to_dict() for c in self.changes]}

    def __str__(self) -> str:
        return diff_text(self)


_SIGN = {"added": "+", "removed": "-"}
_KINDS = {"params": ".params files", "mlf-archive": "MLF archives", "blob": "module blobs",
          "graph-json": "GraphExecutor JSON documents", "mlf-metadata": "metadata.json documents"}


def change_line(c: Change) -> str:
    """One change as one line (``+`` added, ``-`` removed, ``~`` changed; names with control
    characters escaped)."""
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
    """The whole report: a header naming both inputs, one line per change and a verdict line."""
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


def short(value: Any, limit: int = 80) -> str:
    """A JSON value as compact text, cut to ``limit`` characters."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=False, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def json_changes(a: Any, b: Any, scope: str, path: tuple = (), **where: Any) -> Iterator[Change]:
    """Changes between two JSON values, key by key: ``added``/``removed`` keys or list
    tail elements, ``changed`` leaves (a value of another type counts as changed). A list
    of scalars differing in more than :data:`LIST_ELEMENTS` places is one change."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in a:
            if k not in b:
                yield Change(scope, "removed", json_path(path + (k,)), a[k], None, f"key removed: {short(a[k])}",
                             **where)
            else:
                yield from json_changes(a[k], b[k], scope, path + (k,), **where)
        for k in b:
            if k not in a:
                yield Change(scope, "added", json_path(path + (k,)), None, b[k], f"key added: {short(b[k])}", **where)
        return
    if isinstance(a, list) and isinstance(b, list):
        scalars = all(not isinstance(x, (dict, list)) for x in a + b)
        if scalars:
            n = min(len(a), len(b))
            differ = [i for i in range(n) if not _equal(a[i], b[i])]
            if len(differ) > LIST_ELEMENTS or (differ and len(a) != len(b)):
                yield Change(scope, "changed", json_path(path), a, b,
                             f"list of {len(a)} -> {len(b)} values, {len(differ)} of the first {n} differ", **where)
                return
        n = min(len(a), len(b))
        for i in range(n):
            yield from json_changes(a[i], b[i], scope, path + (i,), **where)
        for i in range(n, len(a)):
            yield Change(scope, "removed", json_path(path + (i,)), a[i], None, f"element removed: {short(a[i])}",
                         **where)
        for i in range(n, len(b)):
            yield Change(scope, "added", json_path(path + (i,)), None, b[i], f"element added: {short(b[i])}", **where)
        return
    if not _equal(a, b):
        yield Change(scope, "changed", json_path(path), a, b, f"{short(a, 40)} -> {short(b, 40)}", **where)


def _equal(a: Any, b: Any) -> bool:
    return a == b and type(a) is type(b)
