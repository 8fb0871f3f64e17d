"""DLDataType codes, their TVM spellings and NumPy types, by TVM version (dialect).

The code table lives in spec/tables/dtype_codes.yaml; the generator turns it into
``mlf_spec.generated.dtype_codes_table`` with its rows and the version ranges
(dialects) over which the rows stay the same. This module only looks things up.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache, lru_cache
from typing import Any

import numpy as np

from mlf_spec.errors import MlfError, UnknownDtypeError, UnsupportedError
from mlf_spec.generated import dtype_codes_table as _table


class Dialect:
    """A range of TVM versions over which DLDataType codes mean the same thing.
    The instances in ``DIALECTS`` are the only ones; they compare by identity."""

    __slots__ = ("id", "since", "until", "rows")

    def __init__(self, id: str, since: tuple[int, ...], until: tuple[int, ...] | None, rows: tuple[int, ...]) -> None:
        self.id, self.since, self.until, self.rows = id, since, until, rows

    def __repr__(self) -> str:
        return f"Dialect({self.id!r})"

    @property
    def label(self) -> str:
        """Human description, e.g. 'TVM 0.13 to 0.19'."""
        start = ".".join(map(str, self.since))
        if self.until is None:
            return f"TVM {start} and later"
        end = list(self.until)
        end[-1] -= 1
        last = ".".join(map(str, end))
        return f"TVM {start}" if last == start else f"TVM {start} to {last}"


DIALECTS: tuple[Dialect, ...] = tuple(
    Dialect(d["id"], tuple(d["since"]), tuple(d["until"]) if d["until"] else None, tuple(d["rows"]))
    for d in _table.DIALECTS
)
LATEST = DIALECTS[-1]


def _parse_version(text: str) -> tuple[int, int] | None:
    parts = text.strip().lstrip("v").split(".")
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


def dialect(name: str | Dialect | None) -> Dialect:
    """The dialect named ``name``: a dialect id (``v0.13``), any TVM version string
    (``0.16``, ``0.16.dev0``, ``0.27.0.post1``) or ``latest``/None for the newest."""
    if isinstance(name, Dialect):
        return name
    if name is None or name == "latest":
        return LATEST
    for d in DIALECTS:
        if d.id == name:
            return d
    version = _parse_version(name)
    if version is None:
        raise UnsupportedError(
            f"unknown dtype dialect {name!r}; use a TVM version like 0.16 or one of "
            + ", ".join(d.id for d in DIALECTS)
        )
    for d in DIALECTS:
        if d.since <= version and (d.until is None or version < d.until):
            return d
    return DIALECTS[0]


class DType:
    """A DLDataType as one dialect reads it: ``name`` is TVM's spelling in that dialect,
    ``numpy`` the NumPy/ml_dtypes type whose bytes are the stored bytes (None: keep raw;
    resolved on first use, so that ml_dtypes is imported only when a tensor needs it)."""

    __slots__ = ("code", "bits", "lanes", "name", "numpy_name", "_numpy", "known", "tvm_named")

    def __init__(self, code: int, bits: int, lanes: int, name: str, numpy_name: str | None, known: bool,
                 tvm_named: bool) -> None:
        self.code, self.bits, self.lanes, self.name = code, bits, lanes, name
        self.numpy_name, self.known, self.tvm_named = numpy_name, known, tvm_named
        self._numpy: np.dtype | None | bool = False  # False: not resolved yet

    @property
    def numpy(self) -> np.dtype | None:
        """The NumPy/ml_dtypes type whose bytes are the stored bytes, or None."""
        if self._numpy is False:
            t = _numpy_type(self.numpy_name) if self.numpy_name is not None else None
            self._numpy = t if t is not None and t.itemsize == stored_bytes(self.bits, (1,)) else None
        return self._numpy  # type: ignore[return-value]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DType) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def _key(self) -> tuple:
        return (self.code, self.bits, self.lanes, self.name, self.numpy_name, self.known)

    def __repr__(self) -> str:
        return f"DType({self.name!r}, code={self.code}, bits={self.bits}, lanes={self.lanes})"


def _row_matches(row: dict[str, Any], code: int, bits: int) -> bool:
    hi = row["code_max"] if row["code_max"] is not None else row["code"]
    if not row["code"] <= code <= hi:
        return False
    return row["bits"] is None or row["bits"] == bits


def _find_row(d: Dialect, code: int, bits: int) -> dict[str, Any] | None:
    candidates = [_table.ROWS[i] for i in d.rows if _row_matches(_table.ROWS[i], code, bits)]
    exact = [r for r in candidates if r["bits"] is not None]
    if exact:
        return exact[0]
    return candidates[0] if candidates else None


@cache
def _numpy_type(name: str) -> np.dtype:
    if name in (
        "bool",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "float16",
        "float32",
        "float64",
        "complex64",
        "complex128",
    ):
        return np.dtype(name).newbyteorder("<") if name != "bool" else np.dtype(np.bool_)
    import ml_dtypes  # imported only when a tensor needs it

    return np.dtype(getattr(ml_dtypes, name))


_LOOKUPS: dict[tuple[Dialect, int, int, int], DType] = {}


def lookup(d: Dialect, code: int, bits: int, lanes: int) -> DType:
    """How dialect ``d`` reads (code, bits, lanes) (cached)."""
    key = (d, code, bits, lanes)
    found = _LOOKUPS.get(key)
    if found is None:
        found = _LOOKUPS[key] = _lookup(d, code, bits, lanes)
    return found


def _lookup(d: Dialect, code: int, bits: int, lanes: int) -> DType:
    row = _find_row(d, code, bits)
    if row is None:
        return DType(code, bits, lanes, f"unknown(code={code},bits={bits},lanes={lanes})", None, False, False)
    name = row["spelling"].replace("{bits}", str(bits)).replace("{code}", str(code))
    signed_lanes = lanes - 0x10000 if lanes >= 0x8000 else lanes
    if signed_lanes < 0:
        name += f"xvscalex{-signed_lanes}"
    elif lanes != 1:
        name += f"x{lanes}"
    np_name = None
    widths = (
        row["numpy_bits"]
        if row["numpy_bits"] is not None
        else ([row["bits"]] if row["bits"] is not None else [])
    )
    if row["numpy"] and lanes == 1 and bits in widths:
        np_name = row["numpy"].replace("{bits}", str(bits))
    return DType(code, bits, lanes, name, np_name, True, bool(row["tvm_named"]))


def stored_bytes(bits: int, shape: tuple[int, ...]) -> int:
    """Data bytes a tensor record stores for ``shape`` at ``bits`` per lane (the spec's
    derive rule for ``data_byte_size``; lanes are not stored)."""
    from mlf_spec.generated.tensor_fast import new_tensor_record

    return new_tensor_record(dtype_code=0, dtype_bits=bits, dtype_lanes=1, shape=shape).data_byte_size


class DialectChoice:
    """Which dialect a file was read in, and whether that choice mattered."""

    __slots__ = ("dialect", "ambiguous", "candidates", "detected")

    def __init__(self, dialect: Dialect, ambiguous: bool, candidates: tuple[Dialect, ...], detected: bool) -> None:
        self.dialect, self.ambiguous, self.candidates, self.detected = dialect, ambiguous, candidates, detected

    def __repr__(self) -> str:
        return f"DialectChoice({self.dialect.id}, ambiguous={self.ambiguous})"

    @property
    def note(self) -> str:
        """One line for humans."""
        if not self.detected:
            return f"dialect {self.dialect.id} given by the caller"
        if not self.candidates:
            return f"no dialect defines every dtype code; read as {self.dialect.id}"
        if self.ambiguous:
            others = ", ".join(c.id for c in self.candidates if c != self.dialect)
            return f"ambiguous: read as {self.dialect.id} ({self.dialect.label}); {others} would name some dtypes differently"
        return f"read as {self.dialect.id}; every candidate dialect reads it the same way"


def detect(dtypes: Iterable[tuple[int, int, int]]) -> DialectChoice:
    """Pick the dialect for a set of stored (code, bits, lanes).

    Candidates are the dialects that define every code. Among them the one in which the
    most of these dtypes are what that TVM writes for a NumPy type wins (so a file with
    (1, 1, 1) and (6, 8, 1) reads as TVM 0.13's bool and e4m3_float8, not as 0.23's
    uint1 and bool); ties go to the newest. ``ambiguous`` says whether another candidate
    would name or type some tensor differently.
    """
    distinct = sorted(set(dtypes))
    candidates = tuple(d for d in DIALECTS if all(lookup(d, c, b, la).known for c, b, la in distinct))
    if not candidates:
        return DialectChoice(LATEST, bool(distinct), (), True)

    def score(d: Dialect) -> int:
        return sum(1 for c, b, _ in distinct if (_find_row(d, c, b) or {}).get("writes"))

    best = max(candidates, key=lambda d: (score(d), d.since))
    readings = {tuple((lookup(d, *t).name, lookup(d, *t).numpy_name) for t in distinct) for d in candidates}
    return DialectChoice(best, len(readings) > 1, candidates, True)


def given(d: Dialect) -> DialectChoice:
    """The choice record for a dialect the caller named."""
    return DialectChoice(d, False, (d,), False)


@lru_cache(maxsize=256)
def _from_numpy(np_type: np.dtype, d: Dialect) -> tuple[int, int, int]:
    fallback = None
    for i in d.rows:
        row = _table.ROWS[i]
        if not row["numpy"]:
            continue
        widths = row["numpy_bits"] if row["numpy_bits"] is not None else [row["bits"]]
        for bits in widths:
            if _numpy_type(row["numpy"].replace("{bits}", str(bits))) == np_type:
                if row["writes"]:
                    return (row["code"], bits, 1)
                fallback = fallback or (row["code"], bits, 1)
    if fallback:
        return fallback
    raise UnsupportedError(f"NumPy dtype {np_type} has no DLDataType in dialect {d.id} ({d.label})")


def from_numpy(np_type: Any, d: Dialect = LATEST) -> tuple[int, int, int]:
    """The (code, bits, lanes) that TVM of dialect ``d`` writes for a NumPy dtype."""
    t = np.dtype(np_type)
    if t.byteorder == ">":
        t = t.newbyteorder("<")
    elif t.byteorder == "=" and t.itemsize > 1:
        t = t.newbyteorder("<")
    try:
        return _from_numpy(t, d)
    except TypeError as exc:  # unhashable odd dtypes
        raise UnsupportedError(f"NumPy dtype {t} cannot be stored: {exc}") from None


def require_known(dt: DType, d: Dialect, field: str, offset: int) -> None:
    """Raise UnknownDtypeError if ``dt`` is not defined in ``d``."""
    if not dt.known:
        raise UnknownDtypeError(
            f"DLDataType (code={dt.code}, bits={dt.bits}, lanes={dt.lanes}) is not defined in dialect {d.id} "
            f"({d.label}); read with strict=False to keep it as stored bytes",
            field=field,
            offset=offset,
        )


__all__ = [
    "DIALECTS",
    "LATEST",
    "DType",
    "Dialect",
    "DialectChoice",
    "MlfError",
    "detect",
    "dialect",
    "from_numpy",
    "given",
    "lookup",
    "require_known",
]
