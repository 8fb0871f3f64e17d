"""The index of a .params file as a document: what ``mlf-spec params dump`` prints.

    >>> from mlf_spec.params import listing
    >>> doc = listing.dump("model.params")
    >>> doc["dialect"], [(t["name"], t["dtype"], t["shape"]) for t in doc["tensors"]]
    ('v0.26', [('w', 'float32', [2, 3])])

The document is plain JSON data typed by ``generated/params_dump_documents.py`` (from
spec/records/params_dump.yaml): the dialect and how it was chosen, and per tensor in file
order its name, dtype, shape, offset, size and SHA-256, optionally with its numbers
(``stats``) and first elements (``values``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

from mlf_spec._io import describe
from mlf_spec.generated.params_dump_documents import ParamsDump, TensorEntry

from . import codec as _codec


def dump_document(lazy: _codec.LazyParams, *, path: str, stats: bool = False,
                  values: int | None = None) -> ParamsDump:
    """The document of an opened file, named ``path``: ``stats`` adds each tensor's numbers
    (min, max, mean, std, NaN, Inf and zero counts), ``values`` its first that many elements."""
    from . import stats as _stats

    tensors: list[TensorEntry] = []
    shapes: dict[tuple[int, ...], list[int]] = {}  # one list per distinct shape (the document is only read)
    for info, digest in zip(lazy.index, digests(lazy)):
        shape = shapes.get(info.shape)
        if shape is None:
            shape = shapes[info.shape] = list(info.shape)
        entry: TensorEntry = {**_codec.json_name(info.name), "dtype": info.dtype.name,  # name (and name_hex)
                              "shape": shape, "offset": info.offset, "nbytes": info.nbytes, "sha256": digest}
        if stats or values:
            flat = _stats.values_of(lazy.tensor(info), lazy.dialect)
            if stats:
                entry["stats"] = _stats.tensor_stats(flat)
            if values:
                entry["values"] = _stats.first_values(flat, values)
        tensors.append(entry)
    return {"path": path, "format": "tvm-params", "dialect": lazy.dialect.id,
            "dialect_choice": lazy.choice.to_dict(),
            "trailing_bytes": lazy.trailing_bytes, "tensors": tensors}


def digests(lazy: _codec.LazyParams) -> Iterator[str]:
    """The SHA-256 (hex) of every tensor's stored bytes, in file order, read a window at a
    time (:meth:`LazyParams.raws`); small contents are hashed once each (files of many tiny
    tensors repeat them)."""
    sha256 = hashlib.sha256
    small: dict[bytes, str] = {}
    for data in lazy.raws():
        if len(data) <= 64:
            key = bytes(data)
            digest = small.get(key)
            if digest is None:
                digest = small[key] = sha256(key).hexdigest()
            yield digest
        else:
            yield sha256(data).hexdigest()


def dump(source: Any, *, dialect: str | None = None, stats: bool = False, values: int | None = None,
         name: str | None = None) -> ParamsDump:
    """The document of the .params file ``source`` (a path, bytes or binary file object),
    read in ``dialect`` (default: detected) as ``mlf-spec params dump --json`` prints it;
    ``path`` is ``name`` or a description of the source. Raises MlfError when the file
    cannot be read."""
    label = name if name is not None else describe(source)
    with _codec.open(source, dialect=dialect, strict=False, mapped=False) as lazy:  # by pread: never SIGBUS
        return dump_document(lazy, path=label, stats=stats, values=values)


__all__ = ["digests", "dump", "dump_document"]
