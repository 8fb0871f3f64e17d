"""What a command wrote, for its ``--json`` line: each file with its size and SHA-256."""

from __future__ import annotations

import hashlib
import os
from typing import Any


def written(path: str) -> dict[str, Any]:
    """``{"output", "bytes", "files": [{"name", "bytes", "sha256"}]}`` for a file, or for a
    folder (its files in sorted order, names relative to it)."""
    names = [path] if not os.path.isdir(path) else sorted(
        os.path.join(root, f) for root, _, fs in os.walk(path) for f in fs)
    files = []
    for name in names:
        h = hashlib.sha256()
        size = 0
        with open(name, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
                size += len(chunk)
        files.append({"name": os.path.relpath(name, path) if name != path else os.path.basename(path),
                      "bytes": size, "sha256": h.hexdigest()})
    return {"output": path, "bytes": sum(f["bytes"] for f in files), "files": files}
