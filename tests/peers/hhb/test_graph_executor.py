"""The GraphExecutor of TVM 0.16 (hhb-tvm 3.2.3) reads the valid graph vectors as meant: the
runtime's factory (``tvm.graph_executor.create``) builds an executor from the graph's bytes,
a CPU device and a library of the functions it asks for, and the inputs and outputs it then
shows (``get_input`` / ``get_output``: name, shape, dtype) are the document's (arg_nodes and
heads, with the shape and dltype of their entries). The conformance run judges accepted or
refused only (the executor shows what it built, not the document): this compares what it built.
"""

from __future__ import annotations

import base64

import pytest

from mlf_spec import peers
from mlf_spec.conformance.vectors import default_suite, load_case

pytestmark = pytest.mark.tvm

#: valid graph vectors 0.16 builds an executor from (the others are its known failures)
BUILT = ("graph-json.valid.basic", "graph-json.valid.no-device-index", "graph-json.valid.two-element-entries")


def _meant(doc: dict) -> dict:
    """Inputs and outputs as the document declares them."""
    attrs, row = doc["attrs"], doc["node_row_ptr"]
    shape, dltype = attrs["shape"][1], attrs["dltype"][1]
    inputs = [{"name": doc["nodes"][n]["name"], "shape": shape[row[n]], "dtype": dltype[row[n]]}
              for n in doc["arg_nodes"]]
    outputs = [{"shape": shape[row[n] + i], "dtype": dltype[row[n] + i]} for n, i, *_ in doc["heads"]]
    return {"inputs": inputs, "outputs": outputs}


def test_the_executor_shows_the_documents_inputs_and_outputs():
    suite = default_suite() / "graph-json"
    with peers.Peer(peers.ensure("hhb"), env=peers.environment("hhb")) as peer:
        for cid in BUILT:
            case = load_case(suite / f"{cid}.case.json")
            got = peer.request("graph_create", data=base64.b64encode(case.input()).decode("ascii"))
            want = _meant(case.expected["reading"])
            assert {"inputs": got["inputs"], "outputs": got["outputs"]} == want, cid
            funcs = {n["attrs"]["func_name"] for n in case.expected["reading"]["nodes"] if n["op"] == "tvm_op"}
            assert set(got["functions"]) == funcs  # each looked up by the executor, none guessed
        with pytest.raises(peers.PeerRefused, match="key x_unknown is not supported"):
            case = load_case(suite / "graph-json.broken.unknown_key.graph.case.json")
            peer.request("graph_create", data=base64.b64encode(case.input()).decode("ascii"))
