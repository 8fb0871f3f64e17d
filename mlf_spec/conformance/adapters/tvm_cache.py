"""TVM's tensor cache loaders under test (folder-shaped cases, docs/conformance/protocol.md):

* ``tvm`` (apache-tvm 0.27, in the test venv): the Python loader
  ``tvm.contrib.tvmjs.load_tensor_cache`` and writer ``dump_tensor_cache`` (through
  :class:`~.tvm.TvmAdapter`);
* ``tvm-cpp`` (the same apache-tvm): the C++ runtime's loader ``vm.builtin.tensor_cache.load``,
  which the relax VM and MLC-LLM use, then ``vm.builtin.tensor_cache.get`` of each name the
  index lists;
* ``hhb-tvm`` (TVM 0.16, a peer venv): ``load_ndarray_cache`` and writer ``dump_ndarray_cache``
  (through :class:`~.tvm_peer.PeerTvmAdapter`; one encode format for every tensor).

Each load runs in a forked child (the isolated adapters' serve loop, or the peer worker), so
that the C++ loader's read past a shard's end is a crash of that case. The reading is what
the loader returns: per array, in the order of the dict (Python) or of the index (C++), its
name, dtype, shape and the SHA-256 of ``.numpy()``'s C-contiguous bytes; the Python loader's
metadata. Where the records were stored is not shown by either API (``may_omit``). A name
stored twice comes back once (a dict): the cases holding one are known failures.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mlf_spec.generated.formats import PROTOCOL

from .base import Adapter, Rejected


def cache_reading(reply: dict[str, Any]) -> dict[str, Any]:
    """The canonical tensor-cache reading of what a loader returned (the peer worker's
    ``cache_load`` / ``cache_load_cpp`` reply)."""
    tensors = []
    for t in reply["tensors"]:
        if t.get("sha256") is None:
            raise Rejected(f"{t['name']!r}: the loader returned an array NumPy cannot hold ({t.get('numpy_error')})")
        tensors.append({"name": t["name"], "dtype": t["dtype"], "shape": list(t["shape"]), "sha256": t["sha256"]})
    out: dict[str, Any] = {"format": "tensor-cache", "tensors": tensors}
    if "metadata" in reply:
        out["metadata"] = reply["metadata"]
    return out


def load_here(folder: Path, loader: str) -> dict[str, Any]:
    """Run a loader of the TVM imported in this process (``python`` or ``cpp``) on ``folder``;
    Rejected with TVM's last error line when it refuses."""
    from mlf_spec.peers import worker

    fn = worker._cache_load if loader == "python" else worker._cache_load_cpp
    try:
        reply = fn({"path": str(folder)})
    except Exception as exc:  # TVM refused the cache (its own error types)
        raise Rejected(f"{type(exc).__name__}: {worker._last_line(exc)}") from None
    return cache_reading(reply)


def cache_support(versions: list[str], roles: tuple[str, ...] = ("decode",)) -> dict[str, Any]:
    """The handshake entry: tensor-cache ``roles`` in the index versions this TVM opens."""
    return {"format": "tensor-cache", "roles": list(roles), "scope": {"version": versions}}


def dump_here(reading: Any, options: dict[str, str]) -> None:
    """``tvm.contrib.tvmjs.dump_tensor_cache`` of the arrays a reading with data describes
    into ``options["output_dir"]``: each tensor under its ``format`` (0.27's per-name
    encode_format), the reading's metadata, the shard cap of option ``shard_cap_mb``. What it
    prints goes to standard error (standard output carries the protocol)."""
    import contextlib
    import sys

    from mlf_spec.errors import MlfError

    from ..canonical_cache import arrays_of

    try:
        arrays, formats = arrays_of(reading)
    except MlfError as exc:
        raise Rejected(str(exc)) from None
    from tvm.contrib import tvmjs

    from mlf_spec.peers import worker

    try:
        with contextlib.redirect_stdout(sys.stderr):
            tvmjs.dump_tensor_cache(iter(arrays), options["output_dir"], encode_format=formats or "raw",
                                    meta_data=reading.get("metadata"),
                                    shard_cap_mb=float(options.get("shard_cap_mb", "32")), show_progress=False)
    except Exception as exc:  # TVM refused the arrays (its own error types)
        raise Rejected(f"{type(exc).__name__}: {worker._last_line(exc)}") from None


def dump_request(reading: Any, options: dict[str, str]) -> dict[str, Any]:
    """The peer worker's ``cache_dump`` request for a reading with data: the arrays (NumPy
    dtype names, base64 bytes), the one encode format they share (0.16's
    ``dump_ndarray_cache`` takes no mapping by name: a reading whose tensors differ in format
    cannot be written by it, Rejected), the metadata, the shard cap of ``shard_cap_mb``, and
    ``output_dir`` as the folder."""
    import base64

    from mlf_spec.errors import MlfError

    from ..canonical_cache import arrays_of

    try:
        arrays, formats = arrays_of(reading)
    except MlfError as exc:
        raise Rejected(str(exc)) from None
    kinds = sorted(set(formats.values()))
    if len(kinds) > 1:
        raise Rejected(f"one encode_format for every tensor (dump_ndarray_cache takes no mapping): {kinds}")
    tensors = [{"name": n, "dtype": a.dtype.name, "shape": list(a.shape),
                "data": base64.b64encode(a.tobytes()).decode("ascii")} for n, a in arrays]
    return {"path": options["output_dir"], "tensors": tensors, "encode_format": kinds[0] if kinds else "raw",
            "metadata": reading.get("metadata"), "shard_cap_mb": float(options.get("shard_cap_mb", "32"))}


def index_versions(tvm_version: str) -> list[str]:
    """The cache versions a TVM release's loaders open in a folder: ``1`` (ndarray-cache.json)
    before 0.22, ``2`` (tensor-cache.json) from 0.22 (3c36ce2ec6)."""
    major, minor = (int(x) for x in tvm_version.split(".")[:2])
    return ["2"] if (major, minor) >= (0, 22) else ["1"]


class TvmCppCacheAdapter(Adapter):
    """apache-tvm's C++ tensor cache loader (``vm.builtin.tensor_cache.load``)."""

    name = "tvm-cpp"
    isolated = True

    def setup(self, progress: bool = True) -> None:
        """apache-tvm in this Python, else one line saying how to install it."""
        self.needs("tvm", "tvm", "apache-tvm")

    def prepare(self) -> None:
        """Import TVM once (the served requests run in forked children)."""
        import tvm  # noqa: F401
        from tvm.contrib import tvmjs  # noqa: F401

    def info(self) -> dict[str, Any]:
        """tensor-cache decode, in the index version of the installed TVM."""
        import tvm

        return {"protocol": PROTOCOL, "name": "apache-tvm (C++ tensor cache loader)",
                "version": tvm.__version__, "serve": True, "formats": [cache_support(index_versions(tvm.__version__))]}

    def decode(self, format: str, data: Any, options: dict[str, str]) -> Any:  # noqa: A002
        """vm.builtin.tensor_cache.load of the folder, then .get of each name."""
        if format != "tensor-cache":
            raise Rejected(f"tvm-cpp adapter: no {format}")
        return load_here(Path(data), "cpp")


__all__ = ["TvmCppCacheAdapter", "cache_reading", "cache_support", "dump_here", "dump_request", "index_versions", "load_here"]
