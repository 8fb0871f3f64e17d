"""Rule ids and boundary variants made from the binary spec, for every field of every record.

A *rule* is one thing the spec states about one field of one struct, named
``<struct>.<field>.<aspect>``: its constant (``const``), its range (``range``, or ``each``
for every element of a counted field), a relation to other fields (``equals``, ``derive``),
its length or count prefix against what the input holds (``length``), its table
(``table``); plus, per root record, ``<root>.truncation`` (the input ends at a field
boundary or inside a field) and ``<root>.trailing`` (bytes after the end). A vector names the rules it probes
in ``features.rule``; its expected outcome says which side of the rule it stands on
(accept: the value at the bound or the exact length; reject: past it). :func:`sides` is the
rule-coverage table the suite's test requires to be full.

:func:`span_variants` makes the boundary variants of a valid input from the spans of its
trace: every count and length prefix lying by one, by powers of two, in its high half only
(a reader that narrows a u64 read to 32 bits sees the right value), at 2^40 (a count that
would allocate terabytes), at the sign bit and at 2^64 - 1; every constant differing in its
lowest or only its highest byte; every ranged integer at 0, 1, the bounds and the bounds +/- 1,
the sign bit, 2^31, 2^32, 2^63, 2^64 - 1 of its width; and the input cut at every field
boundary, 1, 4 and its size - 1 bytes into every multi-byte field, and every byte string one byte short.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from typing import Any

from mlf_spec._internal.ir import Field
from mlf_spec._internal.spec_engine import Span
from mlf_spec.edge_values import WIDTH as _WIDTH
from mlf_spec.edge_values import edge_values, length_lies, raw, rooms, unpack

#: the aspects a field's entry in the spec gives it, in the order of the rule ids
ASPECTS = ("const", "range", "each", "equals", "derive", "table", "length")


def rule_id(struct: str, field: str, aspect: str) -> str:
    """``tensor_record.ndim.range``."""
    return f"{struct}.{field}.{aspect}"


def field_aspects(f: Field) -> list[str]:
    """The rule aspects the spec states for field ``f`` (an IR field entry)."""
    out = []
    if "const" in f:
        out.append("const")
    if "constraint" in f and f["kind"] not in ("vec", "map", "str"):
        out.append("each" if "count" in f else "range")
    if "equals" in f:
        out.append("equals")
    if "derive" in f:
        out.append("derive")
    if "table" in f:
        out.append("table")
    if f["kind"] in ("vec", "map", "str") or f.get("sized") or (f["kind"] == "bytes" and "size" in f
                                                                 and "remaining" not in f["size"][0]):
        out.append("length")
    if f["kind"] in ("vec", "map", "str") and "constraint" in f:
        out.append("range")
    return out


def rules_of(structs: dict, names: Iterable[str]) -> list[str]:
    """Every rule id the spec states for the structs ``names``."""
    out = []
    for s in names:
        for f in structs[s]["fields"]:
            out += [rule_id(s, f["name"], a) for a in field_aspects(f)]
    return out


def owners(*struct_maps: dict) -> dict[int, str]:
    """The struct name of each IR field entry, by identity (a span carries its field entry)."""
    out: dict[int, str] = {}
    for structs in struct_maps:
        for name, spec in structs.items():
            for f in spec["fields"]:
                out.setdefault(id(f), name)
    return out


def reached(occurrences: Iterable[tuple[str, Any]], structs: dict) -> set[str]:
    """The rule ids of the structs that occur (a Builder's ``occurrences``)."""
    return set(rules_of(structs, {s for s, _ in occurrences}))


def side(expected: dict[str, Any], fmt: str) -> str:
    """The side of its rules a vector of format ``fmt`` stands on, from its expected outcome:
    ``reject`` when it is rejected or, for an MLF archive, when its reading holds error
    findings (its check refuses it; a blob's findings are notes, not refusals), else ``accept``."""
    if expected.get("outcome") == "reject":
        return "reject"
    if fmt == "mlf-archive" and (expected.get("reading") or {}).get("findings"):
        return "reject"
    return "accept"


def sides(cases: Iterable[tuple[list[str], str]]) -> dict[str, dict[str, int]]:
    """Rule-coverage table: per rule id, how many vectors probe it on each side
    (``accept`` / ``reject``), from (rules, expected outcome) pairs."""
    table: dict[str, dict[str, int]] = defaultdict(lambda: {"accept": 0, "reject": 0})
    for rules, outcome in cases:
        for r in rules:
            table[r][outcome] += 1
    return dict(sorted(table.items()))


def span_rule(span: Span, owner: dict[int, str], aspect: str) -> str:
    """The rule id of ``aspect`` of the field a span belongs to."""
    return rule_id(owner.get(id(span.field), "?"), span.field["name"], aspect)


def spans_rules(spans: list[Span], owner: dict[int, str], root: str) -> set[str]:
    """The rule ids of the fields that occur in a valid input's spans (each at its exact
    value there: the accepting side), its root's truncation rule among them."""
    return {span_rule(s, owner, a) for s in spans for a in field_aspects(s.field)} | {f"{root}.truncation"}


def span_variants(data: bytes, spans: list[Span], owner: dict[int, str], root: str, *,
                  per_rule: int = 1) -> Iterator[tuple[list[str], str, bytes]]:
    """(rule ids, label, bytes) of every boundary variant of the valid input ``data``: lying
    counts and lengths, constants and ranged integers at their edges (the first ``per_rule``
    places of each rule), and the input cut at every field boundary and 1, 4 and its size - 1
    bytes into each multi-byte field."""
    done: dict[tuple[str, str], int] = defaultdict(int)
    seen: set[bytes] = {data}

    def fresh(b: bytes) -> bool:
        if b in seen:
            return False
        seen.add(b)
        return True

    room = rooms(data, spans)

    for s in spans:
        f = s.field
        where = ".".join(str(p) for p in s.path).replace("#count", "n")
        element = f["kind"] == "vec" and f.get("elem") in _WIDTH and s.path[-1] != "#count"
        if s.role in ("count", "length"):
            rid = span_rule(s, owner, "length")
            if done[rid, s.role] >= per_rule:
                continue
            done[rid, s.role] += 1
            # a vec or str whose length the spec bounds: the lying count probes that bound too
            also = [span_rule(s, owner, "range")] if "range" in field_aspects(f) and "each" not in f["constraint"][0] \
                else []
            n = int.from_bytes(data[s.offset:s.offset + 8], "little")
            rem = room(s)  # a claim just past what its region holds, in bytes and in elements
            for v in length_lies(n) + [x for x in (rem + 1, rem // 4 + 1, rem // 8 + 1) if x not in length_lies(n)
                                       and x != n]:
                b = data[:s.offset] + v.to_bytes(8, "little") + data[s.offset + 8:]
                if fresh(b):
                    yield [rid, *also], f"{where}.{v:#x}", b
        elif s.role == "value" and ((f.get("type") in _WIDTH and set(f) & {"const", "constraint", "equals", "derive"})
                                    or (element and "constraint" in f and "each" in f["constraint"][0])):
            type_name = f["elem"] if element else f["type"]
            aspect = "range" if element else \
                next(a for a in field_aspects(f) if a in ("const", "range", "each", "equals", "derive"))
            rid = span_rule(s, owner, aspect)
            if done[rid, s.role] >= per_rule:
                continue
            done[rid, s.role] += 1
            good = unpack(type_name, data, s.offset)
            lo, hi = f.get("bounds", (None, None)) if aspect in ("range", "each") else (None, None)
            values = length_lies(good) if aspect in ("equals", "derive") and good >= 0 else \
                edge_values(type_name, good, lo, hi)
            if element:  # a bound that depends on other fields (an index below a count): small values around it
                values += [v for v in range(2, 9) if v != good and v not in values]
            for v in values:
                b = data[:s.offset] + raw(type_name, v) + data[s.offset + s.size:]
                if fresh(b):
                    yield [rid], f"{where}.{v:#x}", b
    # every field boundary, every byte string one byte short, and every multi-byte field cut 1, 4
    # and its size - 1 bytes into it (a reader that reads a field before checking that all of it
    # is there reads past the input only when the cut falls inside the field)
    cuts = sorted({s.offset for s in spans} | {s.offset + s.size for s in spans}
                  | {s.offset + s.size - 1 for s in spans if s.size > 1}
                  | {s.offset + k for s in spans if s.role != "payload" for k in (1, 4) if k < s.size})
    for n in cuts:
        if n < len(data) and fresh(data[:n]):
            inside = [span_rule(s, owner, "length") for s in spans
                      if s.role == "payload" and s.offset < n < s.offset + s.size and "length" in field_aspects(s.field)]
            yield [f"{root}.truncation", *sorted(set(inside))], f"cut-{n}", data[:n]


__all__ = ["ASPECTS", "edge_values", "side", "field_aspects", "length_lies", "owners", "raw", "reached", "rule_id", "rules_of",
           "sides", "span_rule", "span_variants", "spans_rules"]
