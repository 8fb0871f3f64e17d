"""Will TVM VERSION read an artifact, and read it as meant? Verdicts from the rules of
spec/verdicts/ (tvm_read_rules.yaml for .params files and blobs, mlf_read_rules.yaml for
MLF archives), evaluated by :mod:`mlf_spec.verdict.engine`.

The engine and its rule tables load on first use (a check without ``--tvm`` never needs
them), so the names below are looked up lazily."""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the lazy names below (in __all__), as type checkers should see them
    from .engine import (  # noqa: F401  # noqa: F401
        VERDICTS,
        Evaluator,
        Part,
        ReaderVerdict,
        Reason,
        Rules,
        Verdict,
        reader_version,
        rules,
        worst,
        writer_range,
    )

__all__ = ["VERDICTS", "Evaluator", "Part", "Reason", "ReaderVerdict", "Rules", "Verdict", "lazy_engine",
           "reader_version", "rules", "worst", "writer_range"]


def lazy_engine() -> ModuleType:
    """The :mod:`mlf_spec.verdict.engine` module, imported on the first call."""
    from . import engine

    return engine


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(lazy_engine(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
