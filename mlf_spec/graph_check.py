"""Deprecated name: this module moved to :mod:`mlf_spec.graph.check` (GraphExecutor JSON has its own subpackage, mlf_spec.graph). Importing it under this name
still works and gives the same module object, with a DeprecationWarning."""

import sys
import warnings

from mlf_spec.graph import check as _moved

warnings.warn("mlf_spec.graph_check is deprecated: import mlf_spec.graph.check instead", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved
