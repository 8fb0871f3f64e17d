"""A small interpreter over the spec-as-data that the generator emits (``*_ir.py``).

It builds bytes from a value tree (filling constants, counts and derived sizes, and
optionally writing chosen fields wrong on purpose), and parses bytes into a value tree
with the byte span of every field. The fast readers are generated code; this engine
serves the places where generality matters more than speed: hypothesis strategies,
broken-input generation, annotated dumps and the docs' example hexdumps.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from mlf_spec.errors import ConstMismatchError, LengthError, TruncatedError, UnsupportedError

from .ir import Field, Struct

LATEST = (999, 0)
Path = tuple[Any, ...]


@dataclass(frozen=True)
class Span:
    """Where one field sits in the bytes."""

    path: Path
    offset: int
    size: int
    field: Field
    role: str  # "value" | "count" | "length" | "payload"


def path_str(path: Path) -> str:
    """('arrays', 0, 'magic') -> 'arrays[0].magic'."""
    out = ""
    for p in path:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            out += ("." if out else "") + str(p)
    return out


#: the struct code of each scalar type of the binary spec
SCALAR_FORMATS = {
    "u8": "B",
    "u16": "H",
    "u32": "I",
    "u64": "Q",
    "i8": "b",
    "i16": "h",
    "i32": "i",
    "i64": "q",
    "f32": "f",
    "f64": "d",
}


def count_sources(fields: tuple[Field, ...]) -> dict[str, str]:
    """Count field name -> the counted array it sizes (a count that is a plain field)."""
    return {f.count.text: f.name for f in fields if f.count is not None and f.count.text.isidentifier()}


class Builder:
    """Serialise value trees; ``overrides`` maps a path (or path + ('#count',)) to the
    value to write there instead of the right one."""

    def __init__(self, structs: dict[str, Struct], era: tuple[int, ...] = LATEST, overrides: dict | None = None) -> None:
        self.structs = structs
        self.era = era
        self.overrides = overrides or {}
        self.out = bytearray()
        self.occurrences: list[tuple[str, Path]] = []

    def build(self, name: str, tree: dict) -> bytes:
        self.struct(name, tree, ())
        return bytes(self.out)

    def emit(self, raw: bytes) -> None:
        """Append raw bytes."""
        self.out += raw

    def scalar(self, type_name: str, value: Any, path: Path) -> None:
        """Write a scalar (an override may be raw bytes)."""
        value = self.overrides.get(path, value)
        code = SCALAR_FORMATS[type_name]
        if isinstance(value, (bytes, bytearray)):
            self.out += value
        else:
            self.out += struct.pack("<" + code, value)

    def length(self, n: int, path: Path) -> None:
        """Write a u64 count or length (``path + ('#count',)`` overrides it)."""
        self.out += struct.pack("<Q", self.overrides.get(path + ("#count",), n))

    def value(self, type_name: str, value: Any, path: Path, f: Field) -> None:
        """Write one value of ``type_name`` (a scalar, ``str`` or a struct)."""
        if type_name in SCALAR_FORMATS:
            self.scalar(type_name, value, path)
        elif type_name == "str":
            raw = value.encode("utf-8", "surrogateescape") if isinstance(value, str) else bytes(value)
            raw = self.overrides.get(path, raw)
            self.length(len(raw), path)
            self.out += raw
        else:
            self.struct(type_name, value, path)

    def no_layout(self, f: Field, key: Any, path: Path) -> Exception:
        """The error of a switch with no case for ``key``."""
        return UnsupportedError(f"no layout for {f.name} = {key!r}", field=path_str(path))

    def struct(self, name: str, tree: dict, path: Path) -> dict:
        """Write struct ``name``, filling values the tree leaves out; its namespace."""
        fields = self.structs[name].fields
        self.occurrences.append((name, path))
        sources = count_sources(fields)
        ns: dict[str, Any] = dict(tree)
        for f in fields:  # fill values the caller left out
            n = f.name
            if ns.get(n) is not None:
                continue
            if f.const is not None:
                ns[n] = f.const
            elif f.canonical is not None:
                ns[n] = f.canonical
            elif n in sources:
                ns[n] = len(ns[sources[n]])
            elif f.equals is not None and not f.len_equals:
                ns[n] = f.equals(ns)
            elif f.derive is not None:
                ns[n] = f.derive(ns)
        for f in fields:
            fpath = path + (f.name,)
            if not f.present(ns, self.era):
                continue
            if f.sized:
                self._sized(f, ns, fpath)
                continue
            f.build(self, ns, fpath)
        return ns

    def _sized(self, f: Field, ns: dict, fpath: Path) -> None:
        """A sized field: its content, then the u64 length in front of it."""
        outer = self.out
        self.out = bytearray()
        try:
            f.build(self, ns, fpath)
            content = self.out
        finally:
            self.out = outer
        self.length(len(content), fpath)
        self.out += content

def build(
    structs: dict[str, Struct], name: str, tree: dict, era: tuple[int, ...] = LATEST, overrides: dict | None = None
) -> bytes:
    """Bytes of ``tree`` laid out as struct ``name``."""
    return Builder(structs, era, overrides).build(name, tree)


class Tracer:
    """Parse bytes into a value tree and the span of every field (valid input only needs
    to be fast enough for docs and dumps; malformed input raises MlfError)."""

    def __init__(self, structs: dict[str, Struct], buf: bytes, era: tuple[int, ...] = LATEST) -> None:
        self.structs, self.buf, self.era = structs, buf, era
        self.pos = 0
        self.end = len(buf)  # end of the region being read (a sized field narrows it)
        self.spans: list[Span] = []

    def take(self, n: int, path: Path) -> bytes:
        """The next ``n`` bytes of the region."""
        if n < 0 or n > self.end - self.pos:
            raise TruncatedError(
                f"needs {n} bytes, {self.end - self.pos} remain", field=path_str(path), offset=self.pos
            )
        b = self.buf[self.pos : self.pos + n]
        self.pos += n
        return b

    def span(self, path: Path, start: int, size: int, f: Field, role: str) -> None:
        """Record where a field's bytes sit."""
        self.spans.append(Span(path, start, size, f, role))

    def scalar(self, type_name: str, path: Path, f: Field, role: str = "value") -> Any:
        """Read a scalar."""
        code = SCALAR_FORMATS[type_name]
        size = struct.calcsize(code)
        start = self.pos
        (v,) = struct.unpack("<" + code, self.take(size, path))
        self.spans.append(Span(path, start, size, f, role))
        return v

    def elements(self, f: Field, path: Path) -> int:
        """Read a vec's or map's u64 element count, checked against what remains."""
        count = self.scalar("u64", path + ("#count",), f, "count")
        if count > self.end - self.pos:
            raise LengthError(f"{f.name} claims {count} elements", field=path_str(path), offset=self.pos - 8)
        return int(count)

    def no_layout(self, f: Field, key: Any, path: Path) -> Exception:
        """The error of a switch with no case for ``key``."""
        return UnsupportedError(f"no layout for {f.name} = {key!r}", field=path_str(path), offset=self.pos)

    def value(self, type_name: str, path: Path, f: Field) -> Any:
        """Read one value of ``type_name`` (a scalar, ``str`` or a struct)."""
        if type_name in SCALAR_FORMATS:
            return self.scalar(type_name, path, f)
        if type_name == "str":
            n = self.scalar("u64", path + ("#count",), f, "length")
            if n > self.end - self.pos:
                raise LengthError(f"string claims {n} bytes but {self.end - self.pos} remain", field=path_str(path),
                                  offset=self.pos - 8)
            start = self.pos
            raw = self.take(n, path)
            self.spans.append(Span(path, start, n, f, "payload"))
            return raw.decode("utf-8", "surrogateescape") if f.encoding else raw
        return self.struct(type_name, path)

    def struct(self, name: str, path: Path = ()) -> dict:
        """Read struct ``name``; its namespace (absent fields: None)."""
        ns: dict[str, Any] = {}
        for f in self.structs[name].fields:
            n = f.name
            fpath = path + (n,)
            if not f.present(ns, self.era):
                ns[n] = None
                continue
            if not f.sized:
                self._field(f, ns, fpath)
                continue
            size = self.scalar("u64", fpath + ("#count",), f, "length")
            if size > self.end - self.pos:
                raise LengthError(f"{n} claims {size} bytes", field=path_str(fpath), offset=self.pos - 8)
            outer, self.end = self.end, self.pos + size
            self._field(f, ns, fpath)
            if self.pos != self.end:
                raise LengthError(f"{n} ends {self.end - self.pos} bytes early", field=path_str(fpath), offset=self.pos)
            self.end = outer
        return ns

    def _field(self, f: Field, ns: dict, fpath: Path) -> None:
        n = f.name
        start = self.pos
        ns[n] = f.trace(self, ns, fpath)
        if f.const is not None:
            const = f.const.encode() if isinstance(f.const, str) and not f.encoding else f.const
            if ns[n] != const:
                raise ConstMismatchError(f"{n} is {_const_text(ns[n])}, expected {_const_text(const)}",
                                         field=path_str(fpath), offset=start)


def trace(structs: dict[str, Struct], name: str, buf: bytes, era: tuple[int, ...] = LATEST) -> tuple[dict, list[Span]]:
    """Parse ``buf`` as struct ``name``; return the value tree and the field spans."""
    t = Tracer(structs, buf, era)
    tree = t.struct(name)
    return tree, t.spans


def hexdump(buf: bytes, spans: list[Span], max_payload: int = 16) -> Iterator[str]:
    """Annotated hexdump lines: offset, bytes, field path."""
    for s in spans:
        chunk = buf[s.offset : s.offset + min(s.size, max_payload)]
        more = " …" if s.size > max_payload else ""
        label = path_str(s.path)
        if label.endswith(".#count"):
            label = label[: -len(".#count")] + (" (length)" if s.role == "length" else " (count)")
        yield f"{s.offset:06x}  {chunk.hex(' '):<48}{more}  {label}"


def _const_text(value: object) -> str:
    """A constant as messages spell it: integers in hex (as the generated readers say them), the rest as repr."""
    return f"{value:#x}" if isinstance(value, int) and not isinstance(value, bool) else repr(value)
