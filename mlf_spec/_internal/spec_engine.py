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

LATEST = (999, 0)
Path = tuple[Any, ...]


@dataclass(frozen=True)
class Span:
    """Where one field sits in the bytes."""

    path: Path
    offset: int
    size: int
    field: dict
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


def _present(f: dict, ns: dict, era: tuple[int, ...]) -> bool:
    if "since" in f and era < tuple(f["since"]):
        return False
    if "until" in f and era >= tuple(f["until"]):
        return False
    if "when" in f and not f["when"][1](ns):
        return False
    return True


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


def _count_sources(fields: list[dict]) -> dict[str, str]:
    out = {}
    for f in fields:
        if "count" in f and f["count"][0].isidentifier():
            out[f["count"][0]] = f["name"]
    return out


class Builder:
    """Serialise value trees; ``overrides`` maps a path (or path + ('#count',)) to the
    value to write there instead of the right one."""

    def __init__(self, structs: dict, era: tuple[int, ...] = LATEST, overrides: dict | None = None) -> None:
        self.structs = structs
        self.era = era
        self.overrides = overrides or {}
        self.out = bytearray()
        self.occurrences: list[tuple[str, Path]] = []

    def build(self, name: str, tree: dict) -> bytes:
        self.struct(name, tree, ())
        return bytes(self.out)

    def _scalar(self, type_name: str, value: Any, path: Path) -> None:
        value = self.overrides.get(path, value)
        code = SCALAR_FORMATS[type_name]
        if isinstance(value, (bytes, bytearray)):
            self.out += value
        else:
            self.out += struct.pack("<" + code, value)

    def _len(self, n: int, path: Path) -> None:
        self.out += struct.pack("<Q", self.overrides.get(path + ("#count",), n))

    def _value(self, type_name: str, value: Any, path: Path, f: dict) -> None:
        if type_name in SCALAR_FORMATS:
            self._scalar(type_name, value, path)
        elif type_name == "str":
            raw = value.encode("utf-8", "surrogateescape") if isinstance(value, str) else bytes(value)
            raw = self.overrides.get(path, raw)
            self._len(len(raw), path)
            self.out += raw
        else:
            self.struct(type_name, value, path)

    def struct(self, name: str, tree: dict, path: Path) -> dict:
        spec = self.structs[name]
        self.occurrences.append((name, path))
        fields = spec["fields"]
        sources = _count_sources(fields)
        ns: dict[str, Any] = dict(tree)
        for f in fields:  # fill values the caller left out
            n = f["name"]
            if ns.get(n) is not None:
                continue
            if "const" in f:
                ns[n] = f["const"]
            elif "canonical" in f:
                ns[n] = f["canonical"]
            elif n in sources:
                ns[n] = len(ns[sources[n]])
            elif "equals" in f and f["kind"] not in ("vec", "map"):
                ns[n] = f["equals"][1](ns)
            elif "derive" in f:
                ns[n] = f["derive"][1](ns)
        for f in fields:
            n = f["name"]
            fpath = path + (n,)
            if not _present(f, ns, self.era):
                continue
            if f.get("sized"):
                self._sized(f, ns, fpath)
                continue
            self._field(f, ns, fpath)
        return ns

    def _sized(self, f: dict, ns: dict, fpath: Path) -> None:
        """A sized field: its content, then the u64 length in front of it."""
        outer = self.out
        self.out = bytearray()
        try:
            self._field(f, ns, fpath)
            content = self.out
        finally:
            self.out = outer
        self._len(len(content), fpath)
        self.out += content

    def _field(self, f: dict, ns: dict, fpath: Path) -> None:
        n = f["name"]
        value = ns.get(n)
        kind = f["kind"]
        if kind == "switch":
            key = f["switch_on"](ns)
            type_name = f["switch"]["cases"].get(key, f["switch"]["default"])
            if type_name is None:
                raise UnsupportedError(f"no layout for {n} = {key!r}", field=path_str(fpath))
            self._value(type_name, value, fpath, f)
        elif "count" in f:
            for i, v in enumerate(value):
                self._value(f["type"], v, fpath + (i,), f)
        elif kind == "scalar":
            self._scalar(f["type"], value, fpath)
        elif kind == "str":
            self._value("str", value, fpath, f)
        elif kind == "bytes":
            raw = bytes.fromhex(value) if isinstance(value, str) else bytes(value)
            self.out += self.overrides.get(fpath, raw)
        elif kind == "vec":
            self._len(len(value), fpath)
            for i, v in enumerate(value):
                self._value(f["elem"], v, fpath + (i,), f)
        elif kind == "map":
            self._len(len(value), fpath)
            for i, (k, v) in enumerate(value):
                self._value(f["key"], k, fpath + (i, "key"), f)
                self._value(f["value"], v, fpath + (i, "value"), f)
        elif kind == "struct":
            ns[n] = self.struct(f["struct"], value, fpath)

def build(
    structs: dict, name: str, tree: dict, era: tuple[int, ...] = LATEST, overrides: dict | None = None
) -> bytes:
    """Bytes of ``tree`` laid out as struct ``name``."""
    return Builder(structs, era, overrides).build(name, tree)


class Tracer:
    """Parse bytes into a value tree and the span of every field (valid input only needs
    to be fast enough for docs and dumps; malformed input raises MlfError)."""

    def __init__(self, structs: dict, buf: bytes, era: tuple[int, ...] = LATEST) -> None:
        self.structs, self.buf, self.era = structs, buf, era
        self.pos = 0
        self.end = len(buf)  # end of the region being read (a sized field narrows it)
        self.spans: list[Span] = []

    def _take(self, n: int, path: Path) -> bytes:
        if n < 0 or n > self.end - self.pos:
            raise TruncatedError(
                f"needs {n} bytes, {self.end - self.pos} remain", field=path_str(path), offset=self.pos
            )
        b = self.buf[self.pos : self.pos + n]
        self.pos += n
        return b

    def _scalar(self, type_name: str, path: Path, f: dict, role: str = "value") -> Any:
        code = SCALAR_FORMATS[type_name]
        size = struct.calcsize(code)
        start = self.pos
        (v,) = struct.unpack("<" + code, self._take(size, path))
        self.spans.append(Span(path, start, size, f, role))
        return v

    def _value(self, type_name: str, path: Path, f: dict) -> Any:
        if type_name in SCALAR_FORMATS:
            return self._scalar(type_name, path, f)
        if type_name == "str":
            n = self._scalar("u64", path + ("#count",), f, "length")
            if n > self.end - self.pos:
                raise LengthError(f"string claims {n} bytes but {self.end - self.pos} remain", field=path_str(path),
                                  offset=self.pos - 8)
            start = self.pos
            raw = self._take(n, path)
            self.spans.append(Span(path, start, n, f, "payload"))
            return raw.decode("utf-8", "surrogateescape") if f.get("encoding") else raw
        return self.struct(type_name, path)

    def struct(self, name: str, path: Path = ()) -> dict:
        spec = self.structs[name]
        ns: dict[str, Any] = {}
        for f in spec["fields"]:
            n = f["name"]
            fpath = path + (n,)
            if not _present(f, ns, self.era):
                ns[n] = None
                continue
            if not f.get("sized"):
                self._field(f, ns, fpath)
                continue
            size = self._scalar("u64", fpath + ("#count",), f, "length")
            if size > self.end - self.pos:
                raise LengthError(f"{n} claims {size} bytes", field=path_str(fpath), offset=self.pos - 8)
            outer, self.end = self.end, self.pos + size
            self._field(f, ns, fpath)
            if self.pos != self.end:
                raise LengthError(f"{n} ends {self.end - self.pos} bytes early", field=path_str(fpath), offset=self.pos)
            self.end = outer
        return ns

    def _field(self, f: dict, ns: dict, fpath: Path) -> None:
        n = f["name"]
        kind = f["kind"]
        start = self.pos
        if kind == "switch":
            key = f["switch_on"](ns)
            type_name = f["switch"]["cases"].get(key, f["switch"]["default"])
            if type_name is None:
                raise UnsupportedError(f"no layout for {n} = {key!r}", field=path_str(fpath), offset=self.pos)
            ns[n] = self._value(type_name, fpath, f)
        elif "count" in f:
            count = f["count"][1](ns)
            ns[n] = [self._value(f["type"], fpath + (i,), f) for i in range(count)]
        elif kind == "scalar":
            ns[n] = self._scalar(f["type"], fpath, f)
        elif kind == "str":
            ns[n] = self._value("str", fpath, f)
        elif kind == "bytes":
            size = f["size"][1](ns, remaining=self.end - self.pos) if "remaining" in f["size"][0] else f["size"][1](ns)
            ns[n] = self._take(size, fpath)
            self.spans.append(Span(fpath, start, size, f, "payload"))
        elif kind in ("vec", "map"):
            count = self._scalar("u64", fpath + ("#count",), f, "count")
            if count > self.end - self.pos:
                raise LengthError(f"{n} claims {count} elements", field=path_str(fpath), offset=self.pos - 8)
            if kind == "vec":
                ns[n] = [self._value(f["elem"], fpath + (i,), f) for i in range(count)]
            else:
                ns[n] = [
                    (
                        self._value(f["key"], fpath + (i, "key"), f),
                        self._value(f["value"], fpath + (i, "value"), f),
                    )
                    for i in range(count)
                ]
        elif kind == "struct":
            ns[n] = self.struct(f["struct"], fpath)
        if "const" in f:
            const = f["const"].encode() if isinstance(f["const"], str) and not f.get("encoding") else f["const"]
            if ns[n] != const:
                raise ConstMismatchError(f"{n} is {_const_text(ns[n])}, expected {_const_text(const)}",
                                         field=path_str(fpath), offset=start)


def trace(structs: dict, name: str, buf: bytes, era: tuple[int, ...] = LATEST) -> tuple[dict, list[Span]]:
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
