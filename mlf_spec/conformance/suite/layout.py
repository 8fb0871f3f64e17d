"""MLF archive layout boundary vectors: each entry of ``spec/layouts/mlf_layout.yaml`` on both
sides of its rules.

- ``mlf_layout.<entry>.required``: an entry the writer always wrote (under its condition) is
  present in the archives of the versions that have it (accepted, clean) and, taken out of
  the newest one, gives the ``layout.missing`` finding (refused).
- ``mlf_layout.<entry>.forbidden``: a member of an entry exists only in the versions and
  style the entry has. It is present in an archive of such a version (accepted), and added to
  an archive of the version right before the entry's first and right after its last, or of
  the other style, it gives ``layout.unexpected`` (refused).

An archive is on the refusing side of a rule when it is rejected or its check reports an
error finding (its reading's ``findings``; see :func:`.rules.side`). Archives are the costliest
vectors to read, so each rule gets one refusing variant per boundary, made from the smallest
fixed export of the version (:func:`.mlf.specs`).
"""

from __future__ import annotations

from typing import Any

from mlf_spec.generated import mlf_layout_ir as _L
from mlf_spec.mlf import layout as _layout
from mlf_spec.mlf import strategies as _ms

from .common import Collector, doc_ref, outcome, unique

_VALUES = {"model": "default", "model_lower": "default", "n": "0", "src_ext": "c", "device_type": "1",
           "rest": "include/extra.h"}


def _entries_in(a: Any, spec: _ms.ArchiveSpec) -> dict[str, str]:
    """entry id -> the first member path of it in archive ``a``."""
    names = [m.name for m in spec.modules]
    out: dict[str, str] = {}
    for m in a.members:
        p = _layout.classify(m.path, spec.version, spec.style, names)
        if p is not None:
            out.setdefault(p.entry["id"], m.path)
    return out


def _styles(entry: dict[str, Any]) -> list[str]:
    return [entry["style"]] if entry.get("style") in ("full-model", "operator") else ["full-model", "operator"]


def rule_ids() -> list[str]:
    """Every layout rule the vectors must probe on both sides: ``required`` for the entries
    some version requires, ``forbidden`` for the entries some version or style lacks."""
    out = []
    for e in _L.ENTRIES:
        if e.get("required"):
            out.append(f"mlf_layout.{e['id']}.required")
        everywhere = all(e["id"] in _L.VERSIONS[v].get(s, []) for v in _L.VERSIONS for s in ("full-model", "operator")
                         if s in _L.VERSIONS[v])
        if not everywhere:
            out.append(f"mlf_layout.{e['id']}.forbidden")
    return sorted(out)


def archive_rules(a: Any, spec: _ms.ArchiveSpec) -> list[str]:
    """The layout rules an archive as its writer laid it out meets on their accepting side (the
    valid archive vectors name them): each entry it holds is required there or allowed there."""
    wanted = set(rule_ids())
    return sorted({f"mlf_layout.{eid}.{x}" for eid in _entries_in(a, spec) for x in ("required", "forbidden")}
                  & wanted)


def build_layout_rules(c: Collector, fixed: list[tuple[str, _ms.ArchiveSpec]]) -> None:
    """Add the refusing side of every layout rule to ``c`` (the valid archive vectors, which
    name :func:`archive_rules`, are the accepting side)."""
    built = {label: _ms.build_archive(spec) for label, spec in fixed}
    size = {label: len(a.to_bytes()) for label, a in built.items()}
    wanted = set(rule_ids())
    present: dict[str, list[tuple[str, _ms.ArchiveSpec]]] = {}  # entry -> fixed exports holding it, newest first
    for label, spec in reversed(fixed):
        for eid in _entries_in(built[label], spec):
            present.setdefault(eid, []).append((label, spec))

    def probe(vid: str, data: bytes, spec: _ms.ArchiveSpec, rids: list[str], what: str, tvm: str) -> None:
        got = outcome("mlf-archive", "decode", data, {})
        refused = got["outcome"] == "reject" or bool(got["reading"].get("findings"))
        page = (f"mlf_v{spec.version}", f"Layout of version {spec.version}")
        c.add(unique(c, f"mlf-archive.bound.{vid}"), "mlf-archive", data,
              scope={"version": str(spec.version), "style": spec.style}, tvm=tvm,
              features={"rule": rids, "version": [str(spec.version)], "style": [spec.style]},
              description=f"{what}: " + ("refused (a layout finding)" if refused else "accepted, no finding"),
              spec_ref=doc_ref(*page), expect=got["outcome"])

    # required: each taken out of the smallest export of the newest version that has it
    for e in _L.ENTRIES:
        rid = f"mlf_layout.{e['id']}.required"
        if rid not in wanted:
            continue
        holders = present.get(e["id"], [])
        newest = [(lb, sp) for lb, sp in holders if sp.version == holders[0][1].version] if holders else []
        for label, spec in sorted(newest, key=lambda item: size[item[0]]):
            a = _ms.build_archive(spec)
            path = _entries_in(a, spec)[e["id"]]
            if e["kind"] == "directory":
                a.members = [m for m in a.members if m.path != path]
                a._by_path = {m.path: m for m in a.members}
                a._modules = None
            else:
                a.remove(path)
            probe(f"{rid}.v{spec.version}.{label}", a.to_bytes(), spec, [rid],
                  f"{path} taken out of an archive of version {spec.version} ({label})", _tvm(spec))
            break
    # allowed: an entry no fixed export holds, added where its version and style have it
    for e in _L.ENTRIES:
        rid = f"mlf_layout.{e['id']}.forbidden"
        if rid not in wanted or e["id"] in present:
            continue
        path = _layout.template(e, **_VALUES)
        style = _styles(e)[0]
        v = max(v for v in _L.VERSIONS if e["id"] in _L.VERSIONS[v].get(style, []))
        label, spec = min(((lb, s) for lb, s in fixed if s.version == v and s.style == style),
                          key=lambda item: size[item[0]])
        a = _ms.build_archive(spec)
        a.add(path, None if e["kind"] == "directory" else b"\x7fELF", mtime=spec.mtime)
        probe(f"{rid}.v{v}.{style}.allowed", a.to_bytes(), spec, [rid],
              f"{path} ({e['id']}) added to an archive of version {v} ({label}), where the layout has it", _tvm(spec))
    # forbidden: added where the entry's versions or style end
    for e in _L.ENTRIES:
        rid = f"mlf_layout.{e['id']}.forbidden"
        if rid not in wanted:
            continue
        path = _layout.template(e, **_VALUES)
        made = 0
        for label, spec in _forbidden_places(e, fixed, size):
            if made and spec.style not in _styles(e):
                break  # a version boundary gave one: the other style is not needed
            a = _ms.build_archive(spec)
            if _layout.classify(path, spec.version, spec.style, [m.name for m in spec.modules]) is not None or path in a:
                continue  # another entry of that layout has this path
            a.add(path, None if e["kind"] == "directory" else b"/* not written by this version */\n", mtime=spec.mtime)
            probe(f"{rid}.v{spec.version}.{spec.style}", a.to_bytes(), spec, [rid],
                  f"{path} ({e['id']}) added to an archive of version {spec.version} ({label})", _tvm(spec))
            made += 1


def _forbidden_places(e: dict[str, Any], fixed: list[tuple[str, _ms.ArchiveSpec]],
                      size: dict[str, int]) -> list[tuple[str, _ms.ArchiveSpec]]:
    """The smallest exports of the versions just outside the entry's range, then of the other
    style (used when the first give no refusing variant)."""
    versions = sorted(_L.VERSIONS)
    places: list[tuple[int, str]] = []
    for style in _styles(e):  # where its versions end
        have = [v for v in versions if e["id"] in _L.VERSIONS[v].get(style, [])]
        ends = (have[0] - 1, have[-1] + 1) if have else ()
        places += [(v, style) for v in ends if v in versions and style in _L.VERSIONS[v]]
    # the other style's newest version, where no version boundary tells (or every member there has another entry)
    places += [(max(v for v in versions if style in _L.VERSIONS[v]), style)
               for style in ("full-model", "operator") if style not in _styles(e)]
    out = []
    for v, style in places:
        pool = [(label, s) for label, s in fixed if s.version == v and s.style == style]
        if pool:
            out.append(min(pool, key=lambda item: size[item[0]]))
    return out


def _tvm(spec: _ms.ArchiveSpec) -> str:
    return f"writer revision {spec.revision}"


__all__ = ["archive_rules", "build_layout_rules", "rule_ids"]
