"""Issue 31's five yardsticks of the house, read statically (with :mod:`ast` and :mod:`tokenize`;
nothing is imported) from the hand-written code: ``mlf_spec/`` and ``tools/``.

    python tools/house_metrics.py            # a readable summary
    python tools/house_metrics.py --json     # the same figures as one JSON object
    python tools/house_metrics.py --root DIR # another tree (the tests use a small synthetic one)

What each yardstick counts:

``long_functions``
    Every function and method (``def`` / ``async def``, nested ones too, each on its own) whose
    length, ``end_lineno - lineno + 1`` of its ``ast`` node (the ``def`` line to the last line of
    the body, docstring included, decorators not), is over 80 lines. Listed as ``file:name:lines``.
``type_ignores``
    ``# type: ignore`` comments (with or without ``[code]``), counted from the comment tokens, so a
    string that contains the words does not count. Listed by file.
``long_modules``
    Python modules with more than 800 lines (``generated/`` is outside the scanned roots).
``kind_dispatch``
    Field-kind dispatch by string comparison, in the files that handle spec fields
    (``tools/specgen/`` except ``tools/specgen/fields/``, which is where the kinds live,
    ``mlf_spec/_internal/`` and ``mlf_spec/fuzzing/mutate_spec.py``). One count per comparison
    (``==``, ``!=``, ``in``, ``not in``; a chained comparison counts each operator) and per
    ``case`` of a ``match``, when

    * one side is a *kind expression*: an attribute ``X.kind``, a subscript ``X["kind"]``, a call
      ``X.get("kind")``, or the bare name ``kind`` (the code's habit ``kind = f["kind"]``);
    * the other side is a string literal, or a tuple / list / set of string literals, and at least
      one of them names a field kind of the spec's binary IR (:data:`FIELD_KINDS`: the kinds of
      ``tools/specgen/fields`` and the scalar type names);
    * and the subject is not a versioned record's type expression (whose kinds ``map`` shares
      with the fields): it is not ``X.type.kind``, and in the same function the same name
      (``t`` of ``t.kind``, ``t.args[0].kind``) is not compared to a kind only type expressions
      have (:data:`TYPE_KINDS`: ``basic``, ``lit``, ``list``, ...).
``private_imports``
    Imports of another module's private name: ``from x import _y`` (each private name imported;
    ``_y`` may be a submodule or an attribute) and ``import x._y`` (a dotted name with a private
    part after the first). Dunder names are not private. Not counted: a package's ``__init__``
    importing from itself or its own submodules (a re-export), e.g. ``from . import _x`` or
    ``from ._x import _y`` in ``p/__init__.py``; a module importing a private submodule of its
    own package (``from mlf_spec.cli import _batch`` in ``mlf_spec/cli/check.py``: the
    underscore says "private to the package", and the package is where it is used); and private
    names of third-party packages (``tvm.runtime._ffi_api`` is how TVM exposes its functions,
    not ours to rename).
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import re
import sys
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCANNED = ("mlf_spec", "tools")
KIND_FILES = ("tools/specgen/", "mlf_spec/_internal/", "mlf_spec/fuzzing/mutate_spec.py")
KIND_EXEMPT = ("tools/specgen/fields/",)
MAX_FUNCTION_LINES = 80
MAX_MODULE_LINES = 800

FIELD_KINDS = frozenset({
    "scalar", "scalar_array", "array", "str", "bytes", "vec", "map", "struct", "switch",
    "u8", "u16", "u32", "u64", "i8", "i16", "i32", "i64", "f16", "f32", "f64",
})
TYPE_KINDS = frozenset({"basic", "lit", "list", "intmap", "tuple", "ref", "union"})
_IGNORE = re.compile(r"#\s*type:\s*ignore\b")


@dataclass
class Metrics:
    """The five yardsticks of one tree."""

    long_functions: list[str] = field(default_factory=list)
    type_ignores: dict[str, int] = field(default_factory=dict)
    long_modules: dict[str, int] = field(default_factory=dict)
    kind_dispatch: list[str] = field(default_factory=list)
    private_imports: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, object]:
        """The figures and their lists, as ``--json`` prints them."""
        return {
            "long_functions": {"count": len(self.long_functions), "items": self.long_functions},
            "type_ignores": {"count": sum(self.type_ignores.values()), "by_file": self.type_ignores},
            "long_modules": {"count": len(self.long_modules), "by_file": self.long_modules},
            "kind_dispatch": {"count": len(self.kind_dispatch), "items": self.kind_dispatch},
            "private_imports": {"count": len(self.private_imports), "items": self.private_imports},
        }


def _files(root: Path) -> list[Path]:
    return sorted(p for d in SCANNED if (root / d).is_dir() for p in (root / d).rglob("*.py")
                  if ".venv" not in p.parts and "__pycache__" not in p.parts)


def _long_functions(rel: str, tree: ast.AST) -> list[str]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            n = (node.end_lineno or node.lineno) - node.lineno + 1
            if n > MAX_FUNCTION_LINES:
                out.append((node.lineno, f"{rel}:{node.name}:{n}"))
    return [s for _, s in sorted(out)]


def _type_ignores(text: str) -> int:
    n = 0
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT and _IGNORE.search(tok.string):
                n += 1
    except (tokenize.TokenError, SyntaxError):
        pass
    return n


def _is_kind(e: ast.expr) -> bool:
    if isinstance(e, ast.Attribute):
        return e.attr == "kind"
    if isinstance(e, ast.Subscript):
        return isinstance(e.slice, ast.Constant) and e.slice.value == "kind"
    if isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr == "get":
        return bool(e.args) and isinstance(e.args[0], ast.Constant) and e.args[0].value == "kind"
    return isinstance(e, ast.Name) and e.id == "kind"


def _literals(e: ast.expr) -> list[str] | None:
    if isinstance(e, ast.Constant) and isinstance(e.value, str):
        return [e.value]
    if isinstance(e, (ast.Tuple, ast.List, ast.Set)) and e.elts and all(
            isinstance(x, ast.Constant) and isinstance(x.value, str) for x in e.elts):
        return [x.value for x in e.elts if isinstance(x, ast.Constant) and isinstance(x.value, str)]
    return None


def _root(e: ast.expr) -> str:
    """The name a kind expression hangs from (``t`` of ``t.args[0].kind``; ``kind`` itself)."""
    while isinstance(e, (ast.Attribute, ast.Subscript, ast.Call)):
        e = e.func if isinstance(e, ast.Call) else e.value
    return e.id if isinstance(e, ast.Name) else ""


def _comparisons(tree: ast.AST) -> list[tuple[int, ast.expr, list[str] | None, ast.AST]]:
    """(line, subject, literals, scope) of every comparison of something to string literals; the
    scope is the innermost function (or the module)."""
    out: list[tuple[int, ast.expr, list[str] | None, ast.AST]] = []

    def visit(node: ast.AST, scope: ast.AST) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            scope = node
        if isinstance(node, ast.Compare):
            left = node.left
            for op, right in zip(node.ops, node.comparators):
                if isinstance(op, (ast.Eq, ast.NotEq, ast.In, ast.NotIn)):
                    if _is_kind(left):
                        out.append((node.lineno, left, _literals(right), scope))
                    elif isinstance(op, (ast.Eq, ast.NotEq)) and _is_kind(right):
                        out.append((node.lineno, right, _literals(left), scope))
                left = right
        elif isinstance(node, ast.Match) and _is_kind(node.subject):
            for case in node.cases:
                out.append((case.pattern.lineno, node.subject, _case_literals(case.pattern), scope))
        for child in ast.iter_child_nodes(node):
            visit(child, scope)

    visit(tree, tree)
    return out


def _case_literals(p: ast.pattern) -> list[str] | None:
    if isinstance(p, ast.MatchValue):
        return _literals(p.value)
    if isinstance(p, ast.MatchOr):
        got = [_case_literals(x) for x in p.patterns]
        return None if any(g is None for g in got) else [s for g in got if g for s in g]
    return None


def _kind_dispatch(rel: str, tree: ast.AST) -> list[str]:
    found = _comparisons(tree)
    typed = {(id(scope), _root(subject)) for _, subject, lits, scope in found
             if lits and any(s in TYPE_KINDS for s in lits)}
    out = []
    for line, subject, lits, scope in found:
        if lits is None or not any(s in FIELD_KINDS for s in lits) or (id(scope), _root(subject)) in typed:
            continue
        if isinstance(subject, ast.Attribute) and isinstance(subject.value, ast.Attribute) \
                and subject.value.attr == "type":
            continue
        out.append((line, f"{rel}:{line}"))
    return [s for _, s in sorted(out)]


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _ours(module: str) -> bool:
    return module.split(".")[0] in ("mlf_spec", "specgen", "tools")


def _is_submodule(root: Path, rel: str, name: str) -> bool:
    here = (root / rel).parent
    return (here / f"{name}.py").exists() or (here / name / "__init__.py").exists()


def _module_name(rel: str) -> tuple[str, bool]:
    """(dotted module name, is a package ``__init__``) of a path relative to the root."""
    parts = list(Path(rel).with_suffix("").parts)
    if parts[0] == "tools":  # tools/ is the generator's import root (specgen.*), not a package
        parts = parts[1:]
    is_init = parts[-1] == "__init__"
    if is_init:
        parts = parts[:-1]
    return ".".join(parts), is_init


def _private_imports(root: Path, rel: str, tree: ast.AST) -> list[str]:
    me, is_init = _module_name(rel)
    package = me if is_init else me.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".") if package else []
                base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            own = is_init and (source == package or source.startswith(package + "."))
            if own or not _ours(source):
                continue
            for a in node.names:
                if _private(a.name) and not (source == package and _is_submodule(root, rel, a.name)):
                    out.append((node.lineno, f"{rel}:{node.lineno}: from {source} import {a.name}"))
        elif isinstance(node, ast.Import):
            for a in node.names:
                parts = a.name.split(".")
                own = is_init and (a.name == package or a.name.startswith(package + "."))
                sibling = ".".join(parts[:-1]) == package and _is_submodule(root, rel, parts[-1])
                if not own and not sibling and _ours(a.name) and any(_private(p) for p in parts[1:]):
                    out.append((node.lineno, f"{rel}:{node.lineno}: import {a.name}"))
    return [s for _, s in sorted(out)]


def measure(root: Path = ROOT) -> Metrics:
    """The five yardsticks of the tree at ``root``."""
    m = Metrics()
    for p in _files(root):
        rel = p.relative_to(root).as_posix()
        text = p.read_text(encoding="utf-8")
        lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
        if lines > MAX_MODULE_LINES:
            m.long_modules[rel] = lines
        n = _type_ignores(text)
        if n:
            m.type_ignores[rel] = n
        try:
            tree = ast.parse(text, filename=rel)
        except SyntaxError:
            continue
        m.long_functions += _long_functions(rel, tree)
        if any(rel.startswith(k) for k in KIND_FILES) and not any(rel.startswith(k) for k in KIND_EXEMPT):
            m.kind_dispatch += _kind_dispatch(rel, tree)
        m.private_imports += _private_imports(root, rel, tree)
    return m


def _summary(m: Metrics) -> str:
    out = [f"functions over {MAX_FUNCTION_LINES} lines: {len(m.long_functions)}"]
    out += [f"  {s}" for s in m.long_functions]
    out.append(f"# type: ignore: {sum(m.type_ignores.values())}")
    out += [f"  {f}: {n}" for f, n in sorted(m.type_ignores.items(), key=lambda kv: (-kv[1], kv[0]))]
    out.append(f"modules over {MAX_MODULE_LINES} lines: {len(m.long_modules)}")
    out += [f"  {f}: {n}" for f, n in sorted(m.long_modules.items(), key=lambda kv: (-kv[1], kv[0]))]
    out.append(f"field-kind string dispatch outside tools/specgen/fields: {len(m.kind_dispatch)}")
    by_file: dict[str, int] = {}
    for s in m.kind_dispatch:
        by_file[s.rpartition(":")[0]] = by_file.get(s.rpartition(":")[0], 0) + 1
    out += [f"  {f}: {n}" for f, n in sorted(by_file.items(), key=lambda kv: (-kv[1], kv[0]))]
    out.append(f"cross-module private imports: {len(m.private_imports)}")
    out += [f"  {s}" for s in m.private_imports]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    """Print the yardsticks of the tree (``--json`` for the machine-readable form)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--root", type=Path, default=ROOT, help="the tree to measure (default: this one)")
    args = ap.parse_args(argv)
    m = measure(args.root)
    print(json.dumps(m.as_json(), indent=2) if args.json else _summary(m))
    return 0


if __name__ == "__main__":
    sys.exit(main())
