"""Deprecated name: this module moved to :mod:`mlf_spec._internal.spec_strategies` (an internal, not public API; the public strategies are mlf_spec.strategies). Importing it under this name
still works and gives the same module object, with a DeprecationWarning."""

import sys
import warnings

from mlf_spec._internal import spec_strategies as _moved

warnings.warn("mlf_spec.spec_strategies is deprecated: import mlf_spec._internal.spec_strategies instead", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved
