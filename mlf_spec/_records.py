"""Validation of JSON documents against the generated records models.

The generated models (``generated/*_models.py``) are strict; this module turns pydantic's
errors into :class:`Issue` objects whose path is a readable JSON path
(``modules.add.memory.sids[0].size_bytes``) resolved against the document itself, so
union and discriminator tags never leak into it. It also reads JSON text the way every
format's reader does (:func:`load_json`); pydantic is imported only when a model validates,
so the read path that validates with the generated plain validators never loads it.
"""

from __future__ import annotations

import json
import math
import re
from typing import TYPE_CHECKING, Any, cast

from .errors import Issue as Issue  # its home is mlf_spec.errors; the readers take it from here
from .errors import ValidationError

if TYPE_CHECKING:
    import pydantic

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*$")


def json_path(parts: tuple | list) -> str:
    """``("modules", "add", "memory", "sids", 0)`` -> ``modules.add.memory.sids[0]``."""
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        elif _IDENT.match(str(p)):
            out += ("." if out else "") + str(p)
        else:
            key = str(p)
            readable = key.encode("utf-8", "surrogatepass").decode("utf-8", "replace") == key
            out += f"[{json.dumps(key, ensure_ascii=not readable)}]"
    return out


def _resolve(doc: Any, loc: tuple, missing: bool = False) -> tuple:
    """Keep the parts of a pydantic location that are keys or indices of ``doc`` (and, for a
    missing key, the key itself); union members, tags and validator names are dropped."""
    out: list[Any] = []
    cur = doc
    for i, part in enumerate(loc):
        if isinstance(cur, dict) and isinstance(part, str) and part in cur:
            out.append(part)
            cur = cur[part]
        elif isinstance(cur, list) and isinstance(part, int) and 0 <= part < len(cur):
            out.append(part)
            cur = cur[part]
        elif missing and i == len(loc) - 1 and isinstance(part, str):
            out.append(part)
    return tuple(out)


def issues_of(exc: pydantic.ValidationError, doc: Any) -> list[Issue]:
    """Readable issues of a pydantic error raised while validating ``doc``."""
    out: list[Issue] = []
    seen: set[tuple[str, str]] = set()
    for err in exc.errors(include_url=False):
        etype = err.get("type", "")
        loc = _resolve(doc, tuple(err.get("loc", ())), missing=etype == "missing")
        ctx = err.get("ctx") or {}
        if etype == "unknown_keys":
            for key in ctx.get("names", []):
                item = (json_path(loc + (key,)), "unknown key")
                if item not in seen:
                    seen.add(item)
                    out.append(Issue(item[0], "unknown key", "unknown-key"))
            continue
        if etype == "keyed_by":
            at = tuple(ctx.get("at", ()))
            item = (json_path(loc + at), err["msg"])
        elif etype == "missing":
            item = (json_path(loc), "required key is missing")
        elif etype == "extra_forbidden":
            out.append(Issue(json_path(loc), "unknown key", "unknown-key"))
            continue
        else:
            item = (json_path(loc), _message(err))
        if item not in seen:
            seen.add(item)
            out.append(Issue(*item))
    return out


def _message(err: dict[str, Any]) -> str:
    msg = str(err.get("msg", "invalid"))
    got = err.get("input")
    if err.get("type") in ("literal_error", "string_pattern_mismatch", "greater_than_equal", "too_long",
                           "too_short", "int_type", "string_type", "list_type", "dict_type", "bool_type",
                           "model_type", "model_attributes_type", "tuple_type", "none_required",
                           "union_tag_invalid", "union_tag_not_found"):
        text = json.dumps(got, ensure_ascii=False) if _jsonable(got) else type(got).__name__
        if len(text) > 60:
            text = text[:57] + "..."
        msg = f"{msg} (got {text})"
    return msg


def _jsonable(v: Any) -> bool:
    try:
        json.dumps(v)
    except (TypeError, ValueError):
        return False
    return True


def validate(model: type[pydantic.BaseModel], doc: Any, *, lenient: bool = False) -> tuple[Any, list[Issue]]:
    """Validate ``doc``: (instance or None, issues). In lenient mode unknown keys are kept
    and reported as ``unknown-key`` issues; otherwise they make the document invalid."""
    import pydantic

    from mlf_spec.generated._recordlib import LENIENT, unknown_keys

    try:
        value = model.model_validate(doc, strict=True, context=LENIENT if lenient else None)
    except pydantic.ValidationError as exc:
        return None, issues_of(exc, doc)
    except RecursionError:
        return None, [Issue("", "document is nested too deeply")]
    extra = [Issue(json_path(path + (key,)), "unknown key", "unknown-key") for path, key in unknown_keys(value)]
    return value, extra


def raise_issues(issues: list[Issue], file: str | None, what: str) -> None:
    """Raise the first issue as a ValidationError carrying all of them."""
    first = issues[0]
    more = f" (and {len(issues) - 1} more)" if len(issues) > 1 else ""
    raise ValidationError(f"{what}: {first.message}{more}", issues=issues, file=file, field=first.path or None)


class _DuplicateKey(ValueError):
    pass


class _NotJsonConstant(ValueError):
    pass


class _HugeInt(ValueError):
    pass


def _no_constants(name: str) -> Any:
    # Python's json accepts NaN, Infinity and -Infinity; JSON (RFC 8259) and dmlc's reader do not
    raise _NotJsonConstant(name)


#: Python's limit on converting decimal text to int (sys.int_max_str_digits' default).
MAX_INT_DIGITS = 4300


def _json_int(text: str) -> int:
    # beyond the limit int() raises a ValueError of its own; no JSON writer of these formats
    # writes such an integer (TVM's are 64-bit at most)
    if len(text) - text.startswith("-") > MAX_INT_DIGITS:
        raise _HugeInt(f"an integer of {len(text) - text.startswith('-')} digits (more than {MAX_INT_DIGITS})")
    return int(text)


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e400: Python reads it as inf, which no JSON writer can write back
        raise _NotJsonConstant(f"{text[:40]} (beyond the range of a double)")
    return value


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for k, _ in pairs:
            if k in seen:
                raise _DuplicateKey(k)
            seen.add(k)
    return out


# A \uD800-\uDFFF escape: JSON syntax allows it alone, but then the string is not Unicode.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _lone_surrogate(doc: Any) -> tuple | None:
    """The JSON path of the first key or string value holding a lone surrogate, or None."""
    stack: list[tuple[Any, tuple]] = [(doc, ())]
    while stack:
        value, path = stack.pop()
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return path
        elif isinstance(value, dict):
            for k, v in value.items():
                try:
                    k.encode("utf-8")
                except UnicodeEncodeError:
                    return (*path, k)
                stack.append((v, (*path, k)))
        elif isinstance(value, list):
            stack.extend((v, (*path, i)) for i, v in enumerate(value))
    return None


def load_json(data: bytes | bytearray | memoryview | str, file: str | None, what: str) -> Any:
    """Parse JSON text (UTF-8 bytes or str); raises ValidationError with line and column,
    and for a string that is not Unicode (an unpaired surrogate escape such as ``\udcff``,
    which no UTF-8 writer can produce and no validator can read) with its JSON path."""
    raw_str = not isinstance(data, (bytes, bytearray, memoryview))
    if not raw_str:
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValidationError(f"{what} is not UTF-8: {exc.reason}", file=file, offset=exc.start) from None
    else:
        text = cast(str, data)  # not bytes-like: a str, by the signature
    if text.startswith("\ufeff"):
        raise ValidationError(f"{what} starts with a byte order mark", file=file, offset=0)
    try:
        doc = json.loads(text, strict=False, object_pairs_hook=_no_duplicate_keys, parse_constant=_no_constants,
                         parse_float=_finite, parse_int=_json_int)
        if _SURROGATE_ESCAPE.search(text) or (raw_str and not text.isascii()):
            where = _lone_surrogate(doc)
            if where is not None:
                raise ValidationError(f"{what} has a string with an unpaired surrogate (not Unicode text)",
                                      file=file, field=json_path(where) or None)
        return doc
    except _NotJsonConstant as exc:
        raise ValidationError(f"{what} is not JSON: {exc.args[0]} is not a JSON value", file=file) from None
    except _HugeInt as exc:
        raise ValidationError(f"{what} holds {exc.args[0]}; these formats' readers take 64-bit integers",
                              file=file) from None
    except _DuplicateKey as exc:
        raise ValidationError(f"{what} has the key {exc.args[0]!r} twice in one object (JSON readers keep only one)",
                              file=file) from None
    except json.JSONDecodeError as exc:
        raise ValidationError(f"{what} is not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
                              file=file, offset=len(text[:exc.pos].encode("utf-8"))) from None
    except RecursionError:
        raise ValidationError(f"{what} is nested too deeply", file=file) from None
