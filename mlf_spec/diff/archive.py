"""Comparing two MLF archives: the container (tar or directory, compression), the members
(added, removed, content, tar header fields, order), metadata.json key by JSON path, and
inside each module its parameters (tensor by tensor) and its graph (inputs, outputs,
functions). Members are matched by path; a member's module comes from the layout of its
archive's metadata version.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from mlf_spec.errors import MlfError

from . import graph as _graph
from . import params as _params
from ._model import Change, json_changes

if TYPE_CHECKING:
    from mlf_spec.mlf.archive import Archive, Member

#: Tar header fields compared member by member (mtime separately: it differs in every build).
HEADER_FIELDS = ("mode", "uid", "gid", "uname", "gname")


def compare(a: Archive, b: Archive, *, ignore_times: bool = False) -> list[Change]:
    """The changes from archive ``a`` to ``b``. ``ignore_times`` leaves out member mtimes and
    metadata ``export_datetime`` values (they differ between any two builds)."""
    out: list[Change] = []
    if a.container != b.container:
        out.append(Change("file", "changed", "container", a.container, b.container,
                          f"container {a.container} -> {b.container}"))
    if a.compression != b.compression:
        out.append(Change("file", "changed", "compression", a.compression, b.compression,
                          f"compression {a.compression or 'none'} -> {b.compression or 'none'}"))
    pa, pb = _placements(a), _placements(b)
    ma = {m.path: m for m in a.members}
    mb = {m.path: m for m in b.members}
    common = [p for p in ma if p in mb]
    order_b = [p for p in mb if p in ma]
    if common != order_b:
        out.append(Change("file", "order", "members", [ma[p].name for p in common], [mb[p].name for p in order_b],
                          "the members both archives hold are in another order"))
    out.extend(_one_side(ma, mb, pa, "removed"))
    out.extend(_one_side(mb, ma, pb, "added"))
    mtimes = 0
    for p in common:
        x, y = ma[p], mb[p]
        module = _module(pa, p) or _module(pb, p)
        hx = {f: getattr(x, f) for f in HEADER_FIELDS if getattr(x, f) != getattr(y, f)}
        if x.is_dir != y.is_dir:
            out.append(Change("member", "changed", x.name, "directory" if x.is_dir else "file",
                              "directory" if y.is_dir else "file", "member type changed", module=module))
            continue
        if hx:
            hy = {f: getattr(y, f) for f in hx}
            out.append(Change("member", "header", x.name, hx, hy,
                              ", ".join(f"{f} {_fmt(f, hx[f])} -> {_fmt(f, hy[f])}" for f in hx), module=module))
        if x.mtime != y.mtime:
            mtimes += 1
        if not x.is_dir:
            out.extend(_content(x, y, (pa.get(p) or pb.get(p) or (None, None))[0], module, ignore_times))
    if mtimes and not ignore_times:
        out.append(Change("file", "header", "mtime", None, None,
                          f"the modification time differs in {mtimes} of {len(common)} common members"))
    return out


def _one_side(mine: dict[str, Member], other: dict[str, Member], placements: dict[str, Any],
              change: str) -> list[Change]:
    """Members only ``mine`` has; a directory only it has stands for everything under it."""
    only = [p for p in mine if p not in other]
    gone_dirs = sorted((p for p in only if mine[p].is_dir), key=len)
    out: list[Change] = []
    folded: set[str] = set()
    for d in gone_dirs:
        if d in folded:
            continue
        under = [p for p in only if p != d and p.startswith(d + "/")]
        folded.update(under)
        m = mine[d]
        info = {**_member_info(m), "contains": [mine[p].name for p in under]}
        text = f"directory with {len(under)} member(s) under it" if under else "directory"
        out.append(Change("member", change, m.name, info if change == "removed" else None,
                          info if change == "added" else None, text, module=_module(placements, d)))
    for p in only:
        if p in folded or mine[p].is_dir:
            continue
        m = mine[p]
        info = _member_info(m)
        out.append(Change("member", change, m.name, info if change == "removed" else None,
                          info if change == "added" else None, _member_text(m), module=_module(placements, p)))
    order = {p: i for i, p in enumerate(mine)}
    out.sort(key=lambda c: order.get(_path_of(c.path), 0))
    return out


def _path_of(name: str) -> str:
    return name[2:] if name.startswith("./") else name


def _placements(a: Archive) -> dict[str, tuple[str | None, str | None]]:
    """member path -> (layout kind, module); empty if the metadata cannot be read."""
    try:
        return {p: (pl.kind, pl.module) if pl is not None else (None, None) for p, pl in a.placements().items()}
    except MlfError:
        return {}


def _module(placements: dict[str, tuple[str | None, str | None]], path: str) -> str | None:
    return placements.get(path, (None, None))[1]


def _member_info(m: Member) -> dict[str, Any]:
    return {"type": "directory" if m.is_dir else "file", "size": m.size}


def _member_text(m: Member) -> str:
    return "directory" if m.is_dir else f"{m.size} bytes"


def _fmt(field: str, value: Any) -> str:
    return oct(value) if field == "mode" else str(value)


def _digest(data: Any) -> str:
    return hashlib.sha256(data).hexdigest()


def _content(x: Member, y: Member, kind: str | None, module: str | None, ignore_times: bool) -> list[Change]:
    vx, vy = x.view(), y.view()
    if _params.same_bytes(vx, vy):
        return []
    if x.path == "metadata.json":
        found = _metadata(vx, vy, x.name, ignore_times)
        if found is not None:
            return found
    elif kind == "params":
        found = _params_member(vx, vy, x.name, module)
        if found is not None:
            return found
    elif kind == "graph_json":
        found = _graph_member(vx, vy, x.name, module)
        if found is not None:
            return found
    return [Change("member", "content", x.name, {"size": x.size, "sha256": _digest(vx)},
                   {"size": y.size, "sha256": _digest(vy)}, f"content differs ({x.size} -> {y.size} bytes)",
                   module=module)]


def _load(v: Any) -> Any:
    from mlf_spec._records import load_json

    return load_json(v, None, "JSON")


def _metadata(vx: Any, vy: Any, name: str, ignore_times: bool) -> list[Change] | None:
    try:
        da, db = _load(vx), _load(vy)
    except MlfError:
        return None
    every = list(json_changes(da, db, "metadata", member=name))
    if not every:
        return [Change("member", "content", name, None, None,
                       "same JSON, written differently (key order, spacing)")]
    found = [c for c in every if not (ignore_times and c.change == "changed" and c.path.endswith("export_datetime"))]
    for c in found:
        c.module = _metadata_module(da, c.path)
    return found


def _metadata_module(doc: Any, path: str) -> str | None:
    if path.startswith("modules.") or path.startswith("modules["):
        rest = path[len("modules"):]
        if rest.startswith("."):
            return rest[1:].split(".")[0].split("[")[0]
        if rest.startswith('["'):
            return rest[2:].split('"]')[0]
    name = doc.get("model_name") if isinstance(doc, dict) else None
    return name if isinstance(name, str) else None


def _params_member(vx: Any, vy: Any, name: str, module: str | None) -> list[Change] | None:
    from mlf_spec.params import codec as _codec

    try:
        with _codec.open(vx, strict=False) as pa, _codec.open(vy, strict=False) as pb:
            return _params.compare(pa, pb, member=name, module=module, a_bytes=vx, b_bytes=vy)
    except MlfError:
        return None


def _graph_member(vx: Any, vy: Any, name: str, module: str | None) -> list[Change] | None:
    try:
        ga, gb = _load(vx), _load(vy)
    except MlfError:
        return None
    found = _graph.compare(ga, gb, member=name, module=module)
    if not found:
        return [Change("member", "content", name, None, None, "same JSON, written differently", module=module)]
    return found
