"""The verdict engine: evaluates the rules of a verdicts spec (spec/verdicts/*.yaml).

    >>> ev = Evaluator(reader_version("0.27"), writer_range("0.16"))      # tvm_read_rules
    >>> reasons = ev.apply("tensor", facts, "arrays[0]", "w")      # facts: every fact of the subject
    >>> Verdict.of("0.27", "0.16", "given", reasons).verdict
    'misreads'

A rule applies to a part of an artifact (its subject) when the reader version lies in the
rule's since/until, the writer's version range overlaps its writer_since/writer_until (a
rule with writer bounds does not apply when the writer is unknown) and its condition holds:
its ``when`` over the part's facts, or the part fails the test it ``requires``. Which facts
and tests a subject has is declared in the spec; the format modules compute the facts and
implement the tests (:mod:`mlf_spec.params.check`, :mod:`mlf_spec.blob.check`,
:mod:`mlf_spec.mlf.readers`). The verdict is the worst over the reasons; none means the
best (``loads``).

A spec that declares readers (spec/verdicts/mlf_read_rules.yaml: tvmc, the microTVM
templates...) gets a verdict per reader of the version (:meth:`Evaluator.read`): each
reader's rules are taken in order, and a ``rejects`` ends them (the reader raised there);
the verdict is the worst over the general readers.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import cache
from typing import Any

from mlf_spec import versions as _versions
from mlf_spec._internal.lean_dataclass import dataclass, field
from mlf_spec.generated.tvm_versions import NEWEST

Version = tuple[int, ...]
Range = tuple[Version, Version]
#: The end of a writer range that is open: past the newest version the spec describes.
PAST_NEWEST: Version = (NEWEST[0], NEWEST[1] + 1)
#: A test of a subject (spec ``tests``): (the part, the rule's argument, the reader version
#: as given) -> (why the part fails it, where) or (None, None) when it passes.
Test = Callable[[Any, "str | None", str], "tuple[str | None, str | None]"]
#: The rule name of the reason a version without any declared reader gets.
NO_READER = "no_reader"

TVM_READ_RULES = "tvm_read_rules"
MLF_READ_RULES = "mlf_read_rules"


class Rules:
    """One verdicts spec as the generator emitted it (``<name>_rules.py``)."""

    def __init__(self, module: Any) -> None:
        self.name: str = module.NAME
        self.verdicts: tuple[str, ...] = tuple(module.VERDICTS)
        self.subjects: dict[str, dict[str, str]] = module.SUBJECTS
        self.tests: dict[str, dict[str, str | None]] = module.TESTS
        self.readers: list[dict[str, Any]] = module.READERS
        self.without_reader: list[dict[str, Any]] = module.WITHOUT_READER
        self.rules: list[dict[str, Any]] = module.RULES
        self._rank = {v: i for i, v in enumerate(self.verdicts)}

    def worst(self, verdicts: Iterable[str]) -> str:
        """The worst of some verdicts (the spec lists them best first); the best for none."""
        return max(verdicts, key=self._rank.__getitem__, default=self.verdicts[0])

    def readers_of(self, reader: Version) -> list[dict[str, Any]]:
        """The declared readers that exist in version ``reader``."""
        return [r for r in self.readers if _in(reader, r["since"], r["until"])]


@cache
def rules(name: str = TVM_READ_RULES) -> Rules:
    """The rules of spec/verdicts/<name>.yaml."""
    return Rules(importlib.import_module(f"mlf_spec.generated.{name}_rules"))


VERDICTS: tuple[str, ...] = rules().verdicts


def _in(v: Version, since: Version | None, until: Version | None) -> bool:
    return (since is None or v >= since) and (until is None or v < until)


def reader_version(text: str) -> Version:
    """The (major, minor) of a TVM version the spec describes; UnsupportedError otherwise
    (:func:`mlf_spec.versions.known`, the one check of every ``--tvm``)."""
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
    return rules().worst(verdicts)


_COMMIT = re.compile(r"\b[0-9a-f]{10}\b")


@dataclass(frozen=True)
class Reason:
    """One rule that applies to one part: its verdict, id, the part (``where``, ``name``), a
    message, the evidence and, for specs with several readers, the ``reader``."""

    verdict: str
    rule: str
    where: str | None
    name: str | None
    message: str
    evidence: str
    reader: str | None = None
    #: the condition on the reading machine under which the verdict holds (e.g. "without CUDA"), or None
    machine: str | None = None

    @property
    def commit(self) -> str | None:
        """The first TVM commit the evidence names, if any."""
        m = _COMMIT.search(self.evidence)
        return m.group(0) if m else None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (tvm_reason of generated/schemas/tvm_verdict)."""
        return {"reader": self.reader, "verdict": self.verdict, "rule": self.rule, "where": self.where,
                "name": self.name, "message": self.message, "commit": self.commit, "evidence": self.evidence}


@dataclass(frozen=True)
class ReaderVerdict:
    """One reader of the version with its own verdict (tvm_reader)."""

    reader: str
    verdict: str
    general: bool
    doc: str

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (tvm_reader)."""
        return {"reader": self.reader, "verdict": self.verdict, "general": self.general, "doc": self.doc}


@dataclass
class Verdict:
    """A reader version's verdict on an artifact (JSON: generated/schemas/tvm_verdict):
    ``reasons`` holds the rules whose verdict is worse than loads, ``notes`` the others;
    ``readers`` each reader's own verdict (specs that declare readers; None otherwise)."""

    version: str
    writer: str | None
    writer_source: str
    verdict: str
    reasons: list[Reason] = field(default_factory=list)
    notes: list[Reason] = field(default_factory=list)
    readers: list[ReaderVerdict] | None = None
    #: how the text names the writer, when ``writer`` is an id a user would not read as a version
    writer_text: str | None = None

    @classmethod
    def of(cls, version: str, writer: str | None, writer_source: str, reasons: list[Reason],
           spec: Rules | None = None, readers: list[ReaderVerdict] | None = None) -> Verdict:
        """The verdict of ``reasons`` (the worst of theirs, or of the general readers' when
        ``readers`` are given); reasons with the best verdict become notes."""
        spec = spec or rules()
        best = spec.verdicts[0]
        broken = [r for r in reasons if r.verdict != best]
        notes = [r for r in reasons if r.verdict == best]
        if readers:
            counted = [r for r in readers if r.general] or readers
            overall = spec.worst(r.verdict for r in counted)
        else:
            overall = spec.worst(r.verdict for r in broken)
        return cls(version, writer, writer_source, overall, broken, notes, readers)

    @property
    def all_reasons(self) -> list[Reason]:
        """Reasons and notes."""
        return self.reasons + self.notes

    @property
    def headline(self) -> str:
        """The verdict as the text's first line says it: with the condition on the reading
        machine when every reason for it has the same one ("rejects without CUDA")."""
        why = {r.machine for r in self.reasons if r.verdict == self.verdict}
        return f"{self.verdict} {why.pop()}" if len(why) == 1 and None not in why else self.verdict

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (tvm_verdict)."""
        out: dict[str, Any] = {"version": self.version, "verdict": self.verdict, "from": self.writer,
                               "from_source": self.writer_source, "reasons": [r.to_dict() for r in self.reasons],
                               "notes": [r.to_dict() for r in self.notes]}
        if self.readers is not None:
            out["readers"] = [r.to_dict() for r in self.readers]
        return out

    def text(self) -> list[str]:
        """The text form, indented by two: the verdict line, then each reader with its
        reasons (or the reasons and notes), one line each."""
        from mlf_spec._text import printable

        who = self.writer_text or self.writer
        # a writer text that ends in a parenthesis (a dialect's label) takes its source after a comma
        by = (f", written by {who}" + (f", {self.writer_source}" if who and who.endswith(")") else
                                       f" ({self.writer_source})")) if self.writer else ""
        lines = [f"  TVM {self.version}{by}: {self.headline}"]

        def reason(r: Reason, indent: str) -> str:
            at = (r.where or "") + (f" ({printable(r.name)})" if r.name else "")
            return f"{indent}{r.verdict}: {r.rule}: {at + ': ' if at else ''}{printable(r.message)} [{r.evidence}]"

        if self.readers:
            for rv in self.readers:
                lines.append(f"    {rv.reader}: {rv.verdict}" + ("" if rv.general else " (not counted: a helper for "
                                                                     "one kind of model)"))
                lines += [reason(r, "      ") for r in self.all_reasons if r.reader == rv.reader]
        else:
            lines += [reason(r, "    ") for r in self.all_reasons]
        return lines


@dataclass(frozen=True)
class Part:
    """One part of an artifact for :meth:`Evaluator.read`: its subject, its facts (or the
    object its subject's tests look at), where it is and its name."""

    subject: str
    facts: Any
    where: str | None = None
    name: str | None = None


class Evaluator:
    """The rules of one verdicts spec that apply for one reader version and writer range."""

    def __init__(self, reader: Version, writer: Range | None, spec: Rules | None = None,
                 tests: Mapping[str, Test] | None = None, version: str | None = None) -> None:
        self.reader, self.writer = reader, writer
        self.spec = spec or rules()
        self.version = version if version is not None else _versions.label(reader)
        self.tests = dict(tests or {})
        declared = {t for subject in self.spec.tests.values() for t in subject}
        if set(self.tests) != declared:  # a bug in the caller, not bad input
            raise KeyError(f"{self.spec.name}: tests must be {sorted(declared)}, got {sorted(self.tests)}")
        self._rules: dict[str, list[dict[str, Any]]] = {}
        for r in self.spec.rules:
            if self._applies(r):
                self._rules.setdefault(r["subject"], []).append(r)

    def _applies(self, rule: Mapping[str, Any]) -> bool:
        if not _in(self.reader, rule["since"], rule["until"]):
            return False
        if rule["writer_since"] is None and rule["writer_until"] is None:
            return True
        if self.writer is None:
            return False
        lo, hi = self.writer
        if rule["writer_since"] is not None and hi <= rule["writer_since"]:
            return False
        return rule["writer_until"] is None or lo < rule["writer_until"]

    def apply(self, subject: str, facts: Any, where: str | None, name: str | None = None,
              reader: str | None = None) -> list[Reason]:
        """The reasons of every applicable rule about one part (``where``: its path); with
        ``reader``, only the rules of that reader, up to the first that rejects."""
        expected = self.spec.subjects[subject]
        if expected and set(facts) != set(expected):  # a bug in the caller, not bad input
            raise KeyError(f"facts of {subject!r} must be {sorted(expected)}, got {sorted(facts)}")
        out = []
        ends = self.spec._rank.get("rejects", len(self.spec.verdicts))
        for rule in self._rules.get(subject, ()):
            if reader is not None and reader not in rule["readers"]:
                continue
            if rule["when"] is not None:
                if not rule["when"](facts):
                    continue
                out.append(Reason(rule["verdict"], rule["id"], where, name, rule["reason"].format_map(facts),
                                  rule["evidence"], reader, rule.get("machine")))
            else:
                why, at = self.tests[rule["requires"]](facts, rule["argument"], self.version)
                if why is None:
                    continue
                out.append(Reason(rule["verdict"], rule["id"], at or where, name, f"{why}: {rule['reason']}",
                                  rule["evidence"], reader, rule.get("machine")))
            if reader is not None and self.spec._rank[rule["verdict"]] >= ends:
                break  # the reader raised here: its later rules are never reached
        return out

    def read(self, parts: Sequence[Part], writer: str | None, writer_source: str) -> Verdict:
        """The verdict of a spec with readers: each reader of the version takes the parts
        in turn, its rules in order, until one rejects; a version without a reader gets
        the spec's ``without_reader`` verdict."""
        active = self.spec.readers_of(self.reader)
        if not active:
            return Verdict.of(self.version, writer, writer_source, [self._no_reader()], self.spec, [])
        reasons: list[Reason] = []
        readers = []
        for r in active:
            got: list[Reason] = []
            for p in parts:
                got += self.apply(p.subject, p.facts, p.where, p.name, reader=r["reader"])
                if got and self.spec._rank[got[-1].verdict] >= self.spec._rank.get("rejects", len(self.spec.verdicts)):
                    break
            reasons += got
            readers.append(ReaderVerdict(r["reader"], self.spec.worst(x.verdict for x in got), r["general"],
                                         f"{r['doc']} ({r['source']}, {r['commit']})"))
        return Verdict.of(self.version, writer, writer_source, reasons, self.spec, readers)

    def _no_reader(self) -> Reason:
        first = min(r["since"] for r in self.spec.readers if r["since"] is not None)
        last = max(r["until"] for r in self.spec.readers if r["until"] is not None)
        for w in self.spec.without_reader:
            if _in(self.reader, w["since"], w["until"]):
                message = w["reason"].format(version=self.version, first=_versions.label(first),
                                             last=_versions.label(last))
                return Reason(w["verdict"], NO_READER, None, None, message, w["evidence"])
        return Reason(self.spec.verdicts[-1], NO_READER, None, None, f"TVM {self.version} has none of the readers",
                      "spec")


__all__ = ["MLF_READ_RULES", "NO_READER", "PAST_NEWEST", "TVM_READ_RULES", "VERDICTS", "Evaluator", "Part", "Reason",
           "ReaderVerdict", "Rules", "Verdict", "range_label", "reader_version", "rules", "worst", "writer_range"]
