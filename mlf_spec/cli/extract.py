"""``mlf-spec extract ARCHIVE -o DIR``: extract an MLF archive, safely and all at once.

Members were checked when the archive was read (no absolute names, ``..``, backslashes,
links, devices, duplicates or oversized members: ``UnsafeArchiveError``, status 2), and no
symbolic link is followed while writing, so nothing lands outside DIR. The archive is
extracted into a new temporary directory beside DIR that is renamed to DIR only when every
member is written: DIR never holds a partial extraction. An existing non-empty DIR is
refused (status 1) unless ``--force``, which replaces it once the new one is complete.
JSON form: generated/schemas/extract_output.schema.json.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from mlf_spec.errors import MlfError, OutputExistsError

from . import _batch, add_command
from .archive import add_member_size, member_limit

ACCEPT = frozenset({"mlf-archive"})


def register(sub: Any) -> None:
    """Add the ``extract`` command to the CLI."""
    p = add_command(sub, "extract", description=(
        "Extract an MLF archive (a tar, compressed or not, or '-' for standard input) into the new directory DIR. "
        "Nothing is written outside DIR and DIR never holds a partial extraction. Exit status: 0 extracted, "
        "1 DIR exists and is not empty (pass --force to replace it), 2 unreadable or unsafe archive."))
    p.add_argument("archive", metavar="ARCHIVE", help="the MLF archive ('-' reads standard input)")
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="the directory to create")
    p.add_argument("--force", action="store_true", help="replace DIR if it exists and is not empty")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    add_member_size(p)
    p.set_defaults(handler=_extract)


def _extract(args: argparse.Namespace) -> int:
    from mlf_spec._io import atomic_directory
    from mlf_spec.mlf import archive as _archive

    inp = next(iter(_batch.expand([args.archive], ACCEPT)), None)
    if inp is None:
        raise MlfError("no MLF archive found in this directory", file=args.archive)
    try:
        _batch.guard(inp, ACCEPT, "an MLF archive")
        if inp.path is not None and not Path(inp.path).exists():
            raise MlfError("no such file", file=inp.name)
        dest = Path(args.output)
        replaced = dest.is_dir() and any(dest.iterdir())
        with _archive.open(inp.source, mapped=False, **member_limit(args)) as a, \
                atomic_directory(dest, replace=args.force, keep=[inp.path] if inp.path else []) as tmp:
            a.extract(tmp, overwrite=True)
            files = [m for m in a.members if not m.is_dir]
            doc = {"input": inp.name, "output": args.output, "members": len(a.members),
                   "files": len(files), "bytes": sum(m.size for m in files), "replaced": replaced}
    except OSError as exc:
        print(f"mlf-spec: error: {args.output}: cannot write: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except OutputExistsError as exc:
        print(f"mlf-spec: refused: {exc}; pass --force to replace it", file=sys.stderr)
        return 1
    except MlfError as exc:
        exc.with_file(inp.name)
        if args.json:
            sys.stdout.write(json.dumps(_batch.error_doc(inp.name, exc), ensure_ascii=False) + "\n")
        print(_batch.error_line(exc), file=sys.stderr)
        return 2
    if args.json:
        sys.stdout.write(json.dumps(doc, ensure_ascii=False) + "\n")
    else:
        print(f"{inp.name} -> {args.output}: {doc['members']} members ({doc['files']} files, {doc['bytes']} bytes)"
              + ("; replaced the old directory" if replaced else ""))
    return 0
