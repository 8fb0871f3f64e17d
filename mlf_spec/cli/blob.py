"""``mlf-spec blob ...``: inspect and extract the module blob of exported TVM libraries."""

from __future__ import annotations

import argparse
import io
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mlf_spec.errors import MlfError, OutputExistsError, UnsupportedError

from . import _batch, add_command
from ._options import tvm_version
from ._text import printable

if TYPE_CHECKING:
    from mlf_spec.blob.codec import Blob

ACCEPT = frozenset({"library", "c-source", "export-tar", "blob"})


def register(sub: Any) -> None:
    """Add the ``blob`` command group to the CLI."""
    p = add_command(sub, "blob")
    bsub = p.add_subparsers(dest="blob_command", metavar="ACTION")
    bsub.required = True

    dump = bsub.add_parser("dump", help="list the modules and import tree of the blob(s) in each input",
                           description="Inputs: ELF .so or .o files, devc.c / devc.cc, export_library .tar files, "
                           "or raw .bin blobs.")
    _batch.add_arguments(dump, what="files holding module blobs")
    dump.add_argument("--json", action="store_true", help="one JSON object per input (JSON Lines)")
    dump.add_argument("--era", type=tvm_version, help="TVM version whose payload grammar to use, e.g. 0.16 (default: from the symbol)")
    dump.set_defaults(handler=_dump)

    from .check import add_kind_check

    chk = add_kind_check(bsub, help="check module blobs: findings and, with --tvm, a TVM version's verdict",
                         findings="blob_check.md", question="whether that TVM version's loader reads the blob as meant",
                         what="files holding module blobs")
    chk.add_argument("--era", type=tvm_version, help="TVM version whose payload grammar to use, e.g. 0.16 (default: from the symbol)")
    chk.set_defaults(handler=_check)

    ext = bsub.add_parser("extract", help="write the blob of FILE as a raw .bin (or as C source: -o X.c), or one "
                          "module's payload (--module)", description=(
                              "Write the module blob of FILE (an ELF .so/.o, devc.c, an export tar or a raw .bin) "
                              "to OUT: a raw .bin (size prefix + body), or with -o OUT.c / OUT.cc a C array as TVM's "
                              "devc.c holds it. With --module N|KIND, write that one module's payload in the form "
                              "its kind stores it: device code (PTX, cubin, OpenCL C, ...) as one file; Metal/WebGPU "
                              "kernels, or a GraphExecutorFactory's graph.json and <name>.params, as files in the "
                              "new directory OUT; other kinds (VM executables, ...) as their payload bytes. "
                              "Exit status: 0 written, 1 OUT exists (pass --force), 2 unreadable input or a path "
                              "mistake."))
    ext.add_argument("file", metavar="FILE")
    ext.add_argument("-o", "--output", required=True, metavar="OUT",
                     help="OUT.bin, or OUT.c / OUT.cc for a C array like devc.c; with --module the payload file "
                     "(or directory)")
    ext.add_argument("--module", metavar="N|KIND", help="write only this module's payload (blob index or kind)")
    ext.add_argument("--index", type=int, help="which blob, if FILE holds several (0-based)")
    ext.add_argument("--symbol", help="symbol for C output (default: the one it was found under)")
    ext.add_argument("--force", action="store_true", help="replace OUTPUT if it exists")
    ext.add_argument("--era", type=tvm_version, help="with --module: TVM version whose payload grammar to use")
    ext.set_defaults(handler=_extract)


def read_blobs(inp: _batch.Input, era: str | None) -> list[Blob]:
    """Every blob of one input (none for a TVM library without one; NotAnArtifactError for a
    file without a blob that nothing shows TVM wrote)."""
    from mlf_spec.blob import codec as _blob

    _batch.guard(inp, ACCEPT, "a file holding a module blob")
    if inp.path is not None:
        _batch.require_file(inp.path, inp.name)
    return _blob.read(inp.source, era=era, name=inp.name)


def _dump(args: argparse.Namespace) -> int:
    return _batch.run(args, _dump_one, accept=ACCEPT, what="a file holding a module blob")


def _dump_one(inp: _batch.Input, args: argparse.Namespace) -> _batch.Outcome:
    blobs = read_blobs(inp, args.era)
    if not blobs:
        from mlf_spec.blob.check import tvm_library_evidence

        why = tvm_library_evidence(inp.source, inp.name)
        if args.json:
            return _batch.Outcome(0, doc={"path": inp.name, "blobs": []})
        return _batch.Outcome(0, text=f"{inp.name}: no module blob ({why}): export_library embeds one only when "
                              "the root module has imports")
    if args.json:
        from mlf_spec.blob.listing import dump_document

        return _batch.Outcome(0, doc={"path": inp.name, "blobs": [dump_document(b) for b in blobs]})
    out = io.StringIO()
    for b in blobs:
        where = f" under {b.full_symbol}" if b.symbol else ""
        out.write(f"{b.name}: {b.format} blob{where}, {len(b.data)} bytes, {len(b.entries)} modules "
                  f"(grammar of TVM {b.era_label})\n")
        for line in _tree_lines(b):
            out.write(line + "\n")
        if b.trailing:
            out.write(f"  {len(b.trailing)} bytes after the last entry\n")
        for f in b.findings:
            out.write(f"  {f.severity}: {f.code}: {f.message}\n")
    return _batch.Outcome(0, text=out.getvalue())


def _check(args: argparse.Namespace) -> int:
    from .check import run_kind

    return run_kind(args, "blob", ACCEPT, "a file holding a module blob")


#: Import depth drawn by indentation; deeper modules are drawn at this depth with their
#: depth as a number, so a line is at most ``2 * MAX_INDENT`` spaces plus its label.
MAX_INDENT = 32


def _tree_lines(b: Blob) -> Iterator[str]:
    """The import tree drawn from the root, one line per module and one per further edge
    to it: a module met again is referred to by its index, not expanded nor named again.
    The text is bounded by the input: each line is at most ``2 * MAX_INDENT`` spaces, a
    reference of a few dozen bytes or a module's label (its kind and at most six function
    names, once per module)."""
    if not b.entries:
        yield "  (no modules)"
        return

    def label(i: int) -> str:
        e = b.entries[i]
        if e.payload is None:
            return f"[{i}] {printable(e.kind)}"
        fn = e.functions
        names = ", ".join(fn[:6]) + (f", ... ({len(fn)} in all)" if len(fn) > 6 else "")
        return f"[{i}] {printable(e.kind)}  {e.payload_size} bytes" + (f"  functions: {printable(names)}" if fn else "")

    def indent(depth: int) -> str:
        if depth <= MAX_INDENT:
            return "  " * depth
        return "  " * MAX_INDENT + f"(depth {depth}) "

    if b.row_ptr is None:
        yield "  (new library root: no import tree)"
        for i in range(len(b.entries)):
            yield f"    {label(i)}"
        return
    shown: set[int] = set()
    stack: list[tuple[int, int]] = [(0, 1)]
    while stack:
        i, depth = stack.pop()
        if i in shown:
            yield indent(depth) + f"[{i}] (shown above)"
            continue
        shown.add(i)
        yield indent(depth) + label(i)
        stack.extend((c, depth + 1) for c in reversed(b.imports_of(i)))
    rest = [i for i in range(len(b.entries)) if i not in shown]
    if rest:
        yield "  not reachable from the root:"
        for i in rest:
            yield f"    {label(i)}"


def _extract_module(args: argparse.Namespace, loc: Any, out: Path) -> int:
    from mlf_spec._io import atomic_directory, atomic_write_bytes, check_output
    from mlf_spec.blob import codec as _blob
    from mlf_spec.blob.extract import find_module, payload_files

    b = _blob._parse_located(loc, args.file, args.era, None)
    e = find_module(b, args.module, file=args.file)
    try:
        files = payload_files(b, e)
    except MlfError as exc:
        raise exc.with_file(args.file) from None
    if isinstance(files, dict):
        check_output(out, directory=True)
        with atomic_directory(out, replace=args.force) as tmp:
            for name, data in files.items():
                (tmp / name).write_bytes(data)
        what = f"{len(files)} file(s): {', '.join(sorted(files))}"
    else:
        check_output(out)  # a folder left by an earlier extraction is no file output
        atomic_write_bytes(out, files)
        what = f"{len(files)} bytes"
    print(f"{args.file} -> {out}: module [{e.index}] {printable(e.kind)}, {what}", file=sys.stderr)
    return 0


def _extract(args: argparse.Namespace) -> int:
    from mlf_spec.blob import locate as _locate

    _batch.require_file(args.file, args.file)
    from mlf_spec import sniff

    _batch.guard(_batch.Input(args.file, args.file, sniff.sniff_path(args.file)), ACCEPT, "a file holding a module blob")
    located = _locate.locate_blobs(args.file)
    if not located:
        from mlf_spec.blob.check import tvm_library_evidence

        why = tvm_library_evidence(args.file, args.file)
        raise MlfError(f"no module blob to extract ({why})", file=args.file)
    if args.index is None and len(located) > 1:
        raise MlfError(f"{len(located)} blobs found; choose one with --index", file=args.file)
    index = args.index or 0
    if not 0 <= index < len(located):
        raise MlfError(f"--index {index}: only {len(located)} blob(s)", file=args.file)
    loc = located[index]
    out = Path(args.output)
    from mlf_spec._io import check_output

    # with --module, OUT may be a folder (a GraphExecutorFactory's files): _extract_module checks its form
    check_output(out, inputs=[args.file], directory=args.module is not None and out.is_dir())
    if out.exists() and not args.force:  # refused, as every command refuses an existing output: exit 1
        print(f"mlf-spec: refused: {OutputExistsError('output exists', file=str(out))}; pass --force to replace it",
              file=sys.stderr)
        return 1
    if args.module is not None:
        return _extract_module(args, loc, out)
    if out.suffix in (".c", ".cc"):
        symbol = args.symbol or loc.symbol or _locate.SYMBOL_FFI
        prefix = loc.prefix or None
        try:
            text = _locate.c_source_for_blob(loc.data, symbol, prefix)
        except ValueError as exc:  # an ELF symbol (or --symbol) that is no C identifier
            raise UnsupportedError(f"cannot write a C array: {exc}", file=args.file, field=loc.name) from None
        from mlf_spec._io import atomic_write_bytes

        atomic_write_bytes(out, text.encode("ascii"))
    else:
        _locate.write_bin(loc.data, out)
    print(f"{args.file} -> {out}: {len(loc.data)} bytes ({loc.name or 'raw blob'})", file=sys.stderr)
    return 0
