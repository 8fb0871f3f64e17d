"""MLF vectors: metadata.json of every writer revision and style, whole archives of every
revision, graph JSON, migrations between versions, and every broken kind of
``MLF_METADATA_BROKEN_KINDS`` and ``MLF_ARCHIVE_BROKEN_KINDS``. The models exported are
fixed (:func:`specs`), not drawn; the breaking is done by the strategies' own deterministic
cores (``break_metadata``, ``break_archive``)."""

from __future__ import annotations

import json
from typing import Any

from mlf_spec.generated import mlf_revisions_timeline as _tl
from mlf_spec.generated import mlf_strategies as _mst
from mlf_spec.graph import codec as _graph
from mlf_spec.mlf import metadata as _md
from mlf_spec.mlf import strategies as _ms

from .common import Collector, doc_ref
from .layout import archive_rules, build_layout_rules

_REVS = [r["id"] for r in _tl.REVISIONS]
_VERSION = {r["id"]: r["version"] for r in _tl.REVISIONS}
MTIME = 1_650_000_000.0
T = _ms.Tensor


def _since(rid: str, other: str) -> bool:
    return _tl.INDEX[rid] >= _tl.INDEX[other]


def graph_of(inputs: list[T], params: list[T], out: T) -> dict[str, Any]:
    """A GraphExecutor JSON with one fused op over every input and parameter."""
    args = inputs + params
    nodes: list[dict[str, Any]] = [{"op": "null", "name": t.name, "inputs": []} for t in args]
    nodes.append({"op": "tvm_op", "name": "tvmgen_default_fused_add",
                  "attrs": {"num_outputs": "1", "num_inputs": str(len(args)), "flatten_data": "0",
                            "func_name": "tvmgen_default_fused_add", "hash": "00d1e5f8c0a3b2f1"},
                  "inputs": [[i, 0, 0] for i in range(len(args))]})
    entries = args + [out]
    return {"nodes": nodes, "arg_nodes": list(range(len(args))), "heads": [[len(args), 0, 0]],
            "attrs": {"dltype": ["list_str", [t.dtype for t in entries]],
                      "device_index": ["list_int", [1] * len(entries)],
                      "storage_id": ["list_int", list(range(len(entries)))],
                      "shape": ["list_shape", [t.shape for t in entries]]},
            "node_row_ptr": list(range(len(entries) + 1))}


def _graph_module(name: str, rid: str) -> _ms.ModuleSpec:
    inputs, params = [T("a", "float32", [1, 4])], [T("p0", "float32", [4]), T("p1", "int8", [2, 2])]
    out = T("output", "float32", [1, 4])
    return _ms.ModuleSpec(name, "graph", "c -keys=cpu -model=host", "2022-03-04 05:06:07Z", inputs, [out], params,
                          graph_of(inputs, params, T("tvmgen_default_fused_add", "float32", [1, 4])), sources=2,
                          ext="cc" if _since(rid, "v5.cpp") else "c", workspace=256,
                          op_functions=[(f"tvmgen_{name}_fused_add", 128), (f"tvmgen_{name}_fused_mul", 64)])


def _aot_module(name: str, rid: str) -> _ms.ModuleSpec:
    return _ms.ModuleSpec(name, "aot", "c -keys=cpu -link-params=0 -model=host", "2023-01-02 03:04:05Z",
                          [T("data", "int8", [1, 8]), T("weight", "int8", [8])], [T("output", "int8", [1, 8])],
                          [T("p0", "int8", [8])], sources=2, objects=1, ext="c",
                          header=_since(rid, "v5.header"), crt=_since(rid, "v5.crt"), workspace=512,
                          op_functions=[(f"tvmgen_{name}_fused_conv", 512)])


def _operator_module() -> _ms.ModuleSpec:
    return _ms.ModuleSpec("add", "operator", "c -keys=cpu -model=host", "2022-05-06 07:08:09Z",
                          prim_funcs={"add": [T("A", "float32", [4]), T("B", "float32", [4]), T("C", "float32", [4])]})


def specs() -> list[tuple[str, _ms.ArchiveSpec]]:
    """(label, archive spec) of the fixed exports: per writer revision a graph module, an AOT
    module (from v1.aot; with CRT and header where the revision wrote them), an operator
    export where the version has that style, and in version 7 two modules in one archive."""
    out = []
    for rid in _REVS:
        v = _VERSION[rid]
        out.append((f"{rid}.graph", _ms.ArchiveSpec(v, rid, "full-model", [_graph_module("default", rid)], MTIME)))
        if _since(rid, "v1.aot"):
            out.append((f"{rid}.aot", _ms.ArchiveSpec(v, rid, "full-model", [_aot_module("default", rid)], MTIME)))
        if "operator" in _md.styles(v):
            out.append((f"{rid}.operator", _ms.ArchiveSpec(v, rid, "operator", [_operator_module()], MTIME)))
        if v == 7:
            out.append((f"{rid}.two-modules", _ms.ArchiveSpec(
                v, rid, "full-model", [_graph_module("default", rid), _aot_module("kws", rid)], MTIME)))
    return out


def _scope(spec: _ms.ArchiveSpec) -> dict[str, str]:
    return {"version": str(spec.version), "style": spec.style}


def _features(spec: _ms.ArchiveSpec) -> dict[str, list[str]]:
    return {"version": [str(spec.version)], "revision": [spec.revision], "style": [spec.style],
            "executor": sorted({m.executor for m in spec.modules})}


def _tvm(spec: _ms.ArchiveSpec) -> str:
    rev = next(r for r in _tl.REVISIONS if r["id"] == spec.revision)
    return f"writer revision {rev['id']} ({rev['commit']}, {rev['date']})"


def build_mlf(c: Collector) -> None:
    """Add every MLF metadata, archive, graph and migration vector to ``c``."""
    fixed = specs()
    _metadata_vectors(c, fixed)
    _archive_vectors(c, fixed)
    build_layout_rules(c, fixed)
    _graph_vectors(c)
    _migration_vectors(c, fixed)


def _metadata_vectors(c: Collector, fixed: list[tuple[str, _ms.ArchiveSpec]]) -> None:
    docs = []
    for label, spec in fixed:
        doc = _ms.document_of(spec)
        data = _md.from_document(doc, version=spec.version, style=spec.style).dumps()
        docs.append((label, spec, doc))
        page = (f"mlf_v{spec.version}", "Records")
        c.add(f"mlf-metadata.valid.{label}", "mlf-metadata", data, scope=_scope(spec), tvm=_tvm(spec),
              features=_features(spec), description=f"metadata.json of version {spec.version} ({spec.style}) as "
              f"writer revision {spec.revision} dumped it", spec_ref=doc_ref(*page))
        c.add(f"mlf-metadata.encode.{label}", "mlf-metadata", b"", role="encode",
              reading={"format": "mlf-metadata", "version": spec.version, "style": spec.style, "document": doc},
              scope=_scope(spec), tvm=_tvm(spec), features=_features(spec),
              description=f"write metadata.json of version {spec.version} ({spec.style}) with its writer's options",
              spec_ref=doc_ref(*page))
    for kind in _mst.METADATA_BROKEN_KINDS:
        if kind == "not_json":
            variants = [("truncated-object", b"{", {}), ("empty", b"", {}), ("trailing-comma", b'{"version": 7,}', {}),
                        ("not-utf8", b"\xff\xfe{}", {})]
        elif kind == "not_object":
            variants = [("array", b"[]", {}), ("number", b"7", {}), ("null", b"null", {})]
        else:
            variants = []
            for label, spec, doc in docs:
                data = _ms.break_metadata(kind, doc, spec.version, spec.style)
                if data is not None:
                    variants.append((label, data, {"spec": spec}))
                    break
        if not variants:
            raise AssertionError(f"no metadata vector for the broken kind {kind!r}")
        for label, data, extra in variants:
            spec = extra.get("spec")
            c.add(f"mlf-metadata.broken.{kind}.{label}", "mlf-metadata", data,
                  scope=_scope(spec) if spec else {}, tvm=_tvm(spec) if spec else "all",
                  features={"broken_kind": [kind], **(_features(spec) if spec else {})},
                  description=f"metadata.json broken ({kind}): must be rejected",
                  spec_ref=doc_ref(f"mlf_v{spec.version}", "Records") if spec else doc_ref("mlf"),
                  broken_kind=kind)


def _archive_vectors(c: Collector, fixed: list[tuple[str, _ms.ArchiveSpec]]) -> None:
    """Whole archives where the layout changed (a revision whose export of the same kind
    holds the same member paths as the revision before, in the same version, adds nothing
    but its metadata, which the metadata vectors cover), and every broken kind on the smallest export it applies to."""
    built = {label: _ms.build_archive(spec).to_bytes() for label, spec in fixed}
    last: dict[str, tuple[int, list[str]]] = {}
    for label, spec in fixed:
        what = label.split(".")[-1]
        paths = (spec.version, sorted(m.path for m in _ms.build_archive(spec).members))
        if last.get(what) == paths:
            continue
        last[what] = paths
        c.add(f"mlf-archive.valid.{label}", "mlf-archive", built[label], scope=_scope(spec),
              tvm=_tvm(spec), features={**_features(spec), "rule": archive_rules(_ms.build_archive(spec), spec)},
              description=f"an archive of version {spec.version} ({spec.style}, {label.split('.')[-1]}) as writer "
              f"revision {spec.revision} laid it out", spec_ref=doc_ref(f"mlf_v{spec.version}",
                                                                        f"Layout of version {spec.version}"))
    for kind in _mst.ARCHIVE_BROKEN_KINDS:
        variants: list[tuple[str, bytes, _ms.ArchiveSpec | None]] = []
        if kind == "not_a_tar":
            variants = [(f"sample-{i}", data, None) for i, data in enumerate(_ms.NOT_A_TAR)]
        else:
            req = _ms.archive_requirements(kind)
            for label, spec in sorted(fixed, key=lambda item: len(built[item[0]])):
                if _meets(spec, req):
                    data = _ms.break_archive(kind, spec, at=0, where=1, cut=0.5)
                    if data is not None:
                        variants.append((label, data, spec))
                        break
        if not variants:
            raise AssertionError(f"no archive vector for the broken kind {kind!r}")
        what = kind.split(":", 1)[0]
        for label, data, spec in variants:
            reject = what in ("not_a_tar", "truncated", "unsafe")
            c.add(f"mlf-archive.broken.{kind}.{label}", "mlf-archive", data,
                  scope=_scope(spec) if spec else {}, tvm=_tvm(spec) if spec else "all",
                  features={"broken_kind": [kind], **(_features(spec) if spec else {})},
                  description=f"archive broken ({kind}): " + ("must be rejected" if reject else
                                                               "reads, and its check reports the finding"),
                  spec_ref=doc_ref("mlf_check") if what in ("finding", "missing_member") else doc_ref("mlf_layout"),
                  broken_kind=kind, expect="reject" if reject else "accept")


def _meets(spec: _ms.ArchiveSpec, req: dict[str, Any]) -> bool:
    """Whether the fixed export ``spec`` meets an archive_specs requirement."""
    m = spec.modules[0]
    checks = [
        "revisions" not in req or spec.revision in req["revisions"],
        "style" not in req or spec.style == req["style"],
        "executor" not in req or m.executor == req["executor"],
        not req.get("crt") or m.crt,
        not req.get("io") or _since(spec.revision, "v7.io"),
        not req.get("header") or m.header,
        m.sources >= req.get("min_sources", 1) or spec.style == "operator",
        len(m.params) >= req.get("min_params", 0),
    ]
    return all(checks)


def _graph_vectors(c: Collector) -> None:
    base = graph_of([T("a", "float32", [1, 4])], [T("p0", "float32", [4])], T("out", "float32", [1, 4]))
    page = ("graph_json", "`graph`")

    def add(vid: str, doc: Any, description: str, raw: bytes | None = None, broken: str | None = None,
            feature: str = "structure") -> None:
        data = raw if raw is not None else _graph.dumps(doc).encode("utf-8")
        c.add(f"graph-json.{vid}", "graph-json", data, scope={}, tvm="0.8 to 0.20 (relay GraphExecutorCodegen)",
              features={"graph": [feature]} if broken is None else {"broken_kind": [broken]},
              description=description, spec_ref=doc_ref(*page), broken_kind=broken)

    add("valid.basic", base, "one input, one parameter, one fused op; device_index present")
    no_dev = json.loads(json.dumps(base))
    del no_dev["attrs"]["device_index"]
    add("valid.no-device-index", no_dev, "no device_index (written only when every entry had one)")
    two = json.loads(json.dumps(base))
    for n in two["nodes"]:
        n["inputs"] = [e[:2] for e in n["inputs"]]
    two["heads"] = [h[:2] for h in two["heads"]]
    add("valid.two-element-entries", two, "node entries of two elements (the version defaults to 0)",
        feature="entries")
    scoped = json.loads(json.dumps(base))
    scoped["attrs"]["storage_scope"] = ["list_str", ["global", "global", "global.texture"]]
    add("valid.storage-scope", scoped, "a storage_scope attribute (written when some scope is not global)",
        feature="storage_scope")
    attrs_on_input = json.loads(json.dumps(base))
    attrs_on_input["nodes"][0]["attrs"] = {"layout": "NCHW"}
    add("valid.input-attrs", attrs_on_input, "an input node with attributes (readers accept them)",
        feature="attrs")
    c.add("graph-json.encode.basic", "graph-json", b"", role="encode",
          reading=_canonical_graph(base), scope={}, tvm="0.8 to 0.20",
          features={"graph": ["structure"]}, description="write the basic graph in dmlc's JSON layout",
          spec_ref=doc_ref(*page))
    add("broken.not-json", None, "not JSON: must be rejected", raw=b'{"nodes": [', broken="not_json")
    add("broken.not-object", None, "a JSON array: must be rejected", raw=b"[]", broken="not_object")
    for key in ("nodes", "arg_nodes", "heads", "attrs", "node_row_ptr"):
        doc = json.loads(json.dumps(base))
        del doc[key]
        add(f"broken.missing_key.graph.{key}", doc, f"no {key}: must be rejected", broken=f"missing_key:graph.{key}")
        doc = json.loads(json.dumps(base))
        doc[key] = {"not": "a list"} if isinstance(doc[key], list) else ["not", "an object"]
        add(f"broken.wrong_type.graph.{key}", doc, f"{key} of the wrong type: must be rejected",
            broken=f"wrong_type:graph.{key}")
    doc = json.loads(json.dumps(base))
    doc["x_unknown"] = 1
    add("broken.unknown_key.graph", doc, "an unknown top-level key (readers refuse it)", broken="unknown_key:graph")
    doc = json.loads(json.dumps(base))
    doc["heads"] = [[1]]
    add("broken.bad_value.node_entry", doc, "a one-element node entry", broken="bad_value:node_entry")
    doc = json.loads(json.dumps(base))
    doc["node_row_ptr"].append(99)
    add("broken.structure.node_row_ptr", doc, "node_row_ptr one element too long", broken="structure:node_row_ptr")
    doc = json.loads(json.dumps(base))
    doc["attrs"]["dltype"][0] = "list_int"
    add("broken.bad_value.type_tag", doc, "dltype tagged list_int", broken="bad_value:graph_attrs.dltype")


def _canonical_graph(doc: dict[str, Any]) -> dict[str, Any]:
    from ..canonical import graph_reading

    return graph_reading(doc)


def _migration_vectors(c: Collector, fixed: list[tuple[str, _ms.ArchiveSpec]]) -> None:
    """Upgrades of every version's documents to 7, downgrades of version 7 to every version,
    operator and several-module refusals, and whole archives both ways."""
    by_label = dict(fixed)
    first = {}
    for label, spec in fixed:
        first.setdefault((spec.version, label.split(".")[-1]), (label, spec))
    page = ("mlf_migrations", None)

    def add(label: str, spec: _ms.ArchiveSpec, to: int, fmt: str, expect: str | None = None) -> None:
        if fmt == "mlf-metadata":
            data = _md.from_document(_ms.document_of(spec), version=spec.version, style=spec.style).dumps()
        else:
            data = _ms.build_archive(spec).to_bytes()
        direction = "up" if to > spec.version else "down"
        kind = "metadata" if fmt == "mlf-metadata" else "archive"
        c.add(f"migration.{kind}.{label}.to-v{to}", fmt, data, role="migrate", options={"to": str(to)},
              scope={**_scope(spec), "to": str(to)}, tvm=_tvm(spec),
              features={"migration": [f"v{spec.version}-v{to}"], "direction": [direction], "style": [spec.style]},
              description=f"migrate {kind} of version {spec.version} ({spec.style}, {label}) to version {to}, "
              "accepting every loss", spec_ref=doc_ref(*page), expect=expect)

    for (v, what), (label, spec) in sorted(first.items()):
        if what in ("graph", "operator") and v < 7:
            add(label, spec, 7, "mlf-metadata")
    for v in range(1, 7):
        add("v7.graph", by_label["v7.io.graph"], v, "mlf-metadata")
    add("v7.aot", by_label["v7.templates.aot"], 5, "mlf-metadata")
    add("v7.operator", by_label["v7.operator"], 4, "mlf-metadata")
    add("v7.operator", by_label["v7.operator"], 3, "mlf-metadata", expect="reject")
    add("v7.two-modules", by_label["v7.two-modules"], 6, "mlf-metadata", expect="reject")
    add("v5.crt.aot", by_label["v5.crt.aot"], 7, "mlf-archive")
    add("v3.graph", by_label["v3.graph"], 7, "mlf-archive")
    add("v7.io.graph", by_label["v7.io.graph"], 5, "mlf-archive")
    add("v7.io.graph", by_label["v7.io.graph"], 1, "mlf-archive")
    add("v7.two-modules", by_label["v7.two-modules"], 6, "mlf-archive", expect="reject")


__all__ = ["build_mlf", "graph_of", "specs"]
