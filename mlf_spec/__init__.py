"""mlf-spec: a declarative, schema-first codec for Apache TVM deployment artifacts.

Formats live in subpackages (:mod:`mlf_spec.params`, :mod:`mlf_spec.blob`,
:mod:`mlf_spec.mlf`, :mod:`mlf_spec.graph`, :mod:`mlf_spec.cache`); internals that are not
API live under :mod:`mlf_spec._internal`. The short names below are loaded on first use, so
``import mlf_spec`` stays cheap::

    from mlf_spec import params, blob, archive, check, metadata, migrate, strategies, diff, isolation
"""

from __future__ import annotations

import importlib

from ._version import __version__

TYPE_CHECKING = False
if TYPE_CHECKING:  # importing typing costs a few ms at start-up; annotations are strings here
    from typing import Any

    # the lazy names below (in __all__), as type checkers should see them
    from . import blob, diff, graph, isolation, params, sniff, strategies, versions  # noqa: F401
    from .errors import MlfError  # noqa: F401
    from .graph import codec as graph_json  # noqa: F401
    from .mlf import archive, check, layout, metadata, migrate  # noqa: F401
    from .params import dtypes  # noqa: F401


#: Public short names -> the module that implements them (imported lazily).
_MODULES = {
    "params": "mlf_spec.params",
    "dtypes": "mlf_spec.params.dtypes",
    "blob": "mlf_spec.blob",
    "archive": "mlf_spec.mlf.archive",
    "metadata": "mlf_spec.mlf.metadata",
    "layout": "mlf_spec.mlf.layout",
    "check": "mlf_spec.mlf.check",
    "migrate": "mlf_spec.mlf.migrate",
    "graph_json": "mlf_spec.graph.codec",
    "strategies": "mlf_spec.strategies",
    "diff": "mlf_spec.diff",
    "sniff": "mlf_spec.sniff",
    "isolation": "mlf_spec.isolation",
    "versions": "mlf_spec.versions",
}

__all__ = ["MlfError", "__version__", *_MODULES]


def __getattr__(name: str) -> Any:
    if name == "MlfError":  # loaded on first use too: the command line's start runs no import before its signal handlers
        from .errors import MlfError

        globals()["MlfError"] = MlfError
        return MlfError
    target = _MODULES.get(name)
    if target is None:
        raise AttributeError(f"module 'mlf_spec' has no attribute {name!r}")
    module = importlib.import_module(target)
    globals()[name] = module
    return module


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_MODULES))
