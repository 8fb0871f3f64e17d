"""``web-runtime``: @mlc-ai/web-runtime (TVM's web runtime, npm, pinned in
tools/webruntime/package-lock.json) reading tensor cache folders, in Node.js, by a testee
that speaks the protocol itself (``webruntime_testee.cjs``, next to this file: its header
says exactly what of the package runs and what, being WebAssembly or browser-only, does not).
Known failures: ``web-runtime.known-failures`` next to this file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .base import Adapter

DRIVER = Path(__file__).resolve().with_name("webruntime_testee.cjs")


class WebRuntimeAdapter(Adapter):
    """The web runtime's JavaScript tensor cache reading (index, shard URLs, record slicing)."""

    name = "web-runtime"

    def setup(self, progress: bool = True) -> None:
        """Install the pinned package with npm ci on first use (mlf_spec.cache.webruntime)."""
        from mlf_spec.cache.webruntime import ensure_installed
        from mlf_spec.errors import MlfError, UnsupportedError

        try:
            ensure_installed()
        except UnsupportedError as exc:
            raise MlfError(str(exc)) from None

    def command(self) -> list[str] | None:
        """``node webruntime_testee.cjs NODE_MODULES``."""
        from mlf_spec.cache.webruntime import ensure_installed

        return ["node", str(DRIVER), str(ensure_installed())]

    def info(self) -> dict[str, Any]:  # pragma: no cover - the command answers it
        """Answered by the command."""
        raise NotImplementedError


__all__ = ["WebRuntimeAdapter"]
