"""Comparing two GraphExecutor JSON documents by what a user of the graph sees: its inputs
(name, dtype, shape), its outputs, the operator functions it calls and the node count;
then, if those agree but the documents do not, the JSON paths that differ."""

from __future__ import annotations

from collections import Counter
from itertools import islice
from typing import Any

from ._model import Change, json_changes

#: At most this many JSON-path changes are listed when the summary agrees.
MAX_PATHS = 20


def summary(g: Any) -> dict[str, Any] | None:
    """Inputs, outputs, functions and node count of plain graph JSON; None if the document
    is too broken to say."""
    try:
        nodes = g["nodes"]
        attrs = g["attrs"]
        row = g["node_row_ptr"]
        dtypes, shapes = attrs["dltype"][1], attrs["shape"][1]

        def entry(n: int, k: int = 0) -> dict[str, Any]:
            e = row[n] + k
            return {"dtype": dtypes[e], "shape": list(shapes[e])}

        inputs = {nodes[i]["name"]: entry(i) for i in g["arg_nodes"]}
        outputs = [{"name": nodes[h[0]]["name"], "index": h[1], **entry(h[0], h[1])} for h in g["heads"]]
        funcs = Counter((n.get("attrs") or {}).get("func_name", n.get("name")) for n in nodes if n.get("op") != "null")
        return {"inputs": inputs, "outputs": outputs, "functions": funcs, "nodes": len(nodes)}
    except (KeyError, IndexError, TypeError, AttributeError):
        return None


def compare(a: Any, b: Any, *, member: str | None = None, module: str | None = None) -> list[Change]:
    """The changes from graph JSON ``a`` to ``b`` (both parsed JSON)."""
    where: dict[str, Any] = {"member": member, "module": module}
    sa, sb = summary(a), summary(b)
    out: list[Change] = []
    if sa is not None and sb is not None:
        for name, t in sa["inputs"].items():
            if name not in sb["inputs"]:
                out.append(Change("graph", "removed", f"inputs.{name}", t, None,
                                  f"graph input {name}: {t['dtype']} {t['shape']}", **where))
            elif sb["inputs"][name] != t:
                u = sb["inputs"][name]
                out.append(Change("graph", "changed", f"inputs.{name}", t, u,
                                  f"graph input {name}: {t['dtype']} {t['shape']} -> {u['dtype']} {u['shape']}",
                                  **where))
        for name, t in sb["inputs"].items():
            if name not in sa["inputs"]:
                out.append(Change("graph", "added", f"inputs.{name}", None, t,
                                  f"graph input {name}: {t['dtype']} {t['shape']}", **where))
        oa, ob = sa["outputs"], sb["outputs"]
        for i in range(max(len(oa), len(ob))):
            x = oa[i] if i < len(oa) else None
            y = ob[i] if i < len(ob) else None
            if x != y:
                change = "added" if x is None else "removed" if y is None else "changed"
                out.append(Change("graph", change, f"outputs[{i}]", x, y, f"graph output {i}: {_io(x)} -> {_io(y)}",
                                  **where))
        fa, fb = sa["functions"], sb["functions"]
        for f in fa:
            if fb[f] < fa[f]:
                out.append(Change("graph", "removed", f"functions.{f}", fa[f], fb[f] or None,
                                  f"calls to {f}: {fa[f]} -> {fb[f]}", **where))
        for f in fb:
            if fa[f] < fb[f]:
                out.append(Change("graph", "added", f"functions.{f}", fa[f] or None, fb[f],
                                  f"calls to {f}: {fa[f]} -> {fb[f]}", **where))
        if sa["nodes"] != sb["nodes"]:
            out.append(Change("graph", "changed", "nodes", sa["nodes"], sb["nodes"],
                              f"nodes: {sa['nodes']} -> {sb['nodes']}", **where))
    if not out and a != b:
        paths = list(islice(json_changes(a, b, "graph", **where), MAX_PATHS + 1))
        if len(paths) > MAX_PATHS:
            paths[MAX_PATHS:] = [Change("graph", "changed", "", None, None,
                                        f"more than {MAX_PATHS} JSON paths differ; the first are listed", **where)]
        out.extend(paths)
    return out


def _io(t: dict[str, Any] | None) -> str:
    return "none" if t is None else f"{t['name']} {t['dtype']} {t['shape']}"
