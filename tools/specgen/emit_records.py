"""Emit records specs (JSON documents): strict pydantic models, JSON Schemas and docs."""

from __future__ import annotations

import json
import keyword
import types

from .common import camel, header
from .emit_documents import emit_documents
from .emit_fast import Code
from .model import Model

_BASIC = {"str": "str", "int": "int", "bool": "bool", "float": "float", "null": "None", "any": "Any"}


def py_type(t: str, records: set[str]) -> str:
    """Python annotation for a records type expression."""
    t = t.strip()
    parts = _split_union(t)
    if len(parts) > 1:
        return " | ".join(py_type(p, records) for p in parts)
    if t in _BASIC:
        return _BASIC[t]
    if t.startswith("list[") and t.endswith("]"):
        return f"list[{py_type(t[5:-1], records)}]"
    if t.startswith("map[") and t.endswith("]"):
        return f"dict[str, {py_type(t[4:-1], records)}]"
    if t in records:
        return camel(t)
    raise ValueError(f"unknown record type {t!r}")


def _split_union(t: str) -> list[str]:
    depth, cur, out = 0, "", []
    for ch in t:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "|" and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return [p.strip() for p in out]


def emit_records(model: Model, name: str) -> dict[str, str]:
    """Files for one records spec: ``<name>_models.py``, its JSON Schema and its doc page."""
    spec, doc = model.records[name]
    if spec.timeline is not None or spec.lenient:
        from .emit_versioned import emit_lenient_records, emit_versioned_records

        return emit_versioned_records(model, name) if spec.timeline else emit_lenient_records(model, name)
    used = [r for u in spec.uses for r in model.records[u][0].records]
    docs = [doc] + [model.records[u][1] for u in spec.uses]
    records = used + list(spec.records)
    names = {r.name for r in records}
    c = Code()
    c.lines.append(header(model, docs).rstrip("\n"))
    c(f'"""Pydantic models: {spec.title}."""')
    c()
    c("from __future__ import annotations")
    c()
    c("from typing import Any  # noqa: F401")
    c()
    c("from pydantic import BaseModel, ConfigDict, Field  # noqa: F401")
    for r in records:
        c()
        c()
        c(f"class {camel(r.name)}(BaseModel):")
        c.indent()
        c(f'"""{r.doc.strip()}"""')
        c()
        c(f"model_config = ConfigDict(extra={r.extra!r}, strict=True, populate_by_name=True)")
        c()
        for f in r.fields:
            ident = f.name if f.name.isidentifier() else f.name.replace("-", "_")
            if keyword.iskeyword(ident):
                ident += "_"
            ann = py_type(f.type, names)
            args = []
            if not f.required:
                args.append("default=None")
                ann = f"{ann} | None" if "None" not in ann else ann
            if ident != f.name:
                args.append(f"alias={f.name!r}")
            args.append(f"description={' '.join(f.doc.split())!r}")
            c(f"{ident}: {ann} = Field({', '.join(args)})")
        c.dedent()
    c()
    c()
    c(f"ROOT = {camel(spec.root)}")
    module_src = c.text()
    # JSON Schema from the models just emitted
    mod = types.ModuleType(f"_gen_{name}")
    exec(compile(module_src, mod.__name__, "exec"), mod.__dict__)
    for r in records:
        getattr(mod, camel(r.name)).model_rebuild(_types_namespace=mod.__dict__)
    schema = getattr(mod, camel(spec.root)).model_json_schema(by_alias=True)
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": spec.title, **schema}
    page = ["<!-- " + line.lstrip("# ") + " -->" for line in header(model, docs).splitlines()]
    page += ["", f"# {spec.title}", "", spec.doc.strip(), ""]
    if spec.uses:
        page += ["Uses the records of " + ", ".join(f"[`{u}`]({u}.md)" for u in spec.uses) + ".", ""]
    for r in spec.records:
        page += [f"## `{r.name}`", "", r.doc.strip(), "", "| Key | Type | Required | Meaning |", "|---|---|---|---|"]
        for f in r.fields:
            page.append(f"| `{f.name}` | `{f.type}` | {'yes' if f.required else 'no'} | {' '.join(f.doc.split())} |")
        page.append("")
    page += [f"JSON Schema: [`schemas/{name}.schema.json`](../schemas/{name}.schema.json)", ""]
    return {
        f"{name}_documents.py": emit_documents(model, name),
        f"{name}_models.py": module_src,
        f"schemas/{name}.schema.json": json.dumps(schema, indent=2, ensure_ascii=False) + "\n",
        f"docs/{name}.md": "\n".join(page),
    }
