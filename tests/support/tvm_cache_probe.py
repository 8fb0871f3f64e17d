"""Load tensor caches with the TVM installed in the running Python, through each of its
loaders, and say what each made of them.

Run by tests/peers/tvm/test_cache.py in a child process (the test venv's apache-tvm 0.27, or a
venv of another version); it needs only tvm, numpy and the standard library. Usage:

    python tvm_cache_probe.py MANIFEST.json    # [{"id", "path"}, ...]

Each case and loader runs in a process forked from this one (a crash is an outcome); one
JSON line per case and loader on stdout: ``{"id", "loader": "python" | "cpp", "status":
"ok" | "error" | "died", "signal", "error", "tensors": {name: {dtype, shape, sha256}}}``.
``python`` is tvm.contrib.tvmjs.load_tensor_cache (load_ndarray_cache before 0.22) with the
path as given; ``cpp`` is vm.builtin.tensor_cache.load (ndarray_cache before 0.22) on the
folder, then ``.get`` of every name the index lists.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

# the fork-per-case loop (mlf_spec/peers/forked.py) as a lone file: mlf-spec is not importable in
# another TVM's venv
_PEERS = next(p / "mlf_spec" / "peers" for p in Path(__file__).resolve().parents
              if (p / "mlf_spec" / "peers" / "forked.py").is_file())
sys.path.append(str(_PEERS))
from forked import in_fork  # noqa: E402


def _numpy_entry(arr) -> dict:
    import numpy as np

    try:
        a = arr.numpy()
    except Exception as exc:  # noqa: BLE001 - e.g. int4 has no NumPy type
        return {"dtype": str(arr.dtype), "shape": [int(d) for d in arr.shape], "sha256": None,
                "numpy_error": type(exc).__name__}
    return {"dtype": str(arr.dtype), "shape": [int(d) for d in a.shape],
            "sha256": hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()}


def _python(path: str) -> dict:
    import tvm
    from tvm.contrib import tvmjs

    load = getattr(tvmjs, "load_tensor_cache", None) or tvmjs.load_ndarray_cache
    arrays, _meta = load(path, tvm.cpu())
    return {name: _numpy_entry(a) for name, a in arrays.items()}


def _cpp(path: str) -> dict:
    import tvm

    folder = path if os.path.isdir(path) else os.path.dirname(path)
    prefix = "vm.builtin.tensor_cache" if tvm.get_global_func("vm.builtin.tensor_cache.load", True) \
        else "vm.builtin.ndarray_cache"
    tvm.get_global_func(prefix + ".clear")()
    tvm.get_global_func(prefix + ".load")(folder, 1, 0)
    get = tvm.get_global_func(prefix + ".get")
    names = []
    for name in ("tensor-cache.json", "ndarray-cache.json"):
        if os.path.exists(os.path.join(folder, name)):
            with open(os.path.join(folder, name)) as f:
                names = [r["name"] for s in json.load(f)["records"] for r in s["records"]]
            break
    out = {}
    for name in names:
        arr = get(name)
        if arr is not None:
            out[name] = _numpy_entry(arr)
    return out


def _load(case: dict, loader: str) -> dict:
    try:
        return {"status": "ok", "tensors": (_python if loader == "python" else _cpp)(case["path"])}
    except BaseException as exc:  # noqa: BLE001 - every failure is an outcome
        lines = [x for x in str(exc).strip().splitlines() if x.strip()]
        return {"status": "error", "error": f"{type(exc).__name__}: {(lines[-1] if lines else '')[:300]}"}


def _run(case: dict, loader: str) -> dict:
    out = in_fork(lambda send: _load(case, loader))
    if out.signal is not None or not out.parts:
        return {"status": "died", "signal": out.signal}
    return out.parts[-1]


def main() -> None:
    import tvm  # noqa: F401 - imported once, before forking

    with open(sys.argv[1]) as f:
        cases = json.load(f)
    for case in cases:
        for loader in ("python", "cpp"):
            print(json.dumps({"id": case["id"], "loader": loader, **_run(case, loader)}), flush=True)


if __name__ == "__main__":
    main()
