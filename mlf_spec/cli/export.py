"""``mlf-spec export ksy OUT_DIR``: write the Kaitai Struct specs of the binary formats.

Any Kaitai Struct compiler (0.11 or later) turns them into parsers for its languages, e.g.
``kaitai-struct-compiler -t python --outdir out OUT_DIR/tvm_params.ksy`` (docs/kaitai.md).
Exit status: 0 written; 1 refused (a file exists and --force was not given); 2 the
directory cannot be written.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def register(sub: Any) -> None:
    """Add the ``export`` command group to the CLI."""
    from . import add_command

    p = add_command(sub, "export")
    esub = p.add_subparsers(dest="export_command", metavar="WHAT")
    esub.required = True
    ksy = esub.add_parser(
        "ksy", help="write the Kaitai Struct specs (.ksy) of .params, the module blobs and their payloads",
        description="Write tvm_params.ksy, tvm_blob_ffi.ksy, tvm_blob_legacy.ksy and the files they import into "
        "OUT_DIR. Compile them with a Kaitai Struct compiler (0.11 or later), e.g. `kaitai-struct-compiler -t "
        "python --outdir parsers OUT_DIR/tvm_params.ksy`; types that depend on the producing TVM version take "
        "the parameter tvm_minor (21 for TVM 0.21).")
    ksy.add_argument("out_dir", metavar="OUT_DIR", help="directory to write into (created if needed)")
    ksy.add_argument("--force", action="store_true", help="replace .ksy files that exist")
    ksy.add_argument("--json", action="store_true", help="print {\"written\": [paths]} as JSON")
    ksy.set_defaults(handler=_ksy)


def _ksy(args: argparse.Namespace) -> int:
    from mlf_spec import kaitai
    from mlf_spec._io import check_output
    from mlf_spec.errors import MlfError, OutputExistsError

    check_output(args.out_dir, directory=True)
    try:
        written = kaitai.export(args.out_dir, force=args.force)
    except OutputExistsError as exc:
        print(f"mlf-spec: refused: {exc}; pass --force to replace them", file=sys.stderr)
        return 1
    except OSError as exc:
        raise MlfError(f"cannot write: {exc.strerror or exc}", file=args.out_dir) from None
    if args.json:
        print(json.dumps({"written": [str(p) for p in written]}))
    else:
        for p in written:
            print(p)
    return 0
