"""The engine behind ``generated/mlf_strategies.py``: hypothesis strategies for MLF metadata
documents and whole archives, valid and broken by named kind.

* :func:`metadata_documents` draws schema-valid documents of any version and style straight
  from the spec (every record, key, type, rule and revision comes from ``mlf_ir``).
* :func:`archives` draws consistent archives as TVM's writer produced them: a random model
  (graph or AOT modules, parameters, inputs and outputs; operator modules) is turned into
  the metadata of a writer revision by projecting a superset of values onto the spec, the
  files are named by the layout spec, and :func:`mlf_spec.archive.build` lays the tar out.
  They check clean.
* :func:`broken_metadata` and :func:`broken_archives` break those in one named way; the
  kinds are derived from the spec (``METADATA_BROKEN_KINDS``, ``ARCHIVE_BROKEN_KINDS``).
"""

from __future__ import annotations

import copy
import datetime
import json
import tarfile
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import assume
from hypothesis import strategies as st

from mlf_spec import tar as _tar
from mlf_spec.generated import mlf_ir as _ir
from mlf_spec.generated import mlf_revisions_timeline as _tl
from mlf_spec.graph import codec as _graph
from mlf_spec.params import codec as _params

from . import archive as _archive
from . import layout as _layout
from . import metadata as _md

_INDEX: dict[str, int] = _tl.INDEX
_REVS: list[str] = [r["id"] for r in _tl.REVISIONS]
SOURCE_OWNER = (1000, 1000, "tvm", "tvm")


def _since(rev: str, rid: str) -> bool:
    return _INDEX[rev] >= _INDEX[rid]


# ----------------------------------------------------------------- generic documents

_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=8)


def _value(tree: list[Any], c: dict[str, Any], version: int, depth: int) -> st.SearchStrategy[Any]:
    kind = tree[0]
    if c.get("const") is not None:
        return st.just(c["const"])
    if c.get("enum"):
        return st.sampled_from(c["enum"])
    if kind == "basic":
        name = tree[1]
        if name == "str":
            return st.from_regex(c["pattern"], fullmatch=True) if c.get("pattern") else _TEXT
        if name == "int":
            return st.integers(min_value=c.get("minimum", -(2**31)), max_value=2**40)
        if name == "bool":
            return st.booleans()
        if name == "float":
            return st.floats(allow_nan=False, allow_infinity=False)
        if name == "null":
            return st.none()
        return st.one_of(st.none(), st.integers(0, 9), _TEXT)
    if kind == "lit":
        return st.just(tree[1])
    if kind == "union":
        return st.one_of(*[_value(t, {k: v for k, v in c.items() if k in ("pattern", "minimum")}, version, depth)
                           for t in tree[1]])
    if kind == "tuple":
        return st.tuples(*[_value(t, {}, version, depth) for t in tree[1]]).map(list)
    lo = c.get("min_items") or 0
    hi = c.get("max_items")
    hi = min(hi, 3) if hi is not None else (3 if depth < 3 else lo)
    hi = max(hi, lo)
    if kind == "list":
        elem = st.sampled_from(c["item_enum"]) if c.get("item_enum") else _value(tree[1], {}, version, depth + 1)
        return st.lists(elem, min_size=lo, max_size=hi)
    if kind in ("map", "intmap"):
        if kind == "intmap":
            keys: st.SearchStrategy[str] = st.integers(0, 20).map(str)
        else:
            keys = st.from_regex(c["key_pattern"], fullmatch=True) if c.get("key_pattern") else _TEXT
        values = _value(tree[1], {}, version, depth + 1)
        if c.get("keyed_by"):
            return st.lists(values, min_size=max(lo, 0), max_size=hi,
                            unique_by=lambda r, k=c["keyed_by"]: r[k]).map(
                lambda rs, k=c["keyed_by"]: {r[k]: r for r in rs})
        return st.dictionaries(keys, values, min_size=lo, max_size=hi)
    if kind == "ref":
        return _record(tree[1], version, depth + 1)
    raise AssertionError(f"unknown type tree {tree!r}")  # pragma: no cover


def _record(name: str, version: int, depth: int = 0) -> st.SearchStrategy[dict[str, Any]]:
    rec = _ir.PROJECTIONS[version]["records"][name]

    @st.composite
    def draw_record(draw: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in rec["fields"]:
            if not f["required"] and not draw(st.booleans()):
                continue
            out[f["name"]] = draw(_value(f["tree"], f, version, depth))
        return out

    return draw_record()


@st.composite
def metadata_documents(draw: Any, name: str = "mlf", version: int | None = None,
                       style: str | None = None) -> tuple[int, str, dict[str, Any]]:
    """(version, style, document) valid against the model of that version and style."""
    assert name == _ir.NAME
    versions = [v for v in _md.VERSIONS if version in (None, v) and (style is None or style in _md.styles(v))]
    v = draw(st.sampled_from(versions))
    s = style or draw(st.sampled_from(_md.styles(v)))
    root = next(r for r in _ir.PROJECTIONS[v]["roots"] if r["style"] == s)
    doc = draw(_record(root["record"], v))
    return v, s, doc


# ----------------------------------------------------------------- semantic archives


_DTYPES = ["float32", "int8", "uint8", "int32", "float16", "int16"]
_NAMES = ["default", "add", "mod1", "Mod2", "net_a", "kws"]
_TARGETS = ["c -keys=cpu -model=host", "llvm -keys=cpu -model=host", "c -keys=cpu -link-params=0 -model=host"]


@dataclass
class Tensor:
    name: str
    dtype: str
    shape: list[int]

    @property
    def nbytes(self) -> int:
        return _graph.nbytes(self.shape, self.dtype) or 0


@dataclass
class ModuleSpec:
    """What a relay build (or tvm.build operator) produced, enough to write its files."""

    name: str
    executor: str  # graph | aot | operator
    target: str
    datetime: str
    inputs: list[Tensor] = field(default_factory=list)
    outputs: list[Tensor] = field(default_factory=list)
    params: list[Tensor] = field(default_factory=list)
    graph: dict[str, Any] | None = None
    sources: int = 1
    objects: int = 0
    ext: str = "c"
    header: bool = False
    crt: bool = False
    workspace: int = 0
    op_functions: list[tuple[str, int]] = field(default_factory=list)
    prim_funcs: dict[str, list[Tensor]] = field(default_factory=dict)


@dataclass
class ArchiveSpec:
    version: int
    revision: str
    style: str
    modules: list[ModuleSpec]
    mtime: float
    version_spec: str = "0.16.dev0"


def _tensor(name: str) -> st.SearchStrategy[Tensor]:
    return st.builds(Tensor, st.just(name), st.sampled_from(_DTYPES), st.lists(st.integers(1, 4), min_size=1, max_size=2))


@st.composite
def graph_module(draw: Any, n_params_min: int) -> tuple[dict[str, Any], list[Tensor], list[Tensor], list[Tensor]]:
    """(graph JSON document, inputs, params, outputs) of a small GraphExecutor module with at
    least ``n_params_min`` params."""
    inputs = [draw(_tensor(n)) for n in draw(st.sampled_from([["a"], ["a", "b"], ["data"], ["x", "w0"]]))]
    params = [draw(_tensor(f"p{i}")) for i in range(draw(st.integers(n_params_min, 2)))]
    n_ops = draw(st.integers(1, 2))
    nodes: list[dict[str, Any]] = [{"op": "null", "name": t.name, "inputs": []} for t in inputs + params]
    entries = list(inputs + params)
    for k in range(n_ops):
        args = [[i, 0, 0] for i in range(len(nodes))] if k == 0 else [[len(nodes) - 1, 0, 0]]
        out = draw(_tensor(f"tvmgen_fused_op{k}"))
        attrs = {"num_outputs": "1", "num_inputs": str(len(args)), "flatten_data": "0", "func_name": out.name}
        if draw(st.booleans()):
            attrs["hash"] = f"{draw(st.integers(0, 2**64 - 1)):016x}"
        nodes.append({"op": "tvm_op", "name": out.name, "attrs": attrs, "inputs": args})
        entries.append(out)
    n = len(entries)
    sids = list(range(n))
    if n_ops == 2 and draw(st.booleans()):
        sids[-1] = sids[-2]  # storage reuse
    gattrs: dict[str, Any] = {"dltype": ["list_str", [t.dtype for t in entries]]}
    if draw(st.booleans()):
        gattrs["device_index"] = ["list_int", [1] * n]
    gattrs["storage_id"] = ["list_int", sids]
    gattrs["shape"] = ["list_shape", [t.shape for t in entries]]
    graph = {"nodes": nodes, "arg_nodes": list(range(len(inputs) + len(params))), "heads": [[len(nodes) - 1, 0, 0]],
             "attrs": gattrs, "node_row_ptr": list(range(n + 1))}
    return graph, inputs, params, [Tensor("output", entries[-1].dtype, entries[-1].shape)]


def _datetimes() -> st.SearchStrategy[str]:
    return st.datetimes(datetime.datetime(2021, 1, 1), datetime.datetime(2030, 12, 31)).map(
        lambda d: d.strftime(_md.DATETIME_FORMAT))


@st.composite
def archive_specs(draw: Any, version: int | None = None, style: str | None = None,
                  req: dict[str, Any] | None = None) -> ArchiveSpec:
    """A random model of what TVM exported, for a version/style/revision meeting ``req``
    (keys: style, executor, crt, io, header, min_sources, min_params, revisions)."""
    req = req or {}
    style = style or req.get("style")
    choices = []
    for rid in req.get("revisions") or _REVS:
        rev = next(r for r in _tl.REVISIONS if r["id"] == rid)
        v = rev["version"]
        if version not in (None, v):
            continue
        if style is not None and style not in _md.styles(v):
            continue
        if req.get("crt") and not _since(rid, "v5.crt"):
            continue
        if req.get("io") and not _since(rid, "v7.io"):
            continue
        if req.get("header") and not _since(rid, "v5.header"):
            continue
        if req.get("executor") == "aot" and not _since(rid, "v1.aot"):
            continue
        choices.append(rid)
    assume(choices)
    rid = draw(st.sampled_from(choices))
    v = next(r["version"] for r in _tl.REVISIONS if r["id"] == rid)
    s = style or draw(st.sampled_from(_md.styles(v)))
    if req.get("executor") or req.get("crt") or req.get("io") or req.get("min_params"):
        assume(s == "full-model")
    mtime = draw(st.integers(1_600_000_000, 1_900_000_000)) + draw(st.sampled_from([0.0, 0.25, 0.5123456]))
    if s == "operator":
        return ArchiveSpec(v, rid, s, [draw(_operator_module(rid))], mtime)
    n_mods = 1 if v < 7 else draw(st.integers(1, 3))
    names = draw(st.lists(st.sampled_from(_NAMES), min_size=n_mods, max_size=n_mods, unique=True))
    mods = []
    for i, name in enumerate(names):
        first = i == 0
        executor = req.get("executor") if first and req.get("executor") else None
        if first and req.get("crt"):
            executor = "aot"
        if executor is None:
            executor = draw(st.sampled_from(["graph", "aot"])) if _since(rid, "v1.aot") else "graph"
        mods.append(draw(_full_module(name, executor, rid, first and bool(req.get("crt")),
                                      (req.get("min_sources", 1) if first else 1),
                                      (req.get("min_params", 0) if first else 0), first and bool(req.get("header")))))
    version_spec = draw(st.sampled_from(["0.9.dev0", "0.16.dev0", "0.18.0"]))
    return ArchiveSpec(v, rid, s, mods, mtime, version_spec)


@st.composite
def _full_module(draw: Any, name: str, executor: str, rid: str, need_crt: bool, min_sources: int, min_params: int,
                 need_header: bool) -> ModuleSpec:
    m = ModuleSpec(name, executor, draw(st.sampled_from(_TARGETS)), draw(_datetimes()))
    if executor == "graph":
        m.graph, m.inputs, m.params, m.outputs = draw(graph_module(min_params))
    else:
        m.inputs = [draw(_tensor(n)) for n in draw(st.sampled_from([["a"], ["data", "weight"]]))]
        m.outputs = [draw(_tensor(n)) for n in draw(st.sampled_from([["output"], ["output0", "output1"],
                                                                     ["test_output_a"]]))]
        m.params = [draw(_tensor("p0"))] if draw(st.booleans()) or min_params else []
        m.crt = need_crt or (_since(rid, "v5.crt") and draw(st.booleans()))
        m.header = need_header or (_since(rid, "v5.header") and draw(st.booleans()))
    m.sources = draw(st.integers(min_sources, max(min_sources, 2)))
    m.objects = draw(st.integers(0, 1))
    m.ext = draw(st.sampled_from(["c", "cc", "cpp"])) if _since(rid, "v5.cpp") else "c"
    n_funcs = draw(st.integers(1, 2))
    m.op_functions = [(f"tvmgen_{name}_fused_op{k}", draw(st.integers(0, 4096))) for k in range(n_funcs)]
    m.workspace = max(w for _, w in m.op_functions) + draw(st.integers(0, 512))
    return m


@st.composite
def _operator_module(draw: Any, rid: str) -> ModuleSpec:
    m = ModuleSpec(draw(st.sampled_from(["add", "matmul", "op"])), "operator", draw(st.sampled_from(_TARGETS[:2])),
                   draw(_datetimes()))
    for k in range(draw(st.integers(1, 2))):
        fname = m.name if k == 0 else f"{m.name}_{k}"
        m.prim_funcs[fname] = [draw(_tensor(b)) for b in ["A", "B", "C"][: draw(st.integers(1, 3))]]
    m.sources = draw(st.integers(1, 2))
    m.ext = draw(st.sampled_from(["c", "cc"])) if _since(rid, "v5.cpp") else "c"
    return m


_Cand = _md.Candidates


def _module_values(m: ModuleSpec, spec: ArchiveSpec) -> dict[str, Any]:
    sids: list[dict[str, Any]] = []
    if m.graph is not None:
        sids = _graph.sid_map(_graph.parse(_graph.dumps(m.graph)))
    main: dict[str, Any] = {
        "constants_size_bytes": sum(t.nbytes for t in m.params) if m.executor == "graph" else 0,
        "device": 1, "io_size_bytes": sum(t.nbytes for t in m.inputs + m.outputs),
        "workspace_size_bytes": m.workspace,
        "inputs": {t.name: {"dtype": t.dtype, "size": t.nbytes} for t in m.inputs},
        "outputs": {t.name: {"dtype": t.dtype, "size": t.nbytes} for t in m.outputs},
    }
    memory_map: dict[str, Any] = {"functions": {"main": [main], "operator_functions": [
        {"function_name": n, "workspace": [{"device": 1, "workspace_size_bytes": w}]} for n, w in m.op_functions]}}
    if m.executor == "graph":
        memory_map["sids"] = sids
    values: dict[str, Any] = {
        "executors": [m.executor], "runtimes": [m.executor], "export_datetime": m.datetime, "model_name": m.name,
        "memory": _Cand(list=sids, memory_map=memory_map), "target": _Cand(intmap={"1": m.target}, list=[m.target]),
    }
    if m.crt:
        values["external_dependencies"] = [{"short_name": "tvm_standalone_crt", "url": "./runtime",
                                            "url_type": "mlf_path", "version_spec": spec.version_spec}]
    return values


def _operator_values(m: ModuleSpec, spec: ArchiveSpec) -> dict[str, Any]:
    # From v4 the legacy printer named only the last printed PrimFunc's parameters (its name
    # table was cleared per PrimFunc); from v7.null_binding nothing is named.
    last = list(m.prim_funcs)[-1] if m.prim_funcs else None
    null = _since(spec.revision, "v7.null_binding")
    memory = {f: [{"size_bytes": t.nbytes, "shape": t.shape, "dtype": t.dtype,
                   "input_binding": None if null or f != last else t.name}
                  for t in bufs] for f, bufs in m.prim_funcs.items()}
    return {"model_name": m.name, "export_datetime": m.datetime, "memory": memory,
            "target": _Cand(intmap={"1": m.target}, list=[m.target]), "runtimes": [], "executors": []}


def document_of(spec: ArchiveSpec) -> dict[str, Any]:
    """The metadata document the writer revision of ``spec`` produced."""
    if spec.style == "operator":
        values = _operator_values(spec.modules[0], spec)
    else:
        mods = {m.name: _module_values(m, spec) for m in spec.modules}
        values = {**mods[spec.modules[0].name], "modules": mods}
    return _md.compose(values, spec.version, spec.style, spec.revision)


def _path(spec: ArchiveSpec, kind: str, group: str = "main", **values: str) -> str:
    """The path of the layout entry of ``kind`` that the spec's revision wrote."""
    for e in _layout.entries_for(spec.version, spec.style):
        if e["kind"] == kind and e.get("group", "main") == group and spec.revision in e["present_in"]:
            return _layout.template(e, **values)
    raise AssertionError(f"no {kind} entry in v{spec.version} {spec.style} at {spec.revision}")  # pragma: no cover


def _array(t: Tensor, seed: int) -> np.ndarray:
    n = int(np.prod(t.shape))
    if n * np.dtype(t.dtype).itemsize > 1 << 20:
        return np.full(t.shape, seed, t.dtype)
    raw = (np.arange(n * np.dtype(t.dtype).itemsize, dtype=np.uint64) * 2654435761 + seed).astype(np.uint8)
    return raw.view(t.dtype).reshape(t.shape)


def files_of(spec: ArchiveSpec) -> dict[str, bytes | str]:
    """Every file (not metadata.json) the writer put in the archive of ``spec``."""
    files: dict[str, bytes | str] = {}
    crt = False
    for m in spec.modules:
        names = {"model": m.name, "model_lower": _layout.ascii_lower(m.name)}
        for n in range(m.sources):
            files[_path(spec, "c_source", **names, n=str(n), src_ext=m.ext)] = \
                f"// generated C for {m.name}, lib{n}\n#include <stdint.h>\nint32_t {m.name.lower()}_v{n} = {n};\n"
        for n in range(m.objects):
            files[_path(spec, "object_file", **names, n=str(n))] = b"\x7fELF\x02\x01\x01" + bytes(57) + m.name.encode()
        if spec.style == "operator":
            files[_path(spec, "tir_text", device_type="1")] = "# from tvm.script import ir as I\n# " + m.name + "\n"
            continue
        files[_path(spec, "params", **names)] = _params.dumps({t.name: _array(t, i) for i, t in enumerate(m.params)})
        files[_path(spec, "relay_text", **names)] = '#[version = "0.0.5"]\ndef @main() {\n  0\n}\n'
        if m.graph is not None:
            files[_path(spec, "graph_json", **names)] = _graph.dumps(m.graph)
        if m.header:
            files[_path(spec, "c_header", **names)] = f"#ifndef TVMGEN_{m.name.upper()}_H_\n#endif\n"
        crt = crt or m.crt
    if crt:
        for rest in ("include/tvm/runtime/crt/crt.h", "src/runtime/crt/common/crt_runtime_api.c", "CMakeLists.txt"):
            files[_path(spec, "opaque", group="runtime", rest=rest)] = f"/* standalone CRT: {rest} */\n"
        for e in _layout.entries_for(spec.version, spec.style):
            if e.get("group") == "templates" and spec.revision in e["present_in"]:
                files[e["path"]] = f"/* {e['path']} */\n"
    return files


def build_archive(spec: ArchiveSpec) -> _archive.Archive:
    """The archive TVM's writer revision produced for ``spec``."""
    md = _md.from_document(document_of(spec), version=spec.version, style=spec.style)
    return _archive.build(md, files_of(spec), mtime=spec.mtime, source_owner=SOURCE_OWNER)


@st.composite
def archives(draw: Any, version: int | None = None, style: str | None = None) -> tuple[int, str, bytes]:
    """(version, style, tar bytes) of archives as TVM's writer made them; they check clean."""
    spec = draw(archive_specs(version, style))
    return spec.version, spec.style, build_archive(spec).to_bytes()


# ----------------------------------------------------------------- broken metadata


def _instances(doc: Any, record: str, version: int, style: str) -> list[tuple[dict[str, Any], tuple]]:
    """(dict, path) of every instance of ``record`` in a document."""
    proj = _ir.PROJECTIONS[version]
    out: list[tuple[dict[str, Any], tuple]] = []

    def walk(value: Any, rname: str, path: tuple) -> None:
        if not isinstance(value, dict):
            return
        if rname == record:
            out.append((value, path))
        for f in proj["records"][rname]["fields"]:
            if f["name"] in value:
                for parts, sub in f["nested"]:
                    descend(value[f["name"]], parts, sub, path + (f["name"],))

    def descend(value: Any, parts: list[Any], rname: str, path: tuple) -> None:
        if not parts:
            walk(value, rname, path)
        elif isinstance(value, list):
            for i, v in enumerate(value):
                descend(v, parts[1:], rname, path + (i,))
        elif isinstance(value, dict):
            for k, v in value.items():
                descend(v, parts[1:], rname, path + (k,))

    root = next(r for r in proj["roots"] if r["style"] == style)
    walk(doc, root["record"], ())
    return out


def _field_spec(version: int, record: str, name: str) -> dict[str, Any] | None:
    rec = _ir.PROJECTIONS[version]["records"].get(record)
    return next((f for f in rec["fields"] if f["name"] == name), None) if rec else None


_WRONG = {"str": 12345, "int": "12", "bool": "yes", "float": "x", "list": {"not": "a list"}, "map": ["not", "a map"],
          "intmap": ["not", "a map"], "ref": "not an object", "tuple": "x"}


def _wrong_value(tree: list[Any]) -> Any:
    kind = tree[0]
    if kind == "basic":
        return _WRONG.get(tree[1], [1, 2])
    if kind == "union":
        return {"neither": True}
    if kind == "lit":
        return 99
    return _WRONG[kind]


def _bad_value(f: dict[str, Any], value: Any, version: int) -> Any:
    if f.get("const") is not None:
        return f"{f['const']}-not" if isinstance(f["const"], str) else f["const"] + 100
    if f.get("item_enum"):
        return ["not-an-executor"]
    if f.get("enum"):
        return "not-in-enum"
    if f.get("pattern"):
        return "2021/13/45 25:61"
    if f.get("minimum") is not None:
        return f["minimum"] - 1
    if f.get("keyed_by") and isinstance(value, dict) and value:
        k = next(iter(value))
        return {k + "_renamed": value[k], **{x: y for x, y in value.items() if x != k}}
    if f.get("min_items"):
        return {} if isinstance(value, dict) else []
    raise AssertionError(f"no bad value for {f['name']}")  # pragma: no cover


def _dump_raw(doc: Any, version: int, style: str) -> bytes:
    opts = _md.json_options(version, style)
    return json.dumps(doc, indent=opts["indent"], sort_keys=opts["sort_keys"], ensure_ascii=opts["ensure_ascii"]).encode()


@st.composite
def broken_metadata(draw: Any, name: str = "mlf", kinds: tuple[str, ...] = ()) -> tuple[str, int, str, bytes]:
    """(kind, version, style, metadata.json bytes) broken in the named way."""
    kind = draw(st.sampled_from(list(kinds)))
    if kind == "not_json":
        return kind, 0, "", draw(st.sampled_from([b"{", b"", b"\xff\xfe{}", b'{"version": 7,}', b"[" * 5000]))
    if kind == "not_object":
        return kind, 0, "", draw(st.sampled_from([b"[]", b"7", b'"text"', b"null"]))
    spec = draw(archive_specs())
    doc = document_of(spec)
    v, s = spec.version, spec.style
    at = draw(st.integers(0, 2**16))
    bad_version = draw(st.sampled_from([0, 8, 99, "7", None, 7.0, True]))
    unknown_value = draw(st.sampled_from([1, "x", None, []]))
    data = break_metadata(kind, doc, v, s, at=at, bad_version=bad_version, unknown_value=unknown_value)
    assume(data is not None)
    assert data is not None  # assume() rejected the draw otherwise
    return kind, v, s, data


def break_metadata(kind: str, doc: dict[str, Any], version: int, style: str, *, at: int = 0,
                   bad_version: Any = 99, unknown_value: Any = 1) -> bytes | None:
    """``doc`` (a valid document of ``version`` and ``style``) broken in the named way
    (:data:`METADATA_BROKEN_KINDS` other than not_json and not_object), dumped as its
    writer would; ``at`` picks the instance of the record (modulo how many there are).
    None when the document has no place for that kind (no such record, key absent, key
    optional for ``missing_key``). The document is not modified."""
    doc = copy.deepcopy(doc)
    v, s = version, style
    if kind == "bad_version":
        doc["version"] = bad_version
        return _dump_raw(doc, v, s)
    what, target = kind.split(":", 1)
    record, _, fname = target.partition(".")
    insts = _instances(doc, record, v, s)
    if what == "unknown_key":
        if not insts:
            return None
        inst, _ = insts[at % len(insts)]
        inst["x_unknown_key"] = unknown_value
        return _dump_raw(doc, v, s)
    f = _field_spec(v, record, fname)
    insts = [(i, p) for i, p in insts if fname in i]
    if f is None or not insts or (what == "missing_key" and not f["required"]):
        return None
    inst, _ = insts[at % len(insts)]
    if what == "missing_key":
        del inst[fname]
    elif what == "wrong_type":
        inst[fname] = _wrong_value(f["tree"])
    elif what == "bad_value":
        inst[fname] = _bad_value(f, inst[fname], v)
    return _dump_raw(doc, v, s)


# ----------------------------------------------------------------- broken archives


def _tar_parts(a: _archive.Archive) -> tuple[bytes, list[int]]:
    """The archive's bytes without the end blocks, and the offset where each member starts."""
    chunks = [bytes(c) for c in a.chunks()]
    offsets = []
    pos = 0
    for m in a.members:
        offsets.append(pos)
        header = m.raw_header if m.raw_header is not None else _tar.encode_header(m.tar_entry())
        pos += len(header) + (0 if m.is_dir else m.size + (-m.size) % _tar.BLOCK)
    return b"".join(chunks[:-1]), offsets


def _crafted(kind: str, existing: _archive.Member | None) -> bytes:
    ti = tarfile.TarInfo("./codegen/host/src/evil.c")
    data = b"int evil;\n"
    ti.size = len(data)
    ti.mtime = 1_700_000_000
    if kind == "absolute":
        ti.name = "/tmp/mlf_spec_evil.c"
    elif kind == "parent":
        ti.name = "./../mlf_spec_evil.c"
    elif kind == "backslash":
        ti.name = "./codegen\\host\\evil.c"
    elif kind == "symlink":
        ti.type, ti.linkname, ti.size, data = tarfile.SYMTYPE, "/etc/passwd", 0, b""
    elif kind == "hardlink":
        ti.type, ti.linkname, ti.size, data = tarfile.LNKTYPE, "./metadata.json", 0, b""
    elif kind == "device":
        ti.type, ti.size, data, ti.devmajor, ti.devminor = tarfile.CHRTYPE, 0, b"", 1, 3
    elif kind == "fifo":
        ti.type, ti.size, data = tarfile.FIFOTYPE, 0, b""
    elif kind == "duplicate":
        assert existing is not None
        ti.name, data = existing.name, existing.read()
        ti.size = len(data)
    elif kind == "oversized":
        ti.size = (1 << 30) + 1
        return ti.tobuf(tarfile.PAX_FORMAT) + data + b"\0" * ((-len(data)) % _tar.BLOCK)
    return ti.tobuf(tarfile.PAX_FORMAT) + data + b"\0" * ((-len(data)) % _tar.BLOCK)


def _graph_module_req() -> dict[str, Any]:
    return {"style": "full-model", "executor": "graph"}


def _edit_metadata(a: _archive.Archive, s: ArchiveSpec, fn: Any, dump: Any = None) -> None:
    """Edit the first module's (or the operator) document and write it back raw."""
    doc = json.loads(a.read("metadata.json"))
    mods = doc.get("modules")
    fn(mods[s.modules[0].name] if isinstance(mods, dict) else doc, doc)
    a.replace("metadata.json", (dump or (lambda d: _dump_raw(d, s.version, s.style)))(doc))


def _member_of(a: _archive.Archive, s: ArchiveSpec, kind: str) -> _archive.Member:
    placements = a.placements()
    for m in a.members:
        p = placements.get(m.path)
        if p is not None and p.kind == kind and p.module == s.modules[0].name:
            return m
    raise AssertionError(f"no {kind} member")  # pragma: no cover


def _params_edit(a: _archive.Archive, s: ArchiveSpec, fn: Any) -> None:
    m = _member_of(a, s, "params")
    d = {k: np.array(v) for k, v in _params.loads(m.read()).items()}
    fn(d)
    a.replace(m.path, _params.dumps(d))


def _graph_edit(a: _archive.Archive, s: ArchiveSpec, fn: Any) -> None:
    m = _member_of(a, s, "graph_json")
    g = json.loads(m.read())
    fn(g)
    a.replace(m.path, _graph.dumps(g))


def _main0(mod: dict[str, Any]) -> dict[str, Any]:
    return mod["memory"]["functions"]["main"][0]


def _io_graph(mod: dict[str, Any], doc: dict[str, Any]) -> None:
    e = _main0(mod)
    k = next(iter(e["inputs"]))
    e["inputs"][k]["size"] += 1
    e["io_size_bytes"] += 1


def _sids(mod: dict[str, Any], doc: dict[str, Any]) -> None:
    mem = mod["memory"]
    sids = mem if isinstance(mem, list) else mem["sids"]
    sids[0]["size_bytes"] += 1


def _unprefixed(a: _archive.Archive, s: ArchiveSpec) -> None:
    for m in a.members:
        if m.path != ".":
            m.name = m.path
            m.raw_header = None


def _counter(a: _archive.Archive, s: ArchiveSpec) -> None:
    placements = a.placements()
    first = next(m for m in a.members if placements[m.path] is not None and placements[m.path].kind == "c_source"
                 and placements[m.path].values.get("n") == "0" and placements[m.path].module == s.modules[0].name)
    a.remove(first.path)


def _io_size(mod: dict[str, Any], doc: dict[str, Any]) -> None:
    e = _main0(mod)
    e["io_size_bytes"] = max(0, sum(t["size"] for t in e["inputs"].values()) - 1)


def _header_edit(a: _archive.Archive, path: str, **fields: Any) -> None:
    m = a.member(path)
    assert m is not None
    for k, v in fields.items():
        setattr(m, k, v)
    m.raw_header = None


#: finding code -> (what the archive needs, how to break it)
RECIPES: dict[str, tuple[dict[str, Any], Any]] = {
    "metadata.missing": ({}, lambda a, s: a.remove(_archive.METADATA)),
    "metadata.json": ({}, lambda a, s: a.replace("metadata.json", b'{"version": 7, "modules": {')),
    "metadata.version": ({}, lambda a, s: _edit_metadata(a, s, lambda m, d: d.update(version=99))),
    "metadata.schema": ({}, lambda a, s: _edit_metadata(a, s, lambda m, d: m.update(export_datetime=20210310))),
    "metadata.unknown-key": ({}, lambda a, s: _edit_metadata(a, s, lambda m, d: d.update(x_comment="added"))),
    "metadata.format": ({}, lambda a, s: _edit_metadata(
        a, s, lambda m, d: None, lambda d: json.dumps(d, indent=4).encode() + b"\n")),
    "layout.missing": ({"style": "full-model"}, lambda a, s: a.remove(_member_of(a, s, "params").path)),
    "layout.unexpected": ({}, lambda a, s: a.add("notes.txt", b"not part of MLF\n", mtime=s.mtime)),
    "layout.prefix": ({}, _unprefixed),
    "layout.module": ({"style": "full-model"}, lambda a, s: a.add(
        _path(s, "params", model="ghost_module"), _params.dumps({}), mtime=s.mtime)),
    "codegen.counter": ({"min_sources": 2, "style": "full-model"}, _counter),
    "graph.json": (_graph_module_req(), lambda a, s: a.replace(_member_of(a, s, "graph_json").path, b'{"nodes": [')),
    "graph.schema": (_graph_module_req(), lambda a, s: _graph_edit(a, s, lambda g: g.pop("heads"))),
    "graph.structure": (_graph_module_req(), lambda a, s: _graph_edit(a, s, lambda g: g["node_row_ptr"].append(99))),
    "params.unreadable": ({"style": "full-model"}, lambda a, s: a.replace(_member_of(a, s, "params").path,
                                                                         b"\x00" * 7)),
    "params.not-in-graph": (_graph_module_req(), lambda a, s: _params_edit(
        a, s, lambda d: d.update(p99=np.zeros(2, "float32")))),
    "params.shape": ({**_graph_module_req(), "min_params": 1}, lambda a, s: _params_edit(
        a, s, lambda d: d.update({k: np.zeros(7, "float32") for k in list(d)[:1]}))),
    "sids.mismatch": (_graph_module_req(), lambda a, s: _edit_metadata(a, s, _sids)),
    "memory.io-size": ({"io": True, "style": "full-model"},
                       lambda a, s: _edit_metadata(a, s, _io_size)),
    "memory.io-graph": ({**_graph_module_req(), "io": True}, lambda a, s: _edit_metadata(a, s, _io_graph)),
    "operator.buffer-size": ({"style": "operator"}, lambda a, s: _edit_metadata(
        a, s, lambda m, d: next(iter(m["memory"].values()))[0].update(size_bytes=10**6))),
    "dependency.missing": ({"crt": True}, lambda a, s: a.remove("runtime")),
    "layout.mode": ({}, lambda a, s: _header_edit(a, _archive.METADATA, mode=0o666)),
    "layout.owner": ({}, lambda a, s: _header_edit(a, _archive.METADATA, uid=1001, gid=1001, uname="alice",
                                                   gname="alice")),
}


def _entry_req(entry_id: str) -> dict[str, Any]:
    e = _layout.ENTRIES[entry_id]
    req: dict[str, Any] = {"revisions": list(e["present_in"])}
    if e["style"] != "both":
        req["style"] = e["style"]
    if e.get("when") == "graph_executor":
        req["executor"] = "graph"
    if e.get("when") == "aot_crt":
        req["crt"] = True
    return req


@st.composite
def broken_archives(draw: Any, kinds: tuple[str, ...] = ()) -> tuple[str, bytes]:
    """(kind, tar bytes) broken in the named way: ``not_a_tar``, ``truncated`` and
    ``unsafe:*`` cannot be read (MlfError); ``missing_member:<entry>`` and
    ``finding:<code>`` read and check with that finding."""
    kind = draw(st.sampled_from(list(kinds)))
    if kind == "not_a_tar":
        return kind, draw(st.sampled_from(NOT_A_TAR))
    spec = draw(archive_specs(req=archive_requirements(kind)))
    data = break_archive(kind, spec, at=draw(st.integers(0, 2**16)), where=draw(st.integers(0, 2**16)),
                         cut=draw(st.floats(0, 1, exclude_min=True)))
    assume(data is not None)
    assert data is not None  # assume() rejected the draw otherwise
    return kind, data


#: inputs that are no tar archive at all
NOT_A_TAR = (b"", b"not a tar", b"PK\x03\x04" + bytes(600), b"{}" * 300, b"\x1f\x8b\x08\x00garbage", bytes(100))


def archive_requirements(kind: str) -> dict[str, Any]:
    """What an archive needs for ``kind`` to apply (archive_specs ``req``)."""
    what, _, target = kind.partition(":")
    if what == "finding":
        return RECIPES[target][0]
    if what == "missing_member":
        return _entry_req(target)
    return {}


def break_archive(kind: str, spec: ArchiveSpec, *, at: int = 0, where: int = 0, cut: float = 0.5) -> bytes | None:
    """The archive of ``spec`` broken in the named way (:data:`ARCHIVE_BROKEN_KINDS` other
    than not_a_tar): ``cut`` is where a truncated archive ends (a fraction of its members'
    bytes), ``at`` picks the member a kind acts on and ``where`` the position an unsafe
    member is inserted at (both modulo what exists). None when the archive has no place
    for that kind."""
    a = build_archive(spec)
    what, _, target = kind.partition(":")
    if kind == "truncated":
        body, _ = _tar_parts(a)
        return body[:max(1, min(len(body), round(len(body) * cut)))]
    if what == "unsafe":
        body, offsets = _tar_parts(a)
        files = [m for m in a.members if not m.is_dir]
        places = offsets[1:] + [len(body)]
        crafted = _crafted(target, files[at % len(files)])
        pos = places[where % len(places)]
        out = body[:pos] + crafted + body[pos:]
        return out + _tar.end_blocks(len(out))
    if what == "missing_member":
        names = [x.name for x in spec.modules]
        paths = [m.path for m in a.members
                 if (pl := _layout.classify(m.path, spec.version, spec.style, names)) is not None
                 and pl.entry["id"] == target]
        if not paths:
            return None
        path = paths[at % len(paths)]
        a.remove(path) if _layout.ENTRIES[target]["kind"] != "directory" else _remove_only(a, path)
        return a.to_bytes()
    RECIPES[target][1](a, spec)
    return a.to_bytes()


def _remove_only(a: _archive.Archive, path: str) -> None:
    a.members = [m for m in a.members if m.path != path]
    a._by_path = {m.path: m for m in a.members}
    a._modules = None


__all__ = ["NOT_A_TAR", "RECIPES", "ArchiveSpec", "ModuleSpec", "Tensor", "archive_requirements", "archive_specs",
           "archives", "break_archive", "break_metadata", "broken_archives", "broken_metadata", "build_archive",
           "document_of", "files_of", "metadata_documents"]

