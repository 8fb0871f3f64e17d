"""One module's payload taken out of a blob, in the form its kind stores it
(``mlf-spec blob extract LIB --module N|KIND -o OUT``).

* device code (cuda, hip/hsaco, opencl, aocl, sdaccel, hexagon, device source modules): the
  ``data`` string as stored (PTX, cubin, fatbin, OpenCL C, a binary ...);
* Metal, WebGPU: one file per kernel (``<kernel>.metal`` / ``.metallib`` / ``.wgsl``) when the
  payload keeps a source per kernel, else the one ``data`` string;
* GraphExecutorFactory: ``graph.json`` and ``<module_name>.params`` (the parameters as a TVM
  .params file, the tensor records copied byte for byte); AotExecutorFactory: the .params;
* static_library: the object or archive bytes; ``c``: the C source; BYOC JSON runtimes: the
  subgraph JSON; coreml: the serialised model; an opaque payload: its bytes;
* anything else (the relay and relax VM executables, const_loader, ...): the payload bytes as
  the blob holds them, which is what the kind's loader reads.
"""

from __future__ import annotations

import struct
from typing import Any

from mlf_spec.errors import MlfError
from mlf_spec.generated import params_ir as _params_ir

from .codec import LIB, Blob, Entry

_PARAMS_MAGIC: int = _params_ir.CONSTANTS["PARAMS_MAGIC"]
#: Kinds whose payload is one string of device code, with the field holding it.
_ONE_FIELD = {"data": "data", "code": "code", "graph_json": "graph_json", "model": "model"}
_KERNEL_EXT = {"metal": ".metal", "metallib": ".metallib", "webgpu": ".wgsl"}


def find_module(b: Blob, which: str, *, file: str) -> Entry:
    """The module ``which`` names: its index in blob order, or its kind (which must be unique)."""
    if which.isdigit():
        i = int(which)
        found = [e for e in b.entries if e.index == i]
        if not found:
            raise MlfError(f"--module {i}: the blob has modules {[e.index for e in b.entries]}", file=file)
        return found[0]
    found = [e for e in b.entries if e.kind == which]
    if len(found) != 1:
        kinds = ", ".join(f"[{e.index}] {e.kind}" for e in b.entries)
        what = "no module" if not found else f"{len(found)} modules"
        raise MlfError(f"--module {which}: {what} of that kind (the modules: {kinds}); name one by index", file=file)
    return found[0]


def payload_files(b: Blob, e: Entry) -> bytes | dict[str, bytes]:
    """The payload of module ``e`` as its kind stores it: the bytes of one file, or file
    name -> bytes for a kind that stores several (see the module doc)."""
    if e.kind == LIB or e.payload is None:
        raise MlfError(f"module [{e.index}] is {e.kind}: it has no payload (its code is the library itself)")
    rec = e.payload.record
    rec = getattr(rec, "body", rec)
    kind = type(rec).__name__
    if kind == "GraphExecutorFactory":
        return {"graph.json": _bytes(rec.graph_json), f"{_name(rec.module_name)}.params": _params(b, rec)}
    if kind == "AotExecutorFactory":
        return _params(b, rec)
    if kind in ("MetalPayload", "WebgpuPayload"):
        kernels = getattr(rec, "smap", None) or getattr(rec, "smap_v013", None)
        if kernels:
            fmt = _text(getattr(rec, "fmt_v013", None) or getattr(rec, "lead", None) or "")
            ext = _KERNEL_EXT.get("webgpu" if kind == "WebgpuPayload" else fmt, ".bin")
            return {f"{_name(k)}{ext}": _bytes(v) for k, v in kernels}
    for field in _ONE_FIELD:
        value = getattr(rec, field, None)
        if isinstance(value, (str, bytes, bytearray, memoryview)) and kind != "OpaquePayload":
            return _bytes(value)
    return bytes(b.payload_bytes(e))


def _params(b: Blob, rec: Any) -> bytes:
    """The executor factory's parameters as a TVM .params file (records copied as stored)."""
    from mlf_spec.generated.tensor_fast import start_of_tensor_record

    names = [_bytes(n) for n in rec.names]
    head = struct.pack("<QQQ", _PARAMS_MAGIC, 0, len(names)) + b"".join(struct.pack("<Q", len(n)) + n for n in names)
    head += struct.pack("<Q", len(rec.arrays))
    if not rec.arrays:
        return head
    start = start_of_tensor_record(rec.arrays[0])
    end = rec.arrays[-1].data_offset + rec.arrays[-1].data_byte_size
    return head + bytes(b.data[start:end])


def _bytes(v: Any) -> bytes:
    return v.encode("utf-8", "surrogateescape") if isinstance(v, str) else bytes(v)


def _text(v: Any) -> str:
    return v if isinstance(v, str) else bytes(v).decode("utf-8", "replace")


def _name(v: Any) -> str:
    """A kernel or module name made safe as a file name."""
    text = _text(v)
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in text).lstrip(".")
    return safe[:200] or "unnamed"


__all__ = ["find_module", "payload_files"]
