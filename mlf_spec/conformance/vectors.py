"""Conformance vectors as data: load a suite, build a case's request, check an answer.

    >>> from mlf_spec.conformance import vectors
    >>> for case in vectors.load_suite(formats=["params"]):     # the installed suite by default
    ...     answer = my_reader(case.format, case.input(), case.options)
    ...     verdict = case.check(answer)                       # pass / fail with a short diff

A suite is a directory of ``<id>.case.json`` files (schema:
generated/schemas/conformance_vector.schema.json) with their inputs next to them, in any
layout below the directory. The installed suite is ``mlf_spec.vectors`` (the repository's
``vectors/``); :func:`write_suite` copies it, or writes cases made by ``--generate``.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mlf_spec._io import atomic_write_bytes, read_limited
from mlf_spec.errors import MlfError

from . import canonical
from .compare import compare, same_json, short, validate_reading

CASE_SUFFIX = ".case.json"


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
class Verdict:
    """The outcome of one case before known failures apply: pass, fail or error."""

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


def echo(reading: Any, key: str, old: str, new: str) -> Any:
    """``reading`` with its top-level ``key`` set to ``new`` where it names the option value
    ``old`` (a .params reading's ``dialect``); anything else unchanged."""
    if isinstance(reading, dict) and reading.get(key) == old:
        return {**reading, key: new}
    return reading


def scope_list(value: Any) -> list[str]:
    """A scope value as the list of values it stands for (a string is a list of one)."""
    return [value] if isinstance(value, str) else list(value)


#: other names of a format, accepted wherever a format is named to select cases (the CLI and
#: the docs say "cache" for the tensor cache); requests and handshakes use the format's own name
FORMAT_ALIASES = {"cache": "tensor-cache"}


def format_name(name: str) -> str:
    """The format ``name`` stands for (``cache`` -> ``tensor-cache``; any other name as given)."""
    return FORMAT_ALIASES.get(name, name)


def format_support(info: dict[str, Any], fmt: str) -> dict[str, Any] | None:
    """The handshake's entry for ``fmt`` (None: the testee does not support it)."""
    return next((f for f in info.get("formats", []) if f.get("format") == fmt), None)


@dataclass(frozen=True)
class Case:
    """One vector (see generated/docs/conformance_vector.md)."""

    id: str
    format: str
    role: str
    options: dict[str, str]
    scope: dict[str, str]
    tvm: str
    features: dict[str, list[str]]
    description: str
    spec_ref: str
    broken_kind: str | None
    expected: dict[str, Any]
    input_path: Path
    input_sha256: str
    path: Path
    data: bytes | None = None  # the input, for a case made in memory (generated cases)
    files: dict[str, bytes] | None = None  # a folder-shaped input made in memory

    def __str__(self) -> str:
        return self.id

    @property
    def is_folder(self) -> bool:
        """Whether the input is a folder (a folder-shaped format: tensor-cache)."""
        from .folders import is_folder_format

        return is_folder_format(self.format)

    @property
    def kind(self) -> str:
        """What the reading is compared as: the format, or ``migration``."""
        return "migration" if self.role == "migrate" else self.format

    def retarget(self, info: dict[str, Any]) -> Case:
        """The case as sent to a testee with this handshake: where the testee supports some of
        a scope key's values but not the case's option, the option becomes the first value it
        supports, and a reading key that names the option follows (see :func:`echo`)."""
        support = format_support(info, self.format) or {}
        allowed_by = support.get("scope") or {}
        case = self
        for key, value in self.scope.items():
            allowed = allowed_by.get(key)
            own = self.options.get(key)
            if allowed is None or own is None or own in allowed:
                continue
            new = next((v for v in scope_list(value) if v in allowed), None)
            if new is not None:
                case = case.with_option(key, new)
        return case

    def with_option(self, key: str, new: str) -> Case:
        """The case sent with option ``key`` set to ``new`` (an expected reading, and for
        encode the reading written, that name the old value follow: :func:`echo`)."""
        own = self.options.get(key)
        if own is None or own == new:
            return self
        expected = dict(self.expected)
        if "reading" in expected:
            expected["reading"] = echo(expected["reading"], key, own, new)
        changed: dict[str, Any] = {"options": {**self.options, key: new}, "expected": expected}
        if self.role == "encode":
            text = json.dumps(echo(self.reading_input(), key, own, new), indent=1, ensure_ascii=False) + "\n"
            data = text.encode("utf-8")
            changed.update(data=data, input_sha256=canonical.sha256(data))
        return dataclasses.replace(self, **changed)

    def retargeted(self, original: Case) -> dict[str, str]:
        """The options of this case that differ from ``original``'s (empty: not retargeted)."""
        return {k: v for k, v in self.options.items() if original.options.get(k) != v}

    def features_as_run(self, options: dict[str, str] | None = None) -> dict[str, list[str]]:
        """The coverage tags, with a tag named like a retargeted option set to the value the
        case ran with (a case retargeted to v0.26 counts for v0.26)."""
        return {k: ([options[k]] if options and k in options else v) for k, v in self.features.items()}

    def input_files(self) -> dict[str, bytes]:
        """A folder-shaped case's input: relative path -> bytes (checked against
        ``input_sha256``, the SHA-256 of the folder's manifest: :mod:`.folders`)."""
        from .folders import folder_sha256, read_files

        if self.files is not None:
            return dict(self.files)
        files = read_files(self.input_path)
        if folder_sha256(files) != self.input_sha256:
            raise MlfError(f"input folder of case {self.id} does not match its input_sha256 (the manifest's "
                           "SHA-256)", file=str(self.input_path))
        return files

    def input(self) -> bytes:
        """The input file's bytes (checked against ``input_sha256``)."""
        if self.is_folder and self.role != "encode":
            raise MlfError(f"case {self.id} has a folder as its input (input_files)", file=str(self.input_path))
        if self.data is not None:
            return self.data
        from .folders import read_regular

        try:
            data = read_regular(self.input_path)  # a FIFO or a device in its place never blocks the run
        except MlfError as exc:
            raise MlfError(f"cannot read the input of case {self.id}: {exc.message}", file=str(self.input_path)) \
                from None
        if canonical.sha256(data) != self.input_sha256:
            raise MlfError(f"input of case {self.id} does not match its input_sha256", file=str(self.input_path))
        return data

    def reading_input(self) -> Any:
        """encode: the canonical reading to write (the input file, as JSON)."""
        try:
            return json.loads(self.input())
        except ValueError as exc:
            raise MlfError(f"not JSON: {exc}", file=str(self.input_path)) from None

    def request(self, folder: str | os.PathLike[str] | None = None) -> dict[str, Any]:
        """The request of the persistent protocol (without its id). A folder-shaped input is
        sent as ``input_dir``: ``folder`` (a private copy), else the vector's own folder; a
        folder-shaped encode names ``output_dir``: ``folder``, else a new empty temporary one."""
        req: dict[str, Any] = {"op": self.role, "format": self.format, "options": dict(self.options)}
        if self.is_folder and self.role != "encode":
            req["input_dir"] = str(Path(folder if folder is not None else self.input_path).resolve())
        if self.is_folder and self.role == "encode":
            import tempfile

            req["output_dir"] = str(Path(folder if folder is not None else tempfile.mkdtemp(prefix="mlf-conf-out-"))
                                    .resolve())
        if self.role == "encode":
            req["reading"] = self.reading_input()
        elif not self.is_folder:
            req["input"] = base64.b64encode(self.input()).decode("ascii")
        return req

    def verify(self, fn: Any, *, rejects: tuple[type[BaseException], ...] = (Exception,), error_class: Any = None,
               strict_errors: bool = False) -> None:
        """Raise AssertionError unless ``fn`` answers the case as expected (see :func:`verify`)."""
        __tracebackhide__ = True  # a failure's traceback shows the test and the diff, not the kit's frames
        verify(self, fn, rejects=rejects, error_class=error_class, strict_errors=strict_errors)

    def check(self, answer: Answer, *, strict_errors: bool = False, reads: list[str] | None = None) -> Verdict:
        """Compare an answer with the expected outcome, by the spec's comparison rules; with
        ``reads`` (a partial reader's handshake), only those top-level keys of the reading."""
        if answer.status == "error":
            return Verdict("error", answer.message, error_kind=answer.error_kind, signal=answer.signal)
        want = self.expected
        if want["outcome"] == "reject":
            if answer.status == "rejected":
                cls = want.get("error_class")
                if answer.error_class and cls and answer.error_class != cls:
                    msg = f"rejected as {answer.error_class}, the spec says {cls}"
                    return Verdict("fail", msg) if strict_errors else Verdict("pass", note=msg)
                return Verdict("pass")
            return Verdict("fail", f"accepted an input the spec rejects ({want.get('error_class')})",
                           diff=[f"expected a rejection ({want.get('error_class')}), got a reading"])
        if answer.status == "rejected":
            if reads and not any(want["reading"].get(k) for k in reads):
                return Verdict("pass", note=f"a partial reader refused an input that holds nothing it reads ({', '.join(reads)} "
                               f"empty): {_one_line(answer.message)}")
            cls = f" [{answer.error_class}]" if answer.error_class else ""
            return Verdict("fail", f"rejected a valid input{cls}: {_one_line(answer.message)}")
        got = answer.reading
        if self.role == "encode" and self.is_folder:
            if answer.files is None:
                return Verdict("error", "no files written", error_kind="protocol")
            try:
                got = _decode_written(self.format, answer.files, self.options)
            except MlfError as exc:
                return Verdict("fail", f"the folder written does not read: {_one_line(str(exc))}")
        elif self.role == "encode":
            if answer.output is None:
                return Verdict("error", "no output bytes", error_kind="protocol")
            try:
                got = canonical.decode(self.format, answer.output, self.options)
            except MlfError as exc:
                return Verdict("fail", f"the bytes written do not read: {_one_line(str(exc))}")
        else:
            expected_reading = want["reading"]
            if reads is not None:
                if not isinstance(got, dict):
                    return Verdict("fail", "the reading is not a JSON object", diff=["(root): not an object"])
                extra = sorted(set(got) - set(reads) - {"format"})
                if extra:
                    return Verdict("fail", f"the reading has keys its handshake does not declare: {extra}",
                                   diff=[f"{k}: not declared in `reads`" for k in extra])
                missing = [k for k in reads if k in expected_reading and k not in got]
                if missing:
                    return Verdict("fail", f"the reading lacks the keys its handshake declares: {missing}",
                                   diff=[f"{k}: missing, expected {short(expected_reading[k])}" for k in missing])
                # the keys it does not read are taken as expected, so that the schema checks the rest
                got = {**{k: v for k, v in expected_reading.items() if k not in reads}, **got}
            if same_json(expected_reading, got):  # the expected reading matches its schema (a test checks every one)
                return Verdict("pass")
            problem = validate_reading(self.kind, got)
            if problem is not None:
                return Verdict("fail", f"the reading does not match canonical_{self.kind.replace('-', '_')}: "
                               f"{problem}", diff=[problem])
        if same_json(want["reading"], got):
            return Verdict("pass")
        diffs = compare(self.kind, want["reading"], got, role=self.role)
        if diffs:
            return Verdict("fail", str(diffs[0]), diff=[str(d) for d in diffs])
        return Verdict("pass")


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
                 strict_errors: bool, written: Any = None) -> None:
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
    v = case.check(answer, strict_errors=strict_errors)
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


def default_suite() -> Path:
    """The installed suite (``mlf_spec.vectors``; the repository's ``vectors/``)."""
    import importlib.util

    spec = importlib.util.find_spec("mlf_spec.vectors")
    if spec is None or not spec.submodule_search_locations:
        raise MlfError("the conformance vectors are not installed (package mlf_spec.vectors)")
    return Path(list(spec.submodule_search_locations)[0])


def load_case(path: Path) -> Case:
    """One case file. Raises MlfError (with the path) if it is not a valid case."""
    from pydantic import ValidationError

    from mlf_spec.generated.conformance_vector_models import VectorCase

    try:
        doc = json.loads(read_limited(path))
    except ValueError as exc:
        raise MlfError(f"not a case file (not JSON: {exc})", file=str(path)) from None
    try:
        VectorCase.model_validate(doc)
    except ValidationError as exc:
        e = exc.errors()[0]
        raise MlfError(f"not a case file: {e['msg']}", file=str(path),
                       field=".".join(str(p) for p in e["loc"]) or None) from None
    if doc["expected"]["outcome"] == "accept" and "reading" not in doc["expected"]:
        raise MlfError("an accepted case needs expected.reading", file=str(path), field="expected.reading")
    input_path = path.parent / doc["input"]
    if not input_path.resolve().is_relative_to(path.parent.resolve()) or "/" in doc["input"] or "\\" in doc["input"] \
            or doc["input"] in ("", ".", ".."):
        raise MlfError("input must be a file next to the case file", file=str(path), field="input")
    from .folders import is_folder_format

    if is_folder_format(doc["format"]) and doc["role"] != "encode" and \
            (input_path.is_symlink() or not input_path.is_dir()):
        raise MlfError(f"the input of a {doc['format']} case must be a folder next to the case file", file=str(path),
                       field="input")
    return case_of_document(doc, path)


def case_of_document(doc: dict[str, Any], path: Path, data: bytes | None = None) -> Case:
    """The case a case document describes (conformance_vector), its file at ``path`` (the
    input next to it) or, for a case made in memory, its input ``data``."""
    return Case(doc["id"], doc["format"], doc["role"], dict(doc["options"]), dict(doc["scope"]), doc["tvm"],
                {k: list(v) for k, v in doc["features"].items()}, doc["description"], doc["spec_ref"],
                doc["broken_kind"], doc["expected"], path.parent / doc["input"], doc["input_sha256"], path, data)


def load_suite(directory: str | os.PathLike | None = None, *, formats: Iterable[str] | None = None,
               roles: Iterable[str] | None = None, ids: Iterable[str] | None = None) -> list[Case]:
    """Every case below ``directory`` (default: the installed suite), sorted by id, filtered
    by format, role and id (an id ending in ``*`` is a prefix; ``*`` and ``?`` elsewhere are
    wildcards). Raises MlfError for a malformed case file or a repeated id."""
    root = Path(directory) if directory is not None else default_suite()
    if not root.is_dir():
        raise MlfError("not a directory of conformance vectors", file=str(root))
    cases: dict[str, Case] = {}
    for path in sorted(root.rglob("*" + CASE_SUFFIX)):
        case = load_case(path)
        if case.id in cases:
            raise MlfError(f"case id {case.id!r} appears twice (also in {cases[case.id].path})", file=str(path))
        cases[case.id] = case
    return select(sorted(cases.values(), key=lambda c: c.id), formats=formats, roles=roles, ids=ids)


def suite_digest(cases: Iterable[Case]) -> str:
    """The content digest of a suite (hex SHA-256 over its case files in id order; each case
    file names its input's SHA-256, so the inputs count too). Compatibility pages keep the
    digest of the suite they were made from: a page is stale when it differs."""
    import hashlib

    h = hashlib.sha256()
    for case in sorted(cases, key=lambda c: c.id):
        body = case.path.read_bytes()
        h.update(f"{case.id}\0{len(body)}\0".encode())
        h.update(body)
    return h.hexdigest()


def select(cases: list[Case], *, formats: Iterable[str] | None = None, roles: Iterable[str] | None = None,
           ids: Iterable[str] | None = None) -> list[Case]:
    """The cases of these formats, roles and ids (patterns as :func:`load_suite` takes them)."""
    import fnmatch

    fset, rset = {format_name(f) for f in formats or ()}, set(roles or ())
    wanted = list(ids or ())
    exact = {w for w in wanted if not any(ch in w for ch in "*?[")}  # a set: a list of many ids stays linear
    patterns = [w for w in wanted if w not in exact]
    return [c for c in cases if not (fset and c.format not in fset) and not (rset and c.role not in rset)
            and (not wanted or c.id in exact or any(fnmatch.fnmatchcase(c.id, w) for w in patterns))]


def write_suite(out: str | os.PathLike, formats: Iterable[str] | None = None, *,
                source: str | os.PathLike | None = None) -> int:
    """Copy the installed suite (or ``source``), or the cases of ``formats``, to ``out``;
    return the number of cases. Files are written atomically."""
    from mlf_spec._io import output_directory

    out_dir = Path(out)
    n = 0
    with output_directory(out_dir):  # a failed write leaves no folder behind that this call made
        for case in load_suite(source, formats=formats):
            rel = case.path.parent.relative_to(Path(source) if source is not None else default_suite())
            dest = out_dir / rel
            dest.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(dest / case.path.name, case.path.read_bytes())
            if case.is_folder and case.role != "encode":
                from .folders import write_files

                (dest / case.input_path.name).mkdir(exist_ok=True)
                write_files(dest / case.input_path.name, case.input_files())
            else:
                atomic_write_bytes(dest / case.input_path.name, case.input())
            n += 1
    return n


def case_text(case: dict[str, Any]) -> str:
    """The text of a case file (stable: one space indents, UTF-8 kept, final newline)."""
    return json.dumps(case, indent=1, ensure_ascii=False) + "\n"


def save_case(directory: str | os.PathLike, case: dict[str, Any], data: bytes, input_name: str) -> Path:
    """Write one case document and its input into ``directory`` (atomically); return the case path."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(d / input_name, data)
    path = d / f"{case['id']}{CASE_SUFFIX}"
    atomic_write_bytes(path, case_text(case).encode("utf-8"))
    return path


__all__ = ["Answer", "CASE_SUFFIX", "Case", "Verdict", "case_of_document", "case_text", "default_suite", "echo",
           "format_name", "format_support", "load_case", "load_suite", "save_case", "scope_list", "select", "verify", "write_suite"]
