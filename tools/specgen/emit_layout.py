"""Emit the layout of a versioned archive: the spec as data (path patterns as regular
expressions) and its reference page."""

from __future__ import annotations

from pprint import pformat
from typing import Any

from .common import header, page_head
from .emit_fast import Code
from .model import Model
from .versioned import layout_versions, path_regex, timeline


def emit_layout(model: Model, name: str) -> dict[str, str]:
    spec, doc = model.layouts[name]
    tl = timeline(model, spec.timeline)
    places = {p.name: p.regex for p in spec.placeholders}
    c = Code()
    c.lines.append(header(model, [doc, tl.doc]).rstrip("\n"))
    c(f'"""{spec.title}: the spec as data (path patterns as regular expressions)."""')
    c()
    c(f"NAME = {name!r}")
    c(f"TITLE = {spec.title!r}")
    c(f"TIMELINE = {spec.timeline!r}")
    c(f"METADATA = {spec.metadata!r}")
    c(f"TAR = {pformat(_squash(spec.tar.model_dump()), width=110, sort_dicts=False)}")
    c(f"KINDS = {pformat({k.name: ' '.join(k.doc.split()) for k in spec.kinds}, width=110, sort_dicts=False)}")
    c(f"PLACEHOLDERS = {pformat([_squash(p.model_dump()) for p in spec.placeholders], width=110, sort_dicts=False)}")
    c(f"CONDITIONS = {pformat([_squash(x.model_dump()) for x in spec.conditions], width=110, sort_dicts=False)}")
    c(f"GROUPS = {pformat([_squash(g.model_dump()) for g in spec.groups], width=110, sort_dicts=False)}")
    entries = []
    for e in spec.entries:
        d = _squash(e.model_dump())
        d["regex"] = path_regex(e.path, places)
        d["placeholders"] = [m for m in places if "{" + m + "}" in e.path]
        d["present_in"] = [tl.ids[i] for i in sorted(tl.span(e.since, e.until))]
        entries.append(d)
    c(f"ENTRIES = {pformat(entries, width=110, sort_dicts=False)}")
    c("#: version -> style -> ids of the entries some revision of the version has")
    c(f"VERSIONS = {pformat(layout_versions(model, name), width=110, sort_dicts=False)}")
    page = page_head(model, [doc, tl.doc], spec.title, spec.doc)
    page += ["## Container", "", " ".join(spec.tar.doc.split()), "",
             f"- root member `{spec.tar.root_member}`, every name prefixed `{spec.tar.prefix}`",
             f"- mlf-spec writes tar format {spec.tar.format}, padded to {spec.tar.record_size} bytes, compression "
             f"{spec.tar.compression}",
             "- modes mlf-spec writes: " + ", ".join(f"{k} `{v:#o}`" for k, v in spec.tar.modes.items())]
    if spec.tar.umasks:
        page.append("- modes of TVM's main tree: files `0o666 & ~umask`, directories `0o777 & ~umask`, for one umask of "
                    + ", ".join(f"`{u:#05o}`" for u in spec.tar.umasks)
                    + ("; the root also " + ", ".join(f"`{m:#o}`" for m in spec.tar.root_modes) if spec.tar.root_modes
                       else ""))
    if spec.tar.member_types:
        page.append("- member type flags: " + ", ".join(f"{k} `{v}`" for k, v in spec.tar.member_types.items()))
    page.append("")
    if spec.tar.formats:
        page += ["| Format | Python | Sibling order | Extended records | Meaning |", "|---|---|---|---|---|"]
        for f in spec.tar.formats:
            order = f.siblings + (f" ({f.unsorted})" if f.unsorted else "")
            page.append(f"| {f.name} | {f.python} | {order} | {', '.join(f.extended) or '—'} | "
                        f"{' '.join(f.doc.split())} |")
        page.append("")
    if spec.tar.refused:
        page += ["A reader refuses (mlf-spec raises `UnsafeArchiveError`):", ""]
        page += [f"- `{k.name}`: {' '.join(k.doc.split())}" for k in spec.tar.refused]
        page.append("")
    page += ["## Member groups (in archive order)", ""]
    page += [f"- `{g.name}` ({g.order}, owner {g.owner}, directories {'yes' if g.directories else 'no'}): "
             f"{' '.join(g.doc.split())}" for g in spec.groups]
    page += ["", "## Content kinds", ""] + [f"- `{k.name}`: {' '.join(k.doc.split())}" for k in spec.kinds]
    page += ["", "## Placeholders", ""] + [f"- `{{{p.name}}}` (`{p.regex}`): {' '.join(p.doc.split())}"
                                            for p in spec.placeholders]
    page += ["", "## Conditions", ""] + [f"- `{x.name}` ({x.scope}): {' '.join(x.doc.split())}" for x in spec.conditions]
    page += ["", "## Entries", ""]
    for version in tl.versions():
        page += layout_section(model, name, version, heading="###")
    return {f"{name}_ir.py": c.text(), f"docs/{name}.md": "\n".join(page).rstrip() + "\n"}


def _squash(d: Any) -> Any:
    if isinstance(d, dict):
        return {k: _squash(v) for k, v in d.items() if v is not None and v != []}
    if isinstance(d, list):
        return [_squash(v) for v in d]
    if isinstance(d, str):
        return " ".join(d.split()) if "\n" in d or "  " in d else d
    return d


def layout_section(model: Model, name: str, version: int, heading: str = "##") -> list[str]:
    """The lines of the reference page that describe layout ``name`` at ``version``."""
    spec, _ = model.layouts[name]
    tl = timeline(model, spec.timeline)
    revs = tl.revs_of(version)
    out = [f"{heading} Layout of version {version}", ""]
    by_style = layout_versions(model, name)[version]
    entries = {e.id: e for e in spec.entries}
    for style, ids in by_style.items():
        out += [f"{heading}# {style}", "", "| Path | Kind | Presence | Group | Revisions | Meaning |",
                "|---|---|---|---|---|---|"]
        for eid in ids:
            e = entries[eid]
            presence = "required" if e.required else "optional"
            if e.when:
                presence += f" when `{e.when}`" if e.required else f", only when `{e.when}`"
            present = [i for i in revs if i in tl.span(e.since, e.until)]
            note = []
            if present[0] != revs[0]:
                note.append(f"from `{tl.ids[present[0]]}`")
            if present[-1] != revs[-1]:
                note.append(f"until `{tl.ids[present[-1] + 1]}`")
            path = "./" + e.path if e.path != "." else "."
            out.append(f"| `{path}` | {e.kind} | {presence} | {e.group} | {', '.join(note)} | "
                       f"{' '.join(e.doc.split())} |")
        out.append("")
    return out
