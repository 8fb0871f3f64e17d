"""GraphExecutor JSON (``graph.json`` / ``<module>.graph``): the codec
(:mod:`mlf_spec.graph.codec`: parse, check against the spec's model, write as dmlc's
JSONWriter) and the standalone check (:mod:`mlf_spec.graph.check`).

The public API is re-exported here from :mod:`mlf_spec.graph.codec` (also reachable as the
short name ``mlf_spec.graph_json``).
"""

from .codec import *  # noqa: F403
from .codec import __all__  # noqa: F401
