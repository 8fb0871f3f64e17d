"""What a remote cache source names: the Hub (``hf://``), an HTTP URL, or any fsspec URL.
Standard library only, so that telling a URL from a path costs nothing at start-up."""

from __future__ import annotations

import re
from dataclasses import dataclass

from mlf_spec.errors import MlfError

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
#: the index names a folder may hold, newest first (spec/tables/cache_layouts.yaml; kept here
#: without importing the generated table so that parsing a URL stays cheap)
INDEX_CANDIDATES = ("tensor-cache.json", "ndarray-cache.json")


def is_remote(path: object) -> bool:
    """Whether ``path`` is a URL (``scheme://...``) rather than a local path."""
    return isinstance(path, str) and _SCHEME.match(path) is not None and not path.startswith("file://")


@dataclass(frozen=True)
class Location:
    """A parsed source: ``kind`` is ``hf``, ``http`` or ``fsspec``; ``url`` as given.
    For ``hf``: ``repo_id``, ``revision`` (None: the default branch) and ``path`` inside the
    repository (a folder, or the index file; "" for the root). For the others ``path`` is the
    whole URL."""

    url: str
    kind: str
    scheme: str
    path: str
    repo_id: str | None = None
    revision: str | None = None
    repo_type: str = "model"

    @property
    def names_index(self) -> bool:
        """Whether the source names the index file itself (``....json``), not its folder."""
        return self.path.rstrip("/").lower().endswith(".json")


_REPO_TYPES = {"datasets": "dataset", "spaces": "space", "models": "model"}


def parse(url: str) -> Location:
    """Parse a remote source (MlfError for one that names no cache location)."""
    m = _SCHEME.match(url)
    if m is None:
        raise MlfError("not a URL", file=url)
    scheme = m.group(1).lower()
    rest = url[m.end():]
    if scheme == "hf":
        parts = [p for p in rest.split("/")]
        repo_type = "model"
        if parts and parts[0] in _REPO_TYPES:
            repo_type = _REPO_TYPES[parts.pop(0)]
        if len(parts) < 2 or not parts[0] or not parts[1]:
            raise MlfError("a Hub source is hf://ORG/REPO[@REVISION][/PATH]", file=url)
        name, _, revision = parts[1].partition("@")
        if not name or (_ and not revision):
            raise MlfError("a Hub source is hf://ORG/REPO[@REVISION][/PATH] (an empty revision after '@')", file=url)
        path = "/".join(p for p in parts[2:] if p)
        if ".." in path.split("/"):
            raise MlfError("a path inside the repository with '..'", file=url)
        from urllib.parse import unquote

        return Location(url, "hf", scheme, path, f"{parts[0]}/{name}", unquote(revision) if revision else None,
                        repo_type)
    if scheme in ("http", "https"):
        return Location(url, "http", scheme, url)
    return Location(url, "fsspec", scheme, url)
