"""Rule ids and boundary variants of JSON documents made from a records spec (GraphExecutor
JSON, MLF metadata of each version), the counterpart of :mod:`.rules` for binary records.

A rule is named ``<prefix><record>.<field>.<aspect>``. The aspects a field's entry in the spec
gives it (:func:`field_aspects`): ``type`` (a value of another JSON type is refused),
``required`` (a missing key is refused), ``const``, ``enum`` (the value, or every element,
is one of a list), ``pattern``, ``range`` (an integer minimum), ``items`` (fewest and most
elements), ``keyed`` (each key of a map equals a field of its value), ``absent`` (a key the record has in other versions but not in this one), and the
rules the spec declares on the field (``rules:``, relations to other fields), whose variants
the format's own builder makes. A record whose extra keys are forbidden has
``<record>.unknown``; an alias with an element count, ``<alias>.items``.

:func:`occurrences` walks a valid document against the records (the records inside each
field are the spec's ``nested`` paths; a union is told apart by its const keys);
:func:`variants` makes, for the first place each rule occurs, the values a reader gets
wrong: another JSON type, the key removed, a constant or enum value changed, a string off
its pattern, integers at the bound, the bound - 1, 0, 1, the sign bit, 2^31, 2^32, 2^63,
2^64 - 1 and beyond, lists one element short and one too long, an unknown key. Which side
of its rule a variant stands on is the expected outcome the collector computes.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

Path = tuple[Any, ...]

#: integers a reader gets wrong, around any bound: the sign bit and the widths of C readers
EDGE_INTS = [0, 1, -1, (1 << 31) - 1, 1 << 31, 1 << 32, (1 << 63) - 1, 1 << 63, (1 << 64) - 1, 1 << 64,
             -(1 << 31), -(1 << 63), -(1 << 63) - 1]


def field_aspects(f: dict[str, Any]) -> list[str]:
    """The rule aspects of a field entry of a records spec (generated ``RECORDS`` or ``PROJECTIONS``)."""
    out = [] if f["type"] == "any" else ["type"]
    if f["required"]:
        out.append("required")
    if f.get("const") is not None:
        out.append("const")
    if f.get("enum") or f.get("item_enum"):
        out.append("enum")
    if f.get("pattern"):
        out.append("pattern")
    if f.get("minimum") is not None:
        out.append("range")
    if f.get("min_items") is not None or f.get("max_items") is not None:
        out.append("items")
    if f.get("keyed_by"):
        out.append("keyed")
    return out + list(f.get("rules", {}))


def record_rules(prefix: str, records: dict[str, Any], aliases: dict[str, Any] | None = None,
                 absent: dict[str, list[str]] | None = None) -> list[str]:
    """Every rule id of ``records`` (and of the aliases with an element count; ``absent``:
    record -> keys it has in other versions only)."""
    out = []
    for name, rec in records.items():
        out += [f"{prefix}{name}.{f['name']}.{a}" for f in rec["fields"] for a in field_aspects(f)]
        out += [f"{prefix}{name}.{k}.absent" for k in (absent or {}).get(name, [])]
        if rec.get("extra") == "forbid":
            out.append(f"{prefix}{name}.unknown")
    out += [f"{prefix}{a}.items" for a, spec in (aliases or {}).items()
            if spec.get("min_items") is not None or spec.get("max_items") is not None]
    return out


def _matches(rec: dict[str, Any], value: Any) -> bool:
    return isinstance(value, dict) and all(value.get(f["name"]) == f["const"] for f in rec["fields"]
                                           if f.get("const") is not None and f["required"])


def _at(value: Any, sub: list[Any], path: Path) -> Iterator[tuple[Path, Any]]:
    if not sub:
        yield path, value
        return
    head, rest = sub[0], sub[1:]
    if head == "*":
        items = list(value.items()) if isinstance(value, dict) else \
            list(enumerate(value)) if isinstance(value, list) else []
        for k, v in items:
            yield from _at(v, rest, path + (k,))
    elif isinstance(value, list) and isinstance(head, int) and head < len(value):
        yield from _at(value[head], rest, path + (head,))


def occurrences(doc: Any, root: str, records: dict[str, Any]) -> Iterator[tuple[Path, str, str, Any]]:
    """(path, kind, name, value) of every record (kind ``record``) and alias (``alias``)
    in a valid document, depth first, in document order."""
    def walk(value: Any, name: str, path: Path) -> Iterator[tuple[Path, str, str, Any]]:
        rec = records[name]
        yield path, "record", name, value
        for f in rec["fields"]:
            if f["name"] not in value:
                continue
            for sub, alias in f.get("aliases", []):
                for p, v in _at(value[f["name"]], sub, path + (f["name"],)):
                    yield p, "alias", alias, v
            for sub, inner in f.get("nested", []):
                for p, v in _at(value[f["name"]], sub, path + (f["name"],)):
                    if _matches(records[inner], v):
                        yield from walk(v, inner, p)

    yield from walk(doc, root, ())


def get(doc: Any, path: Path) -> Any:
    """The value at ``path``."""
    for p in path:
        doc = doc[p]
    return doc


def edited(doc: Any, path: Path, value: Any = ..., *, delete: bool = False) -> Any:
    """A deep copy of ``doc`` with the value at ``path`` replaced (or its key deleted)."""
    out = copy.deepcopy(doc)
    parent = get(out, path[:-1])
    if delete:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return out


def wrong_types(tree: list[Any]) -> list[Any]:
    """Values of other JSON types than ``tree`` (a spec type as nested lists)."""
    kind, arg = tree
    if kind == "basic":
        others: dict[str, list[Any]] = {"str": [1, None], "int": ["1", 1.5, True, None], "bool": [1, "true"],
                                         "float": ["1.5"], "null": [0, ""]}
        return others.get(arg, [])
    if kind == "lit":
        return [str(arg) + "_x", 0]
    if kind in ("list", "tuple"):
        return [{}, "[]"]
    if kind in ("map", "intmap", "ref"):
        return [[], "{}"]
    if kind == "union":
        kinds = {a[1] for a in arg if a[0] == "basic"}
        return ([] if "int" in kinds else [1]) + [[]]
    return []


def _unknown_key(value: dict[str, Any]) -> str:
    key = "x_unknown"
    while key in value:
        key += "_"
    return key


def variants(doc: Any, root: str, records: dict[str, Any], prefix: str, *, aliases: dict[str, Any] | None = None,
             absent: dict[str, dict[str, Any]] | None = None, skip: set[str] | frozenset[str] = frozenset(),
             swept: set[tuple[str, str, str]] | None = None) -> Iterator[tuple[list[str], str, Any]]:
    """(rule ids, label, document) of the boundary variants of the valid ``doc`` for the
    generic aspects of every rule it reaches (declared rules and ``skip`` aside): each
    made at the first place the rule occurs. ``absent``: record -> key -> a value of a key
    the record has in other versions only. ``swept``: the (record, key, aspect) whose
    integers and wrong types went through every edge value already (in another version's
    document): those get the values on either side of the bound only (added to as it goes)."""
    done: set[str] = set()
    for path, kind, name, value in occurrences(doc, root, records):
        if kind == "alias":
            spec = (aliases or {})[name]
            rid = f"{prefix}{name}.items"
            if rid in done or rid in skip or not isinstance(value, list):
                continue
            done.add(rid)
            lo, hi = spec.get("min_items"), spec.get("max_items")
            for n in sorted({x for x in (lo, hi) if x is not None} | {x - 1 for x in (lo,) if x} |
                            {x + 1 for x in (hi,) if x is not None}):
                new = (value + [0] * n)[:n]
                if new != value:
                    yield [rid], f"{n}-items", edited(doc, path, new)
            continue
        rec = records[name]
        if rec.get("extra") == "forbid" and f"{prefix}{name}.unknown" not in done | set(skip):
            done.add(f"{prefix}{name}.unknown")
            key = _unknown_key(value)
            yield [f"{prefix}{name}.unknown"], key, edited(doc, path + (key,), 1)
        for key, extra in (absent or {}).get(name, {}).items():
            rid = f"{prefix}{name}.{key}.absent"
            if rid not in done and rid not in skip and key not in value:
                done.add(rid)
                yield [rid], "present", edited(doc, path + (key,), extra)
        for f in rec["fields"]:
            here = path + (f["name"],)
            present = f["name"] in value
            for aspect in field_aspects(f):
                rid = f"{prefix}{name}.{f['name']}.{aspect}"
                if rid in done or rid in skip or aspect in f.get("rules", {}) or not present:
                    continue
                done.add(rid)
                full = swept is None or (name, f["name"], aspect) not in swept
                if swept is not None:
                    swept.add((name, f["name"], aspect))
                yield from ((rules, label, d) for rules, label, d in
                            _aspect_variants(doc, here, f, aspect, rid, value[f["name"]], full))


def _aspect_variants(doc: Any, here: Path, f: dict[str, Any], aspect: str, rid: str, v: Any,
                     full: bool = True) -> Iterator[tuple[list[str], str, Any]]:
    if aspect == "type":
        for w in wrong_types(f["tree"])[:None if full else 1]:
            yield [rid], f"as-{type(w).__name__}", edited(doc, here, w)
        kind, arg = f["tree"]
        if full and kind == "list" and arg[0] == "basic" and isinstance(v, list) and v:  # an element of another type
            for w in wrong_types(arg)[:2]:
                yield [rid], f"element-as-{type(w).__name__}", edited(doc, here + (0,), w)
        if full and f["tree"] == ["basic", "int"] and f.get("minimum") is None and f.get("const") is None:
            for n in EDGE_INTS:  # an integer of any size and sign is of the type
                if n != v:
                    yield [rid], f"{n:#x}", edited(doc, here, n)
    elif aspect == "required":
        yield [rid], "missing", edited(doc, here, delete=True)
    elif aspect == "const":
        c = f["const"]
        others = [c + 1, c - 1, 0, (1 << 32) + c] if isinstance(c, int) and not isinstance(c, bool) else \
            [str(c).upper(), str(c) + " ", ""]
        if f.get("role") == "version":  # another version's number makes another version's document: not that
            others = [0, -c, (1 << 32) + c, 100 + c]
        for w in others:
            if w != c:
                yield [rid], f"is-{w!r}", edited(doc, here, w)
    elif aspect == "enum":
        allowed = f.get("enum") or f.get("item_enum") or []
        items = bool(f.get("item_enum"))
        for a in allowed:  # every allowed value
            if (a if not items else [a]) != v:
                yield [rid], f"is-{a}", edited(doc, here, [a] if items else a)
        for w in (str(allowed[0]).upper(), str(allowed[0]) + " ", ""):
            yield [rid], f"is-{w!r}", edited(doc, here, [w] if items else w)
    elif aspect == "pattern":
        for label, w in (("empty", ""), ("space-before", " " + str(v)), ("newline-after", str(v) + "\n"),
                         ("fullwidth-digits", "".join(chr(ord(ch) + 0xFEE0) if ch.isdigit() else ch for ch in str(v))),
                         ("nul-after", str(v) + "\x00")):
            if w != v:
                yield [rid], label, edited(doc, here, w)
    elif aspect == "range":
        lo = f["minimum"]
        for n in sorted({lo - 1, lo, lo + 1, *EDGE_INTS} if full else {lo - 1, lo}):
            if n != v:
                yield [rid], f"{n:#x}", edited(doc, here, n)
    elif aspect == "keyed" and isinstance(v, dict) and v:
        k = next(iter(v))
        yield [rid], "key-renamed", edited(doc, here, {k + "_renamed": v[k], **{x: y for x, y in v.items() if x != k}})
        yield [rid], "key-upper-case", edited(doc, here, {k.upper(): v[k], **{x: y for x, y in v.items() if x != k}})
    elif aspect == "items" and isinstance(v, (list, dict)):
        lo, hi = f.get("min_items"), f.get("max_items")
        for n in sorted({x for x in (lo, hi) if x is not None} | ({lo - 1} if lo else set()) |
                        ({hi + 1} if hi is not None else set())):
            if n == len(v) or n < 0:
                continue
            if isinstance(v, dict):
                pairs = list(v.items())
                new: Any = dict(pairs[:n]) if n <= len(pairs) else None
            else:
                fill = v[0] if v else (f.get("item_enum") or [""])[0]
                new = (v + [fill] * n)[:n]
            if new is not None:
                yield [rid], f"{n}-items", edited(doc, here, new)


__all__ = ["EDGE_INTS", "edited", "field_aspects", "get", "occurrences", "record_rules", "variants", "wrong_types"]
