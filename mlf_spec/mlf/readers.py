"""Will a TVM version read this MLF archive as it was meant? (``check --tvm VERSION``)

    >>> from mlf_spec.mlf import archive, readers
    >>> with archive.open("model.tar") as a:
    ...     readers.verdict(a, "0.12").to_dict()["verdict"]
    'loads'

Which code of apache/tvm reads MLF archives in which version, and what each needs, is data:
spec/tables/mlf_readers.yaml and spec/tables/mlf_reader_rules.yaml (each rule with its
commit). This module evaluates the rules' requirements; :data:`REQUIREMENTS` holds one test
per requirement name the rules use (a test checks that the sets are equal). The result has
the shape of spec/records/tvm_verdict.yaml, shared with the .params and blob checks. A
reader's rules are taken in table order and stop at the first ``rejects`` (where the reader
raises); ``misreads`` rules do not stop it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mlf_spec.errors import MlfError
from mlf_spec.generated import mlf_reader_rules_table as _rules
from mlf_spec.generated import mlf_readers_table as _readers
from mlf_spec.generated._fastlib import at_least

from . import archive as _archive
from . import metadata as _md

VERDICTS = ("loads", "misreads", "rejects")  # best to worst
_VERSION = re.compile(r"^v?[0-9]{1,4}\.[0-9]{1,4}")


def valid_version(text: str) -> bool:
    """Whether ``text`` names a TVM version (``0.12``, ``v0.12.0``, ``0.16.dev0``)."""
    return bool(_VERSION.match(text))


def _key(v: Any) -> tuple[int, ...]:
    return tuple(v) if isinstance(v, tuple) else tuple(int(p) for p in str(v).split("."))


def _active(row: dict[str, Any], version: str) -> bool:
    since, until = row.get("since"), row.get("until")
    return (since is None or at_least(version, since)) and (until is None or not at_least(version, until))


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
    for name, rec in f.modules.items():
        deps = rec.get("external_dependencies") if isinstance(rec, dict) else None
        for dep in deps if isinstance(deps, list) else []:
            spec = dep.get("version_spec") if isinstance(dep, dict) else None
            if isinstance(spec, str) and valid_version(spec) and _vkey(spec) != _vkey(version):
                return (f"module {name!r} was generated by TVM {spec} with its CRT in ./runtime", "./runtime")
    return (None, None)


def _vkey(v: str) -> tuple[int, int]:
    m = _VERSION.match(v)
    major, minor = m.group(0).lstrip("v").split(".") if m else ("0", "0")
    return int(major), int(minor)


#: requirement name (spec/tables/mlf_reader_rules.yaml) -> test(facts, argument, TVM
#: version) -> (why it fails or None, where).
REQUIREMENTS: dict[str, Callable[[Facts, str | None, str], tuple[str | None, str | None]]] = {
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


def _worst(verdicts: list[str]) -> str:
    return max(verdicts, key=VERDICTS.index) if verdicts else "rejects"


def verdict(a: _archive.Archive, version: str) -> dict[str, Any]:
    """The ``tvm`` object (spec/records/tvm_verdict.yaml) for TVM ``version``: each reader of
    that version with its verdict, the reasons (rules broken), the worst as the verdict. A
    version without readers (before 0.8, from 0.19) rejects with that reason."""
    facts = Facts.of(a)
    revision = None
    try:
        revs = _md.consistent_revisions(a.metadata)
        revision = revs[-1] if revs else None
    except MlfError:  # a deviating document has no revision; the verdict still stands
        revision = None
    readers = [r for r in _readers.ROWS if _active(r, version)]
    out: dict[str, Any] = {"version": version, "verdict": "rejects", "from": revision, "reasons": [], "readers": []}
    if not readers:
        first = ".".join(map(str, min(_key(r["since"]) for r in _readers.ROWS if r.get("since"))))
        last = ".".join(map(str, max(_key(r["until"]) for r in _readers.ROWS if r.get("until"))))
        out["reasons"].append({"reader": None, "verdict": "rejects", "rule": "no_reader", "where": None,
                               "message": f"TVM {version} has no MLF reader: tvmc and the microTVM templates read MLF "
                                          f"archives in the releases from {first} to before {last} (f717c5655c "
                                          "phased microTVM out)",
                               "commit": "f717c5655c" if at_least(version, last) else None})
        return out
    for r in readers:
        got: list[str] = []
        for rule in _rules.ROWS:
            if rule["reader"] != r["reader"] or not _active(rule, version):
                continue
            why, where = REQUIREMENTS[rule["requirement"]](facts, rule.get("argument"), version)
            if why is None:
                continue
            got.append(rule["verdict"])
            out["reasons"].append({"reader": r["reader"], "verdict": rule["verdict"], "rule": rule["rule"],
                                   "where": where, "message": f"{why}: {' '.join(rule['doc'].split())}",
                                   "commit": rule["commit"]})
            if rule["verdict"] == "rejects":
                break  # the reader raised here: its later rules are never reached
        out["readers"].append({"reader": r["reader"], "verdict": _worst(got) if got else "loads",
                               "general": r["general"],
                               "doc": f"{' '.join(r['doc'].split())} ({r['source']}, {r['commit']})"})
    counted = [x for x in out["readers"] if x["general"]] or out["readers"]
    out["verdict"] = _worst([x["verdict"] for x in counted])
    return out


def verdict_text(tvm: dict[str, Any]) -> str:
    """The text form: the verdict line, one line per reader, one per reason."""
    lines = [f"  TVM {tvm['version']}: {tvm['verdict']}"]
    for r in tvm.get("readers") or []:
        lines.append(f"    {r['reader']}: {r['verdict']}" + ("" if r.get("general", True) else " (not counted: a helper "
                                                                  "for one kind of model)"))
        for x in tvm["reasons"]:
            if x["reader"] == r["reader"]:
                lines.append(f"      {x['verdict']} ({x['rule']}, {x['commit']}): {x['message']}")
    if not tvm.get("readers"):
        lines += [f"    {x['message']}" for x in tvm["reasons"]]
    return "\n".join(lines) + "\n"


__all__ = ["REQUIREMENTS", "VERDICTS", "Facts", "valid_version", "verdict", "verdict_text"]
