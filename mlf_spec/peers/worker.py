"""The request loop run inside a peer runtime's own interpreter (a TVM venv of another Python
or another NumPy): standard library, ``tvm`` and ``numpy`` only, never mlf-spec.

    <venv>/bin/python worker.py        # one JSON request per line on stdin, one reply per line

TVM is imported once; every request is answered in a process forked from this one, so that
an abort, a segmentation fault or a heap the loader corrupted ends that request only: the
reply then says ``{"died": "SIGABRT"}`` (or ``{"died": null, "exit": N}``). Replies go to the
original standard output; TVM's own prints are sent to standard error.

Requests (``data`` and ``record`` are base64):

* ``{"op": "version"}`` -> ``{"tvm": "0.16.dev0", "python": "3.10.13"}``
* ``{"op": "params_load", "data": ...}`` -> ``{"tensors": [{"name", "record", "dtype"?}]}``: the
  names in the order of the Map ``load_param_dict`` returns; per tensor the record
  ``save_param_dict({"x": t})`` writes for it alone, and its dtype string if TVM has one
* ``{"op": "params_save", "tensors": [{"name", "code", "bits", "lanes", "shape", "data"}]}`` ->
  ``{"output": ...}``: ``save_param_dict`` of tensors allocated with that DLDataType and filled
  with those bytes
* ``{"op": "load_module", "path": ...}`` -> ``{"tree": [kind, [imports...]]}``
* ``{"op": "cache_load", "path": FOLDER}`` -> ``{"metadata": ..., "tensors": [{"name", "dtype",
  "shape", "sha256"}]}``: ``tvm.contrib.tvmjs.load_tensor_cache`` (``load_ndarray_cache`` before
  0.22) of the folder, the arrays in the order of the dict it returns, each hashed over the
  C-contiguous bytes of ``.numpy()`` (``sha256`` null and ``numpy_error`` where that fails)
* ``{"op": "cache_load_cpp", "path": FOLDER}`` -> ``{"tensors": [...]}``: the C++ loader
  ``vm.builtin.tensor_cache.load`` (``ndarray_cache`` before 0.22) of the folder, then ``.get``
  of every name its index lists, in index order (a repeated name once)

A refusal is ``{"error": "the exception's last line", "type": "TVMError"}``.
"""

from __future__ import annotations

import base64
import ctypes
import json
import os
import signal
import sys
from typing import Any

#: seconds a request may take before its child is stopped (hangs on corrupted heaps)
LIMIT = int(os.environ.get("MLF_SPEC_PEER_LIMIT", "120"))


def _last_line(exc: BaseException) -> str:
    lines = [x for x in str(exc).strip().splitlines() if x.strip()]
    return (lines[-1] if lines else type(exc).__name__)[:400]


def _b64(data: bytes) -> str:
    return base64.b64encode(bytes(data)).decode("ascii")


def _params_load(req: dict) -> dict:
    from tvm import runtime

    loaded = runtime.load_param_dict(bytearray(base64.b64decode(req["data"])))
    tensors = []
    for name in list(loaded.keys()):
        t = loaded[name]
        entry = {"name": name, "record": _b64(runtime.save_param_dict({"x": t}))}
        try:
            entry["dtype"] = str(t.dtype)
        except Exception:  # noqa: BLE001 - a code TVM cannot spell
            pass
        tensors.append(entry)
    return {"tensors": tensors}


def _empty(shape: list[int], code: int, bits: int, lanes: int) -> Any:
    """A CPU tensor of any DLDataType (TVM 0.16's DataType, or tvm-ffi's from 0.22 on)."""
    import tvm
    from tvm import runtime

    try:
        import tvm_ffi
    except ImportError:
        tvm_ffi = None
    if tvm_ffi is not None and hasattr(tvm_ffi, "dtype"):
        return runtime.empty(tuple(shape), tvm_ffi.dtype.from_dlpack_data_type((code, bits, lanes)))
    from tvm.runtime import DataType
    from tvm.runtime import ndarray as nd

    if code in (0, 1, 2):
        # the FFI hands a DataType over as str(), and 0.16's DataType.__str__ calls every
        # 1-bit scalar "bool": int/uint/float are spelled here as TVM's parser reads them
        dt = f"{('int', 'uint', 'float')[code]}{bits}" + (f"x{lanes}" if lanes != 1 else "")
    else:
        dt = DataType.__new__(DataType)
        ctypes.Structure.__init__(dt)
        dt.type_code, dt.bits, dt.lanes = code, bits, lanes
    return nd._ffi_api.TVMArrayAllocWithScope(runtime.ShapeTuple(shape), dt, tvm.cpu(0), None)


def _copy_from(t: Any, raw: bytes) -> None:
    if not raw:
        return
    buf = (ctypes.c_uint8 * len(raw)).from_buffer_copy(raw)
    try:
        from tvm.runtime import _ffi_api

        fn = _ffi_api.TVMTensorCopyFromBytes
    except (ImportError, AttributeError):
        fn = None
    if fn is not None:
        fn(t, ctypes.cast(buf, ctypes.c_void_p), len(raw))
        return
    from tvm._ffi.base import _LIB, check_call

    check_call(_LIB.TVMArrayCopyFromBytes(t.handle, ctypes.cast(buf, ctypes.c_void_p), ctypes.c_size_t(len(raw))))


def _params_save(req: dict) -> dict:
    from tvm import runtime

    params = {}
    for t in req["tensors"]:
        tensor = _empty(t["shape"], t["code"], t["bits"], t["lanes"])
        _copy_from(tensor, base64.b64decode(t["data"]))
        params[t["name"]] = tensor
    return {"output": _b64(runtime.save_param_dict(params))}


def _tree(m: Any, depth: int = 0) -> list:
    kind = str(m.type_key if hasattr(m, "type_key") else m.kind)  # 0.16: type_key; tvm-ffi: kind
    kind = "_lib" if kind == "library" else kind
    if depth > 8:  # TVM accepts import cycles
        return [kind, "..."]
    imports = m.imported_modules if hasattr(m, "imported_modules") else m.imports
    return [kind, sorted((_tree(i, depth + 1) for i in imports), key=json.dumps)]


def _load_module(req: dict) -> dict:
    import tvm

    return {"tree": _tree(tvm.runtime.load_module(req["path"]))}


def _cache_tensor(name: str, arr: Any) -> dict:
    """One array a cache loader returned: dtype, shape, SHA-256 of ``.numpy()``'s bytes."""
    import hashlib

    import numpy as np

    entry: dict[str, Any] = {"name": name, "dtype": str(arr.dtype), "shape": [int(d) for d in arr.shape]}
    try:
        a = np.ascontiguousarray(arr.numpy())
    except Exception as exc:  # noqa: BLE001 - e.g. int4 has no NumPy type
        entry.update(sha256=None, numpy_error=_last_line(exc))
    else:
        entry["sha256"] = hashlib.sha256(a.reshape(-1).view(np.uint8).data).hexdigest()
    return entry


def _cache_load(req: dict) -> dict:
    import tvm
    from tvm.contrib import tvmjs

    load = getattr(tvmjs, "load_tensor_cache", None) or tvmjs.load_ndarray_cache
    arrays, metadata = load(req["path"], tvm.cpu())
    return {"metadata": metadata, "tensors": [_cache_tensor(n, a) for n, a in arrays.items()]}


def _cache_load_cpp(req: dict) -> dict:
    import tvm

    folder = req["path"]
    prefix = "vm.builtin.tensor_cache" if tvm.get_global_func("vm.builtin.tensor_cache.load", True) \
        else "vm.builtin.ndarray_cache"
    tvm.get_global_func(prefix + ".clear")()
    tvm.get_global_func(prefix + ".load")(folder, 1, 0)  # kDLCPU, device 0
    get = tvm.get_global_func(prefix + ".get")
    index = "tensor-cache.json" if prefix.startswith("vm.builtin.tensor") else "ndarray-cache.json"
    with open(os.path.join(folder, index), "rb") as f:  # the names: the loader has no listing
        names = [r["name"] for s in json.load(f)["records"] for r in s["records"]]
    out = []
    for name in dict.fromkeys(names):
        arr = get(name)
        if arr is not None:
            out.append(_cache_tensor(name, arr))
    return {"tensors": out}


def _version(req: dict) -> dict:
    import tvm

    return {"tvm": tvm.__version__, "python": ".".join(map(str, sys.version_info[:3]))}


OPS = {"version": _version, "params_load": _params_load, "params_save": _params_save, "load_module": _load_module,
       "cache_load": _cache_load, "cache_load_cpp": _cache_load_cpp}


def _answer(req: dict) -> dict:
    op = OPS.get(req.get("op"))
    if op is None:
        return {"error": f"unknown op {req.get('op')!r}", "type": "ValueError"}
    try:
        return op(req)
    except Exception as exc:  # noqa: BLE001 - TVM raises its own error types: a refusal
        return {"error": _last_line(exc), "type": type(exc).__name__}


def _in_child(req: dict) -> dict:
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: answer, write, leave without running any cleanup of the parent's
        os.close(r)
        try:
            signal.alarm(LIMIT)
            data = (json.dumps(_answer(req)) + "\n").encode()
            view = memoryview(data)
            while view:
                view = view[os.write(w, view):]
        finally:
            os._exit(0)
    os.close(w)
    chunks = []
    while True:
        b = os.read(r, 1 << 20)
        if not b:
            break
        chunks.append(b)
    os.close(r)
    _, status = os.waitpid(pid, 0)
    text = b"".join(chunks).decode("utf-8", "replace").strip()
    if os.WIFSIGNALED(status):
        return {"died": signal.Signals(os.WTERMSIG(status)).name}
    if not text:
        return {"died": None, "exit": os.WEXITSTATUS(status)}
    return json.loads(text)


def main() -> int:
    """Answer requests until standard input ends."""
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # what TVM prints must not mix with the replies
    os.environ.setdefault("TVM_LOG_DEBUG", "0")
    import tvm  # noqa: F401 - once, before forking
    from tvm import runtime  # noqa: F401

    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
        except ValueError as exc:
            reply = {"error": f"bad request: {exc}", "type": "ValueError"}
        else:
            reply = _version(req) if req.get("op") == "version" else _in_child(req)
            reply["id"] = req.get("id")
        out.write(json.dumps(reply) + "\n")
        out.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
