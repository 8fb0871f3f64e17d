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


def decode_folder(format: str, folder: str | os.PathLike[str],  # noqa: A002
                  options: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The canonical reading of a folder-shaped artifact of ``format``."""
    if format != "tensor-cache":
        raise UnsupportedError(f"no folder decoder for format {format!r}; folder formats: tensor-cache")
    return decode_cache(folder, options)


__all__ = ["decode_cache", "decode_folder"]
