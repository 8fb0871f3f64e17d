"""The tensor encodings of a cache record's ``format`` (spec/tables/cache_encodings.yaml):
which dtype each applies to, the stored width, and the f32-to-bf16 codec bit for bit as
tvm.contrib.tvmjs's _convert_f32_to_bf16 / _convert_bf16_to_f32."""

from __future__ import annotations

import numpy as np

from mlf_spec.generated import cache_encodings_table as _table

ENCODINGS: dict[str, dict] = {r["format"]: r for r in _table.ROWS}
#: The formats dump_tensor_cache accepts as encode_format.
WRITABLE = tuple(ENCODINGS)
_CHUNK = 1 << 20  # elements per step of the chunked codecs (bounds the temporary buffers)


def applies(fmt: str, dtype: str) -> bool:
    """Whether encoding ``fmt`` is applied to a tensor of ``dtype`` (else its bytes are raw): the
    C++ loader compares the parsed type, so ``float32x1`` and ``float032`` are float32 (the
    Python loader compares the string and refuses them: tensor.dtype-numpy)."""
    row = ENCODINGS.get(fmt)
    if row is None or row["applies_to"] is None:
        return False
    if dtype == row["applies_to"]:
        return True
    from .dtypes import parse

    dt = parse(dtype)
    return dt is not None and dt.canonical == row["applies_to"]


def stored_bits(fmt: str, dtype: str, dtype_bits: int) -> int:
    """Bits stored per element of a ``dtype`` tensor labelled ``fmt``."""
    if applies(fmt, dtype):
        return ENCODINGS[fmt]["stored_bits"]
    return dtype_bits


# the largest finite bfloat16 as a float32: TVM rounds below it and truncates from it on
_BF16_LIMIT = np.array([0x7F7F0000], dtype="<u4").view("<f4")[0]


def f32_to_bf16(value: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """float32 -> bfloat16 words exactly as dump_tensor_cache stores them (round to nearest
    even inside the finite bfloat16 range, truncation outside it and for NaN)."""
    flat = np.ascontiguousarray(value, dtype="<f4").reshape(-1)
    res = np.empty(flat.size, dtype="<u2") if out is None else out
    for start in range(0, flat.size, _CHUNK):
        v = flat[start:start + _CHUNK]
        data = v.view("<u4")
        inside = (v < _BF16_LIMIT) & (v > -_BF16_LIMIT)
        bias = ((data >> 16) & 1) + np.uint32(0x7FFF)
        bias *= inside
        res[start:start + v.size] = (data + bias) >> 16
    return res


def bf16_to_f32(words: np.ndarray, out: np.ndarray) -> np.ndarray:
    """bfloat16 words -> float32 (``word << 16``), into ``out`` (same number of elements)."""
    dst = out.reshape(-1).view("<u4")
    src = words.reshape(-1)
    for start in range(0, src.size, _CHUNK):
        chunk = src[start:start + _CHUNK]
        np.left_shift(chunk, 16, out=dst[start:start + chunk.size], dtype="<u4", casting="unsafe")
    return out
