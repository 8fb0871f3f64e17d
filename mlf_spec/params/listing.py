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
    shapes: dict[tuple[int, ...], list[int]] = {}  # one list per distinct shape (the document is only read)
    tensors = [_entry(lazy, info, digest, shapes, stats, values) for info, digest in zip(lazy.index, digests(lazy))]
    return {**_head(lazy, path), "tensors": tensors}


def _head(lazy: _codec.LazyParams, path: str) -> dict[str, Any]:
    """The document's keys before ``tensors`` (the last key), in order."""
    return {"path": path, "format": "tvm-params", "dialect": lazy.dialect.id, "dialect_choice": lazy.choice.to_dict(),
            "trailing_bytes": lazy.trailing_bytes}


def _entry(lazy: _codec.LazyParams, info: _codec.TensorInfo, digest: str, shapes: dict[tuple[int, ...], list[int]],
           stats: bool, values: int | None) -> TensorEntry:
    from . import stats as _stats

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
    return entry


_PIECE = 1 << 20


def json_pieces(lazy: _codec.LazyParams, *, path: str, stats: bool = False,
                values: int | None = None) -> Iterator[str]:
    """The JSON text of :func:`dump_document` exactly as ``json.dumps(doc, ensure_ascii=False,
    separators=(",", ":"))`` makes it (``ensure_ascii=True`` when the text cannot be UTF-8),
    in pieces of about a MiB, the document never whole in memory: per tensor, 32 bytes
    (its digest) beside the file's index. Every tensor's data is read (hashed) here, before
    the first piece, so an unreadable file fails before any output; ``stats`` and ``values``
    read the data again as the pieces are made. The pieces close ``lazy`` when done."""
    import json

    packed = bytearray()
    for digest in _raw_digests(lazy):
        packed += digest
    head = json.dumps({**_head(lazy, path), "tensors": []}, ensure_ascii=False, separators=(",", ":"))
    try:
        head.encode("utf-8")
        ascii_only = False
    except UnicodeEncodeError:  # a lone surrogate (undecodable bytes kept): escape, stay valid UTF-8
        ascii_only = True
        head = json.dumps({**_head(lazy, path), "tensors": []}, ensure_ascii=True, separators=(",", ":"))
    assert head.endswith("[]}")
    return _pieces(lazy, head[:-2], bytes(packed), stats, values, ascii_only)


def _pieces(lazy: _codec.LazyParams, head: str, packed: bytes, stats: bool, values: int | None,
            ascii_only: bool) -> Iterator[str]:
    import json

    encode = json.JSONEncoder(ensure_ascii=ascii_only, separators=(",", ":")).encode
    shapes: dict[tuple[int, ...], list[int]] = {}
    try:
        batch, size = [head], len(head)
        for k, info in enumerate(lazy.index):
            text = encode(_entry(lazy, info, packed[32 * k:32 * k + 32].hex(), shapes, stats, values))
            batch.append("," + text if k else text)
            size += len(text) + 1
            if size >= _PIECE:
                yield "".join(batch)
                batch, size = [], 0
        batch.append("]}")
        yield "".join(batch)
    finally:
        lazy.close()


def digests(lazy: _codec.LazyParams) -> Iterator[str]:
    """The SHA-256 (hex) of every tensor's stored bytes, in file order, read a window at a
    time (:meth:`LazyParams.raws`); small contents are hashed once each (files of many tiny
    tensors repeat them)."""
    return _digests(lazy, True)


def _raw_digests(lazy: _codec.LazyParams) -> Iterator[bytes]:
    """:func:`digests` as 32 raw bytes each."""
    return _digests(lazy, False)


def _digests(lazy: _codec.LazyParams, hexed: bool) -> Iterator[Any]:
    sha256 = hashlib.sha256
    small: dict[bytes, Any] = {}
    for data in lazy.raws():
        if len(data) <= 64:
            key = bytes(data)
            digest = small.get(key)
            if digest is None:
                h = sha256(key)
                digest = small[key] = h.hexdigest() if hexed else h.digest()
            yield digest
        else:
            h = sha256(data)
            yield h.hexdigest() if hexed else h.digest()


def dump(source: Any, *, dialect: str | None = None, stats: bool = False, values: int | None = None,
         name: str | None = None) -> ParamsDump:
    """The document of the .params file ``source`` (a path, bytes or binary file object),
    read in ``dialect`` (default: detected) as ``mlf-spec params dump --json`` prints it;
    ``path`` is ``name`` or a description of the source. Raises MlfError when the file
    cannot be read."""
    label = name if name is not None else describe(source)
    with _codec.open(source, dialect=dialect, strict=False, mapped=False) as lazy:  # by pread: never SIGBUS
        return dump_document(lazy, path=label, stats=stats, values=values)


__all__ = ["digests", "dump", "dump_document", "json_pieces"]
