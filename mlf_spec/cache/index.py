"""The index JSON of a tensor cache, read into plain records (spec/records/tensor_cache.yaml):
structure and JSON types are checked here, with the JSON path and byte offset of the first
problem; sizes against the shards are checked by :mod:`mlf_spec.cache.rules`."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Annotated, Any

import msgspec

from mlf_spec.errors import MalformedError, MlfError, ValidationError
from mlf_spec.generated import cache_layouts_table as _layouts

from . import jsonpos

#: Index file names by cache version (spec/tables/cache_layouts.yaml).
INDEX_NAMES: dict[int, str] = {r["version"]: r["index_file"] for r in _layouts.ROWS if r["version"]}
B16_NAMES: dict[int, str] = {r["version"]: r["b16_file"] for r in _layouts.ROWS if r["version"]}
VERSION_OF_NAME: dict[str, int] = {name: v for v, name in INDEX_NAMES.items()}
LATEST = max(INDEX_NAMES)
INT64_MAX = (1 << 63) - 1
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


#: the prefix of the TensorEntry fields that are no key of the index (an index holding it is read
#: by the general path, so that no JSON key is taken for them)
_INTERNAL = "mlf-spec internal:"
_Int64 = Annotated[int, msgspec.Meta(ge=-INT64_MAX - 1, le=INT64_MAX)]


class TensorEntry(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """One tensor record: where its bytes are and how they are encoded (``shard`` and
    ``position`` index the index's lists; ``extra`` holds the keys the writer never writes,
    None when there are none). A compact record (about 100 bytes beside its strings): an
    index of the writer's layout is decoded straight into these (:func:`parse`)."""

    name: str
    shape: tuple[_Int64, ...]
    dtype: str
    format: str
    nbytes: _Int64
    offset: _Int64 = msgspec.field(name="byteOffset")
    # not keys of the index: names no JSON key of a record is taken for (a record holding one
    # of them is read by the general path, see _fast_index)
    shard: int = msgspec.field(default=-1, name=_INTERNAL + "shard")
    position: int = msgspec.field(default=-1, name=_INTERNAL + "position")
    extra: dict[str, Any] | None = msgspec.field(default=None, name=_INTERNAL + "extra")

    @property
    def path(self) -> str:
        """The record's JSON path in the index."""
        return f"records[{self.shard}].records[{self.position}]"


class _FastShard(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    dataPath: str  # noqa: N815 - the JSON key
    format: str
    nbytes: _Int64
    records: list[TensorEntry]
    md5sum: Any = msgspec.UNSET


class _FastIndex(msgspec.Struct, forbid_unknown_fields=True):
    records: list[_FastShard]
    metadata: Any = msgspec.UNSET


_FAST = msgspec.json.Decoder(_FastIndex)


@dataclass(slots=True)
class ShardEntry:
    """One shard record."""

    data_path: str
    format: str
    nbytes: int
    md5sum: str | None
    tensors: list[TensorEntry]
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

    @property
    def tensors(self) -> list[TensorEntry]:
        """Every tensor record, shard by shard, in stored order."""
        return [t for s in self.shards for t in s.tensors]

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
    """The index decoded straight into compact records when it has the writer's layout (the
    keys of spec/records/tensor_cache.yaml and no other, JSON types right, integers in int64,
    RFC 8259 JSON, no lone surrogate); None to take the general path, which reports what is
    wrong or keeps what is unusual. About 3x the index's size in memory, the index included
    (docs/tensor-cache.md), against about 10x for a tree of dicts."""
    if _INTERNAL.encode() in raw:
        return None
    try:
        doc = _FAST.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError, ValueError):
        return None
    shards = []
    layout = "tensor-shards" if version == 2 else "ndarray-shards"
    for i, s in enumerate(doc.records):
        for j, t in enumerate(s.records):
            t.shard, t.position = i, j
        md5 = s.md5sum
        has_md5 = md5 is not msgspec.UNSET
        if not has_md5 and version != 2:
            layout = "ndarray-shards-nomd5"
        shards.append(ShardEntry(s.dataPath, s.format, s.nbytes, md5 if isinstance(md5, str) else None, s.records,
                                 f"records[{i}]", {}, has_md5))
    has_metadata = doc.metadata is not msgspec.UNSET
    metadata = doc.metadata if has_metadata else None
    if _too_deep(metadata, 2):
        raise _depth_error(file)
    return CacheIndex(metadata, has_metadata, shards, file, raw, version, layout, {})


def parse(raw: bytes, file: str, *, name: str | None = None) -> CacheIndex:
    """Read index bytes ``raw`` (``file`` names them in errors, ``name`` is the index's file
    name, which gives the version). Raises :class:`MlfError` if it is not JSON or not a
    cache index, with the JSON path and byte offset."""
    version = VERSION_OF_NAME.get(name) if name is not None else None
    if not raw.startswith(b"\xef\xbb\xbf"):  # a BOM: refused below, with json's message
        fast = _fast_index(raw, file, version)
        if fast is not None:
            return fast
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
    version = VERSION_OF_NAME.get(name) if name is not None else None
    if not raw.startswith(b"\xef\xbb\xbf"):  # a BOM: refused below, with json's message
        fast = _fast_index(raw, file, version)
        if fast is not None:
            return fast
    r = _Reader(raw, file)
    if isinstance(doc, list):
        raise r.fail("a JSON list of per-tensor records: the pre-release layout of c1f304497e (one file per "
                     "tensor), which no released loader reads", "")
    if not isinstance(doc, dict) or "records" not in doc:
        raise r.fail("not a tensor cache index (a JSON object with 'records' is expected)", "")
    records = r.get(doc, "records", "", "list")
    shards: list[ShardEntry] = []
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
        tensors = []
        for j, t in enumerate(r.get(s, "records", sp, "list")):
            tp = f"{sp}.records[{j}]"
            if not isinstance(t, dict):
                raise r.fail("a tensor record must be a JSON object", tp)
            shape = r.get(t, "shape", tp, "list")
            for k, d in enumerate(shape):
                if not _is_int(d):
                    raise r.fail("an extent must be a JSON integer", f"{tp}.shape[{k}]")
                if not -INT64_MAX - 1 <= d <= INT64_MAX:
                    raise r.fail("an extent does not fit in a signed 64-bit integer", f"{tp}.shape[{k}]")
            tensors.append(TensorEntry(
                r.get(t, "name", tp, "str"), tuple(shape), r.get(t, "dtype", tp, "str"), r.get(t, "format", tp, "str"),
                r.get(t, "nbytes", tp, "int"), r.get(t, "byteOffset", tp, "int"), i, j, r.extra(t, "tensor_record") or None))
        if "md5sum" not in s:
            layout = "ndarray-shards-nomd5" if version != 2 else layout
        shards.append(ShardEntry(data_path, fmt, nbytes, md5, tensors, sp, r.extra(s, "shard_record"), "md5sum" in s))
    extra = r.extra(doc, "cache_index")
    # the records' own keys nest 6 levels at most: only metadata and unknown keys can go deeper
    # (each extra dict stands at the level of the record object it was taken from)
    deep = _too_deep(doc.get("metadata"), 2) or _too_deep(extra, 1)
    for sh in shards:
        deep = deep or _too_deep(sh.extra, 3) or any(_too_deep(t.extra, 5) for t in sh.tensors if t.extra)
    if deep:
        raise _depth_error(file)
    out = CacheIndex(doc.get("metadata"), "metadata" in doc, shards, file, raw, version, layout, extra,
                     nonfinite[0])
    if _SURROGATE_ESCAPE.search(raw) is not None:
        out.surrogates = _has_surrogate(doc)
    return out


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
