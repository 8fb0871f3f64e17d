"""Support for the generated records models: strict by default, lenient on request, and a
JSON dumper that reproduces the options a writer used."""

from __future__ import annotations

import json
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, ValidationInfo, model_validator
from pydantic_core import PydanticCustomError

#: Validation context that keeps unknown keys (``model_extra``) instead of refusing them.
LENIENT: dict[str, Any] = {"lenient": True}
INT_KEY = r"^(0|[1-9][0-9]*)$"


def as_tuple(value: Any) -> Any:
    """JSON arrays arrive as lists; fixed-length heterogeneous arrays are tuples."""
    return tuple(value) if isinstance(value, list) else value


def not_bool(value: Any) -> Any:
    """Refuse true/false where integer constants are expected (pydantic's Literal[1]
    takes True, since True == 1 in Python)."""
    if isinstance(value, bool):
        raise PydanticCustomError("literal_error", "a boolean is not the integer expected here")
    return value


class Record(BaseModel):
    """Base of every generated record. Types are strict (no coercion: ``"1"`` is not an
    int, ``true`` is not an int); unknown keys are refused unless the document is validated
    with ``context=LENIENT``, which keeps them in ``model_extra``."""

    # defer_build: a model's validator is built when it first validates, so that importing
    # a version's models (or a model a command never uses) costs no schema building
    model_config = ConfigDict(extra="allow", strict=True, populate_by_name=True, protected_namespaces=(),
                              defer_build=True)

    OPEN: ClassVar[bool] = False
    KEYED_BY: ClassVar[dict[str, str]] = {}
    INT_KEYED: ClassVar[tuple[str, ...]] = ()
    ALIASES: ClassVar[dict[str, str]] = {}

    @model_validator(mode="after")
    def _known_keys(self, info: ValidationInfo) -> Any:
        extra = self.__pydantic_extra__
        if extra and not self.OPEN and not (isinstance(info.context, dict) and info.context.get("lenient")):
            raise PydanticCustomError("unknown_keys", "unknown key(s) {keys}",
                                      {"keys": ", ".join(repr(k) for k in extra), "names": list(extra)})
        for name, key_field in self.KEYED_BY.items():
            value = getattr(self, name)
            if isinstance(value, dict):
                for key, item in value.items():
                    got = getattr(item, key_field, key)
                    if got != key:
                        raise PydanticCustomError(
                            "keyed_by", "key {key!r} differs from its {field} {value!r}",
                            {"key": key, "field": key_field, "value": got, "at": [name, key, key_field]})
        return self


def unknown_keys(value: Any, path: tuple = ()) -> list[tuple[tuple, str]]:
    """(path, key) of every unknown key kept by a lenient validation, depth first."""
    out: list[tuple[tuple, str]] = []
    if isinstance(value, Record):
        if not value.OPEN:
            out += [(path, k) for k in (value.__pydantic_extra__ or {})]
        for name in type(value).model_fields:
            if name in value.model_fields_set:
                out += unknown_keys(getattr(value, name), path + (type(value).ALIASES.get(name, name),))
    elif isinstance(value, dict):
        for k, v in value.items():
            out += unknown_keys(v, path + (k,))
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            out += unknown_keys(v, path + (i,))
    return out


def to_data(value: Any, numeric_keys: bool = False, _int_keys: bool = False) -> Any:
    """Plain JSON data of a record: declared keys that were set, in declaration order, then
    unknown keys. With ``numeric_keys``, maps declared with int keys get int keys (as the
    writer's dicts had: Python's sort_keys then orders them numerically)."""
    if isinstance(value, Record):
        out: dict[Any, Any] = {}
        cls = type(value)
        for name in cls.model_fields:
            if name in value.model_fields_set:
                out[cls.ALIASES.get(name, name)] = to_data(getattr(value, name), numeric_keys,
                                                           numeric_keys and name in cls.INT_KEYED)
        for k, v in (value.__pydantic_extra__ or {}).items():
            out[k] = to_data(v, numeric_keys)
        return out
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
