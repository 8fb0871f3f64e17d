"""A deterministic, stratified sample of conformance cases (``conformance run --sample``).

A run on the whole suite meets every case; a sample meets every *kind* of case at least once,
for the testee at hand (its handshake is known when the sample is drawn):

* every stratum of the cases in the testee's scope: (format, role, side) and, per feature of
  the case (rule ids, broken kinds, payload kinds, eras, layouts, dtypes, versions, ...),
  (format, role, feature, value, side), where the side is the expected outcome (accept or
  reject). The cases are chosen greedily (the case covering most strata not yet covered,
  ties by id), so the sample is the same on every machine and for every ``-j``;
* every case a known-failures line matches (so that a known failure that no longer fails is
  still caught as an unexpected pass), and the cases asked for by id (``keep``);
* every case outside the handshake: it is skipped without asking the testee, so it costs
  nothing and the skips stay those of a whole run.

What a sample cannot see is a case that fails while every other case of each of its strata
passes; the whole-suite run (tools/compat_pages.py) keeps that.
"""

from __future__ import annotations

import fnmatch
import heapq
from collections.abc import Iterable
from typing import Any

from .known_failures import KnownFailures
from .runner import skip_reason
from .vectors import Case


def strata(case: Case) -> set[tuple[str, ...]]:
    """The strata a case stands for: its format, role and side, and each feature value on that side."""
    side = str(case.expected.get("outcome", ""))
    out: set[tuple[str, ...]] = {(case.format, case.role, side)}
    for key, values in case.features.items():
        for value in values:
            out.add((case.format, case.role, key, str(value), side))
    if case.broken_kind:
        out.add((case.format, case.role, "broken_kind", str(case.broken_kind), side))
    return out


def cover(pool: dict[str, set[Any]], covered: set[Any] | None = None) -> set[str]:
    """The ids of ``pool`` (id -> the strata it stands for) that a greedy set cover picks to
    cover every stratum not in ``covered``: the id covering most strata not yet covered first,
    ties by the smaller id, so the same pool always gives the same ids."""
    covered = set(covered or ())
    chosen: set[str] = set()
    heap = [(-len(s - covered), cid) for cid, s in pool.items()]
    heapq.heapify(heap)
    while heap:  # lazy greedy set cover: a popped gain is re-checked against what is covered now
        gain, cid = heapq.heappop(heap)
        new = pool[cid] - covered
        if not new:
            continue
        if len(new) < -gain:
            heapq.heappush(heap, (-len(new), cid))
            continue
        chosen.add(cid)
        covered |= new
    return chosen


def stratified(cases: list[Case], info: dict[str, Any], known: KnownFailures | None = None,
               keep: Iterable[str] = ()) -> list[Case]:
    """The sample of ``cases`` for a testee whose handshake is ``info`` (in the order given)."""
    known = known or KnownFailures()
    patterns = list(keep)
    chosen: set[str] = set()
    pool: dict[str, set[tuple[str, ...]]] = {}
    for case in cases:
        if skip_reason(case, info) is not None or known.match(case.id) is not None or \
                any(case.id == p or fnmatch.fnmatchcase(case.id, p) for p in patterns):
            chosen.add(case.id)
        else:
            pool[case.id] = strata(case)
    covered: set[tuple[str, ...]] = set()
    for case in cases:
        if case.id in chosen and skip_reason(case, info) is None:
            covered |= strata(case)
    chosen |= cover(pool, covered)
    return [c for c in cases if c.id in chosen]


__all__ = ["cover", "strata", "stratified"]
