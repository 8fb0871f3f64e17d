"""Structure-aware mutation of JSON documents (metadata.json, GraphExecutor JSON).

:class:`JsonMutator` parses the document (keeping key order and duplicate keys), changes
one node and writes it back in one of the layouts the writers used (``indent=2,
sort_keys=True``, one line, dmlc's) or a random one. A change is one of: a value replaced by
one of another type, a boundary number or a word of the vocabulary; a key removed, added,
renamed or duplicated; a list element removed, repeated or swapped; a subtree copied over
another; a ``version`` moved; a node nested very deep.

The vocabulary (keys and string values worth trying) comes from the pydantic models of
the format (:func:`model_words`), so that renamed keys and enum values are the format's own.
"""

from __future__ import annotations

import copy
import json
import math
import random
from collections.abc import Iterable
from typing import Any, Literal, get_args, get_origin

from .mutators import ParseCache, edit_list


class _Obj(list):
    """A JSON object as an ordered list of [key, value] pairs (duplicates kept)."""


class _Deep:
    """A value wrapped in ``depth`` one-element lists (written without recursion)."""

    def __init__(self, value: Any, depth: int) -> None:
        self.value, self.depth = value, depth


def _loads(data: bytes) -> Any:
    return json.loads(data, object_pairs_hook=lambda pairs: _Obj([list(p) for p in pairs]),
                      parse_constant=lambda c: float(c))


def _dump(v: Any, out: list[str], indent: int | None, depth: int, sort: bool, ascii_only: bool) -> None:
    if isinstance(v, _Deep):
        out.append("[" * v.depth)
        _dump(v.value, out, None, depth, sort, ascii_only)
        out.append("]" * v.depth)
    elif isinstance(v, _Obj):
        items = sorted(v, key=lambda kv: str(kv[0])) if sort else v
        if not items:
            out.append("{}")
            return
        out.append("{")
        for i, (k, x) in enumerate(items):
            if i:
                out.append(",")
            if indent is not None:
                out.append("\n" + " " * (indent * (depth + 1)))
            out.append(json.dumps(str(k), ensure_ascii=ascii_only) + ": ")
            _dump(x, out, indent, depth + 1, sort, ascii_only)
        if indent is not None:
            out.append("\n" + " " * (indent * depth))
        out.append("}")
    elif isinstance(v, list):
        if not v:
            out.append("[]")
            return
        out.append("[")
        for i, x in enumerate(v):
            if i:
                out.append(", " if indent is None else ",")
            if indent is not None:
                out.append("\n" + " " * (indent * (depth + 1)))
            _dump(x, out, indent, depth + 1, sort, ascii_only)
        if indent is not None:
            out.append("\n" + " " * (indent * depth))
        out.append("]")
    elif isinstance(v, float) and not math.isfinite(v):
        out.append("NaN" if v != v else ("Infinity" if v > 0 else "-Infinity"))
    else:
        out.append(json.dumps(v, ensure_ascii=ascii_only))


def dumps(value: Any, rng: random.Random) -> bytes:
    """JSON text of a parsed value in a layout drawn from ``rng``."""
    indent = rng.choice((2, 2, None, None, 4, 0))
    out: list[str] = []
    _dump(value, out, indent, 0, rng.random() < 0.5, rng.random() < 0.8)
    text = "".join(out)
    if rng.random() < 0.05:
        text += rng.choice(("\n", " ", "\x00", "{}", "garbage"))
    return text.encode("utf-8", "surrogatepass")


_NUMBERS = (0, 1, -1, 2, 7, 8, 255, 256, 65535, 2**31 - 1, 2**31, 2**32, 2**53 + 1, 2**63 - 1, 2**63, 2**64,
            10**30, -(2**63), 0.5, -0.0, 1e308, float("nan"), float("inf"))


class JsonMutator:
    """Mutate JSON documents; ``words`` are keys and strings worth trying."""

    def __init__(self, words: Iterable[str] = ()) -> None:
        self.words = sorted(set(words))
        self.parse = ParseCache(_loads)

    def mutate(self, data: bytes, rng: random.Random) -> bytes | None:
        """A variant of ``data`` with one node changed (None if it is not JSON)."""
        parsed = self.parse(data)
        if parsed is None:
            return None
        holder = [copy.deepcopy(parsed)]
        slots = list(_slots(holder))
        if not slots:
            return dumps(self._value(rng, []), rng)
        containers = [s for s in slots if isinstance(s[0][s[1]], (list, _Obj))]
        r = rng.random()
        if r < 0.35 or not containers:
            owner, key = rng.choice(slots)
            owner[key] = self._replacement(owner[key], rng, slots)
        elif r < 0.75:
            owner, key = rng.choice(containers)
            node = owner[key]
            if isinstance(node, _Obj):
                self._edit_object(node, rng, slots)
            else:
                self._edit_list(node, rng, slots)
        elif r < 0.85:
            versions = [(o, k) for o, k in slots if isinstance(o, list) and len(o) == 2 and o[0] == "version"
                        and k == 1]
            owner, key = rng.choice(versions or slots)
            owner[key] = rng.choice((0, 1, 2, 3, 4, 5, 6, 7, 8, -1, "7", 7.0, None, True))
        elif r < 0.95:
            owner, key = rng.choice(slots)
            other = rng.choice(slots)
            owner[key] = copy.deepcopy(other[0][other[1]])
        else:
            owner, key = rng.choice(slots)
            owner[key] = _Deep(owner[key], rng.choice((10, 100, 1000, 5000, 100_000)))
        return dumps(holder[0], rng)

    def _value(self, rng: random.Random, slots: list) -> Any:
        r = rng.random()
        if r < 0.3 and self.words:
            return rng.choice(self.words)
        if r < 0.55:
            return rng.choice(_NUMBERS)
        if r < 0.7:
            return rng.choice((None, True, False, "", [], _Obj(), "\udcff", "x" * 1000))
        if slots:
            o, k = rng.choice(slots)
            return copy.deepcopy(o[k])
        return 0

    def _replacement(self, old: Any, rng: random.Random, slots: list) -> Any:
        if isinstance(old, bool) or old is None:
            return self._value(rng, slots)
        if isinstance(old, int) and rng.random() < 0.6:
            return rng.choice((old - 1, old + 1, -old, old * 2, old * 8 + 7, 0, -1, 2**63, float(old)))
        if isinstance(old, str) and rng.random() < 0.4:
            return rng.choice((old + old, old[:len(old) // 2], old.upper(), old + "\x00", old + "\udcff", ""))
        return self._value(rng, slots)

    def _edit_object(self, node: _Obj, rng: random.Random, slots: list) -> None:
        op = rng.randrange(5) if node else 1
        if op == 0:
            del node[rng.randrange(len(node))]
        elif op == 1:
            key = rng.choice(self.words) if self.words and rng.random() < 0.8 else rng.choice(("", "x", "0", "-1"))
            node.insert(rng.randrange(len(node) + 1), [key, self._value(rng, slots)])
        elif op == 2:
            pair = rng.choice(node)
            pair[0] = rng.choice(self.words) if self.words else pair[0] + "_"
        elif op == 3:
            pair = rng.choice(node)
            node.insert(rng.randrange(len(node) + 1), [pair[0], copy.deepcopy(pair[1])])
        else:
            node.clear()

    def _edit_list(self, node: list, rng: random.Random, slots: list) -> None:
        edit_list(node, rng, lambda: [copy.deepcopy(rng.choice(node)) if node and rng.random() < 0.7
                                      else self._value(rng, slots)])


def _slots(holder: list) -> Iterable[tuple[Any, Any]]:
    """(owner, key) of every node under ``holder[0]``, the root included (as ``(holder, 0)``)."""
    yield holder, 0
    stack: list[Any] = [holder[0]]
    count = 0
    while stack and count < 5000:
        node = stack.pop()
        count += 1
        if isinstance(node, _Obj):
            for pair in node:
                yield pair, 1
                stack.append(pair[1])
        elif isinstance(node, list):
            for i, x in enumerate(node):
                yield node, i
                stack.append(x)


def model_words(*modules: Any) -> list[str]:
    """Field names (aliases included) and literal string values of every pydantic model
    in ``modules``: the keys and enum values a JSON mutator should try."""
    import pydantic

    words: set[str] = set()

    def literals(tp: Any) -> None:
        if get_origin(tp) is Literal:
            words.update(a for a in get_args(tp) if isinstance(a, str))
        for a in get_args(tp):
            literals(a)

    for mod in modules:
        for obj in vars(mod).values():
            if isinstance(obj, type) and issubclass(obj, pydantic.BaseModel) and obj is not pydantic.BaseModel:
                for name, f in obj.model_fields.items():
                    words.add(f.alias or name)
                    literals(f.annotation)
    return sorted(words)


__all__ = ["JsonMutator", "dumps", "model_words"]
