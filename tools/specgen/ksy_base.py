"""The Kaitai back end's vocabulary: its names and identifiers, the record of what became of each
rule (:class:`Rule`), YAML output, the shared ``tvm_stream.ksy``, and :class:`Checks` (the
``valid`` conditions collected for one entry). Used by :mod:`specgen.ksy_expr`,
:mod:`specgen.emit_kaitai` and the field kinds' Kaitai forms (:mod:`specgen.fields`)."""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from .model import Binary, RField, RStruct

PREFIX = "tvm_"
STREAM = "tvm_stream"
ERA = "tvm_minor"
KS_VERSION = "0.11"
JS_SAFE = 2**53 - 1

KSY_SCALAR = {"u8": "u1", "u16": "u2", "u32": "u4", "u64": "u8", "i8": "s1", "i16": "s2", "i32": "s4",
              "i64": "s8", "f32": "f4", "f64": "f8"}
# Names that break a target: Python keywords (the generated Python is a SyntaxError), words of
# Kaitai's expression language, built-in type names (a user type named u8 is silently ignored)
# and classes of the runtimes.
_BUILTIN_TYPES = ({f"{s}{n}" for s in "us" for n in (1, 2, 4, 8)} | {f"{s}{n}{e}" for s in "us" for n in (2, 4, 8)
                  for e in ("le", "be")} | {"f4", "f8", "f4le", "f4be", "f8le", "f8be", "str", "strz", "bytes"}
                  | {f"b{n}" for n in range(1, 65)})
RESERVED = (set(keyword.kwlist) | set(keyword.softkwlist) | {"true", "false", "not", "and", "or", "io", "root",
            "parent", "kaitai_struct", "kaitai_stream", "struct", "enum"} | _BUILTIN_TYPES)


class KsyError(ValueError):
    """The spec uses something this back end cannot translate at all."""


class Untranslatable(Exception):
    """An expression Kaitai's expression language cannot state (the reason is the message)."""


@dataclass
class Rule:
    """What one rule of the spec became in the .ksy: ``status`` is ``yes`` (the generated parser
    enforces it), ``partly`` or ``no``; ``how`` says how, or why not."""

    spec: str  # spec name
    struct: str
    where: str  # field name or "rule <invariant>"
    rule: str
    status: str
    how: str

    def line(self) -> str:
        what = "checked only in part" if self.status == "partly" else "not checked"
        return f"`{self.struct}.{self.where}`: `{self.rule}` {what}: {self.how}"


def ksy_id(name: str) -> str:
    """The Kaitai id of a spec name (Python keywords and built-in names get a trailing _)."""
    if not re.match(r"^[a-z][a-z0-9_]*$", name):
        raise KsyError(f"{name!r} is not a valid Kaitai identifier (^[a-z][a-z0-9_]*$)")
    return name + "_" if name in RESERVED else name


def file_id(spec_name: str) -> str:
    """meta.id (and file name without .ksy) of a binary spec."""
    return PREFIX + spec_name


def lower_camel(name: str) -> str:
    parts = name.split("_")
    return parts[0] + "".join(p[:1].upper() + p[1:] for p in parts[1:])


def upper_camel(name: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in name.split("_"))


def check_collisions(names: list[str], where: str, transform: Any) -> None:
    """Kaitai's JavaScript output silently merges ids equal after case conversion."""
    seen: dict[str, str] = {}
    for n in names:
        t = transform(n)
        if t in seen and seen[t] != n:
            raise KsyError(f"{where}: ids {seen[t]!r} and {n!r} are both {t!r} in JavaScript")
        seen[t] = n


def clean_doc(text: str) -> str:
    """A doc text that every target can paste: Kaitai copies docs verbatim into Python
    docstrings and JavaScript comments."""
    text = " ".join(text.split())
    text = text.replace("\\", "\\\\").replace('"""', '" " "').replace("*/", "* /")
    if text.endswith('"'):
        text += "."
    return text


def lit_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def bytes_lit(value: int, size: int = 8) -> str:
    return "[" + ", ".join(f"0x{b:02x}" for b in (value % (1 << (8 * size))).to_bytes(size, "little")) + "]"


class HexInt(int):
    """An int written in hex in the .ksy (magic bytes)."""


def _hex_repr(dumper: yaml.SafeDumper, value: HexInt) -> yaml.Node:
    return dumper.represent_scalar("tag:yaml.org,2002:int", f"0x{int(value):02x}")


class FlowList(list):
    """A list written on one line in the .ksy (magic bytes)."""


def _flow_repr(dumper: yaml.SafeDumper, value: FlowList) -> yaml.Node:
    return dumper.represent_sequence("tag:yaml.org,2002:seq", value, flow_style=True)


class _Dumper(yaml.SafeDumper):
    pass


_Dumper.add_representer(HexInt, _hex_repr)
_Dumper.add_representer(FlowList, _flow_repr)


def ksy_text(obj: dict[str, Any], comment: str) -> str:
    """The YAML text of a .ksy object (key order kept, deterministic)."""
    body = yaml.dump(obj, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=110, default_flow_style=False)
    return comment + body


def plain(obj: Any) -> Any:
    """The object without HexInt (for JSON)."""
    if isinstance(obj, dict):
        return {str(k): plain(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [plain(v) for v in obj]
    if isinstance(obj, HexInt):
        return int(obj)
    return obj


# --------------------------------------------------------------------------------------------
# tvm_stream.ksy


def stream_ksy() -> dict[str, Any]:
    """The primitives every other file imports."""
    return {
        "meta": {"id": STREAM, "title": "Length-prefixed strings of TVM's binary streams", "ks-version": KS_VERSION,
                 "endian": "le"},
        "doc": clean_doc(
            "TVM writes a std::string, ffi::String or ffi::Bytes as a u64 byte length followed by the bytes, and "
            "a vector as a u64 element count followed by the elements; all integers little-endian, nothing "
            "padded. Vectors are written inline by the other files (num_<x>, then <x> repeated); strings need a "
            "type because each has its own length. Plus helpers for rules Kaitai has no operator for."),
        "types": {
            "lp_str": {
                "doc": clean_doc("A string of text: u64 length, then the bytes. `value` decodes them as UTF-8 "
                                 "when it is read (TVM never validates the bytes, so a parse does not depend on "
                                 "it); `raw` keeps them."),
                "seq": [
                    {"id": "len_value", "type": "u8", "valid": {"max": REMAINING}, "-mlf-error": "LengthError",
                     "doc": "Byte length (at most the bytes left)."},
                    {"id": "raw", "size": "len_value", "doc": "The bytes, as stored."},
                ],
                "instances": {"value": {"value": 'raw.to_s("UTF-8")', "doc": "The bytes decoded as UTF-8."}},
            },
            "lp_bytes": {
                "doc": "A byte string (binary payloads, source text of no fixed encoding): u64 length, then the bytes.",
                "seq": [
                    {"id": "len_value", "type": "u8", "valid": {"max": REMAINING}, "-mlf-error": "LengthError",
                     "doc": "Byte length (at most the bytes left)."},
                    {"id": "value", "size": "len_value", "doc": "The bytes."},
                ],
            },
            "lp_version": {
                "doc": clean_doc("A TVM version string such as 0.16.dev0 (lp_str with the numbers parsed, for "
                                 "rules that depend on the writer's version)."),
                "seq": [
                    {"id": "len_value", "type": "u8", "valid": {"max": REMAINING}, "-mlf-error": "LengthError",
                     "doc": "Byte length (at most the bytes left)."},
                    {"id": "parts", "size": "len_value", "type": "version_parts", "doc": "The string, split at dots."},
                ],
                "instances": {
                    "raw": {"value": "parts.raw", "doc": "The bytes, as stored."},
                    "value": {"value": "parts.text", "doc": "The string."},
                    "major": {"value": "parts.major", "doc": "The number before the first dot."},
                    "minor": {"value": "parts.minor", "doc": "The number after it."},
                },
            },
            "version_parts": {
                "doc": "The digits of a version string up to its first two dots.",
                "seq": [
                    {"id": "major_digits", "type": "str", "encoding": "ASCII", "terminator": HexInt(0x2E),
                     "eos-error": False, "doc": "Up to the first dot."},
                    {"id": "minor_digits", "type": "str", "encoding": "ASCII", "terminator": HexInt(0x2E),
                     "eos-error": False, "doc": "Up to the second dot (or the end)."},
                    {"id": "rest", "size-eos": True, "doc": "Whatever follows (e.g. dev0)."},
                ],
                "instances": {
                    "raw": {"pos": 0, "size-eos": True, "doc": "The whole string."},
                    "text": {"pos": 0, "size-eos": True, "type": "str", "encoding": "UTF-8", "doc": "The whole string."},
                    "major": {"value": "major_digits.to_i"},
                    "minor": {"value": "minor_digits.to_i"},
                },
            },
            "product_step": {
                "doc": clean_doc("One step of a running product (Kaitai has no reduction over an array): a "
                                 "zero-byte element whose value is prev * factor."),
                "params": [{"id": "prev", "type": "s8"}, {"id": "factor", "type": "s8"}],
                "instances": {"value": {"value": "prev * factor"}},
            },
            "unsupported": {
                "doc": clean_doc("The case of a switch whose value has no layout: reading it fails (without it "
                                 "Kaitai would read nothing and go on with the next field)."),
                "seq": [{"id": "no_layout_for_this_value", "size": 0, "valid": {"expr": "false"},
                         "-mlf-error": "UnsupportedError",
                         "doc": "Always fails."}],
            },
        },
    }


# --------------------------------------------------------------------------------------------
# Expressions


class Checks:
    """The conditions on one value; ``valid()`` is the most specific Kaitai ``valid`` form
    (``eq``, ``min``/``max``, ``any-of`` for a single condition that has one, else ``expr``)."""

    def __init__(self) -> None:
        self.items: list[tuple[str, dict[str, Any] | None]] = []
        self.errors: list[str] = []

    def add(self, cond: str, form: dict[str, Any] | None = None, error: str = "ConstraintError") -> None:
        """A condition; ``error`` is the mlf_spec.errors class mlf-spec raises when it fails."""
        self.items.append((cond, form))
        self.errors.append(error)

    def apply(self, entry: dict[str, Any]) -> None:
        """Put ``valid`` on a seq entry, if there are conditions, and ``-mlf-error``: the error
        class, or per key of the form (``{min: ConstraintError, max: LengthError}``)."""
        if not self.items:
            return
        entry["valid"] = self.valid()
        keys = [list(form) if form else ["expr"] for _c, form in self.items]
        if len(self.items) > 1 and "expr" not in entry["valid"] and len(set(self.errors)) > 1:
            entry["-mlf-error"] = {k: err for ks, err in zip(keys, self.errors) for k in ks}
        else:
            entry["-mlf-error"] = self.errors[0]

    def __bool__(self) -> bool:
        return bool(self.items)

    def valid(self) -> dict[str, Any]:
        forms = [form for _c, form in self.items]
        if len(forms) == 1 and forms[0]:
            return forms[0]
        bounds = [f for f in forms if f and set(f) <= {"min", "max"}]
        if len(bounds) == len(forms) and sum(len(f) for f in bounds) == len({k for f in bounds for k in f}):
            return {k: v for f in bounds for k, v in f.items()}  # e.g. {min: 1, max: bytes left}
        return {"expr": " and ".join(c for c, _ in self.items)}


#: The bytes left in the stream being read: a length or count read from the input is checked
#: against it before anything is read (JavaScript's readBytes wraps sizes from 2^31 on).
REMAINING = "_io.size - _io.pos"


def length_guard(checks: Checks, unit: int = 1) -> None:
    """The element count (``unit``: the fewest bytes of one element) or byte length must fit."""
    if unit <= 0:
        return
    limit = REMAINING if unit == 1 else f"({REMAINING}) / {unit}"
    checks.add(f"_ <= {limit}", {"max": limit}, "LengthError")


def bounds_form(bounds: tuple[int | None, int | None]) -> dict[str, Any] | None:
    lo, hi = bounds
    if lo is not None and lo == hi:
        return {"eq": lo}
    out: dict[str, Any] = {}
    if lo is not None:
        out["min"] = lo
    if hi is not None:
        out["max"] = hi
    return out or None


@dataclass
class KsyField:
    """One field on its way into a .ksy: what its entries share while the emitter and the field's
    kind build them (its id and ``if``, the doc as it grows, the checks on its value, on each
    element and on its count, the types it needs)."""

    b: Binary
    rs: RStruct
    f: RField
    scope: Any  # a ksy_expr.Scope; not imported, since ksy_expr builds on this module
    any_of: list[str] | None
    cond: str | None  # the `if:` of every entry
    doc: str
    needs: set[str] = field(default_factory=set)
    value_checks: Checks = field(default_factory=Checks)  # on the value (`_`)
    elem_checks: Checks = field(default_factory=Checks)  # on each element of a list
    count_checks: Checks = field(default_factory=Checks)  # on the count of a vec / map
    contents: list[HexInt] | None = None

    @property
    def fid(self) -> str:
        return ksy_id(self.f.name)

    @property
    def read_as_bytes(self) -> bool:
        """A u64 compared with values beyond 2^53: read as 8 bytes."""
        return self.f.name in self.scope.bytes_fields

    @property
    def inline_str(self) -> bool:
        """A string that selects a layout: read inline and decoded while parsing."""
        return (self.rs.name, self.f.name) in self.scope.selectors

    def entry(self, id_: str, **kw: Any) -> dict[str, Any]:
        """A seq entry of this field (with the field's ``if``)."""
        e: dict[str, Any] = {"id": id_}
        if id_ == self.fid and self.fid != self.f.name:
            e["-orig-id"] = self.f.name
        e.update(kw)
        if self.cond:
            e["if"] = self.cond
        return e
