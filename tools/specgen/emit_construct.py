"""Emit the Construct grammar of a binary spec: a symmetric parser/builder for tooling,
cross-checks and users who work in Construct. Checks become ``Check``; counts and
derived sizes become ``Rebuild`` so building fills them in."""

from __future__ import annotations

from . import runtime
from .common import header
from .emit_fast import Code
from .expr import Expr
from .fields import kind_of
from .model import Binary, Model, RField
from .versions import era_condition

_CONSTRUCT_SCALAR = {
    "u8": "Int8ul", "u16": "Int16ul", "u32": "Int32ul", "u64": "Int64ul",
    "i8": "Int8sl", "i16": "Int16sl", "i32": "Int32sl", "i64": "Int64sl",
    "f32": "Float32l", "f64": "Float64l",
}


def _ctx(e: Expr, consts: dict[str, int | str], each: bool = False) -> str:
    def name(dotted: str) -> str:
        if dotted in consts:
            return repr(consts[dotted])
        if dotted == "each":
            return "each"
        return "ctx." + dotted
    return e.translate(name, func_prefix="_")


def _type(t: str, encoding: str | None) -> str:
    if t in _CONSTRUCT_SCALAR:
        return _CONSTRUCT_SCALAR[t]
    if t == "str":
        return "_Text" if encoding else "_Str"
    return t


def _field(f: RField, consts: dict[str, int | str]) -> list[str]:
    s = f.spec
    out: list[str] = []
    kind = kind_of(f)
    base = kind.construct(f, lambda e: _ctx(e, consts), _type)
    if f.is_array:
        base = f"Array(lambda ctx: {_ctx(f.exprs['count'], consts)}, {base})"
    if s.sized:
        base = f"Prefixed(Int64ul, {base})"
    if s.const is not None:
        value = s.const if isinstance(s.const, int) else s.const.encode()
        base = f"Const({value!r}, {base})"
    elif "equals" in f.exprs and not kind.len_equals:
        base = f"Rebuild({base}, lambda ctx: {_ctx(f.exprs['equals'], consts)})"
    elif "derive" in f.exprs:
        base = f"Rebuild({base}, lambda ctx: {_ctx(f.exprs['derive'], consts)})"
    elif s.canonical is not None:
        base = f"Default({base}, {s.canonical!r})"
    cond = era_condition(s.since, s.until, "_era(ctx)")
    if "when" in f.exprs:
        cond.append(f"({_ctx(f.exprs['when'], consts)})")
    if cond:
        base = f"If(lambda ctx: {' and '.join(cond)}, {base})"
    out.append(f"{s.name!r} / {base},")
    # a conditional field's checks apply only when it is present
    inner = " and ".join(cond)
    guard = "" if not cond else f"not {inner} or " if len(cond) == 1 and inner.startswith("(") else f"not ({inner}) or "
    for key in ("equals", "derive"):
        if key in f.exprs:
            subject = f"len(ctx.{s.name})" if key == "equals" and kind.len_equals else f"ctx.{s.name}"
            out.append(f"Check(lambda ctx: {guard}{subject} == {_ctx(f.exprs[key], consts)}),")
    if "constraint" in f.exprs:
        e = f.exprs["constraint"]
        if "each" in e.names and kind.each_elements(f):
            out.append(f"Check(lambda ctx: {guard}all({_ctx(e, consts)} for each in ctx.{s.name})),")
        else:
            out.append(f"Check(lambda ctx: {guard}{_ctx(e, consts)}),")
    return out


def emit_construct(model: Model, binary: Binary) -> str:
    """Python source of ``<name>_construct.py``."""
    docs = [binary.doc] + [model.binaries[u].doc for u in binary.spec.uses]
    c = Code()
    c.lines.append(header(model, docs).rstrip("\n"))
    c(f'"""Construct grammar: {binary.spec.title}.')
    c()
    c("Parse with ``<struct>.parse(data, era=(0, 27))``; ``era`` picks fields with since/until")
    c('(default: newest). Checks raise construct errors; the fast reader gives MlfError instead."""')
    c()
    c("# ruff: noqa: F401, F403, F405")
    c("from construct import *")
    c()
    c("from ._construct_lib import _era, _Str, _Text")
    c("from ._fastlib import ceil_div as _ceil_div, numel as _numel")
    extras = _helpers(binary)
    if extras:
        c(f"from ._fastlib import {', '.join(f'{h} as _{h}' for h in extras)}")
    consts = {k.name: k.value for k in binary.spec.constants}
    for used in binary.spec.uses:
        consts.update({k.name: k.value for k in model.binaries[used].spec.constants})
        names = [s for s in model.binaries[used].structs]
        c(f"from .{used}_construct import {', '.join(names)}")
    for rs in binary.structs.values():
        if rs.owner != binary.name:
            continue
        c()
        c(f"# {rs.spec.doc.strip()}")
        c(f"{rs.name} = Struct(")
        c.indent()
        for f in rs.fields:
            for line in _field(f, consts):
                c(line)
        for inv, e, _loc in rs.invariants:
            if inv.severity != "error":
                continue
            cond = era_condition(inv.since, inv.until, "_era(ctx)", outside=True)
            rule = _ctx(e, consts)
            c(f"Check(lambda ctx: {' or '.join(cond + [rule])}),  # invariant {inv.name}")
        c.dedent()
        c(")")
    return c.text()


def _helpers(binary: Binary) -> list[str]:
    """The _fastlib helpers the grammar's expressions call (remaining() becomes GreedyBytes)."""
    used: set[str] = set()
    for rs in binary.structs.values():
        if rs.owner != binary.name:
            continue
        for f in rs.fields:
            for e in f.exprs.values():
                used |= e.helpers
        for _inv, e, _loc in rs.invariants:
            used |= e.helpers
    used.discard("remaining")
    return sorted(used)


CONSTRUCT_LIB = runtime.source("construct_lib")
