"""MLF ``metadata.json``: one strict model per version and style, detection, TVM's dumps.

    >>> from mlf_spec import metadata
    >>> md = metadata.parse(open("metadata.json", "rb").read())
    >>> md.version, md.style, list(md.modules)
    (7, 'full-model', ['add'])
    >>> metadata.dumps(md) == open("metadata.json", "rb").read()   # TVM's json.dump options
    True

Everything version-specific comes from the spec (spec/records/mlf.yaml through the generated
``mlf_v<N>_models`` modules and ``mlf_ir``): which keys exist in which version, which are
required, their types and rules, the roots (full-model and operator documents) and how TVM
dumped each of them. :func:`spec` returns a version's spec as data (records, keys, docs,
revisions) for engines such as migrations.

Two back ends state the same rules: the pydantic models (the typed public API: :func:`parse`,
:func:`load`, :func:`build`) and the generated plain validators and typed records
(``mlf_spec.generated.mlf_plain``), which :func:`check_document` and :func:`detect` use so
that checking and inspecting an archive never import pydantic when the document is valid
(pydantic then only words the issues of an invalid one). Both kinds of typed document
answer the same attribute names; :func:`to_data`, :func:`dumps` and
:func:`consistent_revisions` take either.
"""

from __future__ import annotations

import copy
import datetime
import functools
import importlib
import os
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from mlf_spec._internal.lean_dataclass import dataclass, field
from mlf_spec._records import Issue, json_path, load_json, raise_issues, validate
from mlf_spec.errors import MlfError, ValidationError
from mlf_spec.generated import mlf_ir as _ir
from mlf_spec.generated import mlf_revisions_timeline as _timeline

if TYPE_CHECKING:
    from mlf_spec.generated import _recordlib

VERSIONS: tuple[int, ...] = tuple(_ir.VERSIONS)
LATEST: int = VERSIONS[-1]
STYLES: tuple[str, ...] = tuple(dict.fromkeys(r["style"] for p in _ir.PROJECTIONS.values() for r in p["roots"]))
DATETIME_FORMAT = "%Y-%m-%d %H:%M:%SZ"


def models(version: int) -> ModuleType:
    """The generated pydantic models of ``version`` (``mlf_spec.generated.mlf_v<N>_models``)."""
    if version not in VERSIONS:
        raise MlfError(f"no MLF metadata version {version!r}; known: {list(VERSIONS)}")
    return importlib.import_module(f"mlf_spec.generated.{_ir.NAME}_v{version}_models")


def spec(version: int) -> dict[str, Any]:
    """The spec of ``version`` as data: ``revisions``, ``roots`` (style, record, json.dump
    options) and ``records`` (each with its fields: name, type, required, rules, doc and the
    revisions that wrote it). A copy: callers may change it."""
    if version not in VERSIONS:
        raise MlfError(f"no MLF metadata version {version!r}; known: {list(VERSIONS)}")
    return copy.deepcopy(_ir.PROJECTIONS[version])


def revisions(version: int | None = None) -> list[dict[str, Any]]:
    """The writer revisions (id, version, commit, date, release, doc), oldest first."""
    return [dict(r) for r in _timeline.REVISIONS if version is None or r["version"] == version]


def styles(version: int) -> list[str]:
    """The document styles of ``version`` (full-model; operator from version 4)."""
    return [r["style"] for r in _ir.PROJECTIONS[version]["roots"]]


def _root(version: int, style: str) -> dict[str, Any]:
    for r in _ir.PROJECTIONS[version]["roots"]:
        if r["style"] == style:
            return r
    raise MlfError(f"version {version} has no {style!r} documents; styles: {styles(version)}")


def model_for(version: int, style: str) -> type[_recordlib.Record]:
    """The root model of a ``version`` document of ``style``."""
    return getattr(models(version), _root(version, style)["class"])


def json_options(version: int, style: str) -> dict[str, Any]:
    """The ``json.dump`` options TVM used for this version and style."""
    return dict(_root(version, style)["json"])


def style_of(doc: Any, version: int) -> str:
    """The style of a document of ``version``, from the roots' match rules in the spec."""
    fallback = None
    for r in _ir.PROJECTIONS[version]["roots"]:
        m = r["match"]
        if m is None:
            fallback = fallback or r["style"]
        elif isinstance(doc, dict) and m["key"] in doc and (m.get("value") is None or doc[m["key"]] == m["value"]):
            return r["style"]
    return fallback or _ir.PROJECTIONS[version]["roots"][0]["style"]


@dataclass
class Detection:
    """What a document says about itself: the declared ``version`` (None unless it is an
    int this project knows), its ``style``, and ``fits``: every (version, style) whose
    model accepts the document once its ``version`` is set to that version."""

    declared: Any
    version: int | None
    style: str | None
    fits: list[tuple[int, str]] = field(default_factory=list)


def declared_version(doc: Any) -> Any:
    """The raw ``version`` value of a document (top level in every version and style)."""
    return doc.get("version") if isinstance(doc, dict) else None


def detect(doc: Any, *, shapes: bool = True) -> Detection:
    """Detect version and style from the content (shape-based detection when ``shapes``)."""
    raw = declared_version(doc)
    version = raw if isinstance(raw, int) and not isinstance(raw, bool) and raw in VERSIONS else None
    style = style_of(doc, version) if version is not None else None
    fits: list[tuple[int, str]] = []
    if shapes and isinstance(doc, dict):
        plain = _plain()
        for v in VERSIONS:
            trial = dict(doc)
            trial["version"] = v
            s = style_of(trial, v)
            if not plain.validate(trial, v, s):  # the pydantic models' verdict, without building them
                fits.append((v, s))
        if style is None and fits:
            style = fits[-1][1]
    return Detection(raw, version, style, fits)


class Metadata:
    """A validated metadata document: ``version``, ``style``, the typed ``document`` (a model
    of ``mlf_v<N>_models``, or a plain typed record of ``mlf_plain`` when read by the
    checks), ``modules`` (module name -> per-module metadata), ``raw`` (the
    bytes read, if any) and ``unknown`` (JSON paths of unknown keys kept by lenient reading)."""

    def __init__(self, version: int, style: str, document: Any, *, raw: bytes | None = None,
                 unknown: list[str] | None = None, file: str | None = None) -> None:
        self.version = version
        self.style = style
        self.document = document
        self.raw = raw
        self.unknown = unknown or []
        self.file = file

    @property
    def modules(self) -> dict[str, Any]:
        """Module name -> its metadata: the ``modules`` of a version 7 full-model document,
        else the document itself under its ``model_name``."""
        doc = self.document
        mods = getattr(doc, "modules", None)
        if isinstance(mods, dict):
            return dict(mods)
        return {doc.model_name: doc}

    def to_data(self) -> dict[str, Any]:
        """The document as plain JSON data (declared keys in spec order, then unknown keys)."""
        return to_data(self.document)

    def dumps(self) -> bytes:
        """The bytes TVM's writer produced for this content (its json.dump options)."""
        return dumps(self.document, self.version, self.style)

    def __repr__(self) -> str:
        return f"<Metadata v{self.version} {self.style} modules={list(self.modules)}>"


def _plain() -> ModuleType:
    from mlf_spec.generated import mlf_plain

    return mlf_plain


def _is_model(value: Any) -> bool:
    """Whether ``value`` is a pydantic record (none exists unless their library was loaded)."""
    lib = sys.modules.get("mlf_spec.generated._recordlib")
    return lib is not None and isinstance(value, lib.Record)


def to_data(value: Any, numeric_keys: bool = False) -> Any:
    """Plain JSON data of a typed document or record, pydantic or plain (declared keys that
    are set in spec order, then unknown keys; lists, dicts and plain values as they are).
    With ``numeric_keys``, maps declared with int keys get int keys (for ``sort_keys``)."""
    if _is_model(value):
        return sys.modules["mlf_spec.generated._recordlib"].to_data(value, numeric_keys)
    if isinstance(value, dict):
        return {k: to_data(v, numeric_keys) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_data(v, numeric_keys) for v in value]
    return _plain().to_data(value, numeric_keys)


def fields_set(value: Any) -> frozenset[str]:
    """The attribute names of the declared keys a typed record (pydantic or plain) was read
    with (unknown keys are not fields)."""
    if _is_model(value):
        return frozenset(value.model_fields_set & set(type(value).model_fields))
    return value.fields_set


def validate_document(doc: Any, version: int, style: str, *, lenient: bool = False) -> tuple[Any, list[Issue]]:
    """Validate a parsed document against the model of ``version`` and ``style``: (typed
    document or None, issues). Lenient reading keeps unknown keys and reports them."""
    if not isinstance(doc, dict):
        return None, [Issue("", f"a metadata document is a JSON object, not {type(doc).__name__}")]
    return validate(model_for(version, style), doc, lenient=lenient)


def unknown_keys(doc: Any, version: int, style: str) -> list[str]:
    """JSON paths of every key the model of ``version``/``style`` does not have, found by
    walking the document along the spec (independent of other problems it may have)."""
    proj = _ir.PROJECTIONS[version]
    out: list[str] = []

    def walk(value: Any, rname: str, path: tuple) -> None:
        if not isinstance(value, dict):
            return
        rec = proj["records"][rname]
        fields = {f["name"]: f for f in rec["fields"]}
        if rec["extra"] != "allow":
            out.extend(json_path(path + (k,)) for k in value if k not in fields)
        for name, f in fields.items():
            if name in value:
                for parts, sub in f["nested"]:
                    descend(value[name], parts, sub, path + (name,))

    def descend(value: Any, parts: list[Any], rname: str, path: tuple) -> None:
        if not parts:
            walk(value, rname, path)
        elif parts[0] == "*":
            if isinstance(value, list):
                for i, v in enumerate(value):
                    descend(v, parts[1:], rname, path + (i,))
            elif isinstance(value, dict):
                for k, v in value.items():
                    descend(v, parts[1:], rname, path + (k,))
        elif isinstance(value, list) and isinstance(parts[0], int) and parts[0] < len(value):
            descend(value[parts[0]], parts[1:], rname, path + (parts[0],))

    walk(doc, _root(version, style)["record"], ())
    return out


def check_document(doc: Any, version: int, style: str) -> tuple[Any, list[Issue]]:
    """Every issue of a parsed document against ``version``/``style``: all unknown keys
    (``unknown-key``) and the schema problems; the typed document when there are none
    except unknown keys (read leniently). The typed document is a plain typed record of
    ``mlf_spec.generated.mlf_plain`` (no pydantic); the issues of an invalid document are
    worded by the pydantic model."""
    if not isinstance(doc, dict):
        return None, [Issue("", f"a metadata document is a JSON object, not {type(doc).__name__}")]
    unknown = [Issue(p, "unknown key", "unknown-key") for p in unknown_keys(doc, version, style)]
    plain = _plain()
    if all(message == "unknown key" for _, message in plain.validate(doc, version, style)):
        return plain.typed(doc, version, style), unknown
    value, issues = validate(model_for(version, style), doc, lenient=True)
    return value, unknown + [i for i in issues if i.kind != "unknown-key"]


def from_document(doc: Any, *, version: int | None = None, style: str | None = None, lenient: bool = False,
                  file: str | None = None, raw: bytes | None = None, plain: bool = False) -> Metadata:
    """A :class:`Metadata` from a parsed document. ``version`` overrides the declared one
    (the document is then checked against that version's model). With ``plain``, a valid
    document is checked by the plain validators and typed by the plain records of
    ``mlf_plain`` (no pydantic: the read paths of archives and migrations); the pydantic
    model words the issues of an invalid one either way. Raises ValidationError."""
    if not isinstance(doc, dict):
        raise ValidationError(f"metadata is a JSON {type(doc).__name__}, not an object", file=file)
    if version is None:
        raw_v = declared_version(doc)
        if "version" not in doc:
            raise ValidationError("metadata has no 'version' key", file=file, field="version")
        if not isinstance(raw_v, int) or isinstance(raw_v, bool) or raw_v not in VERSIONS:
            raise ValidationError(f"unknown metadata version {raw_v!r}; known: {list(VERSIONS)}", file=file,
                                  field="version")
        version = raw_v
    style = style or style_of(doc, version)
    if plain:
        found = _plain().validate(doc, version, style)
        if not found or lenient and all(message == "unknown key" for _, message in found):
            unknown = unknown_keys(doc, version, style) if found else []
            return Metadata(version, style, _plain().typed(doc, version, style), raw=raw, unknown=unknown, file=file)
    value, issues = validate_document(doc, version, style, lenient=lenient)
    errors = [i for i in issues if i.kind != "unknown-key" or not lenient]
    if value is None or errors:
        raise_issues(errors or issues, file, f"not a valid version {version} {style} document")
    return Metadata(version, style, value, raw=raw, unknown=[i.path for i in issues if i.kind == "unknown-key"],
                    file=file)


def parse(data: bytes | str, *, version: int | None = None, lenient: bool = False, file: str | None = None) -> Metadata:
    """Parse and validate metadata.json text. Raises ValidationError (with the JSON path)."""
    doc = load_json(data, file, "metadata.json")
    raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    return from_document(doc, version=version, lenient=lenient, file=file, raw=raw)


def load(path: str | os.PathLike, *, version: int | None = None, lenient: bool = False) -> Metadata:
    """Read and validate a metadata.json file."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise MlfError(f"cannot read: {exc.strerror}", file=os.fspath(path)) from None
    return parse(data, version=version, lenient=lenient, file=os.fspath(path))


def build(version: int, style: str, document: dict[str, Any]) -> _recordlib.Record:
    """A typed document of ``version``/``style`` from plain data (strict; raises ValidationError)."""
    return from_document(document, version=version, style=style).document


def dumps(value: Metadata | _recordlib.Record | dict[str, Any], version: int | None = None,
          style: str | None = None) -> bytes:
    """Serialise as TVM's writer did for the style: full-model with
    ``json.dump(indent=2, sort_keys=True)`` (int device-type keys sorted numerically),
    operator with ``json.dump()`` in insertion order; ASCII, no trailing newline."""
    if isinstance(value, Metadata):
        version, style, value = value.version, value.style, value.document
    if isinstance(value, dict):
        if version is None:
            version = declared_version(value)
        if version not in VERSIONS:
            raise MlfError(f"no MLF metadata version {version!r}")
        value = from_document(value, version=version, style=style).document
    if version is None or style is None:
        name = type(value).__name__
        for v in ([version] if version else list(VERSIONS)):
            for r in _ir.PROJECTIONS[v]["roots"]:
                if r["class"] == name and type(value).__module__.endswith(f"_v{v}_models"):
                    version, style = v, r["style"]
            for s, (_, cls) in _plain().ROOTS[v].items() if not _is_model(value) else ():
                if type(value) is cls:
                    version, style = v, s
    if version is None or style is None:
        raise MlfError("cannot tell the version and style of this document; pass them")
    lib = sys.modules["mlf_spec.generated._recordlib"] if _is_model(value) else _plain()
    text = lib.dump_json(value, **json_options(version, style))
    return text.encode("ascii" if json_options(version, style)["ensure_ascii"] else "utf-8")


#: TVM's format written out with its usual zero padding: such text needs no strptime
_DATETIME_PADDED = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2}) ([0-9]{2}):([0-9]{2}):([0-9]{2})Z")


def datetime_valid(text: str) -> bool:
    """Whether ``export_datetime`` is a real date and time in TVM's format."""
    m = _DATETIME_PADDED.fullmatch(text) if isinstance(text, str) else None
    try:
        if m is not None:  # strptime's verdict on such text, without importing _strptime (start-up)
            y, mo, d, h, mi, sec = (int(g) for g in m.groups())
            datetime.datetime(y, mo, d, h, mi, sec)
        else:
            datetime.datetime.strptime(text, DATETIME_FORMAT)
    except (ValueError, TypeError):
        return False
    return True


# ----------------------------------------------------------------- composing


class Candidates(dict):
    """Values of one key by the kind of type a version gives it (``list``, ``map``,
    ``intmap``, ``tuple``, a record name, or a basic type name), for :func:`compose`:
    ``Candidates(intmap={"1": t}, list=[t])`` is a target in every version."""


def _pick(value: Any, tree: list[Any]) -> Any:
    if isinstance(value, Candidates):
        key = tree[1] if tree[0] in ("ref", "basic") else tree[0]
        return value[key]
    return value


def _compose_record(values: dict[str, Any], record: str, version: int, revision: str) -> dict[str, Any]:
    rec = _ir.PROJECTIONS[version]["records"][record]
    out: dict[str, Any] = {}
    for f in rec["fields"]:
        if revision not in f["present_in"]:
            continue
        if f["const"] is not None:
            out[f["name"]] = f["const"]
        elif f["name"] in values:
            out[f["name"]] = _compose_value(_pick(values[f["name"]], f["tree"]), f["tree"], version, revision)
    return out


def _compose_value(value: Any, tree: list[Any], version: int, revision: str) -> Any:
    kind = tree[0]
    if kind == "ref" and tree[1] in _ir.PROJECTIONS[version]["records"]:
        return _compose_record(value, tree[1], version, revision)
    if kind == "list":
        return [_compose_value(_pick(v, tree[1]), tree[1], version, revision) for v in value]
    if kind in ("map", "intmap"):
        return {k: _compose_value(_pick(v, tree[1]), tree[1], version, revision) for k, v in value.items()}
    return value


def compose(values: dict[str, Any], version: int, style: str, revision: str | None = None) -> dict[str, Any]:
    """A plain document of ``version``/``style`` as writer ``revision`` (default: the last of
    the version) wrote it, from a superset of values keyed by key name at every level:
    keys the spec does not give that revision are left out, constants (``version``,
    ``style``) are filled in, and :class:`Candidates` pick the value for the type the
    version has. The version differences all come from the spec, so a migration can build
    any version's document from one set of values. Validate it with :func:`from_document`."""
    root = _root(version, style)
    revision = revision or _ir.PROJECTIONS[version]["revisions"][-1]
    if revision not in _ir.PROJECTIONS[version]["revisions"]:
        raise MlfError(f"revision {revision!r} did not write version {version}")
    return _compose_record(values, root["record"], version, revision)


# ----------------------------------------------------------------- revisions


@functools.cache
def _span(since: str | None, until: str | None) -> frozenset[str]:
    ids = [r["id"] for r in _timeline.REVISIONS]
    lo = ids.index(since) if since else 0
    hi = ids.index(until) if until else len(ids)
    return frozenset(ids[lo:hi])


def _admits(type_text: str, value: Any) -> bool:
    """Whether a revision's type of a field admits the value (only null-ness is told apart:
    the model already checked the rest)."""
    parts = [p.strip() for p in type_text.split("|")]
    if value is None:
        return "null" in parts or "any" in parts
    return parts != ["null"]


def consistent_revisions(md: Metadata) -> list[str]:
    """The writer revisions of ``md.version`` that could have written this document: every
    key it has existed in them (with a value their type allowed) and every key they always
    wrote is there. Empty when no single revision fits (keys of revisions that never coexisted)."""
    proj = _ir.PROJECTIONS[md.version]
    allowed = set(proj["revisions"])
    root = _root(md.version, md.style)
    allowed &= set(root["present_in"])
    by_class = {rec["class"]: name for name, rec in proj["records"].items()}

    plain = _plain()

    def visit(value: Any) -> None:
        nonlocal allowed
        model = _is_model(value)
        if model or isinstance(value, plain.PlainRecord):
            rname = by_class.get(type(value).__name__) if model else value.RECORD
            if rname is None:
                return
            rec = proj["records"][rname]
            allowed &= set(rec["present_in"])
            present = fields_set(value)
            for f in rec["fields"]:
                if f["ident"] in present:
                    v = getattr(value, f["ident"])
                    entries = [e for e in _ir.RECORDS[rname]["fields"] if e["name"] == f["name"]]
                    ok: set[str] = set()
                    for e in entries:
                        if _admits(e["type"], v):
                            ok |= _span(e.get("since"), e.get("until"))
                    allowed &= ok
                    visit(v)
                elif f["required_in"]:
                    allowed -= set(f["required_in"])
        elif isinstance(value, dict):
            for v in value.values():
                visit(v)
        elif isinstance(value, (list, tuple)):
            for v in value:
                visit(v)

    visit(md.document)
    return [r for r in proj["revisions"] if r in allowed]


__all__ = ["DATETIME_FORMAT", "LATEST", "STYLES", "VERSIONS", "Candidates", "Detection", "Metadata", "build",
           "check_document", "compose", "consistent_revisions", "datetime_valid", "declared_version", "detect", "dumps", "fields_set", "from_document",
           "json_options", "json_path", "load", "model_for", "models", "parse", "revisions", "spec", "style_of",
           "styles", "to_data", "unknown_keys", "validate_document"]
