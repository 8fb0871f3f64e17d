"""Shared test configuration: hypothesis profiles (shared helpers are in tests/support/).

Profiles: ``ci`` (bounded and derandomized, the default under CI=true), ``dev`` (the default
otherwise: random, with the example database)
and ``fuzz`` (long campaigns: ``HYPOTHESIS_PROFILE=fuzz pytest tests/params/test_properties.py``
or ``scripts/fuzz.sh``).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

# ci: the same examples on every machine and every run (derandomize: seeded from each test,
# no example database), no timing check (deadline, too_slow), a bounded count
settings.register_profile("ci", max_examples=150, deadline=None, print_blob=True, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
settings.register_profile("dev", max_examples=100, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
settings.register_profile("fuzz", max_examples=20_000, deadline=None,
                          suppress_health_check=list(HealthCheck))
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))

#: test files whose module- or session-scoped fixtures are costly (a TVM run of every verdict
#: case, an hhb-tvm export, compiled parsers, libraries built with cc): under ``-n`` each runs on
#: one worker (:func:`pytest_xdist_make_scheduler`), so that two workers do not both make them
GROUPED = ("tests/peers/tvm/test_verdicts.py", "tests/peers/hhb/test_mlf_export.py", "tests/spec/test_kaitai.py",
           "tests/peers/tvm/test_blob.py", "tests/conformance/test_results.py", "tests/peers/tvm/test_strategies.py",
           "tests/safety/test_truncated_while_read.py", "tests/peers/hhb/test_cache_writer.py")
#: the longest tests (``--durations`` of the whole run), collected first so that both workers
#: start on them instead of one worker running them alone at the end
LONG_FIRST = ("tests/peers/hhb/test_conformance.py", "tests/peers/tvm/test_verdicts.py", "tests/conformance/test_adapters.py",
              "tests/fuzzing/test_harness.py", "tests/conformance/test_mutation.py", "tests/project/test_types.py",
              "tests/peers/tvm/test_conformance.py", "tests/spec/test_language.py", "tests/spec/test_versioned_language.py")


def pytest_collection_modifyitems(session, config, items) -> None:  # noqa: ANN001
    """Collect the files of LONG_FIRST first (a stable sort: the rest keeps its order)."""
    rank = {name: n for n, name in enumerate(LONG_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))


def pytest_xdist_make_scheduler(config, log):  # noqa: ANN001, ANN201
    """xdist's ``load`` distribution, but each file of GROUPED is one unit of work. (Marking
    tests ``xdist_group`` does not group them with pytest 9.2 and xdist 3.8: xdist renames
    ``_nodeid``, which pytest 9.2 no longer reads.) Units with more tests go first."""
    if config.getvalue("dist") not in ("load", "loadgroup"):
        return None
    from xdist.scheduler import LoadScopeScheduling

    class Scheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return path if path in GROUPED else nodeid

    return Scheduling(config, log)
