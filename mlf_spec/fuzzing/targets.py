"""The fuzz targets: one function per reader or checker, and the registry that the
libFuzzer entry points (``fuzz/<name>_fuzzer.py``), the campaign script and the test
suite share.

A target takes the raw input bytes, calls a reader through :func:`attempt` (so that any
exception other than MlfError is an :class:`InvariantBreak`), and asserts what the reader
promises for input it accepts: exact round trips, agreement between readers of the same
bytes, well-formed outputs. :func:`run` adds the process-level invariants (memory budget,
writes confined to a temporary directory, no leaked files or descriptors).

Adding a target is one call::

    reader_target("params_check", "params", lambda d: params.check(d), seeds="params", mutator=params_mutator)

or a decorated function for targets with more to assert (see the ones below).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mlf_spec.errors import MlfError

from .format_mutators import (
    archive_mutator,
    blob_mutator,
    container_mutator,
    graph_mutator,
    metadata_mutator,
    params_mutator,
    payload_header,
    payload_mutator,
)
from .invariants import InvariantBreak, MemoryBudget, Sandbox, agree, attempt, guarded, same_bytes
from .mutators import Mutator

#: The limits the archive and container targets open inputs with (the readers' own
#: defaults are for real artifacts and allow gigabytes; a fuzzer input that decompresses
#: past these is refused, which is itself a path worth fuzzing).
FUZZ_LIMITS = {"max_member_size": 8 << 20, "max_members": 10_000, "max_total_size": 16 << 20}


@dataclass(frozen=True)
class Target:
    """A fuzz target: ``run(data)`` exercises readers and asserts their promises.

    ``format`` groups targets in campaign reports; ``seeds`` names a seed function in
    :data:`mlf_spec.fuzzing.seeds.SEEDS`; ``mutator`` makes the structure-aware mutator (a
    factory, called once per process); ``memory`` is the peak allocation allowed per input;
    ``size_of`` the input size the budget scales with (the decompressed size for
    containers); ``modules`` are the reader modules whose branch coverage the campaign
    reports, ``instrument`` the module prefixes atheris instruments, ``imports`` the
    modules imported (so instrumented) before fuzzing starts when ``modules`` and what they
    import are not all the target runs; ``max_len`` the largest input libFuzzer makes."""

    name: str
    format: str
    run: Callable[[bytes], None]
    seeds: str
    mutator: Callable[[], Mutator | None] = lambda: None
    memory: MemoryBudget = field(default_factory=lambda: MemoryBudget(64))
    size_of: Callable[[bytes], int] = len
    modules: tuple[str, ...] = ()
    instrument: tuple[str, ...] = ("mlf_spec",)
    imports: tuple[str, ...] = ()
    max_len: int = 1 << 16
    doc: str = ""


TARGETS: dict[str, Target] = {}

#: Every reader module (the CLI imports its codecs lazily, so its target imports them all).
READERS = ("mlf_spec._io", "mlf_spec.compression", "mlf_spec._records", "mlf_spec._internal.spec_engine", "mlf_spec.params.codec",
           "mlf_spec.params.index", "mlf_spec.params.models", "mlf_spec.params.writing", "mlf_spec.blob.payload",
           "mlf_spec.blob.modules", "mlf_spec.blob.eras",
           "mlf_spec.params.dtypes", "mlf_spec.params.convert", "mlf_spec.blob.codec", "mlf_spec.blob.locate",
           "mlf_spec.blob.located", "mlf_spec.blob.elf", "mlf_spec.blob.csource", "mlf_spec.blob.export_tar",
           "mlf_spec.graph.codec", "mlf_spec.mlf.archive", "mlf_spec.tar.read", "mlf_spec.tar.write", "mlf_spec.mlf.layout",
           "mlf_spec.mlf.metadata", "mlf_spec.mlf.check", "mlf_spec.mlf.migrate", "mlf_spec.sniff", "mlf_spec.cli",
           "mlf_spec.cli.archive", "mlf_spec.cli.blob", "mlf_spec.cli.migrate", "mlf_spec.cli.params",
           "mlf_spec.mlf.inspection", "mlf_spec.params.listing", "mlf_spec.blob.listing", "mlf_spec.mlf.archive_model",
           "mlf_spec.mlf.archive_open", "mlf_spec.mlf.migrate_plans", "mlf_spec.mlf.migrate_metadata",
           "mlf_spec.mlf.migrate_layout")


def register(t: Target) -> Target:
    """Add a target to :data:`TARGETS` (its name must be new)."""
    if t.name in TARGETS:
        raise ValueError(f"fuzz target {t.name!r} exists")
    TARGETS[t.name] = t
    return t


def target(name: str, format: str, **kw: Any) -> Callable[[Callable[[bytes], None]], Callable[[bytes], None]]:  # noqa: A002
    """Decorator form of :func:`register` (keywords as for :class:`Target`)."""

    def deco(fn: Callable[[bytes], None]) -> Callable[[bytes], None]:
        register(Target(name, format, fn, doc=(fn.__doc__ or "").strip(), **kw))
        return fn

    return deco


def reader_target(name: str, format: str, call: Callable[[bytes], Any], **kw: Any) -> Target:  # noqa: A002
    """A target that only asserts the basic promise of ``call(data)``: a result or an
    MlfError (plus the process-level invariants)."""

    def run(data: bytes) -> None:
        attempt(call, data)

    return register(Target(name, format, run, doc=f"{name}: a result or an MlfError.", **kw))


def run(t: Target | str, data: bytes, *, sandbox: Sandbox | None = None, check_memory: bool = True) -> None:
    """Run target ``t`` on ``data`` under every invariant; raises InvariantBreak."""
    t = TARGETS[t] if isinstance(t, str) else t
    budget = t.memory
    if check_memory and t.size_of is not len:
        size = t.size_of(data)
        budget = MemoryBudget(t.memory.factor * size / max(1, len(data)), t.memory.base)
    guarded(t.run, data, budget=budget, sandbox=sandbox, check_memory=check_memory)



def decompressed_size(data: bytes) -> int:
    """The size of ``data`` after decompression (gzip/bzip2/xz), within the fuzz limits."""
    from mlf_spec import compression
    from mlf_spec import sniff as _sniff

    kind = _sniff.compression(data[:8])
    if kind is None:
        return len(data)

    class _Count(io.RawIOBase):
        n = 0

        def write(self, b: Any) -> int:
            self.n += len(b)
            return len(b)

    sink = _Count()
    with contextlib.suppress(MlfError):
        compression.decompress_to(io.BytesIO(data), kind, sink, FUZZ_LIMITS["max_total_size"], file=None)
    return max(len(data), sink.n)


def _pick(data: bytes, n: int) -> int:
    """A choice among ``n`` that depends only on the input (reproducible, spread evenly):
    the costly targets try one variant per input instead of every one."""
    import zlib

    return zlib.crc32(data) % n


# ----------------------------------------------------------------- .params

_PARAMS_MODULES = ("mlf_spec.params.codec", "mlf_spec.params.index", "mlf_spec.params.models", "mlf_spec.params.writing",
                   "mlf_spec.params.dtypes", "mlf_spec.generated.params_fast",
                   "mlf_spec.generated.tensor_fast", "mlf_spec._io")


@target("params_load", "params", seeds="params", mutator=params_mutator, memory=MemoryBudget(64),
        modules=_PARAMS_MODULES, max_len=1 << 16)
def params_load(data: bytes) -> None:
    """params.loads strictly, then leniently; what loads is written back byte for byte."""
    from mlf_spec import params

    for strict in (True, False):
        p = attempt(params.loads, data, strict=strict)
        if p is not None:
            same_bytes(f"params.dumps(params.loads(data, strict={strict}))", attempt(params.dumps, p), data)
            return


@target("params_open", "params", seeds="params", mutator=params_mutator, memory=MemoryBudget(64),
        modules=_PARAMS_MODULES, max_len=1 << 16)
def params_open(data: bytes) -> None:
    """params.open (lazy, over the bytes): its index agrees with params.loads and every view
    is the stored bytes."""
    from mlf_spec import params

    lazy = attempt(params.open, data)
    full = attempt(params.loads, data, strict=False)
    if lazy is None:
        if full is not None:
            raise InvariantBreak("consistency", "params.loads(strict=False) reads what params.open rejects")
        return
    try:
        if full is None:
            raise InvariantBreak("consistency", "params.open reads what params.loads(strict=False) rejects")
        agree("names", [i.name for i in lazy.index], [n for n, _ in full.entries])
        last = {info.name: info for info in lazy.index}  # a repeated name reads as its last tensor, as in TVM
        for info in list(last.values())[:256]:
            raw = attempt(lazy.raw, info.name)
            same_bytes(f"raw bytes of {info.name!r}", raw, data[info.offset:info.offset + info.nbytes])
            attempt(lazy.__getitem__, info.name)
    finally:
        lazy.close()


# ----------------------------------------------------------------- blobs

_LOCATE_MODULES = ("mlf_spec.blob.locate", "mlf_spec.blob.located", "mlf_spec.blob.elf", "mlf_spec.blob.csource",
                   "mlf_spec.blob.export_tar", "mlf_spec.tar.read")
_BLOB_MODULES = ("mlf_spec.blob.codec", "mlf_spec.blob.payload", "mlf_spec.blob.modules", "mlf_spec.generated.blob_ffi_fast", "mlf_spec.generated.blob_legacy_fast",
                 "mlf_spec.generated.payloads_fast", "mlf_spec.generated.vm_fast")


def _exercise_blob(b: Any, data: bytes, what: str) -> None:
    own = len(b.data)
    if own < len(data) and not any(f.code == "blob.after-end" for f in b.findings):
        raise InvariantBreak("consistency", f"{what}: {len(data) - own} bytes after the blob, no blob.after-end finding")
    # bytes after the end the size prefix states are not the blob's (a blob.after-end finding)
    same_bytes(f"{what}.to_bytes()", attempt(b.to_bytes), data[:own])
    for e in b.entries[:256]:
        if e.payload is not None:
            attempt(lambda p=e.payload: p.functions)
            for t in attempt(e.payload.tensors)[:64]:
                attempt(e.payload.tensor_data, t)
    root = attempt(b.root)
    if root is not None:
        seen = 0
        for _ in attempt(root.walk):
            seen += 1
            if seen > 10_000:
                raise InvariantBreak("consistency", f"{what}.root().walk() does not end")
        from mlf_spec import blob

        rebuilt = attempt(blob.build, root, format=b.format, era=b.era)
        if rebuilt is not None and not b.findings and b.format == "ffi":
            again = attempt(blob.parse, rebuilt, format=b.format, era=b.era)
            if again is None:
                raise InvariantBreak("round-trip", f"blob.build of {what}.root() does not read back")


@target("blob_parse", "blob", seeds="blob", mutator=blob_mutator, memory=MemoryBudget(64), modules=_BLOB_MODULES,
        max_len=1 << 16)
def blob_parse(data: bytes) -> None:
    """blob.parse under every symbol (both layouts, every candidate era); a blob that reads
    is written back byte for byte; its payloads, tensors and module tree are walked."""
    from mlf_spec import blob
    from mlf_spec.blob.locate import BLOB_SYMBOLS

    for symbol in ("", *BLOB_SYMBOLS):
        b = attempt(blob.parse, data, symbol=symbol)
        if b is not None:
            _exercise_blob(b, data, f"blob.parse(symbol={symbol!r})")


@target("blob_payload", "blob", seeds="payload", mutator=payload_mutator, memory=MemoryBudget(64),
        modules=_BLOB_MODULES, max_len=1 << 15)
def blob_payload(data: bytes) -> None:
    """blob.parse_payload of the kind, layout and era named on the first line; a payload
    that reads is written back byte for byte."""
    from mlf_spec import blob

    h = payload_header(data)
    if h is None or h[0] not in ("ffi", "legacy"):
        return
    fmt, era, kind, start = h
    body = data[start:]
    p = attempt(blob.parse_payload, kind, body, format=fmt, era=era)
    if p is not None:
        same_bytes(f"parse_payload({kind!r}).to_bytes()", attempt(p.to_bytes, era), body)
        attempt(lambda: p.functions)


@target("blob_locate", "blob", seeds="container", mutator=container_mutator, memory=MemoryBudget(64),
        size_of=decompressed_size, modules=_LOCATE_MODULES + _BLOB_MODULES,
        instrument=("mlf_spec", "tarfile", "elftools"), max_len=1 << 16)
def blob_locate(data: bytes) -> None:
    """locate_blobs over any container (ELF, C source, tar plain or compressed, raw); each
    blob found reads as a blob or gives an MlfError, and survives C-source round trips."""
    from mlf_spec import blob
    from mlf_spec.blob import locate

    found = attempt(locate.locate_blobs, data, max_size=FUZZ_LIMITS["max_member_size"],
                    max_members=FUZZ_LIMITS["max_members"])
    for loc in found or []:
        b = attempt(blob.parse, loc.data, symbol=loc.symbol)
        if b is not None:
            _exercise_blob(b, loc.data, "located blob")
        text = attempt(locate.c_source_for_blob, loc.data, loc.symbol or locate.SYMBOL_FFI, loc.prefix or None)
        if text is not None:
            back = attempt(locate.parse_c_source, text)
            agree("parse_c_source(c_source_for_blob(blob))", [x.data for x in back or []], [loc.data])


# ----------------------------------------------------------------- JSON documents


@target("graph_json", "graph", seeds="graph", mutator=graph_mutator, memory=MemoryBudget(256),
        modules=("mlf_spec.graph.codec", "mlf_spec._records"), max_len=1 << 15)
def graph_json(data: bytes) -> None:
    """graph_json.parse (strict and lenient); what parses is analysed (structure issues,
    storage ids, inputs and outputs) and dumped in dmlc's layout, which parses to the same
    document and dumps to the same text."""
    from mlf_spec.graph import codec as gj

    strict = attempt(gj.parse, data)
    g = attempt(gj.parse, data, lenient=True)
    if g is None:
        if strict is not None:
            raise InvariantBreak("consistency", "graph_json.parse accepts strictly what it rejects leniently")
        return
    issues = attempt(gj.structure_issues, g)
    if not issues:
        attempt(gj.sid_map, g)
        attempt(g.input_names)
        attempt(g.output_entries)
    text = attempt(gj.dumps, g)
    again = attempt(gj.parse, text, lenient=True)
    if again is None:
        raise InvariantBreak("round-trip", "graph_json.dumps output does not parse")
    agree("graph JSON after dumps", again.data, g.data)
    same_bytes("graph_json.dumps twice", attempt(gj.dumps, again).encode("utf-8", "surrogatepass"),
               text.encode("utf-8", "surrogatepass"))


@target("metadata_json", "metadata", seeds="metadata", mutator=metadata_mutator, memory=MemoryBudget(256),
        modules=("mlf_spec.mlf.metadata", "mlf_spec._records", "mlf_spec.generated._recordlib",
                 "mlf_spec.generated._plainlib"), max_len=1 << 15)
def metadata_json(data: bytes) -> None:
    """metadata.parse (strict and lenient) and detection; a document that parses is dumped
    as TVM's writer did, which parses to the same data and dumps to the same bytes (and to
    the input itself when the input was in that form)."""
    from mlf_spec import metadata
    from mlf_spec._records import load_json

    strict = attempt(metadata.parse, data)
    md = attempt(metadata.parse, data, lenient=True)
    if strict is not None and md is None:
        raise InvariantBreak("consistency", "metadata.parse accepts strictly what it rejects leniently")
    doc = attempt(load_json, data, None, "metadata.json")
    if doc is not None:
        attempt(metadata.detect, doc)
        for v in metadata.VERSIONS:
            for style in attempt(metadata.styles, v) or []:
                attempt(metadata.check_document, doc, v, style)
    if md is None:
        return
    attempt(metadata.consistent_revisions, md)
    if md.unknown:
        return  # unknown keys are kept for reading, not written by the typed dumper
    out = attempt(md.dumps)
    again = attempt(metadata.parse, out)
    if again is None:
        raise InvariantBreak("round-trip", "metadata dumps output does not parse strictly")
    agree("metadata after dumps", again.to_data(), md.to_data())
    same_bytes("metadata dumps twice", attempt(again.dumps), out)


# ----------------------------------------------------------------- archives

_ARCHIVE_MODULES = ("mlf_spec.mlf.archive", "mlf_spec.tar.read", "mlf_spec.tar.write", "mlf_spec.compression",
                    "mlf_spec.mlf.layout", "mlf_spec.mlf.metadata", "mlf_spec.mlf.check", "mlf_spec.graph.codec")


def _plain(data: bytes) -> bytes | None:
    from mlf_spec import compression
    from mlf_spec import sniff as _sniff

    kind = _sniff.compression(data[:8])
    if kind is None:
        return data
    out = io.BytesIO()
    try:
        compression.decompress_to(io.BytesIO(data), kind, out, FUZZ_LIMITS["max_total_size"], file=None)
    except MlfError:
        return None
    return out.getvalue()


@target("archive_open", "archive", seeds="archive", mutator=archive_mutator, memory=MemoryBudget(256),
        size_of=decompressed_size, modules=_ARCHIVE_MODULES, instrument=("mlf_spec", "tarfile"), max_len=1 << 17)
def archive_open(data: bytes) -> None:
    """archive.open and everything an archive offers (members, metadata, modules with their
    params, graph and texts); written back byte for byte (the decompressed tar for a
    compressed input); extracted into a temporary directory, which opens as the same
    members."""
    from mlf_spec import archive

    a = attempt(archive.open, data, **FUZZ_LIMITS)
    if a is None:
        return
    with a:
        plain = _plain(data)
        if plain is not None:
            same_bytes("archive.open(data).to_bytes()", attempt(a.to_bytes), plain)
        for m in a.members[:1024]:
            attempt(m.read)
        if attempt(lambda: a.metadata) is not None:
            attempt(lambda: a.detection)
            attempt(a.placements)
            for mod in (attempt(lambda: a.modules) or {}).values():
                for name in ("executor", "targets", "params", "graph", "relay_text", "tir_texts", "sources",
                             "objects", "headers"):
                    attempt(getattr, mod, name)
                if mod.params is not None:
                    for info in mod.params.index[:64]:
                        attempt(mod.params.__getitem__, info.name)
        if len(a.members) <= 64 and _pick(data, 8) == 0:  # extraction costs file system work: 1 input in 8
            _extract_and_reopen(a)


def _extract_and_reopen(a: Any) -> None:
    from mlf_spec import archive

    with tempfile.TemporaryDirectory() as tmp:
        dest = Path(tmp) / "x"
        if attempt(a.extract, dest) is None:
            return
        b = attempt(archive.open, dest, max_member_size=FUZZ_LIMITS["max_member_size"],
                    max_members=FUZZ_LIMITS["max_members"])
        if b is None:
            return
        with b:
            files = {m.path: m.read() for m in a.members if not m.is_dir}
            agree("files of the extracted archive", {m.path: m.read() for m in b.members if not m.is_dir}, files)


@target("archive_check", "archive", seeds="archive", mutator=archive_mutator, memory=MemoryBudget(256),
        size_of=decompressed_size, modules=_ARCHIVE_MODULES, instrument=("mlf_spec", "tarfile"), max_len=1 << 17)
def archive_check(data: bytes) -> None:
    """check.check: a report (findings with codes declared in the spec) or an MlfError; the
    report is JSON-serialisable."""
    from mlf_spec import check

    r = attempt(check.check, data, **FUZZ_LIMITS)
    if r is not None:
        json.dumps(attempt(r.to_dict))


@target("migrate_plan", "archive", seeds="archive", mutator=archive_mutator, memory=MemoryBudget(256),
        size_of=decompressed_size, modules=_ARCHIVE_MODULES + ("mlf_spec.mlf.migrate",), max_len=1 << 17)
def migrate_plan(data: bytes) -> None:
    """migrate.plan to a version (chosen by the input): a plan (printable, JSON-serialisable)
    or an MlfError."""
    from mlf_spec import metadata, migrate

    to = metadata.VERSIONS[_pick(data, len(metadata.VERSIONS))]
    p = attempt(migrate.plan, data, to)
    if p is not None:
        with p:
            attempt(str, p)
            json.dumps(attempt(p.to_dict))


def _migrated(source: bytes, to: int) -> Any:
    """``source`` migrated to ``to`` with every loss accepted: (plan, result), or None
    when migrate refuses it (an MlfError)."""
    from mlf_spec import migrate

    p = attempt(migrate.plan, source, to)
    if p is None:
        return None
    r = attempt(migrate.apply, p, p.loss_names())
    if r is None:
        p.close()
        raise InvariantBreak("consistency", f"a plan to v{to} with every loss accepted was refused")
    return p, r


def _reading(data: bytes) -> Any:
    """What a migration must keep: the metadata document as data and, for an archive, every
    other file's path and bytes (member order, header encoding, JSON layout, what follows
    the end marker and empty directories, which a step may drop as a declared operation,
    are the writer's, not the source's)."""
    from mlf_spec import archive
    from mlf_spec._records import load_json

    if data.lstrip().startswith(b"{"):
        return load_json(data, None, "metadata.json")
    with archive.open(data) as a:
        doc = load_json(a.read("metadata.json"), None, "metadata.json")
        return doc, {m.path: m.read() for m in a.members if not m.is_dir and m.path != "metadata.json"}


@target("migrate_round_trip", "migration", seeds="migration", mutator=archive_mutator, memory=MemoryBudget(512),
        size_of=decompressed_size, modules=_ARCHIVE_MODULES + ("mlf_spec.mlf.migrate",), max_len=1 << 17)
def migrate_round_trip(data: bytes) -> None:
    """For an archive (or metadata.json) that migrate accepts: migrating it to another
    version (chosen by the input), accepting every loss, gives a result of that version that
    checks conformant; migrating that back keeps the document and every member wherever
    the plan declared no loss, and a second round trip gives the first one's bytes exactly
    (the writer's canonical form is a fixed point)."""
    from mlf_spec import metadata

    source = _plain(data)
    if source is None:
        return
    versions = list(metadata.VERSIONS)
    to = versions[_pick(data, len(versions))]
    there = _migrated(source, to)
    if there is not None and there[0].source_version == to:
        there[0].close()
        to = versions[(versions.index(to) + 1) % len(versions)]
        there = _migrated(source, to)
    if there is None:
        return
    p, r = there
    with p:
        version = p.source_version
        if r.report is not None and (not r.report.conformant or r.report.version != to):
            raise InvariantBreak("consistency", f"the v{version} -> v{to} result does not check conformant: "
                                                f"{r.report.codes()}")
        back = _migrated(r.to_bytes(), version)
        if back is None:
            raise InvariantBreak("round-trip", f"the v{to} result of v{version} cannot be migrated back")
        q, b = back
        with q:
            if p.losses or (to < version and q.derived):
                return
            first = b.to_bytes()
            agree(f"what v{version} -> v{to} -> v{version} keeps", _reading(first), _reading(source))
        again = _migrated(first, to)
        if again is None:
            raise InvariantBreak("round-trip", f"the v{version} round trip result cannot be migrated to v{to}")
        with again[0]:
            back2 = _migrated(again[1].to_bytes(), version)
            if back2 is None:
                raise InvariantBreak("round-trip", f"the second v{to} result cannot be migrated back")
            with back2[0]:
                same_bytes(f"second v{version} -> v{to} -> v{version} round trip", back2[1].to_bytes(), first)


def _json_output(what: str, text: str) -> None:
    """``text`` is one JSON document (a single-input command) or JSON Lines (the reading
    commands, one object per input)."""
    if not text.strip():
        return
    try:
        json.loads(text)
        return
    except ValueError:
        pass
    for line in text.splitlines():
        if line.strip():
            try:
                json.loads(line)
            except ValueError:
                raise InvariantBreak("consistency", f"{what} printed {line[:200]!r}") from None


@target("cli", "cli", seeds="archive", mutator=archive_mutator, memory=MemoryBudget(512), size_of=decompressed_size,
        modules=("mlf_spec.cli", "mlf_spec.cli.archive", "mlf_spec.cli.blob", "mlf_spec.cli.migrate", "mlf_spec.cli.params",
                 "mlf_spec.mlf.inspection", "mlf_spec.params.listing", "mlf_spec.blob.listing", "mlf_spec.mlf.archive_model",
           "mlf_spec.mlf.archive_open", "mlf_spec.mlf.migrate_plans", "mlf_spec.mlf.migrate_metadata",
           "mlf_spec.mlf.migrate_layout"),
        imports=READERS, max_len=1 << 17)
def cli(data: bytes) -> None:
    """Every read-only command on the input as a file: exit status 0, 1 or 2, never a
    traceback; ``--json`` output is JSON (one document or JSON Lines); status 2 comes with
    an ``mlf-spec: error:`` line on stderr."""
    from mlf_spec.cli import main

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "input")
        with open(path, "wb") as f:
            f.write(data)
        for argv in (["inspect", path, "--json"], ["check", path, "--json"], ["upgrade", path, "--dry-run", "--json"],
                     ["params", "dump", path, "--json"], ["blob", "dump", path, "--json"]):
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                status = attempt(main, argv)
            what = " ".join(a for a in argv if a != path)
            if status not in (0, 1, 2):
                raise InvariantBreak("exception", f"{what}: exit status {status!r}")
            errors = [line for line in err.getvalue().splitlines() if line.startswith("mlf-spec: error: ")]
            if "Traceback" in err.getvalue() or (status == 2 and not errors):
                raise InvariantBreak("consistency", f"{what}: status {status} with stderr {err.getvalue()[:300]!r}")
            _json_output(what, out.getvalue())


# ----------------------------------------------------------------- paths, .npz, rendered text


def _as_file(data: bytes, name: str) -> Any:
    """A temporary directory holding ``data`` as ``name`` (a context manager giving the path)."""

    @contextlib.contextmanager
    def made() -> Any:
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, name)
            with open(path, "wb") as f:
                f.write(data)
            yield path

    return made()


@target("blob_path", "blob", seeds="container", mutator=container_mutator, memory=MemoryBudget(64),
        modules=(*_LOCATE_MODULES, "mlf_spec.blob.codec"), max_len=1 << 17)
def blob_path(data: bytes) -> None:
    """blob.read and locate_blobs of the input as a file (read through its path: pyelftools
    seeks in a real file, where bytes go through BytesIO): a result or an MlfError, and the
    same blobs as from the bytes."""
    from mlf_spec import blob
    from mlf_spec.blob import locate

    for name in ("input.so", "input.c", "input.bin"):
        with _as_file(data, name) as path:
            found = attempt(locate.locate_blobs, path, max_size=FUZZ_LIMITS["max_member_size"],
                            max_members=FUZZ_LIMITS["max_members"])
            read = attempt(blob.read, path, max_size=FUZZ_LIMITS["max_member_size"])
        if name == "input.so":
            from_bytes = attempt(locate.locate_blobs, data, max_size=FUZZ_LIMITS["max_member_size"],
                                 max_members=FUZZ_LIMITS["max_members"])
            agree("locate_blobs(path) and locate_blobs(bytes)", [x.data for x in found or []],
                  [x.data for x in from_bytes or []])
        del read


@target("params_npz", "params", seeds="npz", memory=MemoryBudget(136, 136 << 20),
        modules=("mlf_spec.params.convert",), imports=("numpy.lib.format", "zipfile"), max_len=1 << 16)
def params_npz(data: bytes) -> None:
    """params convert's .npz reader (as a path and as bytes): a result or an MlfError within
    the inflation limit (the budget: twice what it allows); what it reads converts to
    .params and reads back with the same names."""
    from mlf_spec.params import convert

    with _as_file(data, "input.npz") as path:
        tensors = attempt(convert.read_any, path, fmt="npz")
        again = attempt(convert.read_any, data, fmt="npz")
        agree("read_any(path) and read_any(bytes) names", sorted(tensors or {}), sorted(again or {}))
        if tensors:
            out = os.path.join(os.path.dirname(path), "out.params")
            attempt(convert.write_any, tensors, out, fmt="params")
            back = attempt(convert.read_any, out, fmt="params") if os.path.exists(out) else None
            if back is not None:
                agree("names after .npz -> .params", list(back), list(tensors))


#: What a rendering may print per input byte (plus RENDER_BASE): ``blob dump`` draws a
#: bounded line per module and per import edge (8 input bytes each), ``inspect`` and
#: ``diff`` a line per member, tensor or change.
RENDER_FACTOR = 64
RENDER_BASE = 64 << 10


@target("text_render", "cli", seeds="container", mutator=container_mutator, memory=MemoryBudget(512),
        modules=("mlf_spec.cli.blob", "mlf_spec.cli.archive", "mlf_spec.diff.blob", "mlf_spec.cli._text",
                 "mlf_spec.mlf.inspection", "mlf_spec.params.listing", "mlf_spec.blob.listing", "mlf_spec.mlf.archive_model",
           "mlf_spec.mlf.archive_open", "mlf_spec.mlf.migrate_plans", "mlf_spec.mlf.migrate_metadata",
           "mlf_spec.mlf.migrate_layout"),
        imports=READERS, max_len=1 << 17)
def text_render(data: bytes) -> None:
    """The text output of ``blob dump``, ``inspect``, ``params dump`` and ``diff`` (the input
    against itself and against an empty blob): exit status 0, 1 or 2; at most
    RENDER_FACTOR bytes of text per input byte (plus RENDER_BASE); no character a terminal
    would act on (escape, bell, C1 controls); the memory budget of the target."""
    from mlf_spec._text import UNSAFE
    from mlf_spec.cli import main

    with _as_file(data, "input") as path:
        empty = os.path.join(os.path.dirname(path), "empty.bin")
        with open(empty, "wb") as f:
            f.write(b"\0" * 8)
        for argv in (["blob", "dump", path], ["inspect", path], ["params", "dump", path], ["diff", path, path],
                     ["diff", path, empty]):
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                status = attempt(main, argv)
            what = " ".join(a if a not in (path, empty) else os.path.basename(a) for a in argv)
            if status not in (0, 1, 2):
                raise InvariantBreak("exception", f"{what}: exit status {status!r}")
            text = out.getvalue() + err.getvalue()
            if len(text) > RENDER_FACTOR * len(data) + RENDER_BASE:
                raise InvariantBreak("memory", f"{what}: {len(text)} characters of text for {len(data)} input bytes")
            bad = UNSAFE.search(text.replace("\r\x1b[K", ""))
            if bad is not None:
                raise InvariantBreak("consistency", f"{what}: printed the control character {bad.group()!r}")


__all__ = ["FUZZ_LIMITS", "TARGETS", "Target", "archive_mutator", "blob_mutator", "container_mutator",
           "decompressed_size", "graph_mutator", "metadata_mutator", "params_mutator", "payload_mutator",
           "reader_target", "register", "run", "target"]


# ----------------------------------------------------------------- tensor caches

@target("cache_check", "cache", seeds="cache", memory=MemoryBudget(64), max_len=1 << 16,
        modules=("mlf_spec.cache.codec", "mlf_spec.cache.index", "mlf_spec.cache.rules", "mlf_spec.cache.folder",
                 "mlf_spec.cache.jsonpos", "mlf_spec.cache.check", "mlf_spec.cache.verdict"))
def cache_check(data: bytes) -> None:
    """A tar of a tensor cache folder (or an index alone): cache check and the strict open
    agree on what is fatal, and every tensor of an accepted cache loads with its shape."""
    from mlf_spec.cache.fuzz_target import check_input

    check_input(data)
