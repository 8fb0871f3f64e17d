"""Check a standalone GraphExecutor JSON document (graph.json, ``<module>.graph``):
findings from spec/findings/graph_check.yaml.

    >>> from mlf_spec.graph import check as graph_check
    >>> graph_check.check("graph.json").codes()
    []

The same checks as the MLF archive check runs on its graph member (JSON, model, unknown
keys, structure), plus the dtype strings of ``attrs.dltype``. Any file gives a report:
text that is not JSON is the finding ``graph.json``.
"""

from __future__ import annotations

from typing import Any

from mlf_spec._io import describe, read_source
from mlf_spec._records import load_json
from mlf_spec.errors import MlfError
from mlf_spec.findings import ArtifactReport, Collector
from mlf_spec.generated.graph_check_findings import FINDINGS
from mlf_spec.graph import codec as _graph
from mlf_spec.params import dtypes as _dt


def check(source: Any, *, name: str | None = None) -> ArtifactReport:
    """Check graph JSON from a path, bytes or binary file object (MlfError only when the
    input cannot be opened)."""
    label = name or describe(source)
    with read_source(source, mapped=False) as (buf, size, _fd):  # a truncation is an MlfError, not SIGBUS
        data = bytes(memoryview(buf)[:size]) if size else b""
    c = Collector(FINDINGS)
    report = ArtifactReport(label, c.findings, kind="graph-json")
    try:
        doc = load_json(data, None, "graph JSON")
    except MlfError as exc:
        c.add("graph.json", "", exc.message, offset=exc.offset)
        return report
    if not isinstance(doc, dict):
        c.add("graph.json", "", f"graph JSON holds a JSON {type(doc).__name__}, not an object")
        return report
    g, issues = _graph.check_document(doc)
    for i in issues:
        c.add("graph.unknown-key" if i.kind == "unknown-key" else "graph.schema", i.path, i.message)
    if g is None or any(i.kind != "unknown-key" for i in issues):
        return report
    for i in _graph.structure_issues(g):
        c.add("graph.structure", i.path, i.message)
    dltype = g.model.attrs.dltype[1] if g.model.attrs.dltype is not None else []
    for k, t in enumerate(dltype):
        if not _dt.is_spelling(t):
            c.add("graph.dltype", f"attrs.dltype[1][{k}]", f"{t!r} is not a dtype spelling of any TVM version")
    return report


__all__ = ["check"]
