"""TVM versions as mlf-spec names them: one parser for every command, API and strategy.

A TVM version is written as on the command line: ``"0.27"``, ``"v0.21"``, ``"0.16.dev0"``,
``"0.27.0.post1"``; inside mlf-spec it is the tuple ``(major, minor)``. The versions the
spec describes run from ``OLDEST`` to ``NEWEST`` (spec/eras.yaml).

    >>> parse("0.16.dev0"), label((0, 27)), known("0.27")
    ((0, 16), '0.27', (0, 27))
"""

from __future__ import annotations

import warnings
from typing import overload

from mlf_spec.errors import UnsupportedError

#: A TVM version as (major, minor).
Version = tuple[int, int]


def parse(text: str | tuple[int, ...]) -> Version | None:
    """(major, minor) of a TVM version string (``0.16``, ``v0.21``, ``0.16.dev0``,
    ``0.27.0.post1``), or None if it is not one. A tuple is taken as it is."""
    if isinstance(text, tuple):
        return (int(text[0]), int(text[1]) if len(text) > 1 else 0) if text else None
    parts = str(text).strip().lstrip("v").split(".")
    if len(parts) < 2:
        return None
    minor = ""
    for ch in parts[1]:
        if not ch.isdigit():
            break
        minor += ch
    if not parts[0].isdigit() or not minor:
        return None
    return int(parts[0]), int(minor)


def required(text: str | tuple[int, ...]) -> Version:
    """:func:`parse`, raising ValueError for anything that is not a TVM version."""
    v = parse(text)
    if v is None:
        raise ValueError(f"a TVM version like '0.27' is expected, got {text!r}")
    return v


def known(text: str) -> Version:
    """The (major, minor) of a TVM version the spec describes (spec/eras.yaml: OLDEST to
    NEWEST); UnsupportedError naming the range otherwise."""
    from mlf_spec.generated.tvm_versions import NEWEST, OLDEST

    version = parse(text)
    lo, hi = label(OLDEST), label(NEWEST)
    if version is None:
        raise UnsupportedError(f"{text!r} is not a TVM version; use one like 0.16 (the spec describes {lo} to {hi})")
    if not OLDEST <= version <= NEWEST:
        raise UnsupportedError(f"TVM {text} is not a version the spec describes ({lo} to {hi})")
    return version


def label(version: str | tuple[int, ...]) -> str:
    """(0, 27) -> ``"0.27"`` (a string is normalised the same way)."""
    major, minor = required(version)
    return f"{major}.{minor}"


@overload
def public(version: None, what: str = "era") -> None: ...
@overload
def public(version: str | tuple[int, ...], what: str = "era") -> Version: ...
def public(version: str | tuple[int, ...] | None, what: str = "era") -> Version | None:
    """Parse a TVM version given to a public function: a string such as ``"0.27"``; a
    tuple still works for one release, with a DeprecationWarning."""
    if version is None:
        return None
    if isinstance(version, tuple):
        warnings.warn(f"{what}={version!r}: name TVM versions as strings, e.g. {what}="
                      f"{label(version)!r}; tuples stop working in the next release",
                      DeprecationWarning, stacklevel=3)
    return required(version)


def range_label(lo: tuple[int, ...], hi: tuple[int, ...] | None) -> str:
    """'0.16' for a one-version range [lo, hi), '0.13-0.19' for a longer one, '0.26 on'
    for one open past the newest version the spec describes (``hi`` None or beyond it)."""
    from mlf_spec.generated.tvm_versions import NEWEST

    first = label(lo)
    if hi is None or hi > NEWEST:
        return f"{first} on"
    last = (hi[0], hi[1] - 1)
    return first if last == tuple(lo) else f"{first}-{label(last)}"


__all__ = ["Version", "known", "label", "parse", "public", "range_label", "required"]
