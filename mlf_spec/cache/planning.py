"""How ``dump_tensor_cache`` lays a cache out, as data: which tensors go to which shard at
which offset under which encoding (:func:`plan`), the index text, the bf16 index's records.
Shared by the writer (:mod:`.codec`) and the updater (:mod:`.update`)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from mlf_spec.errors import UnsupportedError, ValidationError

from . import dtypes, encodings


def as_numpy(value: Any, name: str) -> tuple[np.ndarray, str]:
    """The array and the dtype spelling dump_tensor_cache records for it."""
    if isinstance(value, np.ndarray) or np.isscalar(value):
        arr = np.asarray(value)
        spelling = None
    elif hasattr(value, "numpy"):  # a tvm.runtime.Tensor: TVM records its own dtype
        spelling = str(value.dtype)
        arr = value.numpy()
    else:
        arr = np.asarray(value)
        spelling = None
    if arr.dtype.byteorder == ">":
        arr = arr.astype(arr.dtype.newbyteorder("<"))
    if spelling is None:
        spelling = dtypes.spelling_of(arr.dtype)
    dt = dtypes.parse(spelling)
    if dt is None or dt.numpy is None or dt.numpy.itemsize != arr.dtype.itemsize:
        raise UnsupportedError(f"NumPy dtype {arr.dtype} has no TVM dtype a tensor cache can hold", field=name)
    return (arr if arr.flags.c_contiguous else arr.copy(order="C")), spelling


def format_resolver(encode_format: str | Mapping[str, str]) -> Any:
    """name -> encode format, as dump_tensor_cache resolves its argument: a string for every
    tensor, or (0.27) a mapping by name with ``"*"`` for the names it does not list."""
    if isinstance(encode_format, str):
        formats: Mapping[str, str] = {"*": encode_format}
    elif isinstance(encode_format, Mapping):
        formats = encode_format
    else:
        raise UnsupportedError("encode_format is a string or a mapping of names to formats")
    for name, fmt in formats.items():
        if fmt not in encodings.WRITABLE:
            raise UnsupportedError(f"encode_format {fmt!r} (for {name!r}): dump_tensor_cache takes "
                                   f"{' or '.join(encodings.WRITABLE)}")

    def resolve(name: str) -> str:
        fmt = formats.get(name, formats.get("*"))
        if fmt is None:
            raise UnsupportedError(f"no encode_format for {name!r} (and no '*')", field=name)
        return fmt
    return resolve


def plan(params: Iterable[tuple[str, Any]], *, encode_format: str | Mapping[str, str] = "f32-to-bf16",
         shard_cap_mb: float = 32, keep_empty: bool = True) -> tuple[list[list[tuple[dict, np.ndarray, bool]]], bool]:
    """The shards dump_tensor_cache makes: per shard the records (in the writer's key order)
    with their arrays and whether to encode them; and whether f32-to-bf16 applied to some
    tensor. A tensor of at least half the cap that does not fit goes to a shard of its own at
    once (the shard being filled stays open); records of no bytes left in an unwritten shard
    at the end are dropped by TVM, and kept in a shard of 0 bytes when ``keep_empty``."""
    resolve = format_resolver(encode_format)
    cap = shard_cap_mb * (1 << 20)
    shards: list[list[tuple[dict, np.ndarray, bool]]] = []
    pending: list[tuple[dict, np.ndarray, bool]] = []
    pending_n = 0
    names: set[str] = set()
    for name, value in params:
        if not isinstance(name, str):
            raise UnsupportedError(f"tensor names are strings, not {type(name).__name__}", field=repr(name))
        if name in names:
            raise ValidationError(f"duplicate name {name!r} (dump_tensor_cache refuses it too)", field=name)
        names.add(name)
        arr, spelling = as_numpy(value, name)
        fmt = resolve(name)
        encode = encodings.applies(fmt, spelling)
        n = arr.size * 2 if encode else arr.nbytes
        rec = {"name": name, "shape": [int(d) for d in arr.shape], "dtype": spelling, "format": fmt, "nbytes": n}
        if pending_n + n >= cap:
            if n * 2 >= cap:
                rec["byteOffset"] = 0
                shards.append([(rec, arr, encode)])
                continue
            if pending_n:
                shards.append(pending)
                pending, pending_n = [], 0
        rec["byteOffset"] = pending_n
        pending.append((rec, arr, encode))
        pending_n += n
    if pending and (pending_n or keep_empty):
        shards.append(pending)
    triggered = any(encode for s in shards for _, _, encode in s)
    return shards, triggered


def shard_chunks(entries: list[tuple[dict, np.ndarray, bool]]) -> Iterator[Any]:
    """The bytes of a shard's tensors in order, as buffers (f32-to-bf16 tensors encoded)."""
    for _rec, arr, encode in entries:
        if arr.nbytes == 0:
            continue
        if encode:
            yield encodings.f32_to_bf16(arr)
        else:
            yield arr.reshape(-1).view(np.uint8).data


def write_shard(folder: Path, data_path: str, entries: list[tuple[dict, np.ndarray, bool]]) -> dict[str, Any]:
    """Write the shard ``data_path`` of ``entries`` (a shard of :func:`plan`) into ``folder``,
    streaming, and return its index record (size and MD5 of what was written)."""
    md5 = hashlib.md5(usedforsecurity=False)
    total = 0
    with open(folder / data_path, "wb") as f:
        for chunk in shard_chunks(entries):
            md5.update(chunk)
            f.write(chunk)
            total += chunk.nbytes if hasattr(chunk, "nbytes") else len(chunk)
    return {"dataPath": data_path, "format": "raw-shard", "nbytes": total,
            "records": [rec for rec, _, _ in entries], "md5sum": md5.hexdigest()}


def write_indexes(folder: Path, index_name: str, b16_name: str | None, metadata: Any, records: list[dict]) -> str:
    """Write the index ``index_name`` of ``records`` into ``folder``, and the bf16 copy of it as
    ``b16_name`` unless that is None; returns the index text."""
    text = index_text(metadata, records)
    (folder / index_name).write_text(text, encoding="utf-8")
    if b16_name is not None:
        (folder / b16_name).write_text(index_text(metadata, b16_records(records)), encoding="utf-8")
    return text


def index_text(metadata: Any, shards: list[dict]) -> str:
    """The index as ``json.dump(..., indent=4)`` writes it."""
    return json.dumps({"metadata": metadata, "records": shards}, indent=4)


def b16_records(records: list[dict]) -> list[dict]:
    """The records of the bf16 index: the f32-to-bf16 float32 tensors relabelled bfloat16 / raw
    (0.27; earlier writers relabelled every float32 tensor, and wrote the file whenever the
    encoding applied to a tensor, even one the index then dropped)."""
    out = []
    for shard in records:
        recs = [{**r, "format": "raw", "dtype": "bfloat16"} if r["dtype"] == "float32" and r["format"] == "f32-to-bf16"
                else r for r in shard["records"]]
        out.append({**shard, "records": recs})
    return out


# the names before they were public (cache/codec.py imports them)
_b16_records, _shard_chunks = b16_records, shard_chunks

__all__ = ["b16_records", "index_text", "plan", "shard_chunks", "write_indexes", "write_shard"]
