"""Emit the output documents of a plain records spec as TypedDicts (``<name>_documents.py``).

The JSON documents the library builds and the CLI prints (``inspect``, ``params dump``,
``blob dump``, ...) are plain dicts, typed by these classes: the same records as the
pydantic models and JSON Schemas of ``emit_records``, with no pydantic. A key the spec
marks ``required: false`` is ``NotRequired``; ``enum`` and ``const`` are ``Literal``.
"""

from __future__ import annotations

import keyword
from typing import Any

from .code import Code
from .common import camel, header

_BASIC = {"str": "str", "int": "int", "bool": "bool", "float": "float", "null": "None", "any": "Any"}


def _split(t: str, sep: str) -> list[str]:
    depth, cur, out = 0, "", []
    for ch in t:
        depth += ch == "["
        depth -= ch == "]"
        if ch == sep and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    out.append(cur.strip())
    return out


def _ann(t: str, records: set[str]) -> str:
    """The annotation of a records type expression."""
    t = t.strip()
    parts = _split(t, "|")
    if len(parts) > 1:
        return " | ".join(_ann(p, records) for p in parts)
    if t in _BASIC:
        return _BASIC[t]
    if t.startswith("list[") and t.endswith("]"):
        return f"list[{_ann(t[5:-1], records)}]"
    if t.startswith("map[") and t.endswith("]"):
        inner = _split(t[4:-1], ",")
        return f"dict[str, {_ann(inner[-1], records)}]"
    if t in records:
        return camel(t)
    raise NotImplementedError(f"typed documents: type {t!r}")


def _field_ann(f: Any, records: set[str]) -> str:
    """The annotation of a key, evaluated when the class is made (so that ``NotRequired`` is
    seen): a type naming a record is a string, resolved when type hints are asked for."""
    if f.const is not None:
        ann = f"Literal[{f.const!r}]"
    elif f.enum is not None:
        ann = f"Literal[{', '.join(repr(v) for v in f.enum)}]"
    else:
        ann = _ann(f.type, records)
        if any(camel(r) in ann.replace("[", " ").replace("]", " ").replace("|", " ").split() for r in records):
            ann = repr(ann)
    return ann if f.required else f"NotRequired[{ann}]"


def emit_documents(model: Any, name: str) -> str:
    """Python source of ``generated/<name>_documents.py``."""
    spec, doc = model.records[name]
    used = {r.name: u for u in spec.uses for r in model.records[u][0].records}
    names = set(used) | {r.name for r in spec.records}
    c = Code()
    c.lines.append(header(model, [doc] + [model.records[u][1] for u in spec.uses]).rstrip("\n"))
    c(f'"""Typed documents: {spec.title} (TypedDicts of the records; no pydantic)."""')
    c()
    c("from typing import Any, Literal, NotRequired, TypedDict  # noqa: F401")
    for u in spec.uses:
        imported = sorted(camel(r) for r, src in used.items() if src == u)
        c()
        c(f"from .{u}_documents import {', '.join(imported)}  # noqa: F401")
    for r in spec.records:
        doc_text = " ".join(r.doc.split()).replace('"""', "'''")
        plain = all(f.name.isidentifier() and not keyword.iskeyword(f.name) for f in r.fields)
        c()
        c()
        if plain:
            c(f"class {camel(r.name)}(TypedDict):")
            c.indent()
            c(f'"""{doc_text}"""')
            c()
            for f in r.fields:
                c(f"{f.name}: {_field_ann(f, names)}")
            c.dedent()
        else:  # a key that is not an identifier: the functional form
            c(f"#: {doc_text}")
            c(f"{camel(r.name)} = TypedDict({camel(r.name)!r}, {{")
            for f in r.fields:
                c(f"    {f.name!r}: {_field_ann(f, names)},")
            c("})")
    c()
    c()
    c(f"ROOT = {camel(spec.root)}")
    return c.text()


__all__ = ["emit_documents"]
