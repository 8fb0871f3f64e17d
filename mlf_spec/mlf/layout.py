"""The MLF archive layout of every version and style, from spec/layouts/mlf_layout.yaml.

:func:`classify` tells which layout entry a member path is (and for which module);
:func:`expected` lists what the writer always wrote for a set of modules; :func:`tvm_order`
sorts members the way TVM's ``tarfile.add`` calls added them. Every path pattern, content
kind, group and condition comes from the generated ``mlf_layout_ir``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

from mlf_spec._internal.lean_dataclass import dataclass, field
from mlf_spec.generated import mlf_layout_ir as _L
from mlf_spec.generated import mlf_revisions_timeline as _timeline

TAR: dict[str, Any] = _L.TAR
#: The tar formats TVM's writer produced, by name (spec: layout ``tar.formats``).
TAR_FORMATS: dict[str, dict[str, Any]] = {f["name"]: f for f in _L.TAR.get("formats", [])}
KINDS: dict[str, str] = _L.KINDS
ENTRIES: dict[str, dict[str, Any]] = {e["id"]: e for e in _L.ENTRIES}
GROUPS: list[str] = [g["name"] for g in _L.GROUPS]
GROUP_INFO: dict[str, dict[str, Any]] = {g["name"]: g for g in _L.GROUPS}
ROLES: dict[str, str] = {p["name"]: p.get("role", "") for p in _L.PLACEHOLDERS}
_REVISIONS: list[str] = [r["id"] for r in _timeline.REVISIONS]
_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def ascii_lower(name: str) -> str:
    """C ``tolower`` of every character (ASCII only), as TVM's ToCVariableStyle."""
    return name.translate(_LOWER)


def entries_for(version: int, style: str) -> list[dict[str, Any]]:
    """The layout entries some revision of ``version`` wrote for ``style``."""
    return [ENTRIES[i] for i in _L.VERSIONS.get(version, {}).get(style, [])]


@lru_cache(maxsize=4096)
def _compiled(regex: str) -> re.Pattern[str]:
    return re.compile(regex)


def _module_regex(entry: dict[str, Any], module: str) -> re.Pattern[str]:
    regex = entry["regex"]
    for name, role in ROLES.items():
        if role == "module" and f"(?P<{name}>" in regex:
            replacement = f"(?P<{name}>{re.escape(module)})"
            regex = re.sub(r"\(\?P<" + name + r">[^)]*\)", lambda _m, r=replacement: r, regex, count=1)
    return _compiled(regex)


@dataclass
class Placement:
    """Where a member sits in the layout: its entry, placeholder values and module."""

    entry: dict[str, Any]
    values: dict[str, str] = field(default_factory=dict)
    module: str | None = None
    unknown_module: str | None = None
    present_in: tuple[str, ...] = ()

    @property
    def kind(self) -> str:
        """The content kind of the entry."""
        return self.entry["kind"]

    @property
    def group(self) -> str:
        """The writer's member group of the entry."""
        return self.entry.get("group", "main")


def _module_of(entry: dict[str, Any], values: dict[str, str], modules: Sequence[str]) -> tuple[str | None, str | None]:
    for name, value in values.items():
        role = ROLES.get(name)
        if role == "module":
            return (value, None) if value in modules else (None, value)
        if role == "module_lower":
            hits = [m for m in modules if ascii_lower(m) == value]
            return (hits[0], None) if hits else (None, value)
    implicit = entry.get("group", "main") == "main" and entry["kind"] not in ("directory", "metadata_json")
    return (modules[0], None) if len(modules) == 1 and implicit else (None, None)


def classify(path: str, version: int, style: str, modules: list[str]) -> Placement | None:
    """The layout entry of ``path`` (relative, ``.`` for the root) in ``version``/``style``,
    or None when no entry of that layout matches. ``present_in`` of the placement holds the
    revisions of every entry that matches (e.g. ``lib0.c`` fits both the ``.c`` and the
    ``.{src_ext}`` entries). A fresh placement each call (the same paths recur in every
    archive: the matching is done once per path, version, style and module names)."""
    hit = _classify(path, version, style, tuple(modules))
    if hit is None:
        return None
    return Placement(hit.entry, dict(hit.values), hit.module, hit.unknown_module, hit.present_in)


@lru_cache(maxsize=8192)
def _classify(path: str, version: int, style: str, modules: tuple[str, ...]) -> Placement | None:
    found: Placement | None = None
    fallback: Placement | None = None
    revisions: set[str] = set()
    for e in entries_for(version, style):
        m = _compiled(e["regex"]).match(path)
        if not m:
            continue
        values = {k: v for k, v in m.groupdict().items() if v is not None}
        module, unknown = _module_of(e, values, modules)
        if unknown is not None:
            for name in modules:  # a greedy {model} may have swallowed part of a module name
                m2 = _module_regex(e, name).match(path)
                if m2:
                    module, unknown = name, None
                    values = {k: v for k, v in m2.groupdict().items() if v is not None}
                    break
        if unknown is not None:
            fallback = fallback or Placement(e, values, None, unknown, tuple(e["present_in"]))
            continue
        revisions |= set(e["present_in"])
        if found is None:
            found = Placement(e, values, module)
    if found is None:
        return fallback
    found.present_in = tuple(r for r in _REVISIONS if r in revisions)
    return found


def versions_matching(path: str, style: str) -> list[int]:
    """The versions whose layout for ``style`` has an entry matching ``path``."""
    return [v for v in _L.VERSIONS if any(_compiled(e["regex"]).match(path) for e in entries_for(v, style))]


def conditions(version: int, modules: dict[str, Any]) -> dict[str, Any]:
    """Truth of every layout condition: module-scoped ones per module name, archive-scoped
    ones as one bool. ``modules`` maps names to metadata records or plain dicts."""
    out: dict[str, Any] = {}
    for c in _L.CONDITIONS:
        if c["name"] == "graph_executor":
            out["graph_executor"] = {n: "graph" in _executors(md) for n, md in modules.items()}
        elif c["name"] == "aot_crt":
            out["aot_crt"] = any(bool(_get(md, "external_dependencies")) for md in modules.values())
        else:  # pragma: no cover - a condition the spec added but this engine does not know
            raise NotImplementedError(f"layout condition {c['name']!r}")
    return out


def _get(md: Any, key: str) -> Any:
    if isinstance(md, dict):
        return md.get(key)
    return getattr(md, key, None)


def _executors(md: Any) -> list[Any]:
    for key in ("executors", "runtimes"):
        v = _get(md, key)
        if isinstance(v, list):
            return v
    return []


def holds(entry: dict[str, Any], conds: dict[str, Any], module: str | None) -> bool:
    """Whether the entry's condition holds (for ``module`` when it is module-scoped)."""
    name = entry.get("when")
    if name is None:
        return True
    value = conds[name]
    if isinstance(value, dict):
        return value.get(module, False) if module is not None else any(value.values())
    return bool(value)


def template(entry: dict[str, Any], **values: str) -> str:
    """The path of ``entry`` with placeholders filled in."""
    path = entry["path"]
    for k, v in values.items():
        path = path.replace("{" + k + "}", v)
    return path


def expected(version: int, style: str, modules: dict[str, Any]) -> list[tuple[dict[str, Any], str, str | None]]:
    """(entry, path, module) of every member the writer always wrote for these modules.
    Entries with placeholders other than the module (``tir-{device_type}``) are listed with
    their pattern as the path: at least one member must match them."""
    conds = conditions(version, modules)
    out: list[tuple[dict[str, Any], str, str | None]] = []
    for e in entries_for(version, style):
        if not e.get("required"):
            continue
        roles = [ROLES.get(p) for p in e["placeholders"]]
        if "module" in roles or "module_lower" in roles:
            for name in modules:
                if holds(e, conds, name):
                    pname = next(p for p in e["placeholders"] if ROLES.get(p) in ("module", "module_lower"))
                    value = ascii_lower(name) if ROLES[pname] == "module_lower" else name
                    out.append((e, template(e, **{pname: value}), name))
        elif holds(e, conds, None if len(modules) != 1 else next(iter(modules))):
            out.append((e, e["path"], None))
    return out


def _split(path: str) -> list[str]:
    return [] if path == "." else path.split("/")


def _found_key(paths: list[str]) -> Any:
    """A sort key that walks the tree depth first, a directory before its content, keeping
    the order in which siblings were found (for writers that listed directories unsorted)."""
    first: dict[str, int] = {}
    for i, p in enumerate(paths):
        parts = _split(p)
        for k in range(1, len(parts) + 1):
            first.setdefault("/".join(parts[:k]), i)

    def key(p: str) -> tuple[int, ...]:
        parts = _split(p)
        return tuple(first["/".join(parts[:k])] for k in range(1, len(parts) + 1))

    return key


def tvm_order(items: Iterable[tuple[str, str]], *, siblings: str = "sorted") -> list[str]:
    """Paths in the order TVM's writer added them: groups in spec order; ``sorted_tree``
    groups depth first, a directory before its content, with directory listings sorted
    (tarfile.add from Python 3.7; ``siblings="sorted"``) or in the order the items give
    them (``siblings="any"``: Python 3.6 listed directories unsorted); ``listed`` groups in
    the order given. ``items`` are (path, group)."""
    groups: dict[str, list[str]] = {g: [] for g in GROUPS}
    for path, group in items:
        groups.setdefault(group, []).append(path)
    out: list[str] = []
    for g, paths in groups.items():
        info = GROUP_INFO.get(g, {"order": "sorted_tree"})
        if info["order"] == "sorted_tree":
            out += sorted(paths, key=_split if siblings == "sorted" else _found_key(paths))
        else:
            out += paths
    return out


__all__ = ["ENTRIES", "GROUPS", "KINDS", "TAR", "TAR_FORMATS", "Placement", "ascii_lower", "classify", "conditions",
           "entries_for", "expected", "holds", "template", "tvm_order", "versions_matching"]
