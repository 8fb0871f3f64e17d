"""Judging a case: what a testee answered (:class:`Answer`), the outcome of one case before
known failures apply (:class:`Outcome`) and the rules that give one from the other
(:func:`judge`, the spec's comparison rules; :func:`verify` for an in-process function).

    >>> from mlf_spec.conformance import judge, vectors
    >>> case = vectors.load_suite(formats=["params"])[0]
    >>> judge.judge(case, judge.Answer.rejected("bad magic")).outcome    # pass / fail / error

The cases themselves (loading, requests, inputs) are data: :mod:`.vectors`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from mlf_spec.errors import MlfError

from . import canonical
from .compare import compare, same_json, short, validate_reading


class Case(Protocol):
    """What judging needs of a case (:class:`.vectors.Case` has it; judging never loads one)."""

    @property
    def id(self) -> str: ...

    @property
    def format(self) -> str: ...

    @property
    def role(self) -> str: ...

    @property
    def options(self) -> dict[str, str]: ...

    @property
    def expected(self) -> dict[str, Any]: ...

    @property
    def description(self) -> str: ...

    @property
    def input_path(self) -> Path: ...

    @property
    def is_folder(self) -> bool: ...

    @property
    def kind(self) -> str: ...

    def input(self) -> bytes: ...

    def input_files(self) -> dict[str, bytes]: ...

    def reading_input(self) -> Any: ...


@dataclass
class Answer:
    """What a testee answered: ``status`` ok, rejected or error (the testee failed: crashed,
    hung, broke the protocol); a ``reading`` (decode, migrate) or ``output`` bytes (encode);
    for a rejection the optional ``error_class`` and a ``message``; for an error its
    ``error_kind`` (crash, internal, timeout, protocol, output_limit, memory) and ``signal``."""

    status: str
    reading: Any = None
    output: bytes | None = None
    error_class: str | None = None
    message: str = ""
    error_kind: str | None = None
    signal: str | None = None
    files: dict[str, bytes] | None = None  # encode of a folder-shaped format: what was written

    @classmethod
    def ok(cls, reading: Any = None, output: bytes | None = None, files: dict[str, bytes] | None = None) -> Answer:
        """A successful answer."""
        return cls("ok", reading=reading, output=output, files=files)

    @classmethod
    def rejected(cls, message: str, error_class: str | None = None) -> Answer:
        """A refusal of the input."""
        return cls("rejected", message=message, error_class=error_class)

    @classmethod
    def failed(cls, kind: str, message: str, signal: str | None = None) -> Answer:
        """The testee did not answer properly."""
        return cls("error", message=message, error_kind=kind, signal=signal)


@dataclass
class Outcome:
    """The outcome of one case before known failures apply: pass, fail or error (formerly
    ``vectors.Verdict``, a name that said something else in :mod:`mlf_spec.verdict`)."""

    outcome: str
    message: str = ""
    diff: list[str] = field(default_factory=list)
    note: str = ""
    error_kind: str | None = None
    signal: str | None = None

    def details(self) -> dict[str, Any]:
        """The report keys of a failure: message, diff, error_kind, signal (those set)."""
        out: dict[str, Any] = {"message": self.message[:500]}
        for key in ("diff", "error_kind", "signal"):
            if getattr(self, key):
                out[key] = getattr(self, key)
        return out


def judge(case: Case, answer: Answer, *, strict_errors: bool = False, reads: list[str] | None = None) -> Outcome:
    """Compare an answer with the case's expected outcome, by the spec's comparison rules; with
    ``reads`` (a partial reader's handshake), only those top-level keys of the reading."""
    if answer.status == "error":
        return Outcome("error", answer.message, error_kind=answer.error_kind, signal=answer.signal)
    if case.expected["outcome"] == "reject":
        return _judge_rejection(case, answer, strict_errors)
    if answer.status == "rejected":
        return _judge_refusal(case, answer, reads)
    if case.role == "encode":
        got = _written_reading(case, answer)
        if isinstance(got, Outcome):
            return got
    else:
        got = answer.reading
        expected_reading = case.expected["reading"]
        if reads is not None:
            got = _partial_reading(expected_reading, got, reads)
            if isinstance(got, Outcome):
                return got
        if same_json(expected_reading, got):  # the expected reading matches its schema (a test checks every one)
            return Outcome("pass")
        problem = validate_reading(case.kind, got)
        if problem is not None:
            return Outcome("fail", f"the reading does not match canonical_{case.kind.replace('-', '_')}: {problem}",
                           diff=[problem])
    if same_json(case.expected["reading"], got):
        return Outcome("pass")
    diffs = compare(case.kind, case.expected["reading"], got, role=case.role)
    if diffs:
        return Outcome("fail", str(diffs[0]), diff=[str(d) for d in diffs])
    return Outcome("pass")


def _judge_rejection(case: Case, answer: Answer, strict_errors: bool) -> Outcome:
    """A case the spec rejects: a rejection passes (of another class: a note, or with
    ``strict_errors`` a failure); a reading fails."""
    cls = case.expected.get("error_class")
    if answer.status == "rejected":
        if answer.error_class and cls and answer.error_class != cls:
            msg = f"rejected as {answer.error_class}, the spec says {cls}"
            return Outcome("fail", msg) if strict_errors else Outcome("pass", note=msg)
        return Outcome("pass")
    return Outcome("fail", f"accepted an input the spec rejects ({cls})",
                   diff=[f"expected a rejection ({cls}), got a reading"])


def _judge_refusal(case: Case, answer: Answer, reads: list[str] | None) -> Outcome:
    """A valid input refused: a failure, unless a partial reader refused one that holds nothing it reads."""
    if reads and not any(case.expected["reading"].get(k) for k in reads):
        return Outcome("pass", note=f"a partial reader refused an input that holds nothing it reads ({', '.join(reads)} "
                       f"empty): {_one_line(answer.message)}")
    cls = f" [{answer.error_class}]" if answer.error_class else ""
    return Outcome("fail", f"rejected a valid input{cls}: {_one_line(answer.message)}")


def _written_reading(case: Case, answer: Answer) -> Any:
    """encode: mlf-spec's reading of what the testee wrote, or the Outcome when it wrote nothing
    or something that does not read."""
    if case.is_folder:
        if answer.files is None:
            return Outcome("error", "no files written", error_kind="protocol")
        try:
            return _decode_written(case.format, answer.files, case.options)
        except MlfError as exc:
            return Outcome("fail", f"the folder written does not read: {_one_line(str(exc))}")
    if answer.output is None:
        return Outcome("error", "no output bytes", error_kind="protocol")
    try:
        return canonical.decode(case.format, answer.output, case.options)
    except MlfError as exc:
        return Outcome("fail", f"the bytes written do not read: {_one_line(str(exc))}")


def _partial_reading(expected: dict[str, Any], got: Any, reads: list[str]) -> Any:
    """A partial reader's reading completed with the expected keys it does not read (so that the
    schema checks the rest), or the Outcome when it is no object or its keys break its handshake."""
    if not isinstance(got, dict):
        return Outcome("fail", "the reading is not a JSON object", diff=["(root): not an object"])
    extra = sorted(set(got) - set(reads) - {"format"})
    if extra:
        return Outcome("fail", f"the reading has keys its handshake does not declare: {extra}",
                       diff=[f"{k}: not declared in `reads`" for k in extra])
    missing = [k for k in reads if k in expected and k not in got]
    if missing:
        return Outcome("fail", f"the reading lacks the keys its handshake declares: {missing}",
                       diff=[f"{k}: missing, expected {short(expected[k])}" for k in missing])
    return {**{k: v for k, v in expected.items() if k not in reads}, **got}


def verify(case: Case, fn: Any, *, rejects: tuple[type[BaseException], ...] = (Exception,),
           error_class: Any = None, strict_errors: bool = False) -> None:
    """Call an implementation's function on the case and raise AssertionError (with the
    short diff) unless it does what the vector expects. ``fn(data, options)`` returns the
    canonical reading (decode, migrate) or, for encode, ``fn(reading, options)`` returns
    bytes; an exception in ``rejects`` is a rejection (``error_class(exc)`` may name its
    class)."""
    __tracebackhide__ = True
    if case.is_folder and case.role != "encode":
        from .folders import private_copy

        with private_copy(case.input_files(), case.input_path.name) as folder:
            _verify_with(case, fn, folder, rejects, error_class, strict_errors)
        return
    if case.is_folder:  # encode: fn(reading, options) writes into options["output_dir"]
        from .folders import read_output, scratch

        with scratch() as base:
            out = base / "out"
            out.mkdir()
            opts = {**case.options, "output_dir": str(out)}
            _verify_with(case, lambda reading, _o: fn(reading, opts), case.reading_input(), rejects, error_class,
                         strict_errors, written=lambda: read_output(out))
        return
    _verify_with(case, fn, case.reading_input() if case.role == "encode" else case.input(), rejects, error_class,
                 strict_errors)


def _verify_with(case: Case, fn: Any, payload: Any, rejects: tuple[type[BaseException], ...], error_class: Any,
                 strict_errors: bool, written: Callable[[], dict[str, bytes]] | None = None) -> None:
    __tracebackhide__ = True
    try:
        result = fn(payload, dict(case.options))
    except rejects as exc:
        answer = Answer.rejected(f"{type(exc).__name__}: {exc}", error_class(exc) if error_class else None)
    else:
        if written is not None:
            answer = Answer.ok(files=written())
        else:
            answer = Answer.ok(output=bytes(result)) if case.role == "encode" else Answer.ok(reading=result)
    v = judge(case, answer, strict_errors=strict_errors)
    if v.outcome != "pass":
        lines = [f"{case.id} ({case.description}): {v.message}", *[f"  {d}" for d in v.diff]]
        raise AssertionError("\n".join(lines))


def _decode_written(fmt: str, files: dict[str, bytes], options: dict[str, str]) -> Any:
    """mlf-spec's reading of the folder a testee wrote (the files, in a private copy)."""
    from .folders import private_copy

    with private_copy(files, "written") as folder:
        return canonical.decode(fmt, folder, options)  # a folder format takes its path


def _one_line(text: str) -> str:
    return " ".join(text.split())[:300]


#: the former name of :class:`Outcome` (kept importable)
Verdict = Outcome

__all__ = ["Answer", "Outcome", "Verdict", "judge", "verify"]
