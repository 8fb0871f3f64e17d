"""Module blob vectors: every payload kind of each layout at its newest writer, every payload
grammar at each TVM version whose writer the strategies imitate, import trees (odd but legal
ones included), and every broken kind of ``BLOB_BROKEN_KINDS``. Payload values follow the
spec's rules for a valid value tree (the strategies' own) and are chosen deterministically
(:class:`Sampler`), never drawn at random."""

from __future__ import annotations

from typing import Any

from mlf_spec._internal.ir import Field
from mlf_spec._internal.spec_engine import build, trace
from mlf_spec._internal.spec_strategies import Choices, bounds, value_tree
from mlf_spec.blob import codec as _blob
from mlf_spec.blob import strategies as _bst
from mlf_spec.generated import payloads_ir as _payloads_ir

from . import rules as _rules
from .common import Collector, doc_ref, holding, outcome, pattern_bytes

LIB = _blob.LIB
_MAIN_ERA = {"ffi": _blob.LATEST, "legacy": (0, 20)}


def era_text(era: tuple[int, ...]) -> str:
    """The era option value: ``latest`` or ``0.16``."""
    return "latest" if era == _blob.LATEST else f"{era[0]}.{era[1]}"


def _era_label(fmt: str, era: tuple[int, ...]) -> str:
    return _blob._ERA_LABELS.get(era, era_text(era))


def _eras_newest_first(fmt: str) -> list[str]:
    """The era option values of a layout (the writer eras the blob codec names), newest first."""
    first_ffi = (0, 22)
    eras = [e for e in _blob._ERA_LABELS if (e >= first_ffi) == (fmt == "ffi")]
    return [era_text(e) for e in sorted(eras, reverse=True)]


def _clamp(v: int, lo: int, hi: int) -> int:
    return max(lo, min(hi, v))


class Sampler(Choices):
    """Chooses the free values of a valid value tree (:func:`mlf_spec._internal.spec_strategies.value_tree`,
    whose rules it follows) instead of drawing them: the first choice of a set, the float
    row of a table, 1 inside integer bounds (2 for array elements), one element per vector
    or map (more if a constraint asks), short distinct texts, patterned bytes."""

    def __init__(self) -> None:
        self.counter = 0

    def row(self, rows: list[dict]) -> dict:
        return next((r for r in rows if r["code"] == 2), rows[0])

    def pick(self, options: list[Any]) -> Any:
        return options[0]

    def integer(self, f: Field, pin: tuple[int | None, int | None] | None = None, each: bool = False) -> int:
        lo, hi = bounds(f, pin)
        return _clamp(2 if each else 1, lo, hi)

    def code(self, lo: int, hi: int) -> int:
        return lo

    def bits(self, f: Field, numpy_bits: list[int]) -> int:
        return 32 if 32 in numpy_bits else numpy_bits[0]

    def canonical(self, f: Field) -> int:
        return f["canonical"]

    def number(self, type_name: str) -> float:
        return 1.5

    def text(self, f: Field, era: tuple[int, ...]) -> str | bytes:
        self.counter += 1
        alphabet = f.get("strategy", {}).get("alphabet")
        if alphabet == "decimal":
            return "1"
        if alphabet == "tvm_version":
            e = min(era, (0, 20))
            return f"{e[0]}.{e[1]}.0"
        text = f"{f['name']}{self.counter}"
        return text if f.get("encoding") or alphabet == "text" else text.encode()

    def rest(self, f: Field, ns: dict) -> bytes:
        return pattern_bytes(f["size"][1](ns, remaining=8), self.counter)

    def sized(self, size: int) -> bytes:
        return pattern_bytes(size, self.counter)

    def elements(self, f: Field, make: Any, ns: dict, limit: int) -> list:
        for size in range(1, 5):
            ns[f["name"]] = [make() for _ in range(size)]
            if "constraint" not in f or "each" in f["constraint"][0] or f["constraint"][1](ns):
                return ns[f["name"]]
        raise AssertionError(f"no value of {f['name']} meets {f['constraint'][0]}")

    def require(self, ok: bool) -> None:
        if not ok:
            raise AssertionError("the sampled values break a rule of the spec")


def payload(kind: str, fmt: str, era: tuple[int, ...]) -> _blob.Payload:
    """A valid payload of ``kind`` for the writer of ``fmt`` at ``era``, sampled from the spec."""
    struct = _blob.known_kinds(fmt).get(kind, "opaque_payload")
    tree = value_tree(Sampler(), _payloads_ir.STRUCTS, struct, era)
    return _blob.parse_payload(kind, build(_payloads_ir.STRUCTS, struct, tree, era), format=fmt, era=era)


def _page_of(struct: str) -> str:
    """The reference page of a payload struct (vm.md, tensor.md or payloads.md)."""
    from mlf_spec.generated import tensor_ir, vm_ir

    if struct in tensor_ir.STRUCTS:
        return "tensor"
    return "vm" if struct in vm_ir.STRUCTS else "payloads"


def _mod(kind: str, fmt: str, era: tuple[int, ...], *imports: _blob.Module) -> _blob.Module:
    return _blob.Module(kind, payload(kind, fmt, era), imports)


def _add(c: Collector, vid: str, data: bytes, fmt: str, era: tuple[int, ...], description: str, page: tuple,
         features: dict[str, list[str]], broken_kind: str | None = None, expect: str | None = None) -> None:
    e = era_text(era)
    eras = holding("blob", "decode", data, {"layout": fmt, "era": e}, None, "era", _eras_newest_first(fmt))
    c.add(vid, "blob", data, options={"layout": fmt, "era": e}, scope={"layout": fmt, "era": eras},
          tvm=_era_label(fmt, era), features={"layout": [fmt], "era": [e], **features}, description=description,
          spec_ref=doc_ref(*page), broken_kind=broken_kind, expect=expect)


def build_blob(c: Collector) -> None:
    """Add every module blob vector to ``c``."""
    for fmt in _blob.FORMATS:
        _kind_vectors(c, fmt)
        _tree_vectors(c, fmt)
        _boundary_vectors(c, fmt)
    _loadable_boundary_vectors(c)
    _vm_boundary_vectors(c)
    _broken_vectors(c)


def _kind_vectors(c: Collector, fmt: str) -> None:
    """Each kind at the layout's newest era; each payload grammar at every other era."""
    main = _MAIN_ERA[fmt]
    kinds = dict(_blob.known_kinds(fmt))
    if fmt == "ffi":
        kinds["my_npu"] = "opaque_payload"  # a kind no grammar knows: kept as opaque bytes
    for kind, struct in kinds.items():
        data = _blob.build(_blob.Module.lib(_mod(kind, fmt, main)), format=fmt, era=main)
        _add(c, f"blob.{fmt}.kind.{kind}", data, fmt, main, f"a _lib root importing one {kind} module ({struct})",
             (_page_of(struct), f"`{struct}`"), {"payload_kind": [kind], "payload_struct": [struct]})
    if fmt == "ffi":  # a kind that is not UTF-8: written as names are (U+FFFD per maximal subpart, kind_hex)
        odd = b"\xffnpu\xe2\x82".decode("utf-8", "surrogateescape")
        data = _blob.build(_blob.Module.lib(_blob.Module(odd, payload("my_npu", fmt, main), ())), format=fmt, era=main)
        _add(c, f"blob.{fmt}.kind.not-utf8", data, fmt, main, "a _lib root importing a module whose kind is not UTF-8 "
             "(ff 'npu' e2 82: one invalid byte, then a sequence cut short): kind '\ufffdnpu\ufffd' with kind_hex",
             ("canonical_blob", "`canonical_module`"), {"payload_kind": ["not-utf8"], "payload_struct": ["opaque_payload"]})
    for era in map(_bst.era_tuple, _bst.BLOB_ERAS[fmt]):
        if era == main:
            continue
        seen = set()
        for kind, struct in kinds.items():
            if struct in seen:
                continue
            seen.add(struct)
            root = _blob.Module.lib(_mod(kind, fmt, era))
            data = _blob.build(root, format=fmt, era=era)
            _add(c, f"blob.{fmt}.{era_text(era)}.{struct}", data, fmt, era,
                 f"a {kind} module ({struct}) as the TVM {_era_label(fmt, era)} writer packs it",
                 (_page_of(struct), f"`{struct}`"), {"payload_kind": [kind], "payload_struct": [struct]})


def _tree_vectors(c: Collector, fmt: str) -> None:
    """Import trees: chains, shared modules, roots that are not _lib, roots without imports."""
    page = ("blob_ffi", "`ffi_body`") if fmt == "ffi" else ("blob_legacy", "`legacy_body`")
    for era in map(_bst.era_tuple, _bst.BLOB_ERAS[fmt]):
        k = "cuda"
        trees: list[tuple[str, _blob.Module, str]] = []
        if fmt == "legacy" and era < (0, 7):
            trees.append(("flat", _blob.Module.lib(_mod(k, fmt, era), _mod("opencl", fmt, era)),
                          "two modules imported by the library, no import tree (TVM up to 0.6)"))
        else:
            trees.append(("chain", _blob.Module.lib(_mod(k, fmt, era, _mod("opencl", fmt, era, _mod("c", fmt, era)))),
                          "a chain _lib -> cuda -> opencl -> c"))
            shared = _mod("c", fmt, era)
            trees.append(("shared", _blob.Module.lib(shared, _mod(k, fmt, era, shared)),
                          "a module imported by two parents, the root and a sibling (a DAG): one entry, two edges"))
            trees.append(("non-lib-root", _mod(k, fmt, era, _blob.Module.lib()),
                          "a cuda root importing the library (a root that is not _lib)"))
            trees.append(("lib-only", _blob.Module.lib(), "a _lib root without imports"))
            if fmt == "ffi" or era >= (0, 14):
                trees.append(("root-without-imports", _mod(k, fmt, era),
                              "a non-_lib root without imports (legacy 0.14+: count 0, then the root's own entry)"))
            if fmt == "legacy" and era <= (0, 8):  # both sides of single_lib (from 0.8): 0.7 reads it, 0.8 refuses
                trees.append(("two-libs", _mod(k, fmt, era, _blob.Module.lib(), _blob.Module.lib()),
                              "two _lib modules (one per DSO module, TVM 0.7; refused from 0.8)"))
                # no payload at all: a reader that parses no payload grammar reads it (and must judge the era)
                trees.append(("two-libs-only", _blob.Module.lib(_blob.Module.lib()),
                              "a _lib importing a second _lib, and nothing else (TVM 0.7; refused from 0.8)"))
        for label, root, description in trees:
            refused = fmt == "legacy" and label.startswith("two-libs") and era >= (0, 8)
            try:
                data = _blob.build(root, format=fmt, era=(0, 7) if refused else era)
            except Exception as exc:
                raise AssertionError(f"blob tree {label} at {era}: {exc}") from exc
            _add(c, f"blob.{fmt}.{era_text(era)}.tree.{label}", data, fmt, era, description, page,
                 {"import_tree": [label],
                  **({"rule": ["legacy_body.single_lib.invariant"]} if label.startswith("two-libs") else {})},
                 expect="reject" if refused else None)


def _base(fmt: str, era: tuple[int, ...]) -> bytes:
    """The blob the broken kinds start from: a shared module and a chain (four modules)."""
    shared = _mod("c", fmt, era)
    return _blob.build(_blob.Module.lib(shared, _mod("cuda", fmt, era, shared), _mod("opencl", fmt, era)),
                       format=fmt, era=era)


def broken_variants(kind: str, fmt: str, era: tuple[int, ...]) -> list[tuple[str, bytes]]:
    """(label, bytes) of the base blob broken in the named way, with chosen values: the
    deterministic counterpart of ``mlf_spec.strategies.broken_blob_bytes``."""
    data = _base(fmt, era)
    structs, root = _bst._ROOTS[fmt]
    tree, spans = trace(structs, root, data, era)
    if kind == "truncated":
        return [(f"at-{n}", data[:n]) for n in (0, 5, 16, len(data) // 2, len(data) - 1)]
    if kind == "lying_length":
        places = [s for s in spans if s.role in ("count", "length")]
        return [(f"{'.'.join(map(str, s.path)).replace('#', '')}", _set_u64(data, s.offset, 2**62))
                for s in (places[0], places[len(places) // 2], places[-1])]
    if kind == "payload_length_mismatch":
        known = _blob.known_kinds("ffi")
        s = next(s for s in spans if s.role == "length" and s.path[-2:] == ("payload", "#count")
                 and tree["body"]["modules"][s.path[2]]["kind"] in known)
        old = int.from_bytes(data[s.offset:s.offset + 8], "little")
        return [("minus-1", _set_u64(data, s.offset, old - 1)), ("plus-1", _set_u64(data, s.offset, old + 1))]
    if kind == "unknown_kind_legacy":
        s = next(s for s in spans if s.role == "payload" and s.path[-1] == "kind"
                 and bytes(data[s.offset:s.offset + s.size]) == b"cuda")
        return [("cuda-as-zzzz", data[:s.offset] + b"zzzz" + data[s.offset + s.size:])]
    out = []
    for label, at, value in (("first", 1, 2**32), ("last", 2**10, 3)):
        broken = _bst.rewrite_import_tree(data, fmt, era, kind, at=at, value=value)
        if broken is not None and all(broken != b for _, b in out):
            out.append((label, broken))
    return out


def _boundary_vectors(c: Collector, fmt: str) -> None:
    """Every field of the base blob (with its payloads) at and past its bounds: each count and
    length lying, each constant and ranged integer at its edges, the blob cut at every field
    boundary; the whole blob names every rule it meets at its exact value."""
    era = _MAIN_ERA[fmt]
    data = _base(fmt, era)
    structs, root = _bst._ROOTS[fmt]
    _, spans = trace(structs, root, data, era)
    owner = _rules.owners(structs)
    page = ("blob_ffi", "What a reader checks") if fmt == "ffi" else ("blob_legacy", "What a reader checks")

    def probe(vid: str, b: bytes, rids: list[str], what: str) -> None:
        want = outcome("blob", "decode", b, {"layout": fmt, "era": era_text(era)})["outcome"]
        _add(c, vid, b, fmt, era, f"{what}: " + ("accepted" if want == "accept" else "must be rejected"), page,
             {"rule": rids}, expect=want)

    # the dtype codes in function signatures are not checked by any blob reader: not a blob rule
    probe(f"blob.{fmt}.bound.whole", data, sorted(r for r in _rules.spans_rules(spans, owner, root)
                                                  if not r.endswith(".table")),
          "the base blob, every field at its exact value")
    for rids, label, b in _rules.span_variants(data, spans, owner, root):
        probe(f"blob.{fmt}.bound.{rids[0]}.{label}", b, rids, f"{rids[0]} probed at {label}")
    probe(f"blob.{fmt}.bound.bytes-after-the-end", data + b"\x00tail", [f"{root}.body.length"],
          "5 bytes after the blob's size-prefixed body (not part of the blob)")
    _edge_vectors(fmt, era, data, probe)
    if fmt == "ffi":
        tree, _ = trace(structs, root, data, era)
        body = tree["body"]
        for label, edit, rid, what in (
                ("no-module", {"row_ptr": [0], "child_indices": [], "modules": []}, "ffi_body.row_ptr.range",
                 "row_ptr [0]: no module at all"),
                ("empty-kind", {"modules": [body["modules"][0], {"kind": "", "payload": {"data": b"\x01"}}, *body["modules"][2:]]},
                 "ffi_module.kind.range", "a module whose kind is the empty string"),
                ("one-letter-kind", {"modules": [body["modules"][0], {"kind": "b", "payload": {"data": b"\x01\x02"}},
                                                 *body["modules"][2:]]},
                 "ffi_module.kind.range", "a module of the one-letter kind b (no grammar: opaque bytes)"),
                ("children-not-covered", {"child_indices": [*body["child_indices"], 1]}, "ffi_body.child_indices.range",
                 "a child index after the last row pointer (never read)")):
            b = build(structs, root, {"body": {**body, **edit}}, era)
            probe(f"blob.ffi.bound.{label}", b, [rid], what)
        # counts whose elements fill their payload: many small elements, a vector that ends the payload
        many = value_tree(Sampler(), _payloads_ir.STRUCTS, "device_binary", era)
        info = many["fmap"][0][1]
        info["arg_types"] = info["arg_types"] * 40
        info["arg_extra_tags"] = [0] * 40
        info["launch_param_tags"] = [""] * 12
        empty = value_tree(Sampler(), _payloads_ir.STRUCTS, "c_source_payload", era)
        empty["const_vars"], empty["func_names"] = ["", "", ""], [""] * 6
        for label, kind, struct, tree, rid, what in (
                ("many-small-elements", "opencl", "device_binary", many, "function_info.arg_types.length",
                 "a function with 40 argument types, 40 extra tags and 12 empty launch tags"),
                ("empty-strings-end-the-payload", "c", "c_source_payload", empty, "c_source_payload.const_vars.length",
                 "a c payload whose names are empty strings, the last of them ending the payload")):
            pl = _blob.parse_payload(kind, build(_payloads_ir.STRUCTS, struct, tree, era), format=fmt, era=era)
            b = _blob.build(_blob.Module.lib(_blob.Module(kind, pl, ())), format=fmt, era=era)
            probe(f"blob.ffi.bound.{label}", b, [rid], what)


#: module kinds that every TVM build loads on a CPU (no device runtime needed): a blob of these
#: alone is judged by a real loader, where one holding cuda or opencl payloads is refused as
#: unsupported before its fields are read
LOADABLE_KINDS = ("c", "static_library", "metadata_module")


def _loadable_base(era: tuple[int, ...]) -> bytes:
    """A legacy blob of loadable kinds only, shaped like :func:`_base`: a c module shared by the
    ``_lib`` and a static library, and an empty-payload module."""
    shared = _mod("c", "legacy", era)
    return _blob.build(_blob.Module.lib(shared, _mod("static_library", "legacy", era, shared),
                                        _mod("metadata_module", "legacy", era)), format="legacy", era=era)


def _loadable_boundary_vectors(c: Collector) -> None:
    """The legacy boundary variants again (every count and length lying, every checked integer
    at its edges, the blob cut at every field boundary), from a base of :data:`LOADABLE_KINDS`:
    ``blob.legacy.loadable.*``, so that a real TVM loader without device runtimes reads every
    field instead of refusing a cuda payload first."""
    era = _MAIN_ERA["legacy"]
    data = _loadable_base(era)
    structs, root = _bst._ROOTS["legacy"]
    _, spans = trace(structs, root, data, era)
    owner = _rules.owners(structs)
    page = ("blob_legacy", "What a reader checks")

    def probe(vid: str, b: bytes, rids: list[str], what: str) -> None:
        want = outcome("blob", "decode", b, {"layout": "legacy", "era": era_text(era)})["outcome"]
        _add(c, vid, b, "legacy", era, f"{what} (modules of kinds {', '.join(LOADABLE_KINDS)} only): "
             + ("accepted" if want == "accept" else "must be rejected"), page, {"rule": rids}, expect=want)

    probe("blob.legacy.loadable.whole", data, sorted(r for r in _rules.spans_rules(spans, owner, root)
                                                     if not r.endswith(".table")),
          "the loadable base blob, every field at its exact value")
    for rids, label, b in _rules.span_variants(data, spans, owner, root):
        probe(f"blob.legacy.loadable.{rids[0]}.{label}", b, rids, f"{rids[0]} probed at {label}")


def _device_payload(era: tuple[int, ...], *, arg_types: int = 0, launch_tags: int = 0, extra_tags: int = 0,
                    functions: int = 1, data: bytes = b"") -> dict:
    """A device_binary value tree whose every text is empty: ``functions`` entries, each with
    that many argument types, empty launch tags and extra tags (0.21+), then ``data``."""
    tree = value_tree(Sampler(), _payloads_ir.STRUCTS, "device_binary", era)
    info = dict(tree["fmap"][0][1], name="", launch_param_tags=[""] * launch_tags)
    info["arg_types"] = (info["arg_types"] * arg_types)[:arg_types]
    if info.get("arg_extra_tags") is not None:
        info["arg_extra_tags"] = [0] * extra_tags
    return {"fmt": "", "fmap": [("", info)] * functions, "data": data}


def _edge_vectors(fmt: str, era: tuple[int, ...], base: bytes, probe: Any) -> None:
    """Inputs at the edges a careful reader still gets wrong, made from the spec's records:
    counts whose least-size elements fill what remains (a count check that assumes one byte
    more per element refuses them), a count one element past what remains where nothing
    follows (a check that assumes one byte less per element reads past the end), a row
    pointer in the middle of the list past the child indices (only the last one checked),
    child indices after the last row (never read, valid), a kind whose bytes run past the
    blob's size prefix into bytes after it, and the import tree's own bounds."""
    structs, root = _bst._ROOTS[fmt]
    tree, _ = trace(structs, root, base, era)
    (_ffi_edges if fmt == "ffi" else _legacy_edges)(structs, root, tree["body"], era, probe)


def _ffi_edges(structs: Any, root: str, body: dict, era: tuple[int, ...], probe: Any) -> None:
    """The edge vectors of a tvm-ffi blob (:func:`_edge_vectors`)."""

    def blob_of(kind: str, struct: str, value: dict) -> bytes:
        pl = _blob.parse_payload(kind, build(_payloads_ir.STRUCTS, struct, value, era), format="ffi", era=era)
        return _blob.build(_blob.Module.lib(_blob.Module(kind, pl, ())), format="ffi", era=era)

    def lie(b: bytes, from_end: int, width: int) -> bytes:
        """``b`` with the count ``from_end`` bytes before its end one element past what follows it."""
        at = len(b) - from_end
        return _set_u64(b, at, (from_end - 8) // width + 1)

    # the device module is the last thing in the blob: its last fields end the input
    types = blob_of("opencl", "device_binary", _device_payload(era, arg_types=25))
    probe("blob.ffi.bound.arg-types-fill-the-payload", types, ["function_info.arg_types.length"],
          "25 argument types, then only empty lists: the types fill all but 24 bytes of the payload")
    tags = blob_of("opencl", "device_binary", _device_payload(era, launch_tags=17))
    probe("blob.ffi.bound.launch-tags-fill-the-payload", tags, ["function_info.launch_param_tags.length"],
          "17 empty launch tags, then two empty lists: the tags fill all but 16 bytes of the payload")
    probe("blob.ffi.bound.arg-types-one-past-the-end", lie(types, 4 * 25 + 32, 4), ["function_info.arg_types.length"],
          "an argument-type count one element past the end of the payload, which ends the blob")
    extra = blob_of("opencl", "device_binary", _device_payload(era, data=b"\x00" * 16))
    probe("blob.ffi.bound.extra-tags-one-past-the-end", lie(extra, 8 + 8 + 16, 4),
          ["function_info.arg_extra_tags.length"],
          "an extra-tag count one element past the end of the payload, which ends the blob")
    lib = body["modules"][0]
    for label, edit, rids, what in (
            ("row-past-children-in-the-middle", {"row_ptr": [0, 2, 1], "child_indices": [1],
                                                 "modules": [lib, body["modules"][1]]},
             ["ffi_body.rows_within.invariant"], "row_ptr [0, 2, 1] with one child index: the middle row lies past it"),
            ("children-fill-the-body", {"row_ptr": [0, 13], "child_indices": [0] * 13, "modules": [lib]},
             ["ffi_body.child_indices.length", "ffi_body.rows_within.invariant"], "13 child indices and one _lib module (a cycle): the indices fill "
             "all but 12 bytes of the body"),
            ("kinds-like-lib", {"row_ptr": [0, 2, 2, 2], "child_indices": [1, 2],
                                "modules": [lib, {"kind": "_li", "payload": {"data": b"\x01" * 98}},
                                            {"kind": "_liB", "payload": {"data": b"\x02"}}]},
             ["ffi_module.kind.range"], "modules of kinds _li (its payload length starts with the byte 'b': 98) "
             "and _liB, opaque bytes both")):
        probe(f"blob.ffi.bound.{label}", build(structs, root, {"body": {**body, **edit}}, era), rids, what)


def _legacy_edges(structs: Any, root: str, body: dict, era: tuple[int, ...], probe: Any) -> None:
    """The edge vectors of a legacy blob (:func:`_edge_vectors`)."""
    lib, device, tree_entry = body["entries"][0], body["entries"][2], body["entries"][-1]

    def legacy(entries: list[dict], trailing: bytes = b"") -> bytes:
        return build(structs, root, {"body": {"count": len(entries), "entries": entries, "trailing": trailing}}, era)

    def import_tree(rows: list[int], children: list[int]) -> dict:
        return {**tree_entry, "payload": {"row_ptr": rows, "child_indices": children}}

    empty_c = {"kind": "c", "payload": {"code": "", "fmt": "", "func_names": [""] * 2, "const_vars": [""] * 3}}
    many = {"kind": device["kind"], "payload": _device_payload(era, functions=9)}
    flat = [{"kind": "metadata_module", "payload": {}}] * 7
    fits, past, rows, within = ("legacy_body.tree_fits_modules.invariant", "legacy_blob.body.length",
                                "import_tree.row_ptr.range", "import_tree.rows_within.invariant")
    for label, data, rids, what in (
            ("empty-strings-end-the-body", legacy([empty_c]), ["c_source_payload.const_vars.length"],
             "one c module and no import tree: its names are empty strings, the last of them ending the body"),
            ("functions-fill-the-body", legacy([many]), ["device_binary.fmap.length"],
             "a device module with 9 functions of the least size (32 bytes), then empty data, ending the body"),
            ("rows-fill-the-body", legacy([lib, *flat, import_tree([0] * 9, [])]),
             ["import_tree.row_ptr.length", fits],
             "eight modules, then an import tree of 9 zero row pointers and no child index, ending the body"),
            ("children-fill-the-body", legacy([lib, *flat, import_tree([0, 8, *[8] * 7], [1, 2, 3, 4, 5, 6, 7, 7])]),
             ["import_tree.child_indices.length", within],
             "eight modules, the _lib importing 8 of them: the child indices end the body"),
            ("tree-one-row", legacy([import_tree([0], [])]), [rows], "only an import tree, row_ptr [0] (no module)"),
            ("tree-two-rows", legacy([lib, import_tree([0, 0], [])]), [rows, fits, within],
             "a _lib and an import tree row_ptr [0, 0] with no child index"),
            ("tree-row-short", legacy([lib, device, import_tree([0, 0], [])]), [fits],
             "two modules and an import tree with one row"),
            ("tree-row-long", legacy([lib, import_tree([0, 0, 0], [])]), [fits],
             "one module and an import tree with two rows"),
            ("row-past-children-in-the-middle", legacy([lib, device, import_tree([0, 2, 1], [1])]), [within],
             "row_ptr [0, 2, 1] with one child index: the middle row lies past it"),
            ("children-not-covered", legacy([lib, device, import_tree([0, 1, 1], [1, 1])]), [within],
             "a child index after the last row pointer (never read)")):
        probe(f"blob.legacy.bound.{label}", data, rids, what)
    # the last kind runs past the size prefix's end: its last byte is the byte after the blob
    cut = legacy([lib])[:-1]
    probe("blob.legacy.bound.kind-past-the-body", _set_u64(cut, 0, len(cut) - 8) + b"b", ["legacy_entry.kind.length", past],
          "a _lib kind whose last byte lies after the size-prefixed body")


#: (label, layout, blob era, kind, payload era, edit) of the VM executables whose payload grammar the
#: VM boundary vectors trace: the relax VM as tvm-ffi writes it (magic V2 with a memory scope, a
#: tensor and a shape constant), the relax VM in legacy blobs with the 0.16-0.20 and the 0.21
#: constant tags, and the relay VM of 0.8 (untagged constants), 0.9-0.13 and 0.14+ (virtual devices)
VM_BASES: tuple[tuple[str, str, tuple[int, ...], str, tuple[int, ...], str], ...] = (
    ("relax", "ffi", _blob.LATEST, "relax.VMExecutable", _blob.LATEST, "v2"),
    ("relax-0.20", "legacy", (0, 20), "relax.VMExecutable", (0, 20), ""),
    ("relax-0.21", "legacy", (0, 21), "relax.VMExecutable", (0, 21), ""),
    ("relay-0.8", "legacy", (0, 8), "VMExecutable", (0, 8), ""),
    ("relay-0.9", "legacy", (0, 8), "VMExecutable", (0, 9), ""),
    ("relay-0.20", "legacy", (0, 20), "VMExecutable", (0, 20), ""),
)


def vm_structs() -> set[str]:
    """The structs of the VM executable grammar (spec/binary/vm.yaml)."""
    from mlf_spec.generated import vm_ir

    return set(vm_ir.STRUCTS) - {"dl_datatype", "dl_device", "tensor_record"}  # tensor rules: the params vectors


def _vm_boundary_vectors(c: Collector) -> None:
    """The VM executable payload grammar (spec/binary/vm.yaml) at and past its bounds, traced
    from a _lib root importing one VM module per base (:data:`VM_BASES`): each count and
    length of the executable lying, each constant and ranged integer at its edges, the version
    string changed, the blob cut at every field boundary inside the payload; the whole blob
    names the VM rules it meets."""
    covered: set[str] = set()  # the rules an earlier base probed: a later one probes only what it adds
    for base in VM_BASES:
        covered |= _vm_base_vectors(c, *base, covered=covered)


def _vm_payload(fmt: str, kind: str, era: tuple[int, ...], edit: str) -> _blob.Payload:
    struct = _blob.known_kinds(fmt)[kind]
    tree = value_tree(Sampler(), _payloads_ir.STRUCTS, struct, era)
    if edit == "v2":  # the 0.23+ magic, with its memory-scope section, and a shape constant beside the tensor
        from mlf_spec.generated import vm_ir

        tree["magic"] = vm_ir.CONSTANTS["RELAX_VM_MAGIC_V2"]
        tree["memory_scopes"] = [{"const_index": 0, "scope": "global"}]
        tree["constants_v022"].append({"tag": 69, "value": {"dims": [2, 3]}})
    return _blob.parse_payload(kind, build(_payloads_ir.STRUCTS, struct, tree, era), format=fmt, era=era)


def _vm_base_vectors(c: Collector, name: str, fmt: str, era: tuple[int, ...], kind: str,
                     payload_era: tuple[int, ...], edit: str, *, covered: set[str]) -> set[str]:
    """The vectors of one base (the rules in ``covered`` aside); returns the rules it met."""
    vm = vm_structs()
    data = _blob.build(_blob.Module.lib(_blob.Module(kind, _vm_payload(fmt, kind, payload_era, edit), ())),
                       format=fmt, era=era)
    structs, root = _bst._ROOTS[fmt]
    _, spans = trace(structs, root, data, era)
    owner = _rules.owners(structs)
    struct = _blob.known_kinds(fmt)[kind]
    inside = [s for s in spans if owner.get(id(s.field)) in vm]
    lo, hi = min(s.offset for s in inside), max(s.offset + s.size for s in inside)
    label = f"blob.{fmt}.vm.{name}"
    equals = {r[:-len(".equals")] for r in _rules.rules_of(_payloads_ir.STRUCTS, sorted(vm)) if r.endswith(".equals")}

    def probe(vid: str, b: bytes, rids: list[str], what: str) -> None:
        want = outcome("blob", "decode", b, {"layout": fmt, "era": era_text(era)})["outcome"]
        _add(c, vid, b, fmt, era, f"{what}: " + ("accepted" if want == "accept" else "must be rejected"),
             ("vm", "What a reader checks"), {"rule": rids, "payload_kind": [kind], "payload_struct": [struct]},
             expect=want)

    reached = sorted(r for r in _rules.spans_rules(spans, owner, root) if r.split(".")[0] in vm
                     and not r.endswith(".table"))
    new = set(reached) - covered
    # field boundaries of the fields whose rules this base adds
    starts = {s.offset + k for s in inside if any(_rules.span_rule(s, owner, a) in new for a in _rules.field_aspects(s.field))
              for k in {0, 1, 4, s.size - 1} if k == 0 or (s.role != "payload" and 0 < k < s.size)}
    probe(f"{label}.whole", data, reached, f"a {kind} executable ({name}), every field at its exact value")
    for rids, where, b in _rules.span_variants(data, spans, owner, root):
        vm_rids = [r for r in rids if r.split(".")[0] in vm]
        # a count the spec says equals another field: lying, it breaks that relation too
        vm_rids += [f"{r[:-len('.length')]}.equals" for r in vm_rids if r.endswith(".length")
                    and r[:-len(".length")] in equals]
        if where.startswith("cut-"):
            n = int(where[4:])
            if not lo < n < hi or (covered and n not in starts and not set(vm_rids) & new):
                continue
            vm_rids = [f"{root}.truncation", *vm_rids]
        elif not set(vm_rids) & new:
            continue
        probe(f"{label}.{vm_rids[-1]}.{where}", b, vm_rids, f"{vm_rids[-1]} probed at {where}")
    for s in spans:  # a string constant (the relax VM's version) differing in its last character
        f = s.field
        if s.role == "payload" and f.get("kind") == "str" and "const" in f and owner.get(id(f)) in vm and s.size:
            rid = _rules.rule_id(owner[id(f)], f["name"], "const")
            last = data[s.offset + s.size - 1]
            b = data[:s.offset + s.size - 1] + bytes([last + 1 if last < 0x7e else 0x30]) + data[s.offset + s.size:]
            if rid in new:
                probe(f"{label}.{rid}.last-char", b, [rid], f"{rid}: {f['name']} differing in its last character")
    return set(reached)


def _slug_kind(kind: str) -> str:
    return kind.replace(".", "-").lower()


def _set_u64(data: bytes, offset: int, value: int) -> bytes:
    return data[:offset] + value.to_bytes(8, "little") + data[offset + 8:]


def _broken_vectors(c: Collector) -> None:
    for kind, severity in _bst.BLOB_BROKEN_KINDS.items():
        if kind in ("duplicate_lib_legacy", "unknown_kind_legacy"):
            formats = ["legacy"]
        elif kind in ("duplicate_lib_ffi", "payload_length_mismatch"):
            formats = ["ffi"]
        else:
            formats = list(_blob.FORMATS)
        n = 0
        for fmt in formats:
            era = _MAIN_ERA[fmt]
            page = ("blob_ffi", "What a reader checks") if fmt == "ffi" else ("blob_legacy", "What a reader checks")
            for label, data in broken_variants(kind, fmt, era):
                n += 1
                _add(c, f"blob.{fmt}.broken.{kind}.{label}", data, fmt, era,
                     f"broken ({kind}, {label}): " + ("must be rejected" if severity == "error" else
                                                       "reads, with a finding"),
                     page, {"broken_kind": [kind]}, broken_kind=kind,
                     expect="reject" if severity == "error" else "accept")
        if not n:
            raise AssertionError(f"no blob vector for the broken kind {kind!r}")


__all__ = ["Sampler", "broken_variants", "build_blob", "era_text", "payload"]
