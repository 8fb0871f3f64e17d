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
    dump.add_argument("--dialect", type=_dialect_arg,
                      help="TVM version whose dtype codes apply (e.g. 0.16, v0.21); default: detect")
    dump.set_defaults(handler=_dump)

    chk = psub.add_parser("check", help="check .params files: findings and, with --tvm, a TVM version's verdict",
                          description="Findings with stable codes (generated/docs/params_check.md); with --tvm VERSION "
                          "whether that TVM version loads the file as meant (generated/docs/tvm_read_rules.md). Exit "
                          "status: 0 conformant, 1 an error finding, 2 unreadable input (the worst over all inputs).")
    _batch.add_arguments(chk, what=".params files")
    chk.add_argument("--json", action="store_true", help="one JSON object per input (JSON Lines)")
    chk.add_argument("--dialect", type=_dialect_arg,
                     help="TVM version whose dtype codes apply (e.g. 0.16, v0.21); default: detect")
    from .check import add_tvm_arguments

    add_tvm_arguments(chk)
    chk.set_defaults(handler=_check)

    conv = psub.add_parser("convert", help="convert between .params, .npz and .safetensors (by extension)")
    conv.add_argument("input")
    conv.add_argument("output")
    conv.add_argument("--dialect", type=_dialect_arg,
                      help="dtype dialect for reading/writing .params (default: detect, and refuse an ambiguous "
                      "file; newest for writing)")
    conv.add_argument("--force", action="store_true", help="replace OUTPUT if it exists")
    conv.set_defaults(handler=_convert)


def _dialect_arg(text: str) -> str:
    """argparse type of --dialect: a known dialect id or TVM version, else a usage error
    that lists the valid ones."""
    from mlf_spec.errors import UnsupportedError
    from mlf_spec.params import dtypes as _dt

    try:
        _dt.dialect(text)
    except UnsupportedError as exc:
        raise argparse.ArgumentTypeError(exc.message) from None
    return text


def dump_document(lazy: LazyParams) -> dict[str, Any]:
    """The JSON document of ``params dump --json`` (schema: generated/schemas/params_dump)."""
    import hashlib

    from mlf_spec.params.codec import json_name

    tensors = []
    for info in lazy.index:
        digest = hashlib.sha256(lazy.raw(info.name) if info.nbytes else b"").hexdigest()
        tensors.append({**json_name(info.name), "dtype": info.dtype.name, "shape": list(info.shape),
                        "offset": info.offset, "nbytes": info.nbytes, "sha256": digest})
    return {"format": "tvm-params", "dialect": lazy.dialect.id, "dialect_choice": lazy.choice.to_dict(),
            "trailing_bytes": lazy.trailing_bytes, "tensors": tensors}


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


def _check(args: argparse.Namespace) -> int:
    from .check import tvm_version_error

    bad = tvm_version_error(args)
    return bad if bad is not None else _batch.run(args, _check_one, accept=ACCEPT, what="a .params file")


def _check_one(inp: _batch.Input, args: argparse.Namespace) -> _batch.Outcome:
    from .check import _check_params

    _batch.guard(inp, ACCEPT, "a .params file")
    return _check_params(inp, args)


def _convert(args: argparse.Namespace) -> int:
    import sys
    from pathlib import Path

    from mlf_spec.errors import AmbiguousDialectError
    from mlf_spec.params.convert import convert

    if Path(args.output).exists() and not args.force:
        print(f"mlf-spec: refused: {args.output}: output exists; pass --force to replace it", file=sys.stderr)
        return 1
    try:
        n = convert(args.input, args.output, args.dialect)
    except AmbiguousDialectError as exc:
        print(f"mlf-spec: refused: {exc.file}: {exc.message}", file=sys.stderr)
        return 1
    print(f"{args.input} -> {args.output}: {n} tensors", file=sys.stderr)
    return 0
