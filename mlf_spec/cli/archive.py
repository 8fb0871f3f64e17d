"""``mlf-spec inspect`` and ``mlf-spec check``: MLF archives on the command line.

``inspect PATH [--json]`` prints what an archive holds; ``check PATH [--json] [--version N]``
prints its conformance findings and exits 0 (conformant), 1 (an error-severity finding) or
2 (the input cannot be read). JSON forms: generated/schemas/mlf_inspect_output.schema.json
and mlf_check_output.schema.json.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from mlf_spec import graph_json as _graph
from mlf_spec.errors import MlfError
from mlf_spec.generated._recordlib import to_data
from mlf_spec.mlf import archive as _archive
from mlf_spec.mlf import check as _check
from mlf_spec.mlf import metadata as _md


def register(sub: Any) -> None:
    """Add the ``inspect`` and ``check`` commands to the CLI."""
    p = sub.add_parser("inspect", help="show what an MLF archive (tar or directory) holds")
    p.add_argument("path", help="MLF tarball or extracted directory")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--max-member-size", type=int, default=_archive.DEFAULT_MAX_MEMBER_SIZE,
                   help="refuse members larger than this many bytes (default 1 GiB)")
    p.set_defaults(handler=_inspect)

    c = sub.add_parser("check", help="check an MLF archive against the metadata version it declares")
    c.add_argument("path", help="MLF tarball or extracted directory")
    c.add_argument("--json", action="store_true", help="machine-readable output")
    c.add_argument("--version", type=int, choices=list(_md.VERSIONS), dest="check_version",
                   help="check against this metadata version instead of the declared one")
    c.add_argument("--max-member-size", type=int, default=_archive.DEFAULT_MAX_MEMBER_SIZE,
                   help="refuse members larger than this many bytes (default 1 GiB)")
    c.set_defaults(handler=_check_cmd)


def _memory(rec: Any) -> dict[str, Any]:
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


def inspect_document(a: _archive.Archive, problems: list[str] | None = None) -> dict[str, Any]:
    """The JSON document of ``inspect --json`` (schema: mlf_inspect_output). Parts that
    cannot be read (a broken params file or graph) are null and described in ``problems``."""
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
    problems: list[str] = []
    with _archive.open(args.path, max_member_size=args.max_member_size) as a:
        doc = inspect_document(a, problems)
    for p in problems:
        print(f"mlf-spec: warning: {p} (run `mlf-spec check` for details)", file=sys.stderr)
    out = sys.stdout
    if args.json:
        json.dump(doc, out, indent=2, ensure_ascii=False)
        out.write("\n")
        return 0
    revs = doc["revisions"]
    out.write(f"{doc['path']}: MLF version {doc['version']}, {doc['style']} ({doc['container']}"
              f"{', ' + doc['compression'] if doc['compression'] else ''}, {len(doc['files'])} members)\n")
    if revs:
        out.write(f"writer revisions that fit: {', '.join(revs)}\n")
    if doc["unknown_keys"]:
        out.write(f"unknown metadata keys: {', '.join(doc['unknown_keys'])}\n")
    for mod in doc["modules"]:
        ex = ", ".join(mod["executors"]) or "operator"
        out.write(f"\nmodule {mod['name']!r}: executor {ex}; exported {mod['export_datetime']}\n")
        for t in mod["targets"]:
            out.write(f"  target: {t}\n")
        mem = mod["memory"]
        for e in mem["main"]:
            out.write(f"  main on device {e['device']}: workspace {e['workspace_size_bytes']}, constants "
                      f"{e['constants_size_bytes']}, io {e['io_size_bytes']} bytes\n")
            for kind in ("inputs", "outputs"):
                for n, t in (e.get(kind) or {}).items():
                    out.write(f"    {kind[:-1]} {n}: {t['dtype']}, {t['size']} bytes\n")
        out.write(f"  operator functions: {mem['operator_functions']}")
        out.write(f"; storage ids: {mem['sids']} ({mem['sids_bytes']} bytes)\n" if mem["sids"] else "\n")
        if mod["graph"]:
            g = mod["graph"]
            out.write(f"  graph: {g['nodes']} nodes\n")
            for kind in ("inputs", "outputs"):
                for t in g[kind]:
                    out.write(f"    {kind[:-1]} {t['name']}: {t['dtype']} {t['shape']}\n")
        if mod["params"] is not None:
            total = sum(p["nbytes"] for p in mod["params"])
            out.write(f"  params: {len(mod['params'])} tensors, {total} bytes\n")
            for p in mod["params"]:
                out.write(f"    {p['name']}: {p['dtype']} {p['shape']} ({p['nbytes']} bytes)\n")
        for kind, paths in sorted(mod["files"].items()):
            out.write(f"  {kind}: {', '.join(paths)}\n")
    out.write("\nfiles:\n")
    for f in doc["files"]:
        size = "dir" if f["type"] == "directory" else f"{f['size']}"
        tag = f["kind"] or "UNEXPECTED"
        out.write(f"  {f['name']}  {size}  {tag}{'  (' + f['module'] + ')' if f['module'] else ''}\n")
    return 0


def _check_cmd(args: argparse.Namespace) -> int:
    report = _check.check(args.path, version=args.check_version, max_member_size=args.max_member_size)
    out = sys.stdout
    if args.json:
        json.dump(report.to_dict(), out, indent=2, ensure_ascii=False)
        out.write("\n")
    else:
        where = f"version {report.version}, {report.style}" if report.version is not None else "version unknown"
        errors = sum(f.severity == "error" for f in report.findings)
        warnings = sum(f.severity == "warning" for f in report.findings)
        verdict = "conformant" if report.conformant else "NOT conformant"
        out.write(f"{report.path}: {where}: {verdict} ({errors} error(s), {warnings} warning(s))\n")
        for f in report.findings:
            loc = ":".join(x for x in (f.member or "", f.path) if x)
            out.write(f"  {f.severity}: {f.code}: {loc + ': ' if loc else ''}{f.message}\n")
    return 0 if report.conformant else 1
