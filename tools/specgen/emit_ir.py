"""Emit ``<binary>_ir.py``: the structs of a binary spec as instances of the run-time IR
(:mod:`mlf_spec._internal.ir`: one class per field kind, expressions compiled to lambdas over
a field namespace). The spec engine, the strategies, the mutator and the docs read them."""

from __future__ import annotations

from pprint import pformat

from .code import Code
from .common import camel, header
from .expr import Expr
from .fields import ir_class, ir_kind_attrs
from .model import Binary, Model, RField
from .versions import vkey


def _ns(dotted: str, consts: dict[str, int | str]) -> str:
    if dotted in consts:
        return repr(consts[dotted])
    if dotted == "each":
        return "each"
    parts = dotted.split(".")
    return "ns" + "".join(f"[{p!r}]" for p in parts)


def _lambda(e: Expr, consts: dict[str, int | str]) -> str:
    """A lambda over a field namespace ``ns`` (dict tree); ``remaining`` is passed by the
    engine where the expression asks for remaining()."""
    body = e.translate(lambda n: _ns(n, consts), func_prefix="_", remaining="remaining", attr_items=True)
    extra = ", remaining=None" if "remaining" in e.helpers else ""
    return f"lambda ns, each=None{extra}: {body}"


def _attrs(f: RField, consts: dict[str, int | str]) -> list[tuple[str, str]]:
    """(attribute, Python source of its value) of one field, in the IR's order."""
    s = f.spec
    out: list[tuple[str, str]] = [("name", repr(s.name)), ("type", repr(s.type)), ("doc", repr(s.doc.strip()))]
    out += ir_kind_attrs(f)
    for key in ("const", "canonical", "table", "encoding", "role", "order"):
        v = getattr(s, key)
        if v is not None:
            out.append((key, repr(v)))
    out += [(key, "True") for key in ("lazy", "sized", "keep_span") if getattr(s, key)]
    if s.since:
        out.append(("since", repr(vkey(s.since))))
    if s.until:
        out.append(("until", repr(vkey(s.until))))
    if s.strategy:
        out.append(("strategy", repr(s.strategy.model_dump(exclude_none=True))))
    for key, e in f.exprs.items():
        out.append((key, f"Expr({e.source!r}, {_lambda(e, consts)})"))
        if key == "constraint":
            subject = "each" if "each" in e.names else s.name
            out.append(("bounds", repr(e.int_bounds(subject))))
            nested = {n.split(".", 1)[1]: e.int_bounds(n) for n in e.names if n.startswith(s.name + ".")}
            if nested:
                out.append(("member_bounds", repr(nested)))
            choices = e.choices(subject)
            if choices is not None:
                out.append(("choices", repr([consts.get(v, v) if isinstance(v, str) else v for v in choices])))
    if f.switch_on is not None:
        out.append(("switch_on", _lambda(f.switch_on, consts)))  # a switch: the value its cases are chosen by
    return out


def _field(c: Code, f: RField, consts: dict[str, int | str]) -> None:
    c(f"{ir_class(f)}(")
    c.indent()
    for key, value in _attrs(f, consts):
        c(f"{key}={value},")
    c.dedent()
    c("),")


def emit_binary_data(model: Model, binary: Binary) -> str:
    """Python source of ``<name>_ir.py``: the structs of one binary spec as IR instances."""
    docs = [binary.doc] + [model.binaries[u].doc for u in binary.spec.uses]
    c = Code()
    c.lines.append(header(model, docs).rstrip("\n"))
    c(f'"""{binary.spec.title}: the spec as data (structs, fields, compiled expressions)."""')
    c()
    c("from mlf_spec._internal.ir import Bytes, Expr, Map, Nested, Scalar, Str, Struct, Switch, Vec  # noqa: F401")
    c()
    c("from ._fastlib import ceil_div as _ceil_div, numel as _numel  # noqa: F401")
    extras = sorted({h for rs in binary.structs.values() if rs.owner == binary.name
                     for e in [*(x for f in rs.fields for x in f.exprs.values()), *(x for _i, x, _l in rs.invariants)]
                     for h in e.helpers} - {"remaining"})
    if extras:
        c(f"from ._fastlib import {', '.join(f'{h} as _{h}' for h in extras)}  # noqa: F401")
    consts = {k.name: k.value for k in binary.spec.constants}
    for used in binary.spec.uses:
        consts.update({k.name: k.value for k in model.binaries[used].spec.constants})
        c(f"from .{used}_ir import STRUCTS as _{used.upper()}_STRUCTS")
    c()
    c(f"NAME = {binary.name!r}")
    c(f"TITLE = {binary.spec.title!r}")
    c(f"DOC = {binary.spec.doc.strip()!r}")
    c(f"CONSTANTS = {consts!r}")
    roots = [s.name for s in binary.structs.values() if s.spec.root]
    c(f"ROOTS = {roots!r}")
    c("STRUCTS: dict[str, Struct] = {}")
    for used in binary.spec.uses:
        c(f"STRUCTS.update(_{used.upper()}_STRUCTS)")
    for rs in binary.structs.values():
        if rs.owner != binary.name:
            continue
        c(f"STRUCTS[{rs.name!r}] = Struct(")
        c.indent()
        c(f"name={rs.name!r}, record={camel(rs.name)!r}, inline={rs.inline!r}, root={rs.spec.root!r},")
        c(f"doc={rs.spec.doc.strip()!r},")
        c("fields=(")
        c.indent()
        for f in rs.fields:
            _field(c, f, consts)
        c.dedent()
        c("),")
        if rs.invariants:
            c("invariants=(")
            c.indent()
            for inv, e, _loc in rs.invariants:
                since = vkey(inv.since) if inv.since else None
                until = vkey(inv.until) if inv.until else None
                c(f"{{'name': {inv.name!r}, 'severity': {inv.severity!r}, 'since': {since!r}, 'until': {until!r},")
                c(f" 'doc': {' '.join(inv.doc.split())!r},")
                c(f" 'rule': Expr({e.source!r}, {_lambda(e, consts)})}},")
            c.dedent()
            c("),")
        c.dedent()
        c(")")
    examples = [ex.model_dump() for ex in binary.spec.examples]
    c(f"EXAMPLES = {pformat(examples, width=100, sort_dicts=False)}")
    return c.text()
