"""Spec expressions in Kaitai's expression language: :class:`Translator` (with the names in
reach, :class:`Scope`) and the analysis the Kaitai back end makes of a rule (its conjuncts, the
names it uses, bounds on a length)."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from .expr import Expr, dotted_name
from .fields import kind_of
from .fields.base import value_kind
from .ksy_base import (
    JS_SAFE,
    Untranslatable,
    bytes_lit,
    ksy_id,
    lit_str,
)
from .model import RField, RStruct
from .versions import vkey


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


def field_of(rs: RStruct, name: str) -> RField | None:
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
            f = field_of(rs, p)
            if f is None:
                raise Untranslatable(f"unknown name {dotted}")
            self.last_inline = (rs.name, p) in self.s.selectors
            if i == 0 and p == self.s.subject and not self.s.element:
                out.append("_")
            else:
                out.append(ksy_id(p))
            rs = value_kind(f).nested(f)
        return ".".join(out), f

    def value_of(self, node: ast.AST) -> str:
        dotted = dotted_name(node)
        assert dotted is not None
        if dotted in self.s.consts:
            v = self.s.consts[dotted]
            return lit_str(v) if isinstance(v, str) else self.int_lit(v)
        path, f = self.resolve(dotted)
        if f is None:
            return path
        form = value_kind(f).ksy_value(path, self.last_inline)
        if form is not None:
            return form
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
            return lit_str(n.value) if isinstance(n.value, str) else self.int_lit(n.value)
        if isinstance(n, (ast.Name, ast.Attribute)):
            if dotted_name(n) is None:  # an attribute of a computed value: find_where(...).payload
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
        d = dotted_name(n)
        return d is not None and "." not in d and d in self.s.bytes_fields

    def operand(self, n: ast.AST, other: ast.AST) -> str:
        """``n`` compared with ``other``: an int constant becomes 8 bytes if ``other`` is read as bytes."""
        if self.is_bytes(other):
            v = int_value(n, self.s.consts)
            if v is None:
                raise Untranslatable("a 64-bit value read as bytes compared with a non-constant")
            return bytes_lit(v)
        return self.node(n)

    def subscript(self, n: ast.Subscript) -> str:
        base = dotted_name(n.value)
        idx = int_value(n.slice, {})
        if base is None or idx is None:
            raise Untranslatable("subscript")
        if self.s.element and base == self.s.subject:
            if idx != 0:
                raise Untranslatable("an element rule naming another element than the first")
            raise FirstElement()
        path, f = self.resolve(base)
        if f is None or not kind_of(f).list_like(f):
            raise Untranslatable(f"subscript of {base}")
        if idx == -1:
            return f"{path}.last"
        if idx == 0:
            return f"{path}.first"
        if idx < 0:
            raise Untranslatable("negative subscripts other than -1")
        return f"{path}[{idx}]"

    def length(self, arg: ast.AST) -> str:
        d = dotted_name(arg)
        if d is None:
            raise Untranslatable("len() of a computed value")
        if self.s.count_level and d == self.s.subject:
            return "_"
        path, f = self.resolve(d)
        assert f is not None
        form = kind_of(f).ksy_length(path, self.last_inline)
        if form is None:
            raise Untranslatable(f"len() of {d}")
        return form

    def call(self, n: ast.Call) -> str:
        assert isinstance(n.func, ast.Name)
        fn, args = n.func.id, n.args
        if fn == "len":
            return self.length(args[0])
        if fn == "ceil_div":
            a, b = self.node(args[0]), args[1]
            bv = int_value(b, self.s.consts)
            if bv is not None and bv > 0:
                return f"(({a} + {bv - 1}) / {bv})"
            return f"(-((-{a}) / {self.node(b)}))"
        if fn in ("min", "max") and len(args) == 1:  # of a list: Kaitai's array .min / .max
            return f"{self.node(args[0])}.{fn}"
        if fn in ("min", "max"):
            x, y = (self.node(arg) for arg in args)
            return f"({x} {'<' if fn == 'min' else '>'} {y} ? {x} : {y})"
        if fn == "numel":
            d = dotted_name(args[0])
            if d is None or d not in self.s.helpers:
                raise Untranslatable("numel() of something other than an integer list of this struct")
            return self.s.helpers[d]
        if fn == "at_least":
            d = dotted_name(args[0])
            if d is None or d not in self.s.versions:
                raise Untranslatable("at_least() of something other than a version string of this struct")
            path, _ = self.resolve(d)
            assert isinstance(args[1], ast.Constant) and isinstance(args[1].value, str)
            major, minor = vkey(args[1].value)[:2]
            return f"({path}.major > {major} or ({path}.major == {major} and {path}.minor >= {minor}))"
        if fn == "decimal":
            return f"{self.node(args[0])}.to_i"
        if fn == "nondecreasing":
            d = dotted_name(args[0])
            if self.s.element and d == self.s.subject:
                raise Nondecreasing()
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


class FirstElement(Exception):
    pass


class Nondecreasing(Exception):
    pass




def int_value(node: ast.AST, consts: dict[str, int | str]) -> int | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        v = int_value(node.operand, consts)
        return -v if v is not None else None
    d = dotted_name(node)
    value = consts.get(d) if d is not None else None
    if isinstance(value, int):
        return value
    return None


def conjuncts(e: Expr) -> list[ast.AST]:
    body = e.tree.body
    if isinstance(body, ast.BoolOp) and isinstance(body.op, ast.And):
        return list(body.values)
    return [body]


def names_in(node: ast.AST) -> set[str]:
    out: set[str] = set()
    for n in ast.walk(node):
        d = dotted_name(n)
        if d is not None:
            out.add(d.split(".")[0])
    return out


def len_bounds(node: ast.AST, name: str) -> tuple[int | None, int | None] | None:
    """The bounds of ``len(name) OP literal`` chains (None for anything else)."""
    if not isinstance(node, ast.Compare) or not all(isinstance(op, (ast.Lt, ast.LtE, ast.Gt, ast.GtE)) for op in node.ops):
        return None
    items = []
    for item in [node.left, *node.comparators]:
        if (isinstance(item, ast.Call) and isinstance(item.func, ast.Name) and item.func.id == "len"
                and dotted_name(item.args[0]) == name):
            items.append("n_")
        elif int_value(item, {}) is not None:
            items.append(str(int_value(item, {})))
        else:
            return None
    ops = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}
    src = items[0] + "".join(f" {ops[type(op)]} {x}" for op, x in zip(node.ops, items[1:]))
    return Expr(src).int_bounds("n_")


# --------------------------------------------------------------------------------------------
# The emitter


def only_len_of(node: ast.AST, name: str) -> bool:
    """True if the only mention of ``name`` is inside len(name)."""
    found = False
    for n in ast.walk(node):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "len" and dotted_name(n.args[0]) == name:
            found = True
    bare = sum(1 for n in ast.walk(node) if isinstance(n, ast.Name) and n.id == name)
    lens = sum(1 for n in ast.walk(node) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
               and n.func.id == "len" and dotted_name(n.args[0]) == name)
    return found and bare == lens


def replace_first(node: ast.AST, name: str) -> ast.AST:
    """``name[0]`` -> ``each`` (the element rule then applies to element 0 only)."""

    class R(ast.NodeTransformer):
        def visit_Subscript(self, n: ast.Subscript) -> ast.AST:
            if dotted_name(n.value) == name:
                return ast.Name(id="each", ctx=ast.Load())
            return self.generic_visit(n)

    return R().visit(ast.parse(ast.unparse(node), mode="eval")).body


# --------------------------------------------------------------------------------------------
# entry points
