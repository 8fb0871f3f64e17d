"""Deprecated home of the text form of a :class:`~mlf_spec.diff.Diff`: ``str(diff)`` gives it;
:func:`change_line` and :func:`diff_text` now live beside the data they render, in
``mlf_spec.diff._model`` (this module keeps the names working, with a DeprecationWarning)."""

from __future__ import annotations

import warnings
from typing import Any

_MOVED = ("change_line", "diff_text")


def __getattr__(name: str) -> Any:
    if name not in _MOVED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(f"mlf_spec.diff.text.{name} is deprecated: use str(diff) (the function is "
                  f"mlf_spec.diff._model.{name})", DeprecationWarning, stacklevel=2)
    from . import _model

    return getattr(_model, name)
