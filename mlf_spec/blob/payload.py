"""Module payloads of the blob: :class:`Payload` (a module's typed record, read and written by
the generated grammars of spec/binary/payloads.yaml and vm.yaml), the payload grammars given at
run time (:func:`register_payload`, :func:`spec_payload`, :func:`construct_payload`) and
:func:`new_payload` / :func:`parse_payload`. Also the layouts' kind -> payload-struct switch
(spec/binary/blob_legacy.yaml, blob_ffi.yaml) the reader and the writer share."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from mlf_spec.errors import ConstraintError, MalformedError, MlfError, UnsupportedError
from mlf_spec.generated import blob_ffi_ir as _ffi_ir
from mlf_spec.generated import blob_legacy_fast as _leg
from mlf_spec.generated import blob_legacy_ir as _leg_ir
from mlf_spec.generated import payloads_fast as _payloads
from mlf_spec.generated import payloads_ir as _payloads_ir
from mlf_spec.generated import tensor_fast as _tensor
from mlf_spec.generated import vm_fast as _vm
from mlf_spec.generated._fastlib import EXTENSIONS, LATEST, Record, ext_lookup

from .eras import NEWEST_SINCE, era_of

FORMATS: tuple[str, ...] = ("legacy", "ffi")
LATEST: tuple[int, ...] = LATEST
LIB: str = _leg.LIB_KIND  # module kinds with a fixed meaning, from spec/binary/blob_legacy.yaml
IMPORT_TREE: str = _leg.IMPORT_TREE_KIND

# The spec as data: every struct a payload can use, and the kind -> payload-struct switch of
# each layout (spec/binary/blob_legacy.yaml, blob_ffi.yaml).
STRUCTS: dict[str, dict] = _payloads_ir.STRUCTS
_FAST_MODULES = (_payloads, _vm, _tensor)
RECORD_STRUCT: dict[str, str] = {spec["record"]: name for name, spec in STRUCTS.items()}


def _payload_switch(ir: Any, struct: str) -> dict:
    return next(f for f in ir.STRUCTS[struct]["fields"] if f["name"] == "payload")["switch"]


SWITCH = {"ffi": _payload_switch(_ffi_ir, "ffi_module"), "legacy": _payload_switch(_leg_ir, "legacy_entry")}
REGISTRY: str = SWITCH["ffi"]["extensible"]


def known_kinds(format: str = "ffi") -> dict[str, str]:  # noqa: A002
    """Module kind -> name of its payload struct in the spec, for ``format``."""
    check_format(format)
    return {str(k): v for k, v in SWITCH[format]["cases"].items() if k != IMPORT_TREE}


def check_format(format: str) -> None:  # noqa: A002
    if format not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, got {format!r}")



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
        e = era_of(era, "ffi")
        if self.codec is not None:
            self.codec.write(out.append, self.record, e)
        elif self.struct is not None:
            writer_of(self.struct)(out.append, self.record, lazy_from({id(t): self.buffer for t in self.tensors()}), e)
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
    EXTENSIONS.setdefault(REGISTRY, {})[kind] = _SafeCodec(kind, codec)


def unregister_payload(kind: str) -> None:
    """Forget the grammar registered for ``kind`` (no error if there is none)."""
    EXTENSIONS.get(REGISTRY, {}).pop(kind, None)


@contextlib.contextmanager
def payload_registered(kind: str, codec: PayloadCodec) -> Iterator[None]:
    """Context manager: ``codec`` is registered for ``kind`` inside the block only."""
    previous = EXTENSIONS.get(REGISTRY, {}).get(kind)
    register_payload(kind, codec)
    try:
        yield
    finally:
        if previous is None:
            unregister_payload(kind)
        else:
            EXTENSIONS[REGISTRY][kind] = previous


class _SpecCodec:
    def __init__(self, struct: str) -> None:
        self.struct = struct
        self._read = reader_of(struct)
        self._write = writer_of(struct)

    def read(self, buf: Any, pos: int, end: int, era: tuple[int, ...]) -> tuple[Any, int]:
        return self._read(buf, pos, end, era)

    def write(self, append: Callable[[Any], Any], value: Any, era: tuple[int, ...]) -> None:
        self._write(append, value, None, era)


def spec_payload(struct: str) -> PayloadCodec:
    """A codec for one payload struct of the spec (e.g. ``"opencl_spirv"``, the SPIR-V form
    of an opencl payload, which nothing in the bytes tells from the default one)."""
    if struct not in STRUCTS:
        raise ValueError(f"unknown payload struct {struct!r}; known: {sorted(STRUCTS)}")
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


def reader_of(struct: str) -> Callable[..., Any]:
    return getattr(_module_of(struct), f"read_{struct}")


def writer_of(struct: str) -> Callable[..., Any]:
    return getattr(_module_of(struct), f"write_{struct}")


def _walk_records(value: Any) -> Iterator[Any]:
    """Every record inside ``value`` (records are tuples; lists hold elements)."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, Record):
            yield v
            stack.extend(reversed([x for x in v if isinstance(x, (tuple, list))]))
        elif isinstance(v, (list, tuple)):
            stack.extend(reversed([x for x in v if isinstance(x, (tuple, list))]))


def lazy_from(buffers: Mapping[int, Any]) -> Callable[[str, Any], Any]:
    def lazy(_field: str, rec: Any) -> Any:
        return memoryview(buffers[id(rec)])[rec.data_offset : rec.data_offset + rec.data_byte_size]

    return lazy


def _function_names(struct: str, rec: Any) -> list[str]:
    """Function names of a payload record, from the fields the spec marks with role
    function_names (a map's keys, a vec<str>, a str, or the `name` of vec<struct> elements)."""
    out: list[str] = []
    spec = STRUCTS.get(struct)
    if spec is None or rec is None:
        return out
    for f in spec["fields"]:
        value = getattr(rec, f["name"], None)
        if value is None:
            continue
        if f.get("role") == "function_names":
            if f["kind"] == "map":
                out.extend(_text(k) for k, _ in value)
            elif f["kind"] == "vec" and f["elem"] in STRUCTS:
                names = [g["name"] for g in STRUCTS[f["elem"]]["fields"] if g.get("role") == "name"]
                if names:
                    out.extend(_text(getattr(e, names[0])) for e in value)
            elif f["kind"] == "vec":
                out.extend(_text(v) for v in value)
            else:
                out.append(_text(value))
        elif f["kind"] in ("struct", "switch") and isinstance(value, Record):
            out.extend(_function_names(RECORD_STRUCT.get(type(value).__name__, ""), value))
    return out


def _text(v: Any) -> str:
    return v if isinstance(v, str) else bytes(v).decode("utf-8", "surrogateescape")


def new_payload(kind: str, *, format: str = "ffi", era: str | tuple[int, ...] | None = None,  # noqa: A002
                **fields: Any) -> Payload:
    """A payload of ``kind`` from field values (names as in the spec's payload struct for
    that kind; see generated/docs/payloads.md). Counts, lengths and constants are filled in;
    nested structs can be dicts, maps lists of pairs or dicts, and tensors NumPy arrays or
    :class:`mlf_spec.params.StoredTensor` values (stored in the dtype numbering of ``era``)."""
    check_format(format)
    e = era_of(era, format)
    switch = SWITCH[format]
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
    check_format(format)
    e = era_of(era, format)
    data = bytes(data)
    codec = ext_lookup(REGISTRY, kind)
    switch = SWITCH[format]
    struct = None if codec is not None else switch["cases"].get(kind, switch["default"])
    if codec is not None:
        read = codec.read
    elif struct is not None and kind not in (LIB, IMPORT_TREE):
        read = reader_of(struct)
    else:
        raise UnsupportedError(f"no payload grammar for kind {kind!r} in the {format} layout", field="payload", offset=0)
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
        if isinstance(values, Record):
            return values
        spec = STRUCTS[struct]
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
            if f["kind"] == "struct" and STRUCTS[f["struct"]]["inline"] and not _nested(f):
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
        if type_name in STRUCTS:
            return self.make(type_name, v)
        return v

    def tensor(self, value: Any) -> Any:
        if isinstance(value, _tensor.TensorRecord):
            raise TypeError("give tensors as NumPy arrays or StoredTensor values, not records")
        from mlf_spec.params import codec as _params

        dialect = None if self.era >= NEWEST_SINCE else f"{self.era[0]}.{self.era[1]}"
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

