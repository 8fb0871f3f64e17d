"""Conformance of an MLF archive to the metadata version it declares.

    >>> from mlf_spec import check
    >>> report = check.check("model.tar")
    >>> report.conformant, [f.code for f in report.findings]
    (True, [])

Every finding has a stable code from spec/findings/mlf_check.yaml (severity and meaning
come from there), the archive member and the field path it concerns, and a message. The
checks: metadata validity against the version's model (strict, every unknown key
reported), the layout of the version and style (required, unexpected, conditional members,
directories, order, names), and cross-checks between the parts (module names against file
names, codegen counters, params against graph input nodes, sids against graph shapes and
dtypes, main inputs/outputs against the graph, memory summary consistency, operator buffer
sizes, TIR files against targets, external dependencies).
"""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from mlf_spec import graph_json as _graph
from mlf_spec._records import Issue, json_path, load_json
from mlf_spec.errors import MlfError
from mlf_spec.generated.mlf_check_findings import FINDINGS
from mlf_spec.params import codec as _params

from . import _tar
from . import archive as _archive
from . import layout as _layout
from . import metadata as _md

SEVERITIES = ("error", "warning", "info")


@dataclass(frozen=True)
class Finding:
    """One finding: stable ``code``, ``severity`` (from the spec), ``member`` (stored
    name, or None for the archive as a whole), JSON ``path`` inside it, ``message``."""

    code: str
    severity: str
    member: str | None
    path: str
    message: str

    def to_dict(self) -> dict[str, Any]:
        """The JSON form used by ``mlf-spec check --json``."""
        return {"code": self.code, "severity": self.severity, "member": self.member, "path": self.path,
                "message": self.message}


@dataclass
class Report:
    """The result of a check."""

    path: str
    version: int | None
    style: str | None
    findings: list[Finding] = field(default_factory=list)

    @property
    def conformant(self) -> bool:
        """True when no finding has severity error."""
        return not any(f.severity == "error" for f in self.findings)

    def codes(self) -> list[str]:
        """The codes of the findings, in order."""
        return [f.code for f in self.findings]

    def to_dict(self) -> dict[str, Any]:
        """``{"path", "version", "style", "conformant", "findings": [...]}``."""
        return {"path": self.path, "version": self.version, "style": self.style, "conformant": self.conformant,
                "findings": [f.to_dict() for f in self.findings]}


class _Collector:
    def __init__(self) -> None:
        self.findings: list[Finding] = []

    def add(self, code: str, member: str | None, path: str, message: str) -> None:
        spec = FINDINGS[code]  # KeyError here is a bug: every code is declared in the spec
        self.findings.append(Finding(code, spec["severity"], member, path, message))


def check(source: Any, *, version: int | None = None, max_member_size: int = _archive.DEFAULT_MAX_MEMBER_SIZE,
          max_findings_per_code: int = 50, max_members: int = _archive.DEFAULT_MAX_MEMBERS,
          max_total_size: int = _archive.DEFAULT_MAX_TOTAL_SIZE) -> Report:
    """Check an archive (path to a tar or directory, bytes, or binary file object).
    ``version`` checks against that version instead of the declared one (a different
    declared version is an error finding). The size limits are those of
    :func:`mlf_spec.archive.open`. Raises MlfError when the input cannot be read at all
    (not a tar, unsafe members, a limit exceeded)."""
    name = source if isinstance(source, str) else (os.fspath(source) if isinstance(source, os.PathLike) else None)
    with _archive.open(source, max_member_size=max_member_size, max_members=max_members,
                       max_total_size=max_total_size) as a:
        report = check_archive(a, version=version)
    if name is not None:
        report.path = name
    counts: Counter[str] = Counter()
    kept = []
    for f in report.findings:
        counts[f.code] += 1
        if counts[f.code] <= max_findings_per_code:
            kept.append(f)
        elif counts[f.code] == max_findings_per_code + 1:
            kept.append(Finding(f.code, f.severity, None, "", f"more {f.code} findings were left out"))
    report.findings = kept
    return report


def check_archive(a: _archive.Archive, *, version: int | None = None) -> Report:
    """Check an opened archive (see :func:`check`)."""
    c = _Collector()
    report = Report(a.file, None, None, c.findings)
    _container_checks(a, c)
    meta = a.member(_archive.METADATA)
    if meta is None or meta.is_dir:
        c.add("metadata.missing", None, "", "the archive has no metadata.json at its root")
        return report
    mname = meta.name
    try:
        doc = load_json(meta.view(), None, "metadata.json")
    except MlfError as exc:
        c.add("metadata.json", mname, "", exc.message)
        return report
    if not isinstance(doc, dict):
        c.add("metadata.json", mname, "", f"metadata.json holds a JSON {type(doc).__name__}, not an object")
        return report
    det = _md.detect(doc)
    if version is not None:
        if version not in _md.VERSIONS:
            raise MlfError(f"no MLF metadata version {version}; known: {list(_md.VERSIONS)}")
        if det.declared != version:
            c.add("metadata.version-mismatch", mname, "version",
                  f"the document declares version {det.declared!r}, checked against version {version}")
        v = version
    elif det.version is None:
        where = "missing" if "version" not in doc else f"{det.declared!r} is not a known version"
        c.add("metadata.version", mname, "version", f"version {where}; known: {list(_md.VERSIONS)}")
        if not det.fits:
            return report
        v = det.fits[-1][0]
        c.add("metadata.shape", mname, "", "the document fits version(s) "
              + ", ".join(f"{fv} ({fs})" for fv, fs in det.fits) + f"; checking as version {v}")
    else:
        v = det.version
    style = _md.style_of(doc, v)
    report.version, report.style = v, style
    typed, issues = _md.check_document(doc, v, style)
    for i in issues:
        c.add("metadata.unknown-key" if i.kind == "unknown-key" else "metadata.schema", mname, i.path, i.message)
    schema_ok = not [i for i in issues if i.kind != "unknown-key"]
    if not schema_ok and version is None and det.fits and (v, style) not in det.fits:
        c.add("metadata.shape", mname, "", f"declares version {v} but fits version(s) "
              + ", ".join(f"{fv} ({fs})" for fv, fs in det.fits))
    md = _md.Metadata(v, style, typed, raw=meta.read()) if typed is not None else None
    modules = md.modules if md is not None else _raw_modules(doc, style)
    if md is not None:
        _datetime_checks(md, mname, c)
        if not issues and md.dumps() != meta.read():
            c.add("metadata.format", mname, "", _format_difference(meta.read(), md.dumps(), style))
    placements = _layout_checks(a, v, style, modules, c)
    if md is None:
        return report
    _revision_check(a, md, placements, mname, c)
    if style == "operator":
        _operator_checks(a, md, placements, mname, c)
    else:
        _module_checks(a, md, placements, mname, c)
    return report


# ----------------------------------------------------------------- container


def _container_checks(a: _archive.Archive, c: _Collector) -> None:
    if a.compression:
        c.add("layout.compressed", None, "", f"the archive is {a.compression}-compressed")
    if a.container != "tar":
        return
    if a.members and a.members[0].path != ".":
        c.add("layout.root", a.members[0].name, "", "the first member is not '.'")
    unprefixed = [m.name for m in a.members if m.path != "." and not m.name.startswith(_layout.TAR["prefix"])]
    if unprefixed:
        c.add("layout.prefix", unprefixed[0], "", f"{len(unprefixed)} member name(s) lack the "
              f"'{_layout.TAR['prefix']}' prefix, e.g. {unprefixed[0]!r}")
    paths = {m.path: m for m in a.members}
    for m in a.members:
        if "/" not in m.path:
            continue
        parent = m.path.rsplit("/", 1)[0]
        group = _layout.GROUP_INFO.get(m.group, {})
        if parent not in paths and group.get("directories", True):
            c.add("layout.directory", m.name, "", f"its directory {parent!r} is not a member")
    order = _layout.tvm_order((m.path, m.group) for m in a.members)
    actual = [m.path for m in a.members]
    if order != actual:
        i = next(k for k, (x, y) in enumerate(zip(order, actual)) if x != y)
        c.add("layout.order", a.members[i].name, "", f"member {i} is {actual[i]!r}; the writer's order has {order[i]!r}")


# ----------------------------------------------------------------- metadata


def _raw_modules(doc: dict[str, Any], style: str) -> dict[str, Any]:
    mods = doc.get("modules")
    if isinstance(mods, dict):
        return {str(k): v for k, v in mods.items() if isinstance(v, dict)}
    name = doc.get("model_name")
    return {name: doc} if isinstance(name, str) else {}


def _module_path(md: _md.Metadata, name: str) -> tuple:
    return ("modules", name) if getattr(md.document, "modules", None) is not None else ()


def _datetime_checks(md: _md.Metadata, member: str, c: _Collector) -> None:
    for name, rec in md.modules.items():
        value = getattr(rec, "export_datetime", None)
        if isinstance(value, str) and not _md.datetime_valid(value):
            c.add("metadata.datetime", member, json_path(_module_path(md, name) + ("export_datetime",)),
                  f"{value!r} is not a date and time")


def _format_difference(actual: bytes, expected: bytes, style: str) -> str:
    n = next((i for i, (x, y) in enumerate(zip(actual, expected)) if x != y), min(len(actual), len(expected)))
    return (f"differs from TVM's {style} json.dump at byte {n} (expected {expected[n:n + 20]!r}, "
            f"found {actual[n:n + 20]!r})")


def _revision_check(a: _archive.Archive, md: _md.Metadata, placements: dict[str, Any], member: str,
                    c: _Collector) -> None:
    revs = set(_md.consistent_revisions(md))
    doc_revs = set(revs)
    for p in placements.values():
        if p is not None:
            revs &= set(p.present_in)
    if not revs:
        layout_revs = set(_md.spec(md.version)["revisions"])
        for p in placements.values():
            if p is not None:
                layout_revs &= set(p.present_in)
        c.add("metadata.revision", member, "", "no single writer revision of version "
              f"{md.version} wrote all of it: the metadata fits {sorted(doc_revs) or 'none'}, "
              f"the members fit {sorted(layout_revs) or 'none'}")


# ----------------------------------------------------------------- layout


def _layout_checks(a: _archive.Archive, version: int, style: str, modules: dict[str, Any],
                   c: _Collector) -> dict[str, _layout.Placement | None]:
    names = list(modules)
    placements: dict[str, _layout.Placement | None] = {}
    try:
        conds = _layout.conditions(version, modules)
    except Exception:  # a malformed document; conditions are then unknown
        conds = None
    for m in a.members:
        p = _layout.classify(m.path, version, style, names)
        placements[m.path] = p
        if p is None:
            others = [v for v in _layout.versions_matching(m.path, style) if v != version]
            hint = f" (a path of version(s) {', '.join(map(str, others))})" if others else ""
            c.add("layout.unexpected", m.name, "", f"no {style} path of version {version} matches{hint}")
            continue
        if p.unknown_module is not None:
            c.add("layout.module", m.name, "", f"named after module {p.unknown_module!r}, which the metadata "
                  f"does not have (modules: {', '.join(map(repr, names))})")
        want_dir = p.kind == "directory"
        if want_dir != m.is_dir and p.kind != "opaque":
            c.add("layout.kind", m.name, "", f"is a {'directory' if m.is_dir else 'file'}; the layout has a "
                  f"{'directory' if want_dir else p.kind + ' file'} here")
        if conds is not None and p.entry.get("when") and not _layout.holds(p.entry, conds, p.module):
            c.add("layout.conditional", m.name, "", f"written only when {p.entry['when']} holds, which it does not")
    if conds is None:
        return placements
    present = set(placements)
    for e, path, module in _layout.expected(version, style, modules):
        if "{" in path:
            if not any(re.match(e["regex"], p) for p in present):
                c.add("layout.missing", None, "", f"no member matches {path!r} ({e['kind']})")
        elif path not in present:
            label = _layout.TAR["prefix"] + path if path != "." else path
            c.add("layout.missing", label, "", f"required {e['kind']} is absent" + (f" (module {module!r})" if module else ""))
    counters: dict[tuple[str, str | None], list[tuple[int, str]]] = {}
    for path, p in placements.items():
        if p is None:
            continue
        for ph, value in p.values.items():
            if _layout.ROLES.get(ph) == "counter":
                # one counter per module and content kind (sources, objects), whatever the
                # extension: lib0.cc and lib1.c of one module are one sequence (cc5382ed41)
                counters.setdefault((p.kind, p.module), []).append((int(value), path))
    for (eid, module), items in counters.items():
        ns = sorted(n for n, _ in items)
        if ns != list(range(len(ns))):
            missing = sorted(set(range(max(ns) + 1)) - set(ns))
            dup = [n for n, k in Counter(ns).items() if k > 1]
            c.add("codegen.counter", _layout.TAR["prefix"] + sorted(items)[-1][1], "",
                  f"counters of {eid}" + (f" for module {module!r}" if module else "") + f" are {ns}"
                  + (f"; missing {missing}" if missing else "") + (f"; repeated {dup}" if dup else ""))
    if style != "operator":
        for name in names:
            has = any(p is not None and p.module == name and p.kind in ("c_source", "object_file")
                      for p in placements.values())
            if not has:
                c.add("codegen.none", None, "", f"module {name!r} has no generated source or object file")
    return placements


# ----------------------------------------------------------------- full-model modules


def _files(placements: dict[str, Any], module: str, kind: str) -> list[str]:
    return [p for p, pl in placements.items() if pl is not None and pl.module == module and pl.kind == kind]


def _module_checks(a: _archive.Archive, md: _md.Metadata, placements: dict[str, Any], mname: str,
                   c: _Collector) -> None:
    for name, rec in md.modules.items():
        base = _module_path(md, name)
        graph = None
        gpaths = _files(placements, name, "graph_json")
        if gpaths:
            graph = _graph_checks(a.member(gpaths[0]), c)  # type: ignore[arg-type]
        lazy = None
        ppaths = _files(placements, name, "params")
        if ppaths:
            pm = a.member(ppaths[0])
            try:
                lazy = _params.open(pm.view())  # type: ignore[union-attr]
            except MlfError as exc:
                c.add("params.unreadable", pm.name, exc.field or "", exc.message  # type: ignore[union-attr]
                      + (f" (offset {exc.offset})" if exc.offset is not None else ""))
        for kind in ("relay_text", "tir_text"):
            for p in _files(placements, name, kind):
                try:
                    a.member(p).read().decode("utf-8")  # type: ignore[union-attr]
                except UnicodeDecodeError as exc:
                    c.add("text.encoding", a.member(p).name, "", f"not UTF-8 at byte {exc.start}")  # type: ignore[union-attr]
        executors = getattr(rec, "executors", None) or getattr(rec, "runtimes", None) or []
        is_graph = "graph" in executors
        try:
            if graph is not None and lazy is not None:
                _params_vs_graph(lazy, graph, a.member(ppaths[0]).name, c)  # type: ignore[union-attr]
            _sids_checks(md, rec, base, graph, is_graph, mname, c)
            _memory_checks(rec, base, graph, mname, c)
        finally:
            if lazy is not None:
                lazy.close()
        for i, dep in enumerate(getattr(rec, "external_dependencies", None) or []):
            if dep.url_type == "mlf_path":
                try:
                    target = _tar.normalize(dep.url, file=None, offset=None)
                except MlfError:
                    target = None
                if target is None or target not in a._by_path:
                    c.add("dependency.missing", mname, json_path(base + ("external_dependencies", i, "url")),
                          f"{dep.short_name} at {dep.url!r} is not in the archive")


def _graph_checks(m: _archive.Member, c: _Collector) -> _graph.GraphDocument | None:
    try:
        data = load_json(m.view(), None, "graph JSON")
    except MlfError as exc:
        c.add("graph.json", m.name, "", exc.message)
        return None
    g, issues = _graph.check_document(data)
    for i in issues:
        c.add("graph.unknown-key" if i.kind == "unknown-key" else "graph.schema", m.name, i.path, i.message)
    if g is None or [i for i in issues if i.kind != "unknown-key"]:
        return None
    structure = _graph.structure_issues(g)
    for i in structure:
        c.add("graph.structure", m.name, i.path, i.message)
    return None if structure else g


def _params_vs_graph(lazy: _params.LazyParams, g: _graph.GraphDocument, member: str, c: _Collector) -> None:
    inputs = set(g.input_names())
    for info in lazy.index:
        if info.name not in inputs:
            c.add("params.not-in-graph", member, info.name, f"parameter {info.name!r} is not a graph input node "
                  f"(inputs: {', '.join(sorted(inputs)) or 'none'})")
            continue
        eid = g.input_entry(info.name)
        shape, dtype = g.entry_shape(eid), g.entry_dtype(eid)  # type: ignore[arg-type]
        if list(info.shape) != shape:
            c.add("params.shape", member, info.name, f"shape {list(info.shape)} differs from the graph's {shape}")
        elif info.dtype.known and info.dtype.name != dtype:
            c.add("params.shape", member, info.name, f"dtype {info.dtype.name} differs from the graph's {dtype}")


def _sids_checks(md: _md.Metadata, rec: Any, base: tuple, g: _graph.GraphDocument | None, is_graph: bool,
                 member: str, c: _Collector) -> None:
    memory = rec.memory
    if isinstance(memory, list):  # version 1: the list itself
        sids, where = memory, base + ("memory",)
        present = bool(memory) or is_graph
    else:
        sids, where = memory.sids, base + ("memory", "sids")
        present = sids is not None
    if is_graph and not present:
        c.add("sids.presence", member, json_path(where), "a graph-executor module has no sids")
        return
    if not is_graph and present and (not isinstance(memory, list) or memory):
        c.add("sids.presence", member, json_path(where), "an AOT module has sids")
        return
    if not is_graph or g is None:
        return
    try:
        want = _graph.sid_map(g)
    except MlfError as exc:
        c.add("sids.mismatch", member, json_path(where), f"the writer could not derive sids from the graph: {exc.message}")
        return
    have = [_md._recordlib.to_data(s) for s in sids]
    for i in range(max(len(want), len(have))):
        w = want[i] if i < len(want) else None
        h = have[i] if i < len(have) else None
        if w != h:
            c.add("sids.mismatch", member, json_path(where + (i,)),
                  f"is {h} but the graph gives {w}" if h is not None else f"missing: the graph gives {w}")


def _memory_checks(rec: Any, base: tuple, g: _graph.GraphDocument | None, member: str, c: _Collector) -> None:
    memory = rec.memory
    if isinstance(memory, list):
        return
    fn = memory.functions
    where = base + ("memory", "functions")
    devices = Counter(e.device for e in fn.main)
    for d, k in devices.items():
        if k > 1:
            c.add("memory.device", member, json_path(where + ("main",)), f"device {d} appears {k} times")
    op_max: dict[int, int] = {}
    for f in fn.operator_functions:
        for w in f.workspace:
            op_max[w.device] = max(op_max.get(w.device, 0), w.workspace_size_bytes)
    for i, e in enumerate(fn.main):
        p = where + ("main", i)
        if e.workspace_size_bytes < op_max.get(e.device, 0):
            c.add("memory.workspace", member, json_path(p + ("workspace_size_bytes",)),
                  f"{e.workspace_size_bytes} is less than an operator function's {op_max[e.device]} on device {e.device}")
        inputs, outputs = getattr(e, "inputs", None), getattr(e, "outputs", None)
        if inputs is not None and outputs is not None:
            total = sum(t.size for t in inputs.values()) + sum(t.size for t in outputs.values())
            if total != e.io_size_bytes:
                c.add("memory.io-size", member, json_path(p + ("io_size_bytes",)),
                      f"{e.io_size_bytes} differs from the inputs and outputs, which add up to {total}")
        if g is None:
            continue
        for name, t in (inputs or {}).items():
            eid = g.input_entry(name)
            tp = json_path(p + ("inputs", name))
            if eid is None:
                c.add("memory.io-graph", member, tp, f"input {name!r} is not a graph input node")
                continue
            _tensor_vs_graph(t, g, eid, tp, member, c)
        outs = list((outputs or {}).items())
        heads = g.output_entries()
        if len(outs) == 1 and len(heads) == 1:
            _tensor_vs_graph(outs[0][1], g, heads[0], json_path(p + ("outputs", outs[0][0])), member, c)
        elif outs and len(outs) == len(heads):
            want = sorted((g.entry_dtype(h), _graph.nbytes(g.entry_shape(h), g.entry_dtype(h))) for h in heads)
            have = sorted((t.dtype, t.size) for _, t in outs)
            if want != have:
                c.add("memory.io-graph", member, json_path(p + ("outputs",)),
                      f"outputs {have} differ from the graph heads {want}")
        elif outs:
            c.add("memory.io-graph", member, json_path(p + ("outputs",)),
                  f"{len(outs)} outputs for {len(heads)} graph heads")


def _tensor_vs_graph(t: Any, g: _graph.GraphDocument, eid: int, path: str, member: str, c: _Collector) -> None:
    dtype = g.entry_dtype(eid)
    size = _graph.nbytes(g.entry_shape(eid), dtype)
    if t.dtype != dtype:
        c.add("memory.io-graph", member, path, f"dtype {t.dtype} differs from the graph's {dtype}")
    elif size is not None and t.size != size:
        c.add("memory.io-graph", member, path, f"size {t.size} differs from the graph's {size} "
              f"(shape {g.entry_shape(eid)}, {dtype})")


# ----------------------------------------------------------------- operator


def _operator_checks(a: _archive.Archive, md: _md.Metadata, placements: dict[str, Any], mname: str,
                     c: _Collector) -> None:
    doc = md.document
    for fname, bufs in doc.memory.items():
        for i, b in enumerate(bufs):
            size = _graph.nbytes(list(b.shape), b.dtype)
            if size is not None and size != b.size_bytes:
                c.add("operator.buffer-size", mname, json_path(("memory", fname, i, "size_bytes")),
                      f"{b.size_bytes} differs from {size} (shape {list(b.shape)}, {b.dtype})")
    tirs = {pl.values.get("device_type") for p, pl in placements.items() if pl is not None and pl.kind == "tir_text"}
    tirs.discard(None)
    if isinstance(doc.target, dict):
        if set(doc.target) != tirs:
            c.add("operator.tir", mname, "target", f"target device types {sorted(doc.target)} but TIR files for "
                  f"{sorted(tirs)}")
    elif tirs and len(tirs) > len(doc.target):
        c.add("operator.tir", mname, "target", f"{len(tirs)} TIR files for {len(doc.target)} target(s)")
    for p, pl in placements.items():
        if pl is not None and pl.kind == "tir_text":
            try:
                a.member(p).read().decode("utf-8")  # type: ignore[union-attr]
            except UnicodeDecodeError as exc:
                c.add("text.encoding", a.member(p).name, "", f"not UTF-8 at byte {exc.start}")  # type: ignore[union-attr]


__all__ = ["Finding", "Issue", "Report", "SEVERITIES", "check", "check_archive"]
