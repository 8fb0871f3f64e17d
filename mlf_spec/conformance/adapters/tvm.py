"""apache-tvm's ``.params`` codec under test: ``tvm.runtime.load_param_dict`` (decode) and
``save_param_dict`` (encode), in a child process (``isolated``): TVM aborts on some inputs
and 0.21+ writes past a packed allocation for sub-byte tensors, so a crash must be an outcome
of one case. Known failures: ``tvm.known-failures`` next to this file.

What the reading holds is what TVM's API shows: names in the order of the Map it returns,
and for each tensor its DLDataType, shape and the bytes TVM holds for it (taken from the
record ``save_param_dict`` writes for that tensor alone, read with the spec's record
grammar: the only way TVM's API gives the bytes of every dtype, sub-byte and vector ones
included, and the DLDataType of codes TVM cannot spell). Fields TVM reads and drops
(reserved words, device ids, trailing bytes) are left out (``may_omit``).
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any

from mlf_spec.generated.formats import PROTOCOL

from .base import Adapter, Rejected


def _last_line(exc: BaseException) -> str:
    lines = [x for x in str(exc).strip().splitlines() if x.strip()]
    return f"{type(exc).__name__}: {lines[-1] if lines else ''}"


def params_reading(records: list[tuple[str, bytes, str | None]]) -> dict[str, Any]:
    """The canonical .params reading of what a TVM loader holds: per tensor (in the order of
    the Map it returned) its name, the record ``save_param_dict`` writes for it alone and its
    dtype string (None: TVM cannot spell it). The record, read with the spec's grammar, gives
    the DLDataType, shape and bytes TVM holds, for every dtype."""
    from mlf_spec.generated.params_fast import read_params_file

    tensors = []
    for name, record, spelling in records:
        rec = read_params_file(record, 0, len(record))[0].arrays[0]  # TVM's own record of the tensor
        raw = record[rec.data_offset:rec.data_offset + rec.data_byte_size]
        entry: dict[str, Any] = {"name": name, "code": rec.dtype_code, "bits": rec.dtype_bits,
                                 "lanes": rec.dtype_lanes, "shape": list(rec.shape), "nbytes": rec.data_byte_size,
                                 "sha256": hashlib.sha256(raw).hexdigest()}
        if spelling is not None:
            entry["dtype"] = spelling
        tensors.append(entry)
    return {"format": "params", "tensors": tensors}


def encodable(reading: Any, packed: bool = True) -> list[dict[str, Any]]:
    """The tensors of a canonical reading that ``save_param_dict`` can be handed, each with
    ``raw``: the bytes of its in-memory size (the file holds the first lane part); Rejected
    for what no TVM tensor can be made to write (names that are not UTF-8, a name twice,
    and, where TVM's memory is ``packed`` (0.21 on), sub-byte elements: bit-packed there but
    one per byte in the file). Before 0.21 a tensor holds (bits x lanes + 7) / 8 bytes per
    element, as the file does."""
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for t in reading["tensors"]:
        if "name_hex" in t:
            raise Rejected(f"{t['name']!r}: TVM names are Python str; bytes that are not UTF-8 cannot be given")
        if t["name"] in seen:
            raise Rejected(f"{t['name']!r} twice: save_param_dict takes a dict")
        seen.add(t["name"])
        bits, lanes = t["bits"], t["lanes"]
        if bits % 8 and packed:
            raise Rejected(f"{t['name']!r}: {bits}-bit elements are bit-packed in TVM's memory, one byte per "
                           "element in the file; the bytes cannot be given to TVM")
        numel = 1
        for s in t["shape"]:
            numel *= s
        size = numel * (bits // 8) * max(lanes, 1) if packed else numel * ((bits * lanes + 7) // 8)
        raw = base64.b64decode(t["data"])
        out.append({**t, "raw": raw.ljust(size, b"\0")[:size] if size > 0 else b""})
    return out


class TvmAdapter(Adapter):
    """apache-tvm's load_param_dict / save_param_dict."""

    name = "tvm"
    isolated = True

    def setup(self, progress: bool = True) -> None:
        """apache-tvm in this Python, else one line saying how to install it."""
        self.needs("tvm", "tvm", "apache-tvm")

    def prepare(self) -> None:
        """Import TVM once (the served requests run in forked children)."""
        import tvm_ffi  # noqa: F401
        from tvm import runtime  # noqa: F401
        from tvm.contrib import tvmjs  # noqa: F401
        from tvm.runtime import _ffi_api  # noqa: F401

    def info(self) -> dict[str, Any]:
        """.params decode and encode, in the dtype dialect of the installed TVM."""
        import tvm

        from mlf_spec.params import dtypes

        dialect = dtypes.dialect(tvm.__version__).id
        from .tvm_cache import cache_support, index_versions

        return {"protocol": PROTOCOL, "name": "apache-tvm", "version": tvm.__version__, "serve": True,
                "formats": [{"format": "params", "roles": ["decode", "encode"], "scope": {"dialect": [dialect]}},
                            cache_support(index_versions(tvm.__version__), ("decode", "encode"))]}

    def decode(self, format: str, data: bytes, options: dict[str, str]) -> Any:  # noqa: A002
        """load_param_dict, then each tensor as TVM holds it; a tensor cache folder through
        load_tensor_cache (:mod:`.tvm_cache`)."""
        if format == "tensor-cache":
            from pathlib import Path

            from .tvm_cache import load_here

            return load_here(Path(data), "python")  # type: ignore[arg-type]  # a folder format's data is its path
        if format != "params":
            raise Rejected(f"tvm adapter: no {format}")
        from tvm import runtime

        try:
            loaded = runtime.load_param_dict(bytearray(data))
            names = list(loaded.keys())
        except Exception as exc:  # TVM refused the file (or its names are not UTF-8 for Python)
            raise Rejected(_last_line(exc)) from None
        records = []
        for name in names:
            t = loaded[name]
            try:
                record = bytes(runtime.save_param_dict({"x": t}))
            except Exception as exc:
                raise Rejected(f"{name!r}: TVM cannot write back what it read: {_last_line(exc)}") from None
            try:
                spelling: str | None = str(t.dtype)
            except Exception:  # TVM has no spelling for this code: the key may be left out
                spelling = None
            records.append((name, record, spelling))
        return params_reading(records)

    def encode(self, format: str, reading: Any, options: dict[str, str]) -> bytes:  # noqa: A002
        """save_param_dict of TVM tensors made from the reading; a tensor cache folder through
        dump_tensor_cache into ``options["output_dir"]`` (:mod:`.tvm_cache`)."""
        if format == "tensor-cache":
            from .tvm_cache import dump_here

            dump_here(reading, options)
            return b""
        if format != "params":
            raise Rejected(f"tvm adapter: no {format}")
        import ctypes

        import tvm_ffi
        from tvm import runtime
        from tvm.runtime import _ffi_api

        params: dict[str, Any] = {}
        for t in encodable(reading):
            code, bits, lanes = t["code"], t["bits"], t["lanes"]
            try:
                dt = tvm_ffi.dtype.from_dlpack_data_type((code, bits, lanes))
                tensor = runtime.empty(tuple(t["shape"]), dt)
            except Exception as exc:
                raise Rejected(f"{t['name']!r}: {_last_line(exc)}") from None
            size = len(t["raw"])  # TVM's in-memory size; the file holds the first lane part
            if size:
                buf = (ctypes.c_uint8 * size).from_buffer_copy(t["raw"])
                _ffi_api.TVMTensorCopyFromBytes(tensor, ctypes.cast(buf, ctypes.c_void_p), size)
            params[t["name"]] = tensor
        try:
            return bytes(runtime.save_param_dict(params))
        except Exception as exc:
            raise Rejected(_last_line(exc)) from None


ADAPTER = TvmAdapter
