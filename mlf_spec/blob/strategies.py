"""Hypothesis strategies for module blobs (re-exported by :mod:`mlf_spec.strategies`).

Valid blobs are drawn as module trees: the kinds come from the spec's payload switch of
each layout, every payload from the spec-driven ``valid_tree`` of its struct, and the
bytes from :func:`mlf_spec.blob.build` (TVM's numbering and CSR import tree). Broken blobs
start from a valid one and break one named thing, through the spec engine's value tree and
field spans (no layout is restated here).
"""

from __future__ import annotations

from typing import Any, overload

from hypothesis import assume, reject
from hypothesis import strategies as st

from mlf_spec._internal.drawn import Broken, Data
from mlf_spec._internal.spec_engine import Builder, trace
from mlf_spec._internal.spec_strategies import valid_tree
from mlf_spec.errors import MlfError
from mlf_spec.generated import blob_ffi_ir as _ffi_ir
from mlf_spec.generated import blob_legacy_ir as _leg_ir
from mlf_spec.generated import payloads_ir as _payloads_ir
from mlf_spec.versions import label as version_label
from mlf_spec.versions import public as public_version

from . import codec as _blob
from .eras import NEWEST_SINCE


class _Named(dict):
    """A dict of structs with a short repr (hypothesis prints strategy arguments)."""

    def __init__(self, name: str, data: dict) -> None:
        super().__init__(data)
        self.name = name

    def __repr__(self) -> str:
        return f"<{self.name} structs>"


PAYLOAD_STRUCTS = _Named("payloads", _payloads_ir.STRUCTS)
ROOTS = {"ffi": (_Named("blob_ffi", _ffi_ir.STRUCTS), "ffi_blob"),
          "legacy": (_Named("blob_legacy", _leg_ir.STRUCTS), "legacy_blob")}

#: TVM versions whose writers the strategies imitate, per layout ("0.24": 0.24 and later).
BLOB_ERAS: dict[str, tuple[str, ...]] = {
    "ffi": ("0.24", "0.23"),
    "legacy": ("0.6", "0.7", "0.8", "0.14", "0.20", "0.21"),
}

#: Kinds no grammar knows, for opaque tvm-ffi payloads.
_UNKNOWN_KINDS = ("my_npu", "vendor.Runtime", "x")

#: The named ways :func:`broken_blob_bytes` breaks a blob, and what a reader must do:
#: "error" (raise MlfError) or "finding" (read it and report the named finding).
BLOB_BROKEN_KINDS: dict[str, str] = {
    "truncated": "error",
    "lying_length": "error",
    "payload_length_mismatch": "error",
    "child_out_of_range": "error",
    "row_ptr_past_children": "error",
    "duplicate_lib_legacy": "error",
    "unknown_kind_legacy": "error",
    "cyclic_import_tree": "finding",
    "duplicate_lib_ffi": "finding",
    "row_ptr_decreasing": "finding",
}


def era_tuple(era: str) -> tuple[int, ...]:
    """The codec's version tuple for a TVM version named as in :data:`BLOB_ERAS` (0.24
    and later: ``blob.LATEST``), for the Construct grammars and other tuple-taking code."""
    return _era(era)


@overload
def _era(era: None) -> None: ...
@overload
def _era(era: str | tuple[int, ...]) -> tuple[int, ...]: ...
def _era(era: str | tuple[int, ...] | None) -> tuple[int, ...] | None:
    """A TVM version given to a strategy, as the codec's tuple (0.24 and later: LATEST)."""
    e = public_version(era, "era")
    return None if e is None else (_blob.LATEST if e >= NEWEST_SINCE else e)


def era_label(e: tuple[int, ...]) -> str:
    """The name of era ``e`` in :data:`BLOB_ERAS` ("0.24" for the newest)."""
    return version_label(NEWEST_SINCE) if e == _blob.LATEST else version_label(e)


def _draw_era(draw: Any, fmt: str, era: str | tuple[int, ...] | None) -> tuple[int, ...]:
    e = _era(era)
    return e if e is not None else _era(draw(st.sampled_from(BLOB_ERAS[fmt])))


@st.composite
def blob_payloads(draw: Any, kind: str, format: str = "ffi", era: str | None = None) -> _blob.Payload:  # noqa: A002
    """A valid payload of ``kind`` as TVM ``era`` (e.g. "0.16"; default: any of
    ``BLOB_ERAS``) writes it (from the spec's struct for it; unknown kinds get opaque bytes
    in the ffi layout)."""
    e = _draw_era(draw, format, era)
    struct = _blob.known_kinds(format).get(kind, "opaque_payload" if format == "ffi" else None)
    if struct is None:
        raise ValueError(f"no payload grammar for {kind!r} in the legacy layout")
    tree = draw(valid_tree(PAYLOAD_STRUCTS, struct, e))
    from mlf_spec._internal.spec_engine import build

    data = build(PAYLOAD_STRUCTS, struct, tree, e)
    return _blob.parse_payload(kind, data, format=format, era=e)


def kinds_of(format: str, only: tuple[str, ...] | None = None) -> list[str]:  # noqa: A002
    """The module kinds the strategies draw for ``format`` (those of ``only``, if given)."""
    kinds = sorted(_blob.known_kinds(format))
    kinds = kinds + list(_UNKNOWN_KINDS) if format == "ffi" else kinds
    if only is not None:
        kinds = [k for k in kinds if k in only or (format == "ffi" and k not in _blob.known_kinds(format))]
    return kinds or sorted(_blob.known_kinds(format))


@st.composite
def module_trees(draw: Any, format: str = "ffi", era: str | None = None,  # noqa: A002
                 max_modules: int = 5, kinds: tuple[str, ...] | None = None) -> _blob.Module:
    """A module tree that TVM's writer for ``format`` and ``era`` (e.g. "0.16") can pack: every kind of the
    spec (and, for ffi, unknown kinds), at most one ``_lib`` from 0.8 (several in 0.7), and
    for 0.6 and earlier a ``_lib`` root with one level of imports. ``kinds``: only the module
    kinds named there (a reader's declared payload grammars; ffi payloads of no grammar stay in)."""
    e = _draw_era(draw, format, era)
    n = draw(st.integers(1, max_modules))
    pool = kinds_of(format, kinds)
    if format == "legacy" and e < (0, 7):
        leaves = [_blob.Module(k, draw(blob_payloads(k, format, era_label(e))))
                  for k in draw(st.lists(st.sampled_from(pool), max_size=n - 1))]
        return _blob.Module.lib(*leaves)
    several_libs = format == "legacy" and e < (0, 8)
    lib_at = draw(st.sampled_from([None, *range(n)]))
    nodes: list[_blob.Module] = []
    for i in range(n):
        is_lib = i == lib_at or (several_libs and draw(st.integers(0, 4)) == 0)
        if is_lib:
            nodes.append(_blob.Module.lib())
        else:
            k = draw(st.sampled_from(pool))
            nodes.append(_blob.Module(k, draw(blob_payloads(k, format, era_label(e)))))
    for i in range(1, n):  # a tree: each module has a parent numbered before it
        nodes[draw(st.integers(0, i - 1))].imports.append(nodes[i])
    if n > 2 and draw(st.booleans()):  # sometimes share a module (a DAG)
        a = draw(st.integers(0, n - 2))
        b = draw(st.integers(a + 1, n - 1))
        if nodes[b] not in nodes[a].imports:
            nodes[a].imports.append(nodes[b])
    return nodes[0]


@st.composite
def blob_bytes(draw: Any, format: str | None = None, era: str | None = None,  # noqa: A002
               kinds: tuple[str, ...] | None = None) -> Data:
    """Valid blobs of either layout (or ``format``) as TVM's writer of a drawn (or the given,
    e.g. "0.16") version packs them; ``kinds`` limits the module kinds (see :func:`module_trees`)."""
    fmt = format or draw(st.sampled_from(_blob.FORMATS))
    return Data(build_blob(draw, fmt, _draw_era(draw, fmt, era), kinds))


def build_blob(draw: Any, fmt: str, e: tuple[int, ...], kinds: tuple[str, ...] | None = None) -> bytes:
    """A blob TVM ``e``'s writer packs, of a module tree drawn with ``draw``."""
    root = draw(module_trees(fmt, era_label(e), kinds=kinds))
    try:
        return _blob.build(root, format=fmt, era=e)
    except MlfError:  # a shared module that TVM's numbering cannot place after its parents
        assume(False)
        raise


@st.composite
def broken_blob_bytes(draw: Any, kinds: tuple[str, ...] | None = None,
                      module_kinds: tuple[str, ...] | None = None) -> Broken:
    """A blob broken in one named way (:data:`BLOB_BROKEN_KINDS`): a :class:`Broken` with
    the ``format`` and ``era`` it imitates (read it with ``blob.parse(b.data,
    format=b.format, era=b.era)``); ``module_kinds`` limits the kinds of its modules."""
    kind = draw(st.sampled_from(kinds or tuple(BLOB_BROKEN_KINDS)))
    if kind in ("duplicate_lib_legacy", "unknown_kind_legacy"):
        fmt = "legacy"
    elif kind in ("duplicate_lib_ffi", "payload_length_mismatch"):
        fmt = "ffi"
    else:
        fmt = draw(st.sampled_from(_blob.FORMATS))
    eras = [_era(x) for x in BLOB_ERAS[fmt]]
    if kind == "duplicate_lib_legacy":
        eras = [x for x in eras if x >= (0, 8)]
    e: tuple[int, ...] = draw(st.sampled_from(eras))
    data = build_blob(draw, fmt, e, module_kinds)
    structs, root = ROOTS[fmt]
    tree, spans = trace(structs, root, data, e)
    body = tree["body"]
    if kind == "truncated":
        cut = draw(st.integers(0, len(data) - 1))
        return _broken(kind, data[:cut], fmt, e, where_of(spans, body, cut))
    if kind in ("lying_length", "payload_length_mismatch"):
        if kind == "lying_length":
            places = [s for s in spans if s.role in ("count", "length")]
            value = draw(st.integers(len(data), 2**64 - 1))
        else:  # the length of a payload whose grammar is known (an opaque one takes any length)
            known = _blob.known_kinds("ffi")
            places = [s for s in spans if s.role == "length" and s.path[-2:] == ("payload", "#count")
                      and body["modules"][s.path[2]]["kind"] in known]
            assume(bool(places))
            value = None
        span = draw(st.sampled_from(places))
        old = int.from_bytes(data[span.offset : span.offset + 8], "little")
        if value is None:
            value = draw(st.sampled_from([old - 1, old + 1, old + 8])) if old else old + 1
        return _broken(kind, data[: span.offset] + value.to_bytes(8, "little") + data[span.offset + 8 :], fmt, e,
                       place(span.path, body))
    if kind == "unknown_kind_legacy":
        known = set(_blob.known_kinds("legacy")) | {_blob.LIB, _blob.IMPORT_TREE}
        places = [s for s in spans if s.role == "payload" and s.path[-1] == "kind" and s.size > 0
                  and bytes(data[s.offset : s.offset + s.size]).decode("utf-8", "replace") not in (_blob.LIB, _blob.IMPORT_TREE)]
        assume(bool(places))
        span = draw(st.sampled_from(places))
        name = draw(st.text("abcdefghijklmnopqrstuvwxyz_.", min_size=span.size, max_size=span.size).filter(
            lambda s: s not in known))
        return _broken(kind, data[: span.offset] + name.encode() + data[span.offset + span.size :], fmt, e)
    # The remaining kinds rewrite the import tree (and, for a second _lib, the module list).
    n = len(tree_of(tree, fmt)["row_ptr"]) - 1 if tree_of(tree, fmt) is not None else 0
    at = 0
    value = None
    if kind == "child_out_of_range":
        at = draw(st.integers(0, 2**16))
        value = draw(st.integers(n, 2**64 - 1))
    elif kind in ("row_ptr_decreasing", "cyclic_import_tree"):
        at = draw(st.integers(1, max(n - 1, 1)))
        value = draw(st.integers(1, 4))
    elif kind == "row_ptr_past_children":
        value = draw(st.integers(1, 4))
    out = rewrite_import_tree(data, fmt, e, kind, at=at, value=value)
    if out is None:
        reject()
    return _broken(kind, out, fmt, e)


def tree_of(tree: dict, fmt: str) -> dict | None:
    """The import tree node (row_ptr, child_indices) of a traced blob value tree."""
    body = tree["body"]
    if fmt == "ffi":
        return body
    return next((x["payload"] for x in body["entries"] if x["kind"] == _blob.IMPORT_TREE), None)


def rewrite_import_tree(data: bytes, fmt: str, era: tuple[int, ...], kind: str, *, at: int = 0,
                        value: int | None = None) -> bytes | None:
    """``data`` with its import tree broken in the named way (``child_out_of_range``,
    ``row_ptr_decreasing``, ``row_ptr_past_children``, ``cyclic_import_tree``, and a second
    ``_lib`` for ``duplicate_lib_legacy`` / ``duplicate_lib_ffi``); ``at`` picks the child or
    row (taken modulo what exists), ``value`` the bad index or the excess. None when this
    blob cannot be broken that way (no tree, too few modules, no _lib)."""
    structs, root = ROOTS[fmt]
    tree, _ = trace(structs, root, data, era)
    body = tree["body"]
    tree_node = tree_of(tree, fmt)
    if tree_node is None:
        return None
    row_ptr, child = list(tree_node["row_ptr"]), list(tree_node["child_indices"])
    n = len(row_ptr) - 1
    edges = [[child[j] for j in range(row_ptr[i], row_ptr[i + 1])] for i in range(n)]
    if kind == "child_out_of_range":
        if not child:
            return None
        child[at % len(child)] = value if value is not None and value >= n else n
    elif kind == "row_ptr_decreasing":  # still within child_indices: the reader follows it (a warning)
        rows = [i for i in range(1, n) if row_ptr[i + 1] < len(child)]
        if not rows:
            return None
        i = rows[(at - 1) % len(rows)]
        row_ptr[i] = min(row_ptr[i + 1] + (value or 1), len(child))
    elif kind == "row_ptr_past_children":
        row_ptr[-1] += value or 1
    else:
        if kind == "cyclic_import_tree":
            if n < 2:
                return None
            edges[1 + (at - 1) % (n - 1)].append(0)
        else:  # a second _lib, imported by the root
            mods = body["modules"] if fmt == "ffi" else body["entries"]
            if not any(m["kind"] == _blob.LIB for m in mods):
                return None
            edges.append([])
            edges[0].append(n)
            lib = {"kind": _blob.LIB, "payload": None}
            if fmt == "ffi":
                body["modules"].append(lib)
            else:
                body["entries"].insert(len(body["entries"]) - 1, lib)
                body["count"] = None
        row_ptr, child = [0], []
        for row in edges:
            child.extend(row)
            row_ptr.append(len(child))
    tree_node["row_ptr"], tree_node["child_indices"] = row_ptr, child
    return Builder(structs, era).build(root, tree)


def set_import_tree(data: bytes, fmt: str, era: tuple[int, ...], row_ptr: list[int], child_indices: list[int],
                    extra_libs: int = 0, keep: int | None = None) -> bytes | None:
    """``data`` with its import tree replaced by ``row_ptr`` and ``child_indices`` as given
    (any values, valid or not), after keeping only the first ``keep`` modules (None: all) and
    adding ``extra_libs`` ``_lib`` modules at the end of the module list; None when the blob has
    no import tree (legacy before 0.7)."""
    structs, root = ROOTS[fmt]
    tree, _ = trace(structs, root, data, era)
    body = tree["body"]
    tree_node = tree_of(tree, fmt)
    if tree_node is None:
        return None
    if keep is not None:
        if fmt == "ffi":
            body["modules"] = body["modules"][:keep]
        else:
            body["entries"] = [*body["entries"][:-1][:keep], body["entries"][-1]]
            body["count"] = None
        tree_node = tree_of(tree, fmt)
    for _ in range(extra_libs):
        lib = {"kind": _blob.LIB, "payload": None}
        if fmt == "ffi":
            body["modules"].append(lib)
        else:
            body["entries"].insert(len(body["entries"]) - 1, lib)
            body["count"] = None
    tree_node["row_ptr"], tree_node["child_indices"] = list(row_ptr), list(child_indices)
    return Builder(structs, era).build(root, tree)


def _broken(kind: str, data: bytes, fmt: str, e: tuple[int, ...], where: str = "") -> Broken:
    return Broken(kind, Data(data), BLOB_BROKEN_KINDS[kind], era=era_label(e), format=fmt, where=where)


def place(path: tuple, body: dict) -> str:
    """A traced field's place without indices, naming the module kind where the path enters a
    module (``('body', 'modules', 2, 'payload', '#count')`` -> ``body.module-cuda.payload.count``)."""
    parts: list[str] = []
    node: Any = {"body": body}
    for p in path:
        node = node[p] if isinstance(node, (dict, list)) and (isinstance(p, int) or p in node) else None
        if isinstance(p, int):
            if parts and parts[-1] in ("modules", "entries") and isinstance(node, dict) and "kind" in node:
                kind = node["kind"]
                parts[-1] = f"module-{kind if isinstance(kind, str) and kind.isidentifier() else 'other'}"
            continue
        parts.append(str(p).lstrip("#"))
    return ".".join(parts)


def where_of(spans: list, body: dict, offset: int) -> str:
    """The place of the innermost field holding byte ``offset`` ("" if none does)."""
    holding = [s for s in spans if s.offset <= offset < s.offset + s.size]
    if not holding:
        return ""
    return place(min(holding, key=lambda s: s.size).path, body)


# the names before they were public (the conformance suite reads _ROOTS)
_PAYLOAD_STRUCTS, _ROOTS, _build, _kinds, _label = PAYLOAD_STRUCTS, ROOTS, build_blob, kinds_of, era_label


__all__ = ["BLOB_BROKEN_KINDS", "BLOB_ERAS", "blob_bytes", "blob_payloads", "broken_blob_bytes", "era_tuple",
           "module_trees", "place", "rewrite_import_tree", "set_import_tree", "tree_of", "where_of"]
