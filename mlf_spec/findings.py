"""Findings and reports of the checks of .params files, blobs and graph JSON.

Every finding has a stable code from a findings spec (spec/findings/<name>.yaml, which
gives its severity and meaning), the container member and the field path it concerns,
the byte offset of that field where there is one, and a message. A report is in the shape
of the MLF archive report (generated/schemas/artifact_check_output.schema.json).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from mlf_spec.verdict import Verdict


@dataclass(frozen=True)
class Finding:
    """One finding: ``code`` and ``severity`` (from the spec), ``member`` (a container member
    or blob symbol, or None), field ``path``, byte ``offset`` (or None) and ``message``."""

    code: str
    severity: str
    member: str | None
    path: str
    offset: int | None
    message: str

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (artifact_finding)."""
        return {"code": self.code, "severity": self.severity, "member": self.member, "path": self.path,
                "offset": self.offset, "message": self.message}


@dataclass
class Report:
    """The check of one input: its ``kind``, ``findings``, and what the kind adds
    (``dialect_choice`` for .params, ``blobs`` for blobs) and, when asked for, ``tvm``."""

    path: str
    kind: str
    findings: list[Finding] = field(default_factory=list)
    dialect_choice: dict[str, Any] | None = None
    blobs: list[dict[str, Any]] | None = None
    tvm: Verdict | None = None

    @property
    def conformant(self) -> bool:
        """True when no finding has severity error."""
        return not any(f.severity == "error" for f in self.findings)

    def codes(self) -> list[str]:
        """The codes of the findings, in order."""
        return [f.code for f in self.findings]

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (artifact_check)."""
        return {"path": self.path, "kind": self.kind, "conformant": self.conformant,
                "findings": [f.to_dict() for f in self.findings], "dialect_choice": self.dialect_choice,
                "blobs": self.blobs, "tvm": self.tvm.to_dict() if self.tvm is not None else None}


class Collector:
    """Collects findings whose codes are declared in ``spec`` (a generated FINDINGS
    mapping), keeping at most ``limit`` per code (then one note that more were left out)."""

    def __init__(self, spec: dict[str, dict[str, Any]], limit: int = 50) -> None:
        self.spec, self.limit = spec, limit
        self.findings: list[Finding] = []
        self._counts: Counter[str] = Counter()

    def add(self, code: str, path: str, message: str, *, offset: int | None = None, member: str | None = None) -> None:
        """Add a finding (KeyError for a code the spec does not declare: a bug)."""
        severity = self.spec[code]["severity"]
        self._counts[code] += 1
        n = self._counts[code]
        if n <= self.limit:
            self.findings.append(Finding(code, severity, member, path, offset, message))
        elif n == self.limit + 1:
            self.findings.append(Finding(code, severity, member, "", None, f"more {code} findings were left out"))


def text(report: Report) -> str:
    """The text form: a verdict line, one line per finding, then the TVM verdict and its reasons."""
    from mlf_spec.cli._text import printable

    errors = sum(f.severity == "error" for f in report.findings)
    warnings = sum(f.severity == "warning" for f in report.findings)
    verdict = "conformant" if report.conformant else "NOT conformant"
    lines = [f"{printable(report.path)}: {report.kind}: {verdict} ({errors} error(s), {warnings} warning(s))"]
    for f in report.findings:
        loc = ":".join(printable(x) for x in (f.member or "", f.path) if x)
        at = f" (offset {f.offset})" if f.offset is not None else ""
        lines.append(f"  {f.severity}: {f.code}: {loc + at + ': ' if loc else ''}{printable(f.message)}")
    if report.tvm is not None:
        v = report.tvm
        by = f", written by {v.writer} ({v.writer_source})" if v.writer else ""
        lines.append(f"  TVM {v.version}{by}: {v.verdict.upper()}")
        for r in v.all_reasons:
            who = f" ({printable(r.name)})" if r.name else ""
            lines.append(f"    {r.verdict}: {r.rule}: {r.where}{who}: {printable(r.message)} [{r.evidence}]")
    return "\n".join(lines) + "\n"


__all__ = ["Collector", "Finding", "Report", "text"]
