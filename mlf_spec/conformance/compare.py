"""Compare a testee's reading with the expected one, by the rules the spec states.

The canonical records (spec/records/canonical_*.yaml) mark each key with its comparison
rules (``compare:``), emitted as ``FIELDS`` in the generated models; payload maps that a
writer filled from an unordered map carry ``order: unspecified`` in the binary spec
(``payloads_ir``). This module only walks those rules:

* ``unordered``: a list compared as a multiset; ``writer_order``: in order when decoding,
  as a multiset when the testee wrote the bytes (encode);
* ``may_omit``: a testee may leave the key out; ``informative``: never compared;
* ``payload_fields``: a module's payload fields, compared by its payload struct's rules.

Everything else is compared exactly (JSON semantics: object keys unordered, ``1 == 1.0``,
``true`` is not ``1``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from typing import Any

from mlf_spec.errors import MlfError
from mlf_spec.generated.formats import CANONICAL

#: format (or "migration", the reading of a migrate request) -> the canonical record of its reading
ROOT_RECORD: dict[str, str] = {**CANONICAL, "migration": "canonical_migration"}
_SPECS = tuple(ROOT_RECORD.values())
MAX_DIFFS = 8


@dataclass(frozen=True)
class Difference:
    """One difference: the JSON path (``tensors[1].shape``) and what differs."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path or '(root)'}: {self.message}"


@cache
def fields() -> dict[str, dict[str, dict[str, Any]]]:
    """record -> key -> {type, required, compare} for every canonical record."""
    import importlib

    out: dict[str, dict[str, dict[str, Any]]] = {}
    for name in _SPECS:
        mod = importlib.import_module(f"mlf_spec.generated.{name}_models")
        out.update(getattr(mod, "FIELDS", {}))
    return out


def short(value: Any, limit: int = 60) -> str:
    """A value as compact JSON, cut to ``limit`` characters."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (a testee's name "\ud800"): shown as its escape
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def compare(kind: str, expected: Any, got: Any, *, role: str = "decode") -> list[Difference]:
    """The differences between an expected and a received reading of ``kind`` (a format or
    ``migration``); [] when they agree under the spec's rules."""
    out: list[Difference] = []
    try:
        _Walk(role, out).value(expected, got, ROOT_RECORD[kind], "")
    except _Enough:  # bounded work: the walk stops at the MAX_DIFFS-th difference
        pass
    return out[:MAX_DIFFS]


class _Enough(Exception):
    """Raised by the walk once it has found MAX_DIFFS differences."""


class _Walk:
    def __init__(self, role: str, out: list[Difference]) -> None:
        self.role, self.out = role, out

    def diff(self, path: str, message: str) -> None:
        self.out.append(Difference(path, message))
        if len(self.out) >= MAX_DIFFS:
            raise _Enough

    def value(self, exp: Any, got: Any, type_text: str, path: str, rules: tuple[str, ...] = ()) -> None:
        t = type_text.strip()
        if "|" in t and "[" not in t.split("|")[0]:
            self.union(exp, got, [p.strip() for p in t.split("|")], path, rules)
        elif t in fields():
            self.record(exp, got, t, path)
        elif t.startswith("list[") and t.endswith("]"):
            self.list(exp, got, t[5:-1], path, rules)
        elif t.startswith("map[") and t.endswith("]"):
            self.map(exp, got, t[4:-1], path)
        else:
            self.exact(exp, got, path)

    def union(self, exp: Any, got: Any, parts: list[str], path: str, rules: tuple[str, ...]) -> None:
        if exp is None or got is None:
            self.exact(exp, got, path)
            return
        for p in parts:
            rec = fields().get(p)
            if rec is not None and isinstance(exp, dict) and {k for k, f in rec.items() if f["required"]} <= set(exp) \
                    and set(exp) <= set(rec):
                self.record(exp, got, p, path)
                return
        self.value(exp, got, next((p for p in parts if p != "null"), "any"), path, rules)

    def record(self, exp: Any, got: Any, name: str, path: str) -> None:
        if not isinstance(exp, dict) or not isinstance(got, dict):
            self.exact(exp, got, path)
            return
        rec = fields()[name]
        for key, f in rec.items():
            rules = tuple(f["compare"])
            sub = f"{path}.{key}" if path else key
            if "informative" in rules:
                continue
            if key not in exp:
                if key in got and "may_omit" not in rules:
                    self.diff(sub, f"not expected, got {short(got[key])}")
                continue
            if key not in got:
                if "may_omit" not in rules:
                    self.diff(sub, f"missing, expected {short(exp[key])}")
                continue
            if "payload_fields" in rules:
                self.payload(exp.get("struct"), exp[key], got[key], sub)
            else:
                self.value(exp[key], got[key], f["type"], sub, rules)
        for key in got:
            if key not in rec:
                self.diff(f"{path}.{key}" if path else key, f"unknown key (value {short(got[key])})")

    def list(self, exp: Any, got: Any, elem: str, path: str, rules: tuple[str, ...]) -> None:
        if not isinstance(exp, list) or not isinstance(got, list):
            self.exact(exp, got, path)
            return
        unordered = "unordered" in rules or ("writer_order" in rules and self.role == "encode")
        if unordered:
            self.multiset(exp, got, path, lambda e, g, p: self._quiet(e, g, elem, p))
            return
        if len(exp) != len(got):
            self.diff(path, f"{len(exp)} elements expected, got {len(got)}")
        for i, (e, g) in enumerate(zip(exp, got)):
            self.value(e, g, elem, f"{path}[{i}]")

    def _quiet(self, exp: Any, got: Any, elem: str, path: str) -> bool:
        probe: list[Difference] = []
        _Walk(self.role, probe).value(exp, got, elem, path)
        return not probe

    def multiset(self, exp: list[Any], got: list[Any], path: str, same: Any) -> None:
        left = list(range(len(got)))
        for i, e in enumerate(exp):
            match = next((j for j in left if same(e, got[j], f"{path}[{i}]")), None)
            if match is None:
                self.diff(f"{path}[{i}]", f"expected {short(e)}, found nowhere in the received list (any order)")
            else:
                left.remove(match)
        for j in left:
            self.diff(f"{path}[{j}]", f"not expected: {short(got[j])}")

    def map(self, exp: Any, got: Any, elem: str, path: str) -> None:
        if not isinstance(exp, dict) or not isinstance(got, dict):
            self.exact(exp, got, path)
            return
        for k in exp:
            if k not in got:
                self.diff(f"{path}[{k!r}]", f"missing, expected {short(exp[k])}")
            else:
                self.value(exp[k], got[k], elem, f"{path}[{k!r}]")
        for k in got:
            if k not in exp:
                self.diff(f"{path}[{k!r}]", f"not expected: {short(got[k])}")

    def payload(self, struct: Any, exp: Any, got: Any, path: str) -> None:
        """Payload fields: maps and vectors with ``order: unspecified`` compare as multisets."""
        from mlf_spec.generated import payloads_ir

        spec = payloads_ir.STRUCTS.get(struct) if isinstance(struct, str) else None
        if spec is None or not isinstance(exp, dict) or not isinstance(got, dict):
            self.exact(exp, got, path)
            return
        by_name = {f["name"]: f for f in spec["fields"]}
        for key in set(exp) | set(got):
            sub = f"{path}.{key}"
            if key not in got or key not in exp:
                self.diff(sub, "missing" if key not in got else f"not expected: {short(got[key])}")
                continue
            f = by_name.get(key, {})
            if f.get("order") == "unspecified" and isinstance(exp[key], list) and isinstance(got[key], list):
                self.multiset(exp[key], got[key], sub, lambda e, g, p: _equal(e, g))
            elif f.get("kind") == "struct":
                self.payload(f.get("struct"), exp[key], got[key], sub)
            else:
                self.exact(exp[key], got[key], sub)

    def exact(self, exp: Any, got: Any, path: str) -> None:
        if isinstance(exp, dict) and isinstance(got, dict):
            for k in exp:
                sub = f"{path}.{k}" if path else str(k)
                if k not in got:
                    self.diff(sub, f"missing, expected {short(exp[k])}")
                else:
                    self.exact(exp[k], got[k], sub)
            for k in got:
                if k not in exp:
                    self.diff(f"{path}.{k}" if path else str(k), f"not expected: {short(got[k])}")
        elif isinstance(exp, list) and isinstance(got, list):
            if len(exp) != len(got):
                self.diff(path, f"{len(exp)} elements expected, got {len(got)}")
            for i, (e, g) in enumerate(zip(exp, got)):
                self.exact(e, g, f"{path}[{i}]")
        elif not _equal(exp, got):
            self.diff(path, f"expected {short(exp)}, got {short(got)}")


def same_json(a: Any, b: Any) -> bool:
    """Whether two JSON values are the same document (object keys in any order): what
    :func:`compare` finds no difference in under any rule, found at C speed. ``==`` alone
    would take ``true`` for ``1``; the sorted text tells them (and ``1`` from ``1.0``) apart,
    and a value it cannot tell is left to the rule walk."""
    if a != b:
        return False
    try:
        return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    except (TypeError, ValueError):
        return False


def _equal(a: Any, b: Any) -> bool:
    """JSON equality: numbers by value (but booleans are not numbers), objects key by key."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


#: A reading of more values than this is not validated against its schema (the validator
#: collects every error: a 60 MB wrong answer needed GBs); the rule walk of :func:`compare`,
#: which stops at the first MAX_DIFFS differences, judges it alone.
VALIDATE_VALUES = 100_000


def _more_values_than(doc: Any, limit: int) -> bool:
    """Whether the JSON value ``doc`` holds more than ``limit`` values (bounded work)."""
    pending, seen = [doc], 0
    while pending:
        v = pending.pop()
        seen += 1
        if seen > limit:
            return True
        if isinstance(v, (dict, list)):
            if seen + len(pending) + len(v) > limit:
                return True
            pending.extend(v.values() if isinstance(v, dict) else v)
    return False


def validate_reading(kind: str, reading: Any) -> str | None:
    """None if ``reading`` matches the JSON Schema of its kind, else the first problem
    (None also for a reading of more than :data:`VALIDATE_VALUES` values: left to
    :func:`compare`, whose work is bounded)."""
    import importlib

    from pydantic import ValidationError

    if _more_values_than(reading, VALIDATE_VALUES):
        return None
    name = ROOT_RECORD[kind]
    mod = importlib.import_module(f"mlf_spec.generated.{name}_models")
    try:
        mod.ROOT.model_validate(reading)
    except ValidationError as exc:
        e = exc.errors()[0]
        where = ".".join(str(p) for p in e["loc"])
        return f"{where}: {e['msg']}" if where else e["msg"]
    except MlfError as exc:  # pragma: no cover - defensive
        return str(exc)
    return None


__all__ = ["Difference", "ROOT_RECORD", "compare", "fields", "same_json", "short", "validate_reading"]
