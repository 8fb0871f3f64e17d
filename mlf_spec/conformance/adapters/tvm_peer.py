"""TVM releases that cannot be imported next to mlf-spec, under test through their own
interpreter: ``hhb-tvm`` (T-Head's HHB fork of TVM 0.16, ``tvm.__version__ == '0.16.dev0'``,
cp310 wheels with numpy < 2) and apache-tvm ``tvm-0.25`` / ``tvm-0.26`` (beside the test
extra's 0.27). Each lives in a venv made on first use under the user cache
(:mod:`mlf_spec.peers.venvs`; ``setup`` prints a progress line while it is made) and is driven
through :mod:`mlf_spec.peers.worker`, which imports TVM once and answers every request in a
forked child: an abort or a segmentation fault is the outcome of that case
(:class:`~.base.Crashed`, with the signal).

``.params`` decode is ``load_param_dict``, then per tensor the record ``save_param_dict`` writes
for it alone (the bytes, DLDataType and shape TVM holds, read with the spec's grammar, as the
``tvm`` adapter does in process); encode is ``save_param_dict`` of tensors allocated with the
reading's DLDataType and filled with its bytes. The dtype dialect in scope is the release's
own (v0.13 for 0.16: float8 and bool before the 0.21 renumbering). Known failures:
``<name>.known-failures`` next to this file.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from mlf_spec.generated.formats import PROTOCOL

from .base import Adapter, Crashed, Rejected
from .tvm import encodable, params_reading


class PeerTvmAdapter(Adapter):
    """A TVM release in a peer venv: .params decode and encode."""

    #: the key of mlf_spec.peers.venvs.PEERS
    peer_key = ""
    #: the handshake's implementation name
    implementation = ""
    #: sub-byte tensors are bit-packed in this release's memory (0.21 on)
    packed = True
    #: the release's Python tensor cache loader is under test too (:mod:`.tvm_cache`)
    cache_loader = False
    #: and its tensor cache writer (``dump_ndarray_cache`` in 0.16)
    cache_writer = False
    isolated = True

    def __init__(self) -> None:
        self._peer: Any = None
        self._version: str | None = None

    def setup(self, progress: bool = True) -> None:
        """Make the peer's venv if it is not made yet."""
        from mlf_spec.peers import ensure

        ensure(self.peer_key, progress=progress)

    def peer(self) -> Any:
        """The running request loop (started, and its venv made, on first use)."""
        if self._peer is None:
            from mlf_spec.peers import Peer, ensure, environment

            self._peer = Peer(ensure(self.peer_key), env=environment(self.peer_key))
        return self._peer

    def prepare(self) -> None:
        """Start the peer's loop (TVM imported once there; its requests fork)."""
        self.peer()

    def close(self) -> None:
        """Stop the peer's loop."""
        if self._peer is not None:
            self._peer.close()
            self._peer = None

    def version(self) -> str:
        """The release's ``tvm.__version__``."""
        if self._version is None:
            self._version = str(self._call("version")["tvm"])
        return self._version

    def info(self) -> dict[str, Any]:
        """.params decode and encode, in the dtype dialect of the release."""
        from mlf_spec.params import dtypes

        version = self.version()
        formats: list[dict[str, Any]] = [{"format": "params", "roles": ["decode", "encode"],
                                          "scope": {"dialect": [dtypes.dialect(version).id]}}]
        if self.cache_loader:
            from .tvm_cache import cache_support, index_versions

            formats.append(cache_support(index_versions(version),
                                         ("decode", "encode") if self.cache_writer else ("decode",)))
        return {"protocol": PROTOCOL, "name": self.implementation, "version": version, "serve": True,
                "formats": formats}

    def _call(self, op: str, **fields: Any) -> dict[str, Any]:
        from mlf_spec.peers import PeerCrashed, PeerRefused

        try:
            return self.peer().request(op, **fields)
        except PeerRefused as exc:
            raise Rejected(str(exc)) from None
        except PeerCrashed as exc:
            raise Crashed(f"{self.implementation} {exc}", exc.signal) from None

    def decode(self, format: str, data: bytes, options: dict[str, str]) -> Any:  # noqa: A002
        """load_param_dict in the peer, then each tensor as TVM holds it (a tensor cache
        folder: the release's Python cache loader, :mod:`.tvm_cache`)."""
        if format == "tensor-cache" and self.cache_loader:
            from .tvm_cache import cache_reading

            return cache_reading(self._call("cache_load", path=str(data)))
        if format != "params":
            raise Rejected(f"{self.name} adapter: no {format}")
        reply = self._call("params_load", data=base64.b64encode(bytes(data)).decode("ascii"))
        return params_reading([(t["name"], base64.b64decode(t["record"]), t.get("dtype")) for t in reply["tensors"]])

    def encode(self, format: str, reading: Any, options: dict[str, str]) -> bytes:  # noqa: A002
        """save_param_dict in the peer, of tensors made from the reading (a tensor cache: the
        release's cache writer into ``options["output_dir"]``, :func:`.tvm_cache.dump_request`)."""
        if format == "tensor-cache" and self.cache_writer:
            from .tvm_cache import dump_request

            self._call("cache_dump", **dump_request(reading, options))
            return b""
        if format != "params":
            raise Rejected(f"{self.name} adapter: no {format}")
        tensors = [{"name": t["name"], "code": t["code"], "bits": t["bits"], "lanes": t["lanes"],
                    "shape": list(t["shape"]), "data": base64.b64encode(t["raw"]).decode("ascii")}
                   for t in encodable(reading, self.packed)]
        return base64.b64decode(self._call("params_save", tensors=tensors)["output"])


class HhbTvmAdapter(PeerTvmAdapter):
    """hhb-tvm 3.2.3: T-Head's fork of TVM 0.16: .params decode and encode, legacy module blobs
    through ``tvm.runtime.load_module`` (:mod:`.legacy_blob_observed`)."""

    name = "hhb-tvm"
    peer_key = "hhb"
    implementation = "hhb-tvm"
    packed = False
    cache_loader = True  # load_ndarray_cache (TVM 0.16)
    cache_writer = True  # dump_ndarray_cache (TVM 0.16)

    def info(self) -> dict[str, Any]:
        """.params, and legacy blobs in the era of 0.16's payload loaders: the payloads of the
        kinds it has a loader for are read (by that loader), the others are refused as
        unsupported (skipped); trailing bytes, findings and payload fields are not reported."""
        info = super().info()
        loaders = self._call("version").get("loaders", [])
        info["formats"].append({"format": "blob", "roles": ["decode"],
                                "scope": {"layout": ["legacy"], "era": [_era(self.version())]},
                                "payloads": sorted(loaders)})
        info["formats"].append({"format": "graph-json", "roles": ["decode"], "reads": []})
        return info

    def decode(self, format: str, data: bytes, options: dict[str, str]) -> Any:  # noqa: A002
        """load_param_dict, load_module of a library holding the blob, or the GraphExecutor
        made from the graph, in the peer."""
        if format == "graph-json":
            # accepted or refused is what is judged (`reads: []`): the executor exposes its
            # inputs and outputs, not the document
            self._call("graph_create", data=base64.b64encode(bytes(data)).decode("ascii"))
            return {"format": "graph-json"}
        if format != "blob":
            return super().decode(format, data, options)
        if options.get("layout", "legacy") != "legacy":
            raise Rejected(f"{self.name} reads the legacy blob layout (__tvm_dev_mblob), not {options.get('layout')}")
        from mlf_spec.blob.locate import SYMBOL_LEGACY

        from .legacy_blob_observed import reading

        try:
            reply = self._call("blob_load", data=base64.b64encode(bytes(data)).decode("ascii"), symbol=SYMBOL_LEGACY)
        except Rejected as exc:
            if _NO_LOADER in exc.message:
                raise Rejected(exc.message, "unsupported") from None
            raise
        return reading(bytes(data), reply)


#: how TVM up to 0.20 says that a blob holds a kind it has no loader for
_NO_LOADER = "but a loader of that name is not registered"


def _era(version: str) -> str:
    """The blob era option of TVM ``version`` (its major.minor)."""
    from mlf_spec import versions

    v = versions.parse(version) or (0, 0)
    return f"{v[0]}.{v[1]}"


class _ApacheTvmAdapter(PeerTvmAdapter):
    """An apache-tvm release of the tvm-ffi era: on the vector suite it fails what 0.27 fails
    (observed), so it shares the ``tvm`` adapter's known failures."""

    def known_failures_path(self) -> Path | None:
        """tvm.known-failures, next to this module."""
        return Path(__file__).with_name("tvm.known-failures")


class Tvm025Adapter(_ApacheTvmAdapter):
    """apache-tvm 0.25.0.post1 (with apache-tvm-ffi 0.1.12)."""

    name = "tvm-0.25"
    peer_key = "0.25"
    implementation = "apache-tvm"


class Tvm026Adapter(_ApacheTvmAdapter):
    """apache-tvm 0.26.0."""

    name = "tvm-0.26"
    peer_key = "0.26"
    implementation = "apache-tvm"


__all__ = ["HhbTvmAdapter", "PeerTvmAdapter", "Tvm025Adapter", "Tvm026Adapter"]
