"""Structure-aware mutation of the binary formats, driven by the spec itself.

:class:`SpecMutator` parses an input with the spec engine (:func:`mlf_spec._internal.spec_engine.trace`:
a value tree plus the byte span of every field), changes one thing and writes the bytes
back. Two kinds of change:

* **in place** (a lie): one count, length, dtype code, constant or other scalar gets an
  interesting value where it sits; or one string gets another word with its length fixed;
  or a field's bytes are deleted or repeated. Everything else stays, so the readers'
  cross-checks (counts against remaining bytes, derived sizes, constraints) are exercised.
* **rebuilt** (consistent): one value of the tree changes (an element added to or removed
  from a list, a shape, a dtype, a name, a payload) and the fields that depend on it (counts,
  lengths, derived sizes, the bytes they size) are recomputed by the spec engine's
  :class:`~mlf_spec._internal.spec_engine.Builder`, so the result is valid as far as the layout goes
  and the fuzzer reaches what lies behind the checks.

It works for any struct of any spec IR (``mlf_spec.generated.*_ir.STRUCTS``), including
payload grammars registered by users, which is what makes it reusable.
"""

from __future__ import annotations

import copy
import importlib
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from mlf_spec._internal.ir import Field, Struct
from mlf_spec._internal.spec_engine import LATEST, Builder, Span, count_sources, trace

from .mutators import ParseCache, edit_list, pick_int

_INT_BITS = {"u8": (8, False), "u16": (16, False), "u32": (32, False), "u64": (64, False), "i8": (8, True),
             "i16": (16, True), "i32": (32, True), "i64": (64, True)}
_CAP = 1 << 16  # a rebuilt bytes field grows to at most this many bytes


@dataclass
class _Loc:
    """One editable place in a value tree."""

    owner: Any  # the dict or list holding the value
    key: Any  # field name or index
    type: str  # scalar type, "str", "bytes", "list", or a struct name
    struct: str  # the struct whose field this is
    ns: dict  # that struct's node (dependent fields are recomputed there)
    field: Field


@dataclass
class _Parsed:
    root: str
    era: tuple[int, ...]
    tree: dict
    spans: list[Span]


class SpecMutator:
    """Mutate inputs laid out as ``roots`` (pairs of a struct name and an era; None for the
    latest) of the spec IR ``structs``; ``words`` are strings worth trying in string fields
    (module kinds, names), besides those found in the input itself."""

    def __init__(self, structs: dict[str, Struct], roots: Sequence[tuple[str, tuple[int, ...] | None]],
                 words: Iterable[str] = ()) -> None:
        self.structs = structs
        self.roots = [(r, e if e is not None else LATEST) for r, e in roots]
        self.words = [w.encode("utf-8", "surrogateescape") for w in words]
        self.parse = ParseCache(self._parse)

    def _parse(self, data: bytes) -> _Parsed | None:
        for root, era in self.roots:
            try:
                tree, spans = trace(self.structs, root, data, era)
            except Exception:
                continue
            return _Parsed(root, era, tree, spans)
        return None

    def mutate(self, data: bytes, rng: random.Random) -> bytes | None:
        """A variant of ``data`` with one field changed (None if it does not parse)."""
        parsed = self.parse(data)
        if parsed is None:
            return None
        for _ in range(4):
            out = self._rebuilt(data, parsed, rng) if rng.random() < 0.5 else self._in_place(data, parsed, rng)
            if out is not None and out != data:
                return out
        return None

    # ------------------------------------------------------------- in place

    def _in_place(self, data: bytes, p: _Parsed, rng: random.Random) -> bytes | None:
        spans = p.spans
        if not spans:
            return None
        op = rng.random()
        if op < 0.6:
            ints = [s for s in spans if s.size in (1, 2, 4, 8) and s.role in ("value", "count", "length")
                    and (s.role != "value" or s.field.type in _INT_BITS)]
            if not ints:
                return None
            s = rng.choice(ints)
            bits, signed = (64, False) if s.role != "value" else _INT_BITS[s.field.type]
            bits = min(bits, 8 * s.size)
            old = int.from_bytes(data[s.offset:s.offset + s.size], "little", signed=signed)
            context = [len(data), len(data) - s.offset - s.size, (len(data) - s.offset - s.size) // 8]
            context += self._table_codes(s.field)
            if isinstance(s.field.const, int):
                context.append(s.field.const ^ 1)
            new = pick_int(rng, old, bits, signed, context)
            return data[:s.offset] + new.to_bytes(s.size, "little", signed=signed) + data[s.offset + s.size:]
        if op < 0.8:
            strings = [s for s in spans if s.role == "payload" and s.offset >= 8 and s.field.length_prefixed]
            strings = [s for s in strings if s.path and s.path[-1] != "#count"]
            if not strings:
                return None
            s = rng.choice(strings)
            word = self._word(rng, data, p)
            # the u64 length sits right before a string's bytes
            return data[:s.offset - 8] + len(word).to_bytes(8, "little") + word + data[s.offset + s.size:]
        s = rng.choice(spans)
        chunk = data[s.offset:s.offset + s.size]
        if rng.random() < 0.5:
            return data[:s.offset] + data[s.offset + s.size:]
        return data[:s.offset] + chunk + chunk + data[s.offset + s.size:]

    def _table_codes(self, field: Field) -> list[int]:
        if field.table is None:
            return []
        try:
            table = importlib.import_module(f"mlf_spec.generated.{field.table}_table")
            return [r["code"] for r in table.ROWS]
        except (ImportError, KeyError, AttributeError):
            return []

    def _word(self, rng: random.Random, data: bytes, p: _Parsed) -> bytes:
        r = rng.random()
        if self.words and r < 0.5:
            return rng.choice(self.words)
        found = [data[s.offset:s.offset + s.size] for s in p.spans if s.role == "payload" and 0 < s.size <= 64]
        if found and r < 0.75:
            return rng.choice(found)
        return rng.choice([b"", b"\xff\xfe", b"_lib", b"_import_tree", b"x" * rng.randint(1, 300), b"\x00"])

    # ------------------------------------------------------------- rebuilt

    def _rebuilt(self, data: bytes, p: _Parsed, rng: random.Random) -> bytes | None:
        tree = copy.deepcopy(p.tree)
        locs = list(self._locations(p.root, tree, p.era))
        if not locs:
            return None
        loc = rng.choice(locs)
        value = loc.owner[loc.key]
        consistent = rng.random() < 0.75
        if loc.type == "list":
            self._edit_list(value, rng)
        elif loc.type in _INT_BITS and isinstance(value, int):
            bits, signed = _INT_BITS[loc.type]
            loc.owner[loc.key] = pick_int(rng, value, bits, signed, self._table_codes(loc.field) + [len(data)])
        elif isinstance(value, str):
            loc.owner[loc.key] = self._word(rng, data, p).decode("utf-8", "surrogateescape")
        elif isinstance(value, (bytes, bytearray)):
            loc.owner[loc.key] = self._edit_bytes(bytes(value), rng)
        else:
            return None
        if consistent:
            self._refit(loc, rng)
        try:
            return Builder(self.structs, p.era).build(p.root, tree)
        except Exception:
            return None

    def _edit_list(self, items: list, rng: random.Random) -> None:
        edit_list(items, rng, lambda: [copy.deepcopy(rng.choice(items))] if items else [])

    def _edit_bytes(self, value: bytes, rng: random.Random) -> bytes:
        op = rng.randrange(4)
        if op == 0:
            return value[:rng.randint(0, len(value))]
        if op == 1:
            return value + bytes(rng.randrange(256) for _ in range(rng.randint(1, 32)))
        if op == 2:
            return b""
        return bytes(rng.randrange(256) for _ in range(len(value)))

    def _refit(self, loc: _Loc, rng: random.Random) -> None:
        """Recompute the fields of the edited struct that depend on others (counts,
        ``equals``, derived sizes), and resize the bytes fields they size."""
        fields = self.structs[loc.struct].fields
        ns = loc.ns
        sources = count_sources(fields)
        for f in fields:
            n = f.name
            if n == loc.key and ns is loc.owner:
                continue
            if n in sources or (f.equals is not None and not f.len_equals) or f.derive is not None:
                ns[n] = None
        filled = dict(ns)
        try:
            for f in fields:
                n = f.name
                if filled.get(n) is not None:
                    continue
                if n in sources and filled.get(sources[n]) is not None:
                    filled[n] = len(filled[sources[n]])
                elif f.equals is not None and not f.len_equals:
                    filled[n] = f.equals(filled)
                elif f.derive is not None:
                    filled[n] = f.derive(filled)
            for f in fields:
                f.refit(ns, filled, _CAP, lambda k: bytes(rng.randrange(256) for _ in range(k)))
        except Exception:
            return

    def _locations(self, sname: str, node: dict, era: tuple[int, ...]) -> Iterable[_Loc]:
        spec = self.structs.get(sname)
        if spec is None or not isinstance(node, dict):
            return
        places = _Places(self, sname, node, era)
        for f in spec.fields:
            if node.get(f.name) is not None:
                yield from f.locations(places, node)

    def _elements(self, items: list, tname: str, sname: str, ns: dict, f: Field, era: tuple[int, ...],
                  owner: list | None = None, base: int = 0) -> Iterable[_Loc]:
        for i, item in enumerate(items):
            if tname in self.structs and isinstance(item, dict):
                yield from self._locations(tname, item, era)
            else:
                yield _Loc(owner if owner is not None else items, base + i, tname, sname, ns, f)


class _Places:
    """The editable places of one struct's node, as the field kinds list them (:meth:`ir.Field.locations`)."""

    def __init__(self, m: SpecMutator, sname: str, node: dict, era: tuple[int, ...]) -> None:
        self.m, self.sname, self.node, self.era = m, sname, node, era

    def place(self, owner: Any, key: Any, type_name: str, f: Field) -> _Loc:
        return _Loc(owner, key, type_name, self.sname, self.node, f)

    def struct_places(self, name: str, node: dict) -> Iterable[_Loc]:
        return self.m._locations(name, node, self.era)

    def element_places(self, items: list, type_name: str, f: Field, owner: list | None = None,
                       base: int = 0) -> Iterable[_Loc]:
        return self.m._elements(items, type_name, self.sname, self.node, f, self.era, owner, base)

    def is_struct(self, type_name: str) -> bool:
        return type_name in self.m.structs


__all__ = ["SpecMutator"]
