"""Read, build and write the module blob that TVM embeds in exported libraries.

    >>> from mlf_spec import blob
    >>> b = blob.read_one("deploy.so")          # ELF .so/.o, devc.c, export .tar or raw .bin
    >>> b.format, b.symbol                       # ('ffi', '__tvm_ffi__library_bin')
    >>> [(e.index, e.kind, e.functions) for e in b.entries]
    >>> root = b.root()                          # Module tree: kind, typed payload, imports
    >>> blob.build(root, format=b.format, era=b.era) == b.data   # what TVM's writer writes
    >>> b.to_bytes() == b.data                   # exact round trip of whatever was read

Both layouts are covered: the legacy blob (``__tvm_dev_mblob`` up to 0.20, and
``__tvm_ffi_library_bin`` in 0.21) and the tvm-ffi blob (``__tvm_ffi__library_bin`` from
0.22). The layouts, the payload grammar of every known module kind and the import-tree
rules are stated once, in spec/binary/blob_*.yaml, payloads.yaml and vm.yaml; this module
composes the generated readers and writers: it picks the grammar by symbol and TVM version,
turns the CSR import tree into a graph of :class:`Module` nodes and back (numbering modules
the way TVM's ``ModuleSerializer`` does), and reports what a loader would tolerate but a
careful reader should hear about (:class:`Finding`). Every malformed input raises an
:class:`~mlf_spec.errors.MlfError` naming the file, field path and byte offset.

A legacy payload has no length, so a module kind without a grammar stops the reader (as
it stops TVM); :func:`register_payload` adds a grammar for it (and overrides a built-in one,
e.g. ``register_payload("opencl", spec_payload("opencl_spirv"))``).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mlf_spec._blob_facts import symbol_at
from mlf_spec._io import Source, atomic_write_bytes
from mlf_spec.errors import ConstraintError, MlfError, UnsupportedError
from mlf_spec.generated import blob_check_findings as _blob_findings
from mlf_spec.generated import blob_ffi_fast as _ffi
from mlf_spec.generated import blob_legacy_fast as _leg
from mlf_spec.generated._fastlib import ext_lookup

from . import locate as _locate
from .eras import ERA_LABELS, candidates, era_of, writer_era
from .modules import Module, build
from .payload import (
    FORMATS,
    RECORD_STRUCT,
    REGISTRY,
    STRUCTS,
    SWITCH,
    Payload,
    PayloadCodec,
    check_format,
    construct_payload,
    known_kinds,
    lazy_from,
    new_payload,
    parse_payload,
    payload_registered,
    register_payload,
    spec_payload,
    unregister_payload,
)
from .payload import IMPORT_TREE as IMPORT_TREE  # (re-exported: defined here before)
from .payload import LATEST as LATEST
from .payload import LIB as LIB

__all__ = [
    "FORMATS",
    "Blob",
    "Entry",
    "Finding",
    "Module",
    "Payload",
    "PayloadCodec",
    "build",
    "construct_payload",
    "known_kinds",
    "new_payload",
    "parse",
    "parse_payload",
    "payload_registered",
    "read",
    "read_one",
    "register_payload",
    "spec_payload",
    "symbol_for",
    "unregister_payload",
    "write_bin",
    "write_c_source",
]

# Which TVM version's grammar to try, by layout and symbol (first that reads wins).
_FINDINGS: dict[str, dict[str, Any]] = _blob_findings.FINDINGS
#: (struct, invariant) of the binary specs -> the finding code that reports it.
_INVARIANT_CODES: dict[tuple[str, str], str] = {
    tuple(ref.split(".", 1)): code for code, f in _FINDINGS.items() for ref in f.get("invariants", ())
}

# the names before they moved to payload.py, modules.py and eras.py
_STRUCTS, _SWITCH, _REGISTRY, _RECORD_STRUCT, _ERA_LABELS = STRUCTS, SWITCH, REGISTRY, RECORD_STRUCT, ERA_LABELS
_check_format, _era_of, _candidates, _lazy_from = check_format, era_of, candidates, lazy_from


def symbol_for(format: str, era: str | tuple[int, ...] | None = None) -> str:  # noqa: A002
    """The symbol TVM exports the blob under: ``__tvm_dev_mblob`` (legacy up to 0.20),
    ``__tvm_ffi_library_bin`` (legacy in 0.21) or ``__tvm_ffi__library_bin`` (ffi)."""
    check_format(format)
    return symbol_at(format, era_of(era, format))  # since / until of spec/tables/blob_facts.yaml


# --------------------------------------------------------------------------------------------
# Parsed blobs


@dataclass(frozen=True)
class Finding:
    """Something a loader tolerates (or a reader should know) about a blob that reads.

    ``severity`` is "warning" (TVM would misbehave or differ from its own writer) or "info".
    """

    code: str
    severity: str
    message: str
    module: int | None = None


@dataclass(frozen=True, eq=False)
class Entry:
    """One module of a blob, in blob order: its index (legacy indices skip _import_tree),
    kind, payload (None for _lib), and where the payload bytes are in the blob."""

    index: int
    kind: str
    payload: Payload | None
    payload_offset: int | None
    payload_size: int

    @property
    def functions(self) -> list[str]:
        """The function names the payload declares."""
        return self.payload.functions if self.payload is not None else []


@dataclass(eq=False)
class Blob:
    """A module blob as read: ``format`` "legacy" or "ffi", the ``symbol`` it was found under
    ("" when unknown), the TVM version ``era`` whose grammar read it (``era_label`` says which
    range that stands for), the exact ``data`` (size prefix + body), the generated ``record``,
    the modules (``entries``), the CSR ``row_ptr`` / ``child_indices`` (None for a legacy blob
    without an import tree), body bytes the layout leaves unread (``trailing``) and
    :class:`Finding` s."""

    format: str
    symbol: str
    era: tuple[int, ...]
    era_label: str
    data: bytes
    record: Any
    entries: list[Entry]
    row_ptr: tuple[int, ...] | None
    child_indices: tuple[int, ...] | None
    trailing: bytes
    findings: list[Finding] = field(default_factory=list)
    name: str = "<bytes>"
    unread_root: Entry | None = None
    prefix: str = ""  # system-lib prefix in front of the symbol, where the blob was found
    after_end: int = 0  # bytes of a raw blob file after the size-prefixed blob (not part of it)
    file_offset: int | None = None  # where the blob starts in the file (or tar member) it was found in

    def payload_bytes(self, entry: Entry) -> bytes:
        """The payload bytes of one entry as the blob stores them (empty for _lib)."""
        if entry.payload_offset is None:
            return b""
        return self.data[entry.payload_offset:entry.payload_offset + entry.payload_size]

    @property
    def full_symbol(self) -> str:
        """The symbol as it stands in the file: system-lib prefix + symbol."""
        return self.prefix + self.symbol

    def reachable(self) -> set[int]:
        """Indices of the modules the root reaches through imports (every module without an
        import tree, where the loader's new root imports them all)."""
        if self.row_ptr is None:
            return set(range(len(self.entries)))
        if not self.entries:
            return set()
        seen, stack = {0}, [0]
        while stack:
            for c in self.imports_of(stack.pop()):
                if c not in seen:
                    seen.add(c)
                    stack.append(c)
        return seen

    def imports_of(self, index: int) -> list[int]:
        """Indices of the modules module ``index`` imports (as the import tree says)."""
        if self.row_ptr is None or self.child_indices is None:  # (both or neither: an import tree has both)
            return []
        return list(self.child_indices[self.row_ptr[index] : self.row_ptr[index + 1]])

    def root(self) -> Module:
        """The module graph the import tree describes, rooted at module 0. A legacy blob
        without an import tree gives what TVM's loader builds: a new ``_lib`` root that
        imports every module; one whose count is 0 but whose body goes on with a module entry
        (what 0.14-0.21 pack for a root without imports) gives that root module."""
        if self.unread_root is not None and self.unread_root.payload is not None:
            return Module(self.unread_root.kind, self.unread_root.payload)
        if self.row_ptr is None:
            return Module.lib(*self._nodes())
        return self._nodes()[0]

    def modules(self) -> list[Module]:
        """The module graph as :meth:`root` builds it, one node per entry in blob order
        (``modules()[0]`` is the root when there is an import tree): what
        ``build(root, order=modules)`` numbers as the blob did. A blob of count 0 gives
        ``[root()]``: its one module is its root (a bare ``_lib``, or the root module
        0.14-0.21 pack after the count)."""
        if not self.entries and self.row_ptr is None:
            root = self.root()
            root._count_zero = True
            return [root]
        return self._nodes()

    def _nodes(self) -> list[Module]:
        """One node per entry in blob order, the import tree's edges set."""
        for e in self.entries:
            if e.kind == IMPORT_TREE:
                # a tvm-ffi blob may name a module so (tvm-ffi's loader then finds no loader for
                # it); the legacy layout reserves the name, so no Module can stand for it
                raise UnsupportedError(f"module {e.index} has the kind {IMPORT_TREE}, which is not a module kind "
                                       "(the legacy layout reserves it for the import tree)", file=self.name,
                                       field=f"modules[{e.index}].kind", offset=e.payload_offset)
        nodes = [Module(e.kind, e.payload) for e in self.entries]
        if self.row_ptr is None:
            return nodes
        # From 0.8 (and in the tvm-ffi layout) the writer sorts each row, and its depth-first
        # numbering gives siblings in reverse import order: reversing a row restores the import
        # order, so build() numbers the tree exactly as it was. 0.7 rows are in import order.
        reverse = self.format == "ffi" or writer_era(self.era).merge_lib
        for i, node in enumerate(nodes):
            row = self.imports_of(i)
            node.imports = [nodes[c] for c in (reversed(row) if reverse else row)]
            node._row_reversed = reverse
        return nodes

    def to_bytes(self) -> bytes:
        """The blob written back from what was read: identical to ``data``."""
        out: list[Any] = []
        lazy = lazy_from({id(t): self.data for e in self.entries if e.payload is not None for t in e.payload.tensors()})
        if self.format == "ffi":
            _ffi.write_ffi_blob(out.append, self.record, lazy, self.era)
        else:
            _leg.write_legacy_blob(out.append, self.record, lazy, self.era)
        return b"".join(out)

    def __repr__(self) -> str:
        kinds = ", ".join(e.kind for e in self.entries)
        return f"Blob({self.format}, {self.symbol or 'raw'}, {len(self.data)} bytes, era {self.era_label}: [{kinds}])"


def _layouts(symbol: str) -> list[str]:
    if symbol == _locate.SYMBOL_FFI:
        return ["ffi"]
    if symbol == _locate.SYMBOL_LEGACY:
        return ["legacy"]
    if symbol == _locate.SYMBOL_FFI_V021:
        return ["legacy", "ffi"]  # 0.21 kept the legacy layout; 0.22 dev builds wrote the new one
    # No symbol: try both. A legacy body read as tvm-ffi fails at once (its first kind's
    # length is taken for row_ptr[0], which must be 0); the other way round it fails at the
    # empty first kind.
    return ["ffi", "legacy"]


def parse(data: bytes | bytearray | memoryview, *, symbol: str = "", era: str | tuple[int, ...] | None = None,
          format: str | None = None, name: str = "<bytes>") -> Blob:  # noqa: A002
    """Read one blob (size prefix + body, nothing after it). ``symbol`` (the blob symbol it
    was found under, without a system-lib prefix) picks the layout and the candidate TVM
    versions; ``format`` and ``era`` force them. Raises MlfError for malformed input."""
    data = bytes(data)
    if format is not None:
        check_format(format)
    layouts = [format] if format else _layouts(symbol)
    errors: list[MlfError] = []
    attempts: list[tuple[str, tuple[int, ...]]] = []
    for layout in layouts:
        eras = [era_of(era, layout)] if era is not None else _candidates(layout, symbol)
        for e in eras:
            try:
                return _parse_as(data, layout, e, symbol, name)
            except MlfError as exc:
                errors.append(exc)
                attempts.append((layout, e))
    # No reading takes every byte. One that ends before the data does reads the blob the
    # size prefix delimits; what follows is not part of it (a raw .bin cut out with more).
    for exc, (layout, e) in zip(errors, attempts):
        if isinstance(exc, _AfterEnd):
            blob = _parse_as(data[: exc.offset], layout, e, symbol, name)
            blob.after_end = len(data) - exc.offset
            blob.findings = blob.findings + [_finding(
                "blob.after-end", f"{blob.after_end} bytes follow the blob (its size prefix says "
                f"{len(blob.data) - 8} body bytes); loaders read only the prefixed size")]
            return blob
    # The reading that got furthest is the likeliest to be the right one (first on a tie).
    best = max(errors, key=lambda exc: exc.offset if exc.offset is not None else -1)
    raise _decorate(best, symbol, name)


class _AfterEnd(ConstraintError):
    """The blob's size prefix ends before the data does."""


def _decorate(exc: MlfError, symbol: str, name: str) -> MlfError:
    if isinstance(exc, UnsupportedError):
        m = re.search(r"when kind is (.+)$", exc.message)
        if m:
            exc.message = (f"module kind {m.group(1)} has no payload grammar; a legacy blob stores payloads "
                           "without lengths, so nothing after it can be read (mlf_spec.blob.register_payload "
                           "adds a grammar)")
    exc.prefixed(symbol or "blob")
    return exc.with_file(name)


def _parse_as(data: bytes, layout: str, era: tuple[int, ...], symbol: str, name: str) -> Blob:
    view = memoryview(data)
    if layout == "ffi":
        rec, end = _ffi.read_ffi_blob(view, 0, len(data), era)
    else:
        rec, end = _leg.read_legacy_blob(view, 0, len(data), era)
    if end != len(data):
        raise _AfterEnd(f"{len(data) - end} bytes follow the blob (its size prefix says {end - 8})",
                        field="trailing", offset=end)
    body = rec.body
    entries: list[Entry] = []
    row_ptr = child = None
    tree_rec = None
    raw = body.modules if layout == "ffi" else body.entries
    for ent in raw:
        if layout == "legacy" and ent.kind == IMPORT_TREE:
            tree_rec = ent.payload  # a later tree replaces an earlier one, as in TVM's reader
            continue
        payload = None
        offset, size = None, 0
        if ent.kind != LIB:
            codec = ext_lookup(REGISTRY, ent.kind)
            struct = None if codec is not None else RECORD_STRUCT.get(type(ent.payload).__name__)
            payload = Payload(ent.kind, ent.payload, struct, data, codec)
            offset, size = ent.payload_span[0], ent.payload_span[1] - ent.payload_span[0]
        entries.append(Entry(len(entries), ent.kind, payload, offset, size))
    if layout == "ffi":
        row_ptr, child = tuple(body.row_ptr), tuple(body.child_indices)
    elif tree_rec is not None:
        row_ptr, child = tuple(tree_rec.row_ptr), tuple(tree_rec.child_indices)
    blob = Blob(layout, symbol, era, _ERA_LABELS.get(era, ".".join(map(str, era))), data, rec, entries,
                row_ptr, child, bytes(body.trailing), name=name)
    if layout == "legacy" and body.count == 0 and body.trailing:
        blob.unread_root = _unread_root(data, len(data) - len(body.trailing), era)
    blob.findings = _findings(blob, tree_rec)
    return blob


def _unread_root(data: bytes, start: int, era: tuple[int, ...]) -> Entry | None:
    """The module entry that follows a zero count (0.14-0.21 packing of a root without
    imports), if the trailing bytes are exactly one."""
    try:
        ent, end = _leg.read_legacy_entry(memoryview(data), start, len(data), era)
    except MlfError:
        return None
    if end != len(data) or ent.kind in (LIB, IMPORT_TREE):
        return None
    codec = ext_lookup(REGISTRY, ent.kind)
    struct = None if codec is not None else RECORD_STRUCT.get(type(ent.payload).__name__)
    payload = Payload(ent.kind, ent.payload, struct, data, codec)
    return Entry(0, ent.kind, payload, ent.payload_span[0], ent.payload_span[1] - ent.payload_span[0])


def _finding(code: str, message: str, module: int | None = None) -> Finding:
    return Finding(code, _FINDINGS[code]["severity"], message, module)


def _lint_findings(struct: str, lints: list[tuple[str, str]]) -> list[Finding]:
    return [_finding(_INVARIANT_CODES[(struct, name)], doc) for name, doc in lints]


def _findings(blob: Blob, tree_rec: Any) -> list[Finding]:
    out: list[Finding] = []
    body = blob.record.body
    if blob.format == "ffi":
        out += _lint_findings("ffi_body", _ffi.lint_ffi_body(body, blob.era))
    else:
        out += _lint_findings("legacy_body", _leg.lint_legacy_body(body, blob.era))
        if tree_rec:
            out += _lint_findings("import_tree", _leg.lint_import_tree(tree_rec, blob.era))
    if blob.trailing:
        if blob.unread_root is not None:
            out.append(_finding("blob.unread-root",
                                f"count is 0, then the root module {blob.unread_root.kind!r} ({blob.unread_root.payload_size} "
                                "payload bytes): how 0.14-0.21 pack a root without imports; no loader reads it"))
        elif blob.format == "legacy" and body.count == 0:
            out.append(_finding("blob.trailing-bytes",
                                f"count is 0 and {len(blob.trailing)} bytes follow that are not one module entry; "
                                "TVM's reader ignores them"))
        else:
            out.append(_finding("blob.trailing-bytes",
                                f"{len(blob.trailing)} bytes after the last entry; TVM's reader ignores them"))
    for e in blob.entries:
        if e.payload is None:
            continue
        if e.payload.struct == "opaque_payload":
            out.append(_finding("module.unknown-kind", f"module {e.index} ({e.kind}): no payload grammar, kept "
                                f"as {e.payload_size} opaque bytes", e.index))
        if blob.format == "ffi" and e.payload_size == 0:
            out.append(_finding("module.empty-payload", f"module {e.index} ({e.kind}): a zero-length payload, "
                                "which tvm-ffi's reader rejects", e.index))
    if blob.row_ptr is None:
        if blob.entries:
            out.append(_finding("tree.none", "no import tree: a loader makes a new library module "
                                "the root and imports every module (the layout of TVM up to 0.6)"))
    elif blob.entries:
        reached = blob.reachable()
        for i in range(len(blob.entries)):
            if i not in reached:
                out.append(_finding("tree.unreachable", f"module {i} ({blob.entries[i].kind}) is not "
                                    "reachable from the root; a loader loads and drops it", i))
    return out


# --------------------------------------------------------------------------------------------
# Files


def read(source: Source, *, era: str | tuple[int, ...] | None = None, format: str | None = None,  # noqa: A002
         max_size: int = 8 << 30, name: str | None = None) -> list[Blob]:
    """Every blob in ``source``: an ELF shared object or object file, the C source TVM's
    export writes (devc.c / devc.cc), an export ``.tar`` (compressed or not), or a raw
    ``.bin``; a path, bytes or a binary file object (``name`` labels it in errors). A
    library without a blob gives []."""
    label = name or (os.fspath(source) if isinstance(source, (str, os.PathLike)) else None)
    located = _locate.locate_blobs(source, max_size=max_size, name=label)
    return [parse_located(loc, label or "<bytes>", era, format) for loc in located]


def parse_located(loc: _locate.LocatedBlob, label: str, era: Any, format: str | None) -> Blob:  # noqa: A002
    """:func:`parse` of a located blob (``label`` names its file), errors and offsets placed
    in that file (the blob's offset in it, the system-lib prefix before field names)."""
    where = label if loc.container_member is None else f"{label}:{loc.container_member}"
    if loc.file_offset is None:
        where += f" ({loc.name} array; offsets are within the blob)"
    try:
        b = parse(loc.data, symbol=loc.symbol, era=era, format=format, name=where)
    except MlfError as exc:
        if loc.file_offset:
            exc.shifted(loc.file_offset)
        if loc.prefix and exc.field:
            exc.field = loc.prefix + exc.field
        raise
    b.prefix = loc.prefix
    b.file_offset = loc.file_offset
    if loc.after_end:
        b.after_end = loc.after_end
        b.findings = b.findings + [_finding(
            "blob.after-end", f"{loc.after_end} bytes follow the blob (its size prefix says {len(b.data) - 8} body "
            "bytes); loaders read only the prefixed size, so they are not part of it")]
    return b


_parse_located = parse_located  # (the name before it was public)


def read_one(source: Source, *, era: str | tuple[int, ...] | None = None, format: str | None = None) -> Blob:  # noqa: A002
    """The one blob in ``source``; MlfError if there is none or more than one."""
    blobs = read(source, era=era, format=format)
    name = os.fspath(source) if isinstance(source, (str, os.PathLike)) else "<bytes>"
    if not blobs:
        raise MlfError("no module blob found (a library whose root module has no imports has none)", file=name)
    if len(blobs) > 1:
        raise MlfError(f"{len(blobs)} module blobs found; read() returns all of them", file=name)
    return blobs[0]


def write_bin(blob: Blob | bytes, path: str | os.PathLike[str], *, overwrite: bool = True) -> None:
    """Write the blob bytes (size prefix + body) to ``path`` atomically."""
    data = blob.data if isinstance(blob, Blob) else bytes(blob)
    _locate.write_bin(data, path, overwrite=overwrite)


def write_c_source(blob: Blob | bytes, path: str | os.PathLike[str], *, symbol: str | None = None,
                   system_lib_prefix: str | None = None, overwrite: bool = True) -> None:
    """Write a C file that embeds the blob under its symbol the way TVM's PackImportsToC does
    (formatting of the era: unpadded hex up to 0.13). Compiled as C with ``cc -shared -fPIC``
    it gives a library that ``tvm.runtime.load_module`` reads the blob from."""
    if isinstance(blob, Blob):
        data = blob.data
        sym = symbol or blob.symbol or symbol_for(blob.format, blob.era)
        style = "current" if blob.format == "ffi" else writer_era(blob.era).c_style
        if system_lib_prefix is None and blob.prefix and symbol is None:
            system_lib_prefix = blob.prefix  # found in a system library: register it like TVM does
    else:
        data = bytes(blob)
        sym = symbol or _locate.SYMBOL_FFI
        style = "current"
    text = _locate.c_source_for_blob(data, sym, system_lib_prefix, style)
    atomic_write_bytes(Path(path), text.encode("ascii"), overwrite=overwrite)

