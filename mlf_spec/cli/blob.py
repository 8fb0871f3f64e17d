"""``mlf-spec blob ...``: inspect and extract the module blob of exported TVM libraries."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from mlf_spec.blob import codec as _blob
from mlf_spec.blob import locate as _locate
from mlf_spec.errors import MlfError, OutputExistsError, UnsupportedError


def register(sub: Any) -> None:
    """Add the ``blob`` command group to the CLI."""
    p = sub.add_parser("blob", help="inspect the module blob of exported TVM libraries")
    bsub = p.add_subparsers(dest="blob_command", metavar="ACTION")
    bsub.required = True

    dump = bsub.add_parser("dump", help="list the modules and import tree of the blob(s) in FILE",
                           description="FILE: an ELF .so or .o, devc.c / devc.cc, an export_library .tar, or a raw .bin.")
    dump.add_argument("file")
    dump.add_argument("--json", action="store_true", help="machine-readable output (an array if FILE holds several blobs)")
    dump.add_argument("--era", help="TVM version whose payload grammar to use, e.g. 0.16 (default: from the symbol)")
    dump.set_defaults(handler=_dump)

    ext = bsub.add_parser("extract", help="write the blob of FILE as a raw .bin (or as C source: -o X.c)")
    ext.add_argument("file")
    ext.add_argument("-o", "--output", required=True, help="OUT.bin, or OUT.c / OUT.cc for a C array like devc.c")
    ext.add_argument("--index", type=int, help="which blob, if FILE holds several (0-based)")
    ext.add_argument("--symbol", help="symbol for C output (default: the one it was found under)")
    ext.add_argument("--force", action="store_true", help="replace OUTPUT if it exists")
    ext.set_defaults(handler=_extract)


def dump_document(b: _blob.Blob) -> dict[str, Any]:
    """The JSON document of ``blob dump --json`` for one blob (schema: generated/schemas/blob_dump)."""
    modules = [{"index": e.index, "kind": e.kind, "payload_bytes": e.payload_size, "functions": e.functions}
               for e in b.entries]
    tree = None if b.row_ptr is None else {"row_ptr": list(b.row_ptr), "child_indices": list(b.child_indices or ())}
    findings = [{"code": f.code, "severity": f.severity, "message": f.message, "module": f.module} for f in b.findings]
    return {"format": b.format, "symbol": b.full_symbol, "size": len(b.data), "era": b.era_label, "modules": modules,
            "import_tree": tree, "findings": findings}


def _read(path: str, era: str | None) -> list[_blob.Blob]:
    if not Path(path).is_file():
        raise MlfError("no such file", file=path)
    blobs = _blob.read(path, era=era)
    if not blobs:
        raise MlfError("no module blob found (export_library embeds one only when the root module has imports)",
                       file=path)
    return blobs


def _dump(args: argparse.Namespace) -> int:
    blobs = _read(args.file, args.era)
    if args.json:
        docs = [dump_document(b) for b in blobs]
        json.dump(docs[0] if len(docs) == 1 else docs, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
        return 0
    out = sys.stdout
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
    return 0


def _tree_lines(b: _blob.Blob) -> list[str]:
    """The import tree drawn from the root; a module met again is named, not expanded."""
    if not b.entries:
        return ["  (no modules)"]

    def label(i: int) -> str:
        e = b.entries[i]
        if e.payload is None:
            return f"[{i}] {e.kind}"
        fn = e.functions
        names = ", ".join(fn[:6]) + (f", ... ({len(fn)} in all)" if len(fn) > 6 else "")
        return f"[{i}] {e.kind}  {e.payload_size} bytes" + (f"  functions: {names}" if fn else "")

    lines: list[str] = []
    if b.row_ptr is None:
        lines.append("  (new library root: no import tree)")
        lines.extend(f"    {label(i)}" for i in range(len(b.entries)))
        return lines
    shown: set[int] = set()
    stack: list[tuple[int, int]] = [(0, 1)]
    while stack:
        i, depth = stack.pop()
        if i in shown:
            lines.append("  " * depth + f"[{i}] {b.entries[i].kind} (shown above)")
            continue
        shown.add(i)
        lines.append("  " * depth + label(i))
        stack.extend((c, depth + 1) for c in reversed(b.imports_of(i)))
    rest = [i for i in range(len(b.entries)) if i not in shown]
    if rest:
        lines.append("  not reachable from the root:")
        lines.extend(f"    {label(i)}" for i in rest)
    return lines


def _extract(args: argparse.Namespace) -> int:
    if not Path(args.file).is_file():
        raise MlfError("no such file", file=args.file)
    located = _locate.locate_blobs(args.file)
    if not located:
        raise MlfError("no module blob found", file=args.file)
    if args.index is None and len(located) > 1:
        raise MlfError(f"{len(located)} blobs found; choose one with --index", file=args.file)
    index = args.index or 0
    if not 0 <= index < len(located):
        raise MlfError(f"--index {index}: only {len(located)} blob(s)", file=args.file)
    loc = located[index]
    out = Path(args.output)
    if out.exists() and not args.force:
        raise OutputExistsError("output exists; pass --force to replace it", file=str(out))
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
