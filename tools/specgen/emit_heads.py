"""``read_<s>_heads``: a reader specialised for the common shapes of a record with one
counted array (a tensor record and its shape), reading each header in one unpack.

It applies exactly the checks of ``read_<s>`` (the constants, constraints and derived
values of every field, and the payload fitting in the input), written as one condition
per record; a record of an uncommon shape is read by ``read_<s>`` itself, and a record
that breaks a check is read again by ``read_<s>``, which raises the error it names. It
is emitted only for records it covers exactly: a leading run of fixed scalars (the
array's count among them), the counted scalar array, a tail of fixed scalars, then the
lazy payload sized by them, no conditional fields and no invariants.
"""

from __future__ import annotations

import ast

from .code import Code
from .common import inline_scalars
from .expr import Expr
from .fields import kind_of
from .ir import SCALARS
from .model import RField, RStruct

#: Shapes (array lengths) read by one prebuilt Struct each; longer ones go to ``read_<s>``.
COMMON_COUNTS = 5


def heads_layout(rs: RStruct, segments: list) -> tuple[list[str], RField, list[RField], RField] | None:
    """(flat names of the leading run, the counted array, the tail scalars, the lazy payload)
    when ``rs`` has the covered shape (see the module doc), else None."""
    if rs.invariants or any(f.conditional for f in rs.fields):
        return None
    kinds = [s[0] for s in segments]
    if kinds != ["run", "merged", "field"]:
        return None
    lead = list(segments[0][2])
    arr_name, *tail_names = segments[1][2]
    by_name = {f.name: f for f in rs.fields}
    arr, lazy = by_name.get(arr_name), segments[2][2]
    if arr is None or not kind_of(lazy).lazy(lazy) or lazy is not rs.fields[-1]:
        return None
    count = arr.exprs.get("count")
    if count is None or count.source.strip() not in lead:
        return None
    return lead, arr, [by_name[n] for n in tail_names], lazy


class _Heads:
    """What ``read_<s>_heads`` of one struct is made of: the scalar types by flat name, where
    each value sits in the flat tuple of a header, and the conditions a bad header meets."""

    def __init__(self, rs: RStruct, layout: tuple[list[str], RField, list[RField], RField]) -> None:
        self.rs = rs
        lead, arr, tail, lazy = layout
        self.lead, self.arr, self.tail, self.lazy = lead, arr, tail, lazy
        self.fields = {f.name: f for f in rs.fields}
        self.types: dict[str, str] = {}
        for f in rs.fields:
            if f.is_scalar:
                self.types[f.name] = f.spec.type
            elif f.struct is not None:
                for flat, _dotted, sf in inline_scalars(f.struct, f.name, f.name):
                    self.types[flat] = sf.spec.type
        # where each value sits in the flat tuple: the run, the array, the tail (from the end)
        self.index = {n: f"v[{i}]" for i, n in enumerate(lead)}
        self.index.update({f.name: f"v[{j - len(tail)}]" for j, f in enumerate(tail)})
        self.index[arr.name] = arr.name
        self.dotted_to_flat = {d: flat for f in rs.fields if f.struct is not None
                               for flat, d, _sf in inline_scalars(f.struct, f.name, f.name)}
        self.count = arr.exprs["count"].source.strip()

    def size(self, names: list[str]) -> int:
        """Bytes of the scalars ``names`` (flat)."""
        return sum(SCALARS[self.types[n]][0] for n in names)

    def local(self, dotted: str) -> str:
        """The expression of a (dotted) field's value within the header tuple ``v``."""
        if dotted == "each":
            return "each"
        flat = self.dotted_to_flat.get(dotted, dotted)
        if flat in self.index:
            return self.index[flat]
        f = self.fields.get(dotted)
        if f is not None and f.struct is not None:  # a whole inline struct: its tuple
            return "(" + ", ".join(self.index[m[0]] for m in inline_scalars(f.struct, f.name, f.name)) + ",)"
        raise KeyError(dotted)

    def py(self, e: Expr) -> str:
        """``e`` over the header tuple."""
        return e.translate(self.local, func_prefix="_", inline=True, remaining="end - at")

    def checks(self, f: RField, var: str, bad: list[str]) -> None:
        """Append the conditions under which ``f`` (its value ``var``) breaks a check."""
        s = f.spec
        if s.const is not None:
            if not isinstance(s.const, int):
                raise _NotCovered
            bad.append(f"{var} != {s.const:#x}")
        for key in ("equals", "derive"):
            if key in f.exprs:
                bad.append(f"{var} != {self.py(f.exprs[key])}")
        if "constraint" in f.exprs:
            e = f.exprs["constraint"]
            if "each" not in e.names:
                bad.append(_negated(self.py(e)))
            elif not f.is_array:
                raise _NotCovered
            elif e.is_pure_bounds("each"):
                lo, hi = e.int_bounds("each")
                tests = ([f"min({var}) < {lo}"] if lo is not None else []) + (
                    [f"max({var}) > {hi}"] if hi is not None else [])
                bad.append(f"({var} and ({' or '.join(tests)}))")
            else:
                bad.append(f"not all({self.py(e)} for each in {var})")

    def conditions(self) -> list[str]:
        """Every condition a bad header meets (raises _NotCovered for a check it cannot state)."""
        bad: list[str] = []
        for f in self.rs.fields:
            if f is self.lazy:
                continue
            if f.struct is not None:
                for flat, _dotted, sf in inline_scalars(f.struct, f.name, f.name):
                    self.checks(sf, self.index[flat], bad)
                self.checks(f, self.local(f.name), bad)
            else:
                self.checks(f, self.index[f.name], bad)
        size = self.py(self.lazy.exprs["size"])
        return bad + [f"{size} < 0", f"{size} > end - at"]


def emit_heads(c: Code, rs: RStruct, segments: list, slots: list[str]) -> None:
    """Emit ``<S>_HEAD_FIELDS`` and ``read_<s>_heads`` when ``rs`` has the covered shape."""
    layout = heads_layout(rs, segments)
    if layout is None:
        return
    h = _Heads(rs, layout)
    try:
        bad = h.conditions()
    except _NotCovered:
        return
    _emit_tables(c, h)
    _emit_reader(c, h, bad, slots)


def _emit_tables(c: Code, h: _Heads) -> None:
    """``<S>_HEAD_FIELDS``, the prebuilt Structs of the common shapes and the count's reader."""
    name, upper, arr = h.rs.name, h.rs.name.upper(), h.arr
    lead_fmt = "".join(SCALARS[h.types[n]][1] for n in h.lead)
    tail_fmt = "".join(SCALARS[f.spec.type][1] for f in h.tail)
    flat_names = (*h.lead, arr.name, *(f.name for f in h.tail))
    c()
    c()
    c(f"#: The values of a {name} header as ``read_{name}_heads`` gives them: one flat tuple,")
    c(f"#: the entries of ``{arr.name}`` in the place of ``{arr.name}``.")
    c(f"{upper}_HEAD_FIELDS = {flat_names!r}")
    c(f"_{upper}_HEADS = tuple(struct.Struct({'<' + lead_fmt!r} + {SCALARS[arr.spec.type][1]!r} * _k + {tail_fmt!r}) "
      f"for _k in range({COMMON_COUNTS}))")
    c(f"_{upper}_COUNT = struct.Struct({'<' + SCALARS[h.types[h.count]][1]!r}).unpack_from")


def _emit_reader(c: Code, h: _Heads, bad: list[str], slots: list[str]) -> None:
    """``read_<s>_heads``: the loop over the records."""
    name, upper, arr, lazy, lead, tail = h.rs.name, h.rs.name.upper(), h.arr, h.lazy, h.lead, h.tail
    fixed = h.size(lead) + sum(SCALARS[f.spec.type][0] for f in tail)
    count_at = h.size(lead[:lead.index(h.count)])
    c()
    c()
    c(f"def read_{name}_heads(buf: Buffer, pos: int, stop: int, end: int, n: int, base: int, heads: list, "
      "offsets: list, era: tuple[int, ...] = LATEST) -> int:")
    c.indent()
    c(f'"""Read up to ``n`` consecutive {name} records from ``pos`` whose headers end by ``stop``,')
    c(f"each header in one unpack when ``{arr.name}`` has fewer than {COMMON_COUNTS} entries (else by ``read_{name}``),")
    c(f"with every check of ``read_{name}``; a record that breaks one is read again by")
    c(f"``read_{name}``, which raises the error it names. Appends each header's values to")
    c(f"``heads`` (a flat tuple, see {upper}_HEAD_FIELDS) and ``base`` plus where its {lazy.name} starts")
    c("to ``offsets``; the payload must end by ``end``. Returns the offset after the last")
    c('record read (fewer than ``n`` when the next header does not end by ``stop``)."""')
    c(f"table = _{upper}_HEADS")
    c("append, place = heads.append, offsets.append")
    c(f"while n > 0 and stop - pos >= {count_at + SCALARS[h.types[h.count]][0]}:")
    c.indent()
    c(f"_k = _{upper}_COUNT(buf, pos + {count_at})[0]")
    c(f"at = pos + {fixed} + {SCALARS[arr.spec.type][0]} * _k")
    c(f"if 0 <= _k < {COMMON_COUNTS} and at <= stop:")
    c.indent()
    c("v = table[_k].unpack_from(buf, pos)")
    c(f"{arr.name} = v[{len(lead)}:{-len(tail) if tail else ''}]")
    c("if " + " or ".join(bad) + ":")
    c.indent()
    c(f"read_{name}(buf, pos, end, era)  # raises the error it names")
    c.dedent()
    c.dedent()
    c("elif _k < 0 or at > stop:")
    c.indent()
    c(f"if _k < 0 or at > end:  # past every input: ``read_{name}`` names it")
    c.indent()
    c(f"read_{name}(buf, pos, end, era)")
    c.dedent()
    c("break")
    c.dedent()
    c("else:")
    c.indent()
    c(f"rec, _ = read_{name}(buf, pos, end, era)")
    tail_slots = ", ".join(f"rec[{slots.index(f.name)}]" for f in tail)
    lead_slots = ", ".join(f"rec[{slots.index(n)}]" for n in lead)
    c(f"v = ({lead_slots}, *rec[{slots.index(arr.name)}], {tail_slots})")
    c.dedent()
    c("append(v)")
    c("place(base + at)")
    c(f"pos = at + {h.py(lazy.exprs['size'])}")
    c("n -= 1")
    c.dedent()
    c("return pos")
    c.dedent()


class _NotCovered(Exception):
    """A check this reader cannot write as a condition: the reader is not emitted."""


def _negated(source: str) -> str:
    """``not (source)``, written ``a not in b`` for a membership test."""
    tree = ast.parse(source, mode="eval").body
    if isinstance(tree, ast.Compare) and len(tree.ops) == 1 and isinstance(tree.ops[0], (ast.In, ast.NotIn)):
        tree.ops = [ast.NotIn() if isinstance(tree.ops[0], ast.In) else ast.In()]
        return ast.unparse(tree)
    return f"not ({source})"
