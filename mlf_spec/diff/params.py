"""Comparing two .params files: tensors added or removed, dtype or shape changed, data
changed (with the number of differing elements and the largest absolute and relative
difference), the order of the tensors, and what lies outside the tensors (dialect, header
words, trailing bytes).

Tensors are matched by name; a name held by several tensors (TVM keeps the last when it
loads) is matched occurrence by occurrence, the k-th in A with the k-th in B, and an
occurrence only one side has is added or removed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from ._model import Change, short

if TYPE_CHECKING:
    from mlf_spec.params.codec import LazyParams, TensorInfo


def compare(a: LazyParams, b: LazyParams, *, member: str | None = None, module: str | None = None,
            a_bytes: Any = None, b_bytes: Any = None) -> list[Change]:
    """The changes from ``a`` to ``b`` (two opened .params files). ``member``/``module``
    say where they sit inside an archive. ``a_bytes``/``b_bytes``, when given, are the
    whole files (buffers, or the opened files themselves: then compared a piece at a
    time), so that a difference outside the tensors is reported too."""
    where: dict[str, Any] = {"member": member, "module": module}
    out: list[Change] = []
    if a.dialect.id != b.dialect.id:
        out.append(Change("file", "changed", "dialect", a.dialect.id, b.dialect.id,
                          f"dtype dialect {a.dialect.id} -> {b.dialect.id}", **where))
    pairs, only_a, only_b = _match(a.index, b.index)
    common_a = [ia for ia, _ in pairs]
    order_a = [a.index[i].name for i in sorted(common_a)]
    order_b = [b.index[ib].name for _, ib in sorted(pairs, key=lambda p: p[1])]
    if order_a != order_b:
        out.append(Change("file", "order", "tensors", order_a, order_b,
                          f"the tensors both files hold are in another order: {short(order_a, 60)} -> "
                          f"{short(order_b, 60)}", **where))
    for i in only_a:
        t = a.index[i]
        out.append(Change("tensor", "removed", t.name, _info(t, i), None,
                          f"{_nth(a.index, i)}{t.dtype.name} {_shape(t.shape)}", **where))
    for i in only_b:
        t = b.index[i]
        out.append(Change("tensor", "added", t.name, None, _info(t, i),
                          f"{_nth(b.index, i)}{t.dtype.name} {_shape(t.shape)}", **where))
    for ia, ib in pairs:
        out.extend(_tensor(a, b, a.index[ia], b.index[ib], ia, ib, where))
    if a.trailing_bytes != b.trailing_bytes:
        out.append(Change("file", "changed", "trailing_bytes", a.trailing_bytes, b.trailing_bytes,
                          f"bytes after the last tensor: {a.trailing_bytes} -> {b.trailing_bytes}", **where))
    if not out and a_bytes is not None and b_bytes is not None and not _same_files(a_bytes, b_bytes):
        out.append(Change("file", "changed", "encoding", None, None,
                          "the tensors are the same; the files differ outside them (header words, device "
                          "fields or trailing bytes)", **where))
    return out


def same_bytes(x: Any, y: Any) -> bool:
    """Whether two buffers hold the same bytes (compared without copying)."""
    mx, my = memoryview(x).cast("B"), memoryview(y).cast("B")
    return mx.nbytes == my.nbytes and bool(np.array_equal(np.frombuffer(mx, np.uint8), np.frombuffer(my, np.uint8)))


def _same_files(x: Any, y: Any, piece: int = 1 << 22) -> bool:
    """``same_bytes`` of two whole files, given as buffers or as opened files (LazyParams:
    read a piece at a time, so a file opened with ``mapped=False`` is never whole in memory)."""
    from mlf_spec.params.codec import LazyParams

    if not isinstance(x, LazyParams) or not isinstance(y, LazyParams):
        return same_bytes(x.raw_file() if isinstance(x, LazyParams) else x,
                          y.raw_file() if isinstance(y, LazyParams) else y)
    if x.size != y.size:
        return False
    return all(same_bytes(x.read_bytes(at, min(piece, x.size - at)), y.read_bytes(at, min(piece, x.size - at)))
               for at in range(0, x.size, piece))


def _match(a: list[TensorInfo], b: list[TensorInfo]) -> tuple[list[tuple[int, int]], list[int], list[int]]:
    """(index pairs, unmatched in a, unmatched in b): k-th occurrence of a name with k-th."""
    seen_b: dict[str, list[int]] = {}
    for i, t in enumerate(b):
        seen_b.setdefault(t.name, []).append(i)
    taken: dict[str, int] = {}
    pairs: list[tuple[int, int]] = []
    only_a: list[int] = []
    for i, t in enumerate(a):
        k = taken.get(t.name, 0)
        cands = seen_b.get(t.name, [])
        if k < len(cands):
            pairs.append((i, cands[k]))
            taken[t.name] = k + 1
        else:
            only_a.append(i)
    matched_b = {ib for _, ib in pairs}
    return pairs, only_a, [i for i in range(len(b)) if i not in matched_b]


def _nth(index: list[TensorInfo], i: int) -> str:
    """'' for a unique name, else 'occurrence 2 of 3 of this name: '."""
    same = [j for j, t in enumerate(index) if t.name == index[i].name]
    return "" if len(same) == 1 else f"occurrence {same.index(i) + 1} of {len(same)} of this name: "


def _shape(shape: tuple[int, ...]) -> str:
    return "x".join(map(str, shape)) or "scalar"


def _info(t: TensorInfo, i: int) -> dict[str, Any]:
    return {"index": i, "dtype": t.dtype.name, "shape": list(t.shape), "nbytes": t.nbytes}


def _tensor(a: LazyParams, b: LazyParams, ta: TensorInfo, tb: TensorInfo, ia: int, ib: int,
            where: dict[str, Any]) -> Iterator[Change]:
    nth = _nth(a.index, ia)
    if (ta.dtype.code, ta.dtype.bits, ta.dtype.lanes) != (tb.dtype.code, tb.dtype.bits, tb.dtype.lanes) or \
            ta.dtype.name != tb.dtype.name:
        x, y = ta.dtype.name, tb.dtype.name
        if x == y:  # spelled alike, stored as other codes (bool as (1,1,1) and as (6,8,1)): show the codes
            x, y = (f"{t.dtype.name} (code {t.dtype.code}, {t.dtype.bits} bits, {t.dtype.lanes} lanes)"
                    for t in (ta, tb))
        yield Change("tensor", "dtype", ta.name, x, y, f"{nth}dtype {x} -> {y}", **where)
        if ta.shape != tb.shape:
            yield Change("tensor", "shape", ta.name, list(ta.shape), list(tb.shape),
                         f"{nth}shape {_shape(ta.shape)} -> {_shape(tb.shape)}", **where)
        return
    if ta.shape != tb.shape:
        yield Change("tensor", "shape", ta.name, list(ta.shape), list(tb.shape),
                     f"{nth}shape {_shape(ta.shape)} -> {_shape(tb.shape)}", **where)
        return
    ra, rb = a.raw(ta), b.raw(tb)
    if same_bytes(ra, rb):
        return
    stats = data_stats(a.tensor(ta), b.tensor(tb), ra, rb)
    yield Change("tensor", "data", ta.name, None, None, f"{nth}{describe_stats(stats)}", stats=stats, **where)


def data_stats(x: Any, y: Any, raw_x: Any, raw_y: Any) -> dict[str, Any]:
    """How two tensors of one dtype and shape differ: ``elements``, ``differing`` elements
    (bytes, for dtypes NumPy cannot hold, with ``unit: "byte"``), ``max_abs`` and
    ``max_rel`` (|a - b| / max(|a|, |b|)) over the differing elements where both values
    are finite (None if there are none), ``nonfinite``: differing elements where one side
    is NaN or infinite. Two values that compare equal but are stored differently (NaNs with
    other payloads, +0 and -0) count as differing with a difference of 0, so that a data
    change always has a differing element."""
    if not isinstance(x, np.ndarray) or not isinstance(y, np.ndarray):
        bx = np.frombuffer(raw_x, np.uint8)
        by = np.frombuffer(raw_y, np.uint8)
        return {"unit": "byte", "elements": int(bx.size), "differing": int((bx != by).sum()), "max_abs": None,
                "max_rel": None, "nonfinite": 0}
    if x.dtype.kind == "b":
        d = int((x != y).sum())
        return {"unit": "element", "elements": int(x.size), "differing": d, "max_abs": 1.0 if d else 0.0,
                "max_rel": 1.0 if d else 0.0, "nonfinite": 0}
    if x.dtype.kind in "iu":
        differ = x != y
        d_abs, scale = _int_distance(x[differ], y[differ])
        rel = d_abs / np.maximum(scale, 1)  # scale is 0 only where both are 0, which do not differ
        return {"unit": "element", "elements": int(x.size), "differing": int(differ.sum()),
                "max_abs": float(d_abs.max()) if d_abs.size else None,
                "max_rel": float(rel.max()) if rel.size else None, "nonfinite": 0}
    if x.dtype.kind == "c":
        fx, fy = x.astype(np.complex128), y.astype(np.complex128)
    else:
        try:
            fx, fy = x.astype(np.float64), y.astype(np.float64)
        except (TypeError, ValueError):  # a type without a float conversion: compare bytes
            return data_stats(None, None, raw_x, raw_y)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        same = (fx == fy) | (np.isnan(fx) & np.isnan(fy))
        differ = ~same | _bits_differ(x, y)
        finite = np.isfinite(fx) & np.isfinite(fy)
        both = differ & finite
        d_abs = np.abs(fx - fy)[both]
        scale = np.maximum(np.abs(fx), np.abs(fy))[both]
        rel = d_abs / scale
    return {"unit": "element", "elements": int(x.size), "differing": int(differ.sum()),
            "max_abs": float(d_abs.max()) if d_abs.size else None,
            "max_rel": float(rel.max()) if rel.size else None,
            "nonfinite": int((differ & ~finite).sum())}


def _int_distance(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """|x - y| and max(|x|, |y|) of two integer arrays, exact as uint64 (no 64-bit value
    overflows: the wrapped difference of the larger and the smaller is the distance),
    returned as float64 for the ratios."""
    if x.dtype.itemsize <= 4:  # int64 holds every difference and magnitude
        xs, ys = x.astype(np.int64), y.astype(np.int64)
        return np.abs(xs - ys).astype(np.float64), np.maximum(np.abs(xs), np.abs(ys)).astype(np.float64)
    u = np.uint64
    hi, lo = np.maximum(x, y).astype(u), np.minimum(x, y).astype(u)
    dist = hi - lo
    return dist.astype(np.float64), np.maximum(_magnitude(x), _magnitude(y)).astype(np.float64)


def _magnitude(a: np.ndarray) -> np.ndarray:
    """|a| as uint64 (|-2**63| included)."""
    if a.dtype.kind == "u":
        return a.astype(np.uint64)
    return np.where(a < 0, np.uint64(0) - a.astype(np.uint64), a.astype(np.uint64))


def _bits_differ(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Per element (in x's shape): whether the stored bytes differ."""
    size = x.dtype.itemsize
    bx = np.ascontiguousarray(x).reshape(-1).view(np.uint8).reshape(-1, size)
    by = np.ascontiguousarray(y).reshape(-1).view(np.uint8).reshape(-1, size)
    return (bx != by).any(axis=1).reshape(x.shape)


def describe_stats(s: dict[str, Any]) -> str:
    """A data change as one sentence."""
    unit = "bytes" if s["unit"] == "byte" else "elements"
    text = f"data differs in {s['differing']} of {s['elements']} {unit}"
    if s["max_abs"] is not None:
        text += f", max abs diff {s['max_abs']:.6g}, max rel diff {s['max_rel']:.6g}"
    if s.get("nonfinite"):
        text += f", {s['nonfinite']} where one side is NaN or infinite"
    return text
