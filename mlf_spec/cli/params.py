"""``mlf-spec params ...``: dump and convert .params files."""

from __future__ import annotations

import argparse
import io
from typing import TYPE_CHECKING, Any

from . import _batch
from ._text import printable, table

if TYPE_CHECKING:
    from mlf_spec.params.codec import LazyParams

ACCEPT = frozenset({"params"})


def register(sub: Any) -> None:
    """Add the ``params`` command group to the CLI."""
    p = sub.add_parser("params", help="inspect and convert .params tensor files")
    psub = p.add_subparsers(dest="params_command", metavar="ACTION")
    psub.required = True

    dump = psub.add_parser("dump", help="list the tensors of .params files")
    _batch.add_arguments(dump, what=".params files")
    dump.add_argument("--json", action="store_true", help="one JSON object per input (JSON Lines)")
    dump.add_argument("--dialect", help="TVM version whose dtype codes apply (e.g. 0.16, v0.21); default: detect")
    dump.set_defaults(handler=_dump)

    conv = psub.add_parser("convert", help="convert between .params, .npz and .safetensors (by extension)")
    conv.add_argument("input")
    conv.add_argument("output")
    conv.add_argument("--dialect", help="dtype dialect for reading/writing .params (default: detect / newest)")
    conv.add_argument("--force", action="store_true", help="replace OUTPUT if it exists")
    conv.set_defaults(handler=_convert)


def dump_document(lazy: LazyParams) -> dict[str, Any]:
    """The JSON document of ``params dump --json`` (schema: generated/schemas/params_dump)."""
    import hashlib

    tensors = []
    for info in lazy.index:
        digest = hashlib.sha256(lazy.raw(info.name) if info.nbytes else b"").hexdigest()
        tensors.append({"name": info.name, "dtype": info.dtype.name, "shape": list(info.shape),
                        "offset": info.offset, "nbytes": info.nbytes, "sha256": digest})
    return {"format": "tvm-params", "dialect": lazy.dialect.id, "tensors": tensors}


def _dump(args: argparse.Namespace) -> int:
    return _batch.run(args, _dump_one, accept=ACCEPT, what="a .params file")


def _dump_one(inp: _batch.Input, args: argparse.Namespace) -> _batch.Outcome:
    from mlf_spec.params import codec as _params

    _batch.guard(inp, ACCEPT, "a .params file")
    with _params.open(inp.source, dialect=args.dialect, strict=False) as lazy:
        doc = dump_document(lazy)
        doc = {"path": inp.name, **doc}
        if args.json:
            return _batch.Outcome(0, doc=doc)
        out = io.StringIO()
        total = sum(t["nbytes"] for t in doc["tensors"])
        out.write(f"{inp.name}: {len(doc['tensors'])} tensors, {total} data bytes, {lazy.size} bytes in all\n")
        out.write(f"dialect: {lazy.dialect.id} ({lazy.dialect.label}); {lazy.choice.note}\n")
        if lazy.trailing_bytes:
            out.write(f"trailing bytes after the last record (ignored by TVM): {lazy.trailing_bytes}\n")
        rows = [("name", "dtype", "shape", "offset", "nbytes", "sha256")]
        for t in doc["tensors"]:
            rows.append((printable(t["name"]), t["dtype"], "x".join(map(str, t["shape"])) or "scalar",
                         str(t["offset"]), str(t["nbytes"]), t["sha256"][:16]))
        for line in table(rows, right=3):
            out.write(line + "\n")
        unknown = [printable(i.name) for i in lazy.index if not i.dtype.known]
        if unknown:
            out.write(f"warning: {len(unknown)} tensor(s) with dtype codes unknown in {lazy.dialect.id}: "
                      f"{', '.join(unknown[:5])}\n")
    return _batch.Outcome(0, text=out.getvalue())


def _convert(args: argparse.Namespace) -> int:
    import sys
    from pathlib import Path

    from mlf_spec.errors import OutputExistsError
    from mlf_spec.params.convert import convert

    if Path(args.output).exists() and not args.force:
        raise OutputExistsError("output exists; pass --force to replace it", file=args.output)
    n = convert(args.input, args.output, args.dialect)
    print(f"{args.input} -> {args.output}: {n} tensors", file=sys.stderr)
    return 0
