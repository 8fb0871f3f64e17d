"""Load artifacts with the TVM installed in the running Python and say what TVM made of them.

Run by tests/peers/tvm/test_verdicts.py in a child process, in the test venv (apache-tvm 0.27)
or in a venv of another apache-tvm version; it needs only tvm, numpy and the standard
library (mlf-spec is not importable there). Usage:

    python tvm_probe.py MANIFEST.json     # [{"id", "kind": "params" | "library", "path"}, ...]

Each case is loaded in a process forked from this one (so one case's heap corruption or
crash cannot touch another, and TVM is imported once); one JSON line per case on stdout:
``{"id", "status": "ok" | "error" | "died" | "died-after-load", "signal", "error",
"tensors" | "tree", "numpy"}``.
For .params, per tensor: DLPack (code, bits, lanes), shape, the dtype string (or its error),
malloc_usable_size of the data (what the allocation holds), the first data bytes as loaded,
and ``.numpy()`` (bytes and dtype, or its error). For libraries, the loaded module tree.
"""

from __future__ import annotations

import ctypes
import json
import sys
from pathlib import Path

# the fork-per-case loop (mlf_spec/peers/forked.py) as a lone file: mlf-spec is not importable in
# another TVM's venv
_PEERS = next(p / "mlf_spec" / "peers" for p in Path(__file__).resolve().parents
              if (p / "mlf_spec" / "peers" / "forked.py").is_file())
sys.path.append(str(_PEERS))
from forked import in_fork  # noqa: E402

LIMIT = 4096  # data bytes reported per tensor


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _DLManaged(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


def _last_line(exc: BaseException) -> str:
    lines = [x for x in str(exc).strip().splitlines() if x.strip()]
    return (lines[-1] if lines else type(exc).__name__)[:300]


def _tensor(t) -> dict:
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    libc = ctypes.CDLL(None)
    libc.malloc_usable_size.restype, libc.malloc_usable_size.argtypes = ctypes.c_size_t, [ctypes.c_void_p]
    if hasattr(t, "_to_dlpack"):
        cap = t._to_dlpack()
        dl = _DLManaged.from_address(get(cap, b"dltensor")).dl_tensor
    else:  # TVM before tvm-ffi (0.16): the NDArray's handle is its DLTensor
        cap = None
        dl = _DLTensor.from_address(ctypes.addressof(t.handle.contents))
    code, bits, lanes = dl.dtype.code, dl.dtype.bits, dl.dtype.lanes
    shape = [dl.shape[i] for i in range(dl.ndim)]
    numel = 1
    for s in shape:
        numel *= s
    n = max(0, min(numel * ((bits + 7) // 8), LIMIT))
    out = {"dl": [code, bits, lanes], "shape": shape,
           "usable": int(libc.malloc_usable_size(dl.data)) if dl.data else 0,
           "raw": ctypes.string_at(dl.data, n).hex() if dl.data and n > 0 else ""}
    del cap
    try:
        out["dtype"] = str(t.dtype)
    except Exception as exc:  # noqa: BLE001 - unknown codes fail when printed
        out["dtype_error"] = _last_line(exc)
    return out


def _numpy(t) -> dict:
    out: dict = {}
    try:
        a = t.numpy()
        out["numpy_dtype"] = str(a.dtype)
        out["numpy_shape"] = list(a.shape)
        out["numpy"] = a.tobytes()[:LIMIT].hex()
    except Exception as exc:  # noqa: BLE001
        out["numpy_error"] = _last_line(exc)
    return out


def _params(path: str, send) -> dict:
    """Load; send what the loader made (first line) before calling .numpy(), which can
    crash on a tensor whose dtype name and width disagree; return the .numpy() results."""
    from tvm import runtime

    with open(path, "rb") as f:
        data = f.read()
    d = runtime.load_param_dict(data)
    out: dict = {"status": "ok"}
    try:
        keys = list(d.keys())
    except Exception as exc:  # noqa: BLE001 - names that are not UTF-8
        out["keys_error"] = _last_line(exc)
        return out
    out["tensors"] = {k: _tensor(d[k]) for k in keys}
    send(out)
    return {"numpy": {k: _numpy(d[k]) for k in keys}}


def _tree(m, depth: int = 0) -> list:
    """[kind, sorted imports]: the library itself as _lib (as a blob names it)."""
    kind = str(m.kind if hasattr(m, "kind") else m.type_key)  # type_key before tvm-ffi (0.16)
    kind = "_lib" if kind == "library" else kind
    if depth > 8:  # TVM accepts import cycles
        return [kind, "..."]
    imports = m.imports if hasattr(m, "imports") else m.imported_modules
    return [kind, sorted((_tree(i, depth + 1) for i in imports), key=json.dumps)]


def _library(path: str) -> dict:
    import tvm

    return {"tree": _tree(tvm.runtime.load_module(path))}


def _one(case: dict, send) -> dict:
    try:
        return _params(case["path"], send) if case["kind"] == "params" else {"status": "ok", **_library(case["path"])}
    except Exception as exc:  # noqa: BLE001 - TVM raises its own error types
        return {"status": "error", "error": _last_line(exc), "error_type": type(exc).__name__}


def main(manifest: str) -> None:
    import tvm  # noqa: F401 - imported once, before forking

    with open(manifest) as f:
        cases = json.load(f)
    for case in cases:
        # a load takes milliseconds; heap corruption can hang
        out = in_fork(lambda send, case=case: _one(case, send), timeout=int(case.get("timeout", 5)))
        res = {}
        for part in out.parts:
            res.update(part)
        if out.signal is not None or len(out.parts) < (2 if res.get("tensors") else 1):
            how = {"signal": out.signal, "exit": out.exit}
            # died after the load reported: in .numpy(), or from heap corruption the load left
            res = {**res, "status": "died-after-load", **how} if res.get("tensors") else {"status": "died", **how}
        res["id"] = case["id"]
        print(json.dumps(res), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
