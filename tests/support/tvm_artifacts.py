"""Produce REAL Apache TVM artifacts for differential tests of ``mlf_spec``.

Everything here drives an installed apache-tvm (written against apache-tvm 0.27.0.post1 with
apache-tvm-ffi 0.1.15.post2, CPU-only wheel).  Nothing is cached across processes: every call
builds its artifact from scratch, and every helper is cheap (a 64-element kernel, a 4->3 linear
layer, tensors of a few elements).  Importing this module does NOT import tvm; the functions do, so
tests can ``pytest.importorskip("tvm")`` (or check :data:`TVM_AVAILABLE`) first.

Facts established on 0.27 while writing this module (details in the docstrings below):

* Tensor memory (tvm-ffi ``GetDataSize``) is ``ceil(numel * bits * lanes / 8)`` bytes: sub-byte
  dtypes are bit-packed and vector dtypes hold all lanes.  The ``.params`` writer however stores
  ``numel * ceil(bits / 8)`` bytes copied from the start of that buffer (lanes ignored), and the
  reader copies the same count back into a freshly allocated buffer of the packed/full size.
  For sub-byte dtypes that means the writer reads past the allocation (file bytes after the first
  ``ceil(numel*bits/8)`` are heap garbage) and the reader writes past it: with more than
  :data:`SUBBYTE_SAFE_NUMEL` elements the reader corrupts the glibc heap and the process aborts
  (``free(): invalid size`` etc.), and saving ~3M uint1 elements segfaults.  Use
  ``load_params_bytes(..., isolated=True)`` to run TVM's reader in a throw-away child process.
* Only the raw-bytes path (``runtime.TVMTensorCopyFromBytes`` / ``runtime.TVMTensorCopyToBytes``)
  works for every dtype; ``Tensor.copyfrom`` / ``tvm.runtime.tensor`` / ``.numpy()`` / DLPack do
  not (see :func:`make_tvm_tensor` and :func:`tensor_raw_bytes`).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import math
import os
import pickle
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

TVM_AVAILABLE: bool = importlib.util.find_spec("tvm") is not None

#: Name of the blob symbol in an exported library (0.22+), as reported by TVM itself through
#: ``runtime.ModuleImportsBlobName``; kept here so tests need not import tvm to know it.
BLOB_SYMBOL = "__tvm_ffi__library_bin"
#: Context pointer slot filled by the loader.  Optional: TVM's loader works without it.
CTX_SYMBOL = "__tvm_ffi__library_ctx"

#: Largest element count for which a sub-byte (bits < 8) tensor survives TVM 0.27's ``.params``
#: writer/reader.  The reader copies ``numel`` bytes into a ``ceil(numel*bits/8)``-byte
#: ``posix_memalign`` block; glibc's smallest chunk has 24 usable bytes, so up to 24 elements the
#: overflow stays inside the block.  Measured: int4 with 24 elements loads repeatedly, 25 aborts
#: with ``free(): invalid size``; 64 aborts for int4, uint1 and float6.
SUBBYTE_SAFE_NUMEL = 24

# Every candidate below was checked for real on apache-tvm 0.27.0.post1 (tvm-ffi 0.1.15.post2):
# allocate with ``tvm.runtime.empty((5,), dtype)``, fill through ``runtime.TVMTensorCopyFromBytes``
# with GetDataSize bytes, ``tvm.runtime.save_param_dict``, ``tvm.runtime.load_param_dict``, read
# back with ``runtime.TVMTensorCopyToBytes``: the dtype string, the shape and the defined bytes
# (see load_params_bytes) round-trip for ALL of them.  None failed on that path.
# What does fail is TVM's numpy convenience path (``tvm.runtime.tensor(np_array)`` and
# ``tvm.runtime.empty(shape, dtype).copyfrom(np_array)``):
#   uint1          -> InternalError: Check failed: arr_size == nbytes (1 vs. 5) : TensorCopyFromBytes: size mismatch
#   int4, uint4    -> InternalError: Check failed: arr_size == nbytes (3 vs. 5) : TensorCopyFromBytes: size mismatch
#   float6_e2m3fn, float6_e3m2fn
#                  -> InternalError: Check failed: arr_size == nbytes (4 vs. 5) : TensorCopyFromBytes: size mismatch
# (float4_e2m1fn works there because TVM's Python copyfrom packs it, element 2k in the high nibble.)
PARAM_DTYPES: list[str] = [
    "int8", "int16", "int32", "int64",
    "uint8", "uint16", "uint32", "uint64",
    "uint1", "int4", "uint4",
    "float16", "float32", "float64", "bfloat16", "bool",
    "float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn",
    "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu",
    "float6_e2m3fn", "float6_e3m2fn", "float4_e2m1fn",
    "float32x4", "int8x2",
]  # fmt: skip

#: Not in the brief's candidate list, but they pass the same check on 0.27: (0,1,1) (0,2,1) (1,2,1)
#: and further vector/sub-byte combinations.
EXTRA_PARAM_DTYPES: list[str] = [
    "int1", "int2", "uint2", "int4x2", "uint1x8", "float4_e2m1fnx2", "float16x2", "boolx4",
]  # fmt: skip

#: dtypes for which ``numpy``/``ml_dtypes`` has a one-byte-or-more element type, so
#: ``Tensor.copyfrom`` works (lanes > 1 need an extra trailing axis of length ``lanes``).
_ML_DTYPES_FLOATS = {
    "bfloat16", "float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn",
    "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu",
}  # fmt: skip

#: Targets whose exported libraries ``tvm.runtime.load_module`` can load on the CPU-only wheel.
LOADABLE_TARGETS = frozenset({"llvm", "c", "relax-llvm"})


class IsolatedTVMError(RuntimeError):
    """TVM failed (or crashed) inside the child process used by ``isolated=True`` helpers."""

    def __init__(self, message: str, returncode: int, stderr: str, error_type: str | None) -> None:
        super().__init__(message)
        self.returncode = returncode
        self.stderr = stderr
        self.error_type = error_type


# --------------------------------------------------------------------------------------------
# small internals


def _tvm() -> Any:
    import tvm  # noqa: PLC0415  (lazy on purpose)

    return tvm


def _global_func(name: str) -> Any:
    import tvm_ffi  # noqa: PLC0415

    return tvm_ffi.get_global_func(name)


def _numel(shape: Sequence[int]) -> int:
    return math.prod(int(s) for s in shape)


# --------------------------------------------------------------------------------------------
# versions and dtypes


def tvm_version() -> str:
    """Return the installed apache-tvm version string (e.g. ``"0.27.0.post1"``)."""
    return str(_tvm().__version__)


def tvm_ffi_version() -> str:
    """Return the installed apache-tvm-ffi version string (e.g. ``"0.1.15.post2"``)."""
    import tvm_ffi  # noqa: PLC0415

    return str(tvm_ffi.__version__)


def dtype_triple(dtype: str) -> tuple[int, int, int]:
    """Return TVM's DLDataType ``(code, bits, lanes)`` for a dtype string, as parsed by tvm-ffi."""
    import tvm_ffi  # noqa: PLC0415

    t = tvm_ffi.dtype(dtype)
    return int(t.type_code), int(t.bits), int(t.lanes)


def alloc_nbytes(dtype: str, shape: Sequence[int]) -> int:
    """In-memory size TVM allocates for a tensor: ``ceil(numel * bits * lanes / 8)`` (tvm-ffi
    ``GetDataSize``).  Sub-byte dtypes are bit-packed; vector dtypes include every lane."""
    _, bits, lanes = dtype_triple(dtype)
    return (_numel(shape) * bits * lanes + 7) // 8


def params_data_nbytes(dtype: str, shape: Sequence[int]) -> int:
    """Data size a ``.params`` tensor record declares: ``numel * ceil(bits / 8)`` (lanes ignored)."""
    _, bits, _ = dtype_triple(dtype)
    return _numel(shape) * ((bits + 7) // 8)


def pack_subbyte(codes: Sequence[int] | np.ndarray, bits: int) -> bytes:
    """Pack integer codes (low ``bits`` bits of each) into an MSB-first bitstream, zero-padded.

    For 4-bit values this is exactly TVM's own Python convention (``Tensor.copyfrom`` for
    float4_e2m1fn, ``Tensor.numpy`` for int4/float4): element 2k in the HIGH nibble, 2k+1 in the
    low nibble.  For 1-, 2- and 6-bit values TVM has no convention of its own (the C++ runtime
    treats the bytes as opaque and ``.numpy()`` does not unpack them); this module uses the same
    MSB-first order (like ``numpy.packbits``) so all widths are consistent.
    """
    arr = np.asarray(codes, dtype=np.int64).ravel() & ((1 << bits) - 1)
    if arr.size == 0:
        return b""
    shifts = np.arange(bits - 1, -1, -1, dtype=np.int64)
    bitstream = ((arr[:, None] >> shifts) & 1).astype(np.uint8).ravel()
    return np.packbits(bitstream).tobytes()


def unpack_subbyte(raw: bytes, bits: int, count: int) -> np.ndarray:
    """Inverse of :func:`pack_subbyte`: return ``count`` codes (uint8) from an MSB-first bitstream."""
    if count == 0:
        return np.zeros(0, dtype=np.uint8)
    bitstream = np.unpackbits(np.frombuffer(raw, dtype=np.uint8))[: count * bits]
    weights = (1 << np.arange(bits - 1, -1, -1)).astype(np.uint16)
    return (bitstream.reshape(count, bits).astype(np.uint16) @ weights).astype(np.uint8)


def _numpy_dtype(base: str) -> Any:
    if base in _ML_DTYPES_FLOATS:
        import ml_dtypes  # noqa: PLC0415

        return getattr(ml_dtypes, base)
    return np.dtype(base)  # int*/uint*/float16/32/64 and "bool" (numpy bool_, TVM (6,8,1))


def _copy_from_bytes(tensor: Any, raw: bytes) -> None:
    import ctypes  # noqa: PLC0415

    buf = np.frombuffer(bytearray(raw), dtype=np.uint8)  # writable, C-contiguous
    _global_func("runtime.TVMTensorCopyFromBytes")(tensor, buf.ctypes.data_as(ctypes.c_void_p), len(raw))


def tensor_raw_bytes(tensor: Any) -> bytes:
    """Return a TVM tensor's in-memory bytes exactly as TVM holds them (``GetDataSize`` bytes).

    Uses ``runtime.TVMTensorCopyToBytes``, the only read path that works for every dtype on 0.27:
    ``Tensor.numpy()`` does not unpack uint1/uint4/float6 (it copies the packed bytes into a
    one-byte-per-element array, leaving the rest as garbage), unpacks int4/float4 high-nibble
    first, and turns lanes into a trailing axis; DLPack export (``np.from_dlpack``) fails for
    every non-numpy dtype (``RuntimeError: Unsupported dtype in DLTensor.``: bfloat16, float8_*,
    float6_*, float4_*, int4, uint4, uint1) and for lanes > 1 (``Unsupported lanes in DLTensor
    dtype.``).
    """
    import ctypes  # noqa: PLC0415

    n = alloc_nbytes(str(tensor.dtype), tuple(tensor.shape))
    out = np.zeros(n, dtype=np.uint8)
    if n:
        _global_func("runtime.TVMTensorCopyToBytes")(tensor, out.ctypes.data_as(ctypes.c_void_p), n)
    return out.tobytes()


def make_tvm_tensor(array_or_bytes: Any, dtype: str, shape: Sequence[int]) -> Any:
    """Build a CPU ``tvm.runtime.Tensor`` of ``dtype``/``shape`` holding the given data.

    ``array_or_bytes`` may be

    * ``bytes``/``bytearray``/``memoryview``: the tensor's raw in-memory bytes, exactly
      ``alloc_nbytes(dtype, shape)`` = ``ceil(numel*bits*lanes/8)`` of them (row-major, lanes
      innermost, little-endian elements; sub-byte elements bit-packed in whatever order the caller
      chose).  Copied with ``runtime.TVMTensorCopyFromBytes``, which requires that exact size.
      Works for every dtype.
    * an array-like of element *values*:

      - dtypes with ``bits % 8 == 0`` (including bool, bfloat16, float8_*): converted to the
        numpy/ml_dtypes type and copied with TVM's public ``Tensor.copyfrom``; for lanes > 1 the
        array must have ``shape + (lanes,)`` elements (TVM's own rule in ``copyfrom``).
      - sub-byte dtypes (uint1, int4, uint4, float4_e2m1fn, float6_*): integers are taken as
        codes (two's complement masked to ``bits``), floats / ml_dtypes arrays are converted to
        the ml_dtypes type and their one-byte codes used; the codes are bit-packed with
        :func:`pack_subbyte` (MSB-first, which for 4-bit equals TVM's float4 helper: element 2k in
        the high nibble) and copied raw.  ``Tensor.copyfrom`` cannot be used here: it fails with
        ``TensorCopyFromBytes: size mismatch`` for uint1/int4/uint4/float6 (it passes one byte per
        element to a bit-packed buffer).

    Layout note: TVM's runtime itself never interprets packed sub-byte bytes.  Code compiled by
    0.27's llvm backend does NOT use the packed layout either: an int4 buffer read by a kernel is
    one byte per element (observed: packed bytes ``21 43 65 07`` read as ``[1, 3, 5, 7, ...]``,
    i.e. element i = low nibble of byte i), so it reads past the packed allocation.
    """
    tvm = _tvm()
    shape = tuple(int(s) for s in shape)
    _, bits, lanes = dtype_triple(dtype)
    nbytes = alloc_nbytes(dtype, shape)
    tensor = tvm.runtime.empty(shape, dtype)

    if isinstance(array_or_bytes, bytes | bytearray | memoryview):
        raw = bytes(array_or_bytes)
        if len(raw) != nbytes:
            raise ValueError(
                f"{dtype}{list(shape)} needs exactly {nbytes} raw bytes "
                f"(ceil(numel*bits*lanes/8)), got {len(raw)}"
            )
        _copy_from_bytes(tensor, raw)
        return tensor

    import tvm_ffi  # noqa: PLC0415

    base = str(tvm_ffi.dtype(dtype).with_lanes(1)) if lanes > 1 else dtype
    full_shape = shape + (lanes,) if lanes > 1 else shape
    arr = np.asarray(array_or_bytes)
    if arr.size != _numel(full_shape):
        raise ValueError(f"{dtype}{list(shape)} needs {_numel(full_shape)} values, got {arr.size}")

    if bits % 8 == 0:
        # np.array(order='C'), not ascontiguousarray: the latter turns a 0-d array into 1-d.
        arr = np.array(arr.astype(_numpy_dtype(base)).reshape(full_shape), order="C")
        tensor.copyfrom(arr)
        return tensor

    # sub-byte: derive integer codes, then pack.
    import ml_dtypes  # noqa: PLC0415

    ml_type = getattr(ml_dtypes, base, None)
    if arr.dtype.kind in "biu":
        codes = arr.astype(np.int64)
    elif ml_type is not None:
        codes = arr.astype(ml_type).view(np.uint8).astype(np.int64)
    else:
        raise TypeError(f"cannot derive {base} codes from an array of {arr.dtype}")
    _copy_from_bytes(tensor, pack_subbyte(codes, bits))
    return tensor


# --------------------------------------------------------------------------------------------
# .params


def save_params_bytes(mapping: Mapping[str, Any], *, allow_unsafe_subbyte: bool = False) -> bytes:
    """Serialize ``{name: tvm tensor}`` with ``tvm.runtime.save_param_dict``; return the file bytes.

    Names are written in the dict's insertion order (checked up to 20 names on 0.27).  For a
    sub-byte tensor TVM writes ``numel`` data bytes from a ``ceil(numel*bits/8)``-byte buffer:
    only the first ``ceil(numel*bits/8)`` data bytes are defined, the rest is whatever follows the
    buffer in the heap.  Tensors with more than :data:`SUBBYTE_SAFE_NUMEL` sub-byte elements are
    refused unless ``allow_unsafe_subbyte`` (reading past the allocation can segfault: observed
    with 3,000,000 uint1 elements).  For lanes > 1 only the first ``numel*ceil(bits/8)`` bytes of
    the vector buffer are written (the other lanes are dropped).
    """
    if not allow_unsafe_subbyte:
        for name, t in mapping.items():
            dt = getattr(t, "dtype", None)
            if dt is None:
                continue
            _, bits, _ = dtype_triple(str(dt))
            if bits < 8 and _numel(tuple(t.shape)) > SUBBYTE_SAFE_NUMEL:
                raise ValueError(
                    f"{name!r}: sub-byte tensor with more than {SUBBYTE_SAFE_NUMEL} elements; TVM's "
                    "writer reads past its allocation (pass allow_unsafe_subbyte=True to insist)"
                )
    return bytes(_tvm().runtime.save_param_dict(dict(mapping)))


def _load_params_in_process(b: bytes) -> dict[str, tuple[str, tuple[int, ...], bytes]]:
    loaded = _tvm().runtime.load_param_dict(bytes(b))
    return {
        str(name): (str(t.dtype), tuple(int(x) for x in t.shape), tensor_raw_bytes(t))
        for name, t in loaded.items()
    }


def load_params_bytes(
    b: bytes, *, isolated: bool = False, timeout: float = 120.0
) -> dict[str, tuple[str, tuple[int, ...], bytes]]:
    """Read ``.params`` bytes with TVM's own reader (``tvm.runtime.load_param_dict``).

    Returns ``{name: (dtype string, shape tuple, raw)}`` in the order TVM returns them (file order;
    a duplicated name keeps one entry, the later one), where ``raw`` is the tensor's in-memory
    bytes as TVM holds them (:func:`tensor_raw_bytes`, ``alloc_nbytes`` long).  What is defined:

    * ordinary dtypes: ``raw`` == the record's data bytes;
    * sub-byte dtypes: ``raw`` == the first ``ceil(numel*bits/8)`` data bytes of the record (TVM
      copied all ``numel`` file bytes into that smaller buffer; the excess went past it);
    * lanes > 1: ``raw[:numel*ceil(bits/8)]`` == the record's data; the remaining bytes of the
      vector buffer were never written and are undefined (usually zero).

    TVM's errors propagate (e.g. ``InternalError`` "Invalid parameters file format").  Because a
    file with a sub-byte tensor of more than :data:`SUBBYTE_SAFE_NUMEL` elements corrupts the heap
    (abort at a later malloc/free; nondeterministic: the same int4[64] file crashes some child
    runs), pass ``isolated=True`` for untrusted inputs: TVM then runs in
    a fresh ``sys.executable`` child process (about 1 s, mostly ``import tvm``) and any failure,
    including a crash, is raised as :class:`IsolatedTVMError`.
    """
    if not isolated:
        return _load_params_in_process(b)
    return _run_isolated("load_params", bytes(b), timeout)


_CHILD_BOOT = (
    "import importlib.util, sys\n"
    "spec = importlib.util.spec_from_file_location('_tvm_artifacts_child', sys.argv[1])\n"
    "mod = importlib.util.module_from_spec(spec)\n"
    "sys.modules[spec.name] = mod\n"
    "spec.loader.exec_module(mod)\n"
    "mod._child_main(sys.argv[2])\n"
)


def _child_main(op: str) -> None:
    data = sys.stdin.buffer.read()
    try:
        if op == "load_params":
            result: Any = _load_params_in_process(data)
        else:
            raise ValueError(f"unknown op {op}")
    except BaseException as exc:  # report TVM's error to the parent, then exit non-zero
        sys.stderr.write(f"@@ERROR_TYPE {type(exc).__name__}\n{exc}\n")
        sys.stderr.flush()
        os._exit(3)
    sys.stdout.buffer.write(pickle.dumps(result))
    sys.stdout.flush()
    os._exit(0)  # skip interpreter teardown (a corrupted heap may abort in destructors)


def _run_isolated(op: str, payload: bytes, timeout: float) -> Any:
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD_BOOT, os.path.abspath(__file__), op],
        input=payload,
        capture_output=True,
        timeout=timeout,
    )
    stderr = proc.stderr.decode("utf-8", errors="replace")
    if proc.returncode != 0:
        error_type = None
        message = stderr.strip().splitlines()[-1] if stderr.strip() else ""
        if "@@ERROR_TYPE " in stderr:
            tail = stderr.split("@@ERROR_TYPE ", 1)[1]
            error_type, _, message = tail.partition("\n")
            message = message.strip()
        raise IsolatedTVMError(
            f"TVM child process failed (returncode {proc.returncode}, {error_type}): {message}",
            proc.returncode,
            stderr,
            error_type,
        )
    return pickle.loads(proc.stdout)


def probe_param_dtypes(candidates: Iterable[str]) -> dict[str, str | None]:
    """Check each dtype for real: make a 5-element tensor from raw bytes, save, load, compare.

    Returns ``{dtype: None}`` for dtypes that round-trip (dtype string, shape and the defined
    bytes), otherwise ``{dtype: "ExceptionType: message"}``.
    """
    results: dict[str, str | None] = {}
    for dtype in candidates:
        try:
            shape = (5,)
            n = alloc_nbytes(dtype, shape)
            raw = bytes((i * 37 + 11) & 0xFF for i in range(n))
            t = make_tvm_tensor(raw, dtype, shape)
            back = load_params_bytes(save_params_bytes({"x": t}))["x"]
            # sub-byte: the whole packed buffer is defined; lanes > 1: only the stored prefix.
            defined = min(n, params_data_nbytes(dtype, shape))
            if back[0] != str(t.dtype) or back[1] != shape or back[2][:defined] != raw[:defined]:
                results[dtype] = f"MismatchError: got {back!r}"
            else:
                results[dtype] = None
        except Exception as exc:  # noqa: BLE001 - we report whatever TVM raised
            results[dtype] = f"{type(exc).__name__}: {str(exc).strip().splitlines()[-1]}"
    return results


# --------------------------------------------------------------------------------------------
# libraries


@dataclasses.dataclass
class ExportedLibrary:
    """One library written by ``export_library`` plus what TVM knew about it before export.

    ``module_kinds`` lists the compiled module tree (``ex.mod`` and its ``imports``) in DFS
    pre-order, so ``module_kinds[0] == root_kind``; ``imports`` are ``(parent_index, child_index)``
    edges into that list, parents in index order, children in import order.  ``has_blob`` is
    TVM's own rule (``export_library`` packs a blob iff the root has imports).  ``packed_blob`` is
    ``runtime.ModulePackImportsToTensor(ex.mod)`` (the exact bytes embedded under
    ``__tvm_ffi__library_bin``, 8-byte size prefix included) when ``has_blob``, else None.
    ``members`` are the tar member names (empty for ``.so``).
    """

    path: Path
    container: str  # "so" | "tar"
    target: str  # "cuda" | "opencl" | "metal" | "webgpu" | "llvm" | "c" | "relax-llvm"
    host: str  # "llvm" | "c"
    root_kind: str
    module_kinds: list[str]
    imports: list[tuple[int, int]]
    has_blob: bool
    packed_blob: bytes | None = None
    members: list[str] = dataclasses.field(default_factory=list)
    export_seconds: float = 0.0


#: (target, host, containers) built by :func:`export_libraries`, in that order.
LIBRARY_SPECS: list[tuple[str, str, tuple[str, ...]]] = [
    ("cuda", "llvm", ("so", "tar")),
    ("opencl", "llvm", ("so", "tar")),
    ("metal", "llvm", ("so", "tar")),
    ("webgpu", "llvm", ("so", "tar")),
    ("opencl", "c", ("tar", "so")),
    ("llvm", "llvm", ("so", "tar")),
    ("c", "c", ("so", "tar")),
    ("relax-llvm", "llvm", ("so", "tar")),
]


def module_tree(mod: Any) -> tuple[list[str], list[tuple[int, int]]]:
    """Flatten a TVM module graph: kinds in DFS pre-order and ``(parent, child)`` import edges.

    A module reachable twice (``same_as``) gets one index; cycles are safe.
    """
    kinds: list[str] = []
    nodes: list[Any] = []
    children: list[list[int]] = []

    def visit(m: Any) -> int:
        for i, seen in enumerate(nodes):
            if seen.same_as(m):
                return i
        idx = len(nodes)
        nodes.append(m)
        kinds.append(str(m.kind))
        children.append([])
        for child in m.imports:
            children[idx].append(visit(child))
        return idx

    visit(mod)
    edges = [(p, c) for p, cs in enumerate(children) for c in cs]
    return kinds, edges


def _kernels() -> Any:
    """Import the TVMScript kernels file by path (it must be a real source file)."""
    name = "tvm_artifacts_tirx_kernels"
    if name in sys.modules:
        return sys.modules[name]
    path = Path(__file__).with_name(name + ".py")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # TVMScript's source lookup goes through sys.modules/inspect
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def _relax_module() -> Any:
    from tvm.relax.frontend import nn  # noqa: PLC0415

    class LinearRelu(nn.Module):
        def __init__(self) -> None:
            self.l = nn.Linear(4, 3)

        def forward(self, x: Any) -> Any:
            return nn.op.relu(self.l(x))

    mod, _params = LinearRelu().export_tvm(spec={"forward": {"x": nn.spec.Tensor((2, 4), "float32")}})
    return mod


def compile_for(target: str, host: str = "llvm") -> Any:
    """Compile this module's artifact for one (target, host) and return TVM's executable.

    ``target`` in cuda/opencl/metal/webgpu: the ``add_one`` kernel (``thread_binding``) with a
    ``host`` of "llvm" or "c"; "llvm"/"c": the CPU-only ``add_one_cpu`` (host == target);
    "relax-llvm": the nn.Linear(4,3)+relu model for llvm.  "vulkan" has no codegen in the wheel
    (``ValueError: Cannot find global function target.build.vulkan``).
    """
    tvm = _tvm()
    if target == "relax-llvm":
        return tvm.compile(_relax_module(), target="llvm")
    k = _kernels()
    if target in ("llvm", "c"):
        if host != target:
            raise ValueError("CPU-only builds use host == target")
        return tvm.compile(tvm.IRModule({"add_one_cpu": k.add_one_cpu}), target=target)
    # An explicit arch keeps the CUDA target from warning "Unable to detect CUDA version".
    spec: Any = {"kind": "cuda", "arch": "sm_50"} if target == "cuda" else target
    return tvm.compile(tvm.IRModule({"add_one": k.add_one}), target=tvm.target.Target(spec, host=host))


def pack_imports_bytes(compiled: Any) -> bytes:
    """Return the library blob TVM would embed for ``compiled`` (an Executable or a Module).

    Calls ``runtime.ModulePackImportsToTensor`` (the 0.27 name; ``ModulePackImportsToNDArray``
    is not registered) and returns the uint8 tensor's bytes: the 8-byte little-endian size
    prefix plus the body, identical to the ``__tvm_ffi__library_bin`` symbol of the exported
    ``.so``.  A module without imports still packs (as a lone ``_lib`` entry, 52 bytes), although
    ``export_library`` would embed no blob for it.
    """
    mod = getattr(compiled, "mod", compiled)
    packed = _global_func("runtime.ModulePackImportsToTensor")(mod)
    return tensor_raw_bytes(packed)


def export_libraries(out_dir: Path, *, targets: Iterable[str] | None = None) -> list[ExportedLibrary]:
    """Compile and export every library of :data:`LIBRARY_SPECS` into ``out_dir``.

    Files are named ``<target>_host-<host>.<so|tar>``.  ``targets`` restricts the build to the
    given target names (e.g. ``{"opencl", "relax-llvm"}``).  Each library is compiled once and
    exported to each container; the module tree is taken from the compiled object before export.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    wanted = None if targets is None else set(targets)
    result: list[ExportedLibrary] = []
    for target, host, containers in LIBRARY_SPECS:
        if wanted is not None and target not in wanted:
            continue
        ex = compile_for(target, host)
        kinds, edges = module_tree(ex.mod)
        has_blob = len(ex.mod.imports) > 0
        blob = pack_imports_bytes(ex) if has_blob else None
        for container in containers:
            path = out_dir / f"{target}_host-{host}.{container}"
            start = time.perf_counter()
            ex.export_library(str(path))
            seconds = time.perf_counter() - start
            members: list[str] = []
            if container == "tar":
                with tarfile.open(path) as tf:
                    members = tf.getnames()
            result.append(
                ExportedLibrary(
                    path=path,
                    container=container,
                    target=target,
                    host=host,
                    root_kind=kinds[0],
                    module_kinds=list(kinds),
                    imports=list(edges),
                    has_blob=has_blob,
                    packed_blob=blob,
                    members=members,
                    export_seconds=seconds,
                )
            )
    return result


def _nested_kinds(mod: Any, depth: int = 0) -> tuple[str, list]:
    if depth > 32:  # cycles are accepted by TVM's loader; do not recurse forever
        return (str(mod.kind), [])
    return (str(mod.kind), [_nested_kinds(c, depth + 1) for c in mod.imports])


def _include_options() -> list[str]:
    tvm = _tvm()
    from tvm_ffi import libinfo as ffi_libinfo  # noqa: PLC0415

    paths = [
        tvm.libinfo.find_include_path(),
        ffi_libinfo.find_include_path(),
        ffi_libinfo.find_dlpack_include_path(),
    ]
    flat: list[str] = []
    for p in paths:
        flat.extend(p if isinstance(p, list | tuple) else [p])
    return ["-I" + str(p) for p in flat]


def load_library(path: Path | str) -> Any:
    """Load an exported ``.so`` or ``.tar`` with ``tvm.runtime.load_module``; return the module.

    A ``.so`` goes straight to ``load_module``.  A ``.tar`` is unpacked and linked in a private
    temporary directory (``load_module("x.tar")`` itself would write ``x.tar.so`` and a directory
    ``x/`` next to the tar, and for c-host tars it fails: it links without TVM's include paths,
    ``lib0.c:3:10: fatal error: tvm/ffi/extra/c_env_api.h: No such file or directory``); the link
    uses TVM's own ``tvm.support.cc.create_shared`` (g++ -shared -fPIC) plus the include paths
    that ``export_library`` adds for C modules, then ``load_module`` loads the result.
    """
    tvm = _tvm()
    path = Path(path)
    if path.suffix != ".tar":
        return tvm.runtime.load_module(str(path))
    from tvm.support import cc  # noqa: PLC0415

    with tempfile.TemporaryDirectory(prefix="tvm_artifacts_load_") as tmp:
        tmpdir = Path(tmp)
        with tarfile.open(path) as tf:
            names = tf.getnames()
            if hasattr(tarfile, "data_filter"):  # Python >= 3.11.4 / 3.12
                tf.extractall(tmpdir / "x", filter="data")
            else:  # pragma: no cover
                tf.extractall(tmpdir / "x")  # noqa: S202 - our own export
        files = [str(tmpdir / "x" / n) for n in names]
        so = tmpdir / (path.stem + ".so")
        options = _include_options() if any(n.endswith((".c", ".cc")) for n in names) else None
        cc.create_shared(str(so), files, options=options)
        return tvm.runtime.load_module(str(so))  # dlopen keeps the file alive after unlink


def load_library_module_kinds(path: Path | str) -> tuple[str, list]:
    """Load a library (see :func:`load_library`) and return ``(root_kind, imports)``.

    ``imports`` is nested: a list of ``(kind, imports)`` tuples for the root's imports, each in
    the same form.  After loading, the library itself has kind ``"library"`` (not "llvm"/"c"):

    * llvm / c CPU-only:  ``("library", [])``
    * relax-llvm:         ``("relax.VMExecutable", [("library", [])])``

    cuda / opencl / metal / webgpu (either host, ``.so`` or ``.tar``) fail on the CPU-only wheel
    with ``RuntimeError: Library binary was created using {<kind>} but a loader of that name is
    not registered. Make sure to have runtime that registers ffi.Module.load_from_bytes.<kind>``.
    Registered blob loaders in 0.27: const_loader, static_library, relax.VMExecutable, c.
    """
    mod = load_library(path)
    kind, imports = _nested_kinds(mod)
    return kind, imports


# --------------------------------------------------------------------------------------------
# hand-built shared objects


def write_blob_c_source(
    blob: bytes, c_path: Path | str, *, symbol: str = BLOB_SYMBOL, with_ctx: bool = False
) -> Path:
    """Write a C file defining ``const unsigned char <symbol>[len] = {...};`` holding ``blob``.

    ``blob`` must be the complete symbol content (8-byte size prefix included), e.g. from
    :func:`pack_imports_bytes`.  ``with_ctx`` also defines ``void* __tvm_ffi__library_ctx``
    (not needed by TVM's loader).  Compile it as C: as C++ the ``const`` array would get internal
    linkage and TVM would silently load a bare library.
    """
    c_path = Path(c_path)
    lines = [f"const unsigned char {symbol}[{len(blob)}] = {{"]
    for i in range(0, len(blob), 20):
        lines.append("  " + ",".join(f"0x{x:02x}" for x in blob[i : i + 20]) + ",")
    lines.append("};")
    if with_ctx:
        lines.append(f"void* {CTX_SYMBOL} = 0;")
    c_path.write_text("\n".join(lines) + "\n")
    return c_path


def compile_c_shared_object(
    c_source_path: Path | str,
    out_so: Path | str,
    *,
    extra_objects: Sequence[Path | str] = (),
    cc: str | None = None,
) -> Path:
    """Compile a C file (plus optional objects, e.g. ``lib0.o`` from an exported ``.tar``) into a
    shared object with the system compiler: ``gcc -shared -fPIC -o out_so src [objs]``.

    These are the flags TVM's own ``create_shared`` uses on Linux.  What TVM 0.27's loader needs
    (observed): only a dynamic, default-visibility, C-linkage symbol ``__tvm_ffi__library_bin``
    holding the blob.  ``__tvm_ffi__library_ctx`` is optional; ``-fPIC`` is irrelevant for a
    data-only file; a non-const array (``.data``) works too.  If the symbol is not dynamic
    (C++ ``const`` without ``extern "C"``, or ``-fvisibility=hidden``) ``load_module`` silently
    returns a bare ``library`` with no imports.  A relax blob loads without the kernels, but
    ``relax.VirtualMachine`` then fails ("Cannot find ffi::Function transpose ..."); linking the
    tar's ``lib0.o`` as ``extra_objects`` gives a library that loads and runs.
    """
    out_so = Path(out_so)
    cmd = [cc or os.environ.get("CC") or "gcc", "-shared", "-fPIC", "-o", str(out_so)]
    cmd += [str(c_source_path), *(str(o) for o in extra_objects)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stdout}{proc.stderr}")
    return out_so


def make_const_loader_module(tensors: Mapping[str, Any], vars_by_symbol: Mapping[str, Sequence[str]]) -> Any:
    """Create a ``const_loader`` runtime module (``ffi.Module.create.const_loader``).

    It is the one blob-serialisable kind whose loader exists on the CPU-only wheel without a
    compiled relax VM, so it is the natural child for hand-built blobs that must load.
    """
    create = _global_func("ffi.Module.create.const_loader")
    return create(dict(tensors), {k: list(v) for k, v in vars_by_symbol.items()})


def const_loader_blob(tensors: Mapping[str, Any], vars_by_symbol: Mapping[str, Sequence[str]]) -> bytes:
    """Blob of a CPU llvm module importing one ``const_loader`` (``_lib`` root, const_loader child).

    Loadable on the CPU-only wheel: compiled into a shared object with
    :func:`compile_c_shared_object`, ``load_module`` gives ``("library", [("const_loader", [])])``.
    """
    ex = compile_for("llvm", "llvm")
    ex.mod.import_module(make_const_loader_module(tensors, vars_by_symbol))
    return pack_imports_bytes(ex)


def load_param_names(data: bytes) -> list[tuple[str, tuple[int, ...]]]:
    """(name, shape) of every tensor TVM's own reader loads from ``.params`` bytes, in its
    order (no dtype strings: some codes have none). A module-level function, so that
    :class:`mlf_spec.isolation.Isolated` can run it in a child process."""
    loaded = _tvm().runtime.load_param_dict(bytes(data))
    return [(str(name), tuple(int(x) for x in t.shape)) for name, t in loaded.items()]
