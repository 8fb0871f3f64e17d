"""The canonical reading of a tensor cache folder (spec/records/canonical_tensor_cache.yaml):
what ``mlf-spec cache dump --json`` prints, without ``path``. The folder-shaped counterpart of
:mod:`.canonical`'s decoders, which take bytes."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from mlf_spec.errors import UnsupportedError


def decode_cache(folder: str | os.PathLike[str], options: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The canonical reading of the cache in ``folder`` (its tensor-cache.json, else
    ndarray-cache.json); MlfError for what the loaders refuse or mlf-spec finds unsafe."""
    from mlf_spec import cache
    from mlf_spec.cache.reading import document

    with cache.open(folder) as lazy:
        return document(lazy)


def arrays_of(reading: Mapping[str, Any]) -> tuple[list[tuple[str, Any]], dict[str, str]]:
    """The arrays a canonical reading with ``data`` describes (per tensor the base64 of the
    C-contiguous bytes of the array the loader returns, of its ``dtype`` and ``shape``), in
    order, and the encode format per name (a tensor's ``format``; ``raw`` where absent).
    ValidationError for a reading that does not describe them."""
    import base64

    import numpy as np

    from mlf_spec.cache import dtypes
    from mlf_spec.errors import ValidationError

    out: list[tuple[str, Any]] = []
    formats: dict[str, str] = {}
    try:
        for t in reading["tensors"]:
            dt = dtypes.parse(t["dtype"])
            if dt is None or dt.numpy is None:
                raise ValidationError(f"dtype {t['dtype']!r} has no NumPy type: it cannot be written from data",
                                      field=f"tensors[{len(out)}].dtype")
            raw = base64.b64decode(t["data"], validate=True)
            arr = np.frombuffer(raw, dtype=dt.numpy).reshape([int(d) for d in t["shape"]])
            out.append((t["name"], arr))
            formats[t["name"]] = t.get("format", "raw")
    except (KeyError, TypeError, ValueError) as exc:
        raise ValidationError(f"not a canonical tensor-cache reading with data: {exc!r}",
                              field=f"tensors[{len(out)}]") from None
    return out, formats


def encode_cache(reading: Mapping[str, Any], options: Mapping[str, str], out: str | os.PathLike[str]) -> None:
    """Write the cache a canonical reading with ``data`` describes into the empty folder
    ``out``, as dump_tensor_cache writes it: each tensor under its ``format`` (the 0.27
    writer's per-name encode_format), the reading's metadata, the shard cap of option
    ``shard_cap_mb`` (default 32), the index of option ``version`` (default the reading's, else
    2); records of no bytes left in an unwritten last shard are dropped, as TVM drops them."""
    from mlf_spec import cache
    from mlf_spec.errors import ValidationError

    arrays, formats = arrays_of(reading)
    try:
        cap = float(options.get("shard_cap_mb", "32"))
        version = int(options.get("version") or reading.get("version") or 2)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"bad option: {exc}") from None
    if not cap > 0:
        raise ValidationError(f"shard_cap_mb must be positive, got {cap}")
    cache.write(out, arrays, encode_format=formats or "raw", shard_cap_mb=cap, metadata=reading.get("metadata"),
                version=version, keep_empty=False)


def decode_folder(format: str, folder: str | os.PathLike[str],  # noqa: A002
                  options: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The canonical reading of a folder-shaped artifact of ``format``."""
    if format != "tensor-cache":
        raise UnsupportedError(f"no folder decoder for format {format!r}; folder formats: tensor-cache")
    return decode_cache(folder, options)


def encode_folder(format: str, reading: Mapping[str, Any], options: Mapping[str, str],  # noqa: A002
                  out: str | os.PathLike[str]) -> None:
    """Write the folder-shaped artifact of ``format`` a canonical reading describes into ``out``."""
    if format != "tensor-cache":
        raise UnsupportedError(f"no folder encoder for format {format!r}; folder formats: tensor-cache")
    encode_cache(reading, options, out)


__all__ = ["arrays_of", "decode_cache", "decode_folder", "encode_cache", "encode_folder"]
