"""Adapters: implementations under test as Python objects (see :mod:`.base`).

Built in: ``mlf-spec`` (the reference, in process), ``tvm`` (apache-tvm's .params reader and
writer, and its Python tensor cache loader), ``tvm-cpp`` (apache-tvm's C++ tensor cache loader), ``tvm-ffi`` (apache-tvm-ffi's module-blob loader), ``netron`` (Netron's TVM reader, in
Node.js), ``mlonmcu`` (MLonMCU's MLF metadata functions) and ``kaitai-python`` / ``kaitai-js``
(the parsers Kaitai Struct generates from the exported .ksy files), ``web-runtime``
(@mlc-ai/web-runtime's tensor cache reading, in Node.js). ``--adapter`` also takes ``package.module:Class``, and a
package can register adapters under the entry point group ``mlf_spec.conformance.adapters``.

``python -m mlf_spec.conformance.adapters NAME ARGS...`` speaks the testee protocol for an
adapter (``info``, ``decode FORMAT``, ..., ``serve``): how isolated adapters are run.
"""

from __future__ import annotations

import importlib
from typing import Any

from .base import Adapter, Crashed, Rejected

#: name -> "module:class" of the built-in adapters
BUILTIN: dict[str, str] = {
    "mlf-spec": "mlf_spec.conformance.adapters.mlf_spec:MlfSpecAdapter",
    "tvm": "mlf_spec.conformance.adapters.tvm:TvmAdapter",
    "tvm-cpp": "mlf_spec.conformance.adapters.tvm_cache:TvmCppCacheAdapter",
    "tvm-ffi": "mlf_spec.conformance.adapters.tvm_ffi:TvmFfiAdapter",
    "netron": "mlf_spec.conformance.adapters.netron:NetronAdapter",
    "mlonmcu": "mlf_spec.conformance.adapters.mlonmcu:MlonmcuAdapter",
    "kaitai-python": "mlf_spec.conformance.adapters.kaitai:KaitaiPythonAdapter",
    "kaitai-js": "mlf_spec.conformance.adapters.kaitai:KaitaiJsAdapter",
    "hhb-tvm": "mlf_spec.conformance.adapters.tvm_peer:HhbTvmAdapter",
    "web-runtime": "mlf_spec.conformance.adapters.webruntime:WebRuntimeAdapter",
    "tvm-0.25": "mlf_spec.conformance.adapters.tvm_peer:Tvm025Adapter",
    "tvm-0.26": "mlf_spec.conformance.adapters.tvm_peer:Tvm026Adapter",
}
ENTRY_POINT_GROUP = "mlf_spec.conformance.adapters"


def names() -> list[str]:
    """The adapters that can be named: built in and registered by entry points."""
    from importlib.metadata import entry_points

    return sorted(set(BUILTIN) | {ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)})


def target(name: str) -> str:
    """The ``module:Class`` an adapter name stands for."""
    if name in BUILTIN:
        return BUILTIN[name]
    if ":" in name:
        return name
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == name:
            return ep.value
    from mlf_spec.errors import MlfError

    raise MlfError(f"no adapter {name!r}; adapters: {', '.join(names())} (or module:Class)")


def testee(name: str, adapter: Adapter, limits: Any = None, one_shot: bool = False, info: Any = None) -> Any:
    """The runner's :class:`~mlf_spec.conformance.testee.Testee` for an adapter: its own command
    (an implementation in another language), a child process (``isolated``), or in process
    (``info``: its handshake, when already asked in this run)."""
    import sys

    from ..testee import InProcess, OneShot, Persistent

    cmd = adapter.command()
    if cmd is None and adapter.isolated:
        cmd = [sys.executable, "-m", "mlf_spec.conformance.adapters", name]
    if cmd is None:
        return InProcess(adapter)
    label = f"adapter:{name}"
    return OneShot(cmd, limits, label, info=info) if one_shot else Persistent(cmd, limits, label, info=info)


def load(name: str) -> Adapter:
    """An instance of the adapter ``name`` (does not import the implementation under test
    until the adapter needs it)."""
    from mlf_spec.errors import MlfError

    module, _, cls = target(name).partition(":")
    try:
        obj: Any = getattr(importlib.import_module(module), cls)
    except (ImportError, AttributeError) as exc:
        raise MlfError(f"cannot load adapter {name!r} ({module}:{cls}): {exc}") from None
    adapter = obj()
    if not isinstance(adapter, Adapter):
        raise MlfError(f"{module}:{cls} is not a mlf_spec.conformance.adapters.Adapter")
    return adapter


__all__ = ["Adapter", "BUILTIN", "Crashed", "ENTRY_POINT_GROUP", "Rejected", "load", "names", "target", "testee"]
