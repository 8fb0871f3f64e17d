"""Emit the spec as plain Python data: the tables with their version ranges, the eras (the
structs of a binary spec are :mod:`specgen.emit_ir`'s, re-exported here)."""

from __future__ import annotations

import json
from pprint import pformat

from .common import header
from .emit_fast import Code
from .emit_ir import emit_binary_data
from .model import Model, table_dialects
from .versions import vkey


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


__all__ = ["emit_binary_data", "emit_eras", "emit_json", "emit_table_data"]
