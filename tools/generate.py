"""Rebuild generated/ from spec/ (deterministically), or check that it is up to date.

    python tools/generate.py           # write generated/
    python tools/generate.py --check   # exit 1 and list the differences if generated/ is stale
"""

from __future__ import annotations

import argparse
import difflib
import importlib.abc
import importlib.util
import sys
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT))

from specgen.emit_construct import CONSTRUCT_LIB, emit_construct  # noqa: E402
from specgen.emit_data import emit_binary_data, emit_table_data  # noqa: E402
from specgen.emit_docs import emit_binary_doc, emit_index, emit_table_doc  # noqa: E402
from specgen.emit_fast import FASTLIB, emit_fast  # noqa: E402
from specgen.emit_kaitai import emit_kaitai, emit_kaitai_doc, graph_specs  # noqa: E402
from specgen.emit_records import emit_records  # noqa: E402
from specgen.emit_strategies import emit_strategies  # noqa: E402
from specgen.emit_versioned import (  # noqa: E402
    RECORDLIB,
    emit_findings,
    emit_layout,
    emit_timeline,
    emit_versioned_strategies,
)
from specgen.kaitai_node import NodeToolsError, render_diagrams  # noqa: E402
from specgen.load import Model, load  # noqa: E402
from specgen.migrations import emit_data as emit_migration_data  # noqa: E402
from specgen.migrations import emit_pages as emit_migration_pages  # noqa: E402
from specgen.yamlload import SpecError  # noqa: E402

GEN = ROOT / "generated"
PKG_INIT = '''"""Code and data generated from spec/ by tools/generate.py. Do not edit.

Installed as ``mlf_spec.generated``. Per binary spec ``X``: ``X_fast`` (fast reader and
writer), ``X_construct`` (Construct grammar), ``X_ir`` (the spec as data) and
``X_strategies`` (hypothesis strategy entry points); per table ``T``: ``T_table``.
"""
'''


class _MemoryFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports the freshly generated sources from memory, so docs can run the writers."""

    def __init__(self, package: str, sources: dict[str, str]) -> None:
        self.package, self.sources = package, sources

    def find_spec(self, fullname: str, path: object = None, target: object = None):  # noqa: ANN201
        if fullname == self.package or (fullname.startswith(self.package + ".") and fullname.split(".", 1)[1] in self.sources):
            return importlib.util.spec_from_loader(fullname, self, is_package=fullname == self.package)
        return None

    def create_module(self, spec):  # noqa: ANN001, ANN201
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        if module.__name__ == self.package:
            module.__path__ = []  # type: ignore[attr-defined]
            return
        code = self.sources[module.__name__.split(".", 1)[1]]
        exec(compile(code, module.__name__, "exec"), module.__dict__)


def render(model: Model) -> dict[str, str]:
    """Every generated file: relative path -> text."""
    files: dict[str, str] = {"__init__.py": PKG_INIT, "_fastlib.py": FASTLIB, "_construct_lib.py": CONSTRUCT_LIB}
    for table in model.tables:
        files[f"{table}_table.py"] = emit_table_data(model, table)
        files[f"docs/{table}.md"] = emit_table_doc(model, table)
    for binary in model.binaries.values():
        files[f"{binary.name}_fast.py"] = emit_fast(model, binary)
        files[f"{binary.name}_construct.py"] = emit_construct(model, binary)
        files[f"{binary.name}_ir.py"] = emit_binary_data(model, binary)
        files[f"{binary.name}_strategies.py"] = emit_strategies(model, binary)
    for name in model.records:
        files.update(emit_records(model, name))
    if any(r.timeline or r.lenient for r, _ in model.records.values()):
        files["_recordlib.py"] = RECORDLIB
    for name in model.timelines:
        files.update(emit_timeline(model, name))
    for name, (layout, _) in model.layouts.items():
        files.update(emit_layout(model, name))
        files[f"{layout.metadata}_strategies.py"] = emit_versioned_strategies(model, layout.metadata, name,
                                                                             layout.findings)
    for name in model.findings:
        files.update(emit_findings(model, name))
    for records in sorted({s.records for s, _ in model.migrations.values()}):
        files[f"{records}_migrations.py"] = emit_migration_data(model, records)
        files.update(emit_migration_pages(model, records))
    # Docs need the writers: import the new sources from memory and build the examples.
    modules = {p[:-3].replace("/", "."): t for p, t in files.items() if p.endswith(".py") and p != "__init__.py"}
    package = "_mlf_spec_generating"
    finder = _MemoryFinder(package, modules)
    sys.meta_path.insert(0, finder)
    try:
        from mlf_spec.spec_engine import build, hexdump, trace

        for binary in model.binaries.values():
            ir = importlib.import_module(f"{package}.{binary.name}_ir")
            examples = []
            for ex in ir.EXAMPLES:
                data = build(ir.STRUCTS, ex["struct"], ex["value"])
                _, spans = trace(ir.STRUCTS, ex["struct"], data)
                lines = list(hexdump(data, spans))
                lines.append(f"{len(data):06x}  (end, {len(data)} bytes)")
                examples.append((ex["name"], ex["doc"], lines))
            files[f"docs/{binary.name}.md"] = emit_binary_doc(model, binary, examples, ksy=f"tvm_{binary.name}")
    finally:
        sys.meta_path.remove(finder)
        for name in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
            del sys.modules[name]
    ksy_texts, ksy_objs, gaps = emit_kaitai(model)
    for name, text in ksy_texts.items():
        files[f"kaitai/{name}"] = text
    files["docs/kaitai.md"] = emit_kaitai_doc(model, ksy_objs, gaps)
    for kid, svg in render_diagrams(graph_specs(ksy_objs)).items():
        files[f"docs/diagrams/{kid}.svg"] = svg
    files["docs/index.md"] = emit_index(model)
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="fail if generated/ differs from what spec/ produces")
    args = parser.parse_args(argv)
    try:
        model = load(ROOT / "spec")
        files = render(model)
    except SpecError as exc:
        print(f"spec error: {exc}", file=sys.stderr)
        return 2
    except NodeToolsError as exc:
        print(f"error: the Kaitai Struct diagrams need the pinned Node.js tools: {exc}", file=sys.stderr)
        return 2
    existing = {p.relative_to(GEN).as_posix() for p in GEN.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    stale = sorted(p for p in existing - set(files))
    if args.check:
        bad = 0
        for rel, text in sorted(files.items()):
            path = GEN / rel
            old = path.read_text(encoding="utf-8") if path.exists() else None
            if old != text:
                bad += 1
                print(f"stale: generated/{rel}")
                if old is not None:
                    diff = difflib.unified_diff(old.splitlines(), text.splitlines(), f"generated/{rel}", "expected", lineterm="")
                    for line in list(diff)[:20]:
                        print("  " + line)
        for rel in stale:
            bad += 1
            print(f"not produced by spec/ (delete it): generated/{rel}")
        if bad:
            print(f"{bad} generated file(s) out of date; run `python tools/generate.py`", file=sys.stderr)
            return 1
        print(f"generated/ is up to date ({len(files)} files)")
        return 0
    for rel, text in files.items():
        path = GEN / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
    for rel in stale:
        (GEN / rel).unlink()
    print(f"wrote generated/ ({len(files)} files)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
