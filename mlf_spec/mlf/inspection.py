"""What an MLF archive holds: the document of ``mlf-spec inspect`` (container, metadata
version and style, the writer revisions that fit, each module's targets, executor, memory
summary, params index, graph inputs and outputs and files, every member).

    >>> from mlf_spec.mlf import inspection
    >>> doc = inspection.inspect("model.tar")
    >>> doc["version"], [m["name"] for m in doc["modules"]]
    (7, ['default'])

The document is plain JSON data typed by ``generated/mlf_inspect_output_documents.py``
(from spec/records/mlf_inspect_output.yaml); the CLI prints it as JSON or as text.
"""

from __future__ import annotations

import os
from typing import Any

from mlf_spec.errors import MlfError
from mlf_spec.generated.mlf_inspect_output_documents import File, InspectReport, Memory, Module, Tensor
from mlf_spec.graph import codec as _graph

from . import archive as _archive
from . import check as _check
from . import metadata as _md


def _int(v: Any) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


def _memory(data: Any, style: str | None) -> Memory:
    """The memory summary of one module's metadata as plain data (read defensively: the
    document may depart from its version's model)."""
    out: Memory = {"main": [], "workspace_size_bytes": 0, "operator_functions": 0, "sids": 0, "sids_bytes": 0}
    memory = data.get("memory") if isinstance(data, dict) else None
    if isinstance(memory, list):  # version 1: the storage ids
        out["sids"] = len(memory)
        out["sids_bytes"] = sum(_int(s.get("size_bytes")) for s in memory if isinstance(s, dict))
        return out
    if not isinstance(memory, dict):
        return out
    if style == "operator":  # PrimFunc -> buffers
        out["operator_functions"] = len(memory)
        return out
    functions = memory.get("functions")
    fn: dict[str, Any] = functions if isinstance(functions, dict) else {}
    entries = fn.get("main")
    main = [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []
    ops = fn.get("operator_functions")
    stored = memory.get("sids")
    sids: list[Any] = stored if isinstance(stored, list) else []
    out["main"] = main
    out["workspace_size_bytes"] = sum(_int(e.get("workspace_size_bytes")) for e in main)
    out["operator_functions"] = len(ops) if isinstance(ops, list) else 0
    out["sids"] = len(sids)
    out["sids_bytes"] = sum(_int(s.get("size_bytes")) for s in sids if isinstance(s, dict))
    return out


def inspect_document(a: _archive.Archive, problems: list[str] | None = None) -> InspectReport:
    """What an opened archive holds, as the document ``mlf-spec inspect --json`` prints
    (schema: generated/schemas/mlf_inspect_output.schema.json). Parts that cannot be read (a
    broken params file or graph) are null and described in ``problems`` (a list the caller
    passes, appended to); a metadata.json that departs from its version's model is shown
    as far as it goes, the departures in ``deviations``. Never raises for what the members
    hold."""
    problems = [] if problems is None else problems
    reading = _check.read_metadata(a)
    v, style, md = reading.version, reading.style, reading.metadata
    if v is not None and style is not None:
        placements = a.placements(v, style, list(reading.modules))
        mods = a.modules_of(reading.modules, v, style)
    else:
        placements, mods = {}, {}
    modules: list[Module] = []
    for name, mod in mods.items():
        data = _md.to_data(mod.metadata)
        params: list[dict[str, Any]] | None = None
        try:
            lazy = mod.params
        except MlfError as exc:
            problems.append(f"module {name!r}: params unreadable: {exc}")
            lazy = None
        if lazy is not None:
            params = [{"name": i.name, "dtype": i.dtype.name, "shape": list(i.shape), "offset": i.offset,
                       "nbytes": i.nbytes} for i in lazy.index]
            mod.close()  # one params member at a time (a copy when the archive is read by pread)
        graph = None
        try:
            g = mod.graph
        except MlfError as exc:
            problems.append(f"module {name!r}: graph unreadable: {exc}")
            g = None
        if g is not None and _graph.structure_issues(g):
            problems.append(f"module {name!r}: graph inconsistent: {_graph.structure_issues(g)[0].message}")
            g = None
        if g is not None:
            bound: set[str] = {p["name"] for p in params or []}
            graph = {"nodes": len(g.model.nodes), "inputs": [_input_tensor(g, n) for n in g.model_input_names(bound)],
                     "params": [_input_tensor(g, n) for n in g.parameter_names(bound)],
                     "outputs": [{"name": g.model.nodes[h[0]].name, "dtype": g.entry_dtype(g.entry_id(h[0], h[1])),
                                  "shape": g.entry_shape(g.entry_id(h[0], h[1]))} for h in g.model.heads]}
        executors = mod.field("executors") or mod.field("runtimes") or []
        when = mod.field("export_datetime")
        modules.append({"name": name, "targets": mod.targets,
                        "executors": [x for x in executors if isinstance(x, str)] if isinstance(executors, list) else [],
                        "export_datetime": when if isinstance(when, str) else None, "memory": _memory(data, style),
                        "params": params, "graph": graph, "files": {k: list(x) for k, x in mod.files.items()}})
    files: list[File] = []
    for m in a.members:
        pl = placements.get(m.path)
        files.append({"name": m.name, "type": "directory" if m.is_dir else "file", "size": m.size,
                      "kind": pl.kind if pl is not None else None, "module": pl.module if pl is not None else None})
    revs = _md.consistent_revisions(md) if md is not None else []
    for pl in placements.values():
        if pl is not None:
            revs = [r for r in revs if r in pl.present_in]
    unknown = list(md.unknown) if md is not None else [f.path for f in reading.findings
                                                       if f.code == "metadata.unknown-key"]
    return {"path": a.file, "container": "directory" if a.container == "directory" else "tar",
            "compression": a.compression, "version": v, "style": style, "revisions": revs,
            "unknown_keys": unknown, "deviations": [f.to_dict() for f in reading.findings],
            "modules": modules, "files": files}


def _input_tensor(g: Any, name: str) -> Tensor:
    eid = g.input_entry(name)
    return {"name": name, "dtype": g.entry_dtype(eid), "shape": g.entry_shape(eid)}


def inspect(source: Any, *, problems: list[str] | None = None, name: str | None = None,
            max_member_size: int = _archive.DEFAULT_MAX_MEMBER_SIZE) -> InspectReport:
    """What the archive at ``source`` holds (a path to a tar or directory, bytes or a binary
    file object), as :func:`inspect_document` gives it; ``path`` is ``name`` or the path
    given. Raises MlfError when the container cannot be read."""
    with _archive.open(source, max_member_size=max_member_size, mapped=False) as a:  # never SIGBUS
        doc = inspect_document(a, problems)
    if name is not None:
        doc["path"] = name
    elif isinstance(source, (str, os.PathLike)):
        doc["path"] = os.fspath(source)
    return doc


__all__ = ["inspect", "inspect_document"]
