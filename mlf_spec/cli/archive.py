"""``mlf-spec inspect`` and ``mlf-spec check``: MLF archives on the command line.

``inspect PATH [--json]`` prints what an archive holds; ``check PATH [--json] [--version N]``
prints its conformance findings and exits 0 (conformant), 1 (an error-severity finding) or
2 (the input cannot be read). JSON forms: generated/schemas/mlf_inspect_output.schema.json
and mlf_check_output.schema.json.
"""

from __future__ import annotations

import argparse
import io
from typing import TYPE_CHECKING, Any

from mlf_spec.errors import MlfError
from mlf_spec.generated import mlf_revisions_timeline as _revisions

from . import _batch, add_command
from ._text import printable

if TYPE_CHECKING:
    from mlf_spec.mlf.archive import Archive

ACCEPT = frozenset({"mlf-archive"})
#: Metadata versions, for --version (the spec's, from the small generated timeline of revisions).
VERSIONS: tuple[int, ...] = tuple(sorted(_revisions.VERSIONS))


def register(sub: Any) -> None:
    """Add the ``inspect`` command to the CLI (``check`` is in :mod:`mlf_spec.cli.check`)."""
    p = add_command(sub, "inspect")
    _batch.add_arguments(p, what="MLF tarballs or extracted directories")
    p.add_argument("--json", action="store_true", help="one JSON object per input (JSON Lines)")
    add_member_size(p)
    p.set_defaults(handler=_inspect)


def add_member_size(p: argparse.ArgumentParser) -> None:
    """The --max-member-size option of the commands that open archives."""
    p.add_argument("--max-member-size", type=int, default=None, metavar="BYTES",
                   help="refuse members larger than this many bytes (default 1 GiB)")


def member_limit(args: argparse.Namespace) -> dict[str, int]:
    """The keyword arguments of archive.open for --max-member-size."""
    return {} if args.max_member_size is None else {"max_member_size": args.max_member_size}


def _int(v: Any) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


def _memory(data: Any, style: str | None) -> dict[str, Any]:
    """The memory summary of one module's metadata as plain data (read defensively: the
    document may depart from its version's model)."""
    out: dict[str, Any] = {"main": [], "workspace_size_bytes": 0, "operator_functions": 0, "sids": 0, "sids_bytes": 0}
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
    fn = memory.get("functions")
    fn = fn if isinstance(fn, dict) else {}
    main = [e for e in fn.get("main") or [] if isinstance(e, dict)] if isinstance(fn.get("main"), list) else []
    ops = fn.get("operator_functions")
    sids = memory.get("sids") if isinstance(memory.get("sids"), list) else []
    out.update(main=main, workspace_size_bytes=sum(_int(e.get("workspace_size_bytes")) for e in main),
               operator_functions=len(ops) if isinstance(ops, list) else 0, sids=len(sids),
               sids_bytes=sum(_int(s.get("size_bytes")) for s in sids if isinstance(s, dict)))
    return out


def inspect_document(a: Archive, problems: list[str] | None = None) -> dict[str, Any]:
    """The JSON document of ``inspect --json`` (schema: mlf_inspect_output). Parts that
    cannot be read (a broken params file or graph) are null and described in ``problems``;
    a metadata.json that departs from its version's model is shown as far as it goes, the
    departures in ``deviations``."""
    from mlf_spec.generated._recordlib import Record, to_data
    from mlf_spec.graph import codec as _graph
    from mlf_spec.mlf import check as _check
    from mlf_spec.mlf import metadata as _md

    problems = [] if problems is None else problems
    reading = _check.read_metadata(a)
    v, style, md = reading.version, reading.style, reading.metadata
    if v is not None and style is not None:
        placements = a.placements(v, style, list(reading.modules))
        mods = a.modules_of(reading.modules, v, style)
    else:
        placements, mods = {}, {}
    modules = []
    for name, mod in mods.items():
        data = to_data(mod.metadata) if isinstance(mod.metadata, Record) else mod.metadata
        params = None
        try:
            lazy = mod.params
        except MlfError as exc:
            problems.append(f"module {name!r}: params unreadable: {exc}")
            lazy = None
        if lazy is not None:
            params = [{"name": i.name, "dtype": i.dtype.name, "shape": list(i.shape), "offset": i.offset,
                       "nbytes": i.nbytes} for i in lazy.index]
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
            bound = {p["name"] for p in params or []}
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
    files = []
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


def _input_tensor(g: Any, name: str) -> dict[str, Any]:
    eid = g.input_entry(name)
    return {"name": name, "dtype": g.entry_dtype(eid), "shape": g.entry_shape(eid)}


def _inspect(args: argparse.Namespace) -> int:
    return _batch.run(args, _inspect_one, accept=ACCEPT, what="an MLF archive")


def _inspect_one(inp: _batch.Input, args: argparse.Namespace) -> _batch.Outcome:
    from mlf_spec.mlf import archive as _archive

    _batch.guard(inp, ACCEPT, "an MLF archive")
    problems: list[str] = []
    with _archive.open(inp.source, **member_limit(args)) as a:
        doc = inspect_document(a, problems)
    doc["path"] = inp.name
    schema = [f for f in doc["deviations"] if f["severity"] == "error"]
    if schema:
        what = f"departs from the version {doc['version']} model" if doc["version"] is not None else "tells no version"
        problems.insert(0, f"metadata.json {what} ({len(schema)} finding(s), first {schema[0]['code']}); "
                           "shown as far as it goes")
    notes = [f"mlf-spec: warning: {inp.name}: {p} (run `mlf-spec check` for details)" for p in problems]
    if args.json:
        return _batch.Outcome(0, doc=doc, notes=notes)
    return _batch.Outcome(0, text=inspect_text(doc), notes=notes)


def inspect_text(doc: dict[str, Any]) -> str:
    """The text form of an inspect document."""
    out = io.StringIO()
    revs = doc["revisions"]
    what = f"MLF version {doc['version']}, {doc['style']}" if doc["version"] is not None else "MLF version unknown"
    out.write(f"{doc['path']}: {what} ({doc['container']}"
              f"{', ' + doc['compression'] if doc['compression'] else ''}, {len(doc['files'])} members)\n")
    if revs:
        out.write(f"writer revisions that fit: {', '.join(revs)}\n")
    if doc["unknown_keys"]:
        out.write(f"unknown metadata keys: {', '.join(printable(k) for k in doc['unknown_keys'])}\n")
    schema = [f for f in doc["deviations"] if f["code"] != "metadata.unknown-key"]
    if schema:
        out.write(f"metadata departs from the version {doc['version']} model (shown as far as it goes):\n"
                  if doc["version"] is not None else "metadata.json tells no version (members shown as they are):\n")
        for f in schema:
            loc = printable(f["path"]) + ": " if f["path"] else ""
            out.write(f"  {f['severity']}: {f['code']}: {loc}{printable(f['message'])}\n")
    for mod in doc["modules"]:
        ex = ", ".join(printable(x) for x in mod["executors"]) or "operator"
        out.write(f"\nmodule {printable(mod['name'])!r}: executor {ex}; exported {mod['export_datetime']}\n")
        for t in mod["targets"]:
            out.write(f"  target: {printable(t)}\n")
        mem = mod["memory"]
        for e in mem["main"]:
            out.write(f"  main on device {e.get('device')}: workspace {e.get('workspace_size_bytes')}, constants "
                      f"{e.get('constants_size_bytes')}, io {e.get('io_size_bytes')} bytes\n")
            for kind in ("inputs", "outputs"):
                tensors = e.get(kind)
                for n, t in (tensors.items() if isinstance(tensors, dict) else ()):
                    t = t if isinstance(t, dict) else {}
                    out.write(f"    {kind[:-1]} {printable(str(n))}: {printable(str(t.get('dtype')))}, "
                              f"{t.get('size')} bytes\n")
        out.write(f"  operator functions: {mem['operator_functions']}")
        out.write(f"; storage ids: {mem['sids']} ({mem['sids_bytes']} bytes)\n" if mem["sids"] else "\n")
        if mod["graph"]:
            g = mod["graph"]
            out.write(f"  graph: {g['nodes']} nodes\n")
            for kind in ("inputs", "outputs"):
                for t in g[kind]:
                    out.write(f"    graph {kind[:-1]} {printable(t['name'])}: {t['dtype']} {t['shape']}\n")
            if g["params"]:
                names = ", ".join(printable(t["name"]) for t in g["params"][:8]) + (", ..." if len(g["params"]) > 8 else "")
                out.write(f"    graph nodes bound to parameters: {len(g['params'])} ({names})\n")
        if mod["params"] is not None:
            total = sum(p["nbytes"] for p in mod["params"])
            out.write(f"  parameters: {len(mod['params'])} tensors, {total} bytes\n")
            for p in mod["params"]:
                out.write(f"    {printable(p['name'])}: {p['dtype']} {p['shape']} ({p['nbytes']} bytes)\n")
        for kind, paths in sorted(mod["files"].items()):
            out.write(f"  {kind} files: {', '.join(printable(x) for x in paths)}\n")
    out.write("\nmembers:\n")
    for f in doc["files"]:
        size = "dir" if f["type"] == "directory" else f"{f['size']}"
        tag = f["kind"] or "UNEXPECTED"
        out.write(f"  {printable(f['name'])}  {size}  {tag}{'  (' + printable(f['module']) + ')' if f['module'] else ''}\n")
    return out.getvalue()
