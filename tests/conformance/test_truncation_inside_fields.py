"""The `.params` truncation vectors cut inside multi-byte fields, not only at their boundaries.

A reader that checks "at least one byte left" and then reads a whole 8-byte field, or that
pre-checks a shape of ``ndim`` 8-byte extents and the data size after it against
``remaining / 4``, reads past its input
only when the cut falls 1-7 bytes into a field. Two such mutants of the independent reader
(tests/support/independent/params_reader.c, rewritten to read its fields unchecked after a
pre-check) are killed by the vectors under AddressSanitizer with an exact-size input buffer
(testee_common.h copies every input into one), and the pre-checked reader itself passes.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mlf_spec.conformance import runner, vectors
from mlf_spec.conformance.mutation import harness

HERE = Path(__file__).resolve().parents[1] / "support" / "independent"
pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is needed to build the C readers")

_RAW = """static uint64_t raw_u64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

/* MUTATE BEGIN */"""

#: the reader's checked reads of a name length and of the extents, as pre-checked unchecked loads
#: (the extents and the data_byte_size after them pre-checked at once; data_byte_size is read checked)
_NAME = ("""    uint64_t len = rd_u64(&c);
    if (c.bad) break;""", """    if (c.pos >= c.n) { fail(&c, "truncated", "no name length"); break; }
    if (c.n - c.pos < 8) { fail(&c, "truncated", "the input ends inside a name length"); break; }
    uint64_t len = raw_u64(c.p + c.pos);
    c.pos += 8;""")
_SHAPE = ("""  for (int i = 0; i < ndim; i++) {
    shape[i] = rd_i64(c);
    if (c->bad) return 0;""", """  if ((uint64_t)ndim + 1 > (c->n - c->pos) / 8) return fail(c, "truncated", "the shape runs past the input");
  for (int i = 0; i < ndim; i++) {
    shape[i] = (int64_t)raw_u64(c->p + c->pos);
    c->pos += 8;""")

#: the two mutants: the "8 bytes left for a name length" check dropped, the shape pre-checked per 4 bytes
MUTANTS = {
    "no-name-length-check": ('    if (c.n - c.pos < 8) { fail(&c, "truncated", "the input ends inside a name length"); break; }\n',
                             ""),
    "shape-per-4-bytes": ("(c->n - c->pos) / 8) return fail(c, \"truncated\", \"the shape",
                          "(c->n - c->pos) / 4) return fail(c, \"truncated\", \"the shape"),
}


def _reader(tmp_path: Path, mutant: str | None) -> list[str]:
    src = (HERE / "params_reader.c").read_text()
    for old, new in (("/* MUTATE BEGIN */", _RAW), _NAME, _SHAPE):
        assert src.count(old) == 1, old
        src = src.replace(old, new)
    if mutant is not None:
        old, new = MUTANTS[mutant]
        assert src.count(old) == 1, old
        src = src.replace(old, new)
    work = tmp_path / (mutant or "pre-checked")
    work.mkdir()
    (work / "params_reader.c").write_text(src)
    shutil.copy(HERE / "testee_common.h", work)
    binary, _ = harness.build(work / "params_reader.c", harness.DEFAULT_BUILD, work)
    return [str(binary)]


@pytest.fixture(scope="module")
def params_cases():
    return vectors.load_suite(formats=["params"])


def _run(command: list[str], cases):
    return runner.run(harness.testee_for(command, None), cases, progress=False)


def test_the_pre_checked_reader_passes_every_params_vector(tmp_path, params_cases):
    result = _run(_reader(tmp_path, None), params_cases)
    assert set(result.counts) <= {"pass", "skip"}, [(r["id"], r.get("message")) for r in result.results
                                                    if r["outcome"] not in ("pass", "skip")][:5]
    assert result.counts["pass"] > 400


@pytest.mark.parametrize("mutant", sorted(MUTANTS))
def test_a_read_past_the_input_inside_a_field_is_caught(tmp_path, params_cases, mutant):
    """Each mutant reads past the exact-size input (AddressSanitizer stops it: a crash) on a
    cut that falls inside a multi-byte field, and on no other vector."""
    cuts = [c for c in params_cases if ".truncation.cut-" in c.id]
    result = _run(_reader(tmp_path, mutant), cuts)
    killed = sorted(r["id"] for r in result.results if r["outcome"] == "error")
    assert killed, f"{mutant} survives every truncation vector"
    assert all(r.get("error_kind") == "crash" for r in result.results if r["outcome"] == "error")
    boundaries = _field_boundaries()
    for vid in killed:  # every cut that catches it lies inside a field
        assert int(vid.rsplit("-", 1)[1]) not in boundaries, vid


def _field_boundaries() -> set[int]:
    """The offsets where a field of the spec's example starts or ends."""
    from mlf_spec._internal.spec_engine import build, trace
    from mlf_spec.conformance.suite.params import _ROOT, _STRUCTS, _example_tree

    data = build(_STRUCTS, _ROOT, _example_tree())
    _, spans = trace(_STRUCTS, _ROOT, data)
    return {s.offset for s in spans} | {s.offset + s.size for s in spans}
