"""Deprecated name: this module moved to :mod:`mlf_spec.graph.codec` (GraphExecutor JSON has its own subpackage, mlf_spec.graph; ``from mlf_spec import graph_json`` is the short name and does not warn). Importing it under this name
still works and gives the same module object, with a DeprecationWarning."""

import sys
import warnings

from mlf_spec.graph import codec as _moved

warnings.warn("mlf_spec.graph_json is deprecated: import mlf_spec.graph.codec instead", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved
