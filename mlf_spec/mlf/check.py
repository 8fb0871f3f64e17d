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
from typing import Any

from mlf_spec import findings as _findings
from mlf_spec import tar as _tar
from mlf_spec._internal.lean_dataclass import dataclass
from mlf_spec._io import FileSpan
from mlf_spec._records import Issue, json_path, load_json
from mlf_spec.errors import MlfError
from mlf_spec.findings import Finding
from mlf_spec.generated.mlf_check_findings import FINDINGS
from mlf_spec.graph import codec as _graph
from mlf_spec.params import codec as _params

from . import archive as _archive
from . import layout as _layout
from . import memory as _memory
from . import metadata as _md

SEVERITIES = ("error", "warning", "info")


@dataclass(kw_only=True)
class Report(_findings.Report):
    """The check of an archive: the metadata ``version`` and ``style`` it was checked
    against (None when they could not be told), the findings and, with ``tvm=``, the
    verdict of that TVM version's readers."""

    version: int | None = None
    style: str | None = None
    kind: str = "mlf-archive"  #: the ``kind`` of the JSON form, as every check report has

    @property
    def heading(self) -> str:
        """``MLF archive, version 7, full-model``: the kind first, as every check's first line says it."""
        return "MLF archive, " + self._version_text

    @property
    def _version_text(self) -> str:
        return f"version {self.version}, {self.style}" if self.version is not None else "version unknown"

    def to_dict(self) -> dict[str, Any]:
        """``{"path", "kind", "version", "style", "conformant", "findings": [...]}`` (and ``tvm``)."""
        out = {"path": self.path, "kind": self.kind, "version": self.version, "style": self.style, "conformant": self.conformant,
               "findings": [f.to_dict() for f in self.findings]}
        if self.tvm is not None:
            out["tvm"] = self.tvm.to_dict()
        return out


def _collector() -> _findings.Collector:
    return _findings.Collector(FINDINGS, limit=None)  # check() applies its own limit to the whole report


def check(source: Any, *, version: int | None = None, max_member_size: int = _archive.DEFAULT_MAX_MEMBER_SIZE,
          max_findings_per_code: int = 50, max_members: int = _archive.DEFAULT_MAX_MEMBERS,
          max_total_size: int = _archive.DEFAULT_MAX_TOTAL_SIZE, tvm: str | None = None,
          mapped: bool = True) -> Report:
    """Check an archive (path to a tar or directory, bytes, or binary file object).
    ``version`` checks against that version instead of the declared one (a different
    declared version is an error finding); ``tvm`` adds the verdict of that TVM version's
    readers (``report.tvm``, see :mod:`mlf_spec.mlf.readers`). The size limits are those of
    :func:`mlf_spec.archive.open`. Raises MlfError when the input cannot be read at all
    (not a tar, unsafe members, a limit exceeded), UnsupportedError before reading for a
    ``tvm`` that names no TVM version the spec describes. ``mapped=False`` never maps the
    file (see :func:`mlf_spec.archive.open`): the members the check reads (metadata, graph
    JSON, params: one at a time) are copies read by pread, and a file that another process
    truncates meanwhile is an MlfError, not SIGBUS."""
    if tvm is not None:
        from mlf_spec import versions as _versions

        _versions.known(tvm)
    name = source if isinstance(source, str) else (os.fspath(source) if isinstance(source, os.PathLike) else None)
    with _archive.open(source, max_member_size=max_member_size, max_members=max_members,
                       max_total_size=max_total_size, mapped=mapped) as a:
        report = check_archive(a, version=version)
        if tvm is not None:
            from . import readers as _readers

            report.tvm = _readers.verdict(a, tvm)
    if name is not None:
        report.path = name
    report.findings = _findings.limited(report.findings, max_findings_per_code)
    return report


@dataclass
class MetadataReading:
    """metadata.json read as far as it goes: the ``member`` name, the parsed ``document``
    (None when it is missing or not a JSON object), the ``version`` and ``style`` it is
    read as (declared, or the latest version whose model it fits; None when neither tells),
    the typed ``metadata`` when the document fits that model (unknown keys aside), its
    ``modules`` (typed records, or plain dicts of a deviating document) and the
    ``findings`` (metadata.* codes) that say where it departs from the model."""

    member: str | None
    document: Any
    version: int | None
    style: str | None
    metadata: _md.Metadata | None
    modules: dict[str, Any]
    findings: list[Finding]


def read_metadata(a: _archive.Archive, *, version: int | None = None) -> MetadataReading:
    """Read an archive's metadata.json as far as it goes (see :class:`MetadataReading`);
    ``version`` reads it as that version (a different declared version is a finding). Never
    raises for what the document holds; MlfError only for an unknown ``version`` argument."""
    meta = a.member(_archive.METADATA)
    if meta is None or meta.is_dir:
        c = _collector()
        c.add("metadata.missing", "", "the archive has no metadata.json at its root")
        return MetadataReading(None, None, None, None, None, {}, c.findings)
    return _read_metadata_member(meta, meta.name, version)


class _BareMember:
    """A bare metadata.json document as the one member read_metadata looks at."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def view(self) -> memoryview:
        return memoryview(self.data)

    def read(self) -> bytes:
        return self.data


def check_metadata(source: Any, *, version: int | None = None, name: str | None = None) -> Report:
    """Check a bare metadata.json document (a path, bytes or binary file object) against
    the model of the version it declares (or ``version``): the metadata.* findings of an
    archive's check, without the layout and the members it describes."""
    from mlf_spec._io import describe, read_source

    label = name or describe(source)
    with read_source(source, mapped=False) as (buf, _size, _fd):
        data = bytes(buf)
    reading = _read_metadata_member(_BareMember(data), None, version)
    return MetadataReport(label, reading.findings, version=reading.version, style=reading.style)


@dataclass(kw_only=True)
class MetadataReport(Report):
    """The check of a bare metadata.json document."""

    kind: str = "mlf-metadata"

    @property
    def heading(self) -> str:
        """``metadata.json of version 7, full-model``."""
        return "metadata.json of " + self._version_text


def _read_metadata_member(meta: Any, mname: str | None, version: int | None) -> MetadataReading:
    c = _collector()
    reading = MetadataReading(mname, None, None, None, None, {}, c.findings)
    try:
        doc = load_json(meta.view(), None, "metadata.json")
    except MlfError as exc:
        c.add("metadata.json", "", exc.message, member=mname)
        return reading
    if not isinstance(doc, dict):
        c.add("metadata.json", "", f"metadata.json holds a JSON {type(doc).__name__}, not an object", member=mname)
        return reading
    reading.document = doc
    # shape-based detection validates against every version's model: only when needed
    det = _md.detect(doc, shapes=False)
    if version is not None:
        if version not in _md.VERSIONS:
            raise MlfError(f"no MLF metadata version {version}; known: {list(_md.VERSIONS)}")
        if det.declared != version:
            c.add("metadata.version-mismatch", "version", f"the document declares version {det.declared!r}, checked against version {version}", member=mname)
        v = version
    elif det.version is None:
        det = _md.detect(doc)
        where = "missing" if "version" not in doc else f"{det.declared!r} is not a known version"
        c.add("metadata.version", "version", f"version {where}; known: {list(_md.VERSIONS)}", member=mname)
        if not det.fits:
            return reading
        v = det.fits[-1][0]
        c.add("metadata.shape", "", "the document fits version(s) "
              + ", ".join(f"{fv} ({fs})" for fv, fs in det.fits) + f"; checking as version {v}", member=mname)
    else:
        v = det.version
    style = _md.style_of(doc, v)
    reading.version, reading.style = v, style
    typed, issues = _md.check_document(doc, v, style)
    for i in issues:
        c.add("metadata.unknown-key" if i.kind == "unknown-key" else "metadata.schema", i.path, i.message, member=mname)
    schema_ok = not [i for i in issues if i.kind != "unknown-key"]
    if not schema_ok and version is None and not det.fits:
        det = _md.detect(doc)
    if not schema_ok and version is None and det.fits and (v, style) not in det.fits:
        c.add("metadata.shape", "", f"declares version {v} but fits version(s) "
              + ", ".join(f"{fv} ({fs})" for fv, fs in det.fits), member=mname)
    md = _md.Metadata(v, style, typed, raw=meta.read(), unknown=[i.path for i in issues if i.kind == "unknown-key"]) \
        if typed is not None else None
    reading.metadata = md
    reading.modules = md.modules if md is not None else _raw_modules(doc, style)
    if md is not None:
        _datetime_checks(md, mname, c)
        if not issues and md.dumps() != meta.read():
            if md.dumps().replace(b"\n", b"\r\n") == meta.read():
                c.add("metadata.crlf", "", "TVM's json.dump with CRLF line ends (a text-mode write on Windows)", member=mname)
            else:
                c.add("metadata.format", "", _format_difference(meta.read(), md.dumps(), style), member=mname)
    return reading


def check_archive(a: _archive.Archive, *, version: int | None = None) -> Report:
    """Check an opened archive (see :func:`check`)."""
    c = _collector()
    report = Report(a.file, c.findings)
    _container_checks(a, c)
    reading = read_metadata(a, version=version)
    c.findings.extend(reading.findings)
    v, style, md = reading.version, reading.style, reading.metadata
    if v is None or style is None:
        return report
    report.version, report.style = v, style
    placements = _layout_checks(a, v, style, reading.modules, c)
    if md is None:
        return report
    mname = reading.member or _archive.METADATA
    _revision_check(a, md, placements, mname, c)
    if style == "operator":
        _operator_checks(a, md, placements, mname, c)
    else:
        _module_checks(a, md, placements, mname, c)
    return report


# ----------------------------------------------------------------- container


def _container_checks(a: _archive.Archive, c: _findings.Collector) -> None:
    if a.compression:
        c.add("layout.compressed", "", f"the archive is {a.compression}-compressed")
    if a.container != "tar":
        return
    if a.members and a.members[0].path != ".":
        c.add("layout.root", "", "the first member is not '.'", member=a.members[0].name)
    unprefixed = [m.name for m in a.members if m.path != "." and not m.name.startswith(_layout.TAR["prefix"])]
    if unprefixed:
        c.add("layout.prefix", "", f"{len(unprefixed)} member name(s) lack the "
              f"'{_layout.TAR['prefix']}' prefix, e.g. {unprefixed[0]!r}", member=unprefixed[0])
    paths = {m.path: m for m in a.members}
    for m in a.members:
        if "/" not in m.path:
            continue
        parent = m.path.rsplit("/", 1)[0]
        group = _layout.GROUP_INFO.get(m.group, {})
        if parent not in paths and group.get("directories", True):
            c.add("layout.directory", "", f"its directory {parent!r} is not a member", member=m.name)
    fmt = _format_checks(a, c)
    siblings = _layout.TAR_FORMATS.get(fmt or "", {}).get("siblings", "sorted")
    actual = [m.path for m in a.members]
    order = _layout.tvm_order(((m.path, m.group) for m in a.members), siblings=siblings)
    if order != actual:
        i = next(k for k, (x, y) in enumerate(zip(order, actual)) if x != y)
        how = "depth first, a directory before its content" if siblings == "any" else "depth first, sorted"
        c.add("layout.order", "", f"member {i} is {actual[i]!r}; the writer's order ({how}) "
              f"has {order[i]!r}", member=a.members[i].name)
    elif fmt is not None and siblings == "any":
        sorted_order = _layout.tvm_order((m.path, m.group) for m in a.members)
        info = _layout.TAR_FORMATS[fmt]
        if sorted_order == actual:
            c.add("layout.python", "", f"{fmt.upper()} tar format, tarfile's default of Python {info['python']}: "
                  "TVM's writer under one of those")
        else:
            c.add("layout.python", "", f"{fmt.upper()} tar format with unsorted directory listings: "
                  f"{info['unsorted']}")
    _owner_mode_checks(a, c)
    _padding_check(a, c)


def _format_checks(a: _archive.Archive, c: _findings.Collector) -> str | None:
    """The layout.format and layout.member-type findings; returns the archive's format when
    it is one TVM's writer produced, else None."""
    headers = [(m, m.header) for m in a.members if m.header is not None]
    if not headers:
        return None
    formats = Counter(h.format for _, h in headers)
    fmt = a.tar_format
    known = _layout.TAR_FORMATS
    if fmt not in known:
        first = next(m for m, h in headers if h.format != formats.most_common(1)[0][0]) if len(formats) > 1 \
            else headers[0][0]
        what = ", ".join(f"{n} {f}" for f, n in formats.most_common())
        c.add("layout.format", "", f"the headers are {what}; TVM's writer wrote "
              + " or ".join(f"{f} (Python {i['python']})" for f, i in known.items()), member=first.name)
        fmt_ok = None
    else:
        fmt_ok = fmt
        allowed = set(known[fmt].get("extended", []))
        blocks = {"x"} if fmt == "pax" else allowed  # PAX: keywords of `x` records; GNU: L/K blocks
        for m, h in headers:
            extra = {k for k in h.pax_keywords if k not in allowed} if fmt == "pax" else set()
            extra |= {f"{t!r} block" for t in h.extended if t not in blocks}
            if extra:
                extra = sorted(extra)
                c.add("layout.format", "", f"extended header record(s) {', '.join(extra)}, which Python's "
                      f"tarfile never wrote in {fmt} format (it wrote {', '.join(sorted(allowed))})", member=m.name)
                break
    types = _layout.TAR.get("member_types", {})
    for m, h in headers:
        want = types.get("directory" if m.is_dir else "file")
        if want is not None and h.typeflag != want:
            c.add("layout.member-type", "", f"type flag {h.typeflag!r}; TVM's writer used {want!r} for "
                  f"{'directories' if m.is_dir else 'files'}", member=m.name)
            break
    return fmt_ok


def _modes_for(umask: int, m: _archive.Member) -> set[int]:
    if m.path == ".":
        return {0o777 & ~umask, *_layout.TAR.get("root_modes", [])}
    return {(0o777 if m.is_dir else 0o666) & ~umask}


def _owner_mode_checks(a: _archive.Archive, c: _findings.Collector) -> None:
    main = [m for m in a.members if _layout.GROUP_INFO.get(m.group, {}).get("owner") == "reset"]
    wrong = [m for m in main if (m.uid, m.gid, m.uname, m.gname) != (0, 0, "root", "root")]
    if wrong:
        m = wrong[0]
        c.add("layout.owner", "", f"{len(wrong)} member(s) of the main tree are not owned by root "
              f"(uid 0, gid 0, root/root), e.g. uid {m.uid}, gid {m.gid}, {m.uname or '-'}/{m.gname or '-'}", member=m.name)
    umasks = _layout.TAR.get("umasks", [])
    if not umasks or not main:
        return
    fits = [u for u in umasks if all(m.mode & 0o7777 in _modes_for(u, m) for m in main)]
    if fits:
        return
    bad = [m for m in main if not any(m.mode & 0o7777 in _modes_for(u, m) for u in umasks)]
    if bad:
        first = next((m for m in bad if not m.is_dir), bad[0])  # a file tells most
        kind = "root" if first.path == "." else "directory" if first.is_dir else "file"
        usual = ", ".join(f"{(0o777 if first.is_dir else 0o666) & ~u:#o} (umask {u:#05o})" for u in umasks)
        c.add("layout.mode", "", f"mode {first.mode & 0o7777:#o} for a {kind}"
              + (f" ({len(bad) - 1} other member(s) too)" if len(bad) > 1 else "") + "; TVM's writer made "
              f"{'directories 0o777' if first.is_dir else 'files 0o666'} & ~umask: {usual}"
              + (" or 0o700" if first.path == "." else ""), member=first.name)
    else:
        c.add("layout.mode", "", "the modes of the main tree come from different umasks; "
              "TVM's writer made the whole tree in one process", member=main[0].name)


def _padding_check(a: _archive.Archive, c: _findings.Collector) -> None:
    trailer, size = a.trailer, a.size
    if trailer is None or size is None:
        return
    record = _layout.TAR["record_size"]
    most = record + 2 * _tar.BLOCK  # the most a tar writer leaves after the last member
    length = len(trailer)
    # only what a writer could have left is read: a longer trailer is a finding whatever it
    # holds (a file of zeros read as an empty tar: its size, not the bytes, says so)
    nonzero = _first_nonzero(trailer, most)
    if nonzero is not None or length < 2 * _tar.BLOCK or size % record or length > most:
        what = f" (not all zero from byte {nonzero} of it)" if nonzero is not None else ""
        if length > most:
            what += f"; more than the {most} bytes a tar writer leaves (data appended to the archive)"
        c.add("layout.padding", "", f"the archive is {size} bytes with {length} bytes after the last member{what}"
              f"; tarfile ends with two zero blocks padded to a multiple of {record}")


def _first_nonzero(trailer: Any, upto: int, chunk: int = 1 << 20) -> int | None:
    """The offset of the first non-zero byte among the first ``upto`` bytes of ``trailer``
    (a buffer or a FileSpan), or None; read a MiB at a time, never further than ``upto``."""
    if isinstance(trailer, FileSpan):
        parts: Any = FileSpan(trailer.f, trailer.offset, min(upto, trailer.length), trailer.file).pieces(chunk)
    else:
        view = memoryview(trailer).cast("B")[:upto]
        parts = (view[start:start + chunk] for start in range(0, len(view), chunk))
    start = 0
    for piece in parts:
        part = bytes(piece)
        if part.count(0) != len(part):
            return start + len(part) - len(part.lstrip(b"\0"))
        start += len(part)
    return None


# ----------------------------------------------------------------- metadata


def _raw_modules(doc: dict[str, Any], style: str) -> dict[str, Any]:
    mods = doc.get("modules")
    if isinstance(mods, dict):
        return {str(k): v for k, v in mods.items() if isinstance(v, dict)}
    name = doc.get("model_name")
    return {name: doc} if isinstance(name, str) else {}


def _module_path(md: _md.Metadata, name: str) -> tuple:
    return ("modules", name) if getattr(md.document, "modules", None) is not None else ()


def _datetime_checks(md: _md.Metadata, member: str, c: _findings.Collector) -> None:
    for name, rec in md.modules.items():
        value = getattr(rec, "export_datetime", None)
        if isinstance(value, str) and not _md.datetime_valid(value):
            c.add("metadata.datetime", json_path(_module_path(md, name) + ("export_datetime",)), f"{value!r} is not a date and time", member=member)


def _format_difference(actual: bytes, expected: bytes, style: str) -> str:
    n = next((i for i, (x, y) in enumerate(zip(actual, expected)) if x != y), min(len(actual), len(expected)))
    return (f"differs from TVM's {style} json.dump at byte {n} (expected {expected[n:n + 20]!r}, "
            f"found {actual[n:n + 20]!r})")


def _revision_check(a: _archive.Archive, md: _md.Metadata, placements: dict[str, Any], member: str,
                    c: _findings.Collector) -> None:
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
        c.add("metadata.revision", "", "no single writer revision of version "
              f"{md.version} wrote all of it: the metadata fits {sorted(doc_revs) or 'none'}, "
              f"the members fit {sorted(layout_revs) or 'none'}", member=member)


# ----------------------------------------------------------------- layout


def _layout_checks(a: _archive.Archive, version: int, style: str, modules: dict[str, Any],
                   c: _findings.Collector) -> dict[str, _layout.Placement | None]:
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
            c.add("layout.unexpected", "", f"no {style} path of version {version} matches{hint}", member=m.name)
            continue
        if p.unknown_module is not None:
            c.add("layout.module", "", f"named after module {p.unknown_module!r}, which the metadata "
                  f"does not have (modules: {', '.join(map(repr, names))})", member=m.name)
        want_dir = p.kind == "directory"
        if want_dir != m.is_dir and p.kind != "opaque":
            c.add("layout.kind", "", f"is a {'directory' if m.is_dir else 'file'}; the layout has a "
                  f"{'directory' if want_dir else p.kind + ' file'} here", member=m.name)
        if conds is not None and p.entry.get("when") and not _layout.holds(p.entry, conds, p.module):
            c.add("layout.conditional", "", f"written only when {p.entry['when']} holds, which it does not", member=m.name)
    if conds is None:
        return placements
    present = set(placements)
    for e, path, module in _layout.expected(version, style, modules):
        if "{" in path:
            if not any(re.match(e["regex"], p) for p in present):
                c.add("layout.missing", "", f"no member matches {path!r} ({e['kind']})")
        elif path not in present:
            label = _layout.TAR["prefix"] + path if path != "." else path
            c.add("layout.missing", "", f"required {e['kind']} is absent" + (f" (module {module!r})" if module else ""), member=label)
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
            c.add("codegen.counter", "", f"counters of {eid}" + (f" for module {module!r}" if module else "") + f" are {ns}"
                  + (f"; missing {missing}" if missing else "") + (f"; repeated {dup}" if dup else ""), member=_layout.TAR["prefix"] + sorted(items)[-1][1])
    if style != "operator":
        for name in names:
            has = any(p is not None and p.module == name and p.kind in ("c_source", "object_file")
                      for p in placements.values())
            if not has:
                c.add("codegen.none", "", f"module {name!r} has no generated source or object file")
    return placements


# ----------------------------------------------------------------- full-model modules


def _files(placements: dict[str, Any], module: str, kind: str) -> list[str]:
    return [p for p, pl in placements.items() if pl is not None and pl.module == module and pl.kind == kind]


def _module_checks(a: _archive.Archive, md: _md.Metadata, placements: dict[str, Any], mname: str,
                   c: _findings.Collector) -> None:
    for name, rec in md.modules.items():
        base = _module_path(md, name)
        graph = None
        gpaths = _files(placements, name, "graph_json")
        if gpaths:
            graph = _graph_checks(a.member(gpaths[0]), c)
        lazy = None
        ppaths = _files(placements, name, "params")
        if ppaths:
            pm = a.member(ppaths[0])
            try:
                lazy = _params.open(pm.view())
            except MlfError as exc:
                c.add("params.unreadable", exc.field or "", exc.message
                      + (f" (offset {exc.offset})" if exc.offset is not None else ""), member=pm.name)
        for kind in ("relay_text", "tir_text"):
            for p in _files(placements, name, kind):
                try:
                    a.member(p).read().decode("utf-8")
                except UnicodeDecodeError as exc:
                    c.add("text.encoding", "", f"not UTF-8 at byte {exc.start}", member=a.member(p).name)
        executors = getattr(rec, "executors", None) or getattr(rec, "runtimes", None) or []
        is_graph = "graph" in executors
        try:
            names = [i.name for i in lazy.index] if lazy is not None else None
            if graph is not None and lazy is not None:
                _params_vs_graph(lazy, graph, a.member(ppaths[0]).name, c)
            _sids_checks(md, rec, base, graph, is_graph, mname, c)
            _memory_checks(rec, base, graph if is_graph else None, names, mname, c)
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
                    c.add("dependency.missing", json_path(base + ("external_dependencies", i, "url")), f"{dep.short_name} at {dep.url!r} is not in the archive", member=mname)


def _graph_checks(m: _archive.Member, c: _findings.Collector) -> _graph.GraphDocument | None:
    try:
        data = load_json(m.view(), None, "graph JSON")
    except MlfError as exc:
        c.add("graph.json", "", exc.message, member=m.name)
        return None
    g, issues = _graph.check_document(data)
    for i in issues:
        c.add("graph.unknown-key" if i.kind == "unknown-key" else "graph.schema", i.path, i.message, member=m.name)
    if g is None or [i for i in issues if i.kind != "unknown-key"]:
        return None
    structure = _graph.structure_issues(g)
    for i in structure:
        c.add("graph.structure", i.path, i.message, member=m.name)
    return None if structure else g


#: Graph constants are named "p" + index by the graph codegen (rule of params.not-in-graph).
_CONSTANT_NAME = re.compile(r"p[0-9]+")


def _params_vs_graph(lazy: _params.LazyParams, g: _graph.GraphDocument, member: str, c: _findings.Collector) -> None:
    inputs = set(g.input_names())
    for info in lazy.index:
        if info.name not in inputs:
            code = "params.not-in-graph" if _CONSTANT_NAME.fullmatch(info.name) else "params.external"
            c.add(code, info.name, f"parameter {info.name!r} is not a graph input node "
                  f"(inputs: {', '.join(sorted(inputs)) or 'none'})"
                  + ("" if code == "params.not-in-graph" else "; external (BYOC) constants are named like this"), member=member)
            continue
        eid = g.input_entry(info.name)
        shape, dtype = g.entry_shape(eid), g.entry_dtype(eid)
        if list(info.shape) != shape:
            c.add("params.shape", info.name, f"shape {list(info.shape)} differs from the graph's {shape}", member=member)
        elif info.dtype.known and info.dtype.name != dtype:
            c.add("params.shape", info.name, f"dtype {info.dtype.name} differs from the graph's {dtype}", member=member)


def _sids_checks(md: _md.Metadata, rec: Any, base: tuple, g: _graph.GraphDocument | None, is_graph: bool,
                 member: str, c: _findings.Collector) -> None:
    memory = rec.memory
    if isinstance(memory, list):  # version 1: the list itself
        sids, where = memory, base + ("memory",)
        present = bool(memory) or is_graph
    else:
        sids, where = memory.sids, base + ("memory", "sids")
        present = sids is not None
    if is_graph and not present:
        c.add("sids.presence", json_path(where), "a graph-executor module has no sids", member=member)
        return
    if not is_graph and present and (not isinstance(memory, list) or memory):
        c.add("sids.presence", json_path(where), "an AOT module has sids", member=member)
        return
    if not is_graph or g is None:
        return
    try:
        want = _graph.sid_map(g)
    except MlfError as exc:
        c.add("sids.mismatch", json_path(where), f"the writer could not derive sids from the graph: {exc.message}", member=member)
        return
    have = [_md.to_data(s) for s in sids]
    for i in range(max(len(want), len(have))):
        w = want[i] if i < len(want) else None
        h = have[i] if i < len(have) else None
        if w != h:
            c.add("sids.mismatch", json_path(where + (i,)), f"is {h} but the graph gives {w}" if h is not None else f"missing: the graph gives {w}", member=member)


def _memory_checks(rec: Any, base: tuple, g: _graph.GraphDocument | None, params: list[str] | None, member: str,
                   c: _findings.Collector) -> None:
    """Memory summary rules (spec/findings/mlf_check.yaml, mlf_spec.mlf.memory); ``g`` is the
    graph of a graph-executor module, ``params`` the names in its .params (None: unreadable)."""
    memory = rec.memory
    if isinstance(memory, list):
        return
    fn = memory.functions
    where = base + ("memory", "functions")
    devices = Counter(e.device for e in fn.main)
    for d, k in devices.items():
        if k > 1:
            c.add("memory.device", json_path(where + ("main",)), f"device {d} appears {k} times", member=member)
    op_max: dict[int, int] = {}
    for f in fn.operator_functions:
        for w in f.workspace:
            op_max[w.device] = max(op_max.get(w.device, 0), w.workspace_size_bytes)
    for i, e in enumerate(fn.main):
        p = where + ("main", i)
        for key in ("constants_size_bytes", "io_size_bytes", "workspace_size_bytes"):
            v = getattr(e, key)
            if v < 0:
                c.add("memory.overflow", json_path(p + (key,)), f"{v}: a 32-bit total that wrapped around; "
                      f"the size meant is {_memory.intended(v)}", member=member)
        if _memory.workspace_short(e.workspace_size_bytes, op_max.get(e.device, 0)):
            c.add("memory.workspace", json_path(p + ("workspace_size_bytes",)), f"{e.workspace_size_bytes} is less than an operator function's {op_max[e.device]} on device {e.device}", member=member)
        inputs, outputs = getattr(e, "inputs", None), getattr(e, "outputs", None)
        if g is None:
            continue
        for name, t in (inputs or {}).items():
            eid = g.input_entry(name)
            tp = json_path(p + ("inputs", name))
            if eid is None:
                c.add("memory.io-graph", tp, f"input {name!r} is not a graph input node", member=member)
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
                c.add("memory.io-graph", json_path(p + ("outputs",)), f"outputs {have} differ from the graph heads {want}", member=member)
        elif outs:
            c.add("memory.io-graph", json_path(p + ("outputs",)), f"{len(outs)} outputs for {len(heads)} graph heads", member=member)
    if len(fn.main) == 1:
        _io_checks(fn.main[0], where + ("main", 0), g, params, member, c)


def _io_checks(e: Any, p: tuple, g: _graph.GraphDocument | None, params: list[str] | None, member: str,
               c: _findings.Collector) -> None:
    """memory.io-size (a lower bound, any executor), memory.io-formula and memory.constants
    (graph executor) for a main with one entry."""
    io = _memory.intended(e.io_size_bytes)
    inputs, outputs = getattr(e, "inputs", None), getattr(e, "outputs", None)
    bound, why = (sum(t.size for t in inputs.values()), "the sizes of its inputs") if inputs is not None else (0, "")
    eids = None
    if g is not None:
        try:
            eids = _memory.graph_parameters(g, inputs=list(inputs) if inputs is not None else None, constants=params)
        except (IndexError, TypeError):
            eids = None
        sizes = _memory.parameter_sizes(g, eids) if eids is not None else None
        if sizes is not None and min(sizes) > bound:
            bound, why = min(sizes), "the sizes of main's parameters in the graph"
    if io < bound:
        c.add("memory.io-size", json_path(p + ("io_size_bytes",)), f"{e.io_size_bytes} is less than {bound}, {why}: TVM counts every main parameter in io_size_bytes", member=member)
    if g is None or eids is None:
        return
    values = _memory.graph_io(g, eids, list(outputs) if outputs is not None else None)
    if values and io not in {v % _memory.WRAP for v in values}:
        c.add("memory.io-formula", json_path(p + ("io_size_bytes",)), f"{e.io_size_bytes}; TVM's formula over the graph (parameters + {len(g.output_entries())} x outputs) "
              f"gives {' or '.join(map(str, sorted(values)))}", member=member)
    if params is not None:
        consts = _memory.graph_constants(g, params)
        if consts and _memory.intended(e.constants_size_bytes) not in {v % _memory.WRAP for v in consts}:
            c.add("memory.constants", json_path(p + ("constants_size_bytes",)), f"{e.constants_size_bytes}; the graph's constants (.params nodes) add up to "
                  f"{' or '.join(map(str, sorted(consts)))}", member=member)


def _tensor_vs_graph(t: Any, g: _graph.GraphDocument, eid: int, path: str, member: str, c: _findings.Collector) -> None:
    dtype = g.entry_dtype(eid)
    size = _graph.nbytes(g.entry_shape(eid), dtype)
    if t.dtype != dtype:
        c.add("memory.io-graph", path, f"dtype {t.dtype} differs from the graph's {dtype}", member=member)
    elif size is not None and t.size != size:
        c.add("memory.io-graph", path, f"size {t.size} differs from the graph's {size} "
              f"(shape {g.entry_shape(eid)}, {dtype})", member=member)


# ----------------------------------------------------------------- operator


def _operator_checks(a: _archive.Archive, md: _md.Metadata, placements: dict[str, Any], mname: str,
                     c: _findings.Collector) -> None:
    doc = md.document
    for fname, bufs in doc.memory.items():
        for i, b in enumerate(bufs):
            size = _graph.nbytes(list(b.shape), b.dtype)
            if size is not None and size != b.size_bytes:
                c.add("operator.buffer-size", json_path(("memory", fname, i, "size_bytes")), f"{b.size_bytes} differs from {size} (shape {list(b.shape)}, {b.dtype})", member=mname)
    tirs = {pl.values.get("device_type") for p, pl in placements.items() if pl is not None and pl.kind == "tir_text"}
    tirs.discard(None)
    if isinstance(doc.target, dict):
        if set(doc.target) != tirs:
            c.add("operator.tir", "target", f"target device types {sorted(doc.target)} but TIR files for "
                  f"{sorted(tirs)}", member=mname)
    elif tirs and len(tirs) > len(doc.target):
        c.add("operator.tir", "target", f"{len(tirs)} TIR files for {len(doc.target)} target(s)", member=mname)
    for p, pl in placements.items():
        if pl is not None and pl.kind == "tir_text":
            try:
                a.member(p).read().decode("utf-8")
            except UnicodeDecodeError as exc:
                c.add("text.encoding", "", f"not UTF-8 at byte {exc.start}", member=a.member(p).name)


__all__ = ["Finding", "Issue", "MetadataReading", "Report", "SEVERITIES", "check", "check_archive", "read_metadata"]
