"""Comparing module blobs: the blobs a file holds (format, symbol, TVM era), then each
blob's module tree walked from the root on both sides at once (kinds, imports), and the
payload of every module present on both sides field by field (tensor data by digest).

A module's place is its path from the root: ``root``, ``root.imports[0]``,
``root.imports[0].imports[2]``... A module met twice (shared imports, cycles) is compared
once, at the first path it is reached by; the walk is iterative and visits at most as
many pairs as the two blobs have modules together.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from ._model import Change, json_changes, short

if TYPE_CHECKING:
    from mlf_spec.blob.codec import Blob, Module, Payload


def compare(a: list[Blob], b: list[Blob]) -> list[Change]:
    """The changes from the blobs of one file to those of another, blob by blob."""
    out: list[Change] = []
    if len(a) != len(b):
        out.append(Change("file", "changed", "blobs", len(a), len(b), f"number of blobs {len(a)} -> {len(b)}"))
    for i, (x, y) in enumerate(zip(a, b)):
        out.extend(compare_blob(x, y, prefix=f"blob[{i}]." if max(len(a), len(b)) > 1 else ""))
    return out


def compare_blob(a: Blob, b: Blob, *, prefix: str = "") -> list[Change]:
    """The changes from blob ``a`` to blob ``b``."""
    out: list[Change] = []
    for field in ("format", "full_symbol", "era_label"):
        x, y = getattr(a, field), getattr(b, field)
        if x != y:
            name = {"full_symbol": "symbol", "era_label": "era"}.get(field, field)
            out.append(Change("file", "changed", prefix + name, x, y, f"{name} {x or 'none'} -> {y or 'none'}"))
    # A pair is expanded only when both its modules are new; a module met again on one
    # side only is reported, not expanded again: the walk visits at most one pair per
    # module and one per import edge, and every kind shown is cut to a bounded length.
    seen_a: set[int] = set()
    seen_b: set[int] = set()
    stack: list[tuple[Module, Module, str]] = [(a.root(), b.root(), prefix + "root")]
    while stack:
        x, y, path = stack.pop()
        old_a, old_b = id(x) in seen_a, id(y) in seen_b
        if old_a and old_b:
            continue
        if old_a or old_b:
            side = "A" if old_a else "B"
            out.append(Change("module", "changed", path, old_a, old_b,
                              f"the module here was met earlier in {side} only (shared there)", module=path))
            continue
        seen_a.add(id(x))
        seen_b.add(id(y))
        if x.kind != y.kind:
            out.append(Change("module", "kind", path, _kind(x), _kind(y), f"module kind {_kind(x)} -> {_kind(y)}",
                              module=path))
            continue
        out.extend(_payload(x.payload, y.payload, path))
        n = min(len(x.imports), len(y.imports))
        for i in range(len(y.imports) - 1, n - 1, -1):
            m = y.imports[i]
            out.append(Change("module", "added", f"{path}.imports[{i}]", None, _tree(m), f"module {_kind(m)} added",
                              module=f"{path}.imports[{i}]"))
        for i in range(len(x.imports) - 1, n - 1, -1):
            m = x.imports[i]
            out.append(Change("module", "removed", f"{path}.imports[{i}]", _tree(m), None,
                              f"module {_kind(m)} removed", module=f"{path}.imports[{i}]"))
        deep = path.count(".imports[") >= MAX_PATH_DEPTH
        for i in range(n - 1, -1, -1):
            stack.append((x.imports[i], y.imports[i], _deeper(path, i) if deep else f"{path}.imports[{i}]"))
    if not out and a.data != b.data:
        out.append(Change("file", "changed", prefix + "encoding", len(a.data), len(b.data),
                          "same modules and payloads; the blobs differ in their bytes (trailing bytes, "
                          "numbering or padding)"))
    return out


#: A module's path is spelled out to this depth; deeper paths are shortened to the first
#: steps, the depth and the last step (a chain of 10^5 imports would otherwise make paths
#: of megabytes, one per module).
MAX_PATH_DEPTH = 32


def _deeper(path: str, i: int) -> str:
    head, sep, depth = path.partition(".imports...[depth ")
    if not sep:
        return f"{path.rsplit('.imports[', 1)[0]}.imports...[depth {MAX_PATH_DEPTH + 1}].imports[{i}]"
    d = int(depth.split("]", 1)[0]) + 1
    return f"{head}.imports...[depth {d}].imports[{i}]"


def _kind(m: Module) -> str:
    """The module's kind, cut to 200 characters (a kind is as long as its input says)."""
    return m.kind if len(m.kind) <= 200 else m.kind[:200] + "..."


def _tree(m: Module) -> dict[str, Any]:
    """A module added or removed: its kind and how many modules it imports directly."""
    return {"kind": _kind(m), "imports": len(m.imports)}


def _payload(x: Payload | None, y: Payload | None, path: str) -> list[Change]:
    if x is None or y is None:
        if (x is None) != (y is None):
            return [Change("payload", "changed", "", x is not None, y is not None, "payload present on one side only",
                           module=path)]
        return []
    dx, dy = payload_data(x), payload_data(y)
    found = list(json_changes(dx, dy, "payload", module=path))
    for c in found:
        c.detail = f"{c.path or 'payload'}: {c.detail}" if c.change == "changed" else \
            f"{c.path}: {c.change} {short(c.a if c.b is None else c.b, 60)}"
    return found


def payload_data(p: Payload) -> Any:
    """A payload record as JSON data: records as objects, byte strings and tensor data as
    ``{"bytes": n, "sha256": ...}`` (tensor offsets left out: they move with everything
    before them)."""
    from mlf_spec.generated._fastlib import Record
    from mlf_spec.generated.tensor_fast import TensorRecord

    def conv(v: Any) -> Any:
        if isinstance(v, TensorRecord):
            d = {f: conv(x) for f, x in zip(v._fields, v) if f not in ("data_offset", "magic")}
            d["data"] = _bytes(p.tensor_data(v))
            return d
        if isinstance(v, Record):
            return {f: conv(x) for f, x in zip(v._fields, v)}
        if isinstance(v, (bytes, bytearray, memoryview)):
            return _bytes(v)
        if isinstance(v, dict):
            return {str(k): conv(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [conv(x) for x in v]
        return v

    return conv(p.record)


def _bytes(v: Any) -> dict[str, Any]:
    m = memoryview(v).cast("B")
    return {"bytes": m.nbytes, "sha256": hashlib.sha256(m).hexdigest()[:16]}
