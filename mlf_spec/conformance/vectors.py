"""Conformance vectors as data: load a suite, build a case's request and input (judging an
answer is :mod:`.judge`; ``Case.check`` and :func:`verify` are kept here as its shortcuts).

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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mlf_spec._io import atomic_write_bytes, read_limited
from mlf_spec.errors import MlfError

from . import canonical
from .judge import Answer, Outcome, Verdict, judge, verify

CASE_SUFFIX = ".case.json"


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

    def check(self, answer: Answer, *, strict_errors: bool = False, reads: list[str] | None = None) -> Outcome:
        """Compare an answer with the expected outcome (:func:`.judge.judge`)."""
        return judge(self, answer, strict_errors=strict_errors, reads=reads)


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


__all__ = ["Answer", "CASE_SUFFIX", "Case", "Outcome", "Verdict", "case_of_document", "case_text", "default_suite", "echo",
           "format_name", "format_support", "load_case", "load_suite", "save_case", "scope_list", "select", "verify", "write_suite"]
