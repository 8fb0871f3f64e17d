"""Converting between a tensor cache and .params, .npz or .safetensors files (through
mlf_spec.params.convert for the files)."""

from __future__ import annotations

import os
from pathlib import Path

from mlf_spec.errors import OutputExistsError, UnsupportedError

from . import codec, sources
from .folder import locate


def is_cache(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` names a cache folder or a cache index (by content)."""
    from mlf_spec import sniff
    from mlf_spec.remote import is_remote

    if is_remote(path):  # a remote source is a tensor cache (mlf_spec.remote)
        return True
    return sniff.sniff_path(path).name == "tensor-cache"


def convert(src: str | os.PathLike[str], dst: str | os.PathLike[str], *, encode_format: str = "raw",
            shard_cap_mb: float = 32, version: int = 2, replace: bool = False,
            losses: list[str] | None = None) -> int:
    """Convert ``src`` to ``dst`` (a cache when ``dst`` has no .params/.npz/.safetensors
    extension); returns the number of tensors. What the output cannot hold is appended to
    ``losses`` (the cache's metadata in a file; f32-to-bf16 precision)."""
    losses = [] if losses is None else losses
    from mlf_spec._io import check_output
    from mlf_spec.params.convert import read_any, write_any

    to_file = Path(dst).suffix in (".params", ".npz", ".safetensors")
    cache_in = is_cache(src)
    remote_in = isinstance(src, str) and "://" in src
    check_output(dst, inputs=[src, locate(src)[0]] if cache_in and not remote_in else [src], directory=not to_file)
    if cache_in:
        arrays, _meta = sources.load(src)
        tensors: dict = arrays
        metadata = _meta
    else:
        tensors = read_any(os.fspath(src))
        metadata = None
    if to_file:
        if Path(dst).exists() and not replace:
            raise OutputExistsError("the output exists", file=os.fspath(dst))
        if Path(dst).suffix in (".params", ".npz"):
            _require_unicode_names(tensors)
        if metadata not in (None, {}):
            losses.append("the cache's metadata (a .params, .npz or .safetensors file does not carry it)")
        write_any(tensors, dst)
    else:
        if encode_format == "f32-to-bf16" and any(getattr(v, "dtype", None) == "float32" for v in tensors.values()):
            losses.append("float32 precision: f32-to-bf16 keeps the upper 16 bits (rounded)")
        codec.write(dst, tensors, encode_format=encode_format, shard_cap_mb=shard_cap_mb, metadata=metadata,
                    version=version, replace=replace)
    return len(tensors)


def _require_unicode_names(tensors: dict) -> None:
    """A .params or .npz file holds names as UTF-8 (TVM's writer, the zip member names): a name
    with a lone surrogate (a cache's "\\ud800" escape) cannot be written."""
    from .index import is_unicode, shown

    for name in tensors:
        if not is_unicode(name):
            raise UnsupportedError(f"tensor name {shown(name)!r} is not valid Unicode (a lone surrogate): a .params "
                                   "or .npz file cannot hold it (.safetensors neither; a tensor cache can)")
