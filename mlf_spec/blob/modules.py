"""Module trees and the writer: :class:`Module` nodes and :func:`build`, which packs a tree
as the writer of a TVM era does (numbering the modules as ``ModuleSerializer`` does, the CSR
import tree, ``_lib`` merging and the packing of a root without imports): what each era's
writer does is a row of spec/tables/blob_writer_eras.yaml (:mod:`mlf_spec.blob.eras`)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from mlf_spec.errors import ConstraintError, MlfError, UnsupportedError
from mlf_spec.generated import blob_ffi_fast as _ffi
from mlf_spec.generated import blob_legacy_fast as _leg
from mlf_spec.generated._fastlib import era_text, ext_lookup

from .eras import era_of, writer_era
from .payload import (
    IMPORT_TREE,
    LIB,
    REGISTRY,
    Payload,
    check_format,
    known_kinds,
    lazy_from,
    new_payload,
    writer_of,
)


class Module:
    """A node of a module tree: ``kind``, its :class:`Payload` (None for ``_lib``, the library
    the blob lives in) and the modules it imports. Identity matters: a module imported twice
    is one node, and a tree read from a blob may even contain cycles (TVM's loader accepts
    them); every walk here is cycle-safe."""

    __slots__ = ("kind", "payload", "imports", "_row_reversed", "_count_zero")

    def __init__(self, kind: str, payload: Payload | None = None, imports: Sequence[Module] | None = None) -> None:
        if kind == LIB and payload is not None:
            raise ValueError("a _lib module has no payload")
        if kind != LIB and payload is None:
            raise ValueError(f"module of kind {kind!r} needs a payload (see new_payload)")
        if kind == IMPORT_TREE:
            raise ValueError("_import_tree is not a module kind")
        self.kind = kind
        self.payload = payload
        self.imports: list[Module] = list(imports or [])
        self._row_reversed = False  # set by Blob.modules(): imports are its blob row reversed
        self._count_zero = False  # set by Blob.modules() on the root of a blob of count 0 (no tree)

    @classmethod
    def lib(cls, *imports: Module) -> Module:
        """The ``_lib`` placeholder (the library holding the blob) importing ``imports``."""
        return cls(LIB, None, imports)

    @classmethod
    def of(cls, kind: str, *imports: Module, format: str = "ffi", era: str | tuple[int, ...] | None = None,  # noqa: A002
           **fields: Any) -> Module:
        """A module with a payload made by :func:`new_payload` from ``fields``."""
        return cls(kind, new_payload(kind, format=format, era=era, **fields), imports)

    def walk(self) -> Iterator[Module]:
        """Every module reachable from this one, each once, in depth-first pre-order."""
        seen: set[int] = set()
        stack = [self]
        while stack:
            m = stack.pop()
            if id(m) in seen:
                continue
            seen.add(id(m))
            yield m
            stack.extend(reversed(m.imports))

    def __repr__(self) -> str:
        kinds = ", ".join(m.kind for m in self.imports)
        return f"Module({self.kind!r}, imports=[{kinds}])"


def _number(root: Module, era: tuple[int, ...], merge: bool) -> tuple[list[list[Module]], dict[int, int]]:
    """TVM's module numbering (ModuleSerializer::CreateModuleIndex): root first; from 0.8 a
    two-phase depth-first walk puts every _lib module into one slot after all of their
    parents and before all of their children; 0.7 numbers every module in one walk."""
    index: dict[int, int] = {}
    groups: list[list[Module]] = []
    visited = {id(root)}
    stack = [root]

    def push_imports(m: Module) -> None:
        for child in m.imports:
            if id(child) not in visited:
                visited.add(id(child))
                stack.append(child)

    if not merge:
        while stack:
            m = stack.pop()
            index[id(m)] = len(groups)
            groups.append([m])
            push_imports(m)
        return groups, index
    boundary: list[Module] = []
    while stack:
        m = stack.pop()
        if m.kind == LIB:
            boundary.append(m)
        else:
            index[id(m)] = len(groups)
            groups.append([m])
            push_imports(m)
    if boundary:
        lib_slot = len(groups)
        groups.append([])
        stack = boundary
        while stack:
            m = stack.pop()
            if m.kind == LIB:
                groups[lib_slot].append(m)
                index[id(m)] = lib_slot
            else:
                index[id(m)] = len(groups)
                groups.append([m])
            push_imports(m)
    return groups, index


def _given(root: Module, order: Sequence[Module]) -> tuple[list[list[Module]], dict[int, int]]:
    """An explicit numbering: ``order`` lists modules once each, root first, with every
    module any of them imports (so every module reachable from the root); modules the root
    does not reach are kept as entries no import leads to, as a parsed blob may hold them."""
    index: dict[int, int] = {}
    for i, m in enumerate(order):
        if not isinstance(m, Module):
            raise TypeError(f"order[{i}] is a {type(m).__name__}, not a Module")
        if id(m) in index:
            raise ConstraintError(f"order[{i}] ({m.kind}) is listed twice", field=f"order[{i}]")
        index[id(m)] = i
    if not order or order[0] is not root:
        raise ConstraintError("order must start with the root (module 0 is the root)", field="order[0]")
    for i, m in enumerate(order):
        for c in m.imports:
            if id(c) not in index:
                raise ConstraintError(f"order leaves out {c.kind}, imported by order[{i}] ({m.kind})",
                                      field=f"order[{i}].imports")
    return [[m] for m in order], index


def _csr(groups: list[list[Module]], index: dict[int, int], merge: bool,
         given: bool = False) -> tuple[list[int], list[int]]:
    """The import tree in CSR form (CreateImportTree): from 0.8 each row sorted, without
    duplicates or the row itself, and every child numbered after its parent. A ``given``
    numbering keeps a module's import of itself and puts children where the numbering says."""
    row_ptr, children = [0], []
    for parent, group in enumerate(groups):
        if given:  # duplicates kept; a parsed module's row restored exactly, others sorted as TVM does
            m = group[0]
            row = [index[id(c)] for c in m.imports]
            if merge:
                row = row[::-1] if m._row_reversed else sorted(row)
        elif merge:
            row = sorted({index[id(c)] for m in group for c in m.imports} - {parent})
            if row and row[0] <= parent:
                kinds = (group[0].kind, groups[row[0]][0].kind)
                raise ConstraintError(
                    f"TVM cannot number this tree: module {parent} ({kinds[0]}) imports module {row[0]} "
                    f"({kinds[1]}), which does not come after it (a cycle, a module shared with an importer "
                    "its walk numbers later, or _lib modules that cannot be merged without one; TVM's writer "
                    "refuses it from 0.8: 'Cannot export due to multiple dso-exportables'). Pass order=[...] "
                    "to number the modules yourself", field="imports")
        else:
            row = [index[id(c)] for m in group for c in m.imports]
        children.extend(row)
        row_ptr.append(len(children))
    return row_ptr, children


def build(root: Module, *, format: str = "ffi", era: str | tuple[int, ...] | None = None,  # noqa: A002
          order: Sequence[Module] | None = None) -> bytes:
    """The blob (8-byte size prefix + body) TVM would pack for the module tree ``root``:
    indices and the CSR import tree are computed from the tree, in TVM's order.

    ``order`` numbers the modules yourself instead: every module reachable from ``root``,
    once, root first (and, if you like, modules the root does not reach); each is its own
    entry (no _lib merging) and each row lists the indices of its imports, duplicates kept (sorted from 0.8 and in the
    ffi layout, as TVM's writers do; the modules of a parsed blob's ``modules()`` keep
    their rows exactly as the blob held them, so they rebuild it byte for byte). This builds any blob a loader reads, including what TVM's writer refuses from 0.8
    (a shared module numbered before one of its importers, several ``_lib``, cycles).

    ``format`` "ffi" (0.22+) or "legacy"; ``era`` the TVM version whose writer to follow
    (default: 0.24+ for ffi, 0.20 for legacy). Legacy eras follow their writers: up to 0.6
    only the root's direct imports and no import tree; 0.7 one ``_lib`` per DSO module; from
    0.8 one merged ``_lib``; a root without imports packs count 0 (0.7-0.13: only for a
    ``_lib`` root; from 0.14 also followed by a non-``_lib`` root's own kind and payload).
    """
    check_format(format)
    e = era_of(era, format)
    if not isinstance(root, Module):
        raise TypeError(f"expected a Module, got {type(root).__name__}")
    for m in (*root.walk(), *(order or ())):
        if isinstance(m, Module) and m.kind != LIB and not isinstance(m.payload, Payload):
            raise TypeError(f"module {m.kind!r} has no Payload")
    mismatch = _module_error(root, format, e, write=False)
    if mismatch is not None:
        raise mismatch
    given = _given(root, order) if order is not None else None
    if given is not None and root._count_zero and not root.imports and len(given[0]) == 1:
        given = None  # the modules() of a blob of count 0: packed as count 0 again, not as a one-row tree
    if given is not None and format == "legacy" and not writer_era(e).import_tree:
        raise UnsupportedError("a legacy blob of TVM up to 0.6 has no import tree to number", field="order")
    try:
        return _build(root, format, e, given)
    except MlfError as exc:
        raise _module_error(root, format, e) or exc from None


def _record_of(m: Module) -> Any:
    """The generated record of a module's payload; None for ``_lib``, the one kind without a
    payload (:class:`Module` refuses any other kind without one)."""
    return None if m.payload is None else m.payload.record


def _build(root: Module, format: str, e: tuple[int, ...],  # noqa: A002
           given: tuple[list[list[Module]], dict[int, int]] | None) -> bytes:
    buffers: dict[int, Any] = {}
    for m in ([g[0] for g in given[0]] if given is not None else root.walk()):
        if m.payload is not None:
            for t in m.payload.tensors():
                buffers[id(t)] = m.payload.buffer
    lazy = lazy_from(buffers)
    out: list[Any] = []
    if format == "ffi":
        groups, index = given or _number(root, e, merge=True)
        row_ptr, children = _csr(groups, index, merge=True, given=given is not None)
        mods = [_ffi.new_ffi_module(kind=LIB if g[0].kind == LIB else g[0].kind,
                                    payload=_record_of(g[0]))
                for g in groups]
        body = _ffi.new_ffi_body(row_ptr=tuple(row_ptr), child_indices=tuple(children), modules=mods, trailing=b"")
        _ffi.write_ffi_blob(out.append, _ffi.new_ffi_blob(body=body), lazy, e)
        return b"".join(out)
    entries: list[Any] = []
    trailing = b""
    writer = writer_era(e)
    if not writer.import_tree:
        if root.kind != LIB:
            raise ConstraintError("TVM up to 0.6 packs the imports of a library: the root must be _lib", field="root")
        for m in root.imports:
            if m.imports or m.kind == LIB:
                raise ConstraintError("TVM up to 0.6 supports one level of imports only "
                                      "(\"Only support simply one-level hierarchy\")", field="imports")
            entries.append(_leg.new_legacy_entry(kind=m.kind, payload=_record_of(m)))
    elif given is None and not root.imports and (root.kind == LIB or writer.omit_root == "any"):
        if root.kind != LIB:  # 0.14+: count 0, then the root's own entry, which no loader reads
            parts: list[Any] = []
            _leg.write_legacy_entry(parts.append, _leg.new_legacy_entry(kind=root.kind, payload=_record_of(root)),
                                    lazy, e)
            trailing = b"".join(parts)
    else:
        merge = writer.merge_lib
        groups, index = given or _number(root, e, merge=merge)
        row_ptr, children = _csr(groups, index, merge=merge, given=given is not None)
        for g in groups:
            m = g[0]
            entries.append(_leg.new_legacy_entry(kind=m.kind, payload=_record_of(m)))
        tree = _leg.new_import_tree(row_ptr=tuple(row_ptr), child_indices=tuple(children))
        entries.append(_leg.new_legacy_entry(kind=IMPORT_TREE, payload=tree))
    body = _leg.new_legacy_body(entries=entries, trailing=trailing)
    _leg.write_legacy_blob(out.append, _leg.new_legacy_blob(body=body), lazy, e)
    return b"".join(out)


def _module_error(root: Module, format: str, e: tuple[int, ...], write: bool = True) -> MlfError | None:  # noqa: A002
    """The first module (depth-first from the root) whose payload the ``format`` layout of
    TVM ``e`` cannot hold, as an error naming it and what does not fit: a kind without a
    grammar there, a payload record of another layout's struct or, with ``write``, a record
    made for another era (fields that era's writer lacks or needs)."""
    cases = known_kinds(format)
    where = f"the {format} layout of TVM {era_text(e)}"
    for i, m in enumerate(root.walk()):
        p = m.payload
        if p is None or p.codec is not None or ext_lookup(REGISTRY, m.kind) is not None:
            continue
        label = f"module {m.kind!r} ({i} in depth-first order from the root)"
        at = f"modules[{i}].payload"
        want = cases.get(m.kind, "opaque_payload" if format == "ffi" else None)
        if want is None:
            return UnsupportedError(f"{label}: {where} has no grammar for kind {m.kind!r}, and a legacy payload has no "
                                    "length to keep it opaque (register one with blob.register_payload)", field=at)
        if p.struct != want:
            return ConstraintError(f"{label}: its payload is a {p.struct} record, while {where} stores a {m.kind!r} "
                                   f"payload as {want} (make it for format={format!r})", field=at)
        if not write:
            continue
        try:
            writer_of(want)([].append, p.record, lazy_from({id(t): p.buffer for t in p.tensors()}), e)
        except MlfError as exc:
            return ConstraintError(f"{label} cannot be written in {where}: {exc.message}",
                                   field=at + (f".{exc.field}" if exc.field else ""))
    return None

