"""Netron's TVM reader under test (``--adapter netron``): the JavaScript of the PyPI package
``netron`` (its ``tvm.js``, opened through the app's own ``view.ModelFactoryService``), run
headless by ``netron.mjs`` next to this file in Node.js, which speaks the testee protocol in its
persistent form (one Node process serves every case).

Netron reads two of the formats: ``.params`` and GraphExecutor JSON (decode only). Its
dtype spellings are TVM's for codes 0-2 with one lane (``int<bits>``, ``uint<bits>``,
``float<bits>``), so its handshake declares the dtype dialects whose table spells those codes
so: vectors whose reading holds in them are run, the others (files of the older TVM that spell
(1, 1, 1) ``bool``, or number float8 6 and 7) are skipped. For graph JSON it is a partial
reader: it shows nodes, their inputs and attributes and the heads, but neither
``node_row_ptr`` nor the graph attributes (``dltype``, ``shape``, ...), so it declares
``reads: [nodes, heads]``. Needs ``node`` (>= 18) on PATH and ``pip install netron``
(``pip install -e '.[netron]'`` in a clone).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from mlf_spec.errors import MlfError

from .base import Adapter

SCRIPT = Path(__file__).with_name("netron.mjs")
#: Netron's tvm.TensorType: the prefix it spells each code it accepts with
NETRON_SPELLING = {0: "int", 1: "uint", 2: "float"}


def netron_dir() -> Path:
    """The directory of the installed ``netron`` package (its JavaScript)."""
    import importlib.util

    spec = importlib.util.find_spec("netron")
    if spec is None or not spec.submodule_search_locations:
        from mlf_spec._extras import missing

        raise MlfError(missing("the netron adapter", "netron", "netron"))
    return Path(list(spec.submodule_search_locations)[0])


def dialects() -> list[str]:
    """The dtype dialects whose spelling of codes 0-2 (lanes 1, every width) is Netron's."""
    from mlf_spec.params import dtypes

    return [d.id for d in dtypes.DIALECTS
            if all(dtypes.lookup(d, code, bits, 1).name == f"{prefix}{bits}"
                   for code, prefix in NETRON_SPELLING.items() for bits in range(1, 65))]


class NetronAdapter(Adapter):
    """Netron's tvm.js in Node.js (netron.mjs)."""

    name = "netron"

    def command(self) -> list[str]:
        """``node netron.mjs --netron DIR --version V --dialects ...``."""
        from importlib.metadata import version

        node = shutil.which("node")
        if node is None:
            raise MlfError("the netron adapter needs Node.js (node >= 18) on PATH")
        return [node, str(SCRIPT), "--netron", str(netron_dir()), "--version", version("netron"),
                "--dialects", ",".join(dialects())]

    def info(self) -> dict[str, Any]:
        """Not called: the runner asks netron.mjs (see :meth:`command`)."""
        raise NotImplementedError("the netron adapter is driven through its command")


ADAPTER = NetronAdapter
