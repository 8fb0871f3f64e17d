"""No import cycles in the package (``mlf_spec/`` with ``generated/`` as ``mlf_spec.generated``)
nor in the generator (``tools/generate.py`` and ``tools/specgen/``).

What counts as an import of module A by module B (an arrow B -> A), read statically from the
source with :mod:`ast` (nothing is imported):

* every ``import A`` / ``from A import n`` statement anywhere in B: at module level (eager: it
  runs when B is imported, also inside ``try``/``if`` there and in class bodies) and inside
  functions (lazy: it runs when the function is first called). Both count: a lazy import
  breaks a cycle only for the interpreter, not for a reader, who still cannot understand
  either module without the other, and which side finishes importing first depends on which
  function is called first;
* ``from P import n`` where ``n`` is a submodule of the package ``P`` is an arrow to ``P.n``
  (the name is the module), otherwise to ``P`` itself (its ``__init__``);
* ``importlib.import_module("A")`` with a literal name (a name computed at run time is not
  followed);
* imports under ``if TYPE_CHECKING:`` count too for the package and the generator (they never
  run, but two modules typed by each other still know each other); the checker can leave them
  out (``typing_imports=False``);
* not counted: the implicit import of a package's ``__init__`` when one of its modules is
  imported (that is the package being set up, not a dependency the module chose).

Only modules of the tree are nodes; third-party and standard-library imports are leaves.
A failure lists each cycle with the arrows that tie it and whether each arrow is eager or lazy.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Arrow:
    """``source`` imports ``target`` at ``line``; ``lazy`` when inside a function."""

    source: str
    target: str
    line: int
    lazy: bool


def _modules(base: Path, package: str) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` under ``base`` (the package ``package``)
    and every ``.c`` there (a C extension module named after its source, as setup.py builds
    ``mlf_spec/params/_walker.c``: a leaf, it imports nothing of the tree)."""
    out: dict[str, Path] = {}
    for p in sorted([*base.rglob("*.py"), *base.rglob("*.c")]):
        parts = list(p.relative_to(base).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join([package, *parts]) if package else ".".join(parts)] = p
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _arrows(name: str, path: Path, modules: dict[str, Path], typing_imports: bool = False) -> list[Arrow]:
    is_package = path.name == "__init__.py"
    package = name if is_package else name.rpartition(".")[0]
    out: list[Arrow] = []

    def resolve(level: int, module: str | None) -> str:
        if level == 0:
            return module or ""
        base = package.split(".") if package else []
        base = base[: len(base) - (level - 1)] if level > 1 else base
        return ".".join([*base, *([module] if module else [])])

    def add(target: str, line: int, lazy: bool) -> None:
        # the longest prefix that is a module of the tree (import a.b.c where c is a name)
        parts = target.split(".")
        while parts and ".".join(parts) not in modules:
            parts.pop()
        arrow = Arrow(name, ".".join(parts), line, lazy)
        if parts and arrow.target != name and arrow not in out:
            out.append(arrow)

    def visit(node: ast.AST, lazy: bool) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test) and not typing_imports:
            for child in node.orelse:
                visit(child, lazy)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, node.lineno, lazy)
        elif isinstance(node, ast.ImportFrom):
            base = resolve(node.level, node.module)
            for alias in node.names:
                sub = f"{base}.{alias.name}" if base else alias.name
                add(sub if sub in modules else base, node.lineno, lazy)
        elif (isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name))
              and (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id) == "import_module"
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            add(node.args[0].value, node.lineno, lazy)
        inner = lazy or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        for child in ast.iter_child_nodes(node):
            visit(child, inner)

    visit(ast.parse(path.read_text(encoding="utf-8"), str(path)), False)
    return out


def _cycles(modules: dict[str, Path], typing_imports: bool = False) -> list[list[Arrow]]:
    """The strongly connected components of more than one module, each as its arrows
    (``typing_imports``: imports under ``if TYPE_CHECKING:`` count too)."""
    arrows = [a for n, p in modules.items() if p.suffix == ".py" for a in _arrows(n, p, modules, typing_imports)]
    graph: dict[str, set[str]] = {n: set() for n in modules}
    for a in arrows:
        graph[a.source].add(a.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    comps: list[set[str]] = []

    def connect(v: str) -> None:  # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(comp)

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return [[a for a in arrows if a.source in c and a.target in c] for c in comps]


def _describe(cycles: list[list[Arrow]]) -> str:
    lines = []
    for i, arrows in enumerate(cycles, 1):
        lines.append(f"cycle {i}:")
        lines += [f"  {a.source} -> {a.target} (line {a.line}, {'lazy' if a.lazy else 'eager'})" for a in arrows]
    return "\n".join(lines)


def package_modules() -> dict[str, Path]:
    """The package's modules, the generated ones under their installed name."""
    return {**_modules(ROOT / "mlf_spec", "mlf_spec"), **_modules(ROOT / "generated", "mlf_spec.generated")}


def generator_modules() -> dict[str, Path]:
    """The generator's modules as it imports them (``tools/`` is put on sys.path)."""
    return {"generate": ROOT / "tools" / "generate.py", **_modules(ROOT / "tools" / "specgen", "specgen")}


def test_the_package_has_no_import_cycle() -> None:
    cycles = _cycles(package_modules(), typing_imports=True)
    assert not cycles, "import cycles in mlf_spec:\n" + _describe(cycles)


def test_the_generator_has_no_import_cycle() -> None:
    cycles = _cycles(generator_modules(), typing_imports=True)
    assert not cycles, "import cycles in tools/specgen:\n" + _describe(cycles)


def test_the_analysis_finds_a_cycle_and_skips_type_checking_imports(tmp_path: Path) -> None:
    """The checker itself: a lazy two-module cycle is found (with the arrow marked lazy), the
    same modules tied only under ``if TYPE_CHECKING:`` are not a cycle, and ``from pkg import
    mod`` is an arrow to the submodule."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from . import b\n")
    (pkg / "b.py").write_text("def f():\n    from pkg.a import x\n")
    cycles = _cycles(_modules(pkg, "pkg"))
    assert [[(a.source, a.target, a.lazy) for a in c] for c in cycles] == [
        [("pkg.a", "pkg.b", False), ("pkg.b", "pkg.a", True)]]
    (pkg / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import x\n")
    assert _cycles(_modules(pkg, "pkg")) == []
    assert len(_cycles(_modules(pkg, "pkg"), typing_imports=True)) == 1
    (pkg / "b.py").write_text("import importlib\nimportlib.import_module('pkg.a')\n")
    assert len(_cycles(_modules(pkg, "pkg"))) == 1


def test_names_moved_to_break_cycles_keep_working() -> None:
    """The names the cycle breaking moved are still where users and emitters took them from;
    the one public module that was emptied (``mlf_spec.diff.text``) warns."""
    import sys
    import warnings

    import pytest

    from mlf_spec import _compress, sniff
    from mlf_spec.conformance import suite, vectors
    from mlf_spec.diff import Diff, _model

    assert sniff.COMPRESSION_MAGIC is _compress.COMPRESSION_MAGIC
    assert suite.case_text is vectors.case_text
    with pytest.warns(DeprecationWarning, match="diff.text.diff_text is deprecated"):
        from mlf_spec.diff.text import diff_text
    d = Diff("a", "b", "params")
    assert diff_text(d) == str(d) == _model.diff_text(d)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sys.path.insert(0, str(ROOT / "tools"))
        try:
            from specgen import code, emit_fast, load, versions
        finally:
            sys.path.remove(str(ROOT / "tools"))
    assert emit_fast.Code is code.Code and load.vkey is versions.vkey
