"""A deterministic sample of the verdict cases (tests/support/tvm_verdict_cases.py) for one
TVM version, and the record of the whole run it is checked against.

Running every case through a TVM build in a child process each is the longest test of the
suite (hhb-tvm 0.16: 686 cases, 7-12 min under load). As the adapters' tests do with
``conformance run --sample`` (mlf_spec.conformance.sampling), the test runs a sample that meets
every kind of case at least once: the greedy cover (ties by id) of these strata of the
predicted verdict (``check --tvm``):

* the case's kind (.params or library), writer (the dialect) and family (NumPy dtypes,
  sub-byte, vector, structural, random, library), each with the verdict;
* every rule the verdict names (reasons and notes) with the rule's own verdict, and with the
  writer;

plus every case a test names (``keep``). The whole run stays: ``MLF_SPEC_VERDICTS_WHOLE=1``
makes the test run every case, and ``python tools/verdict_run.py`` runs every case and
writes the record (``docs/conformance/verdicts/<peer>-<version>.json``: what TVM did with
each case and what was predicted, and a digest of the cases). The sampled test checks each
sampled case against that record, and that the record was made from the cases and the
predictions of this tree.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from mlf_spec.blob import check as bcheck
from mlf_spec.conformance.sampling import cover
from mlf_spec.errors import MlfError
from mlf_spec.params import check as pcheck

from . import tvm_verdict_cases as tc

ROOT = Path(__file__).resolve().parents[2]
RECORDS = ROOT / "docs" / "conformance" / "verdicts"


def record_path(peer: str, reader: str) -> Path:
    """Where the whole run of ``peer`` (TVM ``reader``) is recorded."""
    return RECORDS / f"{peer}-{reader}.json"


def verdict(case: tc.Case, reader: str) -> Any:
    """``check --tvm reader``'s verdict on the case (a Verdict), None when mlf-spec cannot read it."""
    try:
        if case.kind == "params":
            report = pcheck.check(case.data, writer=case.writer, tvm=reader)
        else:
            report = bcheck.check(case.path, tvm=reader)
    except MlfError:
        return None
    return report.tvm


def predicted(v: Any) -> str:
    """The verdict class of a verdict from :func:`verdict`."""
    return "unreadable" if v is None else v.verdict


def family(case: tc.Case) -> str:
    """Which generator made the case: numpy, sub, vec, random, structural or library."""
    if case.kind == "library":
        return "library"
    part = case.id.split("-")[1]
    if part in ("sub", "vec", "random"):
        return part
    return "numpy" if part in tc.NUMPY_TYPES else "structural"


def strata(case: tc.Case, v: Any) -> set[tuple[str, ...]]:
    """The strata a case stands for (see the module's docstring)."""
    p = predicted(v)
    out = {("kind", case.kind, p), ("writer", case.writer, p), ("family", family(case), p)}
    for r in ([] if v is None else [*v.reasons, *v.notes]):
        out.add(("rule", r.rule, r.verdict))
        out.add(("rule-writer", r.rule, case.writer))
    return out


def sample(cases: list[tc.Case], verdicts: dict[str, Any], keep: tuple[str, ...] = ()) -> list[tc.Case]:
    """The sample of ``cases`` (in their order): a greedy cover of the strata, plus ``keep``."""
    chosen = cover({c.id: strata(c, verdicts[c.id]) for c in cases if c.id not in keep})
    return [c for c in cases if c.id in chosen or c.id in keep]


def digest(cases: list[tc.Case]) -> str:
    """SHA-256 over every case's id, kind, writer and bytes, in id order."""
    h = hashlib.sha256()
    for c in sorted(cases, key=lambda c: c.id):
        h.update(f"{c.id}\0{c.kind}\0{c.writer}\0{len(c.data)}\0".encode())
        h.update(c.data)
    return h.hexdigest()


def make_record(peer: str, reader: str, cases: list[tc.Case], verdicts: dict[str, Any], observed: dict[str, str],
                outcome: dict[str, list]) -> dict[str, Any]:
    """The record of a whole run: per case what was predicted and what TVM did."""
    return {"format": "mlf-spec-verdict-run", "peer": peer, "reader": reader, "cases": len(cases),
            "cases_sha256": digest(cases),
            "counts": {k: len(outcome.get(k, [])) for k in ("agree", "partial", "slack", "disagree")},
            "results": {c.id: {"predicted": predicted(verdicts[c.id]), "observed": observed[c.id]} for c in cases}}


def write_record(path: Path, record: dict[str, Any]) -> None:
    """Write a record (sorted, one case per line, so a change reads as a diff of cases)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    results = record["results"]
    head = {k: v for k, v in record.items() if k != "results"}
    lines = [json.dumps(head, sort_keys=True)[:-1] + ', "results": {']
    lines += [f"  {json.dumps(cid)}: {json.dumps(results[cid], sort_keys=True)}," for cid in sorted(results)]
    lines[-1] = lines[-1].rstrip(",")
    lines.append("}}")
    path.write_text("\n".join(lines) + "\n")


def stale(record: dict[str, Any], cases: list[tc.Case], verdicts: dict[str, Any]) -> list[str]:
    """Why ``record`` was not made from these cases and predictions (empty: it was)."""
    why = []
    if record.get("cases_sha256") != digest(cases):
        why.append("the cases changed (digest)")
    changed = [c.id for c in cases if record.get("results", {}).get(c.id, {}).get("predicted") != predicted(verdicts[c.id])]
    if changed:
        why.append(f"{len(changed)} predictions differ, e.g. {changed[:3]}")
    return why


__all__ = ["digest", "family", "make_record", "predicted", "record_path", "sample", "stale", "strata", "verdict",
           "write_record"]
