"""The runtime helper libraries the generated code imports (``generated/_fastlib.py``,
``_construct_lib.py``, ``_recordlib.py``), kept here as real modules that ruff and mypy check.

The generator copies each one's text into ``generated/`` (:func:`source`); it never imports them,
so they may import ``mlf_spec`` and third-party libraries that the generator itself does not need.
"""

from __future__ import annotations

from pathlib import Path

_HERE = Path(__file__).resolve().parent


def source(name: str) -> str:
    """The text of the runtime module ``name`` (``fastlib``, ``construct_lib``, ``recordlib``)."""
    return (_HERE / f"{name}.py").read_text(encoding="utf-8")
