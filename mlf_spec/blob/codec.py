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

import contextlib
import io
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from mlf_spec import _blob_facts as _facts
from mlf_spec import versions as _versions
from mlf_spec._io import Source, atomic_write_bytes
from mlf_spec.errors import ConstraintError, MalformedError, MlfError, UnsupportedError
from mlf_spec.generated import _fastlib
from mlf_spec.generated import blob_check_findings as _blob_findings
from mlf_spec.generated import blob_ffi_fast as _ffi
from mlf_spec.generated import blob_ffi_ir as _ffi_ir
from mlf_spec.generated import blob_legacy_fast as _leg
from mlf_spec.generated import blob_legacy_ir as _leg_ir
from mlf_spec.generated import payloads_fast as _payloads
from mlf_spec.generated import payloads_ir as _payloads_ir
from mlf_spec.generated import tensor_fast as _tensor
from mlf_spec.generated import vm_fast as _vm

from . import locate as _locate

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

FORMATS: tuple[str, ...] = ("legacy", "ffi")
LATEST: tuple[int, ...] = _fastlib.LATEST
LIB: str = _leg.LIB_KIND  # module kinds with a fixed meaning, from spec/binary/blob_legacy.yaml
IMPORT_TREE: str = _leg.IMPORT_TREE_KIND

# The spec as data: every struct a payload can use, and the kind -> payload-struct switch of
# each layout (spec/binary/blob_legacy.yaml, blob_ffi.yaml).
_STRUCTS: dict[str, dict] = _payloads_ir.STRUCTS
_FAST_MODULES = (_payloads, _vm, _tensor)
_RECORD_STRUCT: dict[str, str] = {spec["record"]: name for name, spec in _STRUCTS.items()}


def _payload_switch(ir: Any, struct: str) -> dict:
    return next(f for f in ir.STRUCTS[struct]["fields"] if f["name"] == "payload")["switch"]


_SWITCH = {"ffi": _payload_switch(_ffi_ir, "ffi_module"), "legacy": _payload_switch(_leg_ir, "legacy_entry")}
_REGISTRY: str = _SWITCH["ffi"]["extensible"]

# Which TVM version's grammar to try, by layout and symbol (first that reads wins).
_FINDINGS: dict[str, dict[str, Any]] = _blob_findings.FINDINGS
#: (struct, invariant) of the binary specs -> the finding code that reports it.
_INVARIANT_CODES: dict[tuple[str, str], str] = {
    tuple(ref.split(".", 1)): code for code, f in _FINDINGS.items() for ref in f.get("invariants", ())
}

_ERA_LABELS = {
    (0, 6): "0.2-0.6 (no import tree)",
    (0, 7): "0.7 (one _lib per DSO module)",
    (0, 8): "0.8-0.13",
    (0, 14): "0.14-0.15",
    (0, 16): "0.16-0.19",
    (0, 20): "0.7-0.20",
    (0, 21): "0.21",
    (0, 22): "0.22",
    (0, 23): "0.22-0.23",
    LATEST: "0.24 or later",
}


def known_kinds(format: str = "ffi") -> dict[str, str]:  # noqa: A002
    """Module kind -> name of its payload struct in the spec, for ``format``."""
    _check_format(format)
    return {str(k): v for k, v in _SWITCH[format]["cases"].items() if k != IMPORT_TREE}


def symbol_for(format: str, era: str | tuple[int, ...] | None = None) -> str:  # noqa: A002
    """The symbol TVM exports the blob under: ``__tvm_dev_mblob`` (legacy up to 0.20),
    ``__tvm_ffi_library_bin`` (legacy in 0.21) or ``__tvm_ffi__library_bin`` (ffi)."""
    _check_format(format)
    return _facts.symbol_at(format, _era_of(era, format))  # since / until of spec/tables/blob_facts.yaml


# --------------------------------------------------------------------------------------------
# Payloads


class PayloadCodec(Protocol):
    """A payload grammar given at run time (see :func:`register_payload`)."""

    def read(self, buf: Any, pos: int, end: int, era: tuple[int, ...]) -> tuple[Any, int]:
        """Read one payload at ``pos`` (not past ``end``); return it and the offset after it."""

    def write(self, append: Callable[[Any], Any], value: Any, era: tuple[int, ...]) -> None:
        """Append the bytes of ``value``."""


@dataclass(frozen=True, eq=False)
class Payload:
    """The payload of one module: its kind, the typed record the spec's grammar reads
    (``struct`` names that grammar; ``record`` is a generated record whose fields are in
    generated/docs/payloads.md and vm.md) or, for a registered grammar, whatever its codec
    reads. Tensor data inside the record is referenced by offset into ``buffer``."""

    kind: str
    record: Any
    struct: str | None = None
    buffer: Any = b""
    codec: Any = None

    @property
    def functions(self) -> list[str]:
        """The function names the payload declares (fmap keys, func_names, the VM function
        table or globals, an executor factory's module name...); empty if it declares none."""
        return _function_names(self.struct, self.record) if self.struct else []

    def tensor_data(self, tensor: Any) -> memoryview:
        """The stored bytes of a tensor record that belongs to this payload."""
        view = memoryview(self.buffer)
        return view[tensor.data_offset : tensor.data_offset + tensor.data_byte_size]

    def tensors(self) -> list[Any]:
        """Every tensor record in the payload, in stored order."""
        return [t for t in _walk_records(self.record) if isinstance(t, _tensor.TensorRecord)]

    def to_bytes(self, era: str | tuple[int, ...] | None = None) -> bytes:
        """The payload's bytes as the blob stores them (without a tvm-ffi length prefix)."""
        out: list[Any] = []
        e = _era_of(era, "ffi")
        if self.codec is not None:
            self.codec.write(out.append, self.record, e)
        elif self.struct is not None:
            _writer(self.struct)(out.append, self.record, _lazy_from({id(t): self.buffer for t in self.tensors()}), e)
        else:
            raise UnsupportedError(f"payload of kind {self.kind!r} has no grammar to write it with")
        return b"".join(out)

    def __repr__(self) -> str:
        return f"Payload(kind={self.kind!r}, struct={self.struct!r}, record={self.record!r})"


class _SafeCodec:
    """Wraps a registered codec: its failures become MlfError, its positions are checked."""

    def __init__(self, kind: str, codec: Any) -> None:
        self.kind, self.codec = kind, codec

    def read(self, buf: Any, pos: int, end: int, era: tuple[int, ...]) -> tuple[Any, int]:
        try:
            value, new = self.codec.read(buf, pos, end, era)
        except MlfError:
            raise
        except Exception as exc:  # a user grammar: report whatever it raised as malformed input
            raise MalformedError(f"registered grammar for {self.kind!r} failed: {exc}", offset=pos) from None
        if not isinstance(new, int) or not pos <= new <= end:
            raise MalformedError(f"registered grammar for {self.kind!r} returned position {new!r} outside "
                                 f"[{pos}, {end}]", offset=pos)
        return value, new

    def write(self, append: Callable[[Any], Any], value: Any, era: tuple[int, ...]) -> None:
        self.codec.write(append, value, era)


def register_payload(kind: str, codec: PayloadCodec) -> None:
    """Use ``codec`` for the payload of ``kind`` in both layouts, before the spec's own
    grammar. In a legacy blob this is what makes a kind without a built-in grammar readable;
    in a tvm-ffi blob it replaces the opaque bytes. ``codec`` is a :class:`PayloadCodec`,
    for example :func:`spec_payload` or :func:`construct_payload`."""
    if not isinstance(kind, str) or not kind or kind in (LIB, IMPORT_TREE):
        raise ValueError(f"cannot register a payload grammar for kind {kind!r}")
    if not (callable(getattr(codec, "read", None)) and callable(getattr(codec, "write", None))):
        raise TypeError("a payload codec needs read(buf, pos, end, era) and write(append, value, era)")
    _fastlib.EXTENSIONS.setdefault(_REGISTRY, {})[kind] = _SafeCodec(kind, codec)


def unregister_payload(kind: str) -> None:
    """Forget the grammar registered for ``kind`` (no error if there is none)."""
    _fastlib.EXTENSIONS.get(_REGISTRY, {}).pop(kind, None)


@contextlib.contextmanager
def payload_registered(kind: str, codec: PayloadCodec) -> Iterator[None]:
    """Context manager: ``codec`` is registered for ``kind`` inside the block only."""
    previous = _fastlib.EXTENSIONS.get(_REGISTRY, {}).get(kind)
    register_payload(kind, codec)
    try:
        yield
    finally:
        if previous is None:
            unregister_payload(kind)
        else:
            _fastlib.EXTENSIONS[_REGISTRY][kind] = previous


class _SpecCodec:
    def __init__(self, struct: str) -> None:
        self.struct = struct
        self._read = _reader(struct)
        self._write = _writer(struct)

    def read(self, buf: Any, pos: int, end: int, era: tuple[int, ...]) -> tuple[Any, int]:
        return self._read(buf, pos, end, era)

    def write(self, append: Callable[[Any], Any], value: Any, era: tuple[int, ...]) -> None:
        self._write(append, value, None, era)


def spec_payload(struct: str) -> PayloadCodec:
    """A codec for one payload struct of the spec (e.g. ``"opencl_spirv"``, the SPIR-V form
    of an opencl payload, which nothing in the bytes tells from the default one)."""
    if struct not in _STRUCTS:
        raise ValueError(f"unknown payload struct {struct!r}; known: {sorted(_STRUCTS)}")
    return _SpecCodec(struct)


class _ConstructCodec:
    def __init__(self, construct: Any) -> None:
        self.construct = construct

    def read(self, buf: Any, pos: int, end: int, era: tuple[int, ...]) -> tuple[Any, int]:
        stream = io.BytesIO(bytes(buf[pos:end]))
        value = self.construct.parse_stream(stream, era=era)
        return value, pos + stream.tell()

    def write(self, append: Callable[[Any], Any], value: Any, era: tuple[int, ...]) -> None:
        append(self.construct.build(value, era=era))


def construct_payload(construct: Any) -> PayloadCodec:
    """A codec from a Construct grammar (``construct.Struct(...)``); its parse errors are
    reported as MlfError."""
    return _ConstructCodec(construct)


def _module_of(struct: str) -> Any:
    for m in _FAST_MODULES:
        if hasattr(m, f"read_{struct}"):
            return m
    raise ValueError(f"no generated reader for {struct!r}")


def _reader(struct: str) -> Callable[..., Any]:
    return getattr(_module_of(struct), f"read_{struct}")


def _writer(struct: str) -> Callable[..., Any]:
    return getattr(_module_of(struct), f"write_{struct}")


def _walk_records(value: Any) -> Iterator[Any]:
    """Every record inside ``value`` (records are tuples; lists hold elements)."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, _fastlib.Record):
            yield v
            stack.extend(reversed([x for x in v if isinstance(x, (tuple, list))]))
        elif isinstance(v, (list, tuple)):
            stack.extend(reversed([x for x in v if isinstance(x, (tuple, list))]))


def _lazy_from(buffers: Mapping[int, Any]) -> Callable[[str, Any], Any]:
    def lazy(_field: str, rec: Any) -> Any:
        return memoryview(buffers[id(rec)])[rec.data_offset : rec.data_offset + rec.data_byte_size]

    return lazy


def _function_names(struct: str, rec: Any) -> list[str]:
    """Function names of a payload record, from the fields the spec marks with role
    function_names (a map's keys, a vec<str>, a str, or the `name` of vec<struct> elements)."""
    out: list[str] = []
    spec = _STRUCTS.get(struct)
    if spec is None or rec is None:
        return out
    for f in spec["fields"]:
        value = getattr(rec, f["name"], None)
        if value is None:
            continue
        if f.get("role") == "function_names":
            if f["kind"] == "map":
                out.extend(_text(k) for k, _ in value)
            elif f["kind"] == "vec" and f["elem"] in _STRUCTS:
                names = [g["name"] for g in _STRUCTS[f["elem"]]["fields"] if g.get("role") == "name"]
                if names:
                    out.extend(_text(getattr(e, names[0])) for e in value)
            elif f["kind"] == "vec":
                out.extend(_text(v) for v in value)
            else:
                out.append(_text(value))
        elif f["kind"] in ("struct", "switch") and isinstance(value, _fastlib.Record):
            out.extend(_function_names(_RECORD_STRUCT.get(type(value).__name__, ""), value))
    return out


def _text(v: Any) -> str:
    return v if isinstance(v, str) else bytes(v).decode("utf-8", "surrogateescape")


def new_payload(kind: str, *, format: str = "ffi", era: str | tuple[int, ...] | None = None,  # noqa: A002
                **fields: Any) -> Payload:
    """A payload of ``kind`` from field values (names as in the spec's payload struct for
    that kind; see generated/docs/payloads.md). Counts, lengths and constants are filled in;
    nested structs can be dicts, maps lists of pairs or dicts, and tensors NumPy arrays or
    :class:`mlf_spec.params.StoredTensor` values (stored in the dtype numbering of ``era``)."""
    _check_format(format)
    e = _era_of(era, format)
    switch = _SWITCH[format]
    struct = switch["cases"].get(kind, switch["default"])
    if struct is None or kind in (LIB, IMPORT_TREE):
        raise UnsupportedError(f"no payload grammar for kind {kind!r} in the {format} layout")
    maker = _RecordMaker(e)
    record = maker.make(struct, fields)
    return Payload(kind, record, struct, maker.buffer())


def parse_payload(kind: str, data: bytes | bytearray | memoryview, *, format: str = "ffi",  # noqa: A002
                  era: str | tuple[int, ...] | None = None) -> Payload:
    """Read the payload bytes of one module of ``kind`` (as they stand in a blob, without a
    tvm-ffi length prefix); they must be used up exactly. Raises MlfError."""
    _check_format(format)
    e = _era_of(era, format)
    data = bytes(data)
    codec = _fastlib.ext_lookup(_REGISTRY, kind)
    switch = _SWITCH[format]
    struct = None if codec is not None else switch["cases"].get(kind, switch["default"])
    if codec is None and (struct is None or kind in (LIB, IMPORT_TREE)):
        raise UnsupportedError(f"no payload grammar for kind {kind!r} in the {format} layout", field="payload", offset=0)
    read = codec.read if codec is not None else _reader(struct)  # type: ignore[arg-type]  # struct is not None here: the raise above covers codec is None and struct is None
    record, end = read(memoryview(data), 0, len(data), e)
    if end != len(data):
        raise ConstraintError(f"{len(data) - end} bytes are left after the {kind} payload", field="payload", offset=end)
    return Payload(kind, record, struct, data, codec)


class _RecordMaker:
    """Builds generated records from friendly values (dicts, lists, arrays)."""

    def __init__(self, era: tuple[int, ...]) -> None:
        self.era = era
        self.chunks: list[bytes] = []
        self.size = 0

    def buffer(self) -> bytes:
        return b"".join(self.chunks)

    def make(self, struct: str, values: Any) -> Any:
        if isinstance(values, _fastlib.Record):
            return values
        spec = _STRUCTS[struct]
        if not isinstance(values, Mapping):
            fields = [f for f in spec["fields"] if "const" not in f]
            if len(fields) != 1:
                raise TypeError(f"{struct} needs a mapping of its fields, got {type(values).__name__}")
            values = {fields[0]["name"]: values}
        unknown = set(values) - {f["name"] for f in spec["fields"]}
        if unknown:
            raise TypeError(f"{struct} has no field(s) {sorted(unknown)}")
        if struct == "tensor_record":
            raise TypeError("give tensors as NumPy arrays or StoredTensor values")
        kwargs: dict[str, Any] = {}
        for f in spec["fields"]:
            n = f["name"]
            if n not in values:
                continue
            v = values[n]
            if f["kind"] == "struct" and _STRUCTS[f["struct"]]["inline"] and not _nested(f):
                member = self.make(f["struct"], v)
                for k, x in zip(type(member)._fields, member):
                    kwargs[k if k.startswith(n + "_") else f"{n}_{k}"] = x
            else:
                kwargs[n] = self.value(f, v, values)
        return getattr(_module_of(struct), f"new_{struct}")(**kwargs)

    def value(self, f: dict, v: Any, ns: Mapping[str, Any]) -> Any:
        kind = f["kind"]
        if v is None:
            return None
        if "count" in f:
            return [self.element(f["type"], x) for x in v]
        if kind == "vec":
            items = [self.element(f["elem"], x) for x in v]
            return tuple(items) if f["elem"] in _SCALAR_TYPES else items
        if kind == "map":
            pairs = v.items() if isinstance(v, Mapping) else v
            return [(self.element(f["key"], k), self.element(f["value"], x)) for k, x in pairs]
        if kind == "struct":
            return self.make(f["struct"], v)
        if kind == "switch":
            case = f["switch"]["cases"].get(f["switch_on"](dict(ns)), f["switch"]["default"])
            return self.element(case, v) if case else v
        return v

    def element(self, type_name: str, v: Any) -> Any:
        if type_name == "tensor_record":
            return self.tensor(v)
        if type_name in _STRUCTS:
            return self.make(type_name, v)
        return v

    def tensor(self, value: Any) -> Any:
        if isinstance(value, _tensor.TensorRecord):
            raise TypeError("give tensors as NumPy arrays or StoredTensor values, not records")
        from mlf_spec.params import codec as _params

        dialect = None if self.era >= (0, 24) else f"{self.era[0]}.{self.era[1]}"
        data = _params.dumps({"t": value}, dialect=dialect)
        from mlf_spec.generated.params_fast import read_params_file

        rec = read_params_file(data, 0, len(data))[0].arrays[0]
        raw = data[rec.data_offset : rec.data_offset + rec.data_byte_size]
        rec = rec._replace(data_offset=self.size)
        self.chunks.append(raw)
        self.size += len(raw)
        return rec


_SCALAR_TYPES = {"u8", "u16", "u32", "u64", "i8", "i16", "i32", "i64", "f32", "f64"}


def _nested(f: dict) -> bool:
    """A struct field the generated record keeps as a nested record (not flattened)."""
    return bool(f.get("sized") or f.get("keep_span") or "count" in f or "since" in f or "until" in f or "when" in f)


# --------------------------------------------------------------------------------------------
# Module trees


class Module:
    """A node of a module tree: ``kind``, its :class:`Payload` (None for ``_lib``, the library
    the blob lives in) and the modules it imports. Identity matters: a module imported twice
    is one node, and a tree read from a blob may even contain cycles (TVM's loader accepts
    them); every walk here is cycle-safe."""

    __slots__ = ("kind", "payload", "imports", "_row_reversed")

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
    _check_format(format)
    e = _era_of(era, format)
    if not isinstance(root, Module):
        raise TypeError(f"expected a Module, got {type(root).__name__}")
    for m in (*root.walk(), *(order or ())):
        if isinstance(m, Module) and m.kind != LIB and not isinstance(m.payload, Payload):
            raise TypeError(f"module {m.kind!r} has no Payload")
    mismatch = _module_error(root, format, e, write=False)
    if mismatch is not None:
        raise mismatch
    given = _given(root, order) if order is not None else None
    if given is not None and format == "legacy" and e < (0, 7):
        raise UnsupportedError("a legacy blob of TVM up to 0.6 has no import tree to number", field="order")
    try:
        return _build(root, format, e, given)
    except MlfError as exc:
        raise _module_error(root, format, e) or exc from None


def _build(root: Module, format: str, e: tuple[int, ...],  # noqa: A002
           given: tuple[list[list[Module]], dict[int, int]] | None) -> bytes:
    buffers: dict[int, Any] = {}
    for m in ([g[0] for g in given[0]] if given is not None else root.walk()):
        if m.payload is not None:
            for t in m.payload.tensors():
                buffers[id(t)] = m.payload.buffer
    lazy = _lazy_from(buffers)
    out: list[Any] = []
    if format == "ffi":
        groups, index = given or _number(root, e, merge=True)
        row_ptr, children = _csr(groups, index, merge=True, given=given is not None)
        mods = [_ffi.new_ffi_module(kind=LIB if g[0].kind == LIB else g[0].kind,
                                    payload=None if g[0].kind == LIB else g[0].payload.record)  # type: ignore[union-attr]  # a non-library module always has a payload (the reader makes one)
                for g in groups]
        body = _ffi.new_ffi_body(row_ptr=tuple(row_ptr), child_indices=tuple(children), modules=mods, trailing=b"")
        _ffi.write_ffi_blob(out.append, _ffi.new_ffi_blob(body=body), lazy, e)
        return b"".join(out)
    entries: list[Any] = []
    trailing = b""
    if e < (0, 7):
        if root.kind != LIB:
            raise ConstraintError("TVM up to 0.6 packs the imports of a library: the root must be _lib", field="root")
        for m in root.imports:
            if m.imports or m.kind == LIB:
                raise ConstraintError("TVM up to 0.6 supports one level of imports only "
                                      "(\"Only support simply one-level hierarchy\")", field="imports")
            entries.append(_leg.new_legacy_entry(kind=m.kind, payload=m.payload.record))  # type: ignore[union-attr]  # a non-library module always has a payload (the reader makes one)
    elif given is None and not root.imports and (root.kind == LIB or e >= (0, 14)):
        if root.kind != LIB:  # 0.14+: count 0, then the root's own entry, which no loader reads
            parts: list[Any] = []
            _leg.write_legacy_entry(parts.append, _leg.new_legacy_entry(kind=root.kind, payload=root.payload.record),  # type: ignore[union-attr]  # the root module always has a payload (the reader makes one)
                                    lazy, e)
            trailing = b"".join(parts)
    else:
        merge = e >= (0, 8)
        groups, index = given or _number(root, e, merge=merge)
        row_ptr, children = _csr(groups, index, merge=merge, given=given is not None)
        for g in groups:
            m = g[0]
            entries.append(_leg.new_legacy_entry(kind=m.kind, payload=None if m.kind == LIB else m.payload.record))  # type: ignore[union-attr]  # a non-library module always has a payload (the reader makes one)
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
    where = f"the {format} layout of TVM {_fastlib.era_text(e)}"
    for i, m in enumerate(root.walk()):
        p = m.payload
        if p is None or p.codec is not None or _fastlib.ext_lookup(_REGISTRY, m.kind) is not None:
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
            _writer(want)([].append, p.record, _lazy_from({id(t): p.buffer for t in p.tensors()}), e)
        except MlfError as exc:
            return ConstraintError(f"{label} cannot be written in {where}: {exc.message}",
                                   field=at + (f".{exc.field}" if exc.field else ""))
    return None


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
        if self.row_ptr is None:
            return []
        return list(self.child_indices[self.row_ptr[index] : self.row_ptr[index + 1]])  # type: ignore[index]  # row_ptr and child_indices are present whenever an import tree is

    def root(self) -> Module:
        """The module graph the import tree describes, rooted at module 0. A legacy blob
        without an import tree gives what TVM's loader builds: a new ``_lib`` root that
        imports every module; one whose count is 0 but whose body goes on with a module entry
        (what 0.14-0.21 pack for a root without imports) gives that root module."""
        if self.unread_root is not None and self.unread_root.payload is not None:
            return Module(self.unread_root.kind, self.unread_root.payload)
        if self.row_ptr is None:
            return Module.lib(*self.modules())
        return self.modules()[0]

    def modules(self) -> list[Module]:
        """The module graph as :meth:`root` builds it, one node per entry in blob order
        (``modules()[0]`` is the root when there is an import tree): what
        ``build(root, order=modules)`` numbers as the blob did."""
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
        reverse = self.format == "ffi" or self.era >= (0, 8)
        for i, node in enumerate(nodes):
            row = self.imports_of(i)
            node.imports = [nodes[c] for c in (reversed(row) if reverse else row)]
            node._row_reversed = reverse
        return nodes

    def to_bytes(self) -> bytes:
        """The blob written back from what was read: identical to ``data``."""
        out: list[Any] = []
        lazy = _lazy_from({id(t): self.data for e in self.entries if e.payload is not None for t in e.payload.tensors()})
        if self.format == "ffi":
            _ffi.write_ffi_blob(out.append, self.record, lazy, self.era)
        else:
            _leg.write_legacy_blob(out.append, self.record, lazy, self.era)
        return b"".join(out)

    def __repr__(self) -> str:
        kinds = ", ".join(e.kind for e in self.entries)
        return f"Blob({self.format}, {self.symbol or 'raw'}, {len(self.data)} bytes, era {self.era_label}: [{kinds}])"


def _check_format(format: str) -> None:  # noqa: A002
    if format not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, got {format!r}")


def _era_of(era: str | tuple[int, ...] | None, format: str) -> tuple[int, ...]:  # noqa: A002
    if era is None:
        return LATEST if format == "ffi" else (0, 20)
    if isinstance(era, tuple):
        return tuple(int(x) for x in era[:2])
    if era == "latest":  # the conformance scope value for the newest grammar of the layout
        return LATEST
    return _versions.required(str(era))


def _candidates(layout: str, symbol: str) -> list[tuple[int, ...]]:
    """TVM versions whose grammar may have written a blob of ``layout`` under ``symbol``,
    most likely first."""
    if layout == "ffi":
        return [(0, 22), (0, 23)] if symbol == _locate.SYMBOL_FFI_V021 else [LATEST, (0, 23)]
    if symbol == _locate.SYMBOL_LEGACY:
        return [(0, 20), (0, 7)]
    if symbol == _locate.SYMBOL_FFI_V021:
        return [(0, 21)]
    return [(0, 20), (0, 21), (0, 7)]


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
        _check_format(format)
    layouts = [format] if format else _layouts(symbol)
    errors: list[MlfError] = []
    attempts: list[tuple[str, tuple[int, ...]]] = []
    for layout in layouts:
        eras = [_era_of(era, layout)] if era is not None else _candidates(layout, symbol)
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
            codec = _fastlib.ext_lookup(_REGISTRY, ent.kind)
            struct = None if codec is not None else _RECORD_STRUCT.get(type(ent.payload).__name__)
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
    codec = _fastlib.ext_lookup(_REGISTRY, ent.kind)
    struct = None if codec is not None else _RECORD_STRUCT.get(type(ent.payload).__name__)
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
    return [_parse_located(loc, label or "<bytes>", era, format) for loc in located]


def _parse_located(loc: _locate.LocatedBlob, label: str, era: Any, format: str | None) -> Blob:  # noqa: A002
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
        style = "current" if blob.format == "ffi" or blob.era >= (0, 14) else "legacy"
        if system_lib_prefix is None and blob.prefix and symbol is None:
            system_lib_prefix = blob.prefix  # found in a system library: register it like TVM does
    else:
        data = bytes(blob)
        sym = symbol or _locate.SYMBOL_FFI
        style = "current"
    text = _locate.c_source_for_blob(data, sym, system_lib_prefix, style)
    atomic_write_bytes(Path(path), text.encode("ascii"), overwrite=overwrite)
