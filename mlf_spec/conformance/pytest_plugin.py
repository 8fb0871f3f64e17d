"""The pytest plugin of the conformance kit (entry point ``pytest11``: loaded wherever
mlf-spec is installed, so it does nothing and imports nothing until asked).

A command-line testee, one pytest item per vector::

    pytest --mlf-testee "./my-reader" [--mlf-format params] [--mlf-known-failures FILE] [-n 4]

A Python implementation, in its own tests: request the ``mlf_case`` fixture (parametrized
over the vectors) and verify your function's answer::

    import pytest

    @pytest.mark.mlf_conformance(formats=["params"], roles=["decode"])
    def test_reader(mlf_case):
        mlf_case.verify(lambda data, options: my_lib.read(data), rejects=(my_lib.FormatError,))

``verify`` turns the exceptions in ``rejects`` into a rejection, compares the reading with
the expected one by the spec's rules and fails with a short diff.
"""

from __future__ import annotations

from typing import Any

import pytest

_OPTIONS = ("mlf_testee", "mlf_adapter")


def pytest_addoption(parser: Any) -> None:
    """The --mlf-* options."""
    group = parser.getgroup("mlf-conformance", "mlf-spec conformance kit")
    group.addoption("--mlf-testee", metavar="CMD", help="run the conformance vectors against this testee command")
    group.addoption("--mlf-adapter", metavar="NAME", help="run the conformance vectors against this adapter")
    group.addoption("--mlf-vectors", metavar="DIR", help="another vector suite (default: the installed one)")
    group.addoption("--mlf-format", action="append", metavar="FORMAT", help="only these formats (repeatable)")
    group.addoption("--mlf-id", action="append", metavar="ID", help="only these case ids (ID* for a prefix)")
    group.addoption("--mlf-known-failures", action="append", metavar="FILE", help="known failures (repeatable)")
    group.addoption("--mlf-timeout", type=float, default=60.0, metavar="S", help="seconds per case (default 60)")
    group.addoption("--mlf-strict-errors", action="store_true", help="a rejection of another error class fails")


def pytest_configure(config: Any) -> None:
    """Register the marker."""
    config.addinivalue_line("markers", "mlf_conformance(formats=None, roles=None, ids=None, vectors=None, "
                            "known_failures=None): parametrize the mlf_case fixture over conformance vectors")


def pytest_generate_tests(metafunc: Any) -> None:
    """Parametrize ``mlf_case`` over the vectors (only for tests that ask for it)."""
    if "mlf_case" not in metafunc.fixturenames:
        return
    from .pytest_support import parametrize_cases

    parametrize_cases(metafunc)


def pytest_collection_modifyitems(session: Any, config: Any, items: list[Any]) -> None:
    """With --mlf-testee or --mlf-adapter: one item per vector."""
    if not any(config.getoption(o) for o in _OPTIONS):
        return
    from .pytest_support import testee_items

    items.extend(testee_items(session, config))


def pytest_sessionfinish(session: Any) -> None:
    """Stop a testee the items started."""
    if not any(session.config.getoption(o) for o in _OPTIONS):
        return
    from .pytest_support import close_testee

    close_testee(session.config)


@pytest.fixture
def mlf_case(request: Any) -> Any:
    """One conformance vector (a :class:`mlf_spec.conformance.vectors.Case`)."""
    return request.param
