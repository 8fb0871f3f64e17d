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
from dataclasses import dataclass, field
from pathlib import Path

from mlf_spec.errors import MigrationError

from . import codec, dtypes
from .folder import locate
from .index import B16_NAMES, INDEX_NAMES

#: float8 spellings before 0.20 (775e05064b) and after.
_OLD_FLOAT8 = {"e4m3_float8": "float8_e4m3fn", "e5m2_float8": "float8_e5m2"}
_NEW_FLOAT8 = {v: k for k, v in _OLD_FLOAT8.items()}


@dataclass
class Plan:
    """What a migration did: ``source``/``target`` versions, the changes made, and
    ``notes`` on what the target's loaders of some versions still cannot read."""

    source: int
    target: int
    changes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        """The JSON form."""
        return {"from": self.source, "to": self.target, "changes": self.changes, "notes": self.notes}


def migrate(src: str | os.PathLike[str], out: str | os.PathLike[str], target: int, *, replace: bool = False,
            old_float8: bool = False) -> Plan:
    """Write the cache at ``src`` as version ``target`` into the new folder ``out``.
    ``old_float8`` (downgrades) spells float8 dtypes as TVM before 0.20 does."""
    from mlf_spec._io import atomic_directory, check_output

    if target not in INDEX_NAMES:
        raise MigrationError(f"cache version {target}: the versions are {sorted(INDEX_NAMES)}")
    check_output(out, inputs=[src, locate(src)[0]], directory=True)  # never over, around or inside the input
    with codec.open(src) as lazy:
        source = lazy.index.version or (2 if lazy.index_name.startswith("tensor") else 1)
        plan = Plan(source, target)
        doc = json.loads(lazy.index.raw)
        if lazy.index_name != INDEX_NAMES[target]:
            plan.changes.append(f"index {lazy.index_name} -> {INDEX_NAMES[target]}")
        rename = _NEW_FLOAT8 if old_float8 else _OLD_FLOAT8
        for s, shard in zip(doc["records"], lazy.index.shards):
            for rec in s["records"]:
                if rec["dtype"] in rename:
                    plan.changes.append(f"{rec['name']}: dtype {rec['dtype']} -> {rename[rec['dtype']]}")
                    rec["dtype"] = rename[rec["dtype"]]
            if "md5sum" not in s:
                import hashlib

                h = hashlib.md5(usedforsecurity=False)
                for block in lazy.shard_blocks(lazy.index.shards.index(shard)):
                    h.update(block)
                s["md5sum"] = h.hexdigest()
                plan.changes.append(f"{shard.data_path}: md5sum added")
        if target == 1:
            if any((dtypes.parse(t["dtype"]) or _none).since == (0, 20) for s in doc["records"] for t in s["records"]):
                plan.notes.append("float8 dtypes spelled for TVM 0.20 and 0.21; TVM 0.16 to 0.19 need "
                                  "--old-float8 (e4m3_float8 / e5m2_float8)")
        b16_src = lazy.folder / B16_NAMES[source] if source in B16_NAMES else None
        _refuse_collisions(lazy, target)
        with atomic_directory(Path(out), replace=replace) as tmp:
            for i, shard in enumerate(lazy.index.shards):
                _copy_shard(lazy, i, tmp / shard.data_path)
            (tmp / INDEX_NAMES[target]).write_text(json.dumps(doc, indent=4), encoding="utf-8")
            if b16_src is not None and b16_src.is_file() and not b16_src.is_symlink():
                shutil.copyfile(b16_src, tmp / B16_NAMES[target])
                if B16_NAMES[source] != B16_NAMES[target]:
                    plan.changes.append(f"bf16 index {B16_NAMES[source]} -> {B16_NAMES[target]}")
            codec.open(tmp / INDEX_NAMES[target]).close()  # all or nothing: the loaders' checks hold on the result
    return plan


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
