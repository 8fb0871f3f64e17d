"""``mlf-spec cache ...``: dump, check, upgrade, downgrade, diff and convert tensor caches
(``tensor-cache.json`` / ``ndarray-cache.json`` folders with their shards)."""

from __future__ import annotations

import argparse
import io
import sys
from typing import Any

from . import _batch, add_command
from ._text import printable, table

ACCEPT = frozenset({"tensor-cache"})
WHAT = "a tensor cache (a folder with tensor-cache.json or ndarray-cache.json, or that index)"


def register(sub: Any) -> None:
    """Add the ``cache`` command group to the CLI."""
    p = add_command(sub, "cache")
    csub = p.add_subparsers(dest="cache_command", metavar="ACTION")
    csub.required = True

    dump = csub.add_parser("dump", help="list the tensors of tensor caches",
                           description="Per tensor: name, dtype, shape, format, shard, byte offset, nbytes and the "
                           "SHA-256 of the array TVM's loader returns (decoded, C order). Exit status: 0, or 2 for "
                           "unreadable input.")
    _batch.add_arguments(dump, what="tensor caches (folders or index files)")
    dump.add_argument("--json", action="store_true", help="one JSON object per input (JSON Lines)")
    dump.add_argument("--stats", action="store_true", help="add min, max, mean, std and NaN/Inf counts per tensor")
    from ._remote import add_arguments as add_remote_arguments

    add_remote_arguments(dump, check=False)
    dump.set_defaults(handler=_dump)

    from .check import add_kind_check

    chk = add_kind_check(csub, help="check tensor caches: findings and, with --tvm, the verdict of that version's loaders",
                         findings="cache_check.md", question="what that TVM version's Python and C++ loaders do",
                         what="tensor caches")
    add_remote_arguments(chk)
    chk.set_defaults(handler=_check)

    man = csub.add_parser("manifest", help="pin a tensor cache: size, SHA-256 and SRI sha384 of the index and every shard",
                          description="A local folder or a remote cache (hf://, https://, s3://): every shard is read "
                          "once. `check --manifest FILE` verifies a cache against it. Exit status: 0 written, 1 OUT "
                          "exists (pass --force), 2 unreadable input.")
    man.add_argument("path", metavar="DIR|URL", help="the cache folder, its index, or a remote cache URL")
    man.add_argument("-o", "--output", metavar="FILE", help="write the manifest here (atomically) instead of stdout")
    man.add_argument("--force", action="store_true", help="replace FILE if it exists")
    from ._remote import add_network_arguments

    add_network_arguments(man)
    man.set_defaults(handler=_manifest)

    for name, verb in (("upgrade", "to a later"), ("downgrade", "to an earlier")):
        m = csub.add_parser(name, help=f"write a tensor cache {verb} cache version (1 ndarray-cache.json, "
                            "2 tensor-cache.json)",
                            description="All or nothing: OUT is written beside itself and renamed in; a cache the "
                            "loaders cannot read is refused. Exit status: 0 done, 1 refused, 2 unreadable input.")
        m.add_argument("path", metavar="PATH", help="the cache folder or its index")
        m.add_argument("-o", "--output", required=True, metavar="OUT", help="the new cache folder")
        m.add_argument("--to", type=int, choices=(1, 2), help="target version (default: 2 up, 1 down)")
        m.add_argument("--old-float8", action="store_true",
                       help="spell float8 dtypes as TVM 0.16-0.19 does (e4m3_float8, e5m2_float8)")
        m.add_argument("--force", action="store_true", help="replace OUT if it exists")
        m.add_argument("--json", action="store_true", help="print what was done as JSON")
        m.set_defaults(handler=_migrate, direction=name)

    d = csub.add_parser("diff", help="compare two tensor caches (names, dtypes, shapes, values, metadata)",
                        description="Exit status: 0 the same tensors and metadata, 1 differences, 2 unreadable input.")
    d.add_argument("a", metavar="A")
    d.add_argument("b", metavar="B")
    d.add_argument("--json", action="store_true", help="the differences as one JSON object")
    add_network_arguments(d)
    d.set_defaults(handler=_diff)

    c = csub.add_parser("convert", help="convert between a tensor cache and .params, .npz or .safetensors",
                        description="IN and OUT: a cache folder (or index) or a .params/.npz/.safetensors file; a "
                        "cache output is a new folder (written atomically). Exit status: 0 done, 1 OUT exists "
                        "(pass --force), 2 unreadable input.")
    c.add_argument("src", metavar="IN")
    c.add_argument("dst", metavar="OUT")
    c.add_argument("--encode-format", choices=("raw", "f32-to-bf16"), default="raw",
                   help="encoding of float32 tensors in a cache output (default raw: lossless)")
    c.add_argument("--shard-cap-mb", type=float, default=32, help="shard size cap of a cache output (default 32)")
    c.add_argument("--cache-version", type=int, choices=(1, 2), default=2, help="cache version of a cache output")
    c.add_argument("--force", action="store_true", help="replace OUT if it exists")
    c.add_argument("--json", action="store_true", help="print what was written as JSON: input, tensors, output, "
                   "bytes and each file with its size and SHA-256")
    add_network_arguments(c)
    c.set_defaults(handler=_convert)


def dump_document(lazy: Any, *, stats: bool = False) -> dict[str, Any]:
    """The JSON document of ``cache dump --json`` (schema: generated/schemas/cache_dump), whole
    (the command itself streams it: :func:`mlf_spec.cache.reading.json_pieces`)."""
    from mlf_spec.cache.reading import document

    return document(lazy, stats=_value_stats() if stats else None)


def _dump(args: argparse.Namespace) -> int:
    return _batch.run(args, _dump_one, accept=ACCEPT, what=WHAT)


def _dump_one(inp: _batch.Input, args: argparse.Namespace) -> _batch.Outcome:
    from mlf_spec import cache

    _batch.guard(inp, ACCEPT, WHAT)
    path = _require_path(inp)
    if "://" in path and _is_remote(path):
        return _dump_remote(inp, path, args)
    from mlf_spec.cache import reading

    # every tensor read once here (an unreadable one fails before any output); the output is
    # made from the index and 32 bytes a tensor, a batch at a time, never a tree of dicts
    with cache.open(path) as lazy:
        found = reading.scan(lazy, stats=_value_stats() if args.stats else None)
    if args.json:
        return _batch.Outcome(0, pieces=reading.json_pieces(lazy, found, {"path": inp.name}))
    return _batch.Outcome(0, pieces=_text_pieces(inp.name, lazy, found, args.stats))


def _dump_remote(inp: _batch.Input, path: str, args: argparse.Namespace) -> _batch.Outcome:
    from ._remote import dump_document as remote_dump

    doc = {"path": inp.name, **remote_dump(path, args)}
    remote = doc.pop("remote")
    md5 = doc.pop("md5", None)
    if args.json:
        return _batch.Outcome(0, doc={**doc, "remote": remote, **({"md5": md5} if md5 is not None else {})})
    out = io.StringIO()
    _write_head(out, inp.name, doc["index"], _version_text(doc), len(doc["tensors"]), doc["shards"],
                sum(t["nbytes"] for t in doc["tensors"]))
    for line in table([_HEAD + (_STATS_HEAD if args.stats else ()), *(_row(t, args.stats) for t in doc["tensors"])],
                      right=5):
        out.write(line + "\n")
    read = sum(1 for t in doc["tensors"] if t["sha256"] is not None)
    out.write(f"read {remote['bytes_read']:,} bytes in {remote['requests']:,} requests; sha256 of {read} of "
              f"{len(doc['tensors'])} tensors ({'every shard read: --verify' if args.verify else 'the records read: pass --verify for all'})\n")
    for line in md5 or []:
        out.write(f"md5sum differs: {line}\n")
    return _batch.Outcome(0, text=out.getvalue())


_HEAD: tuple[str, ...] = ("name", "dtype", "shape", "format", "shard", "offset", "nbytes", "sha256")
_STATS_HEAD: tuple[str, ...] = ("min", "max", "mean", "std", "nan", "inf")


def _write_head(out: Any, name: str, index: str, version: str, tensors: int, shards: int, total: int) -> None:
    out.write(f"{name}: {index} ({version}), {tensors} tensors in {shards} shards, {total} stored bytes\n")


def _row(t: dict[str, Any], stats: bool) -> tuple[str, ...]:
    """A tensor's row of the table, from its entry of the JSON document."""
    row: tuple[str, ...] = (printable(t["name"]), printable(t["dtype"]), "x".join(map(str, t["shape"])) or "scalar",
                            printable(t["format"]), printable(t["shard"]), str(t["offset"]), str(t["nbytes"]),
                            (t["sha256"] or "-")[:16])
    if stats:
        s = t.get("stats") or {}
        row += tuple("-" if s.get(k) is None else f"{s[k]:.6g}" for k in ("min", "max", "mean", "std"))
        row += tuple(str(s.get(k, 0)) for k in ("nan", "inf"))
    return row


def _text_pieces(name: str, lazy: Any, found: Any, stats: bool) -> Any:
    """The text of ``cache dump`` as :func:`table` lays it out, in pieces: the rows are made
    twice (once for the column widths, once to write them), never all held."""
    from mlf_spec.cache import reading

    def rows() -> Any:
        yield _HEAD + (_STATS_HEAD if stats else ())
        for t in reading.entries(lazy, found):
            yield _row(t, stats)

    out = io.StringIO()
    doc = reading.head(lazy)
    _write_head(out, name, doc["index"], _version_text(doc), len(lazy.tensors), doc["shards"],
                lazy.index.records.nbytes_total())
    yield out.getvalue()
    yield from _table_pieces(rows, right=5)


def _table_pieces(rows: Any, right: int, batch: int = 4096) -> Any:
    """The lines of ``table(list(rows()), right)``, a batch at a time (``rows`` is called twice)."""
    from ._text import CELL, elide, width

    def cells(row: tuple[str, ...]) -> list[tuple[str, int]]:
        return [(c, len(c)) if c.isascii() and len(c) <= CELL else (e, width(e)) for c in row for e in (elide(c),)]

    widths: list[int] = []
    for row in rows():
        got = [w for _, w in cells(row)]
        widths = got if not widths else [max(a, b) for a, b in zip(widths, got)]
    lines: list[str] = []
    for row in rows():
        lines.append("  ".join(c + " " * (w - n) if i < right else " " * (w - n) + c
                               for i, ((c, n), w) in enumerate(zip(cells(row), widths))).rstrip() + "\n")
        if len(lines) >= batch:
            yield "".join(lines)
            lines = []
    if lines:
        yield "".join(lines)


def _version_text(doc: dict[str, Any]) -> str:
    """``cache version N``; for a bfloat16 companion index (ndarray-cache-b16.json, which
    declares no version of its own) the version whose companion it is."""
    if doc.get("version") is not None:
        return f"cache version {doc['version']}"
    from mlf_spec.cache.index import B16_NAMES

    of = [v for v, name in B16_NAMES.items() if name == doc.get("index")]
    if of:
        return f"the bfloat16 companion index of cache version {of[0]}"
    return "cache version not declared"


def _network(args: argparse.Namespace) -> None:
    """--timeout and --retries for the remote sources a command opens (none: nothing loaded)."""
    if any("://" in p and _is_remote(p) for p in (getattr(args, "a", ""), getattr(args, "b", ""),
                                                   getattr(args, "src", ""))):
        from ._remote import options

        options(args)


def _is_remote(path: str) -> bool:
    from mlf_spec.remote import is_remote

    return is_remote(path)


def _manifest(args: argparse.Namespace) -> int:
    from ._remote import manifest_command

    return manifest_command(args)


def _require_path(inp: _batch.Input) -> str:
    from mlf_spec.errors import MlfError

    if inp.path is None:
        raise MlfError("a tensor cache is a folder: name it (standard input cannot hold one)", file=inp.name)
    return inp.path


def _check(args: argparse.Namespace) -> int:
    from .check import run_kind

    return run_kind(args, "tensor-cache", ACCEPT, WHAT)


def _migrate(args: argparse.Namespace) -> int:
    import json

    from mlf_spec.cache import migrate
    from mlf_spec.errors import OutputExistsError

    target = args.to if args.to is not None else (2 if args.direction == "upgrade" else 1)
    try:
        plan = migrate.migrate(args.path, args.output, target, replace=args.force, old_float8=args.old_float8)
    except OutputExistsError as exc:
        print(f"mlf-spec: {exc}; pass --force to replace it", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps({"path": args.path, "output": args.output, **plan.to_dict()}))
    else:
        print(f"{args.path} -> {args.output}: cache version {plan.source} -> {plan.target}")
        for c in plan.changes:
            print(f"  {printable(c)}")
        for n in plan.notes:
            print(f"  note: {n}")
    for version, rule, message in plan.refused_by:
        print(f"mlf-spec: warning: {args.output}: TVM {version}'s loaders reject the result ({rule}: {message}); "
              f"`mlf-spec cache check --tvm {version} {args.output}` says why", file=sys.stderr)
    return 0


def _diff(args: argparse.Namespace) -> int:
    import json

    from mlf_spec.cache import diff as _cdiff

    _network(args)

    changes = _cdiff.compare(args.a, args.b)
    if args.json:
        print(json.dumps({"a": args.a, "b": args.b, "same": not changes, "changes": changes}))
    else:
        for c in changes:
            print(printable(c["message"]))
        print(f"{len(changes)} difference(s)" if changes else "the same tensors and metadata")
    return 1 if changes else 0


def _convert(args: argparse.Namespace) -> int:
    from mlf_spec.cache import convert as _cconv
    from mlf_spec.errors import OutputExistsError

    _network(args)
    losses: list[str] = []
    try:
        n = _cconv.convert(args.src, args.dst, encode_format=args.encode_format, shard_cap_mb=args.shard_cap_mb,
                           version=args.cache_version, replace=args.force, losses=losses)
    except OutputExistsError as exc:
        print(f"mlf-spec: {exc}; pass --force to replace it", file=sys.stderr)
        return 1
    for loss in losses:
        print(f"mlf-spec: note: not carried: {loss}", file=sys.stderr)
    if args.json:
        import json

        from ._written import written

        print(json.dumps({"input": args.src, "tensors": n, "not_carried": list(losses), **written(args.dst)},
                         ensure_ascii=False))
        return 0
    print(f"{args.src} -> {args.dst}: {n} tensors")
    return 0


def _value_stats() -> Any:
    from mlf_spec.cache.stats import value_stats

    return value_stats
