"""Hypothesis strategies for TVM artifacts, valid and broken, for this project's tests
and for anyone testing another implementation.

    from hypothesis import given
    from mlf_spec import strategies as ms

    @given(ms.params_bytes(accepted_by="0.27"))     # only files TVM 0.27 loads
    def test_my_reader_accepts(data): ...

    @given(ms.broken_params_bytes())
    def test_my_reader_rejects(broken):            # broken.kind, broken.data, broken.expect
        ...

One vocabulary throughout: a TVM version is a string as on the command line (``"0.27"``,
``"0.16"``; a tuple still works for one release, with a DeprecationWarning); every
``broken_*`` strategy draws a :class:`Broken` (``kind``, ``data``, ``expect`` and what it
imitates: ``era``, ``format``, ``version``, ``style``); bytes come as :class:`Data`, whose
repr stays one line however large the artifact. To run a reader that may crash on what
these draw, see :mod:`mlf_spec.isolation`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from mlf_spec.params import dtypes as _dt

from ._internal.drawn import Broken, Data
from ._internal.spec_strategies import ERAS as _PARAMS_ERAS
from .generated import params_ir as _params_ir
from .generated import params_strategies as _params_st
from .versions import label as version_label
from .versions import public as public_version

PARAMS_BROKEN_KINDS: tuple[str, ...] = _params_st.BROKEN_KINDS
#: TVM versions whose dtype numbering ``params_bytes`` imitates (the dialects' first versions).
PARAMS_ERAS: tuple[str, ...] = tuple(version_label(e) for e in _PARAMS_ERAS)


#: The verdicts of a TVM version's reader that ``params_bytes(accepted_by=...)`` keeps:
#: the load call returns, without an error and without a crash.
ACCEPTED = ("loads", "misreads")


def params_bytes(era: str | None = None, accepted_by: str | None = None, *,
                 as_meant: bool = False) -> st.SearchStrategy[Data]:
    """Valid .params files written with the dtype numbering of TVM ``era`` (e.g. "0.16";
    default: any of ``PARAMS_ERAS``).

    ``accepted_by`` (e.g. "0.27") keeps only the files that TVM version's reader accepts:
    those whose verdict, as ``mlf-spec params check --tvm 0.27 --from ERA`` gives it (the
    rules of spec/verdicts/tvm_read_rules.yaml, checked against apache-tvm 0.25-0.27), is
    ``loads`` or ``misreads`` (:data:`ACCEPTED`). So ``load_param_dict`` returns without an
    error and without a crash. It may still read a tensor otherwise than the era's writer
    meant, for example a float8 code that was renumbered later, or one-byte-per-element
    sub-byte data that it reads bit-packed. With ``as_meant=True`` only ``loads`` is kept:
    every tensor also reads as the writer meant it."""
    e = public_version(era, "era")
    if accepted_by is None:
        if as_meant:
            raise ValueError("as_meant=True needs accepted_by (the TVM version that reads the files)")
        return _params_st.valid_params_file(e).map(Data)
    reader = version_label(public_version(accepted_by, "accepted_by"))
    keep = ("loads",) if as_meant else ACCEPTED
    eras = st.just(e) if e is not None else st.sampled_from(_PARAMS_ERAS)
    return eras.flatmap(lambda w: _params_st.valid_params_file(w).map(Data).filter(
        lambda data: _verdict_of(data, reader, version_label(w)) in keep))


def _verdict_of(data: bytes, reader: str, writer: str) -> str:
    """The verdict of TVM ``reader`` on a .params file written by TVM ``writer``."""
    from mlf_spec.params import check

    return check.verdict(data, reader, writer=writer).verdict


@st.composite
def broken_params_bytes(draw: Any, kinds: tuple[str, ...] | None = None, era: str | None = None) -> Broken:
    """A .params file broken in one named way (``PARAMS_BROKEN_KINDS``): a :class:`Broken`
    with ``era`` the TVM version whose numbering the rest of the file follows."""
    e = public_version(era, "era") or draw(st.sampled_from(_PARAMS_ERAS))
    kind, data = draw(_params_st.broken_params_file(kinds, e))
    return Broken(kind, Data(data), "error", era=version_label(e))


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

    out: list[tuple[int, int]] = []
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


def broken_mlf_metadata(kinds: tuple[str, ...] | None = None) -> st.SearchStrategy[Broken]:
    """metadata.json bytes broken in one named way (``MLF_METADATA_BROKEN_KINDS``): a
    :class:`Broken` with the metadata ``version`` and ``style`` it imitates (None for
    ``not_json`` and ``not_object``)."""
    from .generated import mlf_strategies as _mlf

    return _mlf.broken_metadata(kinds).map(
        lambda t: Broken(t[0], Data(t[3]), "error", version=t[1] or None, style=t[2] or None))


def mlf_archives(version: int | None = None, style: str | None = None) -> st.SearchStrategy[tuple[int, str, Data]]:
    """(version, style, tar bytes): MLF archives of every version and style as TVM wrote them."""
    from .generated import mlf_strategies as _mlf

    return _mlf.valid_archive(version, style).map(lambda t: (t[0], t[1], Data(t[2])))


#: What a reader does with each kind of broken archive: the unreadable ones are refused.
_UNREADABLE = ("not_a_tar", "truncated", "unsafe")


def broken_mlf_archives(kinds: tuple[str, ...] | None = None) -> st.SearchStrategy[Broken]:
    """MLF archives broken in one named way (``MLF_ARCHIVE_BROKEN_KINDS``), as
    :class:`Broken`: unreadable ones (``not_a_tar``, ``truncated``, ``unsafe:*``) expect an
    error, the others (``missing_member:*``, ``finding:<code>``) read and check with that
    finding."""
    from .generated import mlf_strategies as _mlf

    return _mlf.broken_archive(kinds).map(
        lambda t: Broken(t[0], Data(t[1]), "error" if t[0].split(":")[0] in _UNREADABLE else "finding"))


def graph_jsons() -> st.SearchStrategy[str]:
    """GraphExecutor JSON texts as relay's codegen writes them (dmlc layout)."""
    from mlf_spec.mlf.strategies import graph_module

    from .graph import codec as _graph

    return graph_module(0).map(lambda g: _graph.dumps(g[0]))


def _mlf_kinds() -> tuple[tuple[str, ...], tuple[str, ...]]:
    from .generated import mlf_strategies as _mlf

    return _mlf.METADATA_BROKEN_KINDS, _mlf.ARCHIVE_BROKEN_KINDS


MLF_METADATA_BROKEN_KINDS, MLF_ARCHIVE_BROKEN_KINDS = _mlf_kinds()

SPECS = {"params": _params_ir.STRUCTS}

__all__ = ["ACCEPTED", "MLF_ARCHIVE_BROKEN_KINDS", "MLF_METADATA_BROKEN_KINDS", "PARAMS_BROKEN_KINDS", "PARAMS_ERAS", "Broken",
           "Data", "arrays", "broken_mlf_archives", "broken_mlf_metadata", "broken_params_bytes", "graph_jsons",
           "mlf_archives", "mlf_metadata", "numpy_dtypes", "param_dicts", "params_bytes", "stored_tensors"]

# Module blobs (both layouts): valid module trees and blobs, and blobs broken by named kind.
from mlf_spec.blob.strategies import (  # noqa: E402
    BLOB_BROKEN_KINDS,
    BLOB_ERAS,
    blob_bytes,
    blob_payloads,
    broken_blob_bytes,
    module_trees,
)

__all__ += ["BLOB_BROKEN_KINDS", "BLOB_ERAS", "blob_bytes", "blob_payloads", "broken_blob_bytes",
            "module_trees"]

# Module blobs at the edges of the spec's rules (valid or not: the reference's reading says).
from mlf_spec.blob.edges import EDGE_KINDS, FFI_EDGE_KINDS, edge_blob_bytes  # noqa: E402

__all__ += ["EDGE_KINDS", "FFI_EDGE_KINDS", "edge_blob_bytes"]

# .params files at the edges of the spec's rules (valid or not: the reference's reading says).
from mlf_spec.params.edges import EDGE_KINDS as PARAMS_EDGE_KINDS  # noqa: E402
from mlf_spec.params.edges import edge_params_bytes  # noqa: E402

__all__ += ["PARAMS_EDGE_KINDS", "edge_params_bytes"]

# Tensor caches at the edges of the cache's rules (valid or not: the reference's reading says).
from mlf_spec.cache.edges import EDGE_KINDS as CACHE_EDGE_KINDS  # noqa: E402
from mlf_spec.cache.edges import edge_caches  # noqa: E402

__all__ += ["CACHE_EDGE_KINDS", "edge_caches"]
