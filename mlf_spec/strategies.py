"""Hypothesis strategies for TVM artifacts, valid and broken, for this project's tests
and for anyone testing another implementation.

    from hypothesis import given
    from mlf_spec import strategies as ms

    @given(ms.params_bytes())
    def test_my_reader_accepts(data): ...

    @given(ms.broken_params_bytes())
    def test_my_reader_rejects(kind_and_data): ...
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from mlf_spec.params import dtypes as _dt

from .generated import params_ir as _params_ir
from .generated import params_strategies as _params_st

PARAMS_BROKEN_KINDS: tuple[str, ...] = _params_st.BROKEN_KINDS


def params_bytes(era: tuple[int, ...] | None = None) -> st.SearchStrategy[bytes]:
    """Valid .params files of any TVM era (or of ``era``, a version tuple like (0, 16))."""
    return _params_st.valid_params_file(era)


def broken_params_bytes(kinds: tuple[str, ...] | None = None) -> st.SearchStrategy[tuple[str, bytes]]:
    """(kind, bytes) of .params files broken in one named way (``PARAMS_BROKEN_KINDS``)."""
    return _params_st.broken_params_file(kinds)


def numpy_dtypes(dialect: str | _dt.Dialect | None = None) -> st.SearchStrategy[np.dtype]:
    """Every NumPy / ml_dtypes element type that ``dialect`` can store."""
    d = _dt.dialect(dialect)
    found: list[np.dtype] = []
    for code, bits in _candidate_codes(d):
        t = _dt.lookup(d, code, bits, 1).numpy
        if t is not None and t not in found:
            try:
                _dt.from_numpy(t, d)
            except _dt.MlfError:
                continue
            found.append(t)
    return st.sampled_from(found)


def _candidate_codes(d: _dt.Dialect) -> list[tuple[int, int]]:
    from .generated import dtype_codes_table as table

    out = []
    for i in d.rows:
        row = table.ROWS[i]
        widths = row["numpy_bits"] if row["numpy_bits"] is not None else ([row["bits"]] if row["bits"] else [])
        out.extend((row["code"], b) for b in widths)
    return out


@st.composite
def arrays(draw: Any, dialect: str | _dt.Dialect | None = None, max_dims: int = 3, max_side: int = 4) -> np.ndarray:
    """An array of any storable dtype with random bytes: 0-d and zero-size included."""
    t = draw(numpy_dtypes(dialect))
    shape = tuple(draw(st.lists(st.integers(0, max_side), max_size=max_dims)))
    n = int(np.prod(shape)) if shape else 1
    raw = draw(st.binary(min_size=n * t.itemsize, max_size=n * t.itemsize))
    return np.frombuffer(raw, np.uint8).view(t).reshape(shape).copy() if n else np.zeros(shape, t)


@st.composite
def stored_tensors(draw: Any, dialect: str | _dt.Dialect | None = None) -> Any:
    """A StoredTensor of a dtype NumPy cannot hold (sub-byte, vector lanes, custom code)."""
    from mlf_spec.params.codec import StoredTensor

    d = _dt.dialect(dialect)
    code, bits, lanes = draw(st.sampled_from([(0, 4, 1), (1, 4, 1), (0, 1, 1), (2, 32, 4), (0, 8, 2), (129, 16, 1),
                                              (3, 64, 1)]))
    shape = tuple(draw(st.lists(st.integers(0, 4), max_size=3)))
    size = _dt.stored_bytes(bits, shape)
    raw = draw(st.binary(min_size=size, max_size=size))
    return StoredTensor.of(code, bits, lanes, shape, raw, d)


def param_dicts(dialect: str | _dt.Dialect | None = None, max_size: int = 5) -> st.SearchStrategy[dict[str, Any]]:
    """name -> array or StoredTensor mappings (empty and non-ASCII names included)."""
    value = st.one_of(arrays(dialect), stored_tensors(dialect))
    return st.dictionaries(st.text(max_size=10), value, max_size=max_size)


def mlf_metadata(version: int | None = None, style: str | None = None) -> st.SearchStrategy[tuple[int, str, dict]]:
    """(version, style, document): MLF metadata documents valid against their version's model."""
    from .generated import mlf_strategies as _mlf

    return _mlf.valid_metadata(version, style)


def broken_mlf_metadata(kinds: tuple[str, ...] | None = None) -> st.SearchStrategy[tuple[str, int, str, bytes]]:
    """(kind, version, style, metadata.json bytes) broken in one named way (``MLF_METADATA_BROKEN_KINDS``)."""
    from .generated import mlf_strategies as _mlf

    return _mlf.broken_metadata(kinds)


def mlf_archives(version: int | None = None, style: str | None = None) -> st.SearchStrategy[tuple[int, str, bytes]]:
    """(version, style, tar bytes): MLF archives of every version and style as TVM wrote them."""
    from .generated import mlf_strategies as _mlf

    return _mlf.valid_archive(version, style)


def broken_mlf_archives(kinds: tuple[str, ...] | None = None) -> st.SearchStrategy[tuple[str, bytes]]:
    """(kind, tar bytes) broken in one named way (``MLF_ARCHIVE_BROKEN_KINDS``): unreadable
    (``not_a_tar``, ``truncated``, ``unsafe:*``) or with a finding (``missing_member:*``,
    ``finding:<code>``)."""
    from .generated import mlf_strategies as _mlf

    return _mlf.broken_archive(kinds)


def graph_jsons() -> st.SearchStrategy[str]:
    """GraphExecutor JSON texts as relay's codegen writes them (dmlc layout)."""
    from mlf_spec.mlf.strategies import _graph_module

    from . import graph_json as _graph

    return _graph_module(0).map(lambda g: _graph.dumps(g[0]))


def _mlf_kinds() -> tuple[tuple[str, ...], tuple[str, ...]]:
    from .generated import mlf_strategies as _mlf

    return _mlf.METADATA_BROKEN_KINDS, _mlf.ARCHIVE_BROKEN_KINDS


MLF_METADATA_BROKEN_KINDS, MLF_ARCHIVE_BROKEN_KINDS = _mlf_kinds()

SPECS = {"params": _params_ir.STRUCTS}

__all__ = ["MLF_ARCHIVE_BROKEN_KINDS", "MLF_METADATA_BROKEN_KINDS", "PARAMS_BROKEN_KINDS", "arrays",
           "broken_mlf_archives", "broken_mlf_metadata", "broken_params_bytes", "graph_jsons", "mlf_archives",
           "mlf_metadata", "numpy_dtypes", "param_dicts", "params_bytes", "stored_tensors"]

# Module blobs (both layouts): valid module trees and blobs, and blobs broken by named kind.
from mlf_spec.blob.strategies import (  # noqa: E402
    BLOB_BROKEN_KINDS,
    BLOB_ERAS,
    BrokenBlob,
    blob_bytes,
    blob_payloads,
    broken_blob_bytes,
    module_trees,
)

__all__ += ["BLOB_BROKEN_KINDS", "BLOB_ERAS", "BrokenBlob", "blob_bytes", "blob_payloads", "broken_blob_bytes",
            "module_trees"]
