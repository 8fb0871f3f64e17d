"""Small Construct pieces shared by the generated grammars."""

from __future__ import annotations

from typing import Any

from construct import Adapter, GreedyBytes, Int64ul, Prefixed

_Str = Prefixed(Int64ul, GreedyBytes)


class _TextAdapter(Adapter):
    """A length-prefixed string decoded as UTF-8 without losing undecodable bytes."""

    def _decode(self, obj: bytes, context: Any, path: str) -> str:
        return obj.decode("utf-8", "surrogateescape")

    def _encode(self, obj: str, context: Any, path: str) -> bytes:
        return obj.encode("utf-8", "surrogateescape")


_Text = _TextAdapter(_Str)


def _era(ctx: Any) -> tuple[int, ...]:
    era = getattr(ctx._params, "era", None)
    return tuple(era) if era is not None else (999, 0)
