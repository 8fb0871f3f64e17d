"""TVM version strings in the spec: their sort key and the check that a spec names only
versions spec/eras.yaml lists (a leaf: the loader and the verdict rules' checks use them)."""

from __future__ import annotations

from typing import Any

from .yamlload import SpecDocument


def vkey(v: str) -> tuple[int, ...]:
    """Sort key of a TVM version string like '0.21'."""
    return tuple(int(p) for p in v.split("."))


def check_version_known(model: Any, doc: SpecDocument, loc: tuple, version: str | None) -> None:
    """Raise the spec error of ``doc`` at ``loc`` when ``version`` is not one of the versions
    spec/eras.yaml lists (``model``: the loaded spec, a :class:`specgen.load.Model`)."""
    if version is None or model.eras is None:
        return
    known = model.boundaries()
    if version not in known:
        raise doc.error(loc, f"version {version} is not listed in {model.eras_doc.rel}; listed: {known}")
