"""apache-tvm-ffi's module loader under test (``--adapter tvm-ffi``): the code that turns the
``__tvm_ffi__library_bin`` blob of an exported library into a module tree
(``ProcessLibraryBin``, src/ffi/extra/library_module.cc in apache-tvm-ffi).

Each request builds what TVM's ``export_library`` builds: a C file defining
``const unsigned char __tvm_ffi__library_bin[]`` with the blob's bytes and a writable
``void* __tvm_ffi__library_ctx``, compiled with ``gcc -shared -fPIC`` (as TVM's devc.c is), then
loaded with ``tvm_ffi.load_module``. What the loader does is observed, not re-read:

* every ``ffi.Module.load_from_bytes.<kind>`` loader is wrapped (``register_global_func(...,
  override=True)``): the wrapper records the kind and the exact payload bytes it receives, in
  call order (= blob order), then calls the real loader (TVM's, after ``import tvm``). A kind
  with no loader in this installation (cuda, opencl, ... on a CPU wheel) is found the way TVM
  reports it ("created using {K} but a loader of that name is not registered") and given a
  placeholder module, so that the container is still read; TVM alone refuses such a library,
  which is a property of the installation, not of the format;
* a ``_lib`` entry calls no loader: the loader stores the new library module in
  ``__tvm_ffi__library_ctx``, which the wrapper reads at each call (and once more at the end), so
  the position of each ``_lib`` entry among the others is seen;
* the import tree is read back from the modules' ``imports``.

The canonical reading reports the layout, the modules in blob order (kind, payload size and
SHA-256) and the import tree; what the loader never looks at (trailing bytes, findings, payload
fields) is left out (``may_omit``). Limits of observation: two ``_lib`` entries with no other
entry between them show as one ctx value (the earlier one is placed from the tree if it is
reachable); a library module that nothing imports and that is not the last ``_lib`` is not seen.

The loader trusts the blob's size prefix and reads past the symbol when the prefix claims more
bytes than the blob has: what it then reads is whatever the linker put after the array.
Isolated: every request runs in a forked child, so a crash is the outcome of one case.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from typing import Any

from mlf_spec.blob.locate import SYMBOL_FFI as SYMBOL
from mlf_spec.generated.formats import PROTOCOL

from .base import Adapter, Rejected

LOADER_PREFIX = "ffi.Module.load_from_bytes."
CTX_SYMBOL = "__tvm_ffi__library_ctx"
_MISSING = re.compile(r"created using \{(.*?)\} but a loader of that name is not registered")
#: how many loaders may be missing before the adapter gives up (each costs one more load)
_MAX_MISSING = 64


def _last_line(exc: BaseException) -> str:
    lines = [x for x in str(exc).strip().splitlines() if x.strip()]
    return f"{type(exc).__name__}: {lines[-1] if lines else ''}"[:400]


def c_source(blob: bytes) -> str:
    """The C file TVM's export would compile for ``blob``: the array and a writable ctx pointer."""
    body = ",".join(str(b) for b in blob)
    return (f"const unsigned char {SYMBOL}[{len(blob)}] = {{{body}}};\n"
            f"void* {CTX_SYMBOL} = 0;\n")


def build_library(blob: bytes, work: str) -> str:
    """Compile ``blob`` into a shared object in ``work``; return its path."""
    gcc = shutil.which("gcc") or shutil.which("cc")
    if gcc is None:
        raise RuntimeError("the tvm-ffi adapter needs gcc (or cc) on PATH to build the shared object")
    src, so = os.path.join(work, "blob.c"), os.path.join(work, "blob.so")
    with open(src, "w", encoding="ascii") as f:
        f.write(c_source(blob))
    r = subprocess.run([gcc, "-shared", "-fPIC", "-o", so, src], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise RuntimeError(f"gcc failed: {r.stderr.strip()[-300:]}")
    return so


def tvm_era(version: str) -> str:
    """The blob era option whose payloads the loaders of TVM ``version`` read."""
    from mlf_spec import versions

    v = versions.parse(version) or (0, 0)
    return "latest" if v >= (0, 24) else f"{v[0]}.{v[1]}"


def _lib_only_blob() -> bytes:
    """A blob of one ``_lib`` entry (indptr [0, 0], no children): the smallest library."""
    import struct

    body = struct.pack("<QQQQ", 2, 0, 0, 0) + struct.pack("<Q", 4) + b"_lib"
    return struct.pack("<Q", len(body)) + body


_HANDLE_OFFSET: int | None = None


def handle_offset() -> int:
    """How far the handle of a library module (its ``Object``) lies from the address the loader
    stores in the ctx symbol (the ``LibraryModuleObj``): measured once on a one-``_lib`` library
    (8 bytes where the class has a vtable before its Object base)."""
    global _HANDLE_OFFSET
    if _HANDLE_OFFSET is None:
        import tvm_ffi

        work = tempfile.mkdtemp(prefix="mlf-spec-tvm-ffi-")
        try:
            so = build_library(_lib_only_blob(), work)
            lib = ctypes.CDLL(so)
            root = tvm_ffi.load_module(so)
            _HANDLE_OFFSET = root.__chandle__() - (ctypes.c_void_p.in_dll(lib, CTX_SYMBOL).value or 0)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return _HANDLE_OFFSET


class _Capture:
    """The wrapped loaders of one load: what each received, and the ctx value (as the library
    module's handle) at each call."""

    def __init__(self, ctx_address: int, real: dict[str, Any]) -> None:
        self.ctx_address = ctx_address
        self.offset = handle_offset()
        self.real = real
        self.calls: list[dict[str, Any]] = []
        self.keep: list[Any] = []  # the modules handed back (kept alive: their handles identify them)

    def ctx(self) -> int:
        value = ctypes.c_void_p.from_address(self.ctx_address).value or 0
        return value + self.offset if value else 0

    def loader(self, kind: str) -> Any:
        def load(payload: Any) -> Any:
            from tvm.runtime import _ffi_api

            data = bytes(payload)
            call = {"kind": kind, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest(), "ctx": self.ctx()}
            self.calls.append(call)
            fn = self.real.get(kind)
            module = fn(payload) if fn is not None else _ffi_api.SourceModuleCreate("", "mlf-spec-placeholder")
            call["handle"] = module.__chandle__()
            self.keep.append(module)
            return module
        return load


class TvmFfiAdapter(Adapter):
    """apache-tvm-ffi's library-binary loader, observed through its payload loaders."""

    name = "tvm-ffi"
    isolated = True

    def setup(self, progress: bool = True) -> None:
        """apache-tvm (and its tvm-ffi) in this Python, else one line saying how to install it."""
        self.needs("tvm", "tvm", "apache-tvm")

    def prepare(self) -> None:
        """Import tvm-ffi and TVM (which registers the payload loaders) once; requests fork."""
        import tvm  # noqa: F401
        import tvm_ffi  # noqa: F401

        handle_offset()

    def info(self) -> dict[str, Any]:
        """Module blobs of the tvm-ffi layout, in the era of the installed TVM's payload loaders."""
        import tvm
        import tvm_ffi

        return {"protocol": PROTOCOL, "name": "apache-tvm-ffi",
                "version": f"{tvm_ffi.__version__} (payload loaders of apache-tvm {tvm.__version__})", "serve": True,
                "formats": [{"format": "blob", "roles": ["decode"],
                             "scope": {"layout": ["ffi"], "era": [tvm_era(tvm.__version__)]}}]}

    def decode(self, format: str, data: bytes, options: dict[str, str]) -> Any:  # noqa: A002
        """Load the blob as an exported library and report what the loader built."""
        if format != "blob" or options.get("layout", "ffi") != "ffi":
            raise Rejected(f"tvm-ffi reads the tvm-ffi blob layout, not {format} {options.get('layout', '')}")
        import tvm_ffi

        real = {n[len(LOADER_PREFIX):]: tvm_ffi.get_global_func(n)
                for n in tvm_ffi.registry.list_global_func_names() if n.startswith(LOADER_PREFIX)}
        work = tempfile.mkdtemp(prefix="mlf-spec-tvm-ffi-")
        try:
            so = build_library(bytes(data), work)
            lib = ctypes.CDLL(so)  # the same handle the loader's dlopen gets: the ctx symbol is shared
            ctx_address = ctypes.addressof(ctypes.c_void_p.in_dll(lib, CTX_SYMBOL))
            capture = _Capture(ctx_address, real)
            for kind in real:
                tvm_ffi.register_global_func(LOADER_PREFIX + kind, capture.loader(kind), override=True)
            missing: list[str] = []
            while True:
                capture.calls.clear()
                ctypes.c_void_p.from_address(ctx_address).value = None  # as the fresh library has it
                try:
                    root = tvm_ffi.load_module(so)
                    break
                except Exception as exc:  # the loader refused the blob (or a payload loader is missing)
                    m = _MISSING.search(str(exc))
                    if m is None or m.group(1) in missing or len(missing) >= _MAX_MISSING:
                        raise Rejected(_last_line(exc)) from None
                    missing.append(m.group(1))
                    tvm_ffi.register_global_func(LOADER_PREFIX + m.group(1), capture.loader(m.group(1)),
                                                 override=True)
            return _reading(root, capture)
        finally:
            shutil.rmtree(work, ignore_errors=True)


def _tree(root: Any) -> dict[int, Any]:
    """Every module reachable from ``root``: handle -> module."""
    seen: dict[int, Any] = {}
    stack = [root]
    while stack:
        m = stack.pop()
        h = m.__chandle__()
        if h in seen:
            continue
        seen[h] = m
        stack.extend(reversed(list(m.imports)))
    return seen


def _reading(root: Any, capture: _Capture) -> dict[str, Any]:
    """The canonical blob reading of what the loader built."""
    reachable = _tree(root)
    entries: list[dict[str, Any]] = []  # {"kind", "handle", "bytes", "sha256"} in blob order
    last_ctx = 0

    def lib(handle: int) -> dict[str, Any]:
        return {"kind": "_lib", "handle": handle, "bytes": 0, "sha256": None}

    for call in capture.calls:
        if call["ctx"] != last_ctx:  # a _lib entry came before this one
            entries.append(lib(call["ctx"]))
            last_ctx = call["ctx"]
        entries.append({"kind": call["kind"], "handle": call["handle"], "bytes": call["bytes"],
                        "sha256": call["sha256"]})
    final = capture.ctx()
    if final and final != last_ctx:
        entries.append(lib(final))
    # a library module in the tree that no ctx value showed: a _lib entry right before another one
    known = {e["handle"] for e in entries}
    hidden = [h for h, m in reachable.items() if h not in known and m.kind == "library"]
    if hidden:
        at = max((i for i, e in enumerate(entries) if e["kind"] == "_lib"), default=len(entries))
        entries[at:at] = [lib(h) for h in hidden]
    index = {e["handle"]: i for i, e in enumerate(entries)}
    row_ptr, children = [0], []
    for e in entries:
        m = reachable.get(e["handle"])
        if m is None:
            m = next((k for k in capture.keep if k.__chandle__() == e["handle"]), None)
        for child in (list(m.imports) if m is not None else []):
            children.append(index.get(child.__chandle__(), -1))
        row_ptr.append(len(children))
    modules = [{"index": i, "kind": e["kind"], "payload_bytes": e["bytes"], "payload_sha256": e["sha256"]}
               for i, e in enumerate(entries)]
    if modules and index.get(root.__chandle__()) != 0:
        raise RuntimeError("the module the loader returned is not the first entry seen")
    return {"format": "blob", "layout": "ffi", "modules": modules,
            "import_tree": {"row_ptr": row_ptr, "child_indices": children}}


ADAPTER = TvmFfiAdapter
