""".params vectors: every dtype row of every dialect of the dtype table, the shapes, names and
untouched fields the format allows, encode requests, and every broken kind the spec names
(``PARAMS_BROKEN_KINDS``) applied to the spec's own example."""

from __future__ import annotations

import copy
from typing import Any

from mlf_spec._internal.spec_engine import Builder, build, trace
from mlf_spec._internal.spec_strategies import INT_RANGE, find_field, value_at
from mlf_spec.generated import dtype_codes_table as _table
from mlf_spec.generated import params_ir as _ir
from mlf_spec.generated import params_strategies as _st
from mlf_spec.params import dtypes as _dt

from .. import canonical
from . import rules as _rules
from .common import Collector, doc_ref, holding, outcome, pattern_bytes

_STRUCTS = _ir.STRUCTS
_ROOT = "params_file"
LATEST = _dt.LATEST
#: widths tried for a row that takes any width, by family (a row with `bits` has only that one)
_SUB_BYTE = {"int": [4, 1], "uint": [4]}
_OTHER_WIDTHS = {"handle": [64], "custom": [16], "bool": [1]}


def _record(dtype: tuple[int, int, int], shape: list[int], data: bytes | None = None, *, salt: int = 0,
            device_id: int = 0, reserved: int = 0) -> dict[str, Any]:
    code, bits, lanes = dtype
    numel = 1
    for s in shape:
        numel *= s
    n = numel * -(-bits // 8)
    return {"reserved": reserved, "device": {"device_type": 1, "device_id": device_id},
            "dtype": {"code": code, "bits": bits, "lanes": lanes}, "shape": list(shape),
            "data": pattern_bytes(n, salt) if data is None else data}


def _file(names: list[Any], records: list[dict[str, Any]], reserved: int = 0, trailing: bytes = b"") -> bytes:
    return build(_STRUCTS, _ROOT, {"reserved": reserved, "names": names, "arrays": records}) + trailing


def _example_tree() -> dict[str, Any]:
    ex = next(e for e in _ir.EXAMPLES if e["struct"] == _ROOT)
    tree = copy.deepcopy(ex["value"])
    for r in tree["arrays"]:
        r["data"] = bytes.fromhex(r["data"].replace(" ", ""))
    return tree


def _dtypes_of(d: _dt.Dialect) -> list[tuple[dict[str, Any], int, int]]:
    """(row, code, bits) of every dtype family the dialect defines, each width the kit tries."""
    out = []
    seen = set()
    for i in d.rows:
        row = _table.ROWS[i]
        if row["bits"] is not None:
            widths = [row["bits"]]
        else:
            widths = list(row["numpy_bits"] or []) + _SUB_BYTE.get(row["kind"], []) + _OTHER_WIDTHS.get(row["kind"], [])
        for bits in widths:
            dt = _dt.lookup(d, row["code"], bits, 1)
            if (row["code"], bits) in seen or not dt.known or _dt._find_row(d, row["code"], bits) is not row:
                continue
            seen.add((row["code"], bits))
            out.append((row, row["code"], bits))
    return out


#: every dialect id, newest first: the order in which a vector's scope lists the others
_NEWEST_FIRST = [x.id for x in reversed(_dt.DIALECTS)]


def _dialects(data: bytes, d: _dt.Dialect, role: str = "decode", reading: dict[str, Any] | None = None) -> list[str]:
    """The dialects in which the case's expected outcome holds (``d`` first): computed by
    reading the input in each dialect of the dtype table."""
    return holding("params", role, data, {"dialect": d.id}, reading, "dialect", _NEWEST_FIRST)


def _add_decode(c: Collector, vid: str, data: bytes, d: _dt.Dialect, description: str, heading: tuple[str, str],
                features: dict[str, list[str]], broken_kind: str | None = None, expect: str | None = None) -> None:
    c.add(vid, "params", data, options={"dialect": d.id}, scope={"dialect": _dialects(data, d)}, tvm=d.label,
          features={"dialect": [d.id], **features}, description=description, spec_ref=doc_ref(*heading),
          broken_kind=broken_kind, expect=expect)


def _add_probe(c: Collector, vid: str, data: bytes, d: _dt.Dialect, description: str, rules: list[str],
               features: dict[str, list[str]] | None = None, page: tuple[str, str | None] = ("tensor", "What a reader checks")) -> None:
    """A boundary vector: its expected side is mlf-spec's outcome; it names the rules it probes."""
    want = outcome("params", "decode", data, {"dialect": d.id})["outcome"]
    side = "accepted" if want == "accept" else "must be rejected"
    _add_decode(c, vid, data, d, f"{description}: {side}", page, {"rule": rules, **(features or {})},
                broken_kind=None, expect=want)


def _add_encode(c: Collector, vid: str, data: bytes, d: _dt.Dialect, description: str,
                features: dict[str, list[str]]) -> None:
    reading = canonical.decode_params(data, {"dialect": d.id}, with_data=True)
    c.add(vid, "params", b"", role="encode", reading=reading, options={"dialect": d.id},
          scope={"dialect": _dialects(b"", d, "encode", reading)},
          tvm=d.label, features={"dialect": [d.id], **features}, description=description,
          spec_ref=doc_ref("params", "`params_file`"))


def build_params(c: Collector) -> None:
    """Add every .params vector to ``c``."""
    _dtype_vectors(c)
    _shape_and_field_vectors(c)
    _broken_vectors(c)
    _boundary_vectors(c)


def _dtype_vectors(c: Collector) -> None:
    for d in _dt.DIALECTS:
        for row, code, bits in _dtypes_of(d):
            name = _dt.lookup(d, code, bits, 1).name
            data = _file(["t"], [_record((code, bits, 1), [2, 3], salt=code + bits)])
            feats = {"dtype": [name], "dtype_kind": [row["kind"]]}
            _add_decode(c, f"params.dtype.{d.id}.{name}.{code}-{bits}", data, d,
                        f"one {name} tensor (code {code}, bits {bits}) [2, 3] read in dialect {d.id}",
                        ("dtype_codes", None), {**feats, "rule": [_TABLE_RULE]})
            if d is LATEST:
                _add_encode(c, f"params.encode.dtype.{name}.{code}-{bits}", data, d,
                            f"write one {name} tensor [2, 3] as TVM {d.label[4:]} does", feats)


def _shape_and_field_vectors(c: Collector) -> None:
    d = LATEST
    f32 = (2, 32, 1)
    tensor = ("tensor", "`tensor_record`")
    params = ("params", "`params_file`")
    ex = _example_tree()
    cases: list[tuple[str, bytes, str, tuple[str, str], dict[str, list[str]], bool]] = [
        ("w-and-b", build(_STRUCTS, _ROOT, ex), "the spec's example: float32 [2, 3] and int64 [3]", params,
         {"dtype": ["float32", "int64"]}, True),
        ("empty", _file([], []), "no tensors: the 32-byte file of an empty dict", params, {"shape": ["none"]}, True),
        ("0-d", _file(["s"], [_record(f32, [])]), "a 0-d tensor: ndim 0, no extents, one element", tensor,
         {"shape": ["0-d"]}, True),
        ("zero-size-0x4", _file(["z"], [_record(f32, [0, 4])]), "an empty tensor [0, 4]: no data bytes", tensor,
         {"shape": ["zero-size"]}, True),
        ("zero-size-3x0", _file(["z"], [_record(f32, [3, 0])]),
         "an empty tensor [3, 0] (first extent non-zero): no data bytes", tensor, {"shape": ["zero-size"]}, True),
        ("ndim-64", _file(["n"], [_record(f32, [1] * 64)]), "64 dimensions of extent 1, the bound mlf-spec states",
         tensor, {"shape": ["ndim-64"]}, True),
        ("rank-6", _file(["r"], [_record(f32, [1, 2, 1, 3, 1, 2])]), "a rank-6 tensor", tensor, {"shape": ["rank-6"]},
         True),
        ("name-empty", _file([""], [_record(f32, [2])]), "a tensor whose name is the empty string", params,
         {"name": ["empty"]}, True),
        ("name-non-ascii", _file(["wörter-名前-\U0001f642"], [_record(f32, [2])]),
         "a tensor whose name has non-ASCII UTF-8 (Latin, CJK and an emoji)", params, {"name": ["non-ascii"]}, True),
        ("name-not-utf8", _file([b"w\xff\xfe"], [_record(f32, [2])]),
         "a tensor whose name bytes are not UTF-8 (names are never validated)", params, {"name": ["not-utf8"]}, False),
        ("name-long", _file(["n" * 300], [_record(f32, [2])]), "a 300-character name", params, {"name": ["long"]},
         True),
        ("duplicate-names", _file(["w", "w"], [_record(f32, [2], salt=1), _record(f32, [3], salt=2)]),
         "two records named w (TVM's loader keeps the later one; both are in the file)", params,
         {"name": ["duplicate"]}, False),
        ("trailing-bytes", _file(["w"], [_record(f32, [2])], trailing=b"\x00tail"),
         "5 bytes after the last record (ignored by TVM)", params, {"field": ["trailing"]}, False),
        ("reserved-nonzero", _file(["w"], [_record(f32, [2])], reserved=0x1122334455667788),
         "the file's reserved word is not 0 (never checked)", params, {"field": ["reserved"]}, False),
        ("record-reserved-nonzero", _file(["w"], [_record(f32, [2], reserved=7)]),
         "a record's reserved word is 7 (never checked)", tensor, {"field": ["reserved"]}, False),
        ("device-id-3", _file(["w"], [_record(f32, [2], device_id=3)]),
         "a record's device_id is 3 (written 0, never checked)", tensor, {"field": ["device_id"]}, False),
        ("device-id-high", _file(["w"], [_record(f32, [2], device_id=0x10003)]),
         "a record's device_id is 0x10003 (high bytes set: a 16-bit read sees 3)", tensor, {"field": ["device_id"]},
         False),
        ("record-reserved-high", _file(["w"], [_record(f32, [2], reserved=0x100000007)]),
         "a record's reserved word is 2^32 + 7 (a 32-bit read sees 7)", tensor, {"field": ["reserved"]}, False),
        ("lanes-float32x4", _file(["v"], [_record((2, 32, 4), [2])]),
         "float32x4 [2]: only numel x 4 bytes are stored, lanes are ignored", tensor, {"dtype": ["float32x4"]}, True),
        ("lanes-int8x2", _file(["v"], [_record((0, 8, 2), [3])]), "int8x2 [3]", tensor, {"dtype": ["int8x2"]}, True),
        ("lanes-handle-x4", _file(["h"], [_record((3, 64, 4), [2])]),
         "a handle with 4 lanes: TVM spells it handle (no lanes)", tensor, {"dtype": ["handle"]}, False),
        ("subbyte-int4-x25", _file(["q"], [_record((0, 4, 1), [25])]),
         "int4 [25]: 25 stored bytes, more than the packed allocation TVM 0.21+ makes", tensor,
         {"dtype": ["int4"], "shape": ["sub-byte-large"]}, True),
        ("subbyte-uint1-x200", _file(["m"], [_record((1, 1, 1), [200])]), "uint1 [200]: one byte per element",
         tensor, {"dtype": ["uint1"], "shape": ["sub-byte-large"]}, True),
        ("subbyte-float4-x4096", _file(["f"], [_record((17, 4, 1), [4096])]), "float4_e2m1fn [4096]", tensor,
         {"dtype": ["float4_e2m1fn"], "shape": ["sub-byte-large"]}, True),
        ("many-tensors", _file([f"p{i}" for i in range(40)], [_record(f32, [4], salt=i) for i in range(40)]),
         "40 tensors of the same type", params, {"shape": ["many"]}, True),
    ]
    for name, data, description, heading, feats, writable in cases:
        _add_decode(c, f"params.valid.{name}", data, d, description, heading, feats)
        if writable:
            _add_encode(c, f"params.encode.{name}", data, d, f"write {description}", feats)


def _occurrences(tree: dict[str, Any], struct: str) -> list[tuple]:
    probe = Builder(_STRUCTS)
    probe.build(_ROOT, tree)
    return [path for s, path in probe.occurrences if s == struct]


def broken_variants(kind: str, tree: dict[str, Any], era: tuple[int, ...] = LATEST.since) -> list[tuple[str, bytes]]:
    """(label, bytes) of ``tree`` broken in the named way, each value chosen, not drawn: the
    deterministic counterpart of ``mlf_spec.strategies.broken_params_bytes``."""
    good = build(_STRUCTS, _ROOT, tree)
    if kind == "truncated":  # nothing, inside the reserved word, the count, the first record, the last data byte
        _, spans = trace(_STRUCTS, _ROOT, good)
        at = {s.path: s.offset for s in spans}
        cuts = (0, at[("reserved",)] + 4, at[("count",)] + 4, at[("arrays", 0, "shape", 0)] + 4, len(good) - 1)
        return [(f"at-{n}", good[:n]) for n in cuts]
    what, where = kind.split(":", 1)
    struct_name, f = find_field(_STRUCTS, where)
    places = _occurrences(tree, struct_name)
    if not places:
        return []
    path = places[0] + (f["name"],)
    out: list[tuple[str, dict]] = []
    if what == "bad_const":
        out.append(("flipped", {path: f["const"] ^ 1}))
    elif what in ("count_mismatch", "bad_derived"):
        current = value_at(_STRUCTS, _ROOT, tree, era, path)
        out += [("plus-1", {path: current + 1}), ("minus-1", {path: current - 1})] if current else \
            [("plus-1", {path: current + 1})]
    elif what == "lying_length":
        out.append(("2-62", {path + ("#count",): 2**62}))
    elif what == "constraint":
        if f["kind"] == "struct":
            member, (lo, hi) = next(iter(f["member_bounds"].items()))
            target = path + (member,)
            out += [(f"{member}-{v}", {target: v}) for v in sorted({lo - 1, hi + 1})]
        elif "count" in f:  # an element constraint: break the first element
            lo, _hi = f.get("bounds", (None, None))
            out.append(("element-negative", {path + (0,): (lo if lo is not None else 0) - 1}))
        else:
            lo, hi = f.get("bounds", (None, None))
            type_lo, type_hi = INT_RANGE[f["type"]]
            if lo is not None and lo > type_lo:
                out.append((f"below-{lo}", {path: lo - 1}))
            if hi is not None and hi < type_hi:
                out.append((f"above-{hi}", {path: hi + 1}))
    elif what == "unknown_code":
        known: set[int] = set()
        for r in _table.ROWS:
            known.update(range(r["code"], (r["code_max"] if r["code_max"] is not None else r["code"]) + 1))
        out.append((f"code-{min(set(range(256)) - known)}", {path: min(set(range(256)) - known)}))
    return [(label, build(_STRUCTS, _ROOT, tree, era, overrides)) for label, overrides in out]


def _broken_vectors(c: Collector) -> None:
    d = LATEST
    base = _example_tree()
    for kind in _st.BROKEN_KINDS:
        variants = broken_variants(kind, base)
        if not variants:
            raise AssertionError(f"no .params vector for the broken kind {kind!r}")
        where = kind.split(":", 1)[1].split(".")[0] if ":" in kind else "params_file"
        page = "params" if where == "params_file" else "tensor"
        for label, data in variants:
            _add_decode(c, f"params.broken.{kind}.{label}", data, d, f"broken ({kind}, {label}): must be rejected",
                        (page, "What a reader checks"), {"broken_kind": [kind]}, broken_kind=kind)
    # a code the newest TVM defines but an older dialect does not: unknown in that dialect
    old = _dt.dialect("0.7")
    data = _file(["t"], [_record((6, 8, 1), [3])])
    _add_decode(c, "params.broken.unknown_code.in-dialect-v0.7", data, old,
                "code 6 (bool or float8 in later TVM) read in dialect v0.7, where it is not defined",
                ("dtype_codes", None), {"broken_kind": ["unknown_code:dl_datatype.code"]},
                broken_kind="unknown_code:dl_datatype.code")


_TABLE_RULE = _rules.rule_id("dl_datatype", "code", "table")
_NDIM = _rules.rule_id("tensor_record", "ndim", "range")
_SHAPE = _rules.rule_id("tensor_record", "shape", "each")
_DBS = _rules.rule_id("tensor_record", "data_byte_size", "derive")
_DEVICE = _rules.rule_id("tensor_record", "device", "range")


def _tensor_file(dtype: tuple[int, int, int], shape: list[int], *, ndim: int | None = None, dbs: int | None = None,
                 data: bytes = b"", device_type: int = 1, name: Any = "t") -> bytes:
    """One record with exactly these field values (written in their widths, two's complement),
    the rest of the file consistent: the shape entries are the list, the data the bytes."""
    rec = {"reserved": 0, "device": {"device_type": 1, "device_id": 0},
           "dtype": {"code": dtype[0], "bits": dtype[1], "lanes": dtype[2]}, "shape": [0] * len(shape),
           "data_byte_size": 0, "data": data}
    at = ("arrays", 0)
    over: dict[tuple, Any] = {at + ("shape", i): _rules.raw("i64", v) for i, v in enumerate(shape)}
    over[at + ("data_byte_size",)] = _rules.raw("i64", len(data) if dbs is None else dbs)
    if ndim is not None:
        over[at + ("ndim",)] = _rules.raw("i32", ndim)
    over[at + ("device", "device_type")] = _rules.raw("i32", device_type)
    return build(_STRUCTS, _ROOT, {"reserved": 0, "names": [name], "arrays": [rec]}, LATEST.since, over)


#: (label, dtype, shape, data_byte_size or None for the data's length, data bytes, ndim override, rules, what)
_F32, _I8, _I4 = (2, 32, 1), (0, 8, 1), (0, 4, 1)
_P62, _P63 = 1 << 62, (1 << 63) - 1
_BOUNDARY: list[tuple[str, tuple[int, int, int], list[int], int | None, bytes, int | None, list[str], str]] = [
    ("ndim-0", _F32, [], None, pattern_bytes(4), None, [_NDIM], "ndim 0 (the lower bound): one element"),
    ("ndim-1", _F32, [3], None, pattern_bytes(12), None, [_NDIM], "ndim 1"),
    ("ndim-64", _F32, [1] * 64, None, pattern_bytes(4), None, [_NDIM], "ndim 64 (the upper bound), extents 1"),
    ("ndim-65", _F32, [1] * 65, None, pattern_bytes(4), None, [_NDIM], "ndim 65 (the upper bound + 1), extents 1"),
    ("ndim-minus-1", _F32, [], None, pattern_bytes(4), -1, [_NDIM], "ndim -1 with no extents and 4 data bytes"),
    ("ndim-sign-bit", _F32, [], None, pattern_bytes(4), -(1 << 31), [_NDIM], "ndim -2^31 (the sign bit)"),
    ("ndim-high-byte", _F32, [4], None, pattern_bytes(16), 0x01000001, [_NDIM],
     "ndim 0x01000001: one extent follows; a reader of the low byte only sees ndim 1"),
    ("ndim-0x101", _F32, [4], None, pattern_bytes(16), 0x101, [_NDIM],
     "ndim 257: one extent follows; a reader of an 8-bit ndim sees 1"),
    ("shape-zero", _F32, [0], None, b"", None, [_SHAPE], "an extent of 0 (the lower bound): no data"),
    ("shape-minus-1", _F32, [-1], 4, pattern_bytes(4), None, [_SHAPE], "extent -1 with 4 data bytes"),
    ("shape-two-negatives", _F32, [-1, -1], 4, pattern_bytes(4), None, [_SHAPE],
     "extents [-1, -1]: a positive product (1 element) from two extents one below the bound"),
    ("shape-zero-and-negative", _F32, [0, -1], 0, b"", None, [_SHAPE], "extents [0, -1]: product 0, one extent -1"),
    ("shape-negative-and-zero", _F32, [-1, 0], 0, b"", None, [_SHAPE],
     "extents [-1, 0]: an extent -1, then 0 (product 0: only the extent check refuses it)"),
    ("shape-sign-bit", _I8, [-(1 << 63)], 0, b"", None, [_SHAPE], "extent -2^63 (the sign bit) with 0 data bytes"),
    ("shape-zero-beside-max", _I8, [0, _P63], 0, b"", None, [_SHAPE, _DBS],
     "extents [0, 2^63 - 1]: no element beside the largest extent"),
    ("shape-max-beside-zero", _I8, [_P63, 0], 0, b"", None, [_SHAPE, _DBS],
     "extents [2^63 - 1, 0]: the largest extent first, then 0"),
    ("shape-overflow-then-zero", _I8, [1 << 32, 1 << 32, 0], 0, b"", None, [_SHAPE, _DBS],
     "extents [2^32, 2^32, 0]: the partial product overflows 64 bits, the element count is 0"),
    ("numel-wraps-to-0", _F32, [1 << 32, 1 << 32], 0, b"", None, [_DBS],
     "extents [2^32, 2^32] (2^64 elements, 0 in 64 bits) with data_byte_size 0"),
    ("numel-wraps-to-0-int8", _I8, [1 << 32, 1 << 32], 0, b"", None, [_DBS],
     "int8 extents [2^32, 2^32] with data_byte_size 0"),
    ("numel-wraps-to-4", _I8, [_P62 + 1, 4], 4, pattern_bytes(4), None, [_DBS],
     "int8 extents [2^62 + 1, 4]: 2^64 + 4 elements, 4 in 64 bits, 4 data bytes"),
    ("bytes-wrap-to-0", _F32, [_P62], 0, b"", None, [_DBS],
     "float32 [2^62]: 2^64 bytes, 0 in 64 bits, data_byte_size 0"),
    ("bytes-wrap-to-4", _F32, [_P62 + 1], 4, pattern_bytes(4), None, [_DBS],
     "float32 [2^62 + 1]: 2^64 + 4 bytes, 4 in 64 bits, 4 data bytes"),
    ("bytes-sign-bit", _F32, [1 << 61], -(1 << 63), b"", None, [_DBS],
     "float32 [2^61]: 2^63 bytes, data_byte_size the sign bit"),
    ("dbs-zero-for-elements", _F32, [3], 0, b"", None, [_DBS], "float32 [3] with data_byte_size 0 and no data"),
    ("dbs-minus-1", _F32, [3], -1, pattern_bytes(12), None, [_DBS], "data_byte_size -1 (all bits set)"),
    ("dbs-high-half", _F32, [3], 12 + (1 << 32), pattern_bytes(12), None, [_DBS],
     "data_byte_size 12 + 2^32: right in its low 32 bits"),
    ("dbs-double", _F32, [3], 24, pattern_bytes(24), None, [_DBS], "float32 [3] with 24 data bytes (2 x numel x 4)"),
    ("dbs-half", _F32, [4], 8, pattern_bytes(8), None, [_DBS], "float32 [4] with 8 data bytes (numel x 4 / 2)"),
    ("dbs-lanes-counted", (2, 32, 4), [2], 32, pattern_bytes(32), None, [_DBS],
     "float32x4 [2] with 32 data bytes (lanes counted, which TVM never does)"),
    ("dbs-subbyte-floor", _I4, [3], 0, b"", None, [_DBS], "int4 [3] with 0 bytes (floor(bits / 8), TVM 0.6's rule)"),
    ("dbs-subbyte-packed", _I4, [4], 2, pattern_bytes(2), None, [_DBS], "int4 [4] with 2 bytes (packed bits)"),
    ("dbs-subbyte-ceil", _I4, [4], 4, pattern_bytes(4), None, [_DBS], "int4 [4] with 4 bytes (ceil(bits / 8))"),
    ("bits-0", (2, 0, 1), [3], 0, b"", None, [_DBS, _TABLE_RULE], "float with 0 bits, [3], no data"),
]


def _boundary_vectors(c: Collector) -> None:
    """Both sides of every rule of the records: at the bounds, past them, overflowing 64 bits,
    lying counts, confusable dtypes, names that are not UTF-8, truncation at every field."""
    d = LATEST
    for label, dtype, shape, dbs, data, ndim, rules, what in _BOUNDARY:
        _add_probe(c, f"params.bound.{label}", _tensor_file(dtype, shape, ndim=ndim, dbs=dbs, data=data), d, what, rules)
    for label, value in (("1", 1), ("0", 0), ("2", 2), ("minus-1", -1), ("0x101", 0x101), ("sign-bit", -(1 << 31)),
                         ("high-byte", 1 + (1 << 24))):
        _add_probe(c, f"params.bound.device-type-{label}", _tensor_file(_F32, [1], data=pattern_bytes(4),
                                                                         device_type=value), d,
                   f"device_type {value}", [_DEVICE])
    _dtype_edges(c)
    _name_bytes(c)
    # every field of the spec's example: lying counts and lengths, constants and counts at their edges, every cut
    good = build(_STRUCTS, _ROOT, _example_tree())
    _, spans = trace(_STRUCTS, _ROOT, good)
    owner = _rules.owners(_STRUCTS)
    _add_probe(c, "params.bound.whole", good, d, "the spec's example, every field at its exact value",
               sorted(_rules.spans_rules(spans, owner, _ROOT)), page=("params", "`params_file`"))
    for rids, label, data in _rules.span_variants(good, spans, owner, _ROOT):
        _add_probe(c, f"params.bound.{rids[0]}.{label}", data, d, f"{rids[0]} probed at {label}", rids,
                   page=("params", "What a reader checks"))


def _dtype_edges(c: Collector) -> None:
    """Codes with the bit widths and lanes a reader could confuse, per dialect: each is read as
    mlf-spec's dtype table says (known, unknown, or a spelling of its own)."""
    probes: list[tuple[str, tuple[int, int, int]]] = []
    for row in _table.ROWS:
        code = row["code"]
        if row["bits"] is not None:  # a fixed-width family read with the width of another
            for bits in sorted({8 if row["bits"] != 8 else 16, row["bits"] * 2, row["bits"] // 2} - {row["bits"], 0}):
                probes.append((f"{row['kind']}-{code}-bits-{bits}", (code, bits, 1)))
    probes += [("lanes-0", (2, 32, 0)), ("lanes-65535", (2, 32, 65535)), ("lanes-32768", (2, 32, 32768)),
               ("int-bits-0", (0, 0, 1)), ("code-255", (255, 8, 1)),
               ("code-128", (128, 8, 1)), ("code-129", (129, 8, 1)), ("code-18", (18, 8, 1))]
    seen = set()
    for d in (_dt.dialect("0.13"), LATEST):
        for label, dt in probes:
            if (d.id, dt) in seen:
                continue
            seen.add((d.id, dt))
            numel, per = 2, -(-dt[1] // 8)
            data = _file(["t"], [_record(dt, [2], pattern_bytes(numel * per))])
            _add_probe(c, f"params.bound.dtype.{d.id}.{label}", data, d,
                       f"code {dt[0]}, bits {dt[1]}, lanes {dt[2]} in dialect {d.id}", [_TABLE_RULE],
                       {"dtype_probe": [label]}, page=("dtype_codes", None))


#: names whose bytes are not UTF-8 (or are, with a NUL): the canonical reading substitutes each
#: maximal subpart of an ill-formed sequence with one U+FFFD (Python's decode with "replace")
_NAMES = [
    ("partial-3-byte", b"a\xe2\x82b", "a 3-byte sequence cut after 2 bytes: one U+FFFD (maximal subpart), not two"),
    ("partial-4-byte", b"x\xf0\x9f\x99", "an emoji cut after 3 bytes, at the end: one U+FFFD, not three"),
    ("overlong-slash", b"\xc0\xaf", "an overlong '/' (C0 AF): two U+FFFD"),
    ("overlong-3-byte", b"\xe0\x80\xaf", "an overlong 3-byte '/': three U+FFFD"),
    ("surrogate", b"\xed\xa0\x80", "an encoded surrogate U+D800: three U+FFFD"),
    ("lone-continuation", b"\x80\x80z", "two continuation bytes: two U+FFFD"),
    ("above-max", b"\xf4\x90\x80\x80", "a code point above U+10FFFF: four U+FFFD"),
    ("nul", b"a\x00b", "a NUL inside the name (valid UTF-8, kept)"),
]


def _name_bytes(c: Collector) -> None:
    for label, raw_name, what in _NAMES:
        data = _file([raw_name], [_record((2, 32, 1), [1])])
        name = raw_name.decode("utf-8", "replace")
        _add_decode(c, f"params.name.{label}", data, LATEST, f"a name {what}: read as {name!r}",
                    ("canonical_params", "`canonical_tensor`"), {"name": [label]})


__all__ = ["broken_variants", "build_params"]
