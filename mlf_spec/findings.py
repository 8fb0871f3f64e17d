"""Findings and reports of every check: MLF archives, .params files, blobs and graph JSON.

Every finding has a stable code from a findings spec (spec/findings/<name>.yaml, which
gives its severity and meaning), the container member and the field path it concerns,
the byte offset of that field where there is one, and a message (spec/records/finding.yaml).
A report holds the findings of one input and, when asked for, a TVM version's verdict; the
MLF archive report adds the metadata version and style
(generated/schemas/mlf_check_output.schema.json), the report of the other kinds their kind
and what it adds (generated/schemas/artifact_check_output.schema.json).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from mlf_spec._internal.lean_dataclass import dataclass, field

if TYPE_CHECKING:  # the verdict engine loads only for --tvm
    from mlf_spec.verdict import Verdict


@dataclass(frozen=True)
class Finding:
    """One finding: ``code`` and ``severity`` (from the spec), ``member`` (a container member
    or blob symbol, or None), field ``path``, ``message`` and byte ``offset`` (or None)."""

    code: str
    severity: str
    member: str | None
    path: str
    message: str
    offset: int | None = None
    #: more of the why, for ``--json`` and ``-v`` (the JSON message carries it after the message)
    detail: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (spec/records/finding.yaml)."""
        return {"code": self.code, "severity": self.severity, "member": self.member, "path": self.path,
                "offset": self.offset, "message": self.full_message}

    @property
    def full_message(self) -> str:
        """The message with its detail."""
        return f"{self.message}: {self.detail}" if self.detail else self.message


def left_out(code: str, severity: str) -> Finding:
    """The note that stands for the findings of ``code`` past a report's limit."""
    return Finding(code, severity, None, "", f"more {code} findings were left out")


def limited(findings: Iterable[Finding], limit: int) -> list[Finding]:
    """At most ``limit`` findings per code, then one :func:`left_out` note for the rest."""
    counts: Counter[str] = Counter()
    kept = []
    for f in findings:
        counts[f.code] += 1
        if counts[f.code] <= limit:
            kept.append(f)
        elif counts[f.code] == limit + 1:
            kept.append(left_out(f.code, f.severity))
    return kept


@dataclass
class Report:
    """The check of one input: its ``path``, the ``findings`` and, when asked for, the
    verdict of a TVM version's readers (``tvm``)."""

    path: str
    findings: list[Finding] = field(default_factory=list)
    tvm: Verdict | None = None

    @property
    def conformant(self) -> bool:
        """True when no finding has severity error."""
        return not any(f.severity == "error" for f in self.findings)

    def codes(self) -> list[str]:
        """The codes of the findings, in order."""
        return [f.code for f in self.findings]

    @property
    def heading(self) -> str:
        """What was checked, for the text form (after the path)."""
        return "checked"

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {"path": self.path, "conformant": self.conformant, "findings": [f.to_dict() for f in self.findings],
                "tvm": self.tvm.to_dict() if self.tvm is not None else None}


@dataclass(kw_only=True)
class ArtifactReport(Report):
    """The check of a .params file, blob or graph JSON document: its ``kind`` and what the
    kind adds (``dialect_choice`` for .params, ``blobs`` for blobs)."""

    kind: str
    dialect_choice: dict[str, Any] | None = None
    blobs: list[dict[str, Any]] | None = None

    @property
    def heading(self) -> str:
        """The kind, as a user names it (``.params file``, ``module blob``, ...): the first
        line of every check says what the input is, as ``inspect`` does."""
        return _KIND_WORDS.get(self.kind, self.kind)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (artifact_check)."""
        return {"path": self.path, "kind": self.kind, "conformant": self.conformant,
                "findings": [f.to_dict() for f in self.findings], "dialect_choice": self.dialect_choice,
                "blobs": self.blobs, "tvm": self.tvm.to_dict() if self.tvm is not None else None}


class Collector:
    """Collects findings whose codes are declared in ``spec`` (a generated FINDINGS
    mapping), keeping at most ``limit`` per code (then one note that more were left out;
    None: all)."""

    def __init__(self, spec: dict[str, dict[str, Any]], limit: int | None = 50) -> None:
        self.spec, self.limit = spec, limit
        self.findings: list[Finding] = []
        self._counts: Counter[str] = Counter()

    def add(self, code: str, path: str, message: str, *, offset: int | None = None, member: str | None = None,
            detail: str | None = None) -> None:
        """Add a finding (KeyError for a code the spec does not declare: a bug); ``detail``
        is shown with ``--json`` and ``-v`` only."""
        severity = self.spec[code]["severity"]
        self._counts[code] += 1
        n = self._counts[code]
        if self.limit is None or n <= self.limit:
            self.findings.append(Finding(code, severity, member, path, message, offset, detail))
        elif n == self.limit + 1:
            self.findings.append(left_out(code, severity))


#: The kinds of the artifact check reports, as the first line of a check names them.
_KIND_WORDS = {"params": ".params file", "blob": "module blob", "graph-json": "GraphExecutor JSON",
               "tensor-cache": "tensor cache"}


def text(report: Report, verbose: bool = False) -> str:
    """The text form: a verdict line, one line per finding (with its detail when
    ``verbose``), then the TVM verdict and its reasons."""
    from mlf_spec._text import printable

    errors = sum(f.severity == "error" for f in report.findings)
    warnings = sum(f.severity == "warning" for f in report.findings)
    verdict = "conformant" if report.conformant else "NOT conformant"
    lines = [f"{printable(report.path)}: {report.heading}: {verdict} ({errors} error(s), {warnings} warning(s))"]
    for f in report.findings:
        loc = ":".join(printable(x) for x in (f.member or "", f.path) if x)
        at = f" (offset {f.offset})" if f.offset is not None else ""
        message = f.full_message if verbose else f.message
        lines.append(f"  {f.severity}: {f.code}: {loc + at + ': ' if loc else ''}{printable(message)}")
    if report.tvm is not None:
        lines += report.tvm.text()
    return "\n".join(lines) + "\n"


__all__ = ["ArtifactReport", "Collector", "Finding", "Report", "left_out", "limited", "text"]
