"""How a Python library runs the conformance vectors in its own test suite
(docs/conformance/guide.md). The library under test here is mlf-spec's own ``params.load``;
put yours in its place: turn what it reads into the canonical reading and let the kit compare.

    pip install mlf-spec pytest
    pytest examples/conformance/test_python_reader.py
"""

import hashlib
from pathlib import Path

import numpy as np
import pytest

from mlf_spec import MlfError, params
from mlf_spec.conformance import Case
from mlf_spec.params import dtypes


def read(data: bytes, options: dict) -> dict:
    """The canonical reading of a .params file, from what the library under test returns."""
    loaded = params.load(data, dialect=options.get("dialect"))
    tensors = []
    for name, value in loaded.entries:  # every record, duplicates included, in file order
        if isinstance(value, np.ndarray):
            code, bits, lanes = dtypes.from_numpy(value.dtype, loaded.dialect)
            raw = value.tobytes()
        else:  # sub-byte, vector, handle and custom dtypes come back as stored bytes
            code, bits, lanes, raw = value.dtype.code, value.dtype.bits, value.dtype.lanes, bytes(value.data)
        raw_name = name.encode("utf-8", "surrogateescape")
        entry = {"name": raw_name.decode("utf-8", "replace"), "code": code, "bits": bits, "lanes": lanes,
                 "shape": list(value.shape), "nbytes": len(raw), "sha256": hashlib.sha256(raw).hexdigest()}
        if entry["name"].encode() != raw_name:
            entry["name_hex"] = raw_name.hex()
        tensors.append(entry)
    return {"format": "params", "tensors": tensors}


KNOWN = Path(__file__).with_name("python_reader.known-failures")  # each known divergence, with its reason


@pytest.mark.mlf_conformance(formats=["params"], roles=["decode"], known_failures=str(KNOWN))
def test_params_reader(mlf_case: "Case") -> None:
    mlf_case.verify(read, rejects=(MlfError,))
