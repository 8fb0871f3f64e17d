"""`conformance mutate` on a reader written by someone else, first time: the fixture
tests/support/third_party/params_check.c (a `.params` validator with `#define _POSIX_C_SOURCE`
before its includes, POSIX getline/openat/O_DIRECTORY, a static buffer `wide[CHUNK * 2]`, casts
`(const unsigned char *)p`, an enum of states, messages made with snprintf), built with
-std=c11 and AddressSanitizer, no MUTATE markers, no equivalents file."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from mlf_spec.conformance import vectors
from mlf_spec.conformance.mutation import harness
from mlf_spec.conformance.mutation.mutator import instrument
from mlf_spec.errors import MlfError

FIXTURE = Path(__file__).resolve().parents[1] / "support" / "third_party" / "params_check.c"
C11 = harness.DEFAULT_BUILD.replace("gcc ", "gcc -std=c11 -Wall ", 1)
needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is needed to build the reader")


def test_the_schema_keeps_what_c_needs_constant_and_what_comes_before_the_includes():
    src = FIXTURE.read_text()
    schema, mutants = instrument(src)
    assert schema.startswith("#define _POSIX_C_SOURCE 200809L\n")  # still before every include
    assert schema.index("#include <fcntl.h>") < schema.index("mlf_mutant_id")
    lines = src.splitlines()
    wide = next(i for i, x in enumerate(lines, 1) if "wide[CHUNK * 2]" in x)
    assert "static unsigned char wide[CHUNK * 2];" in schema
    assert not [m for m in mutants if m.line == wide], "a static array's size must stay a constant"
    enum = next(i for i, x in enumerate(lines, 1) if x.startswith("enum verdict"))
    assert not [m for m in mutants if m.line == enum]
    casts = [m for m in mutants if "unsigned char +" in m.replacement or m.original.endswith("*")]
    assert not casts, casts  # the * of (const unsigned char *)p is no product
    # equivalent by construction: a change to a message only, and a comparison with an
    # enumerator that agrees on every value of its enum
    eq = {m.signature: m.equivalent for m in mutants if m.equivalent}
    line = next(i for i, x in enumerate(lines, 1) if '"ndim %d outside 0..%d"' in x)
    assert {f"const@L{line}: 64 -> {v}" for v in (65, 63, 0)} <= set(eq)
    assert all("message" in eq[f"const@L{line}: 64 -> {v}"] for v in (65, 63, 0))
    enum_eq = [sig for sig, why in eq.items() if "enum verdict" in why]
    assert enum_eq and all("V_OK -> " in sig and (sig.endswith("> V_OK") or sig.endswith("<= V_OK")) for sig in enum_eq)
    assert not [m for m in mutants if m.replacement.endswith("!= V_OK") and m.equivalent]  # == -> != is no equivalent


@needs_gcc
def test_mutate_works_on_a_third_party_reader_first_time():
    report = harness.mutate(FIXTURE, vectors.load_suite(formats=["params"]), formats=["params"], build_cmd=C11)
    print("\n".join(report.lines()))
    assert report.baseline_cases > 400
    assert report.equivalent and all(r.startswith("by construction:") for r in report.equivalent.values())
    # `end - in` of two pointers cannot be `end + in`: set aside, the rest builds
    assert any("end - in -> end + in" in sig for sig in report.uncompilable), report.uncompilable
    # its protocol code (one-shot decode, usage) is mutated too and only `serve` runs: not 100 %
    assert report.score() >= 0.65, report.lines()


@needs_gcc
def test_a_build_failure_reports_the_first_error_with_its_source_line(tmp_path):
    src = FIXTURE.read_text().replace("  uint64_t per = (bits + 7) / 8;", "  uint64_t per = (bits + 7) / 8 +;")
    bad = tmp_path / "params_check.c"
    bad.write_text(src)
    line = next(i for i, x in enumerate(src.splitlines(), 1) if "/ 8 +;" in x)
    with pytest.raises(MlfError) as info:
        harness.mutate(bad, vectors.load_suite(formats=["params"]), formats=["params"], build_cmd=C11)
    message = str(info.value)
    assert re.search(rf"does not build: line {line}:\d+: error: ", message), message
    assert "uint64_t per = (bits + 7) / 8 +;" in message
    assert "note:" not in message and "warning:" not in message
