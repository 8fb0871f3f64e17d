"""Emit Kaitai Struct specs (.ksy) of the binary formats, from the IR only.

One ``tvm_<spec>.ksy`` per binary spec plus ``tvm_stream.ksy`` (the length-prefixed strings of
TVM's stream conventions and two zero-byte helpers). A spec with exactly one root struct has it
as the file's top-level type; the other specs are libraries of nested types. Every struct is
a type, every field one or more ``seq`` entries:

* ``str`` -> ``tvm_stream::lp_str`` (``len_value``, ``raw``, decoded ``value``; decoding is
  lazy, so bytes that are not UTF-8 never stop a parse: TVM does not validate them either) or
  ``lp_bytes``; ``vec``/``map`` -> ``num_<x>`` (u8) + ``<x>`` repeated; ``count`` -> ``repeat-expr``;
  ``size`` -> ``size`` (``remaining()`` -> ``size-eos``); ``sized`` -> ``len_<x>`` + ``<x>`` in a
  substream + a zero-byte ``<x>_fully_read`` check (``_io.eof``).
* ``since``/``until`` -> ``if:`` on the parameter ``tvm_minor`` (the minor of the producing TVM
  0.<minor>), threaded explicitly through every type that needs it (``_root`` of a type used
  from another file is null in the generated Python).
* ``const`` -> ``valid`` (or ``contents`` bytes for values above 2^53: JavaScript reads u8 as a
  double); ``equals``/``derive`` -> ``valid: {eq}``; ``constraint`` -> ``valid`` on the field, on
  its count or on each element (``_index`` for ``row_ptr[0]`` and ``nondecreasing``); error
  invariants -> zero-byte check fields; ``numel`` -> a zero-byte running product; a switch
  without default -> a failing ``_`` case (Kaitai otherwise skips silently) and, where the
  selector is a string field, ``valid: any-of`` over the known values; ``table`` -> one enum
  per dialect of the table plus TVM's spelling as a value instance.

What became of every rule is recorded as a :class:`Rule`; what Kaitai cannot state is written
into the types' docs and the reference page ``docs/kaitai.md`` instead of being dropped silently.
"""

from __future__ import annotations

import ast
import keyword
import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from .common import element_min_size, header
from .expr import Expr, _dotted
from .model import Binary, Model, RField, RStruct, table_dialects
from .versions import era_condition, vkey

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


def _lit_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _bytes_lit(value: int, size: int = 8) -> str:
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


@dataclass
class Scope:
    """What names mean while translating the expressions of one struct."""

    struct: RStruct
    consts: dict[str, int | str]
    subject: str | None = None  # the field being validated: its name becomes `_`
    element: bool = False  # validating one element of `subject` (each -> `_`)
    count_level: bool = False  # validating the count of `subject` (len(subject) -> `_`)
    bytes_fields: set[str] = field(default_factory=set)  # u64 fields read as 8 bytes
    versions: set[str] = field(default_factory=set)  # str fields read as lp_version
    helpers: dict[str, str] = field(default_factory=dict)  # numel(x) -> instance name
    selectors: set[tuple[str, str]] = field(default_factory=set)  # (struct, field): str read inline


def _field_of(rs: RStruct, name: str) -> RField | None:
    for f in rs.fields:
        if f.name == name:
            return f
    return None


class Translator:
    """Translate one checked spec expression into Kaitai's expression language."""

    def __init__(self, scope: Scope) -> None:
        self.s = scope

    def __call__(self, e: Expr) -> str:
        return self.node(e.tree.body)

    # names ------------------------------------------------------------------------------
    def resolve(self, dotted: str) -> tuple[str, RField | None]:
        """Kaitai path of a dotted spec name and the field it ends at (None for constants)."""
        parts = dotted.split(".")
        if parts[0] == "each":
            if not self.s.element:
                raise Untranslatable("`each` outside an element rule")
            return "_", None
        rs: RStruct | None = self.s.struct
        out: list[str] = []
        f: RField | None = None
        self.last_inline = False
        for i, p in enumerate(parts):
            if rs is None:
                raise Untranslatable(f"{dotted}: {parts[i - 1]} is not a struct")
            f = _field_of(rs, p)
            if f is None:
                raise Untranslatable(f"unknown name {dotted}")
            self.last_inline = (rs.name, p) in self.s.selectors
            if i == 0 and p == self.s.subject and not self.s.element:
                out.append("_")
            else:
                out.append(ksy_id(p))
            rs = f.struct if f.kind == "struct" else None
        return ".".join(out), f

    def value_of(self, node: ast.AST) -> str:
        dotted = _dotted(node)
        assert dotted is not None
        if dotted in self.s.consts:
            v = self.s.consts[dotted]
            return _lit_str(v) if isinstance(v, str) else self.int_lit(v)
        path, f = self.resolve(dotted)
        if f is None:
            return path
        if f.kind == "str":
            return path if self.last_inline else f"{path}.value"
        if f.kind == "scalar" and f.name in self.s.bytes_fields and path.split(".")[0] != "_":
            return path
        if self.s.element and path.split(".")[0] == "_" and f.name == self.s.subject:
            return "_"
        return path

    def int_lit(self, v: int) -> str:
        if abs(v) > JS_SAFE:
            raise Untranslatable(f"the integer {v:#x} is beyond 2^53 (JavaScript reads u8 as a double)")
        return str(v)

    # nodes ------------------------------------------------------------------------------
    def node(self, n: ast.AST) -> str:  # noqa: C901
        if isinstance(n, ast.BoolOp):
            op = " and " if isinstance(n.op, ast.And) else " or "
            return "(" + op.join(self.node(v) for v in n.values) + ")"
        if isinstance(n, ast.UnaryOp):
            if isinstance(n.op, ast.Not):
                return f"(not {self.node(n.operand)})"
            return f"(-{self.node(n.operand)})"
        if isinstance(n, ast.BinOp):
            ops = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "/", ast.Mod: "%", ast.BitAnd: "&",
                   ast.BitOr: "|", ast.LShift: "<<", ast.RShift: ">>"}
            return f"({self.node(n.left)} {ops[type(n.op)]} {self.node(n.right)})"
        if isinstance(n, ast.Compare):
            return self.compare(n)
        if isinstance(n, ast.Constant):
            if isinstance(n.value, bool) or not isinstance(n.value, (int, str)):
                raise Untranslatable(f"literal {n.value!r}")
            return _lit_str(n.value) if isinstance(n.value, str) else self.int_lit(n.value)
        if isinstance(n, (ast.Name, ast.Attribute)):
            if _dotted(n) is None:  # an attribute of a computed value: find_where(...).payload
                raise Untranslatable("a field of a computed record (find_where)")
            return self.value_of(n)
        if isinstance(n, ast.Subscript):
            return self.subscript(n)
        if isinstance(n, ast.Call):
            return self.call(n)
        raise Untranslatable(f"{type(n).__name__} has no Kaitai form")

    def compare(self, n: ast.Compare) -> str:
        items = [n.left, *n.comparators]
        parts = []
        for (a, b), op in zip(zip(items, items[1:]), n.ops):
            if isinstance(op, (ast.In, ast.NotIn)):
                if not isinstance(b, (ast.Tuple, ast.List)):
                    raise Untranslatable("`in` over something other than a literal tuple")
                eq = "==" if isinstance(op, ast.In) else "!="
                join = " or " if isinstance(op, ast.In) else " and "
                left = self.node(a) if not self.is_bytes(a) else self.value_of(a)
                alts = [f"{left} {eq} {self.operand(elt, a)}" for elt in b.elts]
                parts.append("(" + join.join(alts) + ")")
                continue
            sym = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}[type(op)]
            if self.is_bytes(a) or self.is_bytes(b):
                if sym not in ("==", "!="):
                    raise Untranslatable("ordering of a 64-bit value read as bytes")
                x, y = (a, b) if self.is_bytes(a) else (b, a)
                parts.append(f"{self.value_of(x)} {sym} {self.operand(y, x)}")
            else:
                parts.append(f"{self.node(a)} {sym} {self.node(b)}")
        return parts[0] if len(parts) == 1 else "(" + " and ".join(parts) + ")"

    def is_bytes(self, n: ast.AST) -> bool:
        d = _dotted(n)
        return d is not None and "." not in d and d in self.s.bytes_fields

    def operand(self, n: ast.AST, other: ast.AST) -> str:
        """``n`` compared with ``other``: an int constant becomes 8 bytes if ``other`` is read as bytes."""
        if self.is_bytes(other):
            v = _int_value(n, self.s.consts)
            if v is None:
                raise Untranslatable("a 64-bit value read as bytes compared with a non-constant")
            return _bytes_lit(v)
        return self.node(n)

    def subscript(self, n: ast.Subscript) -> str:
        base = _dotted(n.value)
        idx = _int_value(n.slice, {})
        if base is None or idx is None:
            raise Untranslatable("subscript")
        if self.s.element and base == self.s.subject:
            if idx != 0:
                raise Untranslatable("an element rule naming another element than the first")
            raise _FirstElement()
        path, f = self.resolve(base)
        if f is None or f.kind not in ("vec", "map") and not f.is_array:
            raise Untranslatable(f"subscript of {base}")
        if idx == -1:
            return f"{path}.last"
        if idx == 0:
            return f"{path}.first"
        if idx < 0:
            raise Untranslatable("negative subscripts other than -1")
        return f"{path}[{idx}]"

    def length(self, arg: ast.AST) -> str:
        d = _dotted(arg)
        if d is None:
            raise Untranslatable("len() of a computed value")
        if self.s.count_level and d == self.s.subject:
            return "_"
        path, f = self.resolve(d)
        assert f is not None
        if f.kind in ("vec", "map"):
            head, _, last = path.rpartition(".")
            if last == "_":
                raise Untranslatable("len() of the validated list inside its own rule")
            return f"{head + '.' if head else ''}num_{last}"
        if f.is_array:
            return f"{path}.size"
        if f.kind == "str" and self.last_inline:
            head, _, last = path.rpartition(".")
            if last == "_":
                raise Untranslatable("len() of the validated string inside its own rule")
            return f"{head + '.' if head else ''}len_{last}"
        if f.kind == "str":
            return f"{path}.len_value"
        if f.kind == "bytes":
            return f"{path}.size"
        raise Untranslatable(f"len() of {d}")

    def call(self, n: ast.Call) -> str:
        assert isinstance(n.func, ast.Name)
        fn, args = n.func.id, n.args
        if fn == "len":
            return self.length(args[0])
        if fn == "ceil_div":
            a, b = self.node(args[0]), args[1]
            bv = _int_value(b, self.s.consts)
            if bv is not None and bv > 0:
                return f"(({a} + {bv - 1}) / {bv})"
            return f"(-((-{a}) / {self.node(b)}))"
        if fn in ("min", "max") and len(args) == 1:  # of a list: Kaitai's array .min / .max
            return f"{self.node(args[0])}.{fn}"
        if fn in ("min", "max"):
            a, b = (self.node(x) for x in args)
            return f"({a} {'<' if fn == 'min' else '>'} {b} ? {a} : {b})"
        if fn == "numel":
            d = _dotted(args[0])
            if d is None or d not in self.s.helpers:
                raise Untranslatable("numel() of something other than an integer list of this struct")
            return self.s.helpers[d]
        if fn == "at_least":
            d = _dotted(args[0])
            if d is None or d not in self.s.versions:
                raise Untranslatable("at_least() of something other than a version string of this struct")
            path, _ = self.resolve(d)
            assert isinstance(args[1], ast.Constant)
            major, minor = vkey(args[1].value)[:2]
            return f"({path}.major > {major} or ({path}.major == {major} and {path}.minor >= {minor}))"
        if fn == "decimal":
            return f"{self.node(args[0])}.to_i"
        if fn == "nondecreasing":
            d = _dotted(args[0])
            if self.s.element and d == self.s.subject:
                raise _Nondecreasing()
            raise Untranslatable("nondecreasing() outside the list's own element rule")
        reasons = {
            "unique": "no set or reduction over an array in Kaitai expressions",
            "count_where": "no reduction over an array in Kaitai expressions (kaitai_struct#291)",
            "find_where": "no search over an array in Kaitai expressions",
            "find_last_where": "no search over an array in Kaitai expressions",
            "acyclic": "a graph walk needs a visited set and a loop; Kaitai expressions have neither",
            "remaining": "remaining() outside a size",
        }
        raise Untranslatable(reasons.get(fn, f"{fn}()"))


class _FirstElement(Exception):
    pass


class _Nondecreasing(Exception):
    pass




def _int_value(node: ast.AST, consts: dict[str, int | str]) -> int | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        v = _int_value(node.operand, consts)
        return -v if v is not None else None
    d = _dotted(node)
    if d is not None and isinstance(consts.get(d), int):
        return consts[d]  # type: ignore[return-value]
    return None


def _conjuncts(e: Expr) -> list[ast.AST]:
    body = e.tree.body
    if isinstance(body, ast.BoolOp) and isinstance(body.op, ast.And):
        return list(body.values)
    return [body]


def _names_in(node: ast.AST) -> set[str]:
    out: set[str] = set()
    for n in ast.walk(node):
        d = _dotted(n)
        if d is not None:
            out.add(d.split(".")[0])
    return out


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


def _length_guard(checks: Checks, unit: int = 1) -> None:
    """The element count (``unit``: the fewest bytes of one element) or byte length must fit."""
    if unit <= 0:
        return
    limit = REMAINING if unit == 1 else f"({REMAINING}) / {unit}"
    checks.add(f"_ <= {limit}", {"max": limit}, "LengthError")


def _bounds_form(bounds: tuple[int | None, int | None]) -> dict[str, Any] | None:
    lo, hi = bounds
    if lo is not None and lo == hi:
        return {"eq": lo}
    out: dict[str, Any] = {}
    if lo is not None:
        out["min"] = lo
    if hi is not None:
        out["max"] = hi
    return out or None


def _len_bounds(node: ast.AST, name: str) -> tuple[int | None, int | None] | None:
    """The bounds of ``len(name) OP literal`` chains (None for anything else)."""
    if not isinstance(node, ast.Compare) or not all(isinstance(op, (ast.Lt, ast.LtE, ast.Gt, ast.GtE)) for op in node.ops):
        return None
    items = []
    for item in [node.left, *node.comparators]:
        if (isinstance(item, ast.Call) and isinstance(item.func, ast.Name) and item.func.id == "len"
                and _dotted(item.args[0]) == name):
            items.append("n_")
        elif _int_value(item, {}) is not None:
            items.append(str(_int_value(item, {})))
        else:
            return None
    ops = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}
    src = items[0] + "".join(f" {ops[type(op)]} {x}" for op, x in zip(node.ops, items[1:]))
    return Expr(src).int_bounds("n_")


# --------------------------------------------------------------------------------------------
# The emitter


class KsyEmitter:
    """Builds every .ksy object of a model (``files``) and the list of what they cannot check (``gaps``)."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.rules: list[Rule] = []
        for era in model.boundaries():
            if vkey(era)[0] != 0:
                raise KsyError(f"era {era}: the Kaitai back end passes the TVM version as tvm_minor and only knows 0.x")
        self.structs: dict[tuple[str, str], RStruct] = {}
        for b in model.binaries.values():
            for rs in b.structs.values():
                self.structs[(rs.owner, rs.name)] = rs
        self.roots: dict[str, list[str]] = {
            b.name: [s.name for s in b.spec.structs if s.root] for b in model.binaries.values()}
        self.needs_era = self._era_closure()
        self._map_entries: dict[str, dict[str, Any]] = {}
        self.files: dict[str, dict[str, Any]] = {STREAM: stream_ksy()}
        for b in model.binaries.values():
            self.files[file_id(b.name)] = self.emit_binary(b)

    @property
    def gaps(self) -> list[Rule]:
        """The rules the .ksy does not state, or states in part."""
        return [r for r in self.rules if r.status != "yes"]

    def note(self, rs: RStruct, where: str, rule: str, status: str, how: str) -> None:
        self.rules.append(Rule(rs.owner, rs.name, where, rule, status, how))

    # analysis -----------------------------------------------------------------------------
    def _refs(self, rs: RStruct) -> list[RStruct]:
        out = []
        for f in rs.fields:
            for t in (f.struct, f.elem_struct, f.value_struct):
                if t is not None:
                    out.append(t)
            if f.spec.switch is not None:
                for t in list(f.spec.switch.cases.values()) + [f.spec.switch.default]:
                    if t:
                        target = self.find(rs.owner, t)
                        if target is not None:
                            out.append(target)
        return out

    def find(self, from_spec: str, name: str) -> RStruct | None:
        """The struct a name means in a spec (its own structs, then those of the specs it uses)."""
        b = self.model.binaries[from_spec]
        if name in b.structs:
            return b.structs[name]
        for used in b.spec.uses:
            if name in self.model.binaries[used].structs:
                return self.model.binaries[used].structs[name]
        return None

    def _era_closure(self) -> set[tuple[str, str]]:
        needs = {k for k, rs in self.structs.items()
                 if any(f.spec.since or f.spec.until or f.spec.table for f in rs.fields)}
        changed = True
        while changed:
            changed = False
            for k, rs in self.structs.items():
                if k not in needs and any((t.owner, t.name) in needs for t in self._refs(rs)):
                    needs.add(k)
                    changed = True
        return needs

    def era(self, rs: RStruct) -> bool:
        return (rs.owner, rs.name) in self.needs_era

    def is_top(self, rs: RStruct) -> bool:
        return self.roots[rs.owner] == [rs.name]

    def type_ref(self, rs: RStruct, from_spec: str) -> str:
        """How a file refers to a struct (with its era argument)."""
        if rs.owner == from_spec:
            base = file_id(rs.owner) if self.is_top(rs) else ksy_id(rs.name)
        else:
            base = file_id(rs.owner) if self.is_top(rs) else f"{file_id(rs.owner)}::{ksy_id(rs.name)}"
        return f"{base}({ERA})" if self.era(rs) else base

    def element_type(self, type_name: str, encoding: str | None, owner: RStruct, spec_name: str,
                     versions: bool = False) -> tuple[str, set[str]]:
        """The Kaitai type of one element (scalar, str or struct) and the files it needs."""
        if type_name in KSY_SCALAR:
            return KSY_SCALAR[type_name], set()
        if type_name == "str":
            t = "lp_version" if versions else ("lp_str" if encoding else "lp_bytes")
            return f"{STREAM}::{t}", {STREAM}
        target = self.find(spec_name, type_name)
        if target is None:
            raise KsyError(f"{owner.name}: unknown type {type_name!r}")
        return self.type_ref(target, spec_name), ({file_id(target.owner)} if target.owner != spec_name else set())

    # one spec file ------------------------------------------------------------------------
    def emit_binary(self, b: Binary) -> dict[str, Any]:
        spec = b.spec
        imports: set[str] = {STREAM}
        types: dict[str, Any] = {}
        enums: dict[str, Any] = {}
        top: dict[str, Any] | None = None
        consts: dict[str, int | str] = {}
        for used in spec.uses:
            consts.update({k.name: k.value for k in self.model.binaries[used].spec.constants})
        consts.update({k.name: k.value for k in spec.constants})
        for s in spec.structs:
            rs = b.structs[s.name]
            body, needs = self.emit_struct(b, rs, consts, enums)
            imports |= needs
            if self.is_top(rs):
                top = body
            else:
                types[ksy_id(rs.name)] = body
        entries = self._map_entries.pop(spec.name, {})
        for name, body in entries.items():
            types[name] = body
        imports.discard(file_id(spec.name))
        check_collisions(list(types), f"{file_id(spec.name)}.ksy types", upper_camel)
        check_collisions(list(enums), f"{file_id(spec.name)}.ksy enums", upper_camel)
        doc = spec.doc
        if top is None:
            doc += " This file is a library of types for the other .ksy files; it has no top-level layout."
        if any(self.era(b.structs[s.name]) for s in spec.structs):
            doc += (f" Types that take `{ERA}` read the bytes of TVM 0.<{ERA}>: the layout or the meaning of a "
                    "code changed between versions and nothing in the bytes says which one was written.")
        meta: dict[str, Any] = {"id": file_id(spec.name), "title": spec.title, "ks-version": KS_VERSION,
                                "endian": "le", "imports": sorted(imports)}
        if spec.name == "params":
            meta["file-extension"] = "params"
        meta["-mlf-spec"] = {"source": b.doc.rel, "sha256": self.model.digest(b.doc)}
        out: dict[str, Any] = {"meta": meta, "doc": clean_doc(doc)}
        if top is not None:
            tdoc = top.pop("doc")
            out["doc"] = clean_doc(doc + " The top-level type: " + tdoc)
            out.update(top)
        if types:
            out["types"] = types
        if enums:
            out["enums"] = enums
        return out

    def map_entry(self, b: Binary, rs: RStruct, f: RField) -> tuple[str, set[str]]:
        """The type of one key/value pair of a map field (deduplicated per file)."""
        key_t, n1 = self.element_type(f.key or "", f.spec.encoding, rs, b.name)
        val_t, n2 = self.element_type(f.value or "", f.spec.encoding, rs, b.name)
        short = {"lp_str": "str", "lp_bytes": "bytes"}

        def label(t: str) -> str:
            t = t.split("(")[0].split("::")[-1]
            return short.get(t, t.removeprefix(PREFIX))

        name = f"{label(key_t)}_to_{label(val_t)}"
        per_file = self._map_entries.setdefault(b.name, {})
        era = self.era(f.value_struct) if f.value_struct is not None else False
        if name not in per_file:
            body: dict[str, Any] = {"doc": f"One key/value pair of a map ({f.key} -> {f.value})."}
            if era:
                body["params"] = [{"id": ERA, "type": "u2"}]
            body["seq"] = [{"id": "key", "type": key_t, "doc": "The key."},
                           {"id": "value", "type": val_t, "doc": "The value."}]
            per_file[name] = body
        return (f"{name}({ERA})" if era else name), n1 | n2

    def emit_struct(self, b: Binary, rs: RStruct, consts: dict[str, int | str],
                    enums: dict[str, Any]) -> tuple[dict[str, Any], set[str]]:  # noqa: C901
        spec_name = b.name
        needs: set[str] = set()
        seq: list[dict[str, Any]] = []
        instances: dict[str, Any] = {}
        rules_before = len(self.rules)
        scope = Scope(rs, consts)
        # u64 fields compared with constants beyond 2^53 are read as 8 bytes
        for f in rs.fields:
            if f.kind == "scalar" and f.spec.type in ("u64", "i64"):
                big = isinstance(f.spec.const, int) and abs(f.spec.const) > JS_SAFE
                if "constraint" in f.exprs:
                    ch = f.exprs["constraint"].choices(f.name) or []
                    big |= any(abs(_int_value(ast.parse(str(c), mode="eval").body, consts) or 0) > JS_SAFE
                               for c in ch)
                if big:
                    scope.bytes_fields.add(f.name)
        # str fields used as TVM versions
        for f in rs.fields:
            for e in f.exprs.values():
                for node in ast.walk(e.tree):
                    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "at_least"
                            and _dotted(node.args[0])):
                        scope.versions.add(_dotted(node.args[0]))  # type: ignore[arg-type]
        # strings that select a layout (switch-on, if) are read inline and decoded while parsing
        for f in rs.fields:
            sources = ([f.switch_on] if f.switch_on is not None else []) + ([f.exprs["when"]] if "when" in f.exprs else [])
            for e in sources:
                for name in e.names:
                    g = _field_of(rs, name.split(".")[0])
                    if g is not None and g.kind == "str" and g.spec.encoding and g.name not in scope.versions:
                        scope.selectors.add((rs.name, g.name))
        # selectors of switches without default: any-of over the known values
        selector_values: dict[str, list[str]] = {}
        for f in rs.fields:
            sw = f.spec.switch
            if sw is None or sw.default or f.spec.sized:
                continue
            on = _dotted(f.switch_on.tree.body) if f.switch_on is not None else None
            on_field = _field_of(rs, on) if on else None
            if on_field is None or on_field.kind != "str":
                continue
            values = [str(k) for k in sw.cases]
            ok = True
            if "when" in f.exprs:
                w = f.exprs["when"].tree.body
                if (isinstance(w, ast.Compare) and len(w.ops) == 1 and isinstance(w.ops[0], ast.NotEq)
                        and _dotted(w.left) == on and isinstance(w.comparators[0], ast.Constant)):
                    values.insert(0, str(w.comparators[0].value))
                else:
                    ok = False
            if ok:
                selector_values[on] = values
        invariants_after: dict[str, list[tuple[Any, Expr]]] = {}
        for inv, e, _loc in rs.invariants:
            if inv.severity != "error":
                try:
                    cond = Translator(scope)(e)
                except Untranslatable as exc:
                    self.note(rs, f"rule {inv.name}", f"{inv.rule} (warning)", "no", str(exc))
                    continue
                instances[ksy_id(inv.name)] = {"value": cond, "doc": clean_doc(
                    f"The warning rule {inv.name} (true if it holds; a validation would stop the parse): {inv.doc}")}
                self.note(rs, f"rule {inv.name}", f"{inv.rule} (warning)", "yes",
                          f"a boolean value instance `{ksy_id(inv.name)}` (a warning does not stop a parse)")
                continue
            named = [n.split(".")[0] for n in e.names if n.split(".")[0] in {x.name for x in rs.fields}]
            last = max(named, key=lambda n: [x.name for x in rs.fields].index(n)) if named else rs.fields[-1].name
            invariants_after.setdefault(last, []).append((inv, e))

        for f in rs.fields:
            entries, n = self.emit_field(b, rs, f, scope, selector_values.get(f.name))
            needs |= n
            seq.extend(entries)
            for inv, e in invariants_after.get(f.name, []):
                try:
                    cond = Translator(scope)(e)
                except Untranslatable as exc:
                    self.note(rs, f"rule {inv.name}", inv.rule, "no", str(exc))
                    continue
                self.note(rs, f"rule {inv.name}", inv.rule, "yes", f"a zero-byte check field `{ksy_id(inv.name)}`")
                check: dict[str, Any] = {"id": ksy_id(inv.name), "size": 0, "valid": {"expr": cond},
                                         "-mlf-error": "ConstraintError",
                                         "doc": clean_doc(f"Zero-byte check of the rule {inv.name}: {inv.doc}")}
                era_conds = era_condition(inv.since, inv.until, ERA, minor=True, outside=True)
                if era_conds:
                    check["valid"] = {"expr": " or ".join(era_conds + [cond])}
                seq.append(check)
            if f.spec.table:
                self.table_instances(rs, f, instances, enums)
        for h_field, inst in scope.helpers.items():
            instances[inst] = {
                "value": f"{ksy_id(h_field)}_products.size == 0 ? 1 : {ksy_id(h_field)}_products.last.value",
                "doc": clean_doc(f"Product of {h_field} (1 for an empty list).")}
        body: dict[str, Any] = {"doc": rs.spec.doc}
        if self.era(rs):
            body["params"] = [{"id": ERA, "type": "u2", "doc": "Minor version of the producing TVM (0.<tvm_minor>)."}]
        if seq:
            body["seq"] = seq
        if instances:
            body["instances"] = instances
        notes = [g.line() for g in self.rules[rules_before:] if g.status != "yes"]
        if notes:
            body["doc"] = rs.spec.doc + " Not stated in this Kaitai spec: " + " ".join(
                f"({i}) {t}." for i, t in enumerate(notes, 1))
        body["doc"] = clean_doc(body["doc"])
        ids = [e["id"] for e in seq] + list(instances) + [p["id"] for p in body.get("params", [])]
        check_collisions(ids, f"{file_id(spec_name)}::{rs.name}", lower_camel)
        return body, needs

    def emit_field(self, b: Binary, rs: RStruct, f: RField, scope: Scope,
                   any_of: list[str] | None) -> tuple[list[dict[str, Any]], set[str]]:  # noqa: C901
        s = f.spec
        spec_name = b.name
        fid = ksy_id(f.name)
        needs: set[str] = set()
        conds: list[str] = era_condition(s.since, s.until, ERA, minor=True)
        if "when" in f.exprs:
            try:
                conds.append(Translator(scope)(f.exprs["when"]))
            except Untranslatable as exc:
                raise KsyError(f"{rs.name}.{f.name}: its condition {s.when!r} cannot be stated: {exc}") from None
        cond = " and ".join(conds) if conds else None
        if s.since or s.until:
            era_rule = " ".join(x for x in (f"since {s.since}" if s.since else "", f"until {s.until}" if s.until else "") if x)
            self.note(rs, f.name, era_rule, "yes", f"`if: {' and '.join(conds[:len(conds) - ('when' in f.exprs)])}`")
        if "when" in f.exprs:
            self.note(rs, f.name, f"if: {s.when}", "yes", f"`if: {conds[-1]}`")
        if s.sized:
            self.note(rs, f.name, "sized", "yes", f"`len_{fid}` + a substream + the zero-byte check `{fid}_fully_read`")
        if s.table:
            self.note(rs, f.name, f"table: {s.table}", "yes", f"an enum per dialect (`{fid}_v0_<n>` instances) "
                      "and TVM's spelling (`spelling` instance)")
        doc = s.doc
        out: list[dict[str, Any]] = []

        def entry(id_: str, **kw: Any) -> dict[str, Any]:
            e: dict[str, Any] = {"id": id_}
            if id_ == fid and fid != f.name:
                e["-orig-id"] = f.name
            e.update(kw)
            if cond:
                e["if"] = cond
            return e

        # the element/value type
        if f.kind == "switch":
            assert s.switch is not None and f.switch_on is not None
            on_src = Translator(scope)(f.switch_on)
            on_field = _field_of(rs, _dotted(f.switch_on.tree.body) or "")
            cases: dict[str, str] = {}
            for k, t in s.switch.cases.items():
                key = _lit_str(k) if isinstance(k, str) and on_field is not None and on_field.kind == "str" else str(k)
                kt, n = self.element_type(t, None, rs, spec_name)
                needs |= n
                cases[key] = kt
            if s.switch.default:
                kt, n = self.element_type(s.switch.default, None, rs, spec_name)
                needs |= n
                cases["_"] = kt
            elif not s.sized:
                cases["_"] = f"{STREAM}::unsupported"
            if s.switch.default:
                how = "`switch-on`; other values: the default case"
            elif s.sized:
                how = "`switch-on`; other values: a failing `_` case"
            elif any_of is not None:
                how = "`switch-on`; other values: `valid: any-of` on the selector (and a failing `_` case)"
            else:
                how = "`switch-on`; other values: a failing `_` case (Kaitai would otherwise read nothing)"
            self.note(rs, f.name, f"switch on {s.switch.on}", "yes", how)
            if s.switch.extensible:
                self.note(rs, f.name, f"extensible: {s.switch.extensible}", "partly",
                          "codecs registered at run time do not exist in a generated parser: add a case to the "
                          ".ksy (or use Kaitai's opaque types)")
            vtype: Any = {"switch-on": on_src, "cases": cases}
        elif f.kind == "map":
            vtype, n = self.map_entry(b, rs, f)
            needs |= n
        elif f.kind == "vec":
            vtype, n = self.element_type(f.elem or "", s.encoding, rs, spec_name)
            needs |= n
        elif f.kind in ("str", "scalar", "struct"):
            vtype, n = self.element_type(s.type, s.encoding, rs, spec_name, versions=f.name in scope.versions)
            needs |= n
        else:
            vtype = None  # bytes

        value_checks = Checks()  # on the value (`_`)
        elem_checks = Checks()  # on each element of a list
        count_checks = Checks()  # on the count of a vec / map
        contents: list[HexInt] | None = None
        read_as_bytes = f.name in scope.bytes_fields
        inline_str = (rs.name, f.name) in scope.selectors
        list_like = f.kind in ("vec", "map") or f.is_array

        def sub_scope(**kw: Any) -> Scope:
            return Scope(rs, scope.consts, bytes_fields=scope.bytes_fields, versions=scope.versions,
                         helpers=scope.helpers, selectors=scope.selectors, **kw)

        # const
        if s.const is not None:
            if isinstance(s.const, int) and read_as_bytes:
                contents = FlowList(HexInt(x) for x in s.const.to_bytes(8, "little", signed=s.const < 0))
            elif isinstance(s.const, int):
                value_checks.add(f"_ == {s.const}", {"eq": s.const}, "ConstMismatchError")
            elif s.encoding and inline_str:
                value_checks.add(f"_ == {_lit_str(s.const)}", {"eq": _lit_str(s.const)}, "ConstMismatchError")
            elif s.encoding:
                value_checks.add(f"_.value == {_lit_str(s.const)}", None, "ConstMismatchError")
            else:  # compared as bytes
                raw = s.const.encode("utf-8")
                value_checks.add(f"_.value == [{', '.join(f'0x{x:02x}' for x in raw)}]", None, "ConstMismatchError")
            self.note(rs, f.name, f"const {s.const:#x}" if isinstance(s.const, int) else f"const {s.const!r}", "yes",
                      "`contents` (compared as bytes: JavaScript reads u8 as a double)" if contents is not None
                      else "`valid`")
        for key in ("equals", "derive"):
            if key not in f.exprs:
                continue
            rule = f"{key}: {f.exprs[key].source}"
            try:
                rhs = Translator(sub_scope())(f.exprs[key])
            except Untranslatable as exc:
                self.note(rs, f.name, rule, "no", str(exc))
                continue
            on_count = key == "equals" and f.kind in ("vec", "map")
            (count_checks if on_count else value_checks).add(
                f"_ == {rhs}", {"eq": rhs}, "CountMismatchError" if key == "equals" else "ConstraintError")
            self.note(rs, f.name, rule, "yes", f"`valid: {{eq: {rhs}}}` on " + (f"`num_{fid}`" if on_count else "the value"))
        if "constraint" in f.exprs:
            e = f.exprs["constraint"]
            for c in _conjuncts(e):
                src = ast.unparse(c)
                sub = Expr(src)
                try:
                    if "each" in _names_in(c):
                        t = Translator(sub_scope(subject=f.name, element=True))(sub)
                        elem_checks.add(t, _bounds_form(sub.int_bounds("each")) if sub.is_pure_bounds("each") else None)
                        self.note(rs, f.name, src, "yes", "`valid` on each element")
                        continue
                    if (list_like or inline_str) and _only_len_of(c, f.name):
                        t = Translator(sub_scope(subject=f.name, count_level=True))(sub)
                        count_checks.add(t, _bounds_form(_len_bounds(c, f.name)) if _len_bounds(c, f.name) else None)
                        self.note(rs, f.name, src, "yes", f"`valid` on `{'len' if inline_str else 'num'}_{fid}`")
                        continue
                    if list_like:
                        try:
                            Translator(sub_scope(subject=f.name, element=True))(sub)
                            raise Untranslatable(f"a rule over the whole list {f.name}")
                        except _FirstElement:
                            inner = _replace_first(c, f.name)
                            t = Translator(sub_scope(subject=f.name, element=True))(Expr(ast.unparse(inner)))
                            elem_checks.add(f"(_index != 0 or {t})")
                            self.note(rs, f.name, src, "yes", "`valid` on each element, for `_index == 0`")
                        except _Nondecreasing:
                            elem_checks.add(f"(_index == 0 or _ >= {fid}[_index - 1])")
                            self.note(rs, f.name, src, "yes", "`valid` on each element against the one before "
                                      f"(`{fid}[_index - 1]`)")
                        continue
                    if read_as_bytes:
                        ch = sub.choices(f.name)
                        if ch is None:
                            raise Untranslatable("a rule on a 64-bit value read as bytes")
                        vals = [v if isinstance(v, int) else scope.consts[v] for v in ch]
                        lits = [_bytes_lit(int(v)) for v in vals]
                        value_checks.add("(" + " or ".join(f"_ == {x}" for x in lits) + ")", {"any-of": lits})
                        self.note(rs, f.name, src, "yes", "`valid: any-of` over 8-byte literals (read as bytes: "
                                  "JavaScript reads u8 as a double)")
                        continue
                    t = Translator(sub_scope(subject=f.name))(sub)
                    form = None
                    if f.kind == "scalar" and sub.is_pure_bounds(f.name):
                        form = _bounds_form(sub.int_bounds(f.name))
                    ch = sub.choices(f.name) if f.kind == "scalar" else None
                    if ch is not None:
                        form = {"any-of": [v if isinstance(v, int) else scope.consts[v] for v in ch]}
                    value_checks.add(t, form)
                    self.note(rs, f.name, src, "yes", "`valid` on the value")
                except Untranslatable as exc:
                    self.note(rs, f.name, src, "no", str(exc))
                    doc += f" Not checked here: {src} ({exc})."
        if any_of is not None:
            lits = [_lit_str(v) for v in any_of]
            value_checks.add("(" + " or ".join(f"_ == {x}" for x in lits) + ")", {"any-of": lits}, "UnsupportedError")
            doc += (" Only the values that have a layout are accepted: the payload that follows has no length, so "
                    "a parser that does not know it cannot go on.")
        for e_ in f.exprs.values():
            for h, why in (("decimal", "to_i raises ValueError (Python) or gives NaN (JavaScript) where mlf-spec's "
                                       "decimal() gives -1 for a string that is not a plain decimal number"),
                           ("at_least", "the version is split at dots and read with to_i: a string that is not "
                                        "<major>.<minor>[.<rest>] with decimal numbers is an error (Python) or NaN "
                                        "(JavaScript), where mlf-spec counts it as the oldest version")):
                if h in e_.helpers and not any(g.struct == rs.name and g.where == f.name and g.rule == e_.source
                                               and g.status == "partly" for g in self.rules):
                    self.note(rs, f.name, e_.source, "partly", why)

        # sized values: a length, then the value in a substream that it must fill
        if s.sized:
            if f.kind not in ("struct", "switch") or f.is_array:
                raise KsyError(f"{rs.name}.{f.name}: a sized {f.kind} has no Kaitai form here (only struct, switch)")
            guard = Checks()
            _length_guard(guard)
            le = entry(f"len_{fid}", type="u8", doc=f"Byte length of {f.name}.")
            guard.apply(le)
            out.append(le)
            e = entry(fid, size=f"len_{fid}", type=vtype, doc=clean_doc(doc))
            value_checks.apply(e)
            out.append(e)
            out.append(entry(f"{fid}_fully_read", size=0, valid={"expr": f"{fid}._io.eof"}, **{"-mlf-error": "LengthError"},
                             doc=clean_doc(f"Zero-byte check: the value of {f.name} fills its length exactly.")))
            return out, needs

        if f.kind == "bytes":
            size_e = f.exprs["size"]
            if "remaining" in size_e.helpers:
                e = entry(fid, **{"size-eos": True})
            else:
                try:
                    size_src = Translator(scope)(size_e)
                except Untranslatable as exc:
                    raise KsyError(f"{rs.name}.{f.name}: size {s.size!r}: {exc}") from None
                out.append(entry(f"{fid}_fits", size=0, valid={"expr": f"{size_src} <= {REMAINING}"},
                                 **{"-mlf-error": "LengthError"},
                                 doc=clean_doc(f"Zero-byte check: the {size_src} bytes of {f.name} are there "
                                               "(checked before they are read).")))
                e = entry(fid, size=size_src)
            if s.lazy:
                doc += " (Kaitai's Python runtime copies these bytes; its JavaScript runtime gives a view.)"
            e["doc"] = clean_doc(doc)
            value_checks.apply(e)
            out.append(e)
            return out, needs

        if inline_str:
            _length_guard(count_checks)
            le = entry(f"len_{fid}", type="u8", doc=f"Byte length of {f.name}.")
            count_checks.apply(le)
            e = entry(fid, type="str", size=f"len_{fid}", encoding="UTF-8")
            value_checks.apply(e)
            e["doc"] = clean_doc(doc + " Decoded while parsing, since it selects what follows.")
            self.note(rs, f.name, "encoding: utf-8", "partly",
                      "a string that selects a layout is decoded while parsing: bytes that are not UTF-8 stop the "
                      "Python parser (UnicodeDecodeError) and become U+FFFD in JavaScript; mlf-spec keeps them "
                      "(surrogateescape)")
            return [le, e], needs

        if f.kind in ("vec", "map"):
            if f.kind == "vec":
                unit = element_min_size(self.model, f.elem or "", f.elem_struct)
            else:
                unit = (element_min_size(self.model, f.key or "", None)
                        + element_min_size(self.model, f.value or "", f.value_struct))
            _length_guard(count_checks, unit)
            ce = entry(f"num_{fid}", type="u8", doc=f"Number of elements of {f.name}.")
            count_checks.apply(ce)
            out.append(ce)
            count = f"num_{fid}"
        elif f.is_array:
            try:
                count = Translator(scope)(f.exprs["count"])
            except Untranslatable as exc:
                raise KsyError(f"{rs.name}.{f.name}: count {s.count!r}: {exc}") from None
            if count_checks:
                raise KsyError(f"{rs.name}.{f.name}: a rule on the count of a counted array")
        else:
            count = None

        if read_as_bytes:
            if contents is not None:
                e = entry(fid, contents=contents, **{"-mlf-error": "ConstMismatchError"})
            else:
                e = entry(fid, size=8)
                value_checks.apply(e)
            doc += " Read as 8 bytes (little-endian): JavaScript reads a u8 as a double, which cannot tell these values apart."
            e["doc"] = clean_doc(doc)
            out.append(e)
            return out, needs

        e = entry(fid, type=vtype)
        if count is not None:
            e["repeat"] = "expr"
            e["repeat-expr"] = count
            elem_checks.apply(e)
            if value_checks:
                raise KsyError(f"{rs.name}.{f.name}: a rule on a whole list")
        else:
            value_checks.apply(e)
        if f.spec.keep_span:
            doc += " (Compile with --read-pos / debug mode for its offsets.)"
        e["doc"] = clean_doc(doc)
        out.append(e)
        # numel(x) in a later rule: a running product right after x
        if list_like and self._numel_used(rs, f.name):
            inst = f"{fid}_numel"
            prev = f"({fid}_products[_index - 1].value)"
            out.append(entry(f"{fid}_products",
                             type=f"{STREAM}::product_step(_index == 0 ? 1 : {prev}, {fid}[_index])",
                             repeat="expr", **{"repeat-expr": count},
                             doc=clean_doc(f"Zero bytes: {fid}_products[i].value = {f.name}[0] * ... * {f.name}[i] "
                                           "(Kaitai has no product over an array).")))
            needs.add(STREAM)
            scope.helpers[f.name] = inst
        return out, needs

    def _numel_used(self, rs: RStruct, name: str) -> bool:
        for f in rs.fields:
            for e in f.exprs.values():
                for node in ast.walk(e.tree):
                    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "numel"
                            and _dotted(node.args[0]) == name):
                        return True
        return False

    # tables -------------------------------------------------------------------------------
    def table_instances(self, rs: RStruct, f: RField, instances: dict[str, Any], enums: dict[str, Any]) -> None:
        """Per dialect of the table: an enum and a value instance of the code; TVM's spelling."""
        table = f.spec.table
        assert table is not None
        tspec, _ = self.model.tables[table]
        cols = {c.name for c in tspec.columns}
        if not {"code", "spelling"} <= cols:
            return
        fid = ksy_id(f.name)
        for since, until, rows in table_dialects(self.model, table):
            label = "v" + since.replace(".", "_")
            enum_name = f"{table}_{label}"
            values: dict[int, Any] = {}
            by_code: dict[int, list[dict]] = {}
            for i in rows:
                row = tspec.rows[i]
                if row.get("code_max") is not None:
                    continue
                by_code.setdefault(row["code"], []).append(row)
            for code in sorted(by_code):
                group = by_code[code]
                anyw = [r for r in group if r.get("bits") is None]
                row = anyw[0] if anyw else group[0]
                name = row["kind"] if (anyw or len(group) > 1) else row["spelling"]
                values[code] = {"id": ksy_id(name), "doc": clean_doc(row["doc"])}
            enums[enum_name] = values
            check_collisions([v["id"] for v in values.values()], f"enum {enum_name}", str.upper)
            lo, hi = vkey(since)[1], (vkey(until)[1] if until else None)
            cond = f"{ERA} >= {lo}" + (f" and {ERA} < {hi}" if hi is not None else "")
            instances[f"{fid}_{label}"] = {
                "value": fid, "enum": enum_name, "if": cond,
                "doc": clean_doc(f"{f.name} as TVM {since}" + (f" to {until} (excluded)" if until else " and later")
                                 + " names it (null for other versions)."),
            }
        instances["base_spelling"] = {"value": self.spelling_expr(rs, f, tspec),
                                      "doc": clean_doc(f"TVM's name of (code, bits) in the dialect of tvm_minor, from "
                                                       f"the table {table}.")}
        instances["spells_lanes"] = {"value": self.spelling_expr(rs, f, tspec, column="spells_lanes"),
                                     "doc": clean_doc("Whether TVM appends the lanes to this spelling (not for a "
                                                      f"handle), from the table {table}.")}
        instances["spelling"] = {"value": self.spelling_suffix(),
                                 "doc": clean_doc("TVM's spelling of this dtype in the dialect of tvm_minor (x<lanes> "
                                                  "appended for vectors), as mlf_spec.params.dtypes spells it; "
                                                  "unknown(code=..,bits=..,lanes=..) for a code the table lacks.")}

    def spelling_expr(self, rs: RStruct, f: RField, tspec: Any, column: str = "spelling") -> str:
        """The spelling rule of the table (or its boolean ``column`` for the same rows) as one
        conditional expression."""
        code = ksy_id(f.name)
        bits = "bits" if _field_of(rs, "bits") else None
        lanes = "lanes" if _field_of(rs, "lanes") else None
        if bits is None or lanes is None:
            raise KsyError(f"{rs.name}: a {tspec.name} code needs sibling fields bits and lanes for the spelling")

        def template(t: str) -> str:
            parts = re.split(r"(\{bits\}|\{code\})", t)
            out = []
            for p in parts:
                if p == "{bits}":
                    out.append(f"{bits}.to_s")
                elif p == "{code}":
                    out.append(f"{code}.to_s")
                elif p:
                    out.append(_lit_str(p))
            return " + ".join(out) if out else '""'

        ordered = [r for r in tspec.rows if r.get("bits") is not None] + [r for r in tspec.rows if r.get("bits") is None]
        branches = []
        for row in ordered:
            c = [f"{code} == {row['code']}"] if row.get("code_max") is None else [
                f"{code} >= {row['code']}", f"{code} <= {row['code_max']}"]
            if row.get("bits") is not None:
                c.append(f"{bits} == {row['bits']}")
            since, until = (str(row[k]) if row.get(k) else None for k in ("since", "until"))
            c += era_condition(since, until, ERA, minor=True)
            branches.append((" and ".join(c), template(row["spelling"]) if column == "spelling" else
                             ("true" if row[column] else "false")))
        if column != "spelling":
            base = "true"
            for c, t in reversed(branches):
                if t != base:
                    base = f"{c} ? {t} : {base}"
            return base
        base = f'"unknown(code=" + {code}.to_s + ",bits=" + {bits}.to_s + ",lanes=" + {lanes}.to_s + ")"'
        for c, t in reversed(branches):
            base = f"{c} ? {t} : {base}"
        return base

    @staticmethod
    def spelling_suffix(lanes: str = "lanes") -> str:
        """The lanes suffix: x<lanes> for vectors, xvscalex<n> for scalable ones (negative as int16)."""
        return (f'base_spelling.substring(0, 8) == "unknown(" or not spells_lanes ? base_spelling : base_spelling + '
                f'({lanes} >= 32768 ? "xvscalex" + (65536 - {lanes}).to_s : {lanes} != 1 ? "x" + {lanes}.to_s : "")')


def _only_len_of(node: ast.AST, name: str) -> bool:
    """True if the only mention of ``name`` is inside len(name)."""
    found = False
    for n in ast.walk(node):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "len" and _dotted(n.args[0]) == name:
            found = True
    bare = sum(1 for n in ast.walk(node) if isinstance(n, ast.Name) and n.id == name)
    lens = sum(1 for n in ast.walk(node) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
               and n.func.id == "len" and _dotted(n.args[0]) == name)
    return found and bare == lens


def _replace_first(node: ast.AST, name: str) -> ast.AST:
    """``name[0]`` -> ``each`` (the element rule then applies to element 0 only)."""

    class R(ast.NodeTransformer):
        def visit_Subscript(self, n: ast.Subscript) -> ast.AST:
            if _dotted(n.value) == name:
                return ast.Name(id="each", ctx=ast.Load())
            return self.generic_visit(n)

    return R().visit(ast.parse(ast.unparse(node), mode="eval")).body


# --------------------------------------------------------------------------------------------
# entry points


def emit_kaitai(model: Model) -> tuple[dict[str, str], dict[str, dict[str, Any]], list[Rule]]:
    """(file name -> .ksy text, ksy id -> object, what became of every rule) for generated/kaitai/."""
    em = KsyEmitter(model)
    texts: dict[str, str] = {}
    for kid, obj in em.files.items():
        if kid == STREAM:
            comment = ("# Generated by tools/generate.py (the stream conventions of spec/README.md).\n"
                       "# Do not edit: change the spec or the generator and run `python tools/generate.py`.\n")
        else:
            b = model.binaries[kid.removeprefix(PREFIX)]
            docs = [b.doc] + [model.binaries[u].doc for u in b.spec.uses]
            comment = header(model, docs)
        texts[f"{kid}.ksy"] = ksy_text(obj, comment)
    return texts, {k: plain(v) for k, v in em.files.items()}, em.rules


# --------------------------------------------------------------------------------------------
# diagrams and the reference page


def graph_specs(objs: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The .ksy objects as drawn: long computed values (the dtype spelling) left out, since the
    graphviz target prints every expression in full."""
    import copy

    def walk(t: dict[str, Any]) -> None:
        inst = t.get("instances")
        if inst:
            for k in [k for k, v in inst.items() if len(str(v.get("value", ""))) > 100]:
                del inst[k]
        for sub in t.get("types", {}).values():
            walk(sub)

    out = {}
    for k, v in objs.items():
        c = copy.deepcopy(v)
        walk(c)
        out[k] = c
    return out


def emit_kaitai_doc(model: Model, objs: dict[str, dict[str, Any]], rules: list[Rule]) -> str:
    """docs/kaitai.md: the exported files and what each rule of the spec became."""
    out = ["<!-- Generated by tools/generate.py from spec/binary/*.yaml. Do not edit. -->", "",
           "# Kaitai Struct specs", "",
           "Every binary format of the spec as a [Kaitai Struct](https://kaitai.io) `.ksy` file, emitted by "
           "`tools/specgen/emit_kaitai.py` from the same spec as mlf-spec's own readers (files in "
           "[`generated/kaitai/`](../kaitai/); `mlf-spec export ksy OUT_DIR` writes them). A Kaitai Struct "
           "compiler (0.11 or later) turns them into parsers for C++, C#, Go, Java, JavaScript, Lua, Nim, Perl, "
           "PHP, Python, Ruby and Rust. How to compile them: `docs/kaitai.md` in the repository.", "",
           "| File | Top-level type | Needs `tvm_minor` | Spec |", "|---|---|---|---|"]
    for kid, obj in objs.items():
        spec = kid.removeprefix(PREFIX)
        top = "yes" if "seq" in obj else "no (types only)"
        typed = [obj] + list(obj.get("types", {}).values())
        era = ("yes" if any(p.get("id") == ERA for p in obj.get("params", [])) else
               "some types" if any(p.get("id") == ERA for t in typed for p in t.get("params", [])) else "no")
        src = f"[{spec}]({spec}.md)" if spec in model.binaries else "stream conventions"
        out.append(f"| `{kid}.ksy` | {top} | {era} | {src} |")
    out += ["", "## The parameter `tvm_minor`", "",
            "The bytes do not say which TVM version wrote them, yet some layouts (FunctionInfo's "
            "`arg_extra_tags` from 0.21, Vulkan and Metal payloads at 0.24, relax VM constant tags) and the "
            "meaning of DLDataType codes changed between versions. Every type whose bytes depend on the version "
            "takes `tvm_minor`, the minor version of the TVM that wrote the file (`21` for 0.21; any number above "
            "the newest version the spec names means \"the newest\"), and passes it down. Kaitai's generated "
            "Python takes parameters first (`TvmParams(27, KaitaiStream(f))`), JavaScript last "
            "(`new TvmParams(new KaitaiStream(buf), null, null, 27)`).", "",
            "## What each rule of the spec became", "",
            "Status `yes`: the generated parser rejects input that breaks the rule. `partly`: it does in the "
            "cases named. `no`: it does not check it (mlf-spec's readers do).", "",
            "| Spec | Field | Rule | In the .ksy | How / why not |", "|---|---|---|---|---|"]
    for r in rules:
        where = f"{r.struct}.{r.where}" if not r.where.startswith("rule ") else f"{r.struct} {r.where}"
        rule_txt = r.rule.replace("|", "\\|")
        out.append(f"| {r.spec} | `{where}` | `{rule_txt}` | {r.status} | {r.how.replace('|', chr(92) + '|')} |")
    out += ["", "## Everywhere", "",
            "- Strings are read as bytes (`raw`) and decoded lazily (`value`), so bytes that are not UTF-8 never "
            "stop a parse (TVM does not validate them either); only module kinds and relay VM versions, which "
            "select a layout, are decoded while parsing.",
            "- 64-bit magic numbers are compared as bytes (`contents`): Kaitai's JavaScript runtime reads u8 as a "
            "double, so two magics that differ in the low bits would compare equal. Other u8 values (lengths, "
            "counts, row pointers) are exact in JavaScript up to 2^53 only, and byte sizes from 2^31 on wrap in "
            "its `readBytes`.",
            "- Every length and count read from the input is checked against the bytes that remain (a count "
            "against the fewest bytes its elements take) before anything is read, as mlf-spec's readers do "
            "(`valid: {max: _io.size - _io.pos}`); this also keeps Kaitai's JavaScript runtime from wrapping "
            "sizes of 2^31 and more.",
            "- Kaitai's Python runtime copies every `size` field (tensor data included) where mlf-spec returns "
            "views.",
            "- Validation errors of Kaitai's Python runtime name the .ksy path of the rule and the stream "
            "position; those of its JavaScript runtime carry neither.", ""]
    return "\n".join(out)
