"""The conformance kit: test any implementation of these formats against the spec.

    from mlf_spec import conformance
    for case in conformance.cases(formats=["params"], roles=["decode"]):   # the installed vectors
        case.verify(lambda data, options: my_lib.read(data))              # AssertionError with a diff

Layers (docs/conformance/guide.md): data (``vectors/``, made from the spec by
:mod:`.suite`; canonical readings in :mod:`.canonical`, compared by :mod:`.compare`; an answer
judged by :mod:`.judge`), the
testee protocol (:mod:`.protocol`; the runner side in :mod:`.testee`), and the runner
(:mod:`.runner`, :mod:`.report`, :mod:`.known_failures`, :mod:`.generated_cases`), with
adapters for real implementations (:mod:`.adapters`) and a pytest plugin
(:mod:`.pytest_plugin`). Names below are loaded on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the lazy names below (in __all__), as type checkers should see them
    from . import (  # noqa: F401  # noqa: F401
        adapters,
        canonical,
        compare,
        generated_cases,
        judge,
        known_failures,
        protocol,
        report,
        runner,
        suite,
        testee,
        vectors,
    )
    from .generated_cases import explore  # noqa: F401
    from .judge import Outcome  # noqa: F401
    from .known_failures import KnownFailures  # noqa: F401
    from .runner import run  # noqa: F401
    from .vectors import Case, load_suite  # noqa: F401

_NAMES = {
    "Answer": "mlf_spec.conformance.judge",
    "Outcome": "mlf_spec.conformance.judge",
    "Case": "mlf_spec.conformance.vectors",
    "load_suite": "mlf_spec.conformance.vectors",
    "verify": "mlf_spec.conformance.judge",
    "KnownFailures": "mlf_spec.conformance.known_failures",
    "run": "mlf_spec.conformance.runner",
    "explore": "mlf_spec.conformance.generated_cases",
}
_MODULES = ("canonical", "compare", "vectors", "judge", "protocol", "testee", "runner", "report", "known_failures",
            "generated_cases", "adapters", "suite")

__all__ = ["cases", *_NAMES, *_MODULES]


def cases(formats: list[str] | None = None, roles: list[str] | None = None, ids: list[str] | None = None,
          vectors: str | None = None) -> list[Any]:
    """The conformance vectors (installed suite, or ``vectors``) as :class:`Case` objects."""
    from .vectors import load_suite

    return load_suite(vectors, formats=formats, roles=roles, ids=ids)


def __getattr__(name: str) -> Any:
    if name in _NAMES:
        value = getattr(importlib.import_module(_NAMES[name]), name)
    elif name in _MODULES:
        value = importlib.import_module(f"mlf_spec.conformance.{name}")
    else:
        raise AttributeError(f"module 'mlf_spec.conformance' has no attribute {name!r}")
    globals()[name] = value
    return value
