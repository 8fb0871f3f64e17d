"""The rows of spec/findings/params_check.yaml: the strict_refuses column says what the strict
reader refuses, and the conditions the spec states once (align_bad, cpu) hold where their
definitions say."""

from __future__ import annotations

from pathlib import Path

from mlf_spec.generated import params_check_rows as rows
from mlf_spec.generated import tensor_fast

from mlf_spec.errors import MlfError
from mlf_spec.params import check, codec

ROOT = Path(__file__).resolve().parents[2]


def test_the_strict_reader_refuses_exactly_the_files_with_a_strict_refuses_finding():
    seen: set[str] = set()
    checked = 0
    for path in sorted((ROOT / "vectors" / "params").rglob("*.params")):
        try:
            codes = set(check.check(str(path)).codes())
        except MlfError:
            continue  # unreadable for the check too: no findings to compare
        checked += 1
        try:
            with codec.open(str(path)):
                refused = False
        except MlfError:
            refused = True
        strict = codes & rows.STRICT_REFUSES
        assert refused == bool(strict), (path.name, sorted(codes))
        if len(strict) == 1:
            seen |= strict
    assert checked > 300
    assert seen == rows.STRICT_REFUSES  # each code alone decides some vector's refusal


def _tensor_facts(**kw):
    facts = {"index": 0, "reserved": 0, "device_type": 1, "device_id": 0, "ndim": 1, "code": 2, "bits": 32, "lanes": 1,
             "nbytes": 4, "numel": 1, "elem_bytes": 4, "first_extent": 1, "max_byte": -1, "negative_at": (),
             "zero_extent_at": 0, "known": 1, "handle": 0, "dialect": "d", "data_offset": 100, "at_dtype": 40,
             "at_device": 16, "at_ndim": 24, "at_reserved": 8, "at_shape": 32, "at_data_byte_size": 90}
    facts.update(kw)
    return facts


def test_the_alignment_rule_is_its_definition():
    for bits in (0, 8, 16, 24, 40, 64, 96, 128, 200, 255):
        for lanes in (0, 1, 2, 3, 4, 5, 8, 16, 100, 0x8000, 0xFFFF):
            a = (bits // 8) * lanes
            codes = [r[0] for r in rows.tensor(_tensor_facts(bits=bits, lanes=lanes, elem_bytes=-(-bits // 8),
                                                             nbytes=-(-bits // 8), layout_text="x", dialect_label="l"))]
            assert ("tensor.alignment" in codes) == (a > 64 and a & (a - 1) != 0), (bits, lanes, codes)


def test_the_device_and_ndim_rows_read_the_tensor_specs_constants():
    assert (tensor_fast.KDLCPU, tensor_fast.MAX_NDIM) == (1, 64)
    ok = rows.tensor(_tensor_facts(ndim=tensor_fast.MAX_NDIM))
    assert ok == []
    got = rows.tensor(_tensor_facts(device_type=2, ndim=tensor_fast.MAX_NDIM + 1))
    assert got == [("tensor.device-type", "arrays[0].device", "device type 2 (kDLCPU is 1)", 16, None),
                   ("tensor.ndim", "arrays[0].ndim", "65 dimensions", 24, None)]
