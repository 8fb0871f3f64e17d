"""The checks of a binary spec and its tables that go beyond the meta-schema: what a field's
options allow for its kind, which names an expression may use, versions listed in
spec/eras.yaml. Each raises the spec file's :class:`~specgen.yamlload.SpecError` at the offending
key; :mod:`specgen.load` runs them while it resolves the spec."""

from __future__ import annotations

import ast

from .expr import Expr
from .fields.base import value_kind
from .ir import InvariantSpec
from .model import Model, RField
from .versions import check_version_known
from .yamlload import SpecDocument

# the keys of a field that hold expressions ("when" is spelled "if" in the spec)
EXPR_KEYS = ("count", "size", "equals", "derive", "constraint", "when")


def check_tables(model: Model) -> None:
    """Every table row names only its columns, has a doc and every required column, and its
    since/until are versions of spec/eras.yaml."""
    for table, doc in model.tables.values():
        names = {c.name for c in table.columns}
        for i, row in enumerate(table.rows):
            for key in row:
                if key not in names | {"since", "until", "doc"}:
                    raise doc.error(("rows", i, key), f"unknown column {key!r}")
            if "doc" not in row:
                raise doc.error(("rows", i), "every row needs a 'doc'")
            for col in table.columns:
                if col.name not in row and not col.type.endswith("_or_null"):
                    raise doc.error(("rows", i), f"column {col.name!r} is missing")
            for key in ("since", "until"):
                if key in row:
                    check_version_known(model, doc, ("rows", i, key), str(row[key]))


def check_field_options(model: Model, doc: SpecDocument, rf: RField) -> None:
    """The options of a resolved field suit its kind; its table exists; its versions are listed."""
    f, loc = rf.spec, rf.loc
    allowed = value_kind(rf).options(rf)
    if f.size is not None and "size" not in allowed:
        raise doc.error(loc + ("size",), "'size' is only for bytes fields")
    if f.lazy and "lazy" not in allowed:
        raise doc.error(loc + ("lazy",), "'lazy' is only for bytes fields")
    if f.const is not None and "const" not in allowed:
        raise doc.error(loc + ("const",), "'const' is only for scalars and str")
    if f.encoding and "encoding" not in allowed:
        raise doc.error(loc + ("encoding",), "'encoding' is only for str fields")
    if f.sized and ("sized" not in allowed or f.count is not None):
        raise doc.error(loc + ("sized",), "'sized' is only for a single struct, switch, vec or map field")
    if f.keep_span and f.count is not None:
        raise doc.error(loc + ("keep_span",), "'keep_span' is not for arrays")
    if f.table and f.table not in model.tables:
        raise doc.error(loc + ("table",), f"unknown table {f.table!r}")
    for key in ("since", "until"):
        check_version_known(model, doc, loc + (key,), getattr(f, key))


def check_field_expr(model: Model, doc: SpecDocument, rf: RField, struct_name: str, key: str, e: Expr,
                     earlier: set[str]) -> None:
    """An expression of a field names only earlier fields and constants (``each`` and the field
    itself in a constraint), uses remaining() only in a size, and at_least() with listed versions."""
    loc = rf.loc
    for name in e.names:
        head = name.split(".")[0]
        if head in earlier:
            continue
        if head == "each" and key == "constraint":
            continue
        if head == rf.name and key in ("constraint",):
            continue
        raise doc.error(loc + (key,), f"{name!r} is not an earlier field of {struct_name}")
    if "remaining" in e.helpers and key != "size":
        raise doc.error(loc + (key,), "remaining() is only allowed in 'size'")
    check_at_least(model, doc, loc + ("if" if key == "when" else key,), e)


def check_invariant_versions(model: Model, doc: SpecDocument, loc: tuple, inv: InvariantSpec) -> None:
    """An invariant's since/until are versions of spec/eras.yaml."""
    for key in ("since", "until"):
        check_version_known(model, doc, loc + (key,), getattr(inv, key))


def check_invariant_rule(model: Model, doc: SpecDocument, loc: tuple, e: Expr, struct_name: str,
                         names: set[str]) -> None:
    """An invariant's rule names only fields of its struct and constants (``names``), has no
    remaining(), and its at_least() versions are listed."""
    for name in e.names:
        if name.split(".")[0] not in names:
            raise doc.error(loc + ("rule",), f"{name!r} is not a field of {struct_name}")
    if "remaining" in e.helpers:
        raise doc.error(loc + ("rule",), "remaining() is only allowed in 'size'")
    check_at_least(model, doc, loc + ("rule",), e)


def check_at_least(model: Model, doc: SpecDocument, loc: tuple, e: Expr) -> None:
    """at_least(x, "0.14"): the version must be a string literal listed in eras.yaml."""
    for node in ast.walk(e.tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "at_least":
            arg = node.args[1] if len(node.args) == 2 else None
            if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
                raise doc.error(loc, "at_least(x, version) needs a version string literal, e.g. at_least(version, '0.14')")
            check_version_known(model, doc, loc, arg.value)
