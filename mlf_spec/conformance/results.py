"""Results people can show, made from the JSON Lines reports of conformance runs: one result
entry per implementation (the data of the JSON index and the HTML page), an SVG badge, and
the comparison of two runs.

    mlf-spec conformance report run.jsonl --html results.html --badge badge.svg
    mlf-spec conformance report --compare old.jsonl new.jsonl

An entry holds what does not change from run to run of the same implementation on the same
suite (counts per format, the coverage rows, rules included, every case that did not pass
with its reason); generated cases and timings are left out, so that the committed index of
docs/conformance/ can be checked against a fresh run.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from typing import Any

from mlf_spec.errors import MlfError

from .report import UNEXPECTED, shown, tally

#: what an entry keeps of a case that did not pass
_KEPT = ("id", "format", "role", "outcome", "message", "diff", "note", "error_kind", "signal", "flaky", "retargeted")


def implementation(records: list[dict[str, Any]]) -> str:
    """The name a report's implementation goes by: the adapter's name, else the handshake's."""
    run = records[0]
    testee = str(run.get("testee", ""))
    if testee.startswith("adapter:"):
        return testee.split(":", 1)[1]
    return str((run.get("testee_info") or {}).get("name") or testee or "testee")


def entry(records: list[dict[str, Any]], *, reproduce: bool = False, source: str = "") -> dict[str, Any]:
    """The result entry of one run's report records (read_report's output); with ``reproduce``
    the failures keep their reproducer and request line (they name paths of this machine)."""
    if not records or records[0].get("type") != "run":
        raise MlfError("a report starts with its run line", file=source or None)
    run = records[0]
    info = run.get("testee_info") or {}
    cases = [r for r in records if r["type"] == "case" and not r["id"].startswith("gen.")]
    summary = next((r for r in records if r["type"] == "summary"), None)
    by_format: dict[str, Counter] = defaultdict(Counter)
    for r in cases:
        by_format[r["format"]][shown(r)] += 1
    keep = _KEPT + (("reproduce", "request") if reproduce else ())
    divergences = [divergence(r, keep) for r in sorted(cases, key=lambda r: r["id"]) if shown(r) not in ("pass", "skip")]
    counts = tally(cases)
    return {
        "name": implementation(records),
        "label": str(run.get("label", "")),
        "started": str(run.get("started", "")),
        "testee": run.get("testee", ""),
        "version": str(info.get("version", "")),
        "mode": run.get("mode", ""),
        "mlf_spec": run.get("mlf_spec", ""),
        "suite_sha256": str(run.get("suite_sha256", "")),
        "finished": summary is not None,
        "cases": len(cases),
        "counts": dict(sorted(counts.items())),
        "passed": counts["pass"],
        "applicable": len(cases) - counts["skip"],
        "formats": {f: dict(sorted(c.items())) for f, c in sorted(by_format.items())},
        "coverage": [dict(r) for r in (summary or {}).get("coverage", [])],
        "divergences": divergences,
        "unused_known": list((summary or {}).get("unused_known", [])),
    }


def divergence(r: dict[str, Any], keep: tuple[str, ...] = _KEPT) -> dict[str, Any]:
    """What an entry keeps of a case that did not pass; a flaky known failure only as one
    (whether it passed this time is not a result), so that two runs give the same entry."""
    if r.get("flaky"):
        return {"id": r["id"], "format": r["format"], "role": r["role"], "outcome": "flaky", "flaky": True,
                "message": r.get("message", "")}
    return {k: r[k] for k in keep if k in r}


def index(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """The JSON index over several implementations (sorted by name)."""
    return {"format": "mlf-spec-conformance-index", "version": 1,
            "implementations": sorted(entries, key=lambda e: e["name"])}


def index_text(doc: dict[str, Any]) -> str:
    """The index as committed: sorted keys, one space indent, a final newline."""
    return json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def read_index(text: str, source: str = "<index>") -> dict[str, Any]:
    """An index document; MlfError (with the file) if it is not one."""
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise MlfError(f"not a conformance index (not JSON: {exc})", file=source) from None
    if not isinstance(doc, dict) or doc.get("format") != "mlf-spec-conformance-index" or \
            not isinstance(doc.get("implementations"), list):
        raise MlfError("not a conformance index (format mlf-spec-conformance-index)", file=source)
    for n, e in enumerate(doc["implementations"]):
        if not isinstance(e, dict) or not {"name", "counts", "passed", "applicable", "formats", "coverage",
                                           "divergences"} <= set(e):
            raise MlfError("an implementation entry lacks its counts", file=source, field=f"implementations[{n}]")
    return doc


def with_entry(doc: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """The index with ``new`` in place of the entry of the same name."""
    return index([e for e in doc["implementations"] if e["name"] != new["name"]] + [new])


# ----------------------------------------------------------------------------- badge


def _text_width(text: str) -> int:
    """Width in pixels of ``text`` in 11 px Verdana, near enough for a badge."""
    wide = set("mwMW@%")
    narrow = set("il.,:;|!'() ")
    return sum(10 if c in wide else 4 if c in narrow else 7 for c in text) + 10


def unexpected(e: dict[str, Any]) -> int:
    """The unexpected outcomes of an entry: failures, errors and unexpected passes (a known
    failure is none: Bowtie's and toml-test's convention)."""
    return sum(int(e["counts"].get(k, 0)) for k in UNEXPECTED)


def known(e: dict[str, Any]) -> int:
    """The known failures of an entry (flaky ones included)."""
    return int(e["counts"].get("xfail", 0)) + int(e["counts"].get("flaky", 0))


def plural(n: int, word: str) -> str:
    """``1 known failure``, ``2 known failures``."""
    return f"{n} {word}" + ("" if n == 1 else "s")


def badge(e: dict[str, Any], label: str = "conformance") -> str:
    """An SVG badge: ``conformance | 240/261 passed, 21 known failures``, coloured by the
    unexpected outcomes (known failures are not failures): green for none, yellow up to
    10 % of the applicable cases, red beyond (and for a run of no case)."""
    passed, applicable = e["passed"], e["applicable"]
    bad, expected = unexpected(e), known(e)
    value = f"{passed}/{applicable} passed" + (f", {plural(expected, 'known failure')}" if expected else "")
    color = "#e05d44" if not applicable else "#4c1" if not bad else "#dfb317" if bad <= 0.1 * applicable \
        else "#e05d44"
    lw, vw = _text_width(label), _text_width(value)
    w = lw + vw
    esc = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}
    lab, val = ("".join(esc.get(c, c) for c in t) for t in (label, value))
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="20" role="img" '
            f'aria-label="{lab}: {val}"><title>{lab}: {val}</title>'
            f'<rect width="{lw}" height="20" fill="#555"/><rect x="{lw}" width="{vw}" height="20" fill="{color}"/>'
            f'<g fill="#fff" text-anchor="middle" font-family="Verdana,DejaVu Sans,sans-serif" font-size="11">'
            f'<text x="{lw / 2:g}" y="14">{lab}</text><text x="{lw + vw / 2:g}" y="14">{val}</text></g></svg>\n')


# ----------------------------------------------------------------------------- compare


def _outcomes(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in records if r["type"] == "case"}


def _failing(r: dict[str, Any] | None) -> bool:
    return r is not None and r["outcome"] in UNEXPECTED + ("xfail",) and not r.get("flaky")


def _unexpected(r: dict[str, Any] | None) -> bool:
    return r is not None and r["outcome"] in ("fail", "error") and not r.get("flaky")


def _reason(r: dict[str, Any]) -> str:
    return " ".join(str(r.get("note") or r.get("message") or "").split())


def compare(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """What changed between two runs: cases newly failing (passing or absent before, failing
    now, known failures included; or a known failure before that now fails unexpectedly),
    newly passing, and failing in both for another reason."""
    a, b = _outcomes(old), _outcomes(new)
    out: dict[str, list[dict[str, Any]]] = {"newly_failing": [], "newly_passing": [], "changed_reason": []}
    for cid in sorted(set(a) | set(b)):
        was, now = a.get(cid), b.get(cid)
        row = {"id": cid, "old": was["outcome"] if was else None, "new": now["outcome"] if now else None}
        if _failing(now) and not _failing(was) or _unexpected(now) and not _unexpected(was):
            out["newly_failing"].append({**row, "reason": _reason(now)})
        elif _failing(was) and now is not None and now["outcome"] == "pass":
            out["newly_passing"].append(row)
        elif _failing(was) and _failing(now) and (_reason(was) != _reason(now) or was["outcome"] != now["outcome"]):
            out["changed_reason"].append({**row, "old_reason": _reason(was), "reason": _reason(now)})
    return out


def compare_lines(diff: dict[str, list[dict[str, Any]]], old_name: str, new_name: str) -> list[str]:
    """The comparison for a terminal."""
    lines = [f"{old_name} -> {new_name}: {len(diff['newly_failing'])} newly failing, "
             f"{len(diff['newly_passing'])} newly passing, {len(diff['changed_reason'])} with another reason"]
    for r in diff["newly_failing"]:
        lines.append(f"NEWLY FAILING {r['id']} ({r['old'] or 'absent'} -> {r['new']}): {r['reason'][:300]}")
    for r in diff["newly_passing"]:
        lines.append(f"newly passing {r['id']} ({r['old']} -> {r['new']})")
    for r in diff["changed_reason"]:
        lines.append(f"changed {r['id']} ({r['old']} -> {r['new']}): was {r['old_reason'][:200]!r}, "
                     f"now {r['reason'][:200]!r}")
    return lines


__all__ = ["badge", "compare", "compare_lines", "divergence", "entry", "implementation", "index", "index_text", "known",
           "plural", "read_index", "unexpected", "with_entry"]
