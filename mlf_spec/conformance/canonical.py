"""Canonical readings: what mlf-spec, the reference implementation, reports for each format,
in the JSON form the conformance kit compares (schemas: generated/schemas/canonical_*.json).

    >>> from mlf_spec.conformance import canonical
    >>> canonical.decode("params", data, {"dialect": "v0.23"})     # -> {"format": "params", ...}
    >>> canonical.encode("params", reading)                         # -> .params bytes
    >>> canonical.migrate("mlf-archive", tar_bytes, {"to": "5"})    # -> {"format": "migration", ...}
    >>> canonical.error_class(exc)                                   # MlfError -> "truncated", ...

Every reader raises :class:`~mlf_spec.errors.MlfError` for input the spec rejects;
:func:`error_class` names the rejection in the kit's language-neutral vocabulary
(spec/tables/conformance_errors.yaml).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Callable, Mapping
from typing import Any

from mlf_spec._text import text_and_hex
from mlf_spec.errors import MlfError, UnsupportedError, ValidationError
from mlf_spec.generated import conformance_errors_table as _errors
from mlf_spec.generated.formats import FORMATS, ROLES  # the formats; what the reference does with each

#: error class -> the mlf_spec.errors class name standing for it (most specific first)
ERROR_CLASSES: dict[str, str] = {row["error_class"]: row["mlf_error"] for row in _errors.ROWS}
_BY_EXCEPTION: dict[str, str] = {v: k for k, v in reversed(list(ERROR_CLASSES.items()))}


def sha256(data: bytes | memoryview) -> str:
    """Hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def error_class(exc: BaseException) -> str:
    """The conformance error class of an MlfError (its nearest class in the table)."""
    for cls in type(exc).__mro__:
        found = _BY_EXCEPTION.get(cls.__name__)
        if found is not None:
            return found
    return "error"


# ----------------------------------------------------------------------------- .params


def _tensor_entry(name: str, dt: Any, rec: Any, data: memoryview, with_data: bool) -> dict[str, Any]:
    text, hexed = text_and_hex(name)
    out: dict[str, Any] = {"name": text}
    if hexed is not None:
        out["name_hex"] = hexed
    out.update(dtype=dt.name, code=rec.dtype_code, bits=rec.dtype_bits, lanes=rec.dtype_lanes, shape=list(rec.shape),
               nbytes=rec.data_byte_size, sha256=sha256(data), device_type=rec.device_type,
               device_id=rec.device_id, reserved=rec.reserved)
    if with_data:
        out["data"] = base64.b64encode(data).decode("ascii")
    return out


def decode_params(data: bytes, options: Mapping[str, str] | None = None, *, with_data: bool = False) -> dict[str, Any]:
    """The canonical reading of a .params file, in the dtype dialect ``options['dialect']``
    (detected when absent). Unknown codes are rejected, as in ``params.load``."""
    from mlf_spec.params import codec as _params
    from mlf_spec.params import dtypes as _dt

    view = memoryview(data)
    idx = _params._index(view, len(data), (options or {}).get("dialect"), True)
    d = idx.choice.dialect
    tensors = [_tensor_entry(n, _dt.lookup(d, r.dtype_code, r.dtype_bits, r.dtype_lanes), r,
                             view[r.data_offset:r.data_offset + r.data_byte_size], with_data)
               for n, r in zip(idx.names, idx.records)]
    return {"format": "params", "dialect": d.id, "reserved": idx.reserved, "tensors": tensors,
            "trailing_bytes": len(data) - idx.end}


def encode_params(reading: Mapping[str, Any], options: Mapping[str, str] | None = None) -> bytes:
    """The .params bytes TVM's writer produces for a canonical reading with ``data``."""
    from mlf_spec.params import codec as _params
    from mlf_spec.params import dtypes as _dt

    dialect = (options or {}).get("dialect") or reading.get("dialect")
    entries = []
    try:
        for t in reading["tensors"]:
            name = bytes.fromhex(t["name_hex"]).decode("utf-8", "surrogateescape") if "name_hex" in t else t["name"]
            raw = base64.b64decode(t["data"], validate=True)
            entries.append((name, _params.StoredTensor.of(t["code"], t["bits"], t["lanes"], tuple(t["shape"]), raw,
                                                          dialect), None))
    except (KeyError, TypeError, ValueError) as exc:
        raise ValidationError(f"not a canonical params reading with data: {exc!r}", field=f"tensors[{len(entries)}]") from None
    return _params.dumps(_params.ParamsFile(entries, choice=None if dialect is None else
                                            _dt.given(_dt.dialect(dialect))))


# ----------------------------------------------------------------------------- module blobs


def _payload_fields(struct: str, ns: dict[str, Any]) -> dict[str, Any]:
    """A traced struct value without what the spec computes (constants, counts, derived
    sizes): text as str, other byte strings as {size, sha256}, maps as [key, value] pairs."""
    from mlf_spec.generated import payloads_ir

    spec = payloads_ir.STRUCTS[struct]
    counted = {f["count"][0] for f in spec["fields"] if "count" in f}
    out: dict[str, Any] = {}
    for f in spec["fields"]:
        n = f["name"]
        if "const" in f or "derive" in f or n in counted or ("equals" in f and f["kind"] == "scalar"):
            continue
        if ns.get(n) is not None:
            out[n] = _field_value(f, ns[n], ns)
    return out


def _field_value(f: dict, v: Any, ns: dict[str, Any]) -> Any:
    kind = f["kind"]
    if kind == "switch":
        return _typed(f["switch"]["cases"].get(f["switch_on"](ns), f["switch"]["default"]), v)
    if "count" in f:
        return [_typed(f["type"], x) for x in v]
    if kind == "vec":
        return [_typed(f["elem"], x) for x in v]
    if kind == "map":
        return [[_typed(f["key"], k), _typed(f["value"], x)] for k, x in v]
    if kind == "struct":
        return _payload_fields(f["struct"], v)
    return _typed(f["type"], v)


def _typed(type_name: str | None, v: Any) -> Any:
    from mlf_spec.generated import payloads_ir

    if type_name in payloads_ir.STRUCTS and isinstance(v, dict):
        return _payload_fields(type_name, v)
    if isinstance(v, (bytes, bytearray, memoryview)):
        return {"size": len(v), "sha256": sha256(bytes(v))}
    if isinstance(v, str):
        return text_and_hex(v)[0]
    return v


def newest_era(layout: str) -> tuple[int, ...]:
    """The newest TVM version whose writer the blob grammar of ``layout`` names (legacy: 0.21)."""
    from mlf_spec.blob import codec as _blob

    first_ffi = (0, 22)
    return max(e for e in _blob._ERA_LABELS if (e >= first_ffi) == (layout == "ffi"))


def decode_blob(data: bytes, options: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The canonical reading of a module blob: ``options['layout']`` (legacy or ffi) and
    ``options['era']`` (the TVM version whose grammar reads it; ``latest`` for the newest)."""
    from mlf_spec._internal.spec_engine import trace
    from mlf_spec.blob import codec as _blob
    from mlf_spec.generated import payloads_ir

    opts = options or {}
    era: str | tuple[int, ...] | None = opts.get("era")
    if era == "latest":  # the newest writer of the layout; never a guess among older ones
        era = None if opts.get("layout") != "legacy" else newest_era("legacy")
    b = _blob.parse(data, format=opts.get("layout"), era=era)
    modules = []
    for e in b.entries:
        kind, kind_hex = text_and_hex(e.kind)
        named = {"index": e.index, "kind": kind, **({"kind_hex": kind_hex} if kind_hex is not None else {})}
        if e.payload is None:
            modules.append({**named, "payload_bytes": 0, "payload_sha256": None,
                            "struct": None, "fields": None, "functions": []})
            continue
        raw = data[e.payload_offset:e.payload_offset + e.payload_size]
        struct = e.payload.struct
        fields = None
        if struct is not None and struct in payloads_ir.STRUCTS:
            tree, _ = trace(payloads_ir.STRUCTS, struct, raw, b.era)
            fields = _payload_fields(struct, tree)
        modules.append({**named, "payload_bytes": e.payload_size, "payload_sha256": sha256(raw), "struct": struct,
                        "fields": fields, "functions": [text_and_hex(f)[0] for f in e.functions]})
    tree = None if b.row_ptr is None else {"row_ptr": list(b.row_ptr), "child_indices": list(b.child_indices or ())}
    return {"format": "blob", "layout": b.format, "modules": modules, "import_tree": tree,
            "trailing_bytes": len(b.trailing), "findings": sorted({f.code for f in b.findings})}


# ----------------------------------------------------------------------------- graph JSON


def _entry(e: list[int]) -> list[int]:
    return list(e) + [0] * (3 - len(e))


def graph_reading(data: Mapping[str, Any]) -> dict[str, Any]:
    """The canonical reading of a validated graph document (plain JSON data)."""
    nodes = [{"op": n["op"], "name": n["name"], "inputs": [_entry(x) for x in n.get("inputs", [])],
              "attrs": dict(n.get("attrs") or {})} for n in data["nodes"]]
    return {"format": "graph-json", "nodes": nodes, "arg_nodes": list(data["arg_nodes"]),
            "heads": [_entry(h) for h in data["heads"]], "node_row_ptr": list(data["node_row_ptr"]),
            "attrs": dict(data["attrs"])}


def decode_graph(data: bytes, options: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The canonical reading of a GraphExecutor JSON; a document readers refuse (schema or
    structure: node_row_ptr, entry references) raises ValidationError."""
    from mlf_spec.graph import codec as _graph

    g = _graph.parse(data)
    issues = _graph.structure_issues(g)
    if issues:
        raise ValidationError(f"{issues[0].path}: {issues[0].message}" if issues[0].path else issues[0].message,
                              field=issues[0].path or None)
    return graph_reading(g.data)


def encode_graph(reading: Mapping[str, Any], options: Mapping[str, str] | None = None) -> bytes:
    """The GraphExecutor JSON text relay's codegen writes for a canonical reading."""
    from mlf_spec.graph import codec as _graph

    try:
        doc = {k: v for k, v in reading.items() if k != "format"}
        doc["nodes"] = [{k: v for k, v in n.items() if not (k == "attrs" and not v and n.get("op") == "null")}
                        for n in reading["nodes"]]
    except (KeyError, TypeError, AttributeError):
        raise ValidationError("not a canonical graph reading (nodes of op, name, inputs, attrs)") from None
    _g, issues = _graph.check_document(doc)
    if issues:
        raise ValidationError(f"not a valid graph: {issues[0].path}: {issues[0].message}")
    return _graph.dumps(doc).encode("utf-8")


# ----------------------------------------------------------------------------- MLF metadata


def metadata_reading(document: Any, version: int, style: str) -> dict[str, Any]:
    """The canonical reading of a metadata document already validated."""
    return {"format": "mlf-metadata", "version": version, "style": style, "document": document,
            "facts": metadata_facts(document, style)}


def _module_documents(document: Any) -> dict[str, Any]:
    """Module name -> its part of a (validated) document: v7 ``modules``, else the document."""
    if isinstance(document.get("modules"), dict):
        return dict(document["modules"])
    return {document["model_name"]: document}


def _size(entry: Any) -> int | None:
    v = entry.get("workspace_size_bytes") if isinstance(entry, dict) else None
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def module_facts(module: Any, style: str) -> dict[str, Any]:
    """The canonical_module_facts of one module's part of a document (spec/records/canonical_metadata.yaml)."""
    memory = module.get("memory") if isinstance(module, dict) else None
    functions = memory.get("functions") if isinstance(memory, dict) and style == "full-model" else None
    if not isinstance(functions, dict):  # version 1 (storage-id list) or operator style
        return {"workspace_size_bytes": None, "operator_workspace_max": None}
    main = functions.get("main")
    ops = functions.get("operator_functions")
    workspace = _size(main[0]) if isinstance(main, list) and main else None
    op_max = None
    if isinstance(ops, list):
        sizes = [_size(w) for op in ops if isinstance(op, dict) for w in op.get("workspace") or []]
        op_max = max([0, *(x for x in sizes if x is not None)])
    return {"workspace_size_bytes": workspace, "operator_workspace_max": op_max}


def metadata_facts(document: Any, style: str) -> dict[str, Any]:
    """Per module, the facts a deployment flow takes from a validated metadata document."""
    return {name: module_facts(mod, style) for name, mod in _module_documents(document).items()}


def decode_metadata(data: bytes, options: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The canonical reading of a metadata.json, validated strictly against its version."""
    from mlf_spec._records import load_json
    from mlf_spec.mlf import metadata as _md

    md = _md.parse(data)
    return metadata_reading(load_json(data, None, "metadata.json"), md.version, md.style)


def encode_metadata(reading: Mapping[str, Any], options: Mapping[str, str] | None = None) -> bytes:
    """metadata.json as TVM's writer of that version and style dumped it."""
    from mlf_spec.mlf import metadata as _md

    try:
        document, version, style = reading["document"], reading["version"], reading["style"]
    except (KeyError, TypeError):
        raise ValidationError("not a canonical metadata reading (document, version, style)") from None
    md = _md.from_document(document, version=version, style=style)
    return md.dumps()


# ----------------------------------------------------------------------------- MLF archives


def decode_archive(data: bytes, options: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The canonical reading of an MLF archive (unreadable or unsafe ones raise MlfError)."""
    from mlf_spec._records import load_json
    from mlf_spec.mlf import archive as _archive
    from mlf_spec.mlf import check as _check

    with _archive.open(bytes(data)) as a:
        members = [{"path": m.path, "type": "dir" if m.is_dir else "file", "size": 0 if m.is_dir else m.size,
                    "sha256": None if m.is_dir else sha256(m.view())} for m in a.members if m.path != "."]
        metadata = None
        modules: dict[str, Any] = {}
        facts: dict[str, Any] = {}
        try:
            md = a.metadata
            if not md.unknown:
                metadata = metadata_reading(load_json(a.read(_archive.METADATA), None, "metadata.json"),
                                            md.version, md.style)
            for name, mod in a.modules.items():
                modules[name] = {"executor": mod.executor, "params": _module_params(mod),
                                 "graph": _module_graph(mod)}
            if metadata is not None:
                facts = {name: {**f, "graph_executor": _graph_files(a, name)} for name, f in metadata["facts"].items()}
        except MlfError:
            pass
        findings = sorted({f.code for f in _check.check_archive(a).findings if f.severity == "error"})
    return {"format": "mlf-archive", "members": members, "metadata": metadata, "modules": modules,
            "facts": facts, "findings": findings}


def _graph_files(a: Any, name: str) -> dict[str, Any] | None:
    """canonical_graph_files of a module: the digests of its graph JSON and params members."""
    mod = a.modules.get(name)
    graph = None if mod is None else mod.member("graph_json")
    if graph is None:
        return None
    params = mod.member("params")
    return {"graph_sha256": sha256(graph.view()), "params_sha256": None if params is None else sha256(params.view())}


def _module_params(mod: Any) -> dict[str, Any] | None:
    m = mod.member("params")
    if m is None:
        return None
    try:
        return decode_params(m.read())
    except MlfError:
        return None


def _module_graph(mod: Any) -> dict[str, Any] | None:
    m = mod.member("graph_json")
    if m is None:
        return None
    try:
        return decode_graph(m.read())
    except MlfError:
        return None


# ----------------------------------------------------------------------------- migrations


def migrate(format: str, data: bytes, options: Mapping[str, str] | None = None) -> dict[str, Any]:  # noqa: A002
    """Migrate an archive or metadata.json to ``options['to']``, accepting every loss, and
    return the canonical migration (losses incurred and the reading of the result)."""
    from mlf_spec.errors import MigrationError
    from mlf_spec.mlf import migrate as _migrate

    opts = options or {}
    try:
        to = int(opts["to"])
    except (KeyError, ValueError):
        raise MigrationError("a migration needs the option to=<version>") from None
    if format == "mlf-metadata" and bytes(data).lstrip()[:1] != b"{":
        raise ValidationError("metadata.json is not a JSON object")
    with _migrate.plan(bytes(data), to) as p:
        losses = sorted(set(p.loss_names()))
        result = _migrate.apply(p, accept_loss=losses)
        out = result.to_bytes()
        source = p.source_version
    reading = decode_archive(out) if format == "mlf-archive" else decode_metadata(out)
    return {"format": "migration", "source_version": source, "target_version": to, "losses": losses,
            "output": reading}


# ----------------------------------------------------------------------------- dispatch

DECODERS: dict[str, Callable[[bytes, Mapping[str, str] | None], dict[str, Any]]] = {
    "params": decode_params, "blob": decode_blob, "graph-json": decode_graph, "mlf-metadata": decode_metadata,
    "mlf-archive": decode_archive,
}
ENCODERS: dict[str, Callable[[Mapping[str, Any], Mapping[str, str] | None], bytes]] = {
    "params": encode_params, "graph-json": encode_graph, "mlf-metadata": encode_metadata,
}


def decode(format: str, data: bytes | os.PathLike[str], options: Mapping[str, str] | None = None) -> dict[str, Any]:  # noqa: A002
    """The canonical reading of ``data`` in ``format`` (for a folder-shaped format, ``data``
    is the folder's path: :mod:`.canonical_cache`). Raises MlfError for rejected input."""
    from .folders import is_folder_format

    if is_folder_format(format):
        from .canonical_cache import decode_folder

        return decode_folder(format, data, options)  # data is the folder path here
    if format not in DECODERS:
        raise UnsupportedError(f"no decoder for format {format!r}; formats: {', '.join(FORMATS)}")
    return DECODERS[format](bytes(data), options)


def encode(format: str, reading: Mapping[str, Any], options: Mapping[str, str] | None = None) -> bytes:  # noqa: A002
    """The bytes of a canonical reading in ``format``. Raises MlfError for a bad reading."""
    if format not in ENCODERS:
        raise UnsupportedError(f"no encoder for format {format!r}; formats: {', '.join(ENCODERS)}")
    return ENCODERS[format](reading, options)


def dumps(reading: Any) -> str:
    """A reading as one compact JSON line (keys in insertion order, UTF-8 kept)."""
    return json.dumps(reading, ensure_ascii=False, separators=(",", ":"))


__all__ = ["DECODERS", "ENCODERS", "ERROR_CLASSES", "FORMATS", "ROLES", "decode", "decode_archive", "decode_blob",
           "decode_graph", "decode_metadata", "decode_params", "dumps", "encode", "encode_graph", "encode_metadata",
           "encode_params", "error_class", "graph_reading", "metadata_reading", "migrate", "sha256"]
