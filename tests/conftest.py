"""Shared test configuration: hypothesis profiles and helpers.

Profiles: ``ci`` (bounded and derandomized, the default under CI=true), ``dev`` (the default
otherwise: random, with the example database)
and ``fuzz`` (long campaigns: ``HYPOTHESIS_PROFILE=fuzz pytest tests/test_params_properties.py``
or ``scripts/fuzz.sh``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

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
GROUPED = ("test_tvm_verdicts.py", "test_mlf_hhb_export.py", "test_kaitai.py", "test_blob_tvm.py",
           "test_conformance_results.py", "test_strategies_tvm.py", "test_truncated_while_read.py")
#: the longest tests (``--durations`` of the whole run), collected first so that both workers
#: start on them instead of one worker running them alone at the end
LONG_FIRST = ("test_conformance_hhb.py", "test_tvm_verdicts.py", "test_conformance_adapters.py", "test_fuzzing.py",
              "test_conformance_mutation.py", "test_types.py", "test_conformance_tvm.py", "test_spec_language.py",
              "test_mlf_spec_language.py")


def pytest_collection_modifyitems(session, config, items) -> None:  # noqa: ANN001
    """Collect the files of LONG_FIRST first (a stable sort: the rest keeps its order)."""
    rank = {name: n for n, name in enumerate(LONG_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


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
            return path if path.rsplit("/", 1)[-1] in GROUPED else nodeid

    return Scheduling(config, log)
