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
