"""The canonical reading of a legacy module blob (``__tvm_dev_mblob``) from what TVM's own
loader did with it (TVM up to 0.20: ``ProcessModuleBlob`` in src/runtime/library_module.cc),
as the peer worker observes it (:func:`mlf_spec.peers.worker._blob_load`).

What is observed, not re-read:

* the payload of every module: which ``runtime.module.loadbinary_<kind>`` loader was called,
  in call order (= blob order), and the read position of the ``dmlc::MemoryFixedSizeStream``
  it was handed before and after the call: the payload is exactly the bytes that loader
  consumed (size and SHA-256, taken from the memory it read);
* the import tree: each module's ``imported_modules`` as TVM built them (handles mapped back to
  blob indices), in import order.

What is read from the blob: only the entries that call no loader (``_lib`` and
``_import_tree``), from the bytes ``ProcessModuleBlob`` itself consumed between two payloads
(the gap between one loader's end position and the next one's key), and after the last payload
as many entries as the stored count still names. An ``_import_tree`` entry there says that TVM
built the tree from it; without one (blobs of TVM 0.6 and before) TVM wraps every module under
a fresh library module, and the reading's ``import_tree`` is null.

Left out (``may_omit`` in canonical_blob): ``trailing_bytes`` and ``findings`` (the loader
never looks past the last entry), and the parsed payload (``struct``, ``fields``,
``functions``: TVM's loaders build modules from them but expose no field). Limits of
observation: a ``_lib`` module that nothing imports shows no imports of its own (its row is
empty); a row pointer the loader never follows (a child listed twice past the rows, a row that
goes backwards) is reported as the rows TVM built.
"""

from __future__ import annotations

from typing import Any

LIB = "_lib"
TREE = "_import_tree"


class _Body:
    """The blob's body (after the 8-byte size prefix) as the loader's stream numbers it."""

    def __init__(self, data: bytes) -> None:
        self.data = data[8:]
        self.pos = 0

    def u64(self) -> int:
        if self.pos + 8 > len(self.data):
            raise RuntimeError(f"the loader read past the blob (offset {self.pos + 8} of the body)")
        value = int.from_bytes(self.data[self.pos:self.pos + 8], "little")
        self.pos += 8
        return value

    def key(self) -> bytes:
        n = self.u64()
        if self.pos + n > len(self.data):
            raise RuntimeError(f"the loader read past the blob (a {n}-byte key at offset {self.pos} of the body)")
        key = self.data[self.pos:self.pos + n]
        self.pos += n
        return key

    def skip_vector(self) -> None:
        n = self.u64()
        self.pos += 8 * n

    def entry(self) -> str:
        """One entry that calls no loader: _lib, or _import_tree with its two vectors."""
        at = self.pos
        key = self.key()
        if key == TREE.encode():
            self.skip_vector()
            self.skip_vector()
            return TREE
        if key == LIB.encode():
            return LIB
        raise RuntimeError(f"the entry {key[:40]!r} at offset {at} of the body called no loader")


def _lib_entry() -> dict[str, Any]:
    return {"kind": LIB, "bytes": 0, "sha256": None, "handle": None}


def reading(data: bytes, reply: dict[str, Any]) -> dict[str, Any]:
    """The canonical blob reading of the peer's ``blob_load`` reply for ``data``."""
    calls = reply["calls"]
    if calls and not reply.get("stream"):
        raise RuntimeError("the loaders' stream is not the MemoryFixedSizeStream over the blob: "
                           "payload extents cannot be observed")
    body = _Body(data)
    count = body.u64() if len(data) >= 16 else 0
    entries: list[dict[str, Any]] = []
    kinds: list[str] = []  # every entry's kind, _import_tree included

    def other() -> None:
        kinds.append(body.entry())
        if kinds[-1] == LIB:
            entries.append(_lib_entry())

    for call in calls:
        key_at = call["start"] - 8 - len(call["kind"].encode())
        while body.pos < key_at:
            other()
        if body.pos != key_at:
            raise RuntimeError(f"the {call['kind']} payload starts at {call['start']}, not after an entry key")
        entries.append({"kind": call["kind"], "bytes": call["end"] - call["start"], "sha256": call.get("sha256"),
                        "handle": call["handle"]})
        kinds.append(call["kind"])
        body.pos = call["end"]
    while len(kinds) < count:
        other()
    tree = TREE in kinds
    modules = {m["handle"]: m for m in reply["modules"]}
    loaded = {e["handle"] for e in entries if e["handle"] is not None}
    libs = [e for e in entries if e["kind"] == LIB]
    if libs:
        if entries[0]["kind"] == LIB and tree:
            libs[0]["handle"] = reply["root"]  # TVM's root is module 0 when the blob has a tree
        else:  # the library module TVM made for the _lib entry: the one library module no loader returned
            made = [h for h, m in modules.items() if m["type_key"] == "library" and h not in loaded
                    and (tree or h != reply["root"])]
            if len(made) == 1:
                libs[0]["handle"] = made[0]
    index = {e["handle"]: i for i, e in enumerate(entries) if e["handle"] is not None}
    out_modules = [{"index": i, "kind": e["kind"], "payload_bytes": e["bytes"], "payload_sha256": e["sha256"]}
                   for i, e in enumerate(entries)]
    import_tree = None
    if tree:
        row_ptr, children = [0], []
        for e in entries:
            for child in modules.get(e["handle"], {}).get("imports", []):
                if child not in index:
                    raise RuntimeError("a module imports one that is no entry of the blob")
                children.append(index[child])
            row_ptr.append(len(children))
        import_tree = {"row_ptr": row_ptr, "child_indices": children}
    return {"format": "blob", "layout": "legacy", "modules": out_modules, "import_tree": import_tree}


__all__ = ["reading"]
