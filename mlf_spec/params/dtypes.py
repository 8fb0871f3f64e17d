"""DLDataType codes, their TVM spellings and NumPy types, by TVM version (dialect).

The code table lives in spec/tables/dtype_codes.yaml; the generator turns it into
``mlf_spec.generated.dtype_codes_table`` with its rows and the version ranges
(dialects) over which the rows stay the same. This module only looks things up.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import cache, lru_cache
from typing import Any

import numpy as np

from mlf_spec import versions as _versions
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

    @property
    def text(self) -> str:
        """How every output names this dialect: its id and its TVM versions, from the spec's
        table, e.g. 'v0.13 (TVM 0.13 to 0.19)'."""
        return f"{self.id} ({self.label})"


DIALECTS: tuple[Dialect, ...] = tuple(
    Dialect(d["id"], tuple(d["since"]), tuple(d["until"]) if d["until"] else None, tuple(d["rows"]))
    for d in _table.DIALECTS
)
LATEST = DIALECTS[-1]


def valid_dialect_names() -> str:
    """The text listing what ``--dialect`` accepts (for messages and help)."""
    from mlf_spec.generated.tvm_versions import NEWEST, OLDEST

    return (", ".join(d.id for d in DIALECTS) + f", or a TVM version from {'.'.join(map(str, OLDEST))} to "
            f"{'.'.join(map(str, NEWEST))} (e.g. 0.16)")


def dialect(name: str | Dialect | None) -> Dialect:
    """The dialect named ``name``: a dialect id (``v0.13``), a TVM version string the spec
    describes (``0.16``, ``0.16.dev0``, ``0.27.0.post1``) or ``latest``/None for the
    newest. Anything else is UnsupportedError listing the valid names."""
    if isinstance(name, Dialect):
        return name
    if name is None or name == "latest":
        return LATEST
    for d in DIALECTS:
        if d.id == name:
            return d
    try:
        version = _versions.known(name)
    except UnsupportedError:
        raise UnsupportedError(f"unknown dtype dialect {name!r}; valid: {valid_dialect_names()}") from None
    return of_version(version)


def of_version(version: tuple[int, ...]) -> Dialect:
    """The dialect whose range holds TVM ``version`` (the oldest for earlier versions)."""
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
        if isinstance(self._numpy, bool):  # only False is stored: not resolved yet
            t = _numpy_type(self.numpy_name) if self.numpy_name is not None else None
            self._numpy = t if t is not None and t.itemsize == stored_bytes(self.bits, (1,)) else None
        return self._numpy

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


@lru_cache(maxsize=4096)
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
    if row["spells_lanes"] and signed_lanes < 0:
        name += f"xvscalex{-signed_lanes}"
    elif row["spells_lanes"] and lanes != 1:
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


def row_of(d: Dialect, code: int, bits: int) -> dict[str, Any] | None:
    """The dtype table row that dialect ``d`` reads (code, bits) with, or None."""
    return _find_row(d, code, bits)


def layout(d: Dialect, code: int, bits: int) -> str:
    """How dialect ``d`` stores (code, bits): ``bytes`` (numel x ceil(bits/8), one element
    per ceil(bits/8) bytes) or ``packed`` (widths that are not a multiple of 8 bit-packed
    in memory, the file holding the packed bytes and then what the writer read past them;
    the table's ``subbyte_layout``)."""
    if bits % 8 == 0:
        return "bytes"
    row = _find_row(d, code, bits)
    return (row or {}).get("subbyte_layout") or "bytes"


@lru_cache(maxsize=1024)
def needs_data(code: int, bits: int) -> bool:
    """Whether the stored bytes of a (code, bits) tensor can tell dialects apart (some
    dialect bounds its byte values: ``data_max``, or one element per byte below 8 bits)."""
    for d in DIALECTS:
        row = _find_row(d, code, bits)
        if row is not None and (row["data_max"] is not None or row["implausible_below"] is not None
                                or (bits < 8 and layout(d, code, bits) == "bytes")):
            return True
    return False


def writable(d: Dialect, code: int, bits: int) -> bool:
    """Whether TVM of dialect ``d`` could allocate (so write) a (code, bits) tensor: the row
    exists and a width that is not a multiple of 8 is one of its ``subbyte_widths``."""
    row = _find_row(d, code, bits)
    if row is None:
        return False
    return bits % 8 == 0 or row["subbyte_widths"] is None or bits in row["subbyte_widths"]


def data_fits(d: Dialect, code: int, bits: int, max_byte: int) -> bool:
    """Whether a writer of dialect ``d`` could have stored bytes whose largest value is
    ``max_byte`` (-1: no bytes) for (code, bits): the row's ``data_max``, and for
    sub-byte widths stored one element per byte, values below 2**bits; ``implausible_below``
    rules out small non-zero maxima (bool bytes read as float8)."""
    row = _find_row(d, code, bits)
    if row is None or max_byte < 0:
        return row is not None
    if row["data_max"] is not None and max_byte > row["data_max"]:
        return False
    if row["implausible_below"] is not None and 0 < max_byte < row["implausible_below"]:
        return False
    return not (bits < 8 and layout(d, code, bits) == "bytes" and max_byte >= (1 << bits))


def meaning(d: Dialect, code: int, bits: int, lanes: int) -> tuple[Any, ...]:
    """What a dialect makes of a triple, apart from its spelling: (kind, NumPy type,
    sub-byte layout). Two dialects read a file the same way when these agree for every
    tensor (a renamed spelling such as e4m3_float8 -> float8_e4m3fn is not a difference)."""
    row = _find_row(d, code, bits)
    if row is None:
        return (None,)
    return (row["kind"], lookup(d, code, bits, lanes).numpy_name, layout(d, code, bits) if bits % 8 else None)


class DialectChoice:
    """Which dialect a file was read in and why.

    ``candidates``: the dialects that define every code of the file and whose writers could
    have stored its bytes; ``header_candidates``: those that define every code (before the
    bytes were looked at); ``ambiguous``: candidates read some tensor differently (kind,
    NumPy type or sub-byte layout); ``detected``: False when the caller named the dialect;
    ``data_conflict``: no dialect's writers could have stored these bytes (the header
    candidates were kept)."""

    __slots__ = ("dialect", "ambiguous", "candidates", "detected", "header_candidates", "data_conflict", "dtypes")

    def __init__(self, dialect: Dialect, ambiguous: bool, candidates: tuple[Dialect, ...], detected: bool,
                 header_candidates: tuple[Dialect, ...] | None = None, data_conflict: bool = False,
                 dtypes: tuple[tuple[int, int, int], ...] = ()) -> None:
        self.dialect, self.ambiguous, self.candidates, self.detected = dialect, ambiguous, candidates, detected
        self.header_candidates = candidates if header_candidates is None else header_candidates
        self.data_conflict = data_conflict
        self.dtypes = dtypes  # the distinct stored (code, bits, lanes) of the file

    def _reading(self, d: Dialect) -> tuple[Any, ...]:
        return tuple(meaning(d, *t) for t in self.dtypes)

    @property
    def same_reading(self) -> tuple[Dialect, ...]:
        """The candidates that read every tensor as the chosen dialect does (itself included)."""
        mine = self._reading(self.dialect)
        return tuple(d for d in self.candidates if d is self.dialect or self._reading(d) == mine) or (self.dialect,)

    @property
    def range_label(self) -> str:
        """The TVM versions whose dialects read the file as chosen, e.g. 'TVM 0.7 to 0.22'."""
        group = self.same_reading
        lo = min(d.since for d in group)
        untils = [d.until for d in group if d.until is not None]
        hi = max(untils) if len(untils) == len(group) else None  # None: open to the newest
        return Dialect("", lo, hi, ()).label

    def differing(self) -> list[tuple[list[str], list[str]]]:
        """The candidates that read some tensor otherwise, grouped by their reading: (dialect
        ids, what they read: '(1,1,1) as uint1 (packed), not bool')."""
        groups: dict[tuple[Any, ...], list[Dialect]] = {}
        same = self.same_reading
        for d in self.candidates:
            if d not in same:
                groups.setdefault(self._reading(d), []).append(d)
        out = []
        for ds in groups.values():
            what = []
            for t in self.dtypes:
                if meaning(ds[0], *t) != meaning(self.dialect, *t):
                    theirs = lookup(ds[0], *t).name + (", packed" if layout(ds[0], t[0], t[1]) == "packed" else "")
                    mine = lookup(self.dialect, *t).name
                    what.append(f"({t[0]},{t[1]},{t[2]}) as {theirs}, not {mine}")
            out.append(([d.id for d in ds], what))
        return out

    def __repr__(self) -> str:
        return f"DialectChoice({self.dialect.id}, ambiguous={self.ambiguous})"

    @property
    def by_data(self) -> bool:
        """True when the stored bytes ruled out some dialect that the codes allow."""
        return not self.data_conflict and len(self.candidates) < len(self.header_candidates)

    @property
    def note(self) -> str:
        """One line for humans."""
        if not self.detected:
            return f"dialect {self.dialect.id} given by the caller"
        if not self.candidates:
            return f"no dialect defines every dtype code; read as {self.dialect.id}"
        data = ""
        if self.by_data:
            ruled = [c.id for c in self.header_candidates if c not in self.candidates]
            data = f"; the stored bytes rule out {', '.join(ruled)}"
        elif self.data_conflict:
            data = "; no dialect's writers store these bytes"
        if self.ambiguous:
            alike = [d.id for d in self.same_reading if d is not self.dialect]
            head = f"ambiguous: read as {self.dialect.id}" + (f", as {', '.join(alike)} read it too "
                                                             f"({self.range_label})" if alike else "")
            others = "; ".join(f"{', '.join(ids)} would read {', '.join(what)}" for ids, what in self.differing())
            return f"{head}; {others}{data}"
        return f"read as {self.dialect.id}; every candidate dialect reads it the same way{data}"

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (``dialect_choice`` in params dump and params check)."""
        return {"chosen": self.dialect.id, "detected": self.detected, "ambiguous": self.ambiguous,
                "candidates": [c.id for c in self.candidates],
                "header_candidates": [c.id for c in self.header_candidates],
                "same_reading": [d.id for d in self.same_reading],
                "by_data": self.by_data, "data_conflict": self.data_conflict, "note": self.note}


def detect(dtypes: Iterable[tuple[int, int, int]], max_bytes: Mapping[tuple[int, int, int], int] | None = None
           ) -> DialectChoice:
    """Pick the dialect for a set of stored (code, bits, lanes).

    Candidates are the dialects that define every code (and could allocate every width:
    :func:`writable`; if none could, the codes alone count) and, where ``max_bytes`` gives the
    largest stored byte of the tensors of a triple (see :func:`needs_data`), whose writers
    could have stored those bytes: a bool holds only 00 and 01, a sub-byte value stored one
    per byte stays below 2**bits. If the bytes fit no dialect, the codes alone decide
    (``data_conflict``). Among the candidates the one in which the most of these dtypes are
    what that TVM writes for a NumPy type wins (so a file with (1, 1, 1) and (6, 8, 1)
    reads as TVM 0.13's bool and e4m3_float8, not as 0.23's uint1 and bool), then the one
    that stores the most sub-byte tensors one element per byte, then the newest.
    ``ambiguous`` says whether another candidate reads some tensor differently.
    """
    distinct = tuple(sorted(set(dtypes)))
    seen = max_bytes or {}
    # a pure function of the distinct triples and their largest bytes: files of the same
    # dtypes (most files hold one or two) share one answer
    return _detect(distinct, tuple(seen[t] if t in seen else None for t in distinct))


@lru_cache(maxsize=512)
def _detect(distinct: tuple[tuple[int, int, int], ...], tops: tuple[int | None, ...]) -> DialectChoice:
    seen = {t: top for t, top in zip(distinct, tops) if top is not None}
    header = tuple(d for d in DIALECTS if all(lookup(d, c, b, la).known for c, b, la in distinct))
    header = tuple(d for d in header if all(writable(d, c, b) for c, b, _ in distinct)) or header
    if not header:
        return DialectChoice(LATEST, bool(distinct), (), True)
    fitting = tuple(d for d in header
                    if all(data_fits(d, c, b, seen[(c, b, la)]) for c, b, la in distinct if (c, b, la) in seen))
    conflict = not fitting
    candidates = fitting or header

    def score(d: Dialect) -> tuple[int, int, tuple[int, ...]]:
        writes = sum(1 for c, b, _ in distinct if (_find_row(d, c, b) or {}).get("writes"))
        per_byte = sum(1 for c, b, _ in distinct if b < 8 and layout(d, c, b) == "bytes")
        return writes, per_byte, d.since

    best = max(candidates, key=score)
    readings = {tuple(meaning(d, *t) for t in distinct) for d in candidates}
    return DialectChoice(best, len(readings) > 1, candidates, True, header, conflict, tuple(distinct))


def readings(choice: DialectChoice, dtype: tuple[int, int, int]) -> dict[str, list[str]]:
    """How the candidate dialects of ``choice`` spell one stored triple: spelling (with
    ``, packed`` for a bit-packed sub-byte layout) -> dialect ids."""
    out: dict[str, list[str]] = {}
    for d in choice.candidates:
        dt = lookup(d, *dtype)
        label = dt.name + (", packed" if layout(d, dtype[0], dtype[1]) == "packed" else "")
        out.setdefault(label, []).append(d.id)
    return out


@cache
def _spelling_pattern() -> Any:
    import re

    alternatives = set()
    for row in _table.ROWS:
        parts = re.split(r"(\{bits\}|\{code\})", row["spelling"])
        alternatives.add("".join(r"[0-9]+" if p in ("{bits}", "{code}") else re.escape(p) for p in parts))
    return re.compile(r"(?:" + "|".join(sorted(alternatives)) + r")(?:x[0-9]+|xvscalex[0-9]+)?")


def is_spelling(text: str) -> bool:
    """Whether ``text`` is a dtype spelling of some TVM version (the table's spellings,
    ``{bits}`` any width, with an optional ``x<lanes>``), e.g. ``float32``, ``int8x4``, ``bool``."""
    return _spelling_pattern().fullmatch(text) is not None


def given(d: Dialect) -> DialectChoice:
    """The choice record for a dialect the caller named."""
    return DialectChoice(d, False, (d,), False)  # no dtypes: same_reading is (d,)


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
    "data_fits",
    "detect",
    "dialect",
    "is_spelling",
    "layout",
    "meaning",
    "needs_data",
    "of_version",
    "readings",
    "row_of",
    "valid_dialect_names",
    "writable",
    "from_numpy",
    "given",
    "lookup",
    "require_known",
]
