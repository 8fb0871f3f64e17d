"""Which walker reads the headers of a .params file: the compiled accelerator or the
generated Python reader.

The accelerator (``mlf_spec.params._walker``, ``_walker.c``) is built by pip at install when
a C compiler and Python's headers are there; without them install still succeeds and every
read goes through the generated reader (``generated/params_fast.py``), which is the
reference: the accelerator makes the same checks in the same order and is held to it by
``tests/params/test_walker.py``. On bad input the accelerator only says where
(``Refusal(kind, field, offset)``); the generated reader then reads the file again and
raises the error, so messages have one source.

Set ``MLF_SPEC_PURE_PYTHON=1`` (read at first use) or call :func:`use` to force the
generated reader. The extension is imported on first use, never at start-up.
"""

from __future__ import annotations

import contextlib
import importlib
import os
from collections.abc import Iterator
from typing import Any

ENV = "MLF_SPEC_PURE_PYTHON"
_chosen: list[Any] = []  # [the extension module, or None for the Python reader] once decided


def _load() -> Any:
    try:  # by name: the compiled module has no Python source for type checkers and import graphs
        return importlib.import_module("mlf_spec.params._walker")
    except ImportError:
        return None


def walker() -> Any:
    """The extension module that walks headers, or None when the Python reader is to be used
    (not built, or forced by ``MLF_SPEC_PURE_PYTHON`` / :func:`use`)."""
    if not _chosen:
        _chosen.append(None if os.environ.get(ENV, "") not in ("", "0") else _load())
    return _chosen[0]


def available() -> bool:
    """Whether the compiled walker was built and imports (whatever is chosen)."""
    return _load() is not None


def use(accelerated: bool) -> None:
    """Choose the walker for later reads: the compiled one (when available) or the Python reader."""
    _chosen[:] = [_load() if accelerated else None]


@contextlib.contextmanager
def pure_python() -> Iterator[None]:
    """Read with the generated Python reader inside the block (then restore the choice)."""
    before = walker()
    _chosen[:] = [None]
    try:
        yield
    finally:
        _chosen[:] = [before]
