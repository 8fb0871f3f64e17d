"""The module blobs of a file as documents: what ``mlf-spec blob dump`` prints.

    >>> from mlf_spec.blob import listing
    >>> doc = listing.dump("deploy.so")
    >>> [(m["index"], m["kind"]) for m in doc["blobs"][0]["modules"]]
    [(0, '_lib'), (1, 'const_loader')]

The documents are plain JSON data typed by ``generated/blob_dump_documents.py`` (from
spec/records/blob_dump.yaml): per blob its layout, symbol and place, its modules with the
size, offset and SHA-256 of each payload and the functions it declares, the import tree and
the findings a loader would meet.
"""

from __future__ import annotations

import hashlib
from typing import Any

from mlf_spec._io import describe
from mlf_spec._text import text_and_hex
from mlf_spec.generated.blob_dump_documents import BlobDump, BlobDumpFile, BlobModule

from . import codec as _codec


def dump_document(b: _codec.Blob) -> BlobDump:
    """The document of one blob (an element of ``blobs`` in ``mlf-spec blob dump --json``)."""
    modules: list[BlobModule] = []
    for e in b.entries:
        kind, kind_hex = text_and_hex(e.kind)
        modules.append({"index": e.index, "kind": kind, **({"kind_hex": kind_hex} if kind_hex is not None else {}),  # kind_hex only where the kind is not UTF-8
                        "payload_bytes": e.payload_size, "payload_offset": e.payload_offset,
                        "payload_sha256": hashlib.sha256(b.payload_bytes(e)).hexdigest()
                        if e.payload_offset is not None else None,
                        "functions": [text_and_hex(f)[0] for f in e.functions]})
    tree = None if b.row_ptr is None else {"row_ptr": list(b.row_ptr), "child_indices": list(b.child_indices or ())}
    findings = [{"code": f.code, "severity": f.severity, "message": f.message, "module": f.module} for f in b.findings]
    return {"format": b.format, "symbol": b.full_symbol, "size": len(b.data), "file_offset": b.file_offset,
            "era": b.era_label, "modules": modules, "import_tree": tree, "findings": findings}


def dump(source: Any, *, era: str | None = None, name: str | None = None) -> BlobDumpFile:
    """Every blob of ``source`` (an ELF .so or .o, devc.c, an export tar or a raw .bin: a
    path, bytes or binary file object), as ``mlf-spec blob dump --json`` prints them;
    ``era`` forces the payload grammar of that TVM version, ``path`` is ``name`` or a
    description of the source. A TVM library without a blob gives no blobs. Raises
    MlfError when a blob cannot be parsed."""
    label = name if name is not None else describe(source)
    return {"path": label, "blobs": [dump_document(b) for b in _codec.read(source, era=era, name=label)]}


__all__ = ["dump", "dump_document"]
