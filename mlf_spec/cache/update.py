"""``update_if_exists``: add tensors to a cache folder and overwrite some in place, as
``dump_tensor_cache(..., update_if_exists=True)`` does (tvm.contrib.tvmjs, 0.27 wheel), with
the same bytes, but atomically.

TVM's behaviour, which this reproduces: when the folder's index exists, its ``metadata`` is
kept (unless new metadata is given) and its shard records are kept as they were read; a
tensor whose name the index already holds has its stored bytes overwritten at its old
``byteOffset`` (its size must be the old ``nbytes``, else it is refused) and its shard's
``md5sum`` recomputed, while its index record stays the old one (TVM updates its own map,
not the record it writes); the other tensors go into new shards numbered after the old ones,
packed as a fresh write packs them; the bf16 index is written again from all records, or
removed when no record is a float32 under f32-to-bf16. Files of the folder that are not the
cache's (a model's tokenizer, its config) stay.

TVM writes into the shards in place; here the new folder is built beside the old one (the
files that do not change are hard links, or copies where links cannot be made) and renamed
in when complete, so that a failure leaves the folder as it was.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
from builtins import open as builtins_open
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from mlf_spec.errors import MlfError, ValidationError

from . import encodings
from .folder import UnsafePathError, data_path_problem
from .index import B16_NAMES, INDEX_NAMES, LATEST, CacheIndex, parse
from .planning import as_numpy, format_resolver, plan, write_indexes, write_shard


def _stored_bytes(arr: np.ndarray, encode: bool) -> bytes:
    if encode:
        return bytes(encodings.f32_to_bf16(arr))
    return arr.reshape(-1).view(np.uint8).tobytes()


def _old_cache(folder: Path, name: str, opener: Callable[[Path], Any]) -> tuple[dict[str, Any], Any]:
    """The existing index as JSON and the opened cache: opened by the read path
    (:func:`codec.open`, strict), so that every check of a reading (the index's size cap,
    dataPaths inside the folder and through no symbolic link, shard sizes, every record
    inside its shard) holds before a byte is written. ``opener`` is :func:`codec.open`
    (passed in by :func:`codec.write`: this module is below the codec)."""
    lazy = opener(folder / name)
    try:
        doc = json.loads(lazy.index.raw)
        for i, shard in enumerate(doc["records"]):
            problem = data_path_problem(shard["dataPath"])
            if problem is not None:
                raise UnsafePathError(f"{problem}: {shard['dataPath']!r}", file=str(folder / name),
                                      field=f"records[{i}].dataPath")
    except BaseException:
        lazy.close()
        raise
    return doc, lazy


def _patch_shard(lazy: Any, i: int, edits: list[tuple[int, bytes]], dest: Path) -> str:
    """Copy shard ``i`` to ``dest`` (a new file, never a link to the old one), write
    ``edits`` at their offsets (inside the shard: :func:`_old_cache` checked it) and return
    the new MD5; a shard whose size changes while it is copied is an MlfError."""
    size = lazy.shard_size(i)
    src = lazy.folder / lazy.index.shards[i].data_path
    dest.parent.mkdir(parents=True, exist_ok=True)
    if dest.is_symlink() or dest.exists():
        dest.unlink()  # a hard link made by _carry_over: writing through it would change the input
    h = hashlib.md5(usedforsecurity=False)
    with builtins_open(dest, "wb") as out:
        done = 0
        for block in lazy.shard_blocks(i):
            out.write(block)
            done += len(block)
        if done != size or lazy.shard_size(i) != size:
            raise MlfError("the shard changed size while it was read", file=str(src))
        for offset, chunk in edits:
            if offset < 0 or offset + len(chunk) > size:
                raise MlfError(f"bytes {offset}..{offset + len(chunk)} go past the shard's {size} bytes",
                               file=str(src), offset=offset)
            out.seek(offset)
            out.write(chunk)
    with builtins_open(dest, "rb") as f:
        while block := f.read(1 << 22):
            h.update(block)
    return h.hexdigest()


def _link_or_copy(src: str | Path, dst: str | Path) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def _carry_over(folder: Path, tmp: Path, skip: set[str]) -> None:
    """Hard-link (or copy) every entry of ``folder`` into ``tmp`` but those in ``skip``; a
    symbolic link is kept as a link, never followed."""
    for entry in os.scandir(folder):
        if entry.name in skip:
            continue
        src, dst = Path(entry.path), tmp / entry.name
        mode = entry.stat(follow_symlinks=False).st_mode
        if stat.S_ISLNK(mode):
            os.symlink(os.readlink(src), dst)
        elif stat.S_ISDIR(mode):
            shutil.copytree(src, dst, symlinks=True, copy_function=_link_or_copy)
        elif stat.S_ISREG(mode):
            _link_or_copy(src, dst)


def update(path: str | os.PathLike[str], params: Mapping[str, Any] | Iterable[tuple[str, Any]], *,
           encode_format: str | Mapping[str, str] = "f32-to-bf16", shard_cap_mb: float = 32, metadata: Any = None,
           version: int = LATEST, keep_empty: bool = True, b16: bool = True,
           opener: Callable[[Path], Any] | None = None) -> CacheIndex:
    """Update the cache folder at ``path`` with ``params`` as ``dump_tensor_cache(...,
    update_if_exists=True)`` does (see the module), atomically; a folder without an index
    gets one, its other files kept. Returns the index written. MlfError for an existing index
    that is not a cache's, a shard that leaves the folder, or a tensor whose stored size
    differs from the record it would overwrite; the existing cache is opened as
    :func:`mlf_spec.cache.open` opens it (every check of a reading holds before a byte is
    written), and a refused update changes nothing."""
    if version not in INDEX_NAMES:
        raise MlfError(f"cache version {version}: mlf-spec writes {sorted(INDEX_NAMES)}")
    folder = Path(path)
    index_name = INDEX_NAMES[version]
    if opener is None:
        raise MlfError("update needs the cache reader (call mlf_spec.cache.write(..., update_if_exists=True))")
    old, lazy = _old_cache(folder, index_name, opener) if (folder / index_name).is_file() else (None, None)
    try:
        return _update(folder, index_name, old, lazy, params, encode_format=encode_format,
                       shard_cap_mb=shard_cap_mb, metadata=metadata, version=version, keep_empty=keep_empty, b16=b16)
    finally:
        if lazy is not None:
            lazy.close()


def _update(folder: Path, index_name: str, old: dict[str, Any] | None, lazy: Any,
            params: Mapping[str, Any] | Iterable[tuple[str, Any]], *, encode_format: str | Mapping[str, str],
            shard_cap_mb: float, metadata: Any, version: int, keep_empty: bool, b16: bool) -> CacheIndex:
    from mlf_spec._io import atomic_directory

    records: list[dict[str, Any]] = list(old["records"]) if old is not None else []
    if metadata is None and old is not None:
        if "metadata" not in old:
            raise ValidationError("the existing index has no metadata to keep (dump_tensor_cache fails on it too)",
                                  file=str(folder / index_name), field="metadata")
        metadata = old["metadata"]
    known = {rec["name"]: (i, rec) for i, shard in enumerate(records) for rec in shard["records"]}
    resolve = format_resolver(encode_format)
    patches: dict[int, list[tuple[int, bytes]]] = {}
    fresh: list[tuple[str, Any]] = []
    seen: set[str] = set()
    for name, value in (params.items() if isinstance(params, Mapping) else params):
        if name in seen:
            raise ValidationError(f"duplicate name {name!r} (dump_tensor_cache refuses it too)", field=str(name))
        seen.add(name)
        if name not in known:
            fresh.append((name, value))
            continue
        arr, spelling = as_numpy(value, name)
        data = _stored_bytes(arr, encodings.applies(resolve(name), spelling))
        shard_i, rec = known[name]
        if rec["nbytes"] != len(data):
            raise ValidationError(f"cannot update {name!r}: it stores {len(data)} bytes, its record {rec['nbytes']} "
                                  "(dump_tensor_cache refuses it: size mismatch)", field=name)
        patches.setdefault(shard_i, []).append((rec["byteOffset"], data))
    shards, _ = plan(fresh, encode_format=encode_format, shard_cap_mb=shard_cap_mb, keep_empty=keep_empty)
    metadata = {} if metadata is None else metadata() if callable(metadata) else metadata
    first = len(records)
    new_names = {f"params_shard_{first + i}.bin" for i in range(len(shards))}
    patched_names = {records[i]["dataPath"] for i in patches}
    with atomic_directory(folder, replace=True) as tmp:
        if folder.is_dir():
            _carry_over(folder, tmp, new_names | patched_names | {index_name, B16_NAMES[version]})
        for i, edits in sorted(patches.items()):
            shard = records[i]
            md5 = _patch_shard(lazy, i, edits, tmp / shard["dataPath"])
            records[i] = {**shard, "md5sum": md5}
        for k, entries in enumerate(shards):
            records.append(write_shard(tmp, f"params_shard_{first + k}.bin", entries))
        relabel = any(r.get("format") == "f32-to-bf16" and r.get("dtype") == "float32"
                      for s in records for r in s["records"])
        text = write_indexes(tmp, index_name, B16_NAMES[version] if relabel and b16 else None, metadata, records)
    return parse(text.encode(), str(folder / index_name), name=index_name)


__all__ = ["update"]
