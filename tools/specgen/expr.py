"""The spec's expression language: a small, checked subset of Python expressions.

Expressions name earlier fields of the same struct (``ndim``, ``dtype.bits``), the
element under test in array constraints (``each``), upper-case constants of the spec,
integer and string literals, and the functions ``len``, ``numel`` (product of a
sequence, 1 for an empty one), ``ceil_div``, ``min`` and ``max``. Each emitter
translates the checked tree into its own target form.

Structural helpers (for import trees and keyed lists): ``nondecreasing(seq)``,
``unique(seq)``, ``count_where(records, "field", value)``, ``find_where(records,
"field", value)`` (the first such record, whose fields can then be named with ``.``),
``find_last_where(records, "field", value)`` (the last such record),
``acyclic(row_ptr, child_indices)`` (a CSR graph without cycles), ``at_least(version,
"0.14")`` (a TVM version string is that version or later), ``decimal(s)`` (a decimal
string's value, -1 if it is none) and ``remaining()`` (bytes left in the enclosing
region; only in ``size``). Subscripts take integer literals only (``row_ptr[0]``,
``row_ptr[-1]``).
"""

from __future__ import annotations

import ast
from collections.abc import Callable

FUNCTIONS = {"len", "numel", "ceil_div", "min", "max"}
# Helpers beyond arithmetic: generated code imports them from generated/_fastlib.py.
HELPERS = {"nondecreasing", "unique", "count_where", "find_where", "find_last_where", "acyclic", "at_least", "decimal",
           "remaining"}
FUNCTIONS |= HELPERS

_ALLOWED = (
    ast.Expression,
    ast.BoolOp,
    ast.And,
    ast.Or,
    ast.UnaryOp,
    ast.Not,
    ast.USub,
    ast.BinOp,
    ast.Add,
    ast.Sub,
    ast.Mult,
    ast.FloorDiv,
    ast.Mod,
    ast.BitAnd,
    ast.BitOr,
    ast.LShift,
    ast.RShift,
    ast.Compare,
    ast.Eq,
    ast.NotEq,
    ast.Lt,
    ast.LtE,
    ast.Gt,
    ast.GtE,
    ast.In,
    ast.NotIn,
    ast.Name,
    ast.Load,
    ast.Attribute,
    ast.Constant,
    ast.Call,
    ast.Tuple,
    ast.List,
    ast.Subscript,
)


class ExprError(ValueError):
    """An expression uses something the language does not have."""


class Expr:
    """A parsed, checked expression with the dotted names it refers to."""

    def __init__(self, source: str) -> None:
        self.source = source
        try:
            self.tree = ast.parse(source, mode="eval")
        except SyntaxError as exc:
            raise ExprError(f"cannot parse expression {source!r}: {exc.msg}") from None
        self.names: list[str] = []
        for node in ast.walk(self.tree):
            if not isinstance(node, _ALLOWED):
                raise ExprError(f"{type(node).__name__} is not allowed in expression {source!r}")
            if isinstance(node, ast.Call):
                if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
                    raise ExprError(f"only {sorted(FUNCTIONS)} can be called in {source!r}")
                if node.keywords:
                    raise ExprError(f"keyword arguments are not allowed in {source!r}")
            if isinstance(node, ast.Constant) and not isinstance(node.value, (int, str)):
                raise ExprError(f"only int and str literals are allowed in {source!r}")
            if isinstance(node, ast.Subscript) and _int(node.slice) is None:
                raise ExprError(f"subscripts must be integer literals in {source!r}")
        self._collect(self.tree.body)

    @property
    def helpers(self) -> set[str]:
        """The helper functions (HELPERS) this expression calls."""
        return {n.func.id for n in ast.walk(self.tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                and n.func.id in HELPERS}

    def _collect(self, node: ast.AST) -> None:
        dotted = dotted_name(node)
        if dotted is not None:
            self.names.append(dotted)
            return
        if isinstance(node, ast.Call):
            for arg in node.args:
                self._collect(arg)
            return
        for child in ast.iter_child_nodes(node):
            self._collect(child)

    def translate(self, name_to_source: Callable[[str], str], func_prefix: str = "", inline: bool = False,
                  remaining: str = "remaining", attr_items: bool = False) -> str:
        """Python source of this expression with every dotted name rewritten; helper
        functions get ``func_prefix``, or with ``inline`` become plain arithmetic
        (``ceil_div(a, b)`` -> ``-(-(a) // (b))``, ``numel(s)`` -> ``_prod(s)``).
        ``remaining()`` becomes the source ``remaining``; with ``attr_items`` a field of a
        computed record (``find_where(...).payload``) is read by subscript (dict trees)."""

        class Rewrite(ast.NodeTransformer):
            def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
                dotted = dotted_name(node)
                if dotted is None:
                    self.generic_visit(node)  # rewrites the children in place
                    if attr_items:
                        return ast.Subscript(value=node.value, slice=ast.Constant(node.attr), ctx=ast.Load())
                    return node
                return ast.parse(name_to_source(dotted), mode="eval").body

            def visit_Name(self, node: ast.Name) -> ast.AST:
                return ast.parse(name_to_source(node.id), mode="eval").body

            def visit_Call(self, node: ast.Call) -> ast.AST:
                node.args = [self.visit(a) for a in node.args]
                assert isinstance(node.func, ast.Name)
                if inline and node.func.id == "ceil_div":
                    a, b = (ast.unparse(x) for x in node.args)
                    return ast.parse(f"-(-({a}) // ({b}))", mode="eval").body
                if inline and node.func.id == "numel":
                    node.func = ast.Name(id="_prod", ctx=ast.Load())
                elif node.func.id in ("numel", "ceil_div"):
                    node.func = ast.Name(id=func_prefix + node.func.id, ctx=ast.Load())
                elif node.func.id == "remaining":
                    return ast.parse(f"({remaining})", mode="eval").body
                elif node.func.id in HELPERS:
                    node.func = ast.Name(id=func_prefix + node.func.id, ctx=ast.Load())
                return node

        tree = Rewrite().visit(ast.parse(self.source, mode="eval"))
        return ast.unparse(tree)

    def is_pure_bounds(self, subject: str) -> bool:
        """True if the expression only compares ``subject`` with integer literals
        (so checking min and max of an array decides it)."""
        body = self.tree.body
        parts = body.values if isinstance(body, ast.BoolOp) and isinstance(body.op, ast.And) else [body]
        for part in parts:
            if not isinstance(part, ast.Compare) or not all(
                    isinstance(op, (ast.Lt, ast.LtE, ast.Gt, ast.GtE)) for op in part.ops):
                return False
            for item in [part.left, *part.comparators]:
                if dotted_name(item) != subject and _int(item) is None:
                    return False
        return True

    def choices(self, subject: str) -> list[int | str] | None:
        """The values ``subject`` may take if the expression is ``subject in (A, B, ...)``
        (ints, or names of constants for the caller to resolve); None otherwise."""
        body = self.tree.body
        if (isinstance(body, ast.Compare) and len(body.ops) == 1 and isinstance(body.ops[0], ast.In)
                and dotted_name(body.left) == subject and isinstance(body.comparators[0], (ast.Tuple, ast.List))):
            out: list[int | str] = []
            for elt in body.comparators[0].elts:
                v = _int(elt)
                name = dotted_name(elt)
                if v is not None:
                    out.append(v)
                elif name is not None:
                    out.append(name)
                else:
                    return None
            return out
        return None

    def int_bounds(self, subject: str) -> tuple[int | None, int | None]:
        """(low, high) inclusive bounds this expression puts on ``subject``, if it is a
        plain chain of comparisons with integer literals (used by strategies and for
        making values that break the constraint)."""
        low: int | None = None
        high: int | None = None
        body = self.tree.body
        parts = body.values if isinstance(body, ast.BoolOp) and isinstance(body.op, ast.And) else [body]
        for part in parts:
            if not isinstance(part, ast.Compare):
                continue
            items = [part.left, *part.comparators]
            for (a, b), op in zip(zip(items, items[1:]), part.ops):
                an, bn = dotted_name(a), dotted_name(b)
                av, bv = _int(a), _int(b)
                if an == subject and bv is not None:
                    low, high = _apply(op, bv, low, high, flip=False)
                elif bn == subject and av is not None:
                    low, high = _apply(op, av, low, high, flip=True)
        return low, high


def _apply(op: ast.cmpop, v: int, low: int | None, high: int | None, flip: bool) -> tuple[int | None, int | None]:
    # subject OP v (flip=False) or v OP subject (flip=True)
    if isinstance(op, ast.Eq):
        return v, v
    lt = isinstance(op, (ast.Lt, ast.LtE))
    gt = isinstance(op, (ast.Gt, ast.GtE))
    strict = isinstance(op, (ast.Lt, ast.Gt))
    if flip:
        lt, gt = gt, lt
    if lt:
        high = v - 1 if strict else v
    elif gt:
        low = v + 1 if strict else v
    return low, high


def _int(node: ast.AST) -> int | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _int(node.operand)
        return -inner if inner is not None else None
    return None


def dotted_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted_name(node.value)
        return f"{base}.{node.attr}" if base else None
    return None
