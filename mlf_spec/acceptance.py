"""What a given TVM version's reader accepts: the one place where mlf-spec writes down
TVM's load-time verdicts on ``.params`` files (used by ``strategies.params_bytes(accepted_by=...)``).

TVM versions are named as on the command line: ``"0.27"``, ``"0.16"`` (``"v0.21"`` and
``"0.27.0.post1"`` work too). The rules, from reference/binary-formats.md §2.3-2.6 and
TVM's ``VerifyDataType`` (src/runtime/ndarray.cc) per release, checked against apache-tvm
0.27 in tests/test_strategies_tvm.py:

* every version: the file reads (magic, counts, ``data_byte_size == numel x ceil(bits/8)``,
  device type 1); a tensor whose first extent is not 0 but that holds no data bytes
  (shape ``k x 0``, or 0 bits) is refused from 0.7 ("Invalid DLTensor file format"), and
  before 0.7 any tensor with no data bytes is; lanes of 0x8000 and more (negative, as TVM
  reads them from 0.16) fail to allocate;
* up to 0.20, ``VerifyDataType`` at allocation: lanes >= 1, bits a multiple of 8 and a
  power of two, except (uint, 1) always, (int, 1), (uint, 4), (int, 4) from 0.7
  (f23ac96905) and (code 8, 4 bits) in 0.20 (775e05064b); any code otherwise;
* from 0.21 any code, bits and lanes are allocated, but bit-packed: a tensor whose stored
  bytes (numel x ceil(bits/8)) exceed its packed allocation (ceil(numel x bits x lanes / 8))
  is copied past the end of it, which corrupts the heap (observed: 0.25-0.27 abort on
  int4, uint1, int1, float4 and float6 tensors of 25 elements and more); such a tensor is
  refused here unless it holds at most 24 stored bytes (the smallest allocation glibc
  hands out holds 24, observed to load).

Another project issue turns these verdicts into spec tables (``check --tvm``); when it
lands, :func:`tensor_refusal` reads them instead.
"""

from __future__ import annotations

import re
import warnings
from typing import Any

#: A TVM version as (major, minor).
TVMVersion = tuple[int, int]

#: Stored bytes that a too-small packed allocation still holds (glibc's smallest chunk).
SMALLEST_ALLOCATION = 24

_VERSION = re.compile(r"v?(\d+)\.(\d+)(?:[.\-+].*)?")


def parse_version(version: str | tuple[int, ...]) -> TVMVersion:
    """``"0.27"`` (or ``"v0.27"``, ``"0.27.0.post1"``) -> (0, 27). A tuple is accepted
    as it is (the form used inside mlf-spec)."""
    if isinstance(version, tuple):
        return int(version[0]), int(version[1]) if len(version) > 1 else 0
    m = _VERSION.fullmatch(str(version).strip())
    if not m:
        raise ValueError(f"a TVM version like '0.27' is expected, got {version!r}")
    return int(m.group(1)), int(m.group(2))


def public_version(version: str | tuple[int, ...] | None, what: str = "era") -> TVMVersion | None:
    """Parse a TVM version given to a public function: a string such as ``"0.27"``; a
    tuple still works for one release, with a DeprecationWarning."""
    if version is None:
        return None
    if isinstance(version, tuple):
        warnings.warn(f"{what}={version!r}: name TVM versions as strings, e.g. {what}="
                      f"{version_label(version)!r}; tuples stop working in the next release",
                      DeprecationWarning, stacklevel=3)
    return parse_version(version)


def version_label(version: str | tuple[int, ...]) -> str:
    """(0, 27) -> ``"0.27"``."""
    major, minor = parse_version(version)
    return f"{major}.{minor}"


def _verify_data_type(v: TVMVersion, code: int, bits: int, lanes: int) -> str | None:
    """TVM's ``VerifyDataType`` as of version ``v`` (called at allocation up to 0.20)."""
    if lanes < 1:
        return f"lanes {lanes} < 1 (VerifyDataType)"
    if code == 2:  # kDLFloat
        if bits % 8:
            return f"float with {bits} bits, not a multiple of 8 (VerifyDataType)"
    else:
        allowed = {(1, 1)}
        if v >= (0, 7):
            allowed |= {(0, 1), (1, 4), (0, 4)}
        if v >= (0, 20):
            allowed.add((8, 4))
        if (code, bits) in allowed:
            return None
        if bits % 8:
            return f"code {code} with {bits} bits, not a multiple of 8 (VerifyDataType)"
    if bits & (bits - 1):
        return f"{bits} bits, not a power of two (VerifyDataType)"
    return None


def tensor_refusal(tvm: str | tuple[int, ...], code: int, bits: int, lanes: int, shape: tuple[int, ...]) -> str | None:
    """Why TVM ``tvm``'s reader refuses (or crashes on) a tensor record with this dtype and
    shape that is otherwise well formed, or None if it loads it."""
    v = parse_version(tvm)
    numel = 1
    for s in shape:
        numel *= s
    stored = numel * -(-bits // 8)
    if lanes >= 0x8000:
        return f"lanes {lanes} (a negative count as TVM reads it) cannot be allocated"
    if v < (0, 7):
        if stored == 0:
            return "a tensor without data bytes (TVM before 0.7 checks every data read)"
    elif shape and shape[0] != 0 and stored == 0:
        return "first extent is not 0 but the tensor holds no data bytes (Invalid DLTensor file format)"
    if v <= (0, 20):
        return _verify_data_type(v, code, bits, lanes)
    packed = -(-(numel * bits * lanes) // 8)
    if stored > packed and stored > SMALLEST_ALLOCATION:
        return (f"{stored} stored bytes are copied into a {packed}-byte bit-packed allocation "
                "(heap corruption; TVM may abort)")
    return None


def params_refusal(data: Any, tvm: str | tuple[int, ...]) -> str | None:
    """Why TVM ``tvm``'s reader refuses (or may crash on) the ``.params`` file ``data``, or
    None if it loads it. A file mlf-spec's own reader refuses is refused."""
    from mlf_spec.errors import MlfError
    from mlf_spec.params import codec

    try:
        with codec.open(bytes(data), strict=False) as lazy:
            index = [(i.name, i.dtype.code, i.dtype.bits, i.dtype.lanes, i.shape) for i in lazy.index]
    except MlfError as exc:
        return f"not a readable .params file: {exc}"
    for name, code, bits, lanes, shape in index:
        why = tensor_refusal(tvm, code, bits, lanes, shape)
        if why is not None:
            return f"tensor {name!r}: {why}"
    return None


def accepts_params(data: Any, tvm: str | tuple[int, ...]) -> bool:
    """True when TVM ``tvm``'s reader loads the ``.params`` file ``data``."""
    return params_refusal(data, tvm) is None


__all__ = ["SMALLEST_ALLOCATION", "TVMVersion", "accepts_params", "params_refusal", "parse_version",
           "public_version", "tensor_refusal", "version_label"]
