"""Compare two artifacts of the same kind: ``.params`` files, MLF archives, module blobs
(in ELF libraries, devc.c, export tars or raw), GraphExecutor JSON or metadata.json.

    >>> from mlf_spec import diff
    >>> d = diff.diff("old/model.params", "new/model.params")
    >>> d.same, [c.to_dict() for c in d.changes]
    >>> print(d)                     # one line per change, as ``mlf-spec diff`` prints it

Each input's kind is recognised by its content (:mod:`mlf_spec.sniff`); two inputs of
different kinds raise :class:`DiffKindError`. The JSON form (:meth:`Diff.to_dict`) is
generated/schemas/diff_output.schema.json.
"""

from __future__ import annotations

import os
from typing import Any

from mlf_spec._io import open_regular
from mlf_spec.errors import MlfError

from ._model import Change, Diff

#: sniffed kind -> the kind compared (the containers of a module blob compare as blobs).
#: A tar of no known kind (a damaged archive, often) is compared as an archive: the
#: archive reader then says what is wrong with it.
FAMILIES = {"params": "params", "mlf-archive": "mlf-archive", "tar": "mlf-archive", "compressed": "mlf-archive",
            "library": "blob", "c-source": "blob", "export-tar": "blob", "blob": "blob", "graph-json": "graph-json",
            "mlf-metadata": "mlf-metadata"}


class DiffKindError(MlfError):
    """The two inputs are not of one kind that :func:`diff` compares."""


def kind_of(source: Any, name: str) -> str:
    """The kind ``source`` (a path or bytes) is compared as; DiffKindError if none."""
    from mlf_spec import sniff

    k = sniff.sniff_path(source) if isinstance(source, (str, os.PathLike)) else sniff.sniff_bytes(source)
    if isinstance(source, (str, os.PathLike)) and not os.path.exists(source):
        raise MlfError("no such file or directory", file=name)
    family = FAMILIES.get(k.name)
    if family is None and k.name in sniff.NOT_ARTIFACT_KINDS:
        family = FAMILIES.get(sniff.claimed_kind(name) or "")  # a damaged .params, .tar.gz: its reader says why
        if family is None:
            raise DiffKindError(sniff.not_an_artifact(k), file=name)
    if family is None and k.name == "tensor-cache":
        raise DiffKindError(f"{k.label}; compare two caches with `mlf-spec cache diff`", file=name)
    if family is None:
        raise DiffKindError(f"{k.label}, which mlf-spec diff does not compare (it compares .params files, "
                            "MLF archives, module blobs, graph JSON and metadata.json)", file=name)
    return family


def diff(a: Any, b: Any, *, ignore_times: bool = False, a_name: str | None = None,
         b_name: str | None = None) -> Diff:
    """Compare ``a`` and ``b`` (paths or bytes) of the same kind. ``ignore_times`` leaves
    out archive member mtimes and metadata ``export_datetime`` values. Raises MlfError for
    an input that cannot be read and DiffKindError when the kinds differ."""
    na = a_name or (os.fspath(a) if isinstance(a, (str, os.PathLike)) else "<a>")
    nb = b_name or (os.fspath(b) if isinstance(b, (str, os.PathLike)) else "<b>")
    ka, kb = kind_of(a, na), kind_of(b, nb)
    if ka != kb:
        raise DiffKindError(f"{na} is {_label(ka)} but {nb} is {_label(kb)}; diff compares two artifacts of "
                            "one kind")
    return Diff(na, nb, ka, _COMPARE[ka](a, b, na, nb, ignore_times))


def _label(kind: str) -> str:
    return {"params": "a .params file", "mlf-archive": "an MLF archive", "blob": "a file holding a module blob",
            "graph-json": "a GraphExecutor JSON document", "mlf-metadata": "an MLF metadata.json"}[kind]


def _params(a: Any, b: Any, na: str, nb: str, ignore_times: bool) -> list[Change]:
    from mlf_spec.params import codec

    from . import params

    # read by pread, never mapped: a file another process truncates meanwhile is an MlfError, not SIGBUS
    with _opened(codec.open, a, na, strict=False, mapped=False) as x, \
            _opened(codec.open, b, nb, strict=False, mapped=False) as y:
        return params.compare(x, y, a_bytes=x, b_bytes=y)


def _archives(a: Any, b: Any, na: str, nb: str, ignore_times: bool) -> list[Change]:
    from mlf_spec.mlf import archive

    from . import archive as _archive_diff

    # read by pread, never mapped (as .params files above)
    with _opened(archive.open, a, na, mapped=False) as x, _opened(archive.open, b, nb, mapped=False) as y:
        return _archive_diff.compare(x, y, ignore_times=ignore_times)


def _blobs(a: Any, b: Any, na: str, nb: str, ignore_times: bool) -> list[Change]:
    from mlf_spec.blob import codec
    from mlf_spec.blob.check import tvm_library_evidence

    from . import blob

    blobs_a, blobs_b = codec.read(a, name=na), codec.read(b, name=nb)
    for source, blobs, name in ((a, blobs_a, na), (b, blobs_b, nb)):
        if not blobs:
            tvm_library_evidence(source, name)  # NotAnArtifactError unless a TVM library without a blob
    changes = blob.compare(blobs_a, blobs_b)
    if not blobs_a and not blobs_b and _content(a) != _content(b):
        from ._model import Change

        changes.append(Change("file", "content", "", None, None, "neither holds a module blob; the files differ"))
    return changes


def _content(source: Any) -> bytes:
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source)
    import hashlib

    h = hashlib.sha256()
    with open_regular(source) as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.digest()


def _json(kind: str) -> Any:
    def compare(a: Any, b: Any, na: str, nb: str, ignore_times: bool) -> list[Change]:
        from mlf_spec._records import load_json

        from . import graph
        from ._model import json_changes

        da = load_json(_read(a, na), na, "JSON")
        db = load_json(_read(b, nb), nb, "JSON")
        if kind == "graph-json":
            return graph.compare(da, db)
        return [c for c in json_changes(da, db, "metadata")
                if not (ignore_times and c.change == "changed" and c.path.endswith("export_datetime"))]

    return compare


def _read(source: Any, name: str) -> bytes:
    if isinstance(source, (str, os.PathLike)):
        try:
            with open_regular(source) as f:
                return f.read()
        except OSError as exc:
            raise MlfError(f"cannot read: {exc.strerror}", file=name) from None
    return bytes(source)


class _opened:
    """Open ``source`` with ``opener``; name errors after ``name``."""

    def __init__(self, opener: Any, source: Any, name: str, **kw: Any) -> None:
        self.opener, self.source, self.name, self.kw = opener, source, name, kw

    def __enter__(self) -> Any:
        try:
            self.value = self.opener(self.source, **self.kw)
        except MlfError as exc:
            if exc.file in (None, "<bytes>"):
                exc.file = self.name
            raise
        return self.value

    def __exit__(self, *exc: object) -> None:
        self.value.close()


_COMPARE = {"params": _params, "mlf-archive": _archives, "blob": _blobs, "graph-json": _json("graph-json"),
            "mlf-metadata": _json("mlf-metadata")}

__all__ = ["FAMILIES", "Change", "Diff", "DiffKindError", "diff", "kind_of"]
