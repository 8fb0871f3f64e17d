"""Seeded hypothesis draws that depend on the seed alone.

Besides the seed, hypothesis mixes into its draws constants it collects from every module the
process has imported outside site-packages and the standard library (its "local constants").
Two processes that imported different modules therefore draw different examples from the same
seed: a pytest worker's imports depend on which tests ran on it before. :func:`seed_only`
empties that pool while the project draws cases it promises to be reproducible (generated
conformance cases, fuzz seeds).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def seed_only() -> Iterator[bool]:
    """Draw with no local constants inside the block; yields whether the pool could be pinned
    (False when this hypothesis version keeps it elsewhere: draws then stay as they were)."""
    try:
        from hypothesis.internal.conjecture import providers
    except ImportError:
        yield False
        return
    getter: Any = getattr(providers, "_get_local_constants", None)
    cache: Any = getattr(providers, "CONSTANTS_CACHE", None)
    constants: Any = getattr(providers, "Constants", None)
    if getter is None or constants is None or not hasattr(cache, "cache"):
        yield False
        return
    empty = constants()
    cache.cache.clear()  # allowed constants computed with the process's pool
    providers._get_local_constants = lambda: empty
    try:
        yield True
    finally:
        providers._get_local_constants = getter
        cache.cache.clear()  # and those computed with the empty one
