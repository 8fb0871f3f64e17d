"""Deprecated name: this module moved to :mod:`mlf_spec._internal.spec_engine` (an internal, not public API). Importing it under this name
still works and gives the same module object, with a DeprecationWarning."""

import sys
import warnings

from mlf_spec._internal import spec_engine as _moved

warnings.warn("mlf_spec.spec_engine is deprecated: import mlf_spec._internal.spec_engine instead", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved
