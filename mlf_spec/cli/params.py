"""``mlf-spec params ...``: dump and convert .params files."""

from __future__ import annotations

import argparse
import io
from typing import Any

from . import _batch, add_command
from ._options import dialect
from ._text import printable, table, write_table

ACCEPT = frozenset({"params"})
#: Kinds ``params convert`` reads, with the reader's format name.
CONVERT_KINDS = {"params": "params", "npz": "npz", "zip": "npz", "safetensors": "safetensors"}
CONVERT_EXT = {"params": ".params", "npz": ".npz", "safetensors": ".safetensors"}


def register(sub: Any) -> None:
    """Add the ``params`` command group to the CLI."""
    p = add_command(sub, "params")
    psub = p.add_subparsers(dest="params_command", metavar="ACTION")
    psub.required = True

    dump = psub.add_parser("dump", help="list the tensors of .params files", description=(
        "List the tensors of .params files: name, dtype (in the dtype dialect detected, or --dialect), shape, "
        "offset, size and SHA-256, with how the dialect was chosen; --stats adds min, max, mean, std, NaN/Inf and "
        "zero counts per tensor, --values N its first N elements. Exit status: 0 read, 2 unreadable input."))
    _batch.add_arguments(dump, what=".params files")
    dump.add_argument("--json", action="store_true", help="one JSON object per input (JSON Lines)")
    dump.add_argument("--stats", action="store_true",
                      help="min, max, mean, std (finite values), NaN, Inf and zero counts of each tensor")
    dump.add_argument("--values", type=_batch.positive, metavar="N", help="the first N elements of each tensor")
    dump.add_argument("--dialect", type=dialect,
                      help="TVM version whose dtype codes apply (e.g. 0.16, v0.21); default: detect")
    dump.set_defaults(handler=_dump)

    from .check import add_kind_check

    chk = add_kind_check(psub, help="check .params files: findings and, with --tvm, a TVM version's verdict",
                         findings="params_check.md", question="whether that TVM version loads the file as meant", what=".params files")
    chk.add_argument("--dialect", type=dialect,
                     help="TVM version whose dtype codes apply (e.g. 0.16, v0.21); default: detect")
    chk.set_defaults(handler=_check)

    conv = psub.add_parser(
        "convert", help="convert between .params, .npz and .safetensors",
        description="Convert IN to OUT (formats from the extensions; --to overrides OUT's), or several inputs "
        "(files, directories searched by content, '-') into a directory: -o DIR --to FORMAT gives DIR/<name>.<ext> "
        "per input. The input format is recognised by content. A written .npz holds one more entry, __mlf_spec__ "
        "(a 0-d string array of JSON; .safetensors: in __metadata__) with the dtype and shape of each tensor NumPy "
        "cannot hold: those (int4/uint4 and other sub-byte types, vector lanes, custom codes) are saved as their "
        "stored bytes, a flat uint8 array (int4: one element per byte), bfloat16/float8 as bytes; converting back restores them. "
        "Exit status: 0 done, 1 an output exists (pass --force), 2 unreadable input (the worst over all inputs).")
    conv.add_argument("paths", nargs="+", metavar="PATH", help="IN OUT, or with -o: the inputs")
    conv.add_argument("-o", "--output", metavar="DIR", help="write one converted file per input into DIR")
    conv.add_argument("--to", choices=sorted(set(CONVERT_EXT)), help="output format (required with -o)")
    conv.add_argument("--dialect", type=dialect,
                      help="dtype dialect for reading/writing .params (default: detect, and refuse an ambiguous "
                      "file; newest for writing)")
    conv.add_argument("--force", action="store_true", help="replace outputs that exist")
    conv.add_argument("--json", action="store_true", help="one JSON object per input: input, output, format, "
                      "tensors, bytes and each file written with its size and SHA-256")
    conv.add_argument("-j", "--jobs", type=_batch.positive, default=1, metavar="N",
                      help="convert N inputs at once in N processes (default 1)")
    conv.set_defaults(handler=_convert)


def _dump(args: argparse.Namespace) -> int:
    return _batch.run(args, _dump_one, accept=ACCEPT, what="a .params file")


def _dump_one(inp: _batch.Input, args: argparse.Namespace) -> _batch.Outcome:
    from mlf_spec.params import codec as _params
    from mlf_spec.params.listing import digests, dump_document, json_pieces

    _batch.guard(inp, ACCEPT, "a .params file")
    if args.json:  # streamed: the document is never whole in memory (json_pieces closes the file)
        lazy = _params.open(inp.source, dialect=args.dialect, strict=False, mapped=False)
        try:
            return _batch.Outcome(0, pieces=json_pieces(lazy, path=inp.name, stats=args.stats, values=args.values))
        except BaseException:
            lazy.close()
            raise
    # data read by pread, never mapped: a file truncated meanwhile is an error, not SIGBUS
    with _params.open(inp.source, dialect=args.dialect, strict=False, mapped=False) as lazy:
        if args.stats or args.values:
            doc = dump_document(lazy, path=inp.name, stats=args.stats, values=args.values)
        out = io.StringIO()
        index = lazy.index
        total = sum(i.nbytes for i in index)
        out.write(f"{inp.name}: {len(index)} tensors, {total} data bytes, {lazy.size} bytes in all\n")
        out.write(f"dialect: {lazy.dialect.text}; {lazy.choice.note}\n")
        if lazy.trailing_bytes:
            out.write(f"trailing bytes after the last record (ignored by TVM): {lazy.trailing_bytes}\n")
        shapes: dict[tuple[int, ...], str] = {}
        for i in index:
            if i.shape not in shapes:
                shapes[i.shape] = "x".join(map(str, i.shape)) or "scalar"
        short: dict[str, str] = {}  # a digest shown for many tensors is one string
        columns = [["name", *map(printable, (i.name for i in index))], ["dtype", *(i.dtype.name for i in index)],
                   ["shape", *(shapes[i.shape] for i in index)], ["offset", *(str(i.offset) for i in index)],
                   ["nbytes", *(str(i.nbytes) for i in index)],
                   ["sha256", *(short.get(d) or short.setdefault(d, d[:16]) for d in digests(lazy))]]
        write_table(out, columns, right=3)
        if args.stats:
            out.write(_stats_table(doc["tensors"]))
        if args.values:
            for t in doc["tensors"]:
                shown = "(no numeric values)" if t["values"] is None else ", ".join(map(_num, t["values"]))
                more = ", ..." if t["values"] is not None and len(t["values"]) < _numel(t["shape"]) else ""
                out.write(f"{printable(t['name'])}: [{shown}{more}]\n")
        unknown = [printable(i.name) for i in lazy.index if not i.dtype.known]
        if unknown:
            out.write(f"warning: {len(unknown)} tensor(s) with dtype codes unknown in {lazy.dialect.id}: "
                      f"{', '.join(unknown[:5])}\n")
    return _batch.Outcome(0, text=out.getvalue())


def _num(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, list):
        return f"({_num(v[0])}{'+' if not str(v[1]).startswith('-') else ''}{_num(v[1])}j)"
    return str(v)


def _numel(shape: list[int]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def _stats_table(tensors: list[dict[str, Any]]) -> str:
    rows = [("name", "min", "max", "mean", "std", "nan", "inf", "zeros")]
    for t in tensors:
        s = t["stats"]
        if s is None:
            rows.append((printable(t["name"]), "-", "-", "-", "-", "-", "-", "-"))
            continue
        rows.append((printable(t["name"]), *("-" if s[k] is None else _num(s[k]) for k in ("min", "max", "mean", "std")),
                     str(s["nan"]), str(s["inf"]), str(s["zeros"])))
    return "".join(line + "\n" for line in table(rows, right=1))


def _check(args: argparse.Namespace) -> int:
    from .check import run_kind

    return run_kind(args, "params", ACCEPT, "a .params file")


def _convert(args: argparse.Namespace) -> int:
    import contextlib
    import os
    import sys
    from pathlib import Path

    if args.output is None:
        if len(args.paths) != 2:
            print("mlf-spec: error: params convert takes IN OUT, or several inputs with -o DIR --to FORMAT",
                  file=sys.stderr)
            return 2
        src, dst = args.paths
        from mlf_spec._io import check_output

        check_output(dst, inputs=[src])
        if args.to is None:
            from mlf_spec.params.convert import FORMATS

            if Path(dst).suffix.lower() not in FORMATS:
                from mlf_spec.errors import MlfError

                raise MlfError(f"cannot tell the output format from {Path(dst).suffix or 'no extension'}: name the "
                               f"file .params, .npz or .safetensors, or pass --to", file=dst)
        inputs = list(_batch.expand([src], frozenset(CONVERT_KINDS)))
        if len(inputs) != 1:
            from mlf_spec.errors import MlfError

            raise MlfError(f"IN OUT takes one input file; found {len(inputs)} tensor files here (convert several "
                           "with -o DIR --to FORMAT)", file=src)
        args.targets = {inputs[0].name: dst}
        args.quiet_text = True
        return _batch.run(args, _convert_one, accept=frozenset(CONVERT_KINDS), what="a tensor file", inputs=inputs)
    if args.to is None:
        print("mlf-spec: error: params convert -o DIR needs --to params|npz|safetensors", file=sys.stderr)
        return 2
    args.skipped = []
    inputs = list(_batch.expand(args.paths, frozenset(CONVERT_KINDS), args.skipped))
    args.targets = {}
    seen: dict[str, str] = {}
    for inp in inputs:
        stem = "stdin" if inp.path is None else os.path.splitext(os.path.basename(os.path.normpath(inp.path)))[0]
        out = os.path.join(args.output, stem + CONVERT_EXT[args.to])
        if out in seen:
            print(f"mlf-spec: error: {seen[out]} and {inp.name} would both be written to {out}; convert them "
                  "separately", file=sys.stderr)
            return 2
        seen[out] = inp.name
        args.targets[inp.name] = out
    created = bool(inputs) and not os.path.isdir(args.output)
    if inputs:
        from mlf_spec._io import check_output

        check_output(args.output, directory=True)
        try:
            os.makedirs(args.output, exist_ok=True)
        except OSError as exc:
            print(f"mlf-spec: error: {args.output}: cannot create the output directory: {exc.strerror}",
                  file=sys.stderr)
            return 2
    args.quiet_text = False
    try:
        return _batch.run(args, _convert_one, accept=frozenset(CONVERT_KINDS), what="a tensor file", inputs=inputs)
    finally:
        if created:  # nothing converted (errors, or stopped): leave no empty folder behind
            with contextlib.suppress(OSError):
                os.rmdir(args.output)


def _convert_one(inp: _batch.Input, args: argparse.Namespace) -> _batch.Outcome:
    from pathlib import Path

    from mlf_spec.errors import AmbiguousDialectError
    from mlf_spec.params.convert import convert, format_of

    accept = frozenset(CONVERT_KINDS)
    _batch.guard(inp, accept, "a .params, .npz or .safetensors file")
    out = args.targets[inp.name]
    from mlf_spec._io import check_output

    check_output(out, inputs=[inp.path] if inp.path else [])
    if Path(out).exists() and not args.force:
        return _batch.Outcome(1, notes=[f"mlf-spec: refused: {out}: output exists; pass --force to replace it"])
    src_format = CONVERT_KINDS.get(inp.kind.name) or (format_of(inp.path) if inp.path else "params")
    try:
        n = convert(inp.source, out, args.dialect, src_format=src_format, dst_format=args.to)
    except AmbiguousDialectError as exc:
        return _batch.Outcome(1, notes=[f"mlf-spec: refused: {exc.file or inp.name}: {exc.message}"])
    line = f"{inp.name} -> {out}: {n} tensors"
    if getattr(args, "json", False):
        from ._written import written

        return _batch.Outcome(0, doc={"input": inp.name, "format": args.to or format_of(out), "tensors": n,
                                      **written(out)})
    if args.quiet_text:  # IN OUT: the one line goes to stderr, as before
        return _batch.Outcome(0, notes=[line])
    return _batch.Outcome(0, text=line)
