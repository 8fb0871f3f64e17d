"""GraphExecutor JSON (``graph.json`` / ``<module>.graph``): the codec
(:mod:`mlf_spec.graph.codec`: parse, check against the spec's model, write as dmlc's
JSONWriter) and the standalone check (:mod:`mlf_spec.graph.check`).

The public API is re-exported here from :mod:`mlf_spec.graph.codec` (also reachable as the
short name ``mlf_spec.graph_json``); the pydantic model ``Graph`` only when asked for, so that
reading a graph stays free of pydantic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import codec as _codec
from .codec import GraphDocument, check_document, dumps, nbytes, parse, sid_map, structure_issues

if TYPE_CHECKING:
    from .codec import Graph

__all__ = ["Graph", "GraphDocument", "check_document", "dumps", "nbytes", "parse", "sid_map", "structure_issues"]


def __getattr__(name: str) -> object:
    if name == "Graph":  # the pydantic model, loaded when asked for (as in the codec)
        return _codec.Graph
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
