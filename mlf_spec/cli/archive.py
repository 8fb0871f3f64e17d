"""``mlf-spec inspect`` and ``mlf-spec check``: MLF archives on the command line.

``inspect PATH [--json]`` prints what an archive holds; ``check PATH [--json] [--version N]``
prints its conformance findings and exits 0 (conformant), 1 (an error-severity finding) or
2 (the input cannot be read). JSON forms: generated/schemas/mlf_inspect_output.schema.json
and mlf_check_output.schema.json.
"""

from __future__ import annotations

import argparse
import io
from collections.abc import Iterable, Iterator
from typing import Any

from mlf_spec.generated import mlf_revisions_timeline as _revisions
from mlf_spec.sniff import KINDS

from . import _batch, add_command
from ._text import printable

ACCEPT = frozenset({"mlf-archive"})
#: Metadata versions, for --version (the spec's, from the small generated timeline of revisions).
VERSIONS: tuple[int, ...] = tuple(sorted(_revisions.VERSIONS))


def register(sub: Any) -> None:
    """Add the ``inspect`` command to the CLI (``check`` is in :mod:`mlf_spec.cli.check`)."""
    p = add_command(sub, "inspect")
    _batch.add_arguments(p, what="artifacts of any kind check reads (MLF archives, .params, module blobs and "
                                 "libraries, GraphExecutor JSON, tensor caches)")
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


#: The kinds ``inspect`` reads besides MLF archives: each through its dump command's reading,
#: with that command's defaults (its JSON line is that command's; its text starts with the kind).
OTHER_KINDS: dict[str, str] = {"params": "params", "library": "blob", "c-source": "blob", "export-tar": "blob",
                               "blob": "blob", "tensor-cache": "cache"}
_ANY = ACCEPT | frozenset(OTHER_KINDS) | frozenset({"graph-json", "mlf-metadata", "tar", "compressed"})


def _inspect(args: argparse.Namespace) -> int:
    return _batch.run(args, _inspect_one, accept=_ANY, what="an artifact mlf-spec reads")


def _inspect_one(inp: _batch.Input, args: argparse.Namespace) -> _batch.Outcome:
    from mlf_spec.mlf import archive as _archive
    from mlf_spec.mlf.inspection import inspect_document

    if inp.kind.name in OTHER_KINDS or inp.kind.name in ("graph-json", "mlf-metadata"):
        return _inspect_other(inp, args)
    if inp.kind.name not in ("tar", "compressed"):
        _batch.guard(inp, ACCEPT, "an MLF archive")
    problems: list[str] = []
    with _archive.open(inp.source, mapped=False, **member_limit(args)) as a:
        doc: dict[str, Any] = dict(inspect_document(a, problems))
    doc["path"] = inp.name
    schema = [f for f in doc["deviations"] if f["severity"] == "error"]
    if schema:
        what = f"departs from the version {doc['version']} model" if doc["version"] is not None else "tells no version"
        problems.insert(0, f"metadata.json {what} ({len(schema)} finding(s), first {schema[0]['code']}); "
                           "shown as far as it goes")
    notes = [f"mlf-spec: warning: {inp.name}: {p} (run `mlf-spec check` for details)" for p in problems]
    if args.json:
        return _batch.Outcome(0, doc=doc, notes=notes)
    # the first line names the kind, as for every other kind (_inspect_other)
    first = f"{inp.name}: {KINDS['mlf-archive'].label}\n"
    return _batch.Outcome(0, text=first + inspect_text(doc), notes=notes)


def _inspect_other(inp: _batch.Input, args: argparse.Namespace) -> _batch.Outcome:
    """What a file of another kind holds: its kind, then what its dump command shows."""
    import importlib

    if inp.kind.name in ("graph-json", "mlf-metadata"):  # no dump command: its check says what it holds
        from mlf_spec.findings import text

        if inp.kind.name == "graph-json":
            from mlf_spec.graph import check as graph_check

            report: Any = graph_check.check(inp.source, name=inp.name)
        else:
            from mlf_spec.mlf import check as mlf_check

            report = mlf_check.check_metadata(inp.source, name=inp.name)
        out = _batch.Outcome(0, doc=report.to_dict()) if args.json else _batch.Outcome(0, text=text(report))
    else:
        module = OTHER_KINDS[inp.kind.name]
        opts = argparse.Namespace(json=args.json, dialect=None, stats=False, values=False, era=None)
        out = importlib.import_module(f"mlf_spec.cli.{module}")._dump_one(inp, opts)
    if not args.json:
        label = f"{inp.name}: {inp.kind.label}\n"
        if out.pieces is not None:  # a text made in pieces (cache dump)
            out.pieces = [label, *out.pieces] if isinstance(out.pieces, list) else _after(label, out.pieces)
        else:
            out.text = label + out.text
    return out


def _after(first: str, pieces: Iterable[str]) -> Iterator[str]:
    yield first
    yield from pieces


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
