"""What the pytest plugin does once asked (imported lazily by :mod:`.pytest_plugin`)."""

from __future__ import annotations

import shlex
from typing import Any

import pytest

from mlf_spec.errors import MlfError

from .known_failures import KnownFailures
from .runner import reads_of, skip_reason, unsupported_skip
from .testee import Limits, OneShot, Persistent, Testee
from .vectors import Case, load_suite

_TESTEE = pytest.StashKey[dict]()


def _known(files: Any, base: Any = None) -> KnownFailures:
    """The known failures of ``files`` (a path or several); a relative path is taken against
    ``base`` (the folder of the test file whose marker names it) when given."""
    import os

    known = KnownFailures()
    for f in [files] if isinstance(files, (str, os.PathLike)) else (files or []):
        if base is not None and not os.path.isabs(f):
            f = os.path.join(base, f)
        known = known.merged(KnownFailures.load(f))
    return known


def parametrize_cases(metafunc: Any) -> None:
    """Parametrize ``mlf_case`` from the test's ``mlf_conformance`` marker (and the
    --mlf-vectors / --mlf-format options); known failures become xfail marks."""
    marker = metafunc.definition.get_closest_marker("mlf_conformance")
    kw = dict(marker.kwargs) if marker else {}
    config = metafunc.config
    cases = load_suite(kw.get("vectors") or config.getoption("mlf_vectors"),
                       formats=kw.get("formats") or config.getoption("mlf_format"), roles=kw.get("roles"),
                       ids=kw.get("ids") or config.getoption("mlf_id"))
    # the marker's path is the test file's (as its other paths are), the option's the working directory's
    known = _known(kw.get("known_failures"), base=metafunc.definition.path.parent).merged(
        _known(config.getoption("mlf_known_failures")))
    unused = known.unused({c.id for c in cases})
    if unused:
        import warnings

        warnings.warn(pytest.PytestWarning(
            f"{len(unused)} known failure(s) match none of the {len(cases)} conformance cases of "
            f"{metafunc.definition.name}: {', '.join(e.pattern for e in unused[:5])}"
            + (" ..." if len(unused) > 5 else "") + " (a typo, or a case that no longer exists?)"), stacklevel=1)
    params = []
    for c in cases:
        entry = known.match(c.id)
        marks = [pytest.mark.xfail(reason=entry.reason, strict=not entry.flaky)] if entry else []
        params.append(pytest.param(c, id=c.id, marks=marks))
    metafunc.parametrize("mlf_case", params, indirect=True)


class ConformanceItem(pytest.Item):
    """One vector run against the session's testee."""

    def __init__(self, *, case: Case, **kw: Any) -> None:
        super().__init__(**kw)
        self.case = case
        self.reproduce = ""

    def runtest(self) -> None:
        """Ask the testee; skip what its handshake excludes; fail with the diff."""
        state = _state(self.config)
        reason = skip_reason(self.case, state["info"])
        if reason is not None:
            pytest.skip(reason)
        testee: Testee = state["testee"]
        case = self.case.retarget(state["info"])
        answer = testee.ask(case)
        reason = unsupported_skip(case, answer, state["info"])
        if reason is not None:
            pytest.skip(reason)
        verdict = case.check(answer, strict_errors=self.config.getoption("mlf_strict_errors"),
                             reads=reads_of(state["info"], case.format))
        if verdict.outcome != "pass":
            self.reproduce = testee.reproduce(case)
            raise ConformanceFailure(verdict)

    def repr_failure(self, excinfo: Any, style: Any = None) -> str:
        """The verdict, the diff and a command that reproduces it."""
        if isinstance(excinfo.value, ConformanceFailure):
            v = excinfo.value.verdict
            lines = [f"{v.outcome}: {v.message}", *[f"  {d}" for d in v.diff]]
            if v.signal:
                lines.append(f"  signal: {v.signal}")
            if self.reproduce:
                lines.append(f"  reproduce: {self.reproduce}")
            return "\n".join(lines)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Any, int, str]:
        """Where the case is."""
        return self.case.path, 0, f"conformance vector {self.case.id}"


class ConformanceFailure(Exception):
    """A case that did not pass."""

    def __init__(self, verdict: Any) -> None:
        super().__init__(verdict.message)
        self.verdict = verdict


class ConformanceSuite(pytest.Collector):
    """The collector the vector items hang from."""

    def collect(self) -> list[Any]:
        """Nothing to collect lazily: the items are made up front."""
        return []


def _state(config: Any) -> dict[str, Any]:
    state = config.stash.get(_TESTEE, None)
    if state is None:
        from . import adapters

        limits = Limits(timeout=config.getoption("mlf_timeout"))
        name = config.getoption("mlf_adapter")
        if name:
            testee: Testee = adapters.testee(name, adapters.load(name), limits)
        else:
            cmd = shlex.split(config.getoption("mlf_testee"))
            testee = OneShot(cmd, limits)
        info = testee.info()
        if isinstance(testee, OneShot) and info.get("serve"):
            testee = Persistent(testee.command, limits)
        state = {"testee": testee, "info": info}
        config.stash[_TESTEE] = state
    return state


def testee_items(session: Any, config: Any) -> list[Any]:
    """One item per vector, under a ``mlf-conformance`` collector."""
    from . import adapters

    known = _known(config.getoption("mlf_known_failures"))
    name = config.getoption("mlf_adapter")
    if name:
        path = adapters.load(name).known_failures_path()
        if path is not None:
            known = KnownFailures.load(path).merged(known)
    try:  # start it now: a testee that cannot start is one error, not one per item
        _state(config)
    except MlfError as exc:
        raise pytest.UsageError(f"mlf-spec conformance: {exc.message}") from None
    parent = ConformanceSuite.from_parent(session, name="mlf-conformance")
    items = []
    for c in load_suite(config.getoption("mlf_vectors"), formats=config.getoption("mlf_format"),
                        ids=config.getoption("mlf_id")):
        item = ConformanceItem.from_parent(parent, name=c.id, case=c)
        entry = known.match(c.id)
        if entry is not None:
            item.add_marker(pytest.mark.xfail(reason=entry.reason, strict=not entry.flaky))
        items.append(item)
    return items


def close_testee(config: Any) -> None:
    """Stop the testee if one was started."""
    state = config.stash.get(_TESTEE, None)
    if state is not None:
        state["testee"].close()
