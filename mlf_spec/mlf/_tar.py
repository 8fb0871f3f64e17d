"""The tar reader and writer of MLF archives: :mod:`mlf_spec.tar`, the one tar package every
reader shares (this name stays for code that imported it from here)."""

from mlf_spec.errors import MalformedError
from mlf_spec.tar import *  # noqa: F403
from mlf_spec.tar import __all__ as _names

__all__ = [*_names, "MalformedError"]
