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
            from mlf_spec.peers import PEERS, Peer, ensure

            self._peer = Peer(ensure(self.peer_key), env=PEERS[self.peer_key].env)
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

            formats.append(cache_support(index_versions(version)))
        return {"protocol": "mlf-conformance/1", "name": self.implementation, "version": version, "serve": True,
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
        """save_param_dict in the peer, of tensors made from the reading."""
        if format != "params":
            raise Rejected(f"{self.name} adapter: no {format}")
        tensors = [{"name": t["name"], "code": t["code"], "bits": t["bits"], "lanes": t["lanes"],
                    "shape": list(t["shape"]), "data": base64.b64encode(t["raw"]).decode("ascii")}
                   for t in encodable(reading, self.packed)]
        return base64.b64decode(self._call("params_save", tensors=tensors)["output"])


class HhbTvmAdapter(PeerTvmAdapter):
    """hhb-tvm 3.2.3: T-Head's fork of TVM 0.16."""

    name = "hhb-tvm"
    peer_key = "hhb"
    implementation = "hhb-tvm"
    packed = False
    cache_loader = True  # load_ndarray_cache (TVM 0.16)


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
