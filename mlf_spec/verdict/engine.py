"""The verdict engine: evaluates the rules of spec/verdicts/tvm_read_rules.yaml.

    >>> ev = Evaluator(reader_version("0.27"), writer_range("0.16"))
    >>> reasons = ev.apply("tensor", facts, "arrays[0]", "w")      # facts: every fact of the subject
    >>> Verdict.of("0.27", "0.16", "given", reasons).verdict
    'misreads'

A rule applies to a part of an artifact (its subject) when the reader version lies in the
rule's since/until, the writer's version range overlaps its writer_since/writer_until (a
rule with writer bounds does not apply when the writer is unknown) and its condition over
the part's facts holds. The verdict is the worst over the reasons; none means ``loads``.
Which facts a subject has is declared in the spec; the format modules compute them
(:mod:`mlf_spec.params.check`, :mod:`mlf_spec.blob.check`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mlf_spec import versions as _versions
from mlf_spec.generated import tvm_read_rules_rules as _rules
from mlf_spec.generated.tvm_versions import NEWEST

VERDICTS: tuple[str, ...] = tuple(_rules.VERDICTS)
_RANK = {v: i for i, v in enumerate(VERDICTS)}
_BY_SUBJECT: dict[str, list[dict[str, Any]]] = {}
for _rule in _rules.RULES:
    _BY_SUBJECT.setdefault(_rule["subject"], []).append(_rule)

Version = tuple[int, ...]
Range = tuple[Version, Version]
#: The end of a writer range that is open: past the newest version the spec describes.
PAST_NEWEST: Version = (NEWEST[0], NEWEST[1] + 1)


def reader_version(text: str) -> Version:
    """The (major, minor) of a TVM version the spec describes; UnsupportedError otherwise."""
    return _versions.known(text)


def writer_range(text: str) -> Range:
    """The range [v, next minor) for a writer version given as text."""
    v = _versions.known(text)
    return v, (v[0], v[1] + 1)


def range_label(r: Range | None) -> str | None:
    """'0.16' for a one-version range, '0.13-0.19' for a longer one, '0.26 on' for an open one."""
    return None if r is None else _versions.range_label(r[0], r[1])


def worst(verdicts: Iterable[str]) -> str:
    """The worst of some verdicts (loads < misreads < rejects < crashes); loads for none."""
    return max(verdicts, key=_RANK.__getitem__, default=VERDICTS[0])


_COMMIT = re.compile(r"\b[0-9a-f]{10}\b")


@dataclass(frozen=True)
class Reason:
    """One rule that applies to one part: its verdict, id, the part (``where``, ``name``), a
    message and the evidence."""

    verdict: str
    rule: str
    where: str
    name: str | None
    message: str
    evidence: str

    @property
    def commit(self) -> str | None:
        """The first TVM commit the evidence names, if any."""
        m = _COMMIT.search(self.evidence)
        return m.group(0) if m else None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (tvm_reason of generated/schemas/tvm_verdict)."""
        return {"reader": None, "verdict": self.verdict, "rule": self.rule, "where": self.where, "name": self.name,
                "message": self.message, "commit": self.commit, "evidence": self.evidence}


@dataclass
class Verdict:
    """A reader version's verdict on an artifact (JSON: generated/schemas/tvm_verdict):
    ``reasons`` holds the rules whose verdict is worse than loads, ``notes`` the others."""

    version: str
    writer: str | None
    writer_source: str
    verdict: str
    reasons: list[Reason] = field(default_factory=list)
    notes: list[Reason] = field(default_factory=list)

    @classmethod
    def of(cls, version: str, writer: str | None, writer_source: str, reasons: list[Reason]) -> Verdict:
        """The verdict of ``reasons`` (the worst of theirs); ``loads`` reasons become notes."""
        broken = [r for r in reasons if r.verdict != VERDICTS[0]]
        notes = [r for r in reasons if r.verdict == VERDICTS[0]]
        return cls(version, writer, writer_source, worst(r.verdict for r in broken), broken, notes)

    @property
    def all_reasons(self) -> list[Reason]:
        """Reasons and notes."""
        return self.reasons + self.notes

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (tvm_verdict)."""
        return {"version": self.version, "verdict": self.verdict, "from": self.writer, "from_source": self.writer_source,
                "reasons": [r.to_dict() for r in self.reasons], "notes": [r.to_dict() for r in self.notes]}


class Evaluator:
    """The rules that apply for one reader version and one writer range."""

    def __init__(self, reader: Version, writer: Range | None) -> None:
        self.reader, self.writer = reader, writer
        self._rules = {s: [r for r in rules if self._applies(r)] for s, rules in _BY_SUBJECT.items()}

    def _applies(self, rule: Mapping[str, Any]) -> bool:
        if rule["since"] is not None and self.reader < rule["since"]:
            return False
        if rule["until"] is not None and self.reader >= rule["until"]:
            return False
        if rule["writer_since"] is None and rule["writer_until"] is None:
            return True
        if self.writer is None:
            return False
        lo, hi = self.writer
        if rule["writer_since"] is not None and hi <= rule["writer_since"]:
            return False
        return rule["writer_until"] is None or lo < rule["writer_until"]

    def apply(self, subject: str, facts: Mapping[str, Any], where: str, name: str | None = None) -> list[Reason]:
        """The reasons of every applicable rule about one part (``where``: its path)."""
        expected = _rules.SUBJECTS[subject]
        if set(facts) != set(expected):  # a bug in the caller, not bad input
            raise KeyError(f"facts of {subject!r} must be {sorted(expected)}, got {sorted(facts)}")
        out = []
        for rule in self._rules.get(subject, ()):
            if rule["when"](facts):
                out.append(Reason(rule["verdict"], rule["id"], where, name, rule["reason"].format_map(facts),
                                  rule["evidence"]))
        return out


__all__ = ["VERDICTS", "Evaluator", "Reason", "Verdict", "range_label", "reader_version", "worst", "writer_range"]
