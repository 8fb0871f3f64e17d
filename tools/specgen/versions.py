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


def era_condition(since: str | None, until: str | None, era: str = "era", *, minor: bool = False,
                  outside: bool = False) -> list[str]:
    """The comparisons, in the target language, that place the producing TVM version ``era`` in a
    field's or rule's ``[since, until)`` range: all of them hold inside it (``outside``: any of them
    holds outside it). ``era`` is the expression holding the version, compared with version tuples
    (``era >= (0, 14)``) or, with ``minor`` (Kaitai's ``tvm_minor``), with the minor number alone."""
    def spell(v: str) -> str:
        return str(vkey(v)[1]) if minor else repr(vkey(v))

    low, high = ("<", ">=") if outside else (">=", "<")
    out = []
    if since:
        out.append(f"{era} {low} {spell(since)}")
    if until:
        out.append(f"{era} {high} {spell(until)}")
    return out
