"""The facts mapping the generated finding rows (generated/<name>_rows.py) read.

A check module extracts the facts of one part (a tensor record, a shard, a name) and calls
the rows of its subject. Values that every row may test are stored; texts and offsets that
only a message needs are given as functions and made on the first read, so a part that
breaks no rule costs no formatting."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class Facts(dict[str, Any]):
    """The facts of one part: ``values``, and ``make`` (fact -> function) for those made on
    first read."""

    __slots__ = ("_make",)

    def __init__(self, values: dict[str, Any], make: dict[str, Callable[[], Any]]) -> None:
        super().__init__(values)
        self._make = make

    def __missing__(self, key: str) -> Any:
        value = self[key] = self._make[key]()
        return value


__all__ = ["Facts"]
