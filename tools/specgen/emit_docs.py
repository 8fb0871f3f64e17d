"""Emit the Markdown reference pages: one per binary spec and one per table."""

from __future__ import annotations

from typing import Any

from .common import header
from .fields import kind_of
from .fields.base import value_kind
from .model import Binary, Model, RField, RStruct, table_dialects


def _type_text(f: RField) -> str:
    s = f.spec
    t = value_kind(f).doc_type(f)
    if f.is_array:
        t = f"{t}[{s.count}]"
    if s.sized:
        t = f"u64 length, then {t}"
    return t


def _rules(f: RField) -> str:
    s = f.spec
    parts = []
    if s.const is not None:
        parts.append(f"= `{s.const:#x}`" if isinstance(s.const, int) else f"= `{s.const!r}`")
    if s.canonical is not None:
        parts.append(f"written `{s.canonical}`, any value kept")
    if s.equals:
        parts.append(f"== `{s.equals}`")
    if s.derive:
        parts.append(f"== `{s.derive}`")
    if s.constraint:
        parts.append(f"`{s.constraint}`")
    if s.when:
        parts.append(f"present if `{s.when}`")
    if s.since:
        parts.append(f"since {s.since}")
    if s.until:
        parts.append(f"until {s.until}")
    if s.table:
        parts.append(f"see [{s.table}]({s.table}.md)")
    if s.lazy:
        parts.append("read as an offset, never copied")
    if s.order == "unspecified":
        parts.append("element order is the writer's (unspecified)")
    if s.switch:
        cases = ", ".join(f"`{k}` → {v}" for k, v in s.switch.cases.items())
        parts.append(cases + (f", else {s.switch.default}" if s.switch.default else ", else error"))
        if s.switch.extensible:
            parts.append(f"codecs registered at run time (registry `{s.switch.extensible}`) come first")
    if s.sized:
        parts.append("the value must fill the stated length exactly")
    return "; ".join(parts)


def _size(f: RField) -> int | None:
    if f.conditional or f.is_array or f.spec.sized:
        return None
    return value_kind(f).fixed_size(f)


def struct_section(rs: RStruct) -> list[str]:
    out = [f"### `{rs.name}`", "", rs.spec.doc.strip(), ""]
    out += ["| Offset | Field | Type | Rule | Meaning |", "|---|---|---|---|---|"]
    offset: int | None = 0
    anchor = ""
    rel = 0
    diagram = []
    for f in rs.fields:
        if offset is not None:
            where = f"0x{offset:02x}"
        else:
            where = f"+0x{rel:02x} after `{anchor}`" if rel else f"after `{anchor}`"
        out.append(f"| {where} | `{f.name}` | {_type_text(f)} | {_rules(f)} | {' '.join(f.spec.doc.split())} |")
        size = _size(f)
        diagram.append(f"{f.name} ({size if size is not None else '…'})")
        if size is not None:
            if offset is not None:
                offset += size
            else:
                rel += size
        else:
            offset = None
            anchor, rel = f.name, 0
    out += ["", "```", "| " + " | ".join(diagram) + " |", "```", ""]
    if rs.invariants:
        out += ["Rules over several fields:", ""]
        for inv, _e, _loc in rs.invariants:
            when = (f", from {inv.since}" if inv.since else "") + (f", until {inv.until}" if inv.until else "")
            out.append(f"- `{inv.name}` ({inv.severity}{when}): `{inv.rule}`. {' '.join(inv.doc.split())}")
        out.append("")
    return out


def emit_binary_doc(model: Model, binary: Binary, examples: list[tuple[str, str, list[str]]],
                    ksy: str | None = None) -> str:
    """Markdown page of one binary spec; ``examples`` are (name, doc, hexdump lines); ``ksy`` the
    id of its Kaitai Struct file (its diagram is ``diagrams/<ksy>.svg``)."""
    out = [header(model, [binary.doc], comment="<!--").replace("\n", " -->\n", 1).replace("\n<!--", "\n<!--"), ""]
    out = ["<!-- " + line.lstrip("# ") + " -->" for line in header(model, [binary.doc]).splitlines()]
    out += ["", f"# {binary.spec.title}", "", binary.spec.doc.strip(), ""]
    out += ["All integers are little-endian; nothing is aligned or padded. `str` is a u64 byte length then the bytes;",
            "`vec<T>` a u64 count then the elements; `map<K, V>` a u64 count then key/value pairs.", ""]
    if binary.spec.uses:
        out += ["Uses: " + ", ".join(f"[{u}]({u}.md)" for u in binary.spec.uses), ""]
    if binary.spec.constants:
        out += ["## Constants", "", "| Name | Value | Meaning |", "|---|---|---|"]
        for k in binary.spec.constants:
            shown = f"{k.value:#x}" if isinstance(k.value, int) else repr(k.value)
            out.append(f"| `{k.name}` | `{shown}` | {k.doc} |")
        out.append("")
    out += ["## Structs", ""]
    for rs in binary.structs.values():
        if rs.owner == binary.name:
            out += struct_section(rs)
    out += ["## What a reader checks", ""]
    for rs in binary.structs.values():
        if rs.owner != binary.name:
            continue
        for f in rs.fields:
            r = []
            if f.spec.const is not None:
                r.append("must equal its constant (ConstMismatchError)")
            if f.spec.equals:
                r.append(f"must equal `{f.spec.equals}` (CountMismatchError)")
            if f.spec.derive:
                r.append(f"must equal `{f.spec.derive}` (ConstraintError)")
            if f.spec.constraint:
                r.append(f"must satisfy `{f.spec.constraint}` (ConstraintError)")
            if kind_of(f).length_checked(f) or f.spec.sized:
                r.append("its length is checked against the bytes that remain before anything is read (LengthError / TruncatedError)")
            if f.spec.sized:
                r.append("its value must end exactly where its stated length does (LengthError)")
            if f.spec.switch is not None and not f.spec.switch.default:
                r.append(f"a `{f.spec.switch.on}` with no layout is UnsupportedError")
            if r:
                out.append(f"- `{rs.name}.{f.name}`: " + "; ".join(r) + ".")
        for inv, _e, _loc in rs.invariants:
            what = "ConstraintError" if inv.severity == "error" else f"reported by `lint_{rs.name}`"
            out.append(f"- `{rs.name}` rule `{inv.name}`: `{inv.rule}` ({what}).")
    out.append("")
    for name, doc, lines in examples:
        out += [f"## Example: {name}", "", doc, "", "```", *lines, "```", ""]
    if ksy:
        out += ["## Kaitai Struct", "",
                f"The same layout as a Kaitai Struct spec: [`{ksy}.ksy`](../kaitai/{ksy}.ksy) (what its rules became, "
                "and how to get a parser in another language: [kaitai](kaitai.md)). The Kaitai compiler draws it "
                "like this (types of other files are the nodes outside the boxes):", "",
                f"![{ksy}.ksy](diagrams/{ksy}.svg)", ""]
    return "\n".join(out).rstrip() + "\n"


def _spell(row: dict[str, Any]) -> str:
    s = row["spelling"]
    if row.get("bits") is not None:
        s = s.replace("{bits}", str(row["bits"]))
    return s


def emit_table_doc(model: Model, name: str) -> str:
    spec, doc = model.tables[name]
    out = ["<!-- " + line.lstrip("# ") + " -->" for line in header(model, [doc]).splitlines()]
    out += ["", f"# {spec.title}", "", spec.doc.strip(), ""]
    dialects = table_dialects(model, name)
    if {"code", "spelling"} - {c.name for c in spec.columns}:  # not a code table: rows only
        dialects = []
    out += [] if not dialects else ["## By TVM version", "", "Each column is a range of TVM versions over which the table does not change "
            "(the dialect names used by `--dialect`).", ""]
    heads = [f"v{since}" + (f" (to {until})" if until else " (on)") for since, until, _ in dialects]
    if dialects:
        out.append("| code | bits | " + " | ".join(heads) + " |")
        out.append("|---|---|" + "---|" * len(dialects))
    keys = []
    for row in (spec.rows if dialects else []):
        key = (row["code"], row.get("bits"))
        if key not in keys:
            keys.append(key)
    for code, bits in keys:
        cells = []
        for _, _, idx in dialects:
            match = [spec.rows[i] for i in idx if spec.rows[i]["code"] == code and spec.rows[i].get("bits") == bits]
            cells.append(f"`{_spell(match[0])}`" if match else "—")
        code_txt = f"{code}–{spec.rows[[r['code'] for r in spec.rows].index(code)].get('code_max')}" if any(
            r["code"] == code and r.get("code_max") for r in spec.rows) else str(code)
        out.append(f"| {code_txt} | {bits if bits is not None else 'any'} | " + " | ".join(cells) + " |")
    out += ["", "## Rows", "", "| " + " | ".join(c.name for c in spec.columns) + " | since | until | meaning |",
            "|" + "---|" * (len(spec.columns) + 3)]
    for row in spec.rows:
        cells = [str(row.get(c.name)) if row.get(c.name) is not None else "" for c in spec.columns]
        out.append("| " + " | ".join(cells) + f" | {row.get('since', '')} | {row.get('until', '')} | {row['doc']} |")
    return "\n".join(out).rstrip() + "\n"


def emit_index(model: Model) -> str:
    lines = ["<!-- Generated by tools/generate.py. Do not edit. -->", "", "# mlf-spec reference", "",
             "Generated from spec/. One page per format and table.", ""]
    for b in model.binaries.values():
        lines.append(f"- [{b.spec.title}]({b.name}.md)")
    lines.append("- [Kaitai Struct specs of the binary formats](kaitai.md)")
    for t, _ in model.tables.values():
        lines.append(f"- [{t.title}]({t.name}.md)")
    for r, _ in model.records.values():
        lines.append(f"- [{r.title}]({r.name}.md)")
        if r.timeline:
            lines.extend(f"  - [version {v}]({r.name}_v{v}.md)"
                         for v in dict.fromkeys(x.version for x in model.timelines[r.timeline][0].revisions))
    for kind in (model.timelines, model.layouts, model.findings, model.verdicts):
        for s, _ in kind.values():
            lines.append(f"- [{s.title}]({s.name}.md)")
    for records in sorted({m.records for m, _ in model.migrations.values()}):
        lines.append(f"- [{model.records[records][0].title}: migrations between versions]({records}_migrations.md)")
        steps = sorted((m for m, _ in model.migrations.values() if m.records == records), key=lambda m: m.source)
        lines.extend(f"  - [{m.title}](migrate_{m.name}.md)" for m in steps)
    return "\n".join(lines) + "\n"
