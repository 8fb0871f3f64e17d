"""Every Python block of README.md and docs/ runs as written (issue 18 item 11), in a folder
holding the files the blocks name (made by examples/make_example_artifacts.py --docs).

Blocks that call *your* code (``my_lib``, ``my_reader``, ``to_canonical``, the ``data`` you
feed it) run with the small stand-in reader of this file, built on mlf-spec, so that the
block itself is executed unchanged; a block that defines pytest tests has them called with a
real conformance vector; the atheris harness runs in a child process for a few inputs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))
from make_example_artifacts import doc_files  # noqa: E402

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def python_blocks() -> list:
    """(file, line, code) of every ```python block."""
    out = []
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        for m in _BLOCK.finditer(text):
            line = text.count("\n", 0, m.start()) + 2
            out.append(pytest.param(path, line, m.group(1), id=f"{path.relative_to(ROOT)}:{line}"))
    return out


def test_the_docs_have_python_blocks() -> None:
    assert len(python_blocks()) >= 12


def _stand_in_modules() -> dict[str, types.ModuleType]:
    """``my_lib`` and ``my_reader``: a reader of .params files as a user would write one."""
    from mlf_spec import params
    from mlf_spec.conformance.adapters.base import Rejected
    from mlf_spec.conformance.adapters.mlf_spec import MlfSpecAdapter
    from mlf_spec.errors import MlfError

    class _Tensor:
        def __init__(self, info, raw: bytes) -> None:
            self.code, self.bits, self.lanes = info.dtype.code, info.dtype.bits, info.dtype.lanes
            self.shape, self._raw = info.shape, raw

        def raw_bytes(self) -> bytes:
            return self._raw

    def load_params(data: bytes):
        with params.open(bytes(data)) as lazy:
            return [(i.name, _Tensor(i, bytes(lazy.raw(i)))) for i in lazy.index]

    my_lib = types.ModuleType("my_lib")
    my_lib.load_params = load_params  # type: ignore[attr-defined]
    my_lib.read = bytes  # type: ignore[attr-defined]  # README: read, then to_canonical
    my_lib.to_canonical = lambda data: MlfSpecAdapter().decode("params", data, {})  # type: ignore[attr-defined]
    my_lib.Error = Rejected  # type: ignore[attr-defined]  # what to_canonical raises
    my_lib.FormatError = MlfError  # type: ignore[attr-defined]
    my_reader = types.ModuleType("my_reader")
    my_reader.load = params.loads  # type: ignore[attr-defined]
    my_reader.FormatError = MlfError  # type: ignore[attr-defined]
    return {"my_lib": my_lib, "my_reader": my_reader}


@pytest.fixture
def doc_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    doc_files(tmp_path)
    monkeypatch.chdir(tmp_path)
    for name, mod in _stand_in_modules().items():
        monkeypatch.setitem(sys.modules, name, mod)
    return tmp_path


def _namespace(code: str) -> dict:
    """What a block may take from its surroundings: your reader and your input."""
    from mlf_spec import params

    # a block written as a script (the isolation example's guard) runs as one
    ns: dict = {"__name__": "__main__" if 'if __name__ == "__main__":' in code else "doc_block"}
    if "my_reader" in code and "import my_reader" not in code:
        ns["my_reader"] = params.loads  # the README's isolation example: a function reading bytes
    if "data" in code:
        ns["data"] = Path("model.params").read_bytes()
    return ns


def _call_conformance_tests(ns: dict) -> int:
    """Call the pytest tests a block defines with real vectors (the plugin's mlf_case)."""
    from mlf_spec.conformance.vectors import load_suite

    tests = [v for k, v in ns.items() if k.startswith("test_") and callable(v)]
    cases = [c for c in load_suite(formats=["params"], roles=["decode"])][:5]
    for test in tests:
        for case in cases:
            test(case)
    return len(tests) * len(cases)


@pytest.mark.parametrize(("path", "line", "code"), python_blocks())
def test_python_block_runs_as_written(doc_dir: Path, path: Path, line: int, code: str,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    if "atheris" in code:
        _run_atheris_block(doc_dir, code)
        return
    if "from tvm_params import" in code:
        _with_kaitai_parser(monkeypatch)
    ns = _namespace(code)
    registers = re.search(r"^reader_target\(", code, re.M) is not None
    if registers:  # a registration in mlf_spec/fuzzing/targets.py: run there, on a copy of the registry
        from mlf_spec.fuzzing import targets

        monkeypatch.setattr(targets, "TARGETS", dict(targets.TARGETS))
        ns.update({k: v for k, v in vars(targets).items() if not k.startswith("__")})
        before = set(targets.TARGETS)
    exec(compile(code, f"{path}:{line}", "exec"), ns)  # noqa: S102
    if registers:
        from mlf_spec.fuzzing import targets

        (new,) = set(targets.TARGETS) - before
        for data in (b"", Path("model.params").read_bytes()):
            targets.run(new, data)  # the promise: a result or an MlfError, under every invariant
    if "mlf_conformance" in code:
        assert _call_conformance_tests(ns) > 0


def _with_kaitai_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    """The compiled Python parsers first on the path, and none of their module names taken
    from ``sys.modules``: another test of this worker may have imported a parser of the same
    name from another compile (the debug build's constructors do not read), and the block
    must meet the build it documents. Both are undone after the test."""
    from tests.support import kaitai as kaitai_support

    out, _ = kaitai_support.compiled(("python",))
    here = out / "python"
    for name in sorted(f.stem for f in here.glob("*.py")):
        monkeypatch.setitem(sys.modules, name, None)  # recorded, so the undo restores or removes it
        del sys.modules[name]
    monkeypatch.syspath_prepend(str(here))


def _run_atheris_block(doc_dir: Path, code: str) -> None:
    (doc_dir / "my_reader.py").write_text(textwrap.dedent("""
        from mlf_spec import params
        from mlf_spec.errors import MlfError as FormatError
        load = params.loads
    """))
    (doc_dir / "harness.py").write_text(code)
    r = subprocess.run([sys.executable, "harness.py", "-runs=30", "-seed=1"], cwd=doc_dir, capture_output=True,
                       text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(doc_dir)})
    assert r.returncode == 0, r.stderr[-2000:]
    assert "Done 30 runs" in r.stderr


#: what README's claim leaves out: an import tree not read as written, bytes after the body
_NOT_CLAIMED = {"tree.order", "tree.unused-children", "blob.trailing-bytes"}
#: every import-tree vector of the claim (filled by _one_blob_per_era)
_TREE_BLOBS: list[Path] = []


def _one_blob_per_era() -> list[Path]:
    """Vector blobs the README's blob block must hold for: one of each layout and era (a
    device module under _lib where the era has one), one of each era as ``blob.read`` detects
    it, and the count-0 shapes of every era (a bare _lib, a root without imports) and 0.7's
    one _lib per DSO module. A 0.2-0.6 blob (no import tree) is left out: read
    without ``era="0.6"`` it is taken for a 0.7-0.20 one; so is what README's claim leaves out."""
    from mlf_spec import blob

    found: dict[object, Path] = {}
    for p in sorted((ROOT / "vectors" / "blob").glob("blob.*.bin")):
        m = re.match(r"blob\.((?:legacy|ffi)\.(?:\d+\.\d+|latest))\.", p.name)
        if not m or m.group(1) == "legacy.0.6":
            continue
        b = blob.read_one(p)
        if _NOT_CLAIMED & {f.code for f in b.findings}:
            continue
        if ".tree." in p.name:
            _TREE_BLOBS.append(p)
            if not re.search(r"\.tree\.(lib-only|root-without-imports|two-libs|two-libs-only)\.", p.name):
                continue  # TVM's own numbering (the block's first build) need not make what 0.7 or a hand wrote
            found[p.name] = p
        if m.group(1) not in found or "device_binary" in p.name:
            found[m.group(1)] = p
        found.setdefault((b.format, b.era_label), p)
    return sorted(set(found.values()))
_ERA_BLOBS = _one_blob_per_era()


@pytest.mark.parametrize("vector", _ERA_BLOBS, ids=lambda p: p.name)
def test_the_readme_blob_block_holds_for_a_blob_of_every_era(doc_dir: Path, vector: Path) -> None:
    # the README's `blob.build(m[0], order=m) == b.data` raised ConstraintError on every blob of TVM <= 0.20:
    # the block ran only on the one blob doc_files made
    (code,) = [m.group(1) for m in _BLOCK.finditer((ROOT / "README.md").read_text(encoding="utf-8"))
               if 'blob.read_one("deploy.so")' in m.group(1)]
    (doc_dir / "deploy.so").write_bytes(vector.read_bytes())
    ns = _namespace(code)
    exec(compile(code, f"README.md blob block on {vector.name}", "exec"), ns)  # noqa: S102
    assert ns["b"].data == vector.read_bytes()


@pytest.mark.parametrize("vector", _TREE_BLOBS, ids=lambda p: p.name)
def test_the_readme_rebuild_from_modules_holds_for_every_import_tree_shape(vector: Path) -> None:
    # README: `blob.build(m[0], order=m, ...)` rebuilds every blob blob.read accepts whose tree is read as written;
    # on a bare _lib of count 0 modules() was [] and m[0] raised IndexError
    from mlf_spec import blob

    block = next(m.group(1) for m in _BLOCK.finditer((ROOT / "README.md").read_text(encoding="utf-8"))
                 if 'blob.read_one("deploy.so")' in m.group(1))
    lines = block.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("m = b.modules()"))
    ns = {"blob": blob, "b": blob.read_one(vector)}
    exec(compile("\n".join(lines[start:]), f"README.md rebuild on {vector.name}", "exec"), ns)  # noqa: S102
    assert ns["m"][0].imports or len(ns["m"]) == 1


def test_blob_vectors_of_several_eras_are_found() -> None:
    from mlf_spec import blob

    assert {p.name.split(".")[1] for p in _ERA_BLOBS} == {"legacy", "ffi"}
    # every era blob.read tells apart, and the bare _lib of count 0 (modules() gave [] and m[0] raised)
    assert {blob.read_one(p).era_label for p in _ERA_BLOBS} == {
        "0.7 (one _lib per DSO module)", "0.7-0.20", "0.21", "0.22-0.23", "0.24 or later"}
    assert {"blob.legacy.0.14.tree.lib-only.bin", "blob.legacy.0.20.tree.root-without-imports.bin"} <= {
        p.name for p in _ERA_BLOBS}
    assert len(_TREE_BLOBS) >= 30 and any(".tree.shared." in p.name for p in _TREE_BLOBS)


def test_the_readme_isolation_block_runs_as_a_script(doc_dir: Path) -> None:
    # the block without the guard reported `crash` for a reader that cannot crash when run at a script's top level:
    # the spawned worker imports the script again
    (code,) = [m.group(1) for m in _BLOCK.finditer((ROOT / "README.md").read_text(encoding="utf-8"))
               if "Isolated(my_reader" in m.group(1)]
    script = doc_dir / "isolate.py"
    script.write_text("from pathlib import Path\n\n\ndef my_reader(data):\n    from mlf_spec import params\n"
                      "    return len(params.loads(data))\n\n\ndata = Path('model.params').read_bytes()\n" + code)
    p = subprocess.run([sys.executable, str(script)], cwd=doc_dir, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stdout.splitlines() == ["ok"], (p.stdout, p.stderr[-2000:])
