"""Kaitai Struct specs of the binary formats, and readings of the parsers Kaitai generates.

``generated/kaitai/*.ksy`` (installed as ``mlf_spec.generated/kaitai``) are emitted from the
spec by tools/generate.py: ``tvm_params.ksy``, ``tvm_blob_ffi.ksy``, ``tvm_blob_legacy.ksy`` (the
top-level formats), ``tvm_tensor.ksy``, ``tvm_payloads.ksy``, ``tvm_vm.ksy`` (types they use) and
``tvm_stream.ksy`` (length-prefixed strings). Any Kaitai Struct compiler (0.11 or later) turns
them into parsers for its target languages; see docs/kaitai.md. :func:`export` writes them
(``mlf-spec export ksy OUT_DIR``); :mod:`mlf_spec.kaitai.reading` turns what a generated parser
read into mlf-spec's value trees, so that it can be compared with mlf-spec's own reading.
"""

from __future__ import annotations

import importlib
import os
from importlib import resources
from pathlib import Path
from typing import NamedTuple

from mlf_spec.errors import OutputExistsError

#: The parameter of every type whose bytes depend on the producing TVM version.
ERA_PARAM = "tvm_minor"


def ksy_files() -> dict[str, bytes]:
    """Every exported .ksy file: name -> content."""
    root = resources.files("mlf_spec.generated") / "kaitai"
    return {p.name: p.read_bytes() for p in sorted(root.iterdir(), key=lambda p: p.name) if p.name.endswith(".ksy")}


def export(out_dir: str | os.PathLike[str], force: bool = False) -> list[Path]:
    """Write every .ksy file into ``out_dir`` (created if needed), each atomically; an existing
    file is an OutputExistsError (before anything is written) unless ``force``."""
    from mlf_spec._io import atomic_write_bytes, output_directory

    out = Path(out_dir)
    files = ksy_files()
    if not force:
        existing = [name for name in files if (out / name).exists()]
        if existing:
            raise OutputExistsError(f"{len(existing)} file(s) exist: {', '.join(existing)}", file=str(out))
    written = []
    with output_directory(out):
        for name, data in files.items():
            atomic_write_bytes(out / name, data)
            written.append(out / name)
    return written


class Root(NamedTuple):
    """A format with a top-level type: its .ksy id, its binary spec and root struct."""

    ksy_id: str
    spec: str
    struct: str


def roots() -> dict[str, Root]:
    """The .ksy files that describe a whole file (their spec has exactly one root struct),
    by spec name."""
    out: dict[str, Root] = {}
    for name in ksy_files():
        kid = name.removesuffix(".ksy")
        spec = kid.removeprefix("tvm_")
        try:
            ir = importlib.import_module(f"mlf_spec.generated.{spec}_ir")
        except ImportError:
            continue  # tvm_stream: the stream conventions, no spec of its own
        if len(ir.ROOTS) == 1:
            out[spec] = Root(kid, spec, ir.ROOTS[0])
    return out


def tvm_minor(era: tuple[int, ...]) -> int:
    """The ``tvm_minor`` argument for a TVM version tuple ((0, 21) -> 21; mlf-spec's LATEST,
    (999, 0), -> 999, later than every version the spec names)."""
    return era[1] if era[0] == 0 else 999
