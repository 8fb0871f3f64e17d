"""Will a TVM version read this MLF archive as it was meant? (``check --tvm VERSION``)

    >>> from mlf_spec.mlf import archive, readers
    >>> with archive.open("model.tar") as a:
    ...     readers.verdict(a, "0.12").verdict
    'loads'

Which code of apache/tvm reads MLF archives in which version, and what each needs, is data:
spec/verdicts/mlf_read_rules.yaml (the readers, and the rules with their commits), evaluated
by the verdict engine of the .params and blob checks (:mod:`mlf_spec.verdict.engine`: a
reader's rules are taken in order and stop at the first ``rejects``, where the reader
raises). This module holds the tests the rules require of the ``archive`` subject:
:data:`REQUIREMENTS`, one per test the spec declares (the engine checks that the sets are
equal). The result is a :class:`~mlf_spec.verdict.Verdict` (spec/records/tvm_verdict.yaml).
"""

from __future__ import annotations

import json
from typing import Any

from mlf_spec import versions as _versions
from mlf_spec._internal.lean_dataclass import dataclass, field
from mlf_spec.errors import MlfError
from mlf_spec.verdict import engine as _verdict

from . import archive as _archive
from . import metadata as _md


@dataclass
class Facts:
    """What the requirements look at, read once from the archive: ``compression``,
    ``names`` (stored member names), ``paths`` (member paths), ``document`` (metadata.json
    parsed, or None), ``modules`` (module name -> its record as plain data: the values of a
    version 7 ``modules``, or the flat document under its model_name) and the ``files``
    (paths of the file members)."""

    compression: str | None
    names: set[str]
    paths: set[str]
    document: Any
    modules: dict[str, Any]
    files: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, a: _archive.Archive) -> Facts:
        """The facts of an opened archive (never raises for what the archive holds)."""
        doc = None
        meta = a.member(_archive.METADATA)
        if meta is not None and not meta.is_dir:
            try:
                doc = json.loads(bytes(meta.view()).decode("utf-8"))
            except (UnicodeDecodeError, ValueError, RecursionError):
                doc = None
        modules: dict[str, Any] = {}
        if isinstance(doc, dict):
            mods = doc.get("modules")
            if isinstance(mods, dict):
                modules = {str(k): v for k, v in mods.items()}
            elif isinstance(doc.get("model_name"), str):
                modules = {doc["model_name"]: doc}
        return cls(a.compression, {m.name for m in a.members}, {m.path for m in a.members}, doc, modules,
                   [m.path for m in a.members if not m.is_dir])

    def under(self, directory: str) -> list[str]:
        """File members below ``directory`` (what a template's glob sees)."""
        return [p for p in self.files if p.startswith(directory.rstrip("/") + "/")]


def _lookup(value: Any, path: str) -> tuple[bool, Any]:
    """Follow a dotted key path (numbers index lists); (found, value)."""
    for part in path.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return False, None
    return True, value


def _path_test(value: Any, arg: str) -> str | None:
    path, _, want = arg.partition("=")
    found, got = _lookup(value, path)
    if not found:
        return f"no `{path}`"
    if want and got != want:
        return f"`{path}` is {json.dumps(got)}, not {json.dumps(want)}"
    return None


def _is_graph(rec: Any) -> bool:
    if not isinstance(rec, dict):
        return False
    ex = rec.get("executors", rec.get("runtimes"))
    return isinstance(ex, list) and "graph" in ex


def _members(arg: str, f: Facts, modules: list[str] | None = None) -> list[str]:
    """Paths of ``arg`` that are missing (``{model}`` for every module given)."""
    names = list(f.modules) if modules is None else modules
    paths = [arg.replace("{model}", m) for m in names] if "{model}" in arg else [arg]
    return [p for p in paths if p not in f.paths]


def _uncompressed(f: Facts, arg: str | None, version: str) -> tuple[str | None, str | None]:
    return (None, None) if f.compression is None else (f"the archive is {f.compression}-compressed", None)


def _member(f: Facts, arg: str | None, version: str) -> tuple[str | None, str | None]:
    assert arg is not None
    if "{model}" in arg and not f.modules:
        return (f"no module names to find {arg} by", None)
    missing = _members(arg, f)
    return (f"./{missing[0]} is not in the archive", f"./{missing[0]}") if missing else (None, None)


def _member_for_graph(f: Facts, arg: str | None, version: str) -> tuple[str | None, str | None]:
    assert arg is not None
    graphs = [n for n, rec in f.modules.items() if _is_graph(rec)]
    if "{model}" not in arg:
        graphs = graphs[:1]
    missing = _members(arg, f, graphs) if graphs else []
    return (f"./{missing[0]} is not in the archive (graph executor)", f"./{missing[0]}") if missing else (None, None)


def _exact_name(f: Facts, arg: str | None, version: str) -> tuple[str | None, str | None]:
    assert arg is not None
    return (None, None) if arg in f.names else (f"no member is stored as {arg!r}", None)


def _document_path(f: Facts, arg: str | None, version: str) -> tuple[str | None, str | None]:
    assert arg is not None
    if not isinstance(f.document, dict):
        return ("metadata.json is missing or not a JSON object", "./metadata.json")
    why = _path_test(f.document, arg)
    return (f"metadata.json has {why}", "./metadata.json") if why else (None, None)


def _module_path(f: Facts, arg: str | None, version: str) -> tuple[str | None, str | None]:
    assert arg is not None
    if not isinstance(f.document, dict) or not isinstance(f.document.get("modules"), dict):
        return (None, None)  # the reader failed on `modules` already (its own rule)
    for name, rec in f.modules.items():
        why = _path_test(rec, arg)
        if why:
            return (f"module {name!r} has {why}", f"modules.{name}")
    return (None, None)


def _single_module(f: Facts, arg: str | None, version: str) -> tuple[str | None, str | None]:
    mods = f.document.get("modules") if isinstance(f.document, dict) else None
    if isinstance(mods, dict) and len(mods) != 1:
        return (f"{len(mods)} modules ({', '.join(map(repr, mods))})", "./metadata.json")
    return (None, None)


def _c_sources_only(f: Facts, arg: str | None, version: str) -> tuple[str | None, str | None]:
    assert arg is not None
    other = [p for p in f.under(arg) if not p.endswith(".c")]
    return (f"{len(other)} source(s) that are not .c, e.g. ./{other[0]}", f"./{other[0]}") if other else (None, None)


def _no_objects(f: Facts, arg: str | None, version: str) -> tuple[str | None, str | None]:
    assert arg is not None
    objects = f.under(arg)
    return (f"{len(objects)} object file(s), e.g. ./{objects[0]}", f"./{objects[0]}") if objects else (None, None)


def _same_crt(f: Facts, arg: str | None, version: str) -> tuple[str | None, str | None]:
    """The CRT the archive's code was generated for (external_dependencies version_spec:
    the writer's tvm.__version__) against the reading TVM's own CRT, which the templates
    compile instead of ./runtime."""
    reading = _versions.parse(version)
    for name, rec in f.modules.items():
        deps = rec.get("external_dependencies") if isinstance(rec, dict) else None
        for dep in deps if isinstance(deps, list) else []:
            spec = dep.get("version_spec") if isinstance(dep, dict) else None
            written = _versions.parse(spec) if isinstance(spec, str) else None
            if written is not None and written != reading:
                return (f"module {name!r} was generated by TVM {spec} with its CRT in ./runtime", "./runtime")
    return (None, None)


#: test name (spec/verdicts/mlf_read_rules.yaml, subject archive) -> test(facts, argument,
#: TVM version) -> (why it fails or None, where).
REQUIREMENTS: dict[str, _verdict.Test] = {
    "uncompressed": _uncompressed,
    "member": _member,
    "member_for_graph": _member_for_graph,
    "exact_name": _exact_name,
    "document_path": _document_path,
    "module_path": _module_path,
    "single_module": _single_module,
    "c_sources_only": _c_sources_only,
    "no_objects": _no_objects,
    "same_crt": _same_crt,
}


def verdict(a: _archive.Archive, version: str) -> _verdict.Verdict:
    """The verdict of TVM ``version``'s readers (``0.12``, ``v0.11.1``, ``0.16.dev0``) on an
    archive: each reader of that version with its verdict, the reasons (rules broken), the
    worst of the general readers as the verdict. A version without readers (before 0.8,
    from 0.19) rejects with that reason. UnsupportedError for a text that names no TVM version
    the spec describes (:func:`mlf_spec.versions.known`, as every ``--tvm`` is checked)."""
    reader = _versions.known(version)
    revision = None
    try:
        revs = _md.consistent_revisions(a.metadata)
        revision = revs[-1] if revs else None
    except MlfError:  # a deviating document has no revision; the verdict still stands
        revision = None
    ev = _verdict.Evaluator(reader, None, _verdict.rules(_verdict.MLF_READ_RULES), REQUIREMENTS, version)
    v = ev.read([_verdict.Part("archive", Facts.of(a))], revision, "detected" if revision else "unknown")
    if revision:
        v.writer_text = writer_label(revision)  # the text names TVM versions; the JSON keeps the revision id
    return v


def writer_label(revision: str) -> str:
    """The TVM versions that write metadata revision ``revision`` (spec/mlf revisions), as a
    user names them: 'TVM 0.12 or later, metadata revision v7.templates', or for a revision
    no release wrote, 'a TVM development build after 0.11, metadata revision v7.null_binding'."""
    revs = _md.revisions()
    ids = [r["id"] for r in revs]
    if revision not in ids:
        return f"metadata revision {revision}"
    i = ids.index(revision)
    rel = revs[i]["release"]
    if rel:
        later = [r["release"] for r in revs[i + 1:] if r["release"]]
        start = _versions.label(rel)
        if later:
            nxt = _versions.required(later[0])
            end = _versions.label((nxt[0], nxt[1] - 1))
            span = f"TVM {start}" if end == start else f"TVM {start} to {end}"
        else:
            span = f"TVM {start} or later"
        return f"{span}, metadata revision {revision}"
    before = [r["release"] for r in revs[:i] if r["release"]]
    later = [r["release"] for r in revs[i + 1:] if r["release"]]
    when = f" after {_versions.label(before[-1])}" if before else (f" before {_versions.label(later[0])}" if later
                                                                   else "")
    return f"a TVM development build{when}, metadata revision {revision}"


__all__ = ["REQUIREMENTS", "Facts", "verdict"]
