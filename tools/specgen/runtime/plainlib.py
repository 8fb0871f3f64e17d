"""Base class and data helpers of the generated plain typed records (``generated/*_plain.py``):
standard library only, so that checking and inspecting need no pydantic. :func:`to_data` and
:func:`dump_json` serve the pydantic records too (``_recordlib.Record`` is a
:class:`DataRecord` as well)."""

from __future__ import annotations

import json
from typing import Any


class DataRecord:
    """A typed record that :func:`to_data` turns back into JSON data (:meth:`_data`)."""

    __slots__ = ()

    def _data(self, numeric_keys: bool) -> dict[Any, Any]:
        """The record's JSON object: declared keys that are set, in spec order (values through
        :func:`to_data`), then unknown keys."""
        raise NotImplementedError


class PlainRecord(DataRecord):
    """Base of the typed records: built from a document the validators accept (its values
    are used as they are, not copied: read them, do not change them). Attributes are the
    keys (absent optional keys are None); ``fields_set`` names the keys present, ``extra``
    holds unknown keys (kept by lenient reading) and :func:`to_data` gives the document back
    in spec key order."""

    __slots__ = ("_doc",)
    _doc: dict[str, Any]
    #: the spec's record name, JSON keys in spec order, their attribute names, int-keyed maps
    RECORD = ""
    KEYS: tuple[str, ...] = ()
    IDENTS: tuple[str, ...] = ()
    INT_KEYED: tuple[str, ...] = ()

    @property
    def fields_set(self) -> frozenset[str]:
        """The attribute names of the keys the document has."""
        return frozenset(i for k, i in zip(self.KEYS, self.IDENTS) if k in self._doc)

    @property
    def extra(self) -> dict[str, Any]:
        """Keys the record does not declare, with their values."""
        return {k: v for k, v in self._doc.items() if k not in self.KEYS}

    def __eq__(self, other: object) -> bool:  # by value, so not hashable (as the pydantic models)
        return type(other) is type(self) and to_data(self) == to_data(other)

    def __repr__(self) -> str:
        inner = ", ".join(f"{i}={getattr(self, i)!r}" for k, i in zip(self.KEYS, self.IDENTS) if k in self._doc)
        return f"{type(self).__name__}({inner})"

    def _data(self, numeric_keys: bool) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        cls = type(self)
        doc = self._doc
        for key, ident in zip(cls.KEYS, cls.IDENTS):
            if key in doc:
                out[key] = to_data(getattr(self, ident), numeric_keys, numeric_keys and ident in cls.INT_KEYED)
        for k, v in doc.items():
            if k not in cls.KEYS:
                out[k] = to_data(v, numeric_keys)
        return out


def to_data(value: Any, numeric_keys: bool = False, _int_keys: bool = False) -> Any:
    """Plain JSON data of a typed record (plain or pydantic): declared keys that are set, in
    spec order, then unknown keys. With ``numeric_keys``, maps declared with int keys get int
    keys (as the writer's dicts had: Python's sort_keys then orders them numerically)."""
    if isinstance(value, DataRecord):
        return value._data(numeric_keys)
    if isinstance(value, dict):
        return {(int(k) if _int_keys and isinstance(k, str) and k.isdigit() else k): to_data(v, numeric_keys)
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_data(v, numeric_keys) for v in value]
    return value


def dump_json(value: Any, indent: int | None = None, sort_keys: bool = False, ensure_ascii: bool = True,
              trailing_newline: bool = False) -> str:
    """``json.dumps`` with a writer's options; records go through :func:`to_data` first."""
    text = json.dumps(to_data(value, numeric_keys=True), indent=indent, sort_keys=sort_keys, ensure_ascii=ensure_ascii)
    return text + "\n" if trailing_newline else text
