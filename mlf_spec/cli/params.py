"""``mlf-spec params ...``: dump and convert .params files."""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from typing import Any

from mlf_spec.params import codec as _params


def register(sub: Any) -> None:
    """Add the ``params`` command group to the CLI."""
    p = sub.add_parser("params", help="inspect and convert .params tensor files")
    psub = p.add_subparsers(dest="params_command", metavar="ACTION")
    psub.required = True

    dump = psub.add_parser("dump", help="list the tensors of a .params file")
    dump.add_argument("file", help=".params file")
    dump.add_argument("--json", action="store_true", help="machine-readable output")
    dump.add_argument("--dialect", help="TVM version whose dtype codes apply (e.g. 0.16, v0.21); default: detect")
    dump.set_defaults(handler=_dump)

    conv = psub.add_parser("convert", help="convert between .params, .npz and .safetensors (by extension)")
    conv.add_argument("input")
    conv.add_argument("output")
    conv.add_argument("--dialect", help="dtype dialect for reading/writing .params (default: detect / newest)")
    conv.add_argument("--force", action="store_true", help="replace OUTPUT if it exists")
    conv.set_defaults(handler=_convert)


def dump_document(lazy: _params.LazyParams) -> dict[str, Any]:
    """The JSON document of ``params dump --json`` (schema: generated/schemas/params_dump)."""
    tensors = []
    for info in lazy.index:
        digest = hashlib.sha256(lazy.raw(info.name) if info.nbytes else b"").hexdigest()
        tensors.append({"name": info.name, "dtype": info.dtype.name, "shape": list(info.shape),
                        "offset": info.offset, "nbytes": info.nbytes, "sha256": digest})
    return {"format": "tvm-params", "dialect": lazy.dialect.id, "tensors": tensors}


def _dump(args: argparse.Namespace) -> int:
    with _params.open(args.file, dialect=args.dialect, strict=False) as lazy:
        doc = dump_document(lazy)
        if args.json:
            json.dump(doc, sys.stdout, indent=2, ensure_ascii=False)
            sys.stdout.write("\n")
            return 0
        out = sys.stdout
        total = sum(t["nbytes"] for t in doc["tensors"])
        out.write(f"{args.file}: {len(doc['tensors'])} tensors, {total} data bytes, {lazy.size} bytes in all\n")
        out.write(f"dialect: {lazy.dialect.id} ({lazy.dialect.label}); {lazy.choice.note}\n")
        if lazy.trailing_bytes:
            out.write(f"trailing bytes after the last record (ignored by TVM): {lazy.trailing_bytes}\n")
        rows = [("name", "dtype", "shape", "offset", "nbytes", "sha256")]
        for t in doc["tensors"]:
            rows.append((t["name"], t["dtype"], "x".join(map(str, t["shape"])) or "scalar", str(t["offset"]),
                         str(t["nbytes"]), t["sha256"][:16]))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        for r in rows:
            out.write("  ".join(c.ljust(w) if i < 3 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip() + "\n")
        unknown = [i.name for i in lazy.index if not i.dtype.known]
        if unknown:
            out.write(f"warning: {len(unknown)} tensor(s) with dtype codes unknown in {lazy.dialect.id}: {', '.join(unknown[:5])}\n")
    return 0


def _convert(args: argparse.Namespace) -> int:
    from pathlib import Path

    from mlf_spec.errors import OutputExistsError
    from mlf_spec.params.convert import convert

    if Path(args.output).exists() and not args.force:
        raise OutputExistsError("output exists; pass --force to replace it", file=args.output)
    n = convert(args.input, args.output, args.dialect)
    print(f"{args.input} -> {args.output}: {n} tensors", file=sys.stderr)
    return 0
