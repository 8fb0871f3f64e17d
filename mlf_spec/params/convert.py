"""Convert between .params, NumPy .npz and safetensors without losing dtypes.

Tensors NumPy cannot hold (sub-byte, vector lanes, custom codes) travel as their stored
bytes (uint8) with their DLDataType recorded alongside: in a ``__mlf_spec__`` JSON entry
of the .npz, or in the safetensors ``__metadata__``. Converting back restores them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from mlf_spec._io import atomic_writer
from mlf_spec.errors import AmbiguousDialectError, MlfError, UnsupportedError

from . import codec as _params
from . import dtypes as _dt

_META_KEY = "__mlf_spec__"
FORMATS = {".params": "params", ".npz": "npz", ".safetensors": "safetensors"}


def format_of(path: str | os.PathLike) -> str:
    """'params', 'npz' or 'safetensors' from the file extension (anything else: params)."""
    return FORMATS.get(Path(path).suffix.lower(), "params")


def _split(p: _params.ParamsFile) -> tuple[dict[str, np.ndarray], dict[str, dict[str, Any]]]:
    arrays: dict[str, np.ndarray] = {}
    stored: dict[str, dict[str, Any]] = {}
    names = [n for n, _ in p.entries]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise UnsupportedError(f"duplicate names {dup} cannot be kept in this format")
    for name, t in p.entries:
        if isinstance(t, _params.StoredTensor):
            arrays[name] = np.frombuffer(memoryview(t.data).cast("B"), np.uint8).copy()
            stored[name] = {
                "code": t.dtype.code,
                "bits": t.dtype.bits,
                "lanes": t.dtype.lanes,
                "shape": list(t.shape),
            }
        elif t.dtype.type.__module__.startswith("ml_dtypes") or t.dtype.kind == "V":
            # bfloat16 / float8 arrays: kept as bytes plus their element type name
            arrays[name] = np.frombuffer(np.ascontiguousarray(t).tobytes(), np.uint8).copy()
            stored[name] = {"numpy": t.dtype.name, "shape": list(t.shape)}
        else:
            arrays[name] = t
    return arrays, stored


def _join(arrays: dict[str, np.ndarray], stored: dict[str, dict[str, Any]], order: list[str],
          dialect: str | None, shapes: dict[str, list[int]] | None = None) -> dict[str, Any]:
    shapes = shapes or {}
    out: dict[str, Any] = {}
    for name in order:
        a = arrays[name]
        if name in stored and "numpy" in stored[name]:
            s = stored[name]
            t = _dt_numpy(s["numpy"])
            out[name] = np.frombuffer(np.ascontiguousarray(a, np.uint8).tobytes(), t).reshape(s["shape"]).copy()
        elif name in stored:
            s = stored[name]
            out[name] = _params.StoredTensor.of(
                s["code"],
                s["bits"],
                s["lanes"],
                tuple(s["shape"]),
                np.ascontiguousarray(a, np.uint8).tobytes(),
                dialect,
            )
        else:
            out[name] = a.reshape(shapes[name]) if name in shapes else a
    return out


def _dt_numpy(name: str) -> np.dtype:
    import ml_dtypes

    if not hasattr(ml_dtypes, name):
        raise UnsupportedError(f"unknown element type {name!r} in the file's mlf-spec metadata")
    return np.dtype(getattr(ml_dtypes, name))


def read_any(source: str | os.PathLike | bytes, dialect: str | None = None, fmt: str | None = None) -> dict[str, Any]:
    """Read a .params, .npz or .safetensors file (a path, or its bytes) into name -> array /
    StoredTensor. ``fmt`` ('params', 'npz' or 'safetensors') defaults to the path's extension."""
    is_path = isinstance(source, (str, os.PathLike))
    name = os.fspath(source) if is_path else "<bytes>"
    fmt = fmt or (format_of(source) if is_path else "params")
    if fmt == "params":
        p = _params.load(source, dialect=dialect, strict=False)
        if p.choice.ambiguous:
            raise AmbiguousDialectError(ambiguity_message(p), [c.id for c in p.choice.candidates], file=name)
        return dict(p.items())
    if fmt == "npz":
        import io

        try:
            with np.load(source if is_path else io.BytesIO(source), allow_pickle=False) as z:
                keys = [k for k in z.files if k != _META_KEY]
                meta = json.loads(str(z[_META_KEY])) if _META_KEY in z.files else {}
                arrays = {k: z[k] for k in keys}
        except (OSError, ValueError, EOFError) as exc:
            raise MlfError(f"not a readable .npz: {exc}", file=name) from None
        order = meta.get("order", keys)
        return _join(arrays, meta.get("stored", {}), order, meta.get("dialect", dialect), meta.get("shapes"))
    try:
        from safetensors import safe_open
        from safetensors.numpy import load, load_file
    except ImportError:  # pragma: no cover - optional extra
        raise UnsupportedError("safetensors support needs `pip install mlf-spec[safetensors]`") from None
    try:
        if is_path:
            arrays = load_file(name)
            with safe_open(name, "np") as f:
                md = f.metadata() or {}
        else:
            arrays = load(bytes(source))
            md = _safetensors_metadata(bytes(source))
    except Exception as exc:  # safetensors raises its own error types
        raise MlfError(f"not a readable safetensors file: {exc}", file=name) from None
    meta = json.loads(md.get(_META_KEY, "{}"))
    order = meta.get("order", list(arrays))
    return _join(arrays, meta.get("stored", {}), order, meta.get("dialect", dialect), meta.get("shapes"))


def ambiguity_message(p: _params.ParamsFile) -> str:
    """Why a file cannot be converted without a dialect: the tensors whose reading depends
    on it, and the candidates."""
    choice = p.choice
    parts = []
    seen: set[tuple[int, int, int]] = set()
    for name, t in p.entries:
        dt = t.dtype if isinstance(t, _params.StoredTensor) else None
        key = (dt.code, dt.bits, dt.lanes) if dt is not None else _dt.from_numpy(t.dtype, choice.dialect)
        if key in seen:
            continue
        seen.add(key)
        options = _dt.readings(choice, key)
        if len(options) > 1:
            parts.append(f"{name!r} is " + " or ".join(f"{k} ({', '.join(v)})" for k, v in options.items()))
    return ("the dtype dialect is ambiguous: " + "; ".join(parts[:4]) + ("; ..." if len(parts) > 4 else "")
            + f"; choose one with --dialect ({', '.join(c.id for c in choice.candidates)})")


def _safetensors_metadata(data: bytes) -> dict[str, str]:
    """The ``__metadata__`` of safetensors bytes (the JSON header after its u64 length)."""
    n = int.from_bytes(data[:8], "little")
    return json.loads(data[8 : 8 + n]).get("__metadata__") or {}


def write_any(tensors: dict[str, Any], path: str | os.PathLike, dialect: str | None = None,
              fmt: str | None = None) -> None:
    """Write name -> array / StoredTensor as .params, .npz or .safetensors (atomically);
    ``fmt`` defaults to the path's extension."""
    fmt = fmt or format_of(path)
    if fmt == "params":
        _params.save(tensors, path, dialect=dialect)
        return
    pf = _params.ParamsFile([(n, t, None) for n, t in tensors.items()])
    arrays, stored = _split(pf)
    # safetensors' NumPy side stores 0-d arrays as shape (1,): record every shape
    meta = {"order": list(arrays), "stored": stored, "dialect": dialect,
            "shapes": {k: list(np.shape(v)) for k, v in arrays.items() if k not in stored}}
    if fmt == "npz":
        with atomic_writer(Path(path)) as f:
            np.savez(f, **arrays, **{_META_KEY: np.array(json.dumps(meta))})
        return
    try:
        from safetensors.numpy import save
    except ImportError:  # pragma: no cover - optional extra
        raise UnsupportedError("safetensors support needs `pip install mlf-spec[safetensors]`") from None
    try:
        data = save(
            {k: np.ascontiguousarray(v) for k, v in arrays.items()}, metadata={_META_KEY: json.dumps(meta)}
        )
    except Exception as exc:
        raise UnsupportedError(f"safetensors cannot hold these tensors: {exc}") from None
    with atomic_writer(Path(path)) as f:
        f.write(data)


def convert(src: str | os.PathLike | bytes, dst: str | os.PathLike, dialect: str | None = None, *,
            src_format: str | None = None, dst_format: str | None = None) -> int:
    """Convert ``src`` (a path or bytes) to ``dst``; formats ('params', 'npz',
    'safetensors') from the extensions unless given. Returns the tensor count."""
    tensors = read_any(src, dialect, src_format)
    write_any(tensors, dst, dialect, dst_format)
    return len(tensors)


__all__ = ["convert", "format_of", "read_any", "write_any"]
