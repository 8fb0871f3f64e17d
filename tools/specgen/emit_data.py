"""Emit the spec as plain Python data: the structs of a binary spec (with expressions
compiled to lambdas over a field namespace) and the tables with their version ranges.
The runtime spec engine (strategies, traced parsing) and the docs read this data."""

from __future__ import annotations

import json
from pprint import pformat

from .common import camel, header
from .emit_fast import Code
from .expr import Expr
from .ir import SCALARS
from .model import Binary, Model, RField, table_dialects
from .versions import vkey


def _ns(dotted: str, consts: dict[str, int | str]) -> str:
    if dotted in consts:
        return repr(consts[dotted])
    if dotted == "each":
        return "each"
    parts = dotted.split(".")
    return "ns" + "".join(f"[{p!r}]" for p in parts)


def _field(f: RField, consts: dict[str, int | str]) -> str:
    s = f.spec
    d: dict[str, object] = {"name": s.name, "kind": f.kind, "type": s.type, "doc": s.doc.strip()}
    if f.kind == "scalar" or s.type in SCALARS:
        if s.type in SCALARS:
            d["fmt"], d["size"] = SCALARS[s.type][1], SCALARS[s.type][0]
    for key in ("const", "canonical", "table", "encoding", "role", "order"):
        v = getattr(s, key)
        if v is not None:
            d[key] = v
    if s.lazy:
        d["lazy"] = True
    if s.sized:
        d["sized"] = True
    if s.keep_span:
        d["keep_span"] = True
    if f.kind == "struct" and f.struct is not None:
        d["struct"] = f.struct.name
    if f.elem:
        d["elem"] = f.elem
    if f.key:
        d["key"], d["value"] = f.key, f.value
    if s.since:
        d["since"] = vkey(s.since)
    if s.until:
        d["until"] = vkey(s.until)
    if s.strategy:
        d["strategy"] = s.strategy.model_dump(exclude_none=True)
    if s.switch:
        switch: dict[str, object] = {"on": s.switch.on, "cases": dict(s.switch.cases), "default": s.switch.default}
        if s.switch.extensible:
            switch["extensible"] = s.switch.extensible
        d["switch"] = switch
    lines = [pformat(d, width=100, sort_dicts=False)[:-1] + ","]
    for key, e in f.exprs.items():
        lines.append(f"  {key!r}: ({e.source!r}, {_lambda(e, consts)}),")
        if key == "constraint":
            subject = "each" if "each" in e.names else s.name
            lines.append(f"  'bounds': {e.int_bounds(subject)!r},")
            nested = {n.split(".", 1)[1]: e.int_bounds(n) for n in e.names if n.startswith(s.name + ".")}
            if nested:
                lines.append(f"  'member_bounds': {nested!r},")
            choices = e.choices(subject)
            if choices is not None:
                lines.append(f"  'choices': {[consts.get(v, v) if isinstance(v, str) else v for v in choices]!r},")
    if f.switch_on is not None:
        lines.append(f"  'switch_on': {_lambda(f.switch_on, consts)},")
    return "\n".join(lines) + "}"


def _lambda(e: Expr, consts: dict[str, int | str]) -> str:
    """A lambda over a field namespace ``ns`` (dict tree); ``remaining`` is passed by the
    engine where the expression asks for remaining()."""
    body = e.translate(lambda n: _ns(n, consts), func_prefix="_", remaining="remaining", attr_items=True)
    extra = ", remaining=None" if "remaining" in e.helpers else ""
    return f"lambda ns, each=None{extra}: {body}"


def emit_binary_data(model: Model, binary: Binary) -> str:
    """Python source of ``<name>_ir.py``: the structs of one binary spec as data."""
    docs = [binary.doc] + [model.binaries[u].doc for u in binary.spec.uses]
    c = Code()
    c.lines.append(header(model, docs).rstrip("\n"))
    c(f'"""{binary.spec.title}: the spec as data (structs, fields, compiled expressions)."""')
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
    c("STRUCTS: dict = {}")
    for used in binary.spec.uses:
        c(f"STRUCTS.update(_{used.upper()}_STRUCTS)")
    for rs in binary.structs.values():
        if rs.owner != binary.name:
            continue
        c(f"STRUCTS[{rs.name!r}] = {{")
        c(f"    'name': {rs.name!r}, 'record': {camel(rs.name)!r}, 'inline': {rs.inline!r}, 'root': {rs.spec.root!r},")
        c(f"    'doc': {rs.spec.doc.strip()!r},")
        c("    'fields': [")
        for f in rs.fields:
            for line in _field(f, consts).splitlines():
                c("        " + line)
            c.lines[-1] += ","
        c("    ],")
        if rs.invariants:
            c("    'invariants': [")
            for inv, e, _loc in rs.invariants:
                since = vkey(inv.since) if inv.since else None
                until = vkey(inv.until) if inv.until else None
                c(f"        {{'name': {inv.name!r}, 'severity': {inv.severity!r}, 'since': {since!r}, 'until': {until!r},")
                c(f"         'doc': {' '.join(inv.doc.split())!r},")
                c(f"         'rule': ({e.source!r}, {_lambda(e, consts)})}},")
            c("    ],")
        c("}")
    examples = [ex.model_dump() for ex in binary.spec.examples]
    c(f"EXAMPLES = {pformat(examples, width=100, sort_dicts=False)}")
    return c.text()


def emit_table_data(model: Model, name: str) -> str:
    """Python source of ``<table>_table.py``: rows and the version ranges (dialects)."""
    spec, doc = model.tables[name]
    c = Code()
    assert model.eras_doc is not None  # the tables' dialects are eras: spec/eras.yaml is loaded with them
    c.lines.append(header(model, [doc, model.eras_doc]).rstrip("\n"))
    c(f'"""{spec.title}."""')
    c()
    c(f"NAME = {name!r}")
    c(f"TITLE = {spec.title!r}")
    c(f"DOC = {spec.doc.strip()!r}")
    c(f"COLUMNS = {[col.name for col in spec.columns]!r}")
    rows = []
    for row in spec.rows:
        r = {col.name: row.get(col.name) for col in spec.columns}
        r["since"] = vkey(str(row["since"])) if "since" in row else None
        r["until"] = vkey(str(row["until"])) if "until" in row else None
        r["doc"] = row["doc"]
        rows.append(r)
    c(f"ROWS = {pformat(rows, width=120, sort_dicts=False)}")
    dialects = [
        {"id": f"v{since}", "since": vkey(since), "until": vkey(until) if until else None, "rows": idx}
        for since, until, idx in table_dialects(model, name)
    ]
    c("# Version ranges over which the active rows stay the same, oldest first.")
    c(f"DIALECTS = {pformat(dialects, width=120, sort_dicts=False)}")
    return c.text()


def emit_eras(model: Model) -> str:
    """Python source of ``tvm_versions.py``: the TVM versions of spec/eras.yaml."""
    assert model.eras is not None and model.eras_doc is not None
    c = Code()
    c.lines.append(header(model, [model.eras_doc]).rstrip("\n"))
    c(f'"""{model.eras.title}."""')
    c()
    eras = [{"version": vkey(e.version), "doc": " ".join(e.doc.split())}
            for e in sorted(model.eras.eras, key=lambda e: vkey(e.version))]
    c(f"ERAS = {pformat(eras, width=120, sort_dicts=False)}")
    c("#: The oldest and the newest TVM version the spec describes.")
    c(f"OLDEST = {eras[0]['version']!r}")
    c(f"NEWEST = {eras[-1]['version']!r}")
    return c.text()


def emit_json(data: object) -> str:
    """Deterministic JSON text."""
    return json.dumps(data, indent=2, sort_keys=False, ensure_ascii=False) + "\n"
