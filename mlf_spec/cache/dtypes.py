"""TVM dtype spellings as a tensor cache stores them (``"float32"``, ``"bfloat16"``, ``"int4"``),
read through the DLDataType table (spec/tables/dtype_codes.yaml): element width, lanes and
the NumPy / ml_dtypes type whose bytes are the stored bytes."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

import numpy as np

from mlf_spec.generated import dtype_codes_table as _table


@dataclass(frozen=True, slots=True)
class CacheDType:
    """A dtype string of a cache record as TVM parses it (StringToDLDataType)."""

    text: str
    code: int
    bits: int
    lanes: int
    numpy_name: str | None
    since: tuple[int, ...] | None
    until: tuple[int, ...] | None
    #: the spelling TVM prints for it (``int08`` -> ``int8``, ``float32x1`` -> ``float32``)
    canonical: str = ""

    def stored_nbytes(self, numel: int) -> int:
        """Bytes TVM's Tensor of ``numel`` elements holds (GetDataSize: bits x lanes, rounded up)."""
        return (numel * self.bits * self.lanes + 7) // 8

    @property
    def numpy(self) -> np.dtype | None:
        """The NumPy/ml_dtypes element type of the stored bytes (None: TVM-only type)."""
        return _numpy(self.numpy_name) if self.numpy_name and self.lanes == 1 else None

    def known_in(self, version: tuple[int, ...]) -> bool:
        """Whether TVM ``version`` parses this spelling."""
        return (self.since is None or version >= self.since) and (self.until is None or version < self.until)


@cache
def _numpy(name: str) -> np.dtype | None:
    if name == "bool":
        return np.dtype(np.bool_)
    if hasattr(np, name) and name[0] in "iuf" and not name.startswith("float8"):
        return np.dtype(name).newbyteorder("<")
    try:
        import ml_dtypes
    except ImportError:  # pragma: no cover - ml_dtypes is a core dependency
        return None
    t = getattr(ml_dtypes, name, None)
    return np.dtype(t) if t is not None else None


#: The index versions' reader ranges: ndarray-cache.json is read by 0.16 to 0.21, tensor-cache.json
#: from 0.22 (spec/tables/cache_layouts.yaml); None: an index of another name, any version.
READERS: dict[int | None, tuple[tuple[int, int], tuple[int, int] | None]] = {
    1: ((0, 16), (0, 22)), 2: ((0, 22), None), None: ((0, 16), None)}
#: The largest bits (DLDataType.bits, uint8) and lanes (uint16) the C++ parser accepts: past them
#: tvm-ffi 0.27 says "Bits value 256 is out of range for uint8_t" / "Lanes value 65536 ...".
MAX_BITS, MAX_LANES = 255, 65535
#: the spellings the parser reads as the void type, (3, 0, 0): String2DLDataType's
#: ``s.length() == 0 || s == "void"`` (include/tvm/runtime/data_type.h, 0.16), tvm-ffi's
#: StringToDLDataType (0.27: ``dtype("")`` and ``dtype("void")`` are (3, 0, 0))
VOID_SPELLINGS, VOID_CODE = frozenset({"", "void"}), 3
_DIGITS_KEPT = 6  # more significant digits than this are past both bounds whatever they are


def _number(digits: str) -> int:
    """The value of a run of decimal digits as strtoul reads it (leading zeros allowed), without
    int() on thousands of digits: a value of more than 6 significant digits is returned as 10**6."""
    digits = digits.lstrip("0") or "0"
    return int(digits) if len(digits) <= _DIGITS_KEPT else 10 ** _DIGITS_KEPT


@cache
def _patterns() -> list[tuple[re.Pattern[str], dict]]:
    out = []
    for row in _table.ROWS:
        if row["code_max"] is not None or not row["tvm_named"]:  # custom[...] codes, complex: no TVM spelling
            continue
        body = re.escape(row["spelling"]).replace(r"\{bits\}", r"(?P<bits>[0-9]+)")
        if row["kind"] == "handle":  # the parser reads bits and lanes after "handle" as after any name
            body += r"(?P<bits>[0-9]+)?"  # (spells_lanes is the printer's: it prints neither)
        lanes = r"(?:x(?P<lanes>[0-9]+))?" if row["spells_lanes"] or row["kind"] == "handle" else ""
        out.append((re.compile(body + lanes), row))
    return out


def _overlaps(row: dict, readers: tuple[tuple[int, int], tuple[int, int] | None]) -> bool:
    lo, hi = readers
    return (row["until"] is None or row["until"] > lo) and (hi is None or row["since"] is None or row["since"] < hi)


@cache
def parse(text: str, version: int | None = None) -> CacheDType | None:
    """The dtype ``text`` spells for the loaders of index ``version`` (1 ndarray-cache.json: TVM
    0.16 to 0.21; 2 tensor-cache.json: 0.22 on; None: any of them), as the C++ parser reads it:
    bits and lanes are decimal digits with leading zeros allowed (``int08`` is int8), bits 1 to
    255, lanes 1 to 65535 (``x1`` is one lane), ``handle`` takes bits (64 when none: ``handle64``
    is ``handle``) and lanes (``handlex2``) as any name does, the empty string and ``void`` are
    the void type (code 3, 0 bits, 0 lanes: no stored bytes whatever the shape); a spelling TVM never had
    (``complex64``, ``custom[...]``) is None. Where the rows of the range differ (``bool``), the
    newest reading wins (also for an older index: its width and NumPy type are those the size
    rules use); ``since``/``until`` span the versions that parse the spelling. The
    grammar page: generated/docs/cache_dtypes.md."""
    if text in VOID_SPELLINGS:
        return CacheDType(text, VOID_CODE, 0, 0, None, None, None, "void")
    found: list[tuple[dict, int, int]] = []
    readers = READERS.get(version, READERS[None])
    in_range = False
    for pattern, row in _patterns():
        m = pattern.fullmatch(text)
        if m is None:
            continue
        groups = m.groupdict()
        bits = _number(groups["bits"]) if groups.get("bits") else row["bits"]
        if row["kind"] == "handle" and not groups.get("bits"):
            bits = 64  # handle's default width
        if bits is None or (row["bits"] is not None and bits != row["bits"]) or not 0 < bits <= MAX_BITS:
            continue
        lanes = _number(groups["lanes"]) if groups.get("lanes") else 1
        if not 0 < lanes <= MAX_LANES:
            continue
        found.append((row, bits, lanes))
        in_range = in_range or _overlaps(row, readers)
    if not in_range:  # the reading is the newest row's, whether a loader of the index parses it is the range's
        return None
    since = min(((r["since"] or (0,)) for r, _, _ in found), default=None)
    untils = [r["until"] for r, _, _ in found]
    until = None if any(u is None for u in untils) else max(u for u in untils if u is not None)
    row, bits, lanes = found[-1]
    np_name = None
    widths = row["numpy_bits"] if row["numpy_bits"] is not None else ([row["bits"]] if row["bits"] else [])
    if row["numpy"] and bits in widths:
        np_name = row["numpy"].replace("{bits}", str(bits))
    canonical = row["spelling"].replace("{bits}", str(bits)) + (f"x{lanes}" if lanes > 1 and row["spells_lanes"] else "")
    return CacheDType(text, row["code"], bits, lanes, np_name, since if since != (0,) else None, until, canonical)


@cache
def python_reads(text: str) -> bool:
    """Whether TVM's Python loader reads a tensor of this spelling as TVM means it: its
    ``np.frombuffer(..., dtype=<the string>)`` knows the spelling with the right width
    (``bfloat16`` and the float8 spellings it special-cases included); ``int08``, ``float32x1``,
    ``handle`` and ``int4`` it does not."""
    dt = parse(text)
    if dt is None:
        return False
    if text == "bfloat16" or text in _PY_FLOAT8:
        return True
    if text not in _NUMPY_NATIVE:
        import ml_dtypes  # noqa: F401 - tvmjs imports it, which registers its names with NumPy (float8_e4m3)

    try:
        t = np.dtype(text)
    except TypeError:
        return False
    return t.itemsize * 8 == dt.bits and dt.lanes == 1 and t.kind in "biuf"


_PY_FLOAT8 = {"float8_e4m3fn", "float8_e5m2", "e4m3_float8", "e5m2_float8"}
#: spellings NumPy parses the same with or without ml_dtypes loaded: checking them needs no
#: import of ml_dtypes (0.8 s of CPU here, most of a remote `check`)
_NUMPY_NATIVE = frozenset({"bool", "float16", "float32", "float64"} | {f"{s}int{b}" for s in ("", "u")
                                                                  for b in (8, 16, 32, 64)})


def spelling_of(np_type: np.dtype) -> str:
    """The spelling dump_tensor_cache writes for a NumPy/ml_dtypes type (DataType's
    _NUMPY_DTYPE_TO_STR: the NumPy name, ``bfloat16``, ``float8_e4m3fn``, ...)."""
    return np.dtype(np_type).name
