"""What the hypothesis strategies draw: :class:`Data` (bytes whose repr is short) and
:class:`Broken` (an input broken in one named way, with what it imitates) and :class:`Edge`
(an input at a rule's bound, on a side the reference's reading decides)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

#: Byte strings up to this long keep the ordinary bytes repr.
SHORT = 64


class Data(bytes):
    """Bytes (``isinstance(x, bytes)`` holds, every bytes operation works) whose repr
    summarises a large value, so a failing example prints one line instead of 100 kB:
    ``<30720 bytes 2e2f00000000... sha256 1a2b3c4d5e6f>``."""

    __slots__ = ()

    def __repr__(self) -> str:
        if len(self) <= SHORT:
            return bytes.__repr__(self)
        return f"<{len(self)} bytes {self[:12].hex()}... sha256 {hashlib.sha256(self).hexdigest()[:12]}>"

    def __reduce__(self) -> tuple:
        return (Data, (bytes(self),))


@dataclass(frozen=True, repr=False)
class Broken:
    """An input broken in one named way, as every ``broken_*`` strategy draws it.

    ``kind`` names the break (see the strategy's ``*_BROKEN_KINDS``), ``data`` holds the
    bytes, ``expect`` says what a careful reader does with them: ``"error"`` (refuse: an
    ``MlfError``) or ``"finding"`` (read them and report the break: a blob finding, a
    check finding). The other attributes say what the input imitates, where it applies:
    ``era`` the TVM version whose writer or numbering (``"0.24"``, ``"0.16"``), ``format``
    the blob layout (``"ffi"``, ``"legacy"``), ``version`` and ``style`` the MLF metadata
    version and document style; ``where`` the place of the break where the kind alone does not
    say it (``body.module-cuda.payload.count``: a body field, or a field of the payload of
    a module kind), "" otherwise."""

    kind: str
    data: Data
    expect: str = "error"
    era: str | None = None
    format: str | None = None  # noqa: A003
    version: int | None = None
    style: str | None = None
    where: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.data, Data):
            object.__setattr__(self, "data", Data(self.data))

    def __repr__(self) -> str:
        parts = [f"kind={self.kind!r}", f"data={self.data!r}", f"expect={self.expect!r}"]
        parts += [f"{k}={getattr(self, k)!r}" for k in ("era", "format", "version", "style")
                  if getattr(self, k) is not None]
        if self.where:
            parts.append(f"where={self.where!r}")
        return f"Broken({', '.join(parts)})"


@dataclass(frozen=True, repr=False)
class Edge:
    """An input one value away from a rule's bound, as the ``edge_*`` strategies draw it:
    valid or not, the reference's reading says which (an edge is drawn for where readers
    differ, not for a known outcome). ``kind`` names the edge (``length``, ``tree.rows-short``),
    ``where`` the field it moved, ``era`` the TVM version the input is read as, ``format``
    the blob layout."""

    kind: str
    data: Data
    era: str
    format: str  # noqa: A003
    where: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.data, Data):
            object.__setattr__(self, "data", Data(self.data))

    def __repr__(self) -> str:
        return f"Edge(kind={self.kind!r}, data={self.data!r}, era={self.era!r}, format={self.format!r}, where={self.where!r})"


__all__ = ["Broken", "Data", "Edge"]
