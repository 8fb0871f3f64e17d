"""The index JSON of a tensor cache, read into plain records (spec/records/tensor_cache.yaml):
structure and JSON types are checked here, with the JSON path and byte offset of the first
problem; sizes against the shards are checked by :mod:`mlf_spec.cache.rules`."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from mlf_spec.errors import MalformedError, MlfError, ValidationError
from mlf_spec.generated import cache_layouts_table as _layouts

from . import jsonpos
from .records import INT64_MAX, INTERNAL, Builder, Int64, Records, TensorEntry

#: Index file names by cache version (spec/tables/cache_layouts.yaml).
INDEX_NAMES: dict[int, str] = {r["version"]: r["index_file"] for r in _layouts.ROWS if r["version"]}
B16_NAMES: dict[int, str] = {r["version"]: r["b16_file"] for r in _layouts.ROWS if r["version"]}
VERSION_OF_NAME: dict[str, int] = {name: v for v, name in INDEX_NAMES.items()}
LATEST = max(INDEX_NAMES)
#: The deepest nesting of JSON arrays and objects an index may have (the top-level object is
#: level 1, a record's shape level 6); deeper is refused (malformed). The loaders' parsers have
#: no stated limit: Python's json stops near 1,000 levels (RecursionError), tvm-ffi's parser
#: (the C++ loader) crashes between 5,000 and 100,000 (observed 0.27).
MAX_DEPTH = 64
_MD5 = re.compile(r"[0-9a-f]{32}")
_MD5_ANYCASE = re.compile(r"[0-9a-fA-F]{32}")
# a \uD800-\uDFFF escape somewhere: only then are strings searched for lone surrogates
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def _keys() -> dict[str, list[str]]:
    """The keys the writer writes, by record, in its order (from the generated JSON Schema,
    so that reading needs no pydantic)."""
    import importlib.resources

    schema = json.loads(importlib.resources.files("mlf_spec.generated").joinpath(
        "schemas/tensor_cache.schema.json").read_text("utf-8"))
    defs = schema["$defs"]
    return {"cache_index": list(schema["properties"]), "shard_record": list(defs["ShardRecord"]["properties"]),
            "tensor_record": list(defs["TensorRecord"]["properties"])}


#: Keys the writer writes, by record (spec/records/tensor_cache.yaml), in its order.
KEYS = _keys()


class _FastShard(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    dataPath: str  # noqa: N815 - the JSON key
    format: str
    nbytes: Int64
    records: list[TensorEntry]
    md5sum: Any = msgspec.UNSET


class _BigShard(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """A shard of many records: each record's JSON text first, decoded a batch at a time."""

    dataPath: str  # noqa: N815 - the JSON key
    format: str
    nbytes: Int64
    records: list[msgspec.Raw]
    md5sum: Any = msgspec.UNSET


class _FastIndex(msgspec.Struct, forbid_unknown_fields=True):
    records: list[msgspec.Raw]
    metadata: Any = msgspec.UNSET


class _FastWhole(msgspec.Struct, forbid_unknown_fields=True):
    """An index of at most :data:`_BIG` bytes, decoded in one pass (its record objects cost a
    few times a small text: reading it shard by shard would only add a second parse)."""

    records: list[_FastShard]
    metadata: Any = msgspec.UNSET


_FAST = msgspec.json.Decoder(_FastIndex)
_WHOLE = msgspec.json.Decoder(_FastWhole)
_FAST_SHARD = msgspec.json.Decoder(_FastShard)
_BIG_SHARD = msgspec.json.Decoder(_BigShard)
_ENTRIES = msgspec.json.Decoder(list[TensorEntry])
#: a shard's JSON text longer than this is decoded a batch of records at a time (so that the
#: record objects alive at once stay few: they cost about four times their text)
_BIG = 1 << 22
_BATCH = 4096


@dataclass(slots=True)
class ShardEntry:
    """One shard record."""

    data_path: str
    format: str
    nbytes: int
    md5sum: str | None
    tensors: Sequence[TensorEntry]
    path: str
    extra: dict[str, Any] = field(default_factory=dict)
    #: whether the record has an md5sum key (``md5sum`` is its value when that is a string)
    has_md5: bool = False

    @property
    def md5_syntax_ok(self) -> bool:
        """Whether md5sum is what the writer writes: 32 lower-case hex digits."""
        return self.md5sum is not None and _MD5.fullmatch(self.md5sum) is not None

    @property
    def md5_comparable(self) -> bool:
        """Whether md5sum can be compared with the shard's MD5 (32 hex digits, either case)."""
        return self.md5sum is not None and _MD5_ANYCASE.fullmatch(self.md5sum) is not None


@dataclass(slots=True)
class CacheIndex:
    """A whole index: ``version`` comes from the file name (1 ndarray-cache.json, 2
    tensor-cache.json, None for another name), ``layout`` is the layout id."""

    metadata: Any
    has_metadata: bool
    shards: list[ShardEntry]
    file: str
    raw: bytes
    version: int | None
    layout: str
    extra: dict[str, Any] = field(default_factory=dict)
    #: how many NaN / Infinity / -Infinity literals (not RFC 8259 JSON) the index holds; each
    #: was read as null
    nonfinite: int = 0
    #: whether some string of the index holds a lone surrogate escape (\\ud800 alone)
    surrogates: bool = False
    #: every tensor record, as columns (:mod:`.records`)
    records: Records = field(default_factory=lambda: Builder().build())

    @property
    def tensors(self) -> Records:
        """Every tensor record, shard by shard, in stored order (made on demand)."""
        return self.records

    def error(self, message: str, path: str, cls: type[MlfError] = ValidationError) -> MlfError:
        """An error at JSON ``path`` of this index, with its byte offset."""
        return cls(message, file=self.file, field=path or None, offset=jsonpos.byte_offset(self.raw, path))


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


class _Reader:
    def __init__(self, raw: bytes, file: str) -> None:
        self.raw, self.file = raw, file

    def fail(self, message: str, path: str) -> MlfError:
        return ValidationError(message, file=self.file, field=path or None, offset=jsonpos.byte_offset(self.raw, path))

    def get(self, obj: dict, key: str, path: str, kind: str) -> Any:
        where = f"{path}.{key}" if path else key
        if key not in obj:
            raise self.fail(f"the key {key!r} is missing (every loader needs it)", path)
        v = obj[key]
        ok = {"str": isinstance(v, str), "int": _is_int(v), "list": isinstance(v, list)}[kind]
        if not ok:
            raise self.fail(f"{key} must be a JSON {'integer' if kind == 'int' else 'string' if kind == 'str' else 'array'}, "
                            f"not {type(v).__name__}", where)
        if kind == "int" and not -INT64_MAX - 1 <= v <= INT64_MAX:
            raise self.fail(f"{key} does not fit in a signed 64-bit integer (the loaders' int64_t)", where)
        return v

    def extra(self, obj: dict, record: str) -> dict[str, Any]:
        known = KEYS.get(record, [])
        return {k: v for k, v in obj.items() if k not in known}


def _fast_index(raw: bytes, file: str, version: int | None) -> CacheIndex | None:
    """The index decoded straight into columns of records when it has the writer's layout (the
    keys of spec/records/tensor_cache.yaml and no other, JSON types right, integers in int64,
    RFC 8259 JSON, no lone surrogate); None to take the general path, which reports what is
    wrong or keeps what is unusual. Shard by shard (a long shard a batch of records at a
    time), so that the record objects alive at once stay few: the open costs about twice the
    index's size (docs/tensor-cache.md)."""
    if INTERNAL.encode() in raw:
        return None
    try:
        doc: _FastIndex | _FastWhole = _WHOLE.decode(raw) if len(raw) <= _BIG else _FAST.decode(raw)
        heads: list[_FastShard | _BigShard] = []
        records = Builder()
        pieces: list[_FastShard | msgspec.Raw] = list(doc.records)
        for i, piece in enumerate(pieces):
            if isinstance(piece, _FastShard) or len(piece) <= _BIG:
                small = piece if isinstance(piece, _FastShard) else _FAST_SHARD.decode(piece)
                records.add(small.records, i)
                small.records = []
                heads.append(small)
            else:
                big = _BIG_SHARD.decode(piece)
                for k in range(0, len(big.records), _BATCH):
                    records.add(_ENTRIES.decode(b"[" + b",".join(big.records[k:k + _BATCH]) + b"]"), i)
                big.records = []
                heads.append(big)
            records.end_shard()
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError, ValueError):
        return None
    metadata = doc.metadata
    del doc, pieces  # the shards' texts can go
    cols = records.build()
    layout = "tensor-shards" if version == 2 else "ndarray-shards"
    shards = []
    for i, s in enumerate(heads):
        md5 = s.md5sum
        has_md5 = md5 is not msgspec.UNSET
        if not has_md5 and version != 2:
            layout = "ndarray-shards-nomd5"
        shards.append(ShardEntry(s.dataPath, s.format, s.nbytes, md5 if isinstance(md5, str) else None,
                                 cols.shard_records(i), f"records[{i}]", {}, has_md5))
    has_metadata = metadata is not msgspec.UNSET
    metadata = metadata if has_metadata else None
    if _too_deep(metadata, 2):
        raise _depth_error(file)
    return CacheIndex(metadata, has_metadata, shards, file, raw, version, layout, {}, records=cols)


def parse(raw: bytes, file: str, *, name: str | None = None) -> CacheIndex:
    """Read index bytes ``raw`` (``file`` names them in errors, ``name`` is the index's file
    name, which gives the version). Raises :class:`MlfError` if it is not JSON or not a
    cache index, with the JSON path and byte offset."""
    version = VERSION_OF_NAME.get(name) if name is not None else None
    if not raw.startswith(b"\xef\xbb\xbf"):  # a BOM: refused below, with json's message
        fast = _fast_index(raw, file, version)
        if fast is not None:
            return fast
    doc, nonfinite = _load_json(raw, file)
    r = _Reader(raw, file)
    if isinstance(doc, list):
        raise r.fail("a JSON list of per-tensor records: the pre-release layout of c1f304497e (one file per "
                     "tensor), which no released loader reads", "")
    if not isinstance(doc, dict) or "records" not in doc:
        raise r.fail("not a tensor cache index (a JSON object with 'records' is expected)", "")
    shards, cols, layout = _shards(r, r.get(doc, "records", "", "list"), version)
    extra = r.extra(doc, "cache_index")
    # the records' own keys nest 6 levels at most: only metadata and unknown keys can go deeper
    # (each extra dict stands at the level of the record object it was taken from)
    deep = _too_deep(doc.get("metadata"), 2) or _too_deep(extra, 1)
    deep = deep or any(_too_deep(sh.extra, 3) for sh in shards) or any(_too_deep(e, 5) for e in cols.extras())
    if deep:
        raise _depth_error(file)
    out = CacheIndex(doc.get("metadata"), "metadata" in doc, shards, file, raw, version, layout, extra,
                     nonfinite, records=cols)
    if _SURROGATE_ESCAPE.search(raw) is not None:
        out.surrogates = _has_surrogate(doc)
    return out


def _load_json(raw: bytes, file: str) -> tuple[Any, int]:
    """The index as Python's json reads it, and how many non-finite literals it holds."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MalformedError(f"the index is not UTF-8 text ({exc.reason})", file=file, offset=exc.start) from None
    nonfinite = [0]

    def constant(_literal: str) -> None:  # NaN, Infinity, -Infinity: read as null, counted
        nonfinite[0] += 1

    try:
        doc = json.loads(text, parse_constant=constant, parse_float=lambda f: _finite(f, constant))
    except RecursionError:
        raise _depth_error(file) from None
    except json.JSONDecodeError as exc:
        offset = len(text[:exc.pos].encode("utf-8"))
        raise MalformedError(f"the index is not JSON: {exc.msg}", file=file, offset=offset) from None
    except ValueError:  # Python's limit on integer digits (sys.get_int_max_str_digits)
        raise MalformedError("the index holds an integer of more than 4,300 digits, which no cache loader reads",
                             file=file) from None
    return doc, nonfinite[0]


def _shards(r: _Reader, records: list, version: int | None) -> tuple[list[ShardEntry], Records, str]:
    """The shard records of a parsed index, checked key by key; the tensor records as columns;
    the layout id."""
    heads = []
    cols = Builder()
    layout = "tensor-shards" if version == 2 else "ndarray-shards"
    for i, s in enumerate(records):
        sp = f"records[{i}]"
        if not isinstance(s, dict):
            raise r.fail("a shard record must be a JSON object", sp)
        if "records" not in s and "name" in s:
            raise r.fail("a per-tensor record (name, dataPath, no shard): the pre-release layout of 279317d4cd, "
                         "which no released loader reads", sp)
        data_path = r.get(s, "dataPath", sp, "str")
        fmt = r.get(s, "format", sp, "str")
        nbytes = r.get(s, "nbytes", sp, "int")
        md5 = s.get("md5sum")  # no loader reads it: any JSON value is kept (cache check: shard.md5-syntax)
        if not isinstance(md5, str):
            md5 = None
        cols.add([_tensor(r, t, f"{sp}.records[{j}]") for j, t in enumerate(r.get(s, "records", sp, "list"))], i)
        cols.end_shard()
        if "md5sum" not in s:
            layout = "ndarray-shards-nomd5" if version != 2 else layout
        heads.append((data_path, fmt, nbytes, md5, sp, r.extra(s, "shard_record"), "md5sum" in s))
    built = cols.build()
    shards = [ShardEntry(d, f, n, m, built.shard_records(i), sp, e, h) for i, (d, f, n, m, sp, e, h) in enumerate(heads)]
    return shards, built, layout


def _tensor(r: _Reader, t: Any, tp: str) -> TensorEntry:
    """One tensor record of a parsed index, checked key by key."""
    if not isinstance(t, dict):
        raise r.fail("a tensor record must be a JSON object", tp)
    shape = r.get(t, "shape", tp, "list")
    for k, d in enumerate(shape):
        if not _is_int(d):
            raise r.fail("an extent must be a JSON integer", f"{tp}.shape[{k}]")
        if not -INT64_MAX - 1 <= d <= INT64_MAX:
            raise r.fail("an extent does not fit in a signed 64-bit integer", f"{tp}.shape[{k}]")
    return TensorEntry(r.get(t, "name", tp, "str"), tuple(shape), r.get(t, "dtype", tp, "str"),
                       r.get(t, "format", tp, "str"), r.get(t, "nbytes", tp, "int"), r.get(t, "byteOffset", tp, "int"),
                       -1, -1, r.extra(t, "tensor_record") or None)


def _finite(text: str, nonfinite: Any) -> float | None:
    """A JSON number with a fraction or exponent; one past float's range (1e400, read as
    infinity) counts as a non-finite literal and is read as null."""
    v = float(text)
    if v in (float("inf"), float("-inf")):
        return nonfinite(text)
    return v


def _depth_error(file: str) -> MlfError:
    return MalformedError(f"the index nests JSON arrays and objects more than {MAX_DEPTH} levels deep "
                          "(mlf-spec's stated limit; TVM's parsers have none and fail near 1,000 levels)", file=file)


def _too_deep(value: Any, level: int) -> bool:
    """Whether ``value``, standing at nesting ``level`` (a container there is that level),
    holds containers deeper than :data:`MAX_DEPTH` (an explicit stack: no recursion)."""
    stack = [(value, level)]
    while stack:
        v, lv = stack.pop()
        if isinstance(v, dict):
            items: Any = v.values()
        elif isinstance(v, list):
            items = v
        else:
            continue
        if lv > MAX_DEPTH:
            return True
        stack.extend((c, lv + 1) for c in items if isinstance(c, (dict, list)))
    return False


def _has_surrogate(value: Any) -> bool:
    """Whether some string (or key) of the parsed ``value`` holds a lone surrogate."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            if not is_unicode(v):
                return True
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return False


def is_unicode(text: str) -> bool:
    """Whether ``text`` is a sequence of Unicode scalar values (no lone surrogate)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def wtf8(text: str) -> bytes:
    """The bytes of a JSON string as stored: UTF-8, a lone surrogate as its three-byte
    generalized UTF-8 form (``\\ud800`` -> ED A0 80)."""
    return text.encode("utf-8", "surrogatepass")


def shown(text: str) -> str:
    """``text`` as every output writes it: unchanged when it is valid Unicode, else the UTF-8
    decoding of :func:`wtf8`'s bytes with each maximal invalid subpart replaced by U+FFFD (a
    lone surrogate becomes three U+FFFD, one per byte, as for a .params name)."""
    return text if is_unicode(text) else wtf8(text).decode("utf-8", "replace")


def shown_value(value: Any) -> Any:
    """A JSON value with every string and key passed through :func:`shown`."""
    if isinstance(value, str):
        return shown(value)
    if isinstance(value, dict):
        return {shown(k): shown_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shown_value(v) for v in value]
    return value
