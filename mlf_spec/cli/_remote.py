"""The options and outcomes of remote tensor caches (``hf://``, ``https://``, ``s3://`` ...) in
``check``, ``cache check``, ``cache dump`` and ``cache manifest`` (mlf_spec.remote)."""

from __future__ import annotations

import argparse
from typing import Any

from . import _batch
from ._batch import positive


def add_arguments(parser: argparse.ArgumentParser, *, check: bool = True) -> None:
    """--sample, --verify, --manifest (check only), --timeout, --retries, --streams."""
    g = parser.add_argument_group("remote tensor caches (hf://ORG/REPO[@REV][/PATH], https://..., s3://...)")
    g.add_argument("--sample", type=positive, metavar="N", default=0,
                   help="also read N tensor records by range requests (covering every dtype, then the shards) "
                   "and decode them: NaN/Inf counts and statistics")
    g.add_argument("--verify", action="store_true",
                   help="stream every shard once and check its md5sum (and the Hub's LFS SHA-256)")
    if check:
        g.add_argument("--manifest", metavar="FILE",
                       help="compare the index and every shard with a manifest (`mlf-spec cache manifest`); "
                       "local caches too")
    add_network_arguments(g)
    g.add_argument("--streams", type=positive, default=None, metavar="N",
                   help="shards streamed at once (default: the cores + 2, at most 8)")


def add_network_arguments(parser: Any) -> None:
    """--timeout and --retries (for every command that may read a remote cache)."""
    parser.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS",
                        help="remote sources: seconds per request (default 30)")
    parser.add_argument("--retries", type=int, default=4, metavar="N", help="remote sources: retries of a request "
                        "that failed with 429, 5xx, a timeout or a dropped connection, with backoff (default 4)")


def options(args: argparse.Namespace) -> Any:
    """The store options of the parsed arguments (also made the defaults of sources opened
    without options, as ``cache diff`` and ``cache convert`` open them)."""
    from mlf_spec.remote import stores

    stores.DEFAULTS = stores.Options(timeout=getattr(args, "timeout", 30.0), retries=max(0, getattr(args, "retries", 4)))
    return stores.DEFAULTS


def _progress(label: str) -> Any:
    from mlf_spec.remote.progress import Progress

    return lambda total: Progress(total, label)


def remote_report(inp: _batch.Input, args: argparse.Namespace) -> tuple[Any, dict[str, Any]]:
    """``check URL``: the remote check's report and what was read."""
    from mlf_spec.remote import check as _rcheck
    from mlf_spec.remote import manifest as _manifest

    pinned = _manifest.load(args.manifest) if getattr(args, "manifest", None) else None
    return _rcheck.check(inp.name, tvm=getattr(args, "tvm", None), name=inp.name,
                         sample=getattr(args, "sample", 0), verify=getattr(args, "verify", False),
                         manifest=pinned, options=options(args), jobs=getattr(args, "streams", None),
                         progress=_progress("verify"))


def annotate(out: _batch.Outcome, info: dict[str, Any]) -> _batch.Outcome:
    """Add what a remote check read to its outcome (JSON: ``remote``; text: a line, and one
    per sampled record)."""
    from mlf_spec.remote import check as _rcheck

    if out.doc is not None:
        out.doc["remote"] = info
        return out
    lines = [out.text.rstrip("\n"), f"  {_rcheck.summary(info)}"]
    for s in info["sampled"]:
        st = s["stats"] or {}
        part = "" if s["elements_read"] in (None, s["elements"]) else \
            f" (first {s['elements_read']:,} of {s['elements']:,} elements)"
        vals = "" if not st else f": nan {st['nan']}, inf {st['inf']}, min {_g(st['min'])}, max {_g(st['max'])}"
        lines.append(f"  sample {s['name']} ({s['dtype']}, {s['shard']}){part}{vals}")
    out.text = "\n".join(lines) + "\n"
    return out


def _g(v: Any) -> str:
    return "-" if v is None else f"{v:.6g}"


def local_manifest(report: Any, path: str, args: argparse.Namespace) -> None:
    """``check --manifest`` of a local cache: add the files that differ to ``report``."""
    from mlf_spec.cache import codec
    from mlf_spec.findings import Finding
    from mlf_spec.generated import remote_check_findings as _f
    from mlf_spec.remote import manifest as _manifest

    pinned = _manifest.load(args.manifest)
    with codec.open(path, strict=False) as lazy:
        diffs = _manifest.differences(lazy, pinned, _manifest.local_digests(lazy))
    severity = _f.FINDINGS["remote.manifest"]["severity"]
    report.findings.extend(Finding("remote.manifest", severity, rel, "", what) for rel, what in diffs)


def dump_document(path: str, args: argparse.Namespace) -> dict[str, Any]:
    """``cache dump URL``: the tensors from the index alone; sha256 (and --stats) only for the
    records read (``--verify``: all, each shard streamed once; ``--sample N``: those), and
    ``sha256_of`` says which (``not-read`` for the others)."""
    from mlf_spec.cache.reading import document
    from mlf_spec.remote import sample as _sample
    from mlf_spec.remote.cache import describe_read, open_remote
    from mlf_spec.remote.verify import digests, md5_problems

    stats = _sample.value_stats if getattr(args, "stats", False) else None
    with open_remote(path, options=options(args)) as lazy:
        if getattr(args, "verify", False):
            found = digests(lazy, jobs=getattr(args, "streams", None), progress=_progress("verify")(
                sum(lazy.shard_size(i) or 0 for i in range(len(lazy.index.shards)))))
            bad = md5_problems(lazy, found)
            doc = document(lazy, stats=stats)  # one ranged GET per tensor
            doc["md5"] = [p.message + f" ({p.file})" for p in bad]
        else:
            sampled = {(s["shard"], s["offset"], s["name"]): s
                       for s in (_sample.read(lazy, t) for t in _sample.choose(lazy, getattr(args, "sample", 0)))}
            doc = _index_only(lazy, sampled, stats is not None)
        doc["remote"] = describe_read(lazy)
        return doc


def _index_only(lazy: Any, sampled: dict[tuple[str, int, str], dict[str, Any]], stats: bool) -> dict[str, Any]:
    tensors = []
    for t in lazy.tensors:
        shard = lazy.index.shards[t.shard].data_path
        entry: dict[str, Any] = {"name": t.name, "dtype": t.dtype, "shape": list(t.shape), "format": t.format,
                                 "shard": shard, "offset": t.offset, "nbytes": t.nbytes,
                                 "sha256": None, "sha256_of": "not-read"}
        s = sampled.get((shard, t.offset, t.name))
        if s is not None and s["sha256"] is not None:
            entry["sha256"], entry["sha256_of"] = s["sha256"], s["sha256_of"]
        if s is not None and stats and s["stats"] is not None:
            entry["stats"] = s["stats"]
        tensors.append(entry)
    return {"format": "tensor-cache", "index": lazy.index_name, "version": lazy.index.version,
            "shards": len(lazy.index.shards), "metadata": lazy.metadata, "tensors": tensors}


def manifest_command(args: argparse.Namespace) -> int:
    """``cache manifest DIR|URL [-o FILE]``: the manifest, on standard output or written atomically."""
    import sys
    from pathlib import Path

    from mlf_spec._io import atomic_write_bytes
    from mlf_spec.errors import MlfError, OutputExistsError
    from mlf_spec.remote import manifest as _manifest
    try:
        if args.output and Path(args.output).exists() and not args.force:
            raise OutputExistsError("the output exists", file=args.output)
        doc = _manifest.build(args.path, options=options(args), progress=None)
        text = _manifest.dumps(doc)
        if args.output:
            atomic_write_bytes(Path(args.output), text.encode())
            print(f"{args.path}: {len(doc['files'])} files pinned in {args.output}")
        else:
            sys.stdout.write(text)
    except OutputExistsError as exc:
        print(f"mlf-spec: {exc}; pass --force to replace it", file=sys.stderr)
        return 1
    except MlfError as exc:
        print(_batch.error_line(exc), file=sys.stderr)
        return 2
    return 0
