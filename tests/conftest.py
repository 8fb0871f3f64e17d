"""Shared test configuration: hypothesis profiles (shared helpers are in tests/support/).

Profiles: ``ci`` (bounded, the default under CI=true), ``dev`` (the default otherwise)
and ``fuzz`` (long campaigns: ``HYPOTHESIS_PROFILE=fuzz pytest tests/params/test_properties.py``
or ``scripts/fuzz.sh``).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile("ci", max_examples=150, deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
settings.register_profile("dev", max_examples=100, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
settings.register_profile("fuzz", max_examples=20_000, deadline=None,
                          suppress_health_check=list(HealthCheck))
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))
