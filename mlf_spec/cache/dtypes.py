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


@cache
def _patterns() -> list[tuple[re.Pattern[str], dict]]:
    out = []
    for row in _table.ROWS:
        if row["code_max"] is not None:  # custom[...] codes: not a cache dtype
            continue
        body = re.escape(row["spelling"]).replace(r"\{bits\}", r"(?P<bits>[0-9]+)")
        out.append((re.compile(body + r"(?:x(?P<lanes>[0-9]+))?"), row))
    return out


@cache
def parse(text: str) -> CacheDType | None:
    """The dtype ``text`` spells in some TVM version, or None if no version parses it. Where
    versions differ (``bool``), the newest reading wins; ``since``/``until`` span the
    versions that parse the spelling."""
    found: list[tuple[dict, int, int]] = []
    for pattern, row in _patterns():
        m = pattern.fullmatch(text)
        if m is None:
            continue
        bits = int(m.group("bits")) if "bits" in m.groupdict() and m.group("bits") else row["bits"]
        if bits is None or (row["bits"] is not None and bits != row["bits"]) or not 0 < bits < 256:
            continue
        lanes = int(m.group("lanes")) if m.group("lanes") else 1
        if not 0 < lanes < 0x8000:
            continue
        found.append((row, bits, lanes))
    if not found:
        return None
    since = min(((r["since"] or (0,)) for r, _, _ in found), default=None)
    untils = [r["until"] for r, _, _ in found]
    until = None if any(u is None for u in untils) else max(u for u in untils if u is not None)
    row, bits, lanes = found[-1]
    np_name = None
    widths = row["numpy_bits"] if row["numpy_bits"] is not None else ([row["bits"]] if row["bits"] else [])
    if row["numpy"] and bits in widths:
        np_name = row["numpy"].replace("{bits}", str(bits))
    return CacheDType(text, row["code"], bits, lanes, np_name, since if since != (0,) else None, until)


def spelling_of(np_type: np.dtype) -> str:
    """The spelling dump_tensor_cache writes for a NumPy/ml_dtypes type (DataType's
    _NUMPY_DTYPE_TO_STR: the NumPy name, ``bfloat16``, ``float8_e4m3fn``, ...)."""
    return np.dtype(np_type).name
