"""Check the module blob(s) of a library, C source, export tar or raw ``.bin``: findings
(spec/findings/blob_check.yaml) and, for a TVM version, the verdict of its loader
(spec/verdicts/tvm_read_rules.yaml).

    >>> from mlf_spec.blob import check
    >>> report = check.check("deploy.so", tvm="0.27")
    >>> report.codes(), report.tvm.verdict
    ([], 'loads')

The blob reader's own findings (import tree, payload kinds, trailing bytes) are reported
with the symbol as member and ``modules[i]`` as path; the check adds what concerns the
container (several symbols, no blob at all) and the layout of a raw blob.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mlf_spec._io import describe
from mlf_spec.errors import MlfError
from mlf_spec.findings import ArtifactReport, Collector
from mlf_spec.generated import tvm_wheel_loaders_table as _loaders
from mlf_spec.generated import vm_fast as _vm
from mlf_spec.generated.blob_check_findings import FINDINGS
from mlf_spec.verdict import lazy_engine as _engine

if TYPE_CHECKING:  # the verdict engine is imported for --tvm only
    from mlf_spec.verdict import engine as _verdict

from . import codec as _blob
from . import locate as _locate


def check(source: Any, *, tvm: str | None = None, writer: str | None = None, era: str | None = None,
          name: str | None = None) -> ArtifactReport:
    """Check every blob in ``source`` (a path, bytes or binary file object). ``tvm`` adds
    the verdict of that TVM version's loader; ``writer`` names the version that exported it
    (default: the era of the grammar that read it); ``era`` forces the payload grammar.
    Raises MlfError when a blob cannot be parsed."""
    label = name or describe(source)
    reader = _engine().reader_version(tvm) if tvm is not None else None
    wrange = _engine().writer_range(writer) if writer is not None else None
    located = _locate.locate_blobs(source, name=label)
    blobs = [_blob.parse_located(loc, label, era, None) for loc in located]
    c = Collector(FINDINGS)
    if not blobs:
        c.add("library.no-blob", "", f"no module blob ({tvm_library_evidence(source, label)}): export_library "
              "embeds one only when the root module has imports")
    symbols = sorted({b.symbol for b in blobs if b.symbol})
    if len(symbols) > 1:
        c.add("library.several-blobs", "", f"blobs under {', '.join(symbols)}; a TVM version reads only one of them")
    for b, loc in zip(blobs, located):
        member = _member(b, loc)
        for f in b.findings:
            entry = b.entries[f.module] if f.module is not None and f.module < len(b.entries) else None
            path = f"modules[{f.module}]" if f.module is not None else ""
            c.add(f.code, path, f.message, offset=entry.payload_offset if entry is not None else None, member=member)
        if not b.symbol:
            _raw_layout(b, member, c)
    report = ArtifactReport(label, c.findings, kind="blob", blobs=[_summary(b) for b in blobs])
    if reader is not None:
        report.tvm = _tvm_verdict(blobs, located, reader, tvm or "", wrange, writer)
    return report


def tvm_library_evidence(source: Any, label: str) -> str:
    """Why ``source``, which holds no module blob, is still a TVM library (see
    :mod:`mlf_spec.blob.evidence`); NotAnArtifactError when nothing shows it."""
    from mlf_spec.errors import NotAnArtifactError

    from .evidence import evidence

    if hasattr(source, "read"):
        return "read from a stream: not examined further"
    found = evidence(source)
    if found is None:
        raise NotAnArtifactError("not a TVM artifact: it holds no module blob and nothing in it shows that TVM "
                                 "wrote it", file=label)
    return found


def _member(b: _blob.Blob, loc: _locate.LocatedBlob) -> str | None:
    parts = [p for p in (loc.container_member, b.full_symbol) if p]
    return ":".join(parts) or None


def _summary(b: _blob.Blob) -> dict[str, Any]:
    return {"symbol": b.full_symbol, "format": b.format, "era": b.era_label, "size": len(b.data),
            "modules": [e.kind for e in b.entries]}


def _raw_layout(b: _blob.Blob, member: str | None, c: Collector) -> None:
    other = "legacy" if b.format == "ffi" else "ffi"
    try:
        _blob.parse(b.data, format=other)
    except MlfError as exc:
        where = f"{exc.field}: offset {exc.offset}: " if exc.field else ""
        c.add("blob.raw-layout", "", f"read as a {b.format} blob; the {other} layout does not read it", member=member,
              detail=f"as a {other} blob it breaks at {where}{exc.message}")
        return
    c.add("blob.raw-layout", "", f"read as a {b.format} blob; it also reads as a {other} blob", member=member)


# ------------------------------------------------------------------------------ verdict


def _loader_facts(kind: str, reader: tuple[int, ...]) -> tuple[int, int]:
    """(loader, loader_needs_cuda) for the reader version: from the wheel inventory."""
    if kind == _blob.LIB:
        return 1, 0
    first = min(r["since"] for r in _loaders.ROWS)
    if reader < first:
        return -1, 0
    for r in _loaders.ROWS:
        active = r["since"] <= reader and (r["until"] is None or reader < r["until"])
        if active and r["kind"] == kind:
            return 1, int(r["needs"] == "libcuda.so.1")
    return 0, 0


def _relax_v2(e: _blob.Entry) -> int:
    if e.kind not in ("relax.VMExecutable", "relax.Executable") or e.payload is None:
        return 0
    rec = e.payload.record
    rec = getattr(rec, "body", rec)
    return int(getattr(rec, "magic", None) == _vm.RELAX_VM_MAGIC_V2)


def blob_facts(b: _blob.Blob, other_symbols: int) -> dict[str, Any]:
    """The facts of the ``blob`` subject of the verdict rules."""
    symbol = b.symbol or _blob.symbol_for(b.format, b.era)
    return {"symbol": symbol, "raw": int(not b.symbol), "layout": b.format,
            "libs": sum(1 for e in b.entries if e.kind == _blob.LIB),
            "cycle": int(any(f.code == "tree.cycle" for f in b.findings)), "other_symbols": other_symbols,
            "imports": (sum(1 for e in b.entries if e.kind != _blob.LIB) if b.row_ptr is None
                        else len(b.reachable() - {0}))}


def module_facts(b: _blob.Blob, e: _blob.Entry, reachable: set[int], reader: tuple[int, ...]) -> dict[str, Any]:
    """The facts of the ``module`` subject of the verdict rules."""
    loader, cuda = _loader_facts(e.kind, reader)
    return {"index": e.index, "kind": e.kind, "layout": b.format, "payload_size": e.payload_size,
            "reachable": int(e.index in reachable), "loader": loader, "loader_needs_cuda": cuda,
            "relax_v2": _relax_v2(e)}


def _tvm_verdict(blobs: list[_blob.Blob], located: list[_locate.LocatedBlob], reader: tuple[int, ...], version: str,
                 wrange: tuple | None, writer: str | None) -> _verdict.Verdict:
    ev = _engine().Evaluator(reader, wrange)
    reasons: list[_verdict.Reason] = []
    symbols = {b.symbol for b in blobs if b.symbol}
    for b in blobs:
        where = b.full_symbol or "blob"
        reasons += ev.apply("blob", blob_facts(b, len(symbols - {b.symbol})), where)
        reach = b.reachable()
        for e in b.entries:
            reasons += ev.apply("module", module_facts(b, e, reach, reader), f"{where}:modules[{e.index}]", e.kind)
    if writer is not None:
        label, source = writer, "given"
    elif blobs:
        label, source = ", ".join(sorted({b.era_label for b in blobs})), "detected"
    else:
        label, source = None, "unknown"
    return _engine().Verdict.of(version, label, source, reasons)


__all__ = ["blob_facts", "check", "module_facts"]
