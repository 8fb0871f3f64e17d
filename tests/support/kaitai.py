"""Helpers of the Kaitai Struct tests: compile the exported .ksy files with the pinned npm
compiler, read files with the generated Python and JavaScript parsers, and read them with
mlf-spec's own generated readers into the same value trees.

The compiled parsers are cached next to the npm packages (tools/specgen/kaitai_node.py), keyed
by the hash of the .ksy files, so the suite compiles once per change of the spec.
"""

from __future__ import annotations

import base64
import hashlib
import importlib
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

from specgen import kaitai_node  # noqa: E402
from specgen.common import flat_name  # noqa: E402

from mlf_spec import kaitai  # noqa: E402
from mlf_spec.kaitai import reading  # noqa: E402

LANGS = ("python", "javascript")


def ksy_objects() -> dict[str, dict[str, Any]]:
    """The exported .ksy files, parsed (by id)."""
    return {name.removesuffix(".ksy"): yaml.safe_load(data) for name, data in kaitai.ksy_files().items()}


def compiled(langs: tuple[str, ...] = LANGS, debug: bool = False) -> tuple[Path, dict[str, Any]]:
    """The directory holding ``<lang>/`` parsers of every exported .ksy (``debug``: in the
    compiler's debug mode, with field positions), and the compile figures of the run that made
    it ({"compiler", "require_ms", "ms", "wall_s"})."""
    objs = ksy_objects()
    key: list[Any] = [objs, langs] + (["debug"] if debug else [])
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    base = kaitai_node.ensure_installed() / "compiled"
    target = base / digest
    with kaitai_node._locked(base / f"{digest}.lock"):
        if not (target / "figures.json").exists():
            work = base / f"{digest}.tmp"
            shutil.rmtree(work, ignore_errors=True)
            start = time.perf_counter()
            figures = kaitai_node.compile_ksy(objs, langs, work, debug=debug)
            figures["wall_s"] = round(time.perf_counter() - start, 3)
            (work / "figures.json").write_text(json.dumps(figures))
            shutil.rmtree(target, ignore_errors=True)
            work.rename(target)
    return target, json.loads((target / "figures.json").read_text())


# --------------------------------------------------------------------------------------------
# mlf-spec's own reading, as a value tree


def _ir(spec: str) -> Any:
    return importlib.import_module(f"mlf_spec.generated.{spec}_ir")


def _nested(f: dict) -> bool:
    return bool(f.get("sized") or f.get("keep_span") or "count" in f or "since" in f or "until" in f or "when" in f)


def fast_tree(structs: dict, name: str, rec: Any, buf: Any, prefix: str = "", outer: Any = None) -> dict:
    """The value tree of a record of mlf-spec's fast reader (inline structs are flattened
    into their parent's slots; lazy bytes are kept as offsets into ``buf``)."""
    owner = outer if prefix else rec
    ns: dict[str, Any] = {}
    for f in structs[name]["fields"]:
        n = f["name"]
        slot = flat_name(prefix, n) if prefix else n
        if f["kind"] == "struct" and structs[f["struct"]]["inline"] and not _nested(f):
            ns[n] = fast_tree(structs, f["struct"], rec, buf, slot, owner)
            continue
        if f["kind"] == "bytes" and f.get("lazy"):
            off = getattr(owner, slot + "_offset")
            ns[n] = None if off is None else bytes(buf[off: off + f["size"][1](ns)])
            continue
        ns[n] = _fast_value(structs, f, getattr(owner, slot), ns, buf)
    return ns


def _fast_elem(structs: dict, t: str, v: Any, buf: Any) -> Any:
    if t in structs:
        return fast_tree(structs, t, v, buf)
    if isinstance(v, (bytearray, memoryview)):
        return bytes(v)
    return v


def _fast_value(structs: dict, f: dict, v: Any, ns: dict, buf: Any) -> Any:
    if v is None:
        return None
    kind = f["kind"]
    if kind == "switch":
        key = f["switch_on"](ns)
        return _fast_elem(structs, f["switch"]["cases"].get(key, f["switch"].get("default")), v, buf)
    if "count" in f:
        return [_fast_elem(structs, f["struct"] if kind == "struct" else f["type"], x, buf) for x in v]
    if kind == "vec":
        return [_fast_elem(structs, f["elem"], x, buf) for x in v]
    if kind == "map":
        return [(_fast_elem(structs, f["key"], k, buf), _fast_elem(structs, f["value"], x, buf)) for k, x in v]
    if kind == "struct":
        return fast_tree(structs, f["struct"], v, buf)
    return _fast_elem(structs, f["type"], v, buf)


def mlf_read(spec: str, data: bytes, era: tuple[int, ...]) -> dict:
    """mlf-spec's reading of a whole file of ``spec`` (its generated fast reader) as a value tree."""
    root = kaitai.roots()[spec].struct
    fast = importlib.import_module(f"mlf_spec.generated.{spec}_fast")
    rec, end = getattr(fast, f"read_{root}")(data, 0, len(data), era)
    assert end == len(data), f"{spec}: {len(data) - end} bytes after the root"
    return fast_tree(_ir(spec).STRUCTS, root, rec, data)


# --------------------------------------------------------------------------------------------
# the generated parsers


def js_read(js_dir: Path, items: list[tuple[str, bytes, tuple[int, ...]]]) -> list[tuple[bool, Any]]:
    """Parse each (spec, data, era) with the generated JavaScript (one Node.js process):
    (True, value tree) or (False, {"name", "message"})."""
    request = {"specs": ksy_objects(), "files": [
        {"root": kaitai.roots()[spec].ksy_id, "tvm_minor": kaitai.tvm_minor(era),
         "data": base64.b64encode(data).decode()} for spec, data, era in items]}
    answers = kaitai_node.run(request, script="dump.cjs", args=(str(js_dir),))
    out: list[tuple[bool, Any]] = []
    for (spec, _data, _era), ans in zip(items, answers):
        if not ans["ok"]:
            out.append((False, ans["error"]))
            continue
        tree = reading.value_tree(_ir(spec).STRUCTS, kaitai.roots()[spec].struct, reading.from_json(ans["tree"]))
        out.append((True, tree))
    return out


def compare(expected: dict, got: dict, doubles: list[int] | None = None) -> tuple[list[str], int]:
    """(differences, number of leaf fields compared); see reading.same for ``doubles``."""
    count = [0]
    diffs = reading.same(expected, got, count=count, doubles=doubles)
    return diffs, count[0]
