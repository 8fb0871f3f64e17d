"""Model Library Format archives: open, inspect, write back exactly, build, extract safely.

    >>> from mlf_spec import archive
    >>> with archive.open("model.tar") as a:          # a tarball, a directory or a binary file
    ...     a.version, a.style, list(a.modules)
    ...     mod = a.modules["add"]
    ...     [i.name for i in mod.params.index]         # lazy params index, zero-copy
    ...     mod.graph.input_names()                    # typed GraphExecutor JSON
    ...     assert a.to_bytes() == open("model.tar", "rb").read()   # exact round trip

Reading streams the tar headers (no member data is read until asked for) and refuses unsafe
members (:class:`~mlf_spec.errors.UnsafeArchiveError`). Every member keeps its stored name,
position and header blocks, so writing an archive that was read reproduces it byte for
byte. :func:`build` writes a new archive the way TVM's writer did for the version and style
(layout, ``.`` first, ``./`` names, sorted depth-first order, modes, owners, PAX headers,
metadata dumped with the style's json options). Layouts come from spec/layouts/mlf_layout.yaml
through :mod:`mlf_spec.layout`; metadata models from :mod:`mlf_spec.metadata`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from mlf_spec import tar as _tar
from mlf_spec.errors import MlfError

from . import layout as _layout
from . import metadata as _md
from .archive_model import (
    DEFAULT_MAX_MEMBER_SIZE,
    DEFAULT_MAX_MEMBERS,
    DEFAULT_MAX_TOTAL_SIZE,
    METADATA,
    Archive,
    Member,
    Module,
    Source,
    group_of,
    new_member,
    owner_of,
)
from .archive_open import open


def build(metadata: _md.Metadata | Any, files: Mapping[str, bytes | str], *, version: int | None = None,
          style: str | None = None, mtime: float | Mapping[str, float] | None = None,
          source_owner: tuple[int, int, str, str] | None = None) -> Archive:
    """A new archive laid out as TVM's writer did: ``metadata.json`` dumped with the style's
    json options, the given ``files`` (relative path -> content: codegen files, params,
    Relay/TIR text, graph JSON, ``runtime/...``, ``templates/...``), every parent directory
    plus the directories the writer always created, in TVM's member order, with the
    writer's modes, owners (``root`` for the main tree; ``source_owner``, default the
    current user, for runtime/ and templates/) and ``mtime`` (a float, or per path;
    default now). Write it with :meth:`Archive.write` or :meth:`Archive.to_bytes`."""
    if not isinstance(metadata, _md.Metadata):
        if isinstance(metadata, dict):
            metadata = _md.from_document(metadata, version=version, style=style)
        else:
            raw = _md.dumps(metadata, version, style)
            metadata = _md.parse(raw)
    md: _md.Metadata = metadata
    owner = owner_of(source_owner)
    now = time.time()

    def when(path: str) -> float:
        if mtime is None:
            return now
        if isinstance(mtime, Mapping):
            return mtime.get(path, now)
        return mtime

    contents: dict[str, bytes | None] = {METADATA: md.dumps()}
    for p, data in files.items():
        rel = _tar.normalize(p, file="<build>", offset=None)
        if rel == METADATA:
            raise MlfError("metadata.json comes from the metadata argument", field=p)
        contents[rel] = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    for e, path, _module in _layout.expected(md.version, md.style, md.modules):
        if e["kind"] == "directory" and "{" not in path and path != ".":
            contents.setdefault(path, None)
    for rel in list(contents):
        group = group_of(rel)
        parts = rel.split("/")
        for i in range(1, len(parts)):
            d = "/".join(parts[:i])
            if _layout.GROUP_INFO.get(group_of(d), {}).get("directories", True) and \
                    _layout.GROUP_INFO.get(group, {}).get("directories", True):
                contents.setdefault(d, None)
    members = [new_member(".", None, when("."), "main", owner)]
    members += [new_member(rel, data, when(rel), group_of(rel), owner) for rel, data in contents.items()]
    order = _layout.tvm_order((m.path, m.group) for m in members)
    rank = {p: i for i, p in enumerate(order)}
    members.sort(key=lambda m: rank[m.path])
    a = Archive(members, file="<new>", container="new")
    a._metadata = md
    return a


__all__ = ["DEFAULT_MAX_MEMBERS", "DEFAULT_MAX_MEMBER_SIZE", "DEFAULT_MAX_TOTAL_SIZE", "METADATA", "Archive", "Member", "Module",
           "Source", "build", "open"]
