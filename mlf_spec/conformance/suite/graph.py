"""GraphExecutor JSON boundary vectors: every rule of ``spec/records/graph_json.yaml`` on both
sides. The generic aspects of each field (type, required, const, pattern, element counts,
unknown keys) come from :mod:`.records`; the rules the spec declares on a field (``rules:``:
``node_row_ptr`` sized len(nodes) + 1, starting at 0 and stepping by each node's outputs,
``arg_nodes`` listing the null nodes, ``heads`` and node inputs referring to outputs of
(earlier) nodes, ``num_inputs`` equal to the inputs, one attribute value per entry,
storage ids and extents not negative) get their variants here, one function per rule; the
JSON text itself (UTF-8, surrogate escapes, duplicate keys, a byte order mark, non-JSON
constants) has the ``graph.text.*`` rules. The base graph has every optional key (input
attributes, ``control_deps``, ``storage_scope``) and a node with two outputs, so that every
rule is met at its exact value; integers that a 32-bit reader would wrap back to a valid
value (2^32 + k) are among the refused ones.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

from mlf_spec.generated import graph_json_models as _gm
from mlf_spec.graph import codec as _graph

from . import records as _rec
from .common import Collector, doc_ref, outcome, unique

TVM = "0.8 to 0.20 (relay GraphExecutorCodegen)"
Doc = dict[str, Any]
#: the rules of the JSON text (not of a field), with what each states
TEXT_RULES = {
    "graph.text.utf8": "the text is UTF-8 (any scalar value; invalid, overlong and surrogate encodings refused)",
    "graph.text.surrogate": "a \\u escape of a surrogate is one half of a pair (a lone or reversed half refused)",
    "graph.text.duplicate-key": "no object has the same key twice (the same key in sibling objects is fine)",
    "graph.text.bom": "no byte order mark before the text",
    "graph.text.constant": "numbers are JSON numbers (NaN, Infinity refused)",
}


def base() -> Doc:
    """The graph every boundary variant starts from: inputs a and p0, a
    fused op with two outputs, an op using its second output (with ``control_deps``), two
    heads; five entries with device_index and storage_scope."""
    entries = 5
    return {
        "nodes": [{"op": "null", "name": "a", "inputs": []},
                  {"op": "null", "name": "p0", "inputs": []},
                  {"op": "tvm_op", "name": "tvmgen_default_fused_split",
                   "attrs": {"num_outputs": "2", "num_inputs": "2", "flatten_data": "0",
                             "func_name": "tvmgen_default_fused_split"}, "inputs": [[0, 0, 0], [1, 0, 0]]},
                  {"op": "tvm_op", "name": "tvmgen_default_fused_add",
                   "attrs": {"num_outputs": "1", "num_inputs": "2", "flatten_data": "0",
                             "func_name": "tvmgen_default_fused_add"}, "inputs": [[2, 1, 0], [0, 0, 0]],
                   "control_deps": []}],
        "arg_nodes": [0, 1],
        "heads": [[3, 0, 0], [2, 0, 0]],
        "attrs": {"dltype": ["list_str", ["float32"] * entries],
                  "device_index": ["list_int", [1] * entries],
                  "storage_id": ["list_int", list(range(entries))],
                  "shape": ["list_shape", [[1, 4], [4], [1, 2], [1, 2], [1, 2]]],
                  "storage_scope": ["list_str", ["global", "global", "global", "global.texture", "global"]]},
        "node_row_ptr": [0, 1, 2, 4, 5],
    }


def empty() -> Doc:
    """A graph without nodes (node_row_ptr [0], every list empty)."""
    return {"nodes": [], "arg_nodes": [], "heads": [], "node_row_ptr": [0],
            "attrs": {"dltype": ["list_str", []], "storage_id": ["list_int", []], "shape": ["list_shape", []]}}


def _with(doc: Doc, edit: Callable[[Doc], None]) -> Doc:
    out = copy.deepcopy(doc)
    edit(out)
    return out


def _set(path: tuple[Any, ...], value: Any) -> Callable[[Doc], None]:
    def edit(d: Doc) -> None:
        _rec.get(d, path[:-1])[path[-1]] = value
    return edit


def _entries(n: int) -> Callable[[Doc], None]:
    """Every per-entry attribute resized to ``n`` values (repeating the last)."""
    def edit(d: Doc) -> None:
        for attr in d["attrs"].values():
            attr[1] = (attr[1] + [attr[1][-1]] * n)[:n]
    return edit


def _both(*edits: Callable[[Doc], None]) -> Callable[[Doc], None]:
    def edit(d: Doc) -> None:
        for e in edits:
            e(d)
    return edit


U32 = 1 << 32


def _declared(b: Doc) -> dict[str, list[tuple[str, Doc]]]:
    """Rule id -> (label, document) variants of each rule the spec declares on a field."""
    rp = b["node_row_ptr"]
    out: dict[str, list[tuple[str, Doc]]] = {
        "graph.node_row_ptr.size": [
            ("one-more", _with(b, _set(("node_row_ptr",), rp + [6]))),
            ("one-fewer", _with(b, _set(("node_row_ptr",), rp[:-1]))),
            ("two-more", _with(b, _set(("node_row_ptr",), rp + [6, 7]))),
            ("four-more", _with(b, _set(("node_row_ptr",), rp + [6, 7, 8, 9]))),
            ("empty", _with(b, _set(("node_row_ptr",), []))),
            ("no-nodes", empty()),
        ],
        "graph.node_row_ptr.start": [
            ("from-1", _with(b, _set(("node_row_ptr",), [x + 1 for x in rp]))),
            ("from-2-32", _with(b, _set(("node_row_ptr",), [x + U32 for x in rp]))),
            ("from-minus-1", _with(b, _set(("node_row_ptr",), [x - 1 for x in rp]))),
        ],
        "graph.node_row_ptr.step": [
            ("two-output-node-steps-by-1", _with(b, _set(("node_row_ptr",), [0, 1, 2, 3, 5]))),
            ("null-node-steps-by-0", _with(b, _set(("node_row_ptr",), [0, 1, 1, 3, 5]))),
            ("decreasing", _with(b, _set(("node_row_ptr",), [0, 1, 4, 2, 5]))),
            ("step-2-32-plus-2", _with(b, _set(("node_row_ptr",), [0, 1, 2, 2 + U32 + 2, 2 + U32 + 3]))),
            ("num_outputs-1-for-2", _with(b, _set(("nodes", 2, "attrs", "num_outputs"), "1"))),
            ("three-outputs", _with(b, _both(_set(("nodes", 2, "attrs", "num_outputs"), "3"),
                                             _set(("node_row_ptr",), [0, 1, 2, 5, 6]), _entries(6)))),
        ],
        "graph.arg_nodes.null-nodes": [
            (label, _with(b, _set(("arg_nodes",), v))) for label, v in (
                ("missing-one", [0]), ("reversed", [1, 0]), ("with-an-op-node", [0, 1, 2]), ("repeated", [0, 0, 1]),
                ("past-the-nodes", [0, 4]), ("minus-1", [0, -1]), ("2-32-plus-1", [0, U32 + 1]),
                ("2-64-minus-1", [0, 1, (1 << 64) - 1]), ("empty", []))
        ] + [("no-nodes", empty())],
        "graph.heads.refers": [
            (label, _with(b, _set(("heads", 0), v))) for label, v in (
                ("node-past-the-end", [4, 0, 0]), ("node-minus-1", [-1, 0, 0]), ("node-2-32-plus-3", [U32 + 3, 0, 0]),
                ("index-past-the-outputs", [3, 1, 0]), ("index-2-of-2-outputs", [2, 2, 0]),
                ("index-2-32", [3, U32, 0]), ("a-null-node", [0, 0, 0]), ("last-output", [2, 1, 0]))
        ] + [("no-heads", _with(b, _set(("heads",), [])))],
        "op_node.inputs.refers": [
            (label, _with(b, _set(("nodes", 3, "inputs", 0), v))) for label, v in (
                ("itself", [3, 0, 0]), ("a-later-node", [4, 0, 0]), ("index-past-the-outputs", [2, 2, 0]),
                ("node-minus-1", [-1, 0, 0]), ("node-2-32-plus-2", [U32 + 2, 1, 0]), ("first-node", [0, 0, 0]),
                ("first-output", [2, 0, 0]))
        ],
        "op_attrs.num_inputs.equals": [
            (label, _with(b, _set(("nodes", 2, "attrs", "num_inputs"), v))) for label, v in (
                ("one-more", "3"), ("one-fewer", "1"), ("zero", "0"), ("2-32-plus-2", str(U32 + 2)),
                ("2-64-plus-2", str((1 << 64) + 2)))
        ] + [("no-inputs", _with(b, _both(_set(("nodes", 2, "attrs", "num_inputs"), "0"),
                                          _set(("nodes", 2, "inputs"), []))))],
    }
    out.update(_declared_attrs(b))
    for key in ("dltype", "storage_id", "shape", "device_index", "storage_scope"):
        values = b["attrs"][key][1]
        out[f"graph_attrs.{key}.entries"] = [
            ("one-more", _with(b, _set(("attrs", key, 1), values + values[-1:]))),
            ("one-fewer", _with(b, _set(("attrs", key, 1), values[:-1]))),
            ("twice", _with(b, _set(("attrs", key, 1), values * 2))),
            ("none", _with(b, _set(("attrs", key, 1), []))),
        ]
    out["graph_attrs.dltype.entries"].append(("no-nodes", empty()))
    return out


def _declared_attrs(b: Doc) -> dict[str, list[tuple[str, Doc]]]:
    """The variants of the integer rules of the attrs and of control_deps (:func:`_declared`)."""
    return {
        "graph_attrs.storage_id.nonnegative": [
            (f"{v:#x}", _with(b, _set(("attrs", "storage_id", 1, 4), v))) for v in (-1, -(1 << 31), -(1 << 63), 0)
        ],
        "graph_attrs.storage_id.int32": [
            (f"{v:#x}", _with(b, _set(("attrs", "storage_id", 1, 4), v)))
            for v in ((1 << 31) - 1, 1 << 31, U32, U32 + 4, (1 << 63) - 1, 1 << 64)
        ],
        "graph_attrs.device_index.int32": [
            (f"{v:#x}", _with(b, _set(("attrs", "device_index", 1, 4), v)))
            for v in ((1 << 31) - 1, -(1 << 31), 1 << 31, -(1 << 31) - 1, U32 + 1)
        ],
        "graph_attrs.shape.int64": [
            (label, _with(b, _set(("attrs", "shape", 1, 4), v))) for label, v in (
                ("2-63-minus-1", [(1 << 63) - 1]), ("2-63", [1 << 63]), ("2-64-plus-4", [(1 << 64) + 4]),
                ("zero-beside-2-63", [0, 1 << 63]))
        ],
        "op_node.control_deps.uint32": [
            (f"{v:#x}", _with(b, _set(("nodes", 3, "control_deps"), [v]))) for v in (U32 - 1, U32, U32 + 2, 1 << 64)
        ],
        "graph_attrs.shape.nonnegative": [
            (label, _with(b, _set(("attrs", "shape", 1, 4), v))) for label, v in (
                ("minus-1", [1, -1]), ("minus-2-63", [-(1 << 63)]), ("zero", [0, 2]), ("scalar", []),
                ("zero-beside-max", [0, (1 << 63) - 1]), ("2-32", [U32]))
        ],
    }


def _text(doc: Doc) -> bytes:
    return _graph.dumps(doc).encode("utf-8")


def _text_variants(b: Doc) -> Iterator[tuple[str, str, bytes]]:
    """(rule id, label, bytes) of the JSON text rules."""
    text = _text(b)
    name = b'"name": "a"'

    def named(raw: bytes) -> bytes:
        return text.replace(name, b'"name": "' + raw + b'"', 1)

    for label, raw in (("two-byte", "\u00e9".encode()), ("three-byte", "\u65e5".encode()),
                       ("four-byte", "\U0001f600".encode()), ("escaped", b"\\u00e9"), ("nul-escaped", b"a\\u0000"),
                       ("invalid-byte", b"\xff"), ("overlong", b"\xc0\xaf"), ("encoded-surrogate", b"\xed\xa0\x80"),
                       ("cut-sequence", b"\xe6\x97"), ("five-byte-form", b"\xf8\x88\x80\x80\x80"),
                       ("past-u10ffff", b"\xf4\x90\x80\x80")):
        yield "graph.text.utf8", label, named(raw)
    for label, raw in (("pair", b"\\ud83d\\ude00"), ("lone-high", b"\\ud800"), ("lone-low", b"\\udc00"),
                       ("reversed", b"\\udc00\\ud800"), ("high-then-letter", b"\\ud83dx")):
        yield "graph.text.surrogate", label, named(raw)
    yield "graph.text.duplicate-key", "siblings", text  # "op", "name" in every node
    yield "graph.text.duplicate-key", "top-level", text.replace(b'{\n  "nodes"', b'{\n  "heads": [], \n  "nodes"', 1)
    yield "graph.text.duplicate-key", "in-a-node", named(b'a", "name": "a')
    yield "graph.text.bom", "none", text
    yield "graph.text.bom", "utf8-bom", b"\xef\xbb\xbf" + text
    yield "graph.text.constant", "integers", text
    yield "graph.text.constant", "nan-extent", text.replace(b"[\n        1, \n        4\n      ]", b"[NaN]", 1) \
        if b"[\n        1, \n        4\n      ]" in text else text.replace(b"[1, 4]", b"[NaN]", 1)
    yield "graph.text.constant", "infinity-storage-id", text.replace(b'"list_int", \n      [0, 1, 2, 3, 4]',
                                                                      b'"list_int", \n      [0, 1, 2, 3, Infinity]', 1)


def _reached(doc: Doc) -> set[str]:
    """The rule ids of the records, fields and aliases that occur in ``doc``."""
    out = set()
    for _path, kind, name, value in _rec.occurrences(doc, _gm.ROOT_RECORD, _gm.RECORDS):
        if kind == "alias":
            out.add(f"{name}.items")
            continue
        rec = _gm.RECORDS[name]
        out |= {f"{name}.unknown"} if rec["extra"] == "forbid" else set()
        out |= {f"{name}.{f['name']}.{a}" for f in rec["fields"] if f["name"] in value for a in _rec.field_aspects(f)}
    return out


def rule_ids() -> list[str]:
    """Every rule of the GraphExecutor JSON the vectors must probe on both sides."""
    return sorted(_rec.record_rules("", _gm.RECORDS, _gm.ALIASES)) + sorted(TEXT_RULES)


def _page(rid: str) -> str:
    record = rid.split(".")[0]
    return doc_ref("graph_json", f"`{record}`" if record in _gm.RECORDS else "Types" if record in _gm.ALIASES
                   else "`graph`")


def build_graph(c: Collector) -> None:
    """Add the boundary vectors of every rule of the GraphExecutor JSON to ``c``."""
    b = base()
    seen: set[bytes] = set()

    def probe(vid: str, data: bytes, rids: list[str], what: str) -> None:
        if data in seen:
            return
        seen.add(data)
        want = outcome("graph-json", "decode", data, {})["outcome"]
        vid = unique(c, f"graph-json.bound.{vid}")
        c.add(vid, "graph-json", data, scope={}, tvm=TVM, features={"rule": rids},
              description=f"{what}: " + ("accepted" if want == "accept" else "must be rejected"),
              spec_ref=_page(rids[0]), expect=want)

    reached: set[str] = set()
    # the base, then the base with an input node's attributes (which peers may not show) for their rules only
    with_attrs = _with(b, _set(("nodes", 0, "attrs"), {"layout": "NC"}))
    for doc, what in ((b, "the base graph, every rule at its exact value"),
                      (with_attrs, "the base graph with attributes on input a")):
        here = _reached(doc) - reached
        probe("whole" if doc is b else "whole.input-attrs", _text(doc),
              sorted(here | (set(TEXT_RULES) if doc is b else set())), what)
        for rids, label, d in _rec.variants(doc, _gm.ROOT_RECORD, _gm.RECORDS, "", aliases=_gm.ALIASES,
                                            skip=reached):
            probe(f"{rids[0]}.{label}", _text(d), rids, f"{rids[0]} probed at {label}")
        reached |= here
    for rid, items in _declared(b).items():
        for label, doc in items:
            probe(f"{rid}.{label}", _text(doc), [rid], f"{rid} probed ({label})")
    for rid, label, data in _text_variants(b):
        probe(f"{rid}.{label}", data, [rid], f"{rid} probed ({label})")


__all__ = ["TEXT_RULES", "base", "build_graph", "empty", "rule_ids"]
