"""Which eras' module blobs TVM 0.16's loader reads: blob vectors of every era, each compiled
into a shared object under the symbol its era's writer exports (``blob.symbol_for``) and
loaded with hhb-tvm 3.2.3's ``tvm.runtime.load_module`` in a forked child of the peer venv
(mlf_spec/peers). What the loader built (payload loaders called, the bytes each consumed, the
import tree) is compared with the vector's reading.

Found: the legacy blobs of TVM 0.6 to 0.20 are read as meant (0.6's without an import tree,
wrapped under a fresh library module); a blob with two ``_lib`` entries (TVM 0.7's export of
two DSO modules) is refused; the 0.21 legacy blob and every tvm-ffi blob are exported under a
symbol 0.16 does not look up, so the library loads as a plain library without the blob's
modules.
"""

from __future__ import annotations

import base64

import pytest

from mlf_spec import blob, peers
from mlf_spec.conformance.adapters.legacy_blob_observed import reading
from mlf_spec.conformance.vectors import default_suite, load_case

pytestmark = pytest.mark.tvm

#: vector id -> what 0.16 does with it under its era's symbol
EXPECTED = {
    **{f"blob.legacy.{era}.{name}": "reads" for era in ("0.6", "0.7", "0.8", "0.14")
       for name in ("c_source_payload", "graph_executor_factory")},
    **{f"blob.legacy.{era}.tree.lib-only": "reads" for era in ("0.7", "0.8", "0.14", "0.20")},
    "blob.legacy.0.21.c_source_payload": "ignores the symbol",
    "blob.legacy.0.21.graph_executor_factory": "ignores the symbol",
    "blob.ffi.0.23.c_source_payload": "ignores the symbol",
    "blob.ffi.kind.c": "ignores the symbol",
}
#: (layout, era) -> what 0.16 does with a `c` module under a _lib as that era's writer packs it
BUILT = {**{("legacy", era): "reads" for era in ("0.6", "0.7", "0.8", "0.14", "0.16", "0.20")},
         ("legacy", "0.21"): "ignores the symbol",
         **{("ffi", era): "ignores the symbol" for era in ("0.22", "0.23", "0.24")}}


class _TwoLibs:
    """A legacy blob of two _lib entries, the second imported by the first (TVM 0.7 wrote one
    _lib per DSO module; the vector of that shape also holds a cuda module 0.16 has no loader for)."""

    options = {"layout": "legacy", "era": "0.7"}

    def input(self) -> bytes:
        def u64(n: int) -> bytes:
            return n.to_bytes(8, "little")

        def key(k: str) -> bytes:
            return u64(len(k)) + k.encode()

        body = u64(3) + key("_lib") + key("_lib") + key("_import_tree") + b"".join(map(u64, [3, 0, 1, 1, 1, 1]))
        return u64(len(body)) + body


class _Built:
    """A blob mlf-spec writes for an era, as a case: its input, options and reading."""

    def __init__(self, layout: str, era: str) -> None:
        from mlf_spec.conformance import canonical

        payload = blob.new_payload("c", format=layout, era=era, code="int f(void) { return 0; }", fmt="c",
                                   func_names=["f"], const_vars=[])
        self.data = blob.build(blob.Module.lib(blob.Module("c", payload)), format=layout, era=era)
        self.options = {"layout": layout, "era": era}
        self.expected = {"reading": canonical.decode("blob", self.data, self.options)}

    def input(self) -> bytes:
        return self.data


def _project(r: dict) -> tuple:
    mods = [(m["index"], m["kind"], m["payload_bytes"], m["payload_sha256"]) for m in r["modules"]]
    return mods, r["import_tree"]


def _what_016_does(peer: peers.Peer, case) -> tuple[str, str]:
    data = case.input()
    symbol = blob.symbol_for(case.options["layout"], case.options["era"])
    try:
        reply = peer.request("blob_load", data=base64.b64encode(data).decode("ascii"), symbol=symbol)
    except peers.PeerRefused as exc:
        return "refuses", str(exc)
    want = case.expected["reading"]
    root = next(m for m in reply["modules"] if m["handle"] == reply["root"])
    if not reply["calls"] and not root["imports"] and any(m["kind"] != "_lib" for m in want["modules"]):
        return "ignores the symbol", f"{symbol}: a plain library, no module of the blob"
    got = reading(data, reply)
    return ("reads", symbol) if _project(got) == _project(want) else ("misreads", f"{_project(got)}")


def test_which_eras_blobs_tvm_016_reads():
    suite = default_suite() / "blob"
    seen = {}
    with peers.Peer(peers.ensure("hhb"), env=peers.environment("hhb")) as peer:
        assert peer.request("version")["tvm"] == "0.16.dev0"
        for cid in EXPECTED:
            seen[cid] = _what_016_does(peer, load_case(suite / f"{cid}.case.json"))
        for key in BUILT:
            seen[key] = _what_016_does(peer, _Built(*key))
        two_libs = _what_016_does(peer, _TwoLibs())
    wrong = {cid: seen[cid] for cid in EXPECTED if seen[cid][0] != EXPECTED[cid]}
    wrong.update({key: seen[key] for key in BUILT if seen[key][0] != BUILT[key]})
    assert wrong == {}, wrong
    assert two_libs[0] == "refuses" and "Multiple dso module detected" in two_libs[1], two_libs
