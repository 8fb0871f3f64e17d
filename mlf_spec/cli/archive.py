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

from . import _batch
from ._text import printable

if TYPE_CHECKING:
    from mlf_spec.mlf.archive import Archive

ACCEPT = frozenset({"mlf-archive"})
#: Metadata versions, for --version (the spec's versions 1 to 7; checked against it in the tests).
VERSIONS = tuple(range(1, 8))


def register(sub: Any) -> None:
    """Add the ``inspect`` command to the CLI (``check`` is in :mod:`mlf_spec.cli.check`)."""
    p = sub.add_parser("inspect", help="show what MLF archives (tars or directories) hold")
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


def _memory(rec: Any) -> dict[str, Any]:
    from mlf_spec.generated._recordlib import to_data

    memory = rec.memory
    if isinstance(memory, list):  # version 1
        return {"main": [], "workspace_size_bytes": 0, "operator_functions": 0, "sids": len(memory),
                "sids_bytes": sum(s.size_bytes for s in memory)}
    if isinstance(memory, dict):  # operator style: PrimFunc -> buffers
        return {"main": [], "workspace_size_bytes": 0, "operator_functions": len(memory), "sids": 0, "sids_bytes": 0}
    main = [to_data(e) for e in memory.functions.main]
    sids = memory.sids or []
    return {"main": main, "workspace_size_bytes": sum(e.workspace_size_bytes for e in memory.functions.main),
            "operator_functions": len(memory.functions.operator_functions), "sids": len(sids),
            "sids_bytes": sum(s.size_bytes for s in sids)}


def inspect_document(a: Archive, problems: list[str] | None = None) -> dict[str, Any]:
    """The JSON document of ``inspect --json`` (schema: mlf_inspect_output). Parts that
    cannot be read (a broken params file or graph) are null and described in ``problems``."""
    from mlf_spec import graph_json as _graph
    from mlf_spec.mlf import metadata as _md

    problems = [] if problems is None else problems
    md = a.metadata
    placements = a.placements()
    modules = []
    for name, mod in a.modules.items():
        rec = mod.metadata
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
            graph = {"nodes": len(g.model.nodes),
                     "inputs": [{"name": n, "dtype": g.entry_dtype(g.input_entry(n)),  # type: ignore[arg-type]
                                 "shape": g.entry_shape(g.input_entry(n))} for n in g.input_names()],  # type: ignore[arg-type]
                     "outputs": [{"name": g.model.nodes[h[0]].name, "dtype": g.entry_dtype(g.entry_id(h[0], h[1])),
                                  "shape": g.entry_shape(g.entry_id(h[0], h[1]))} for h in g.model.heads]}
        executors = list(getattr(rec, "executors", None) or getattr(rec, "runtimes", None) or [])
        modules.append({"name": name, "targets": mod.targets, "executors": executors,
                        "export_datetime": rec.export_datetime, "memory": _memory(rec), "params": params,
                        "graph": graph, "files": {k: list(v) for k, v in mod.files.items()}})
    files = []
    for m in a.members:
        pl = placements.get(m.path)
        files.append({"name": m.name, "type": "directory" if m.is_dir else "file", "size": m.size,
                      "kind": pl.kind if pl is not None else None, "module": pl.module if pl is not None else None})
    revs = _md.consistent_revisions(md)
    for pl in placements.values():
        if pl is not None:
            revs = [r for r in revs if r in pl.present_in]
    return {"path": a.file, "container": "directory" if a.container == "directory" else "tar",
            "compression": a.compression, "version": md.version, "style": md.style, "revisions": revs,
            "unknown_keys": list(md.unknown), "modules": modules, "files": files}


def _inspect(args: argparse.Namespace) -> int:
    return _batch.run(args, _inspect_one, accept=ACCEPT, what="an MLF archive")


def _inspect_one(inp: _batch.Input, args: argparse.Namespace) -> _batch.Outcome:
    from mlf_spec.mlf import archive as _archive

    _batch.guard(inp, ACCEPT, "an MLF archive")
    problems: list[str] = []
    with _archive.open(inp.source, **member_limit(args)) as a:
        doc = inspect_document(a, problems)
    doc["path"] = inp.name
    notes = [f"mlf-spec: warning: {inp.name}: {p} (run `mlf-spec check` for details)" for p in problems]
    if args.json:
        return _batch.Outcome(0, doc=doc, notes=notes)
    return _batch.Outcome(0, text=inspect_text(doc), notes=notes)


def inspect_text(doc: dict[str, Any]) -> str:
    """The text form of an inspect document."""
    out = io.StringIO()
    revs = doc["revisions"]
    out.write(f"{doc['path']}: MLF version {doc['version']}, {doc['style']} ({doc['container']}"
              f"{', ' + doc['compression'] if doc['compression'] else ''}, {len(doc['files'])} members)\n")
    if revs:
        out.write(f"writer revisions that fit: {', '.join(revs)}\n")
    if doc["unknown_keys"]:
        out.write(f"unknown metadata keys: {', '.join(printable(k) for k in doc['unknown_keys'])}\n")
    for mod in doc["modules"]:
        ex = ", ".join(mod["executors"]) or "operator"
        out.write(f"\nmodule {printable(mod['name'])!r}: executor {ex}; exported {mod['export_datetime']}\n")
        for t in mod["targets"]:
            out.write(f"  target: {printable(t)}\n")
        mem = mod["memory"]
        for e in mem["main"]:
            out.write(f"  main on device {e['device']}: workspace {e['workspace_size_bytes']}, constants "
                      f"{e['constants_size_bytes']}, io {e['io_size_bytes']} bytes\n")
            for kind in ("inputs", "outputs"):
                for n, t in (e.get(kind) or {}).items():
                    out.write(f"    {kind[:-1]} {printable(n)}: {t['dtype']}, {t['size']} bytes\n")
        out.write(f"  operator functions: {mem['operator_functions']}")
        out.write(f"; storage ids: {mem['sids']} ({mem['sids_bytes']} bytes)\n" if mem["sids"] else "\n")
        if mod["graph"]:
            g = mod["graph"]
            out.write(f"  graph: {g['nodes']} nodes\n")
            for kind in ("inputs", "outputs"):
                for t in g[kind]:
                    out.write(f"    graph {kind[:-1]} {printable(t['name'])}: {t['dtype']} {t['shape']}\n")
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
