"""Moving a cache between its versions (spec/tables/cache_layouts.yaml): 1 is
``ndarray-cache.json`` (TVM 0.16 to 0.21), 2 is ``tensor-cache.json`` (0.22 on). The index's
content is the same in both; a step renames the index and its bf16 copy, spells float8
dtypes as the target's loaders parse them, and adds the md5sum that a pre-release cache
lacks. All or nothing: the new folder is written beside the output and renamed in; a cache
that the loaders cannot read is refused."""

from __future__ import annotations

import json
import os
import posixpath
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from mlf_spec.errors import MigrationError

from . import codec, dtypes
from .folder import locate
from .index import B16_NAMES, INDEX_NAMES

#: float8 spellings before 0.20 (775e05064b) and after.
_OLD_FLOAT8 = {"e4m3_float8": "float8_e4m3fn", "e5m2_float8": "float8_e5m2"}
_NEW_FLOAT8 = {v: k for k, v in _OLD_FLOAT8.items()}


@dataclass
class Plan:
    """What a migration did: ``source``/``target`` versions, the changes made, ``notes``
    on what the target's loaders of some versions still cannot read, and ``refused_by``:
    (TVM version, rule, message) for each of the target's readers (:data:`READERS_OF`)
    whose loaders reject the result."""

    source: int
    target: int
    changes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    refused_by: list[tuple[str, str, str]] = field(default_factory=list)

    def to_dict(self) -> dict:
        """The JSON form."""
        return {"from": self.source, "to": self.target, "changes": self.changes, "notes": self.notes,
                "refused_by": [{"tvm": v, "rule": r} for v, r, _ in self.refused_by]}


def _readers_of() -> dict[int, tuple[str, ...]]:
    """The TVM versions that judge a cache of each version: the releases that read it
    (spec/tables/cache_layouts.yaml: from the layout's ``since`` to the next one's), the first
    and the last of them and each where a reading rule starts (spec/verdicts/cache_read_rules.yaml;
    a rule that only ends leaves a subset, which the versions before already judge)."""
    from mlf_spec.generated import cache_layouts_table, cache_read_rules_rules, tvm_versions
    from mlf_spec.versions import label

    starts = sorted({r["version"]: r["since"] for r in cache_layouts_table.ROWS if r["since"]}.items())
    rule_sinces = {r["since"] for r in cache_read_rules_rules.RULES if r.get("since")}
    out = {}
    for n, (version, lo) in enumerate(starts):
        hi = starts[n + 1][1] if n + 1 < len(starts) else None
        last = (hi[0], hi[1] - 1) if hi else tvm_versions.NEWEST
        inside = sorted(v for v in rule_sinces | {lo} if lo <= v <= last)
        out[version] = tuple(label(v) for v in dict.fromkeys([*inside, last]))
    return out


#: The TVM versions whose loaders judge a migrated cache of each version (see _readers_of):
#: {1: ("0.16", "0.20", "0.21"), 2: ("0.22", "0.27")} for the releases the spec describes.
READERS_OF = _readers_of()


def _refusals(lazy: codec.LazyCache, version: int) -> list[tuple[str, str, str]]:
    """(TVM version, rule, message) for each reader of cache ``version`` that rejects ``lazy``."""
    from mlf_spec._text import printable

    from .verdict import verdict

    out = []
    for tvm in READERS_OF.get(version, ()):
        v = verdict(lazy, tvm)
        if v.verdict in ("rejects", "crashes"):
            first = next((r for r in v.reasons if r.verdict == v.verdict), None)
            out.append((tvm, first.rule if first else v.verdict, printable(first.message) if first else ""))
    return out


def migrate(src: str | os.PathLike[str], out: str | os.PathLike[str], target: int, *, replace: bool = False,
            old_float8: bool = False) -> Plan:
    """Write the cache at ``src`` as version ``target`` into the new folder ``out``.
    ``old_float8`` (downgrades) spells float8 dtypes as TVM before 0.20 does. The new index
    is written a record at a time (:func:`index_pieces`), never held as a tree of dicts."""
    from mlf_spec._io import atomic_directory, check_output

    if target not in INDEX_NAMES:
        raise MigrationError(f"cache version {target}: the versions are {sorted(INDEX_NAMES)}")
    check_output(out, inputs=[src, locate(src)[0]], directory=True)  # never over, around or inside the input
    held = [codec.open(src)]  # the input, let go once the result is written (not held while it is read)
    try:
        lazy = held[0]
        source = lazy.index.version or (2 if lazy.index_name.startswith("tensor") else 1)
        plan = Plan(source, target)
        if lazy.index_name != INDEX_NAMES[target]:
            plan.changes.append(f"index {lazy.index_name} -> {INDEX_NAMES[target]}")
        rename = _NEW_FLOAT8 if old_float8 else _OLD_FLOAT8
        md5s = _changes(lazy, rename, plan)
        b16_src = lazy.folder / B16_NAMES[source] if source in B16_NAMES else None
        _refuse_collisions(lazy, target)
        del lazy
        with atomic_directory(Path(out), replace=replace) as tmp:
            written = _write_tree(held[0], tmp / INDEX_NAMES[target], rename, md5s)
            held.pop().close()
            if b16_src is not None and b16_src.is_file() and not b16_src.is_symlink():
                shutil.copyfile(b16_src, tmp / B16_NAMES[target])
                if B16_NAMES[source] != B16_NAMES[target]:
                    plan.changes.append(f"bf16 index {B16_NAMES[source]} -> {B16_NAMES[target]}")
            # all or nothing: the loaders' checks hold on the result (whose index may be longer
            # than the input's, by its indentation, and so than the cap on what is read); the
            # same reading gives the target readers' verdicts (the index is read once)
            with codec.open(tmp / INDEX_NAMES[target], max_index=max(codec.MAX_INDEX, written)) as result:
                plan.refused_by = _refusals(result, target)
    finally:
        for lazy in held:
            lazy.close()
    return plan


def _write_tree(lazy: codec.LazyCache, index: Path, rename: dict[str, str], md5s: dict[int, str]) -> int:
    """Copy the shards of ``lazy`` beside ``index`` and write the new index there; its length."""
    for i, shard in enumerate(lazy.index.shards):
        _copy_shard(lazy, i, index.parent / shard.data_path)
    written = 0
    with open(index, "w", encoding="utf-8") as f:
        for piece in index_pieces(lazy.index.raw, rename, md5s):
            f.write(piece)
            written += len(piece)
    return written


def _changes(lazy: codec.LazyCache, rename: dict[str, str], plan: Plan) -> dict[int, str]:
    """Note each dtype spelled anew and each md5sum added (shard by shard) in ``plan``, and
    its notes on the target; the md5sum of each shard that has none, by shard."""
    import hashlib

    md5s: dict[int, str] = {}
    since_020 = False
    for i, shard in enumerate(lazy.index.shards):
        for t in shard.tensors:
            dtype = t.dtype
            if dtype in rename:
                plan.changes.append(f"{t.name}: dtype {dtype} -> {rename[dtype]}")
                dtype = rename[dtype]
            since_020 = since_020 or (dtypes.parse(dtype) or _none).since == (0, 20)
        if not shard.has_md5:
            h = hashlib.md5(usedforsecurity=False)
            for block in lazy.shard_blocks(i):
                h.update(block)
            md5s[i] = h.hexdigest()
            plan.changes.append(f"{shard.data_path}: md5sum added")
    if plan.target == 1 and since_020:
        plan.notes.append("float8 dtypes spelled for TVM 0.20 and 0.21; TVM 0.16 to 0.19 need "
                          "--old-float8 (e4m3_float8 / e5m2_float8)")
    return md5s


def index_pieces(raw: bytes, rename: dict[str, str], md5s: dict[int, str]) -> Iterator[str]:
    """The index ``raw`` with each dtype in ``rename`` spelled anew and the md5sums of
    ``md5s`` added (after the shard's other keys), as ``json.dumps(doc, indent=4)`` writes
    it, in pieces: each record is parsed and written alone. A document msgspec does not
    split (NaN literals, which Python's json reads) is parsed whole instead."""
    try:
        top = _TOP.decode(raw)
        shards = _LIST.decode(top["records"])
        heads = [_TOP.decode(s) for s in shards]
    except (msgspec.DecodeError, msgspec.ValidationError, KeyError, RecursionError):
        yield _whole(raw, rename, md5s)
        return
    del shards
    yield "{"
    for k, (key, value) in enumerate(top.items()):
        yield ("," if k else "") + "\n" + _IND + json.dumps(key) + ": "
        if key != "records":
            yield _indented(json.loads(bytes(value)), 1)
            continue
        if not heads:
            yield "[]"
            continue
        yield "["
        for i, head in enumerate(heads):
            yield ("," if i else "") + "\n" + _IND * 2
            yield from _shard_pieces(head, rename, md5s.get(i))
        yield "\n" + _IND + "]"
    yield "\n}"


_IND = " " * 4
_quote = json.encoder.encode_basestring_ascii  # json.dumps's spelling of a string (ensure_ascii)
_TOP = msgspec.json.Decoder(dict[str, msgspec.Raw])
_LIST = msgspec.json.Decoder(list[msgspec.Raw])


def _indented(value: object, level: int) -> str:
    """``value`` as json.dumps(..., indent=4) writes it at nesting ``level``."""
    return json.dumps(value, indent=4).replace("\n", "\n" + _IND * level)


_KEY_AT_5 = "\n" + _IND * 5
_ITEM_AT_6 = ",\n" + _IND * 6


def _record_text(rec: dict) -> str:
    """``_indented(rec, 4)`` for a tensor record, the common values (strings, integers, lists of
    integers) written here rather than by json's encoder; any other record through it."""
    parts = []
    for key, value in rec.items():
        kind = type(value)
        if kind is str:
            text = _quote(value)
        elif kind is int:
            text = int.__repr__(value)
        elif kind is list and all(type(v) is int for v in value):
            text = ("[\n" + _IND * 6 + _ITEM_AT_6.join(map(int.__repr__, value)) + _KEY_AT_5 + "]") if value else "[]"
        else:
            return _indented(rec, 4)
        parts.append(_quote(key) + ": " + text)
    if not parts:
        return "{}"
    return "{" + _KEY_AT_5 + ("," + _KEY_AT_5).join(parts) + "\n" + _IND * 4 + "}"


def _shard_pieces(head: dict, rename: dict[str, str], md5: str | None) -> Iterator[str]:
    """One shard record at nesting level 2, its tensor records one at a time."""
    yield "{"
    items = list(head.items())
    for k, (key, value) in enumerate(items):
        yield ("," if k else "") + "\n" + _IND * 3 + json.dumps(key) + ": "
        if key != "records":
            yield _indented(json.loads(bytes(value)), 3)
            continue
        records = _LIST.decode(value)
        if not records:
            yield "[]"
            continue
        out = ["["]
        for j, piece in enumerate(records):
            rec = json.loads(bytes(piece))
            if rec["dtype"] in rename:
                rec["dtype"] = rename[rec["dtype"]]
            out.append(("," if j else "") + "\n" + _IND * 4 + _record_text(rec))
            if len(out) >= 4096:
                yield "".join(out)
                out = []
        out.append("\n" + _IND * 3 + "]")
        yield "".join(out)
    if md5 is not None:
        yield ("," if items else "") + "\n" + _IND * 3 + '"md5sum": ' + json.dumps(md5)
    yield "\n" + _IND * 2 + "}"


def _whole(raw: bytes, rename: dict[str, str], md5s: dict[int, str]) -> str:
    doc = json.loads(raw)
    for i, s in enumerate(doc["records"]):
        for rec in s["records"]:
            if rec["dtype"] in rename:
                rec["dtype"] = rename[rec["dtype"]]
        if i in md5s:
            s["md5sum"] = md5s[i]
    return json.dumps(doc, indent=4)


def _refuse_collisions(lazy: codec.LazyCache, target: int) -> None:
    """A shard whose file would be the new index or its bf16 copy (``ndarray-cache.json``
    as a shard's name, or the index itself as a shard) is refused: the new index would
    overwrite the shard's copy and leave a cache the loaders cannot read."""
    names = {INDEX_NAMES[target]: "the new index", B16_NAMES[target]: "the new bf16 index"}
    for shard in lazy.index.shards:
        what = names.get(posixpath.normpath(shard.data_path))
        if what is not None:
            raise lazy.index.error(f"the shard {shard.data_path!r} has the name of {what}; the migrated cache "
                                   "would lose the shard (rename the shard first)", f"{shard.path}.dataPath",
                                   MigrationError)


def _copy_shard(lazy: codec.LazyCache, i: int, dst: Path) -> None:
    """Copy shard ``i`` to ``dst`` by pread blocks; a shard that shrinks or grows while it is
    copied is an MlfError (its record's size would no longer hold)."""
    size = lazy.shard_size(i)
    src = str(lazy.folder / lazy.index.shards[i].data_path)
    dst.parent.mkdir(parents=True, exist_ok=True)
    done = 0
    with open(dst, "wb") as fout:
        for block in lazy.shard_blocks(i):
            fout.write(block)
            done += len(block)
    if done != size or lazy.shard_size(i) != size:
        raise MigrationError(f"the shard changed while it was read ({size} bytes, then {lazy.shard_size(i)})",
                             file=src)


class _None:
    since = None


_none = _None()
