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

from mlf_spec._extras import missing as missing_extra
from mlf_spec._io import atomic_writer
from mlf_spec.errors import AmbiguousDialectError, MlfError, UnsupportedError

from . import codec as _params
from . import dtypes as _dt

_META_KEY = "__mlf_spec__"
FORMATS = {".params": "params", ".npz": "npz", ".safetensors": "safetensors"}

#: An .npz may inflate to this many times its size, plus 64 MiB (NumPy's savez stores
#: members uncompressed; savez_compressed of real weights stays far below it).
MAX_EXPANSION = 64


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


def read_any(source: str | os.PathLike | bytes, dialect: str | None = None, fmt: str | None = None, *,
             max_expansion: int = MAX_EXPANSION) -> dict[str, Any]:
    """Read a .params, .npz or .safetensors file (a path, or its bytes) into name -> array /
    StoredTensor. ``fmt`` ('params', 'npz' or 'safetensors') defaults to the path's extension.
    Every defect of the input is an MlfError: a damaged zip, an .npy header that is not one
    or whose shape the member cannot hold, metadata of the wrong shape; an .npz whose
    members inflate to more than ``max_expansion`` times its size (plus 64 MiB) is an
    UnsafeArchiveError before anything is inflated."""
    is_path = isinstance(source, (str, os.PathLike))
    name = os.fspath(source) if is_path else "<bytes>"
    fmt = fmt or (format_of(source) if is_path else "params")
    if fmt == "params":
        p = _params.load(source, dialect=dialect, strict=False, mapped=False)  # by pread: never SIGBUS
        if p.choice.ambiguous:
            raise AmbiguousDialectError(ambiguity_message(p), [c.id for c in p.choice.candidates], file=name)
        return dict(p.items())
    if fmt == "npz":
        arrays, meta, keys = _read_npz(source, name, max_expansion)
        arrays, keys = _members_renamed(arrays, meta, keys, name)
        return _join_checked(arrays, meta, keys, dialect, name)
    try:
        from safetensors import safe_open
        from safetensors.numpy import load, load_file
    except ImportError:  # pragma: no cover - optional extra
        raise UnsupportedError(missing_extra("safetensors support", "safetensors", "safetensors")) from None
    try:
        if is_path:
            arrays, md = _safetensors_file(name, safe_open, load_file, load)
        else:
            arrays = load(bytes(source))
            md = _safetensors_metadata(bytes(source))
    except MlfError:
        raise
    except Exception as exc:  # safetensors raises its own error types
        raise MlfError(f"not a readable safetensors file: {_short(exc)}", file=name) from None
    return _join_checked(arrays, _meta_document(md.get(_META_KEY), name), list(arrays), dialect, name)


def _safetensors_file(name: str, safe_open: Any, load_file: Any, load: Any) -> tuple[dict[str, Any], dict[str, str]]:
    """The arrays and metadata of a safetensors file, read by pread, never mapped (a file
    truncated meanwhile is an error, not SIGBUS): safetensors' own pread backend (0.8 on),
    else the file read into memory by pread and parsed from the bytes."""
    try:
        arrays = load_file(name, backend="pread")
        with safe_open(name, "np", backend="pread") as f:
            return arrays, f.metadata() or {}
    except TypeError as exc:
        if "backend" not in str(exc):
            raise
    from mlf_spec._io import read_at

    with open(name, "rb") as f:
        data = bytes(read_at(f.fileno(), 0, os.fstat(f.fileno()).st_size, file=name))
    return load(data), _safetensors_metadata(data)


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
    md = json.loads(data[8 : 8 + n]).get("__metadata__") or {}
    return md if isinstance(md, dict) else {}


def _short(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) <= 200 else text[:200] + "..."


def _read_npz(source: Any, name: str, max_expansion: int) -> tuple[dict[str, np.ndarray], Any, list[str]]:
    """The arrays of an .npz, its mlf-spec metadata document and member order; every .npy
    header is read and checked against its member's size before its data is read."""
    import io
    import zipfile

    from mlf_spec.errors import UnsafeArchiveError

    is_path = isinstance(source, (str, os.PathLike))
    try:
        size = os.path.getsize(source) if is_path else len(source)
        with zipfile.ZipFile(source if is_path else io.BytesIO(source)) as z:
            infos = [i for i in z.infolist() if not i.is_dir()]
            inflated = sum(i.file_size for i in infos)
            if inflated > max_expansion * size + (64 << 20):
                raise UnsafeArchiveError(f"the members inflate to {inflated} bytes, more than {max_expansion} times "
                                         "the file's size (a zip bomb?)", file=name)
            arrays: dict[str, np.ndarray] = {}
            meta: Any = None
            for info in infos:
                key = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
                with z.open(info) as f:
                    arrays[key] = _read_npy(f, info.file_size, name, key)
            if _META_KEY in arrays:
                meta_array = arrays.pop(_META_KEY)
                if meta_array.dtype.kind != "U" or meta_array.shape != ():
                    raise MlfError(f"{_META_KEY} is not one string", file=name, field=_META_KEY)
                meta = str(meta_array)
    except MlfError:
        raise
    except MemoryError:
        raise MlfError("not enough memory for the .npz's arrays", file=name) from None
    except Exception as exc:  # zipfile, zlib and numpy raise many kinds on damaged input
        raise MlfError(f"not a readable .npz: {type(exc).__name__}: {_short(exc)}", file=name) from None
    return arrays, _meta_document(meta, name), list(arrays)


def _members_renamed(arrays: dict[str, np.ndarray], meta: dict[str, Any], keys: list[str],
                     name: str) -> tuple[dict[str, np.ndarray], list[str]]:
    """The arrays by tensor name: the metadata's ``members`` (tensor name -> member name,
    for a tensor named like the metadata member) applied."""
    members = meta.get("members", {})
    if not isinstance(members, dict) or not all(isinstance(k, str) and isinstance(v, str) and v in arrays
                                                and k not in arrays for k, v in members.items()):
        raise MlfError(f"{_META_KEY}: 'members' does not map tensor names to the file's members", file=name,
                       field=_META_KEY)
    if not members:
        return arrays, keys
    back = {v: k for k, v in members.items()}
    return {back.get(k, k): v for k, v in arrays.items()}, [back.get(k, k) for k in keys]


def _read_npy(f: Any, member_size: int, name: str, key: str) -> np.ndarray:
    from numpy.lib import format as npf

    version = npf.read_magic(f)
    if version not in ((1, 0), (2, 0), (3, 0)):
        raise MlfError(f"unknown .npy version {version}", file=name, field=key)
    reader = npf.read_array_header_1_0 if version == (1, 0) else npf.read_array_header_2_0
    shape, fortran, dtype = reader(f)
    if dtype.hasobject:
        raise MlfError("an array of Python objects (pickled) is not read", file=name, field=key)
    count = 1
    for n in shape:
        count *= n
    header = f.tell()
    if count * dtype.itemsize != member_size - header:
        raise MlfError(f"the header says {shape} of {dtype} ({count * dtype.itemsize} bytes) but the member holds "
                       f"{member_size - header} bytes of data", file=name, field=key)
    data = f.read(member_size - header)
    if len(data) != member_size - header:
        raise MlfError("the member ends early", file=name, field=key)
    array = np.frombuffer(data, dtype=dtype)
    return array.reshape(shape, order="F" if fortran else "C")


def _meta_document(text: Any, name: str) -> dict[str, Any]:
    """The ``__mlf_spec__`` metadata as a checked document ({} when absent)."""
    if text is None:
        return {}
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise MlfError(f"{_META_KEY} is not JSON: {_short(exc)}", file=name, field=_META_KEY) from None
    if not isinstance(doc, dict):
        raise MlfError(f"{_META_KEY} is not a JSON object", file=name, field=_META_KEY)
    return doc


def _join_checked(arrays: dict[str, np.ndarray], meta: dict[str, Any], keys: list[str], dialect: str | None,
                  name: str) -> dict[str, Any]:
    """``_join`` of what a file holds, its metadata checked first: an order naming the
    arrays, stored entries with integer fields, shapes of non-negative integers."""
    order = meta.get("order", keys)
    stored = meta.get("stored", {})
    shapes = meta.get("shapes") or {}

    def bad(what: str) -> MlfError:
        return MlfError(f"{_META_KEY}: {what}", file=name, field=_META_KEY)

    def is_shape(v: Any) -> bool:
        return isinstance(v, list) and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in v)

    if not isinstance(order, list) or not all(isinstance(k, str) and k in arrays for k in order):
        raise bad("'order' is not a list of the file's array names")
    if not isinstance(stored, dict) or not isinstance(shapes, dict):
        raise bad("'stored' and 'shapes' must be objects")
    for k, s in stored.items():
        if not isinstance(s, dict) or not is_shape(s.get("shape")):
            raise bad(f"stored entry {k!r} has no shape")
        if "numpy" in s:
            if not isinstance(s["numpy"], str):
                raise bad(f"stored entry {k!r}: 'numpy' is not a type name")
        elif not all(isinstance(s.get(f), int) and not isinstance(s.get(f), bool) for f in ("code", "bits", "lanes")):
            raise bad(f"stored entry {k!r} needs integer code, bits and lanes")
    for k, v in shapes.items():
        if not is_shape(v):
            raise bad(f"shape of {k!r} is not a list of sizes")
    dialect = meta.get("dialect", dialect)
    if dialect is not None and not isinstance(dialect, str):
        raise bad("'dialect' is not a string")
    try:
        return _join(arrays, stored, order, dialect, shapes)
    except MlfError:
        raise
    except (ValueError, TypeError, KeyError, OverflowError) as exc:  # a shape or size that does not fit the data
        raise bad(f"does not fit the arrays: {_short(exc)}") from None


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
        _npz_names(arrays)
        _write_npz(path, arrays, meta)
        return
    try:
        from safetensors.numpy import save
    except ImportError:  # pragma: no cover - optional extra
        raise UnsupportedError(missing_extra("safetensors support", "safetensors", "safetensors")) from None
    try:
        data = save(
            {k: np.ascontiguousarray(v) for k, v in arrays.items()}, metadata={_META_KEY: json.dumps(meta)}
        )
    except Exception as exc:
        raise UnsupportedError(f"safetensors cannot hold these tensors: {exc}") from None
    with atomic_writer(Path(path)) as f:
        f.write(data)


def _write_npz(path: str | os.PathLike, arrays: dict[str, Any], meta: dict[str, Any]) -> None:
    """Write the .npz as ``numpy.savez`` lays it out (uncompressed members ``NAME.npy``,
    written by ``numpy.lib.format``), atomically; names are never keywords of a call, so a
    tensor may be named ``file`` or ``allow_pickle``. A tensor named like the metadata
    member (``__mlf_spec__``) is stored under another member name, which the metadata's
    ``members`` maps back (read by :func:`read_any`)."""
    import zipfile

    from numpy.lib import format as npf

    members: dict[str, str] = {}
    taken = set(arrays) | {_META_KEY}
    for name in arrays:
        if name == _META_KEY:
            key, k = f"{name}.tensor", 0
            while key in taken:
                k += 1
                key = f"{name}.tensor{k}"
            taken.add(key)
            members[name] = key
    if members:
        meta = {**meta, "members": members}
    with atomic_writer(Path(path)) as f, zipfile.ZipFile(f, "w", zipfile.ZIP_STORED, allowZip64=True) as z:
        for name, value in [*((members.get(n, n), v) for n, v in arrays.items()),
                            (_META_KEY, np.array(json.dumps(meta)))]:
            with z.open(f"{name}.npy", "w", force_zip64=True) as member:
                npf.write_array(member, np.asanyarray(value), allow_pickle=False)


def _npz_names(arrays: dict[str, Any]) -> None:
    """Refuse names an .npz cannot hold: zip member names are UTF-8 text of at most 65,535
    bytes (with ``.npy`` added)."""
    for n in arrays:
        try:
            size = len(n.encode("utf-8"))
        except UnicodeEncodeError:
            raise UnsupportedError(f"the name {_params.name_bytes(n)[:60]!r} is not UTF-8 text, which .npz member "
                                   "names must be; convert to .params or .safetensors") from None
        if size + 4 > 0xFFFF:
            raise UnsupportedError(f"a name of {size} bytes: .npz member names hold at most 65,531 bytes")


def convert(src: str | os.PathLike | bytes, dst: str | os.PathLike, dialect: str | None = None, *,
            src_format: str | None = None, dst_format: str | None = None) -> int:
    """Convert ``src`` (a path or bytes) to ``dst``; formats ('params', 'npz',
    'safetensors') from the extensions unless given. Returns the tensor count."""
    tensors = read_any(src, dialect, src_format)
    write_any(tensors, dst, dialect, dst_format)
    return len(tensors)


__all__ = ["convert", "format_of", "read_any", "write_any"]
