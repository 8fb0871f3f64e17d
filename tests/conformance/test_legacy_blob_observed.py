"""How the hhb-tvm adapter turns what TVM 0.16's loader did into a canonical blob reading
(mlf_spec/conformance/adapters/legacy_blob_observed.py), on replies shaped as the peer worker
sends them: payload extents from the loaders' stream positions, _lib and _import_tree from the
bytes between payloads, the tree from the modules' imports. The real loader is exercised by
tests/peers/hhb/test_conformance.py and tests/peers/hhb/test_blob_eras.py."""

from __future__ import annotations

import hashlib

import pytest

from mlf_spec import blob
from mlf_spec.conformance import canonical
from mlf_spec.conformance.adapters.legacy_blob_observed import reading


def _c(era: str) -> tuple[bytes, bytes]:
    payload = blob.new_payload("c", format="legacy", era=era, code="int f(void) { return 0; }", fmt="c",
                               func_names=["f"], const_vars=[])
    return blob.build(blob.Module.lib(blob.Module("c", payload)), format="legacy", era=era), payload.to_bytes()


def _reply(data: bytes, payload: bytes, *, tree: bool) -> dict:
    body = data[8:]
    start = body.index(b"\x01\x00\x00\x00\x00\x00\x00\x00c") + 9
    assert body[start:start + len(payload)] == payload
    call = {"kind": "c", "start": start, "end": start + len(payload), "type_key": "c", "handle": 20,
            "sha256": hashlib.sha256(payload).hexdigest()}
    if tree:  # TVM's root is module 0, the library of the _lib entry
        modules = [{"handle": 10, "type_key": "library", "imports": [20]}, {"handle": 20, "type_key": "c", "imports": []}]
    else:  # no import tree: a fresh library module imports every module
        modules = [{"handle": 30, "type_key": "library", "imports": [20]}, {"handle": 20, "type_key": "c", "imports": []}]
    return {"calls": [call], "stream": True, "root": 10 if tree else 30, "modules": modules}


def _expected(data: bytes, era: str) -> dict:
    full = canonical.decode("blob", data, {"layout": "legacy", "era": era})
    mods = [{k: m[k] for k in ("index", "kind", "payload_bytes", "payload_sha256")} for m in full["modules"]]
    return {"format": "blob", "layout": "legacy", "modules": mods, "import_tree": full["import_tree"]}


@pytest.mark.parametrize("era", ["0.8", "0.14", "0.20"])
def test_a_blob_with_an_import_tree_reads_as_mlf_spec_reads_it(era):
    data, payload = _c(era)
    assert reading(data, _reply(data, payload, tree=True)) == _expected(data, era)


def test_a_blob_without_an_import_tree_has_a_null_tree():
    data, payload = _c("0.6")
    got = reading(data, _reply(data, payload, tree=False))
    assert got == _expected(data, "0.6") and got["import_tree"] is None


def test_what_the_observation_cannot_explain_is_an_error_not_a_reading():
    data, payload = _c("0.14")
    reply = _reply(data, payload, tree=True)
    reply["calls"][0]["start"] += 1  # a payload that does not start right after its key
    with pytest.raises(RuntimeError, match="called no loader|not after an entry key"):
        reading(data, reply)
    with pytest.raises(RuntimeError, match="stream is not the MemoryFixedSizeStream"):
        reading(data, {**_reply(data, payload, tree=True), "stream": None})
    with pytest.raises(RuntimeError, match="read past the blob"):
        reading(data[:40], _reply(data, payload, tree=True))
