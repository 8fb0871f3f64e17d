"""The facts mapping the generated finding rows (generated/<name>_rows.py) read.

A check module extracts the facts of one part (a tensor record, a shard, a name) and calls
the rows of its subject. Values that every row may test are stored; texts and offsets that
only a message needs are made on the first read by the functions of the subject's table
(:func:`lazy`), from the stored facts, so a part that breaks no rule costs no formatting and
no closure."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar


class Facts(dict[str, Any]):
    """The facts of one part; a fact not stored is made by ``MAKE[fact](facts)`` on first read."""

    __slots__ = ()
    MAKE: ClassVar[Mapping[str, Callable[[Facts], Any]]] = {}

    def __missing__(self, key: str) -> Any:
        value = self[key] = self.MAKE[key](self)
        return value


def lazy(name: str, make: Mapping[str, Callable[[Facts], Any]]) -> type[Facts]:
    """The Facts class of a subject whose facts ``make`` gives (a function of the stored facts each)."""
    return type(name, (Facts,), {"__slots__": (), "MAKE": make})


__all__ = ["Facts", "lazy"]
