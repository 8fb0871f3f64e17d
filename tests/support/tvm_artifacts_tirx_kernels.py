"""TVMScript kernels used by ``tests/support/tvm_artifacts.py`` to build real TVM libraries.

TVMScript parses the *source* of a decorated function (via ``inspect``), so these
kernels must live in a real source file; they cannot be created with ``python -c``.
Importing this module requires apache-tvm (>= 0.24, where the namespace is ``tirx``).

Kept deliberately tiny (64 float32 elements) so that compiling and exporting is cheap.
"""

from tvm.script import tirx as T


@T.prim_func
def add_one(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    # One GPU kernel: the loop is bound to threadIdx.x, so device codegen splits
    # this into a host function ``add_one`` plus a device kernel ``add_one_kernel``.
    for i in T.thread_binding(64, thread="threadIdx.x"):
        B[i] = A[i] + T.float32(1)


@T.prim_func
def add_one_cpu(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    # CPU-only: no thread binding, so an llvm/c build yields a single host module
    # with no imports (and therefore no library blob on export).
    for i in range(64):
        B[i] = A[i] + T.float32(1)
