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
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from mlf_spec.errors import MlfError, ValidationError

from . import encodings
from .folder import UnsafePathError, data_path_problem
from .index import B16_NAMES, INDEX_NAMES, LATEST, CacheIndex, parse
from .planning import _as_numpy, _b16_records, _format_of, _shard_chunks, index_text, plan


def _stored_bytes(arr: np.ndarray, encode: bool) -> bytes:
    if encode:
        return bytes(encodings.f32_to_bf16(arr))
    return arr.reshape(-1).view(np.uint8).tobytes()


def _old_index(folder: Path, name: str) -> dict[str, Any]:
    """The existing index as JSON (validated as a cache index first)."""
    path = folder / name
    raw = path.read_bytes()
    parse(raw, str(path), name=name)  # MlfError with the JSON path for what is not a cache index
    doc = json.loads(raw)
    for i, shard in enumerate(doc["records"]):
        problem = data_path_problem(shard["dataPath"])
        if problem is not None:
            raise UnsafePathError(f"{problem}: {shard['dataPath']!r}", file=str(path), field=f"records[{i}].dataPath")
    return doc


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
           version: int = LATEST, keep_empty: bool = True, b16: bool = True) -> CacheIndex:
    """Update the cache folder at ``path`` with ``params`` as ``dump_tensor_cache(...,
    update_if_exists=True)`` does (see the module), atomically; a folder without an index
    gets one, its other files kept. Returns the index written. MlfError for an existing index
    that is not a cache's, a shard that leaves the folder, or a tensor whose stored size
    differs from the record it would overwrite."""
    from mlf_spec._io import atomic_directory


    if version not in INDEX_NAMES:
        raise MlfError(f"cache version {version}: mlf-spec writes {sorted(INDEX_NAMES)}")
    folder = Path(path)
    index_name = INDEX_NAMES[version]
    old = _old_index(folder, index_name) if (folder / index_name).is_file() else None
    records: list[dict[str, Any]] = list(old["records"]) if old is not None else []
    if metadata is None and old is not None:
        if "metadata" not in old:
            raise ValidationError("the existing index has no metadata to keep (dump_tensor_cache fails on it too)",
                                  file=str(folder / index_name), field="metadata")
        metadata = old["metadata"]
    known = {rec["name"]: (i, rec) for i, shard in enumerate(records) for rec in shard["records"]}
    resolve = _format_of(encode_format)
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
        arr, spelling = _as_numpy(value, name)
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
            src = folder / shard["dataPath"]
            if src.is_symlink() or not src.is_file():
                raise MlfError("the shard to update is not a regular file in the folder", file=str(src))
            patched = bytearray(src.read_bytes())
            for offset, chunk in edits:  # as TVM's seek + write: past the end the file grows
                if offset > len(patched):
                    patched.extend(b"\0" * (offset - len(patched)))
                patched[offset:offset + len(chunk)] = chunk
            dest = tmp / shard["dataPath"]
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(patched)
            records[i] = {**shard, "md5sum": hashlib.md5(patched, usedforsecurity=False).hexdigest()}
        for k, entries in enumerate(shards):
            data_path = f"params_shard_{first + k}.bin"
            md5 = hashlib.md5(usedforsecurity=False)
            total = 0
            with open(tmp / data_path, "wb") as f:
                for chunk in _shard_chunks(entries):
                    md5.update(chunk)
                    f.write(chunk)
                    total += chunk.nbytes if hasattr(chunk, "nbytes") else len(chunk)
            records.append({"dataPath": data_path, "format": "raw-shard", "nbytes": total,
                            "records": [rec for rec, _, _ in entries], "md5sum": md5.hexdigest()})
        text = index_text(metadata, records)
        (tmp / index_name).write_text(text, encoding="utf-8")
        relabel = any(r.get("format") == "f32-to-bf16" and r.get("dtype") == "float32"
                      for s in records for r in s["records"])
        if relabel and b16:
            (tmp / B16_NAMES[version]).write_text(index_text(metadata, _b16_records(records)), encoding="utf-8")
    return parse(text.encode(), str(folder / index_name), name=index_name)


__all__ = ["update"]
