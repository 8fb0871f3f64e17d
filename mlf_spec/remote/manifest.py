"""Integrity you can pin: ``mlf-spec cache manifest DIR|URL`` lists the index and every shard of
a cache with its size, SHA-256 and SRI ``sha384-`` value (what a web page's ``integrity``
attribute and WebLLM's ``integrity`` fields take); ``check --manifest FILE`` compares a cache
with it and names each file that differs. On the Hub the LFS SHA-256 of the tree API is
compared without downloading a shard; elsewhere the shards without a known SHA-256 are
streamed once."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from mlf_spec.errors import MalformedError, MlfError

from .verify import Digest, digest_bytes

FORMAT = "mlf-spec-cache-manifest"
VERSION = 1


def build(source: str | os.PathLike[str], *, options: Any = None, progress: Any = None) -> dict[str, Any]:
    """The manifest of the cache at ``source`` (a local folder or index, or a remote URL)."""
    from . import is_remote

    if is_remote(source):
        from .cache import open_remote
        from .verify import digests

        with open_remote(os.fspath(source), strict=False, options=options) as lazy:
            found = digests(lazy, progress=progress, pin=True)
            return _document(lazy, found)
    from mlf_spec.cache import codec

    with codec.open(source, strict=False) as local:
        return _document(local, local_digests(local))


def local_digests(lazy: Any) -> dict[int, Digest]:
    """Each present shard's Digest for a local cache (read by pread, a block at a time)."""
    out: dict[int, Digest] = {}
    for i in range(len(lazy.index.shards)):
        if lazy.shard_size(i) is None:
            continue
        md5, sha256, sha384 = hashlib.md5(usedforsecurity=False), hashlib.sha256(), hashlib.sha384()
        n = 0
        for block in lazy.shard_blocks(i):
            md5.update(block)
            sha256.update(block)
            sha384.update(block)
            n += len(block)
        out[i] = Digest(n, md5.hexdigest(), sha256.hexdigest(), sha384.hexdigest())
    return out


def _document(lazy: Any, found: dict[int, Digest]) -> dict[str, Any]:
    files = [_entry(lazy.index_name, digest_bytes(lazy.index.raw))]
    listed = {lazy.index_name}
    for i, shard in enumerate(lazy.index.shards):
        if shard.data_path in listed:
            continue
        d = found.get(i)
        if d is None:
            raise MlfError("the shard does not exist: a manifest pins every file", file=str(lazy.folder / shard.data_path))
        listed.add(shard.data_path)
        files.append(_entry(shard.data_path, d))
    return {"format": FORMAT, "version": VERSION, "index": lazy.index_name, "files": files}


def _entry(path: str, d: Digest) -> dict[str, Any]:
    return {"path": path, "size": d.size, "sha256": d.sha256, "integrity": d.sri}


def dumps(manifest: dict[str, Any]) -> str:
    """The manifest's JSON text (one file per line, stable order)."""
    head = {k: v for k, v in manifest.items() if k != "files"}
    lines = ",\n".join("    " + json.dumps(f) for f in manifest["files"])
    return json.dumps(head)[:-1] + ', "files": [\n' + lines + "\n]}\n"


def load(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A manifest file (MalformedError if it is not one)."""
    file = os.fspath(path)
    try:
        doc = json.loads(Path(file).read_bytes())
    except OSError as exc:
        raise MlfError(f"cannot read the manifest: {exc.strerror or exc}", file=file) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise MalformedError(f"the manifest is not JSON: {exc}", file=file) from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or not isinstance(doc.get("files"), list):
        raise MalformedError(f"not an mlf-spec cache manifest (format {FORMAT!r} with a 'files' list)", file=file)
    for k, f in enumerate(doc["files"]):
        if not (isinstance(f, dict) and isinstance(f.get("path"), str) and isinstance(f.get("sha256"), str)
                and isinstance(f.get("size"), int)):
            raise MalformedError("a file entry needs path, size and sha256", file=file, field=f"files[{k}]")
    return doc


def needs_bytes(lazy: Any, manifest: dict[str, Any]) -> set[int]:
    """The shards whose SHA-256 is not known without reading them (none on the Hub's LFS)."""
    known = {f["path"] for f in manifest["files"]}
    out = set()
    for i, shard in enumerate(lazy.index.shards):
        st = lazy.stat(i) if hasattr(lazy, "stat") else None
        if shard.data_path in known and (st is None or st.sha256 is None) and lazy.shard_size(i) is not None:
            out.add(i)
    return out


def differences(lazy: Any, manifest: dict[str, Any], found: dict[int, Digest]) -> list[tuple[str, str]]:
    """``(file, what differs)`` for each file of the cache or the manifest that does not
    match (``found``: shard digests already computed; Hub LFS SHA-256 used otherwise)."""
    pinned = {f["path"]: f for f in manifest["files"]}
    out: list[tuple[str, str]] = []
    index = pinned.get(lazy.index_name)
    if manifest.get("index") not in (None, lazy.index_name):
        out.append((lazy.index_name, f"the manifest pins the index {manifest['index']!r}, the cache has "
                    f"{lazy.index_name!r}"))
    if index is None:
        out.append((lazy.index_name, "the index is not in the manifest"))
    else:
        d = digest_bytes(lazy.index.raw)
        if d.size != index["size"] or d.sha256 != index["sha256"].lower():
            out.append((lazy.index_name, f"the index differs: {d.size} bytes, SHA-256 {d.sha256}; the manifest pins "
                        f"{index['size']} bytes, {index['sha256']}"))
    seen = {lazy.index_name}
    for i, shard in enumerate(lazy.index.shards):
        rel = shard.data_path
        if rel in seen:
            continue
        seen.add(rel)
        want = pinned.get(rel)
        if want is None:
            out.append((rel, "the shard is not in the manifest"))
            continue
        size = lazy.shard_size(i)
        if size is None:
            out.append((rel, "the shard is missing"))
            continue
        got = found.get(i)
        st = lazy.stat(i) if hasattr(lazy, "stat") else None
        sha = got.sha256 if got is not None and got.sha256 else (st.sha256.lower() if st is not None and st.sha256 else None)
        if size != want["size"]:
            out.append((rel, f"{size} bytes; the manifest pins {want['size']}"))
        elif sha is not None and sha != want["sha256"].lower():
            out.append((rel, f"SHA-256 {sha}; the manifest pins {want['sha256']}"))
    for rel in pinned:
        if rel not in seen:
            out.append((rel, "in the manifest, not in the cache's index"))
    return out
