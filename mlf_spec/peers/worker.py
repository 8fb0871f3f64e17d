"""The request loop run inside a peer runtime's own interpreter (a TVM venv of another Python
or another NumPy): standard library, ``tvm`` and ``numpy`` only, never mlf-spec.

    <venv>/bin/python worker.py        # one JSON request per line on stdin, one reply per line

TVM is imported once; every request is answered in a process forked from this one, so that
an abort, a segmentation fault or a heap the loader corrupted ends that request only: the
reply then says ``{"died": "SIGABRT"}`` (or ``{"died": null, "exit": N}``). Replies go to the
original standard output; TVM's own prints are sent to standard error.

Requests (``data`` and ``record`` are base64):

* ``{"op": "version"}`` -> ``{"tvm": "0.16.dev0", "python": "3.10.13", "loaders": [...]}`` (the module
  kinds with a ``runtime.module.loadbinary_<kind>`` loader; [] where TVM has none of that name)
* ``{"op": "params_load", "data": ...}`` -> ``{"tensors": [{"name", "record", "dtype"?}]}``: the
  names in the order of the Map ``load_param_dict`` returns; per tensor the record
  ``save_param_dict({"x": t})`` writes for it alone, and its dtype string if TVM has one
* ``{"op": "params_save", "tensors": [{"name", "code", "bits", "lanes", "shape", "data"}]}`` ->
  ``{"output": ...}``: ``save_param_dict`` of tensors allocated with that DLDataType and filled
  with those bytes
* ``{"op": "load_module", "path": ...}`` -> ``{"tree": [kind, [imports...]]}``
* ``{"op": "cache_load", "path": ...}`` (the Python loader) or ``cache_load_cpp`` (the C++ one) ->
  ``{"metadata"?, "tensors": [{"name", "dtype", "shape", "sha256"}]}`` of a tensor cache folder
* ``{"op": "cache_dump", "path": ..., "tensors": [{"name", "dtype", "shape", "data"}], "encode_format",
  "metadata", "shard_cap_mb"}`` -> ``{"writer": "dump_ndarray_cache"}``: the release's tensor cache
  writer into the folder ``path`` (``cache_load`` / ``cache_load_cpp`` read one)
* ``{"op": "blob_load", "data": ..., "symbol": "__tvm_dev_mblob"}`` -> what ``load_module`` of a
  shared object holding that blob did: each payload loader's call in order (``kind``, the
  stream's read position before and after, the ``type_key`` and handle of the module it
  returned), the modules reachable from the root (handle -> ``type_key`` and imported
  handles, in import order) and the root's handle; ``stream: null`` when the stream the
  loaders are handed is not the ``dmlc::MemoryFixedSizeStream`` over the blob that TVM up to
  0.20 hands them (then no position is read)
* ``{"op": "graph_create", "data": ...}`` -> the runtime's GraphExecutor factory
  (``tvm.graph_executor.create``) on the graph's bytes, a CPU device and a library exporting
  every function the executor asks for (each a packed C function that does nothing, found from
  its "no such function in module" refusals): ``{"functions": [...], "inputs": [{"name",
  "shape", "dtype"}], "outputs": [{"shape", "dtype"}]}``, as ``get_input`` / ``get_output``
  show them

A refusal is ``{"error": "the exception's last line", "type": "TVMError"}``.
"""

from __future__ import annotations

import base64
import ctypes
import hashlib
import json
import math
import os
import shutil
import sys
import tempfile
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING or __package__:
    from .forked import in_fork
else:  # run as a script by a peer's interpreter, where mlf-spec is not importable: the file beside
    from forked import in_fork

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


def _cache_tensor_stored(name: str, arr: Any) -> dict:
    """As :func:`_cache_tensor`, but the digest is over the bytes the loader stores when the dtype
    has no NumPy type of the reference's sense (lanes, sub-byte, handle, no NumPy name) or the
    tensor is empty: TVM's own copy-out (``TVMTensorCopyToBytes``) gives them, where ``.numpy()``
    unpacks int4, refuses float8 or allocates an empty tensor's whole extent."""
    from tvm.runtime import _ffi_api

    copy = getattr(_ffi_api, "TVMTensorCopyToBytes", None)
    shape = [int(d) for d in arr.shape]
    numel = 0 if 0 in shape else math.prod(shape)
    bits, lanes, code = arr.dtype.bits, arr.dtype.lanes, arr.dtype.type_code
    stored = numel == 0 or lanes != 1 or bits % 8 != 0 or code == 3  # 3: kDLOpaqueHandle
    if copy is None or not stored:
        entry = _cache_tensor(name, arr)
        if copy is None or entry.get("sha256") is not None:
            return entry
    n = (numel * bits * lanes + 7) // 8
    buf = (ctypes.c_uint8 * max(n, 1))()
    if n:
        copy(arr, ctypes.cast(buf, ctypes.c_void_p), n)
    return {"name": name, "dtype": str(arr.dtype), "shape": shape,
            "sha256": hashlib.sha256(bytes(buf)[:n]).hexdigest()}


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
            out.append(_cache_tensor_stored(name, arr))
    return {"tensors": out}


def _cache_dump(req: dict) -> dict:
    """The release's own cache writer (``dump_ndarray_cache`` up to 0.21, ``dump_tensor_cache``
    after) of arrays made from ``tensors`` (name, NumPy dtype name, shape, base64 bytes) into
    the existing folder ``path``, with one ``encode_format`` for every tensor (0.16 takes no
    mapping), ``metadata`` and ``shard_cap_mb``."""
    import numpy as np
    from tvm.contrib import tvmjs

    try:
        import ml_dtypes  # noqa: F401 - registers bfloat16 and float8 with NumPy
    except ImportError:
        pass
    params = {}
    for t in req["tensors"]:
        dtype = np.dtype(t["dtype"])
        params[t["name"]] = np.frombuffer(base64.b64decode(t["data"]), dtype=dtype).reshape(t["shape"]).copy()
    dump = getattr(tvmjs, "dump_ndarray_cache", None) or tvmjs.dump_tensor_cache
    dump(params, req["path"], encode_format=req["encode_format"], meta_data=req.get("metadata"),
         shard_cap_mb=req["shard_cap_mb"])
    return {"writer": dump.__name__}


def _compile_blob(blob: bytes, symbol: str, work: str) -> str:
    """A shared object defining ``symbol`` as the blob's bytes and a writable
    ``__tvm_module_ctx`` (what export_library's devc.c and the host module define), built
    with ``cc -shared -fPIC``."""
    import subprocess

    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise RuntimeError("a C compiler (cc or gcc) is needed to build the library")
    src, so = os.path.join(work, "blob.c"), os.path.join(work, "blob.so")
    with open(src, "w", encoding="ascii") as f:
        f.write(f"const unsigned char {symbol}[{len(blob)}] = {{{','.join(map(str, blob))}}};\n"
                "void* __tvm_module_ctx = 0;\n")
    r = subprocess.run([cc, "-shared", "-fPIC", "-o", so, src], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"cc failed: {r.stderr.strip()[-300:]}")
    return so


_LOADER = "runtime.module.loadbinary_"


def _blob_load(req: dict) -> dict:
    import tvm

    blob = base64.b64decode(req["data"])
    symbol = req.get("symbol", "__tvm_dev_mblob")
    so = _compile_blob(blob, symbol, req["_work"])
    lib = ctypes.CDLL(so)  # the handle TVM's dlopen gets too: the blob's address is the loader's
    base = ctypes.addressof(ctypes.c_ubyte.in_dll(lib, symbol)) if blob else 0
    nbytes = int.from_bytes(blob[:8], "little") if len(blob) >= 8 else None
    names = [n for n in tvm._ffi.registry.list_global_func_names() if n.startswith(_LOADER)]
    real = {n[len(_LOADER):]: tvm.get_global_func(n) for n in names}
    calls: list[dict] = []
    keep: list = []  # the modules handed back (alive, so that their handles identify them)
    layout = {"ok": None}

    def position(stream: Any) -> int | None:
        # dmlc::MemoryFixedSizeStream: vtable, p_buffer_, buffer_size_, curr_ptr_ (ProcessModuleBlob
        # makes one over the body, blob + 8); used only when the first two fields say so
        address = stream.value if hasattr(stream, "value") else stream
        if not address:
            return None
        fields = (ctypes.c_uint64 * 4).from_address(address)
        if layout["ok"] is None:
            layout["ok"] = fields[1] == base + 8 and fields[2] == nbytes
        return int(fields[3]) if layout["ok"] else None

    def wrap(kind: str) -> Any:
        def load(stream: Any) -> Any:
            call: dict[str, Any] = {"kind": kind, "start": position(stream)}
            calls.append(call)
            module = real[kind](stream)
            end = position(stream)
            if end is not None and call["start"] is not None and end >= call["start"]:
                # the bytes this loader consumed, as it saw them (they may lie past the array)
                payload = ctypes.string_at(base + 8 + call["start"], end - call["start"])
                call["sha256"] = hashlib.sha256(payload).hexdigest()
            call.update(end=end, type_key=module.type_key, handle=module.handle.value)
            keep.append(module)
            return module
        return load

    for kind in real:
        tvm.register_func(_LOADER + kind, wrap(kind), override=True)
    root = tvm.runtime.load_module(so)
    modules: dict[int, dict] = {}
    stack = [root, *keep]
    while stack:
        m = stack.pop()
        h = m.handle.value
        if h in modules:
            continue
        imports = list(m.imported_modules)
        modules[h] = {"type_key": m.type_key, "imports": [i.handle.value for i in imports]}
        stack.extend(imports)
    return {"calls": calls, "stream": layout["ok"], "root": root.handle.value,
            "modules": [{"handle": h, **v} for h, v in modules.items()]}


_NO_FUNCTION = "no such function in module: "


def _function_library(names: list[str], work: str, n: int) -> str:
    """A shared object whose exported symbols are ``names``, each a packed C function
    (TVMBackendPackedCFunc) that returns 0: the functions a graph's tvm_op nodes call."""
    import subprocess

    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise RuntimeError("a C compiler (cc or gcc) is needed to build the library")
    src, so = os.path.join(work, f"funcs{n}.c"), os.path.join(work, f"funcs{n}.so")
    lines = ["void* __tvm_module_ctx = 0;"]
    for i, name in enumerate(names):
        label = json.dumps(name)  # a C string literal: the symbol may be any text
        lines.append(f"int mlf_f{i}(void* a, int* t, int n, void* r, int* rt, void* h) __asm__({label});")
        lines.append(f"int mlf_f{i}(void* a, int* t, int n, void* r, int* rt, void* h) {{ return 0; }}")
    with open(src, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    r = subprocess.run([cc, "-shared", "-fPIC", "-o", so, src], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"cc failed: {r.stderr.strip()[-300:]}")
    return so


#: this loop's own folder (the library without functions), removed when the loop ends
_SESSION: dict[str, str] = {}


def _empty_library() -> str:
    so = os.path.join(_SESSION["dir"], "funcs-none.so")
    if not os.path.exists(so):
        os.replace(_function_library([], _SESSION["dir"], os.getpid()), so)
    return so


def _graph_create(req: dict) -> dict:
    import tvm

    data = bytearray(base64.b64decode(req["data"]))
    create = tvm.get_global_func("tvm.graph_executor.create")
    names: list[str] = []
    for attempt in range(65):
        # the library without functions is built once per loop (most refusals come before any lookup)
        so = _empty_library() if not names else _function_library(names, req["_work"], attempt)
        lib = tvm.runtime.load_module(so)
        try:
            executor = create(data, lib, 1, 0)  # the graph's bytes as given, a CPU device
            break
        except Exception as exc:  # noqa: BLE001 - the executor's refusal, or a function it looked up
            line = _last_line(exc)
            if _NO_FUNCTION not in line or attempt == 64:
                raise
            names.append(line.split(_NO_FUNCTION, 1)[1])
    get_input, get_output = executor["get_input"], executor["get_output"]
    info = executor["get_input_info"]()
    index = executor["get_input_index"]
    names_by_index = {int(index(name)): str(name) for name in info["shape"].keys()}
    inputs = []
    for i in range(int(executor["get_num_inputs"]())):
        t = get_input(i)
        inputs.append({"name": names_by_index.get(i), "shape": [int(x) for x in t.shape], "dtype": str(t.dtype)})
    outputs = []
    for i in range(int(executor["get_num_outputs"]())):
        t = get_output(i)
        outputs.append({"shape": [int(x) for x in t.shape], "dtype": str(t.dtype)})
    return {"functions": names, "inputs": inputs, "outputs": outputs}


def _version(req: dict) -> dict:
    import tvm

    try:
        names = tvm._ffi.registry.list_global_func_names()
    except AttributeError:  # the tvm-ffi era: its loaders have other names
        names = []
    loaders = sorted(n[len(_LOADER):] for n in names if n.startswith(_LOADER))
    return {"tvm": tvm.__version__, "python": ".".join(map(str, sys.version_info[:3])), "loaders": loaders}


OPS = {"version": _version, "params_load": _params_load, "params_save": _params_save, "load_module": _load_module,
       "cache_load": _cache_load, "cache_load_cpp": _cache_load_cpp, "cache_dump": _cache_dump,
       "blob_load": _blob_load, "graph_create": _graph_create}


def _answer(req: dict) -> dict:
    op = OPS.get(req.get("op"))
    if op is None:
        return {"error": f"unknown op {req.get('op')!r}", "type": "ValueError"}
    try:
        return op(req)
    except Exception as exc:  # noqa: BLE001 - TVM raises its own error types: a refusal
        return {"error": _last_line(exc), "type": type(exc).__name__}


def _in_child(req: dict) -> dict:
    work = tempfile.mkdtemp(prefix="mlf-spec-peer-")  # the request's files: removed here, whatever the child did
    try:
        return _forked({**req, "_work": work})
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _forked(req: dict) -> dict:
    out = in_fork(lambda send: _answer(req), LIMIT)
    if out.signal is not None:
        return {"died": out.signal}
    if not out.parts:
        return {"died": None, "exit": out.exit}
    return out.parts[-1]


def main() -> int:
    """Answer requests until standard input ends."""
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # what TVM prints must not mix with the replies
    os.environ.setdefault("TVM_LOG_DEBUG", "0")
    import tvm  # noqa: F401 - once, before forking
    from tvm import runtime  # noqa: F401

    _SESSION["dir"] = tempfile.mkdtemp(prefix="mlf-spec-peer-loop-")
    try:
        _serve(out)
    finally:
        shutil.rmtree(_SESSION["dir"], ignore_errors=True)
    return 0


def _serve(out: Any) -> None:
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


if __name__ == "__main__":
    raise SystemExit(main())
