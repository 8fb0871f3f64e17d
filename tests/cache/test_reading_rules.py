"""The reference reading of a tensor cache on the inputs issue 28 and issue 32 found it wrong or
unstated on: each decision (which loader it follows: docs/tensor-cache.md, "The reference
reading") through `cache dump --json`, `check`, the canonical reading and the reference testee."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mlf_spec import cache
from mlf_spec.cache import check, dtypes, index
from mlf_spec.cli import main
from mlf_spec.conformance import canonical
from mlf_spec.conformance.canonical_cache import decode_cache
from mlf_spec.errors import (
    ConstMismatchError,
    ConstraintError,
    MalformedError,
    MlfError,
    UnknownDtypeError,
    ValidationError,
)

INT64_MAX = (1 << 63) - 1


def _mlf(*args: str) -> subprocess.CompletedProcess:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return subprocess.CompletedProcess(["mlf-spec", *args], code, out.getvalue(), err.getvalue())


def _cache(tmp_path: Path, records: list[dict], shard: bytes = b"\0" * 16, *, text: str | None = None,
           name: str = "c", shard_extra: dict | None = None, metadata: Any = None) -> Path:
    """A one-shard cache: ``records`` the tensor records, ``text`` the whole index instead."""
    d = tmp_path / name
    d.mkdir()
    (d / "params_shard_0.bin").write_bytes(shard)
    doc = {"metadata": {} if metadata is None else metadata,
           "records": [{"dataPath": "params_shard_0.bin", "format": "raw-shard", "nbytes": len(shard),
                        "records": records, **(shard_extra or {})}]}
    (d / "tensor-cache.json").write_text(json.dumps(doc) if text is None else text)
    return d


def _rec(name: str = "w", shape: list[int] | None = None, dtype: str = "float32", nbytes: int = 16,
         offset: int = 0, fmt: str = "raw") -> dict:
    return {"name": name, "shape": [4] if shape is None else shape, "dtype": dtype, "format": fmt,
            "nbytes": nbytes, "byteOffset": offset}


def _dump(d: Path) -> dict:
    r = _mlf("cache", "dump", str(d), "--json")
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    return json.loads(r.stdout, parse_constant=lambda c: pytest.fail(f"dump wrote {c}, not JSON"))


def _testee(d: Path) -> dict:
    """The reference testee's response line to a decode request of the folder (parsed back)."""
    from mlf_spec.conformance import adapters
    from mlf_spec.conformance.protocol import respond, response_line

    resp = respond(adapters.load("mlf-spec"), json.dumps({"id": 1, "op": "decode", "format": "tensor-cache",
                                                          "options": {}, "input_dir": str(d)}))
    return json.loads(response_line(resp).decode("utf-8"), parse_constant=lambda c: pytest.fail(c))


# 1. an empty tensor beside a huge extent ---------------------------------------------------

def test_empty_tensor_beside_a_huge_extent_is_read_without_allocating(tmp_path):
    """[0, 2^63-1] float32, nbytes 0: the C++ loader reads it (observed 0.27), the Python loader's
    np.empty refuses it: accepted, a warning, sha256 of no bytes, no traceback anywhere."""
    d = _cache(tmp_path, [_rec(), _rec("e", [0, INT64_MAX], nbytes=0, offset=16)])
    doc = _dump(d)
    e = doc["tensors"][1]
    assert e["shape"] == [0, INT64_MAX] and e["sha256"] == canonical.sha256(b"") and e["sha256_of"] == "decoded"
    assert decode_cache(d)["tensors"][1]["sha256"] == e["sha256"]
    assert _testee(d)["reading"]["tensors"][1]["sha256"] == e["sha256"]
    report = check.check(d)
    assert "tensor.shape-numpy" in report.codes() and report.conformant
    r = _mlf("cache", "check", str(d))
    assert r.returncode == 0 and "Traceback" not in r.stderr


def test_three_hundred_extents_of_one_are_read_and_convert_refuses_in_one_line(tmp_path):
    """Issue 32 item 8: 300 extents of 1 (the C++ loader reads it; NumPy holds 64 dimensions)."""
    d = _cache(tmp_path, [_rec(shape=[1] * 300 + [4])], np.arange(4, dtype="<f4").tobytes())
    doc = _dump(d)
    assert doc["tensors"][0]["sha256"] == canonical.sha256(np.arange(4, dtype="<f4").tobytes())
    assert "tensor.shape-numpy" in check.check(d).codes()
    for out in ("w.npz", "w.safetensors", "w.params"):
        r = _mlf("cache", "convert", str(d), str(tmp_path / out))
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and "64" in r.stderr, (out, r.stderr)
        assert not (tmp_path / out).exists()
    r = _mlf("cache", "convert", str(_cache(tmp_path, [_rec(shape=[0, INT64_MAX], nbytes=0)], b"", name="z")),
             str(tmp_path / "z.npz"))
    assert r.returncode == 2 and r.stderr.startswith("mlf-spec: error:") and "Traceback" not in r.stderr


def test_byte_sizes_past_4300_digits_are_findings_not_tracebacks(tmp_path):
    """Issue 32 item 6: 250 extents of 2^62 (a byte size of ~4,700 digits)."""
    d = _cache(tmp_path, [_rec(shape=[1 << 62] * 250)])
    assert "tensor.nbytes" in check.check(d).codes()
    r = _mlf("cache", "check", str(d))
    assert r.returncode == 1 and "Traceback" not in r.stderr and "2^" in r.stdout
    r = _mlf("cache", "dump", str(d), "--json")
    assert r.returncode == 2 and r.stderr.count("\n") == 1


@pytest.mark.parametrize("field", ["bits", "lanes"])
def test_dtype_fields_of_5000_digits_are_refused_cleanly(tmp_path, field):
    """Issue 32 item 6: a 5,000-digit bits or lanes field is past the bound, not a ValueError."""
    text = "int" + "9" * 5000 if field == "bits" else "int8x" + "9" * 5000
    assert dtypes.parse(text) is None
    d = _cache(tmp_path, [_rec(dtype=text)])
    assert "tensor.dtype" in check.check(d).codes()
    for cmd in (("check",), ("dump", "--json")):
        r = _mlf("cache", cmd[0], str(d), *cmd[1:])
        assert r.returncode in (1, 2) and "Traceback" not in r.stderr and len(r.stdout) < 10_000


# 2. names that are not valid Unicode ----------------------------------------------------------

def test_lone_surrogate_name_one_rule_everywhere(tmp_path):
    """A name "\\ud800x": Python's json and the web runtime read it, the C++ loader refuses the
    index (observed 0.27): accepted with a warning; every output writes U+FFFD per maximal
    subpart of the generalized UTF-8 bytes (ED A0 80 -> three U+FFFD) and name_hex."""
    d = _cache(tmp_path, [_rec("\ud800x")])
    doc = _dump(d)
    t = doc["tensors"][0]
    assert t["name"] == "\ufffd\ufffd\ufffdx" and t["name_hex"] == "eda08078"
    assert decode_cache(d)["tensors"][0] == {k: v for k, v in t.items() if k != "stats"}
    json.dumps(decode_cache(d), ensure_ascii=False).encode("utf-8")  # writable as UTF-8 JSON
    answer = _testee(d)
    assert answer["ok"] and answer["reading"]["tensors"][0]["name_hex"] == "eda08078"
    assert "cache.lone-surrogate" in check.check(d).codes()
    plain = _cache(tmp_path, [_rec("w\u00e9")], name="plain")
    assert "name_hex" not in _dump(plain)["tensors"][0]
    assert "cache.lone-surrogate" not in check.check(plain).codes()


def test_lone_surrogate_in_metadata_is_shown_and_a_surrogate_pair_is_not_lone(tmp_path):
    d = _cache(tmp_path, [_rec()], metadata={"k\udc80": "v\ud800"})
    assert _dump(d)["metadata"] == {"k\ufffd\ufffd\ufffd": "v\ufffd\ufffd\ufffd"}
    pair = _cache(tmp_path, [_rec("\U0001f600")], name="pair")
    assert _dump(pair)["tensors"][0]["name"] == "\U0001f600"
    assert "cache.lone-surrogate" not in check.check(pair).codes()


@pytest.mark.parametrize("out", ["w.npz", "w.params"])
def test_convert_of_a_lone_surrogate_name_is_one_line(tmp_path, out):
    """Issue 32 item 7: a .npz or .params file cannot hold the name as TVM writes names (UTF-8)."""
    d = _cache(tmp_path, [_rec("\ud800x")])
    r = _mlf("cache", "convert", str(d), str(tmp_path / out))
    assert r.returncode == 2 and r.stderr.startswith("mlf-spec: error:") and r.stderr.count("\n") == 1, r.stderr
    assert "Unicode" in r.stderr and not (tmp_path / out).exists()


def test_lone_surrogate_data_path_is_refused_as_unsafe(tmp_path):
    d = _cache(tmp_path, [_rec()])
    doc = json.loads((d / "tensor-cache.json").read_text())
    doc["records"][0]["dataPath"] = "params_shard_0.bin\udc80"
    (d / "tensor-cache.json").write_text(json.dumps(doc))
    with pytest.raises(MlfError) as err:
        check.check(d)
    assert canonical.error_class(err.value) == "unsafe"


# 3. NaN / Infinity --------------------------------------------------------------------------

@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_nonfinite_literals_are_a_finding_and_outputs_stay_json(tmp_path, literal):
    d = _cache(tmp_path, [_rec()], text=json.dumps({"metadata": {"a": "__X__", "b": [1]}, "records": [
        {"dataPath": "params_shard_0.bin", "format": "raw-shard", "nbytes": 16, "records": [_rec()]}]})
        .replace('"__X__"', literal))
    assert _dump(d)["metadata"] == {"a": None, "b": [1]}  # _dump fails on a NaN literal
    assert decode_cache(d)["metadata"] == {"a": None, "b": [1]}
    json.dumps(decode_cache(d), allow_nan=False)
    assert _testee(d)["reading"]["metadata"] == {"a": None, "b": [1]}
    report = check.check(d)
    assert "cache.json-nonfinite" in report.codes() and report.conformant


def test_nonfinite_extent_is_refused_as_a_wrong_type(tmp_path):
    d = _cache(tmp_path, [], text=json.dumps({"metadata": {}, "records": [
        {"dataPath": "params_shard_0.bin", "format": "raw-shard", "nbytes": 16, "records": [_rec(shape=[0])]}]})
        .replace("[0]", "[NaN]"))
    with pytest.raises(ValidationError):
        cache.open(d)


# 4. md5sum ----------------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["UPPER", "abc", None, 5, "0" * 31, "g" * 32])
def test_md5sum_syntax_is_a_warning_never_a_refusal(tmp_path, value):
    """No loader reads md5sum (Python, C++ and the web runtime load upper case, null, a number)."""
    import hashlib

    shard = b"\0" * 16
    md5 = hashlib.md5(shard).hexdigest().upper() if value == "UPPER" else value
    d = _cache(tmp_path, [_rec()], shard, shard_extra={"md5sum": md5})
    codes = check.check(d).codes()
    assert "shard.md5-syntax" in codes and "shard.md5-missing" not in codes
    assert ("shard.md5" in codes) == (value not in ("UPPER", "abc", None, 5, "0" * 31, "g" * 32))
    with cache.open(d) as lazy:
        assert lazy.array("w").size == 4


def test_md5sum_compared_case_insensitively_and_lower_case_is_clean(tmp_path):
    import hashlib

    d = _cache(tmp_path, [_rec()], shard_extra={"md5sum": hashlib.md5(b"\0" * 16).hexdigest()})
    assert not {"shard.md5", "shard.md5-syntax"} & set(check.check(d).codes())
    d = _cache(tmp_path, [_rec()], shard_extra={"md5sum": "F" * 32}, name="bad")
    assert {"shard.md5", "shard.md5-syntax"} <= set(check.check(d).codes())


# 5. the dtype-string grammar -----------------------------------------------------------------

@pytest.mark.parametrize(("text", "canonical_text", "sha_of"), [
    ("int08", "int8", "decoded"), ("float16x02", "float16x2", "stored"), ("float32x1", "float32", "decoded"),
    ("handle", "handle", "stored"), ("int8x65535", "int8x65535", "stored"), ("int255", "int255", "stored"),
])
def test_dtype_spellings_the_cpp_parser_reads(tmp_path, text, canonical_text, sha_of):
    dt = dtypes.parse(text)
    assert dt is not None and dt.canonical == canonical_text
    nbytes = dt.stored_nbytes(4)
    d = _cache(tmp_path, [_rec(dtype=text, nbytes=nbytes)], b"\0" * nbytes)
    doc = _dump(d)
    assert doc["tensors"][0]["sha256_of"] == sha_of
    codes = check.check(d).codes()
    assert "tensor.dtype" not in codes and "tensor.dtype-numpy" in codes  # the Python loader refuses each


@pytest.mark.parametrize("text", ["complex64", "int256", "int8x65536", "int8x0", "int0x2", "custom[x]8", "e4m3_float8"])
def test_dtype_spellings_refused_in_a_tensor_cache_json(tmp_path, text):
    """complex: TVM never had a spelling ("unknown dtype", 0.27); bits past 255, lanes past 65535
    or 0: the parser's range errors; e4m3_float8: spelled so only up to 0.19 (ndarray-cache.json)."""
    assert dtypes.parse(text, 2) is None
    d = _cache(tmp_path, [_rec(dtype=text)])
    with pytest.raises(UnknownDtypeError) as err:
        cache.open(d)
    assert canonical.error_class(err.value) == "unknown_dtype"


def test_float8_spellings_by_index_version():
    assert dtypes.parse("e4m3_float8", 1) is not None and dtypes.parse("e4m3_float8", 2) is None
    assert dtypes.parse("float8_e4m3fn", 1) is not None and dtypes.parse("float8_e4m3fn", 2) is not None
    assert dtypes.parse("float8_e3m4", 2) is not None
    assert dtypes.parse("float32x1").numpy == np.dtype("<f4")


def test_float32x1_under_f32_to_bf16_is_decoded_as_the_cpp_loader_does(tmp_path):
    words = (np.arange(4, dtype="<f4").view("<u4") >> 16).astype("<u2")
    d = _cache(tmp_path, [_rec(dtype="float32x1", nbytes=8, fmt="f32-to-bf16")], words.tobytes())
    with cache.open(d) as lazy:
        assert lazy.array("w").tolist() == [0.0, 1.0, 2.0, 3.0]


def test_the_dtype_grammar_page_is_generated_from_the_table():
    page = (Path(__file__).resolve().parents[2] / "generated" / "docs" / "cache_dtypes.md").read_text()
    for row in ("`e4m3_float8[x<lanes>]`", "`float8_e4m3fn[x<lanes>]`", "`handle`", "65535", "leading zeros"):
        assert row in page


# 6. dataPath ending in / ----------------------------------------------------------------------

def test_data_path_ending_in_slash_is_a_missing_shard(tmp_path):
    """Both loaders' open fails on it (NotADirectoryError / "Cannot open", observed 0.27)."""
    d = _cache(tmp_path, [_rec()])
    doc = json.loads((d / "tensor-cache.json").read_text())
    doc["records"][0]["dataPath"] = "params_shard_0.bin/"
    (d / "tensor-cache.json").write_text(json.dumps(doc))
    assert "shard.missing" in check.check(d).codes()
    with pytest.raises(MalformedError) as err:
        cache.open(d)
    assert canonical.error_class(err.value) == "malformed"


# 7. nesting depth -----------------------------------------------------------------------------

def _nested(depth: int) -> bytes:
    """An index whose deepest container is at ``depth`` (the top-level object is level 1)."""
    inner = "[" * (depth - 1) + "]" * (depth - 1)
    return ('{"metadata": ' + inner + ', "records": []}').encode()


def test_nesting_at_the_limit_is_read_and_one_past_it_refused():
    assert index.parse(_nested(index.MAX_DEPTH), "x").metadata is not None
    with pytest.raises(MalformedError) as err:
        index.parse(_nested(index.MAX_DEPTH + 1), "x")
    assert str(index.MAX_DEPTH) in str(err.value)
    with pytest.raises(MalformedError):  # far past Python's recursion limit: the same error
        index.parse(_nested(200_000), "x")


def test_nesting_limit_counts_unknown_keys_of_records_too():
    rec = {"dataPath": "a", "format": "raw-shard", "nbytes": 0, "records": [], "x": "__X__"}
    text = json.dumps({"metadata": {}, "records": [rec]})
    ok = text.replace('"__X__"', "[" * (index.MAX_DEPTH - 3) + "]" * (index.MAX_DEPTH - 3))
    index.parse(ok.encode(), "x")
    with pytest.raises(MalformedError):
        index.parse(text.replace('"__X__"', "[" * (index.MAX_DEPTH - 2) + "]" * (index.MAX_DEPTH - 2)).encode(), "x")


# error classes ------------------------------------------------------------------------------

@pytest.mark.parametrize(("edit", "cls", "name"), [
    (lambda d: d["records"][0].pop("dataPath"), ValidationError, "invalid_document"),
    (lambda d: d["records"][0]["records"][0].update(shape=[4.0]), ValidationError, "invalid_document"),
    (lambda d: d["records"][0]["records"][0].update(nbytes="16"), ValidationError, "invalid_document"),
    (lambda d: d["records"][0].update(format="zip-shard"), ConstMismatchError, "bad_constant"),
    (lambda d: d["records"][0]["records"][0].update(nbytes=12), ConstraintError, "constraint"),
    (lambda d: d["records"][0]["records"][0].update(byteOffset=4), ConstraintError, "constraint"),
    (lambda d: d["records"][0].update(nbytes=17), ConstraintError, "constraint"),
    (lambda d: d["records"][0]["records"][0].update(shape=[-4]), ConstraintError, "constraint"),
    (lambda d: d["records"][0].update(dataPath="gone.bin"), MalformedError, "malformed"),
])
def test_error_class_of_each_refusing_rule_is_the_spec_s(tmp_path, edit, cls, name):
    d = _cache(tmp_path, [_rec()])
    doc = json.loads((d / "tensor-cache.json").read_text())
    edit(doc)
    (d / "tensor-cache.json").write_text(json.dumps(doc))
    with pytest.raises(cls) as err:
        cache.open(d)
    assert canonical.error_class(err.value) == name
    assert _testee(d)["error"]["class"] == name


def test_every_refusing_finding_states_an_error_class_of_the_table():
    from mlf_spec.generated import conformance_errors_table

    from mlf_spec.cache import rules

    names = {r["error_class"] for r in conformance_errors_table.ROWS}
    assert rules.FATAL == {c for c, f in rules.FINDINGS.items() if f["severity"] == "error"} - {"cache.legacy-layout"}
    for code in rules.FATAL:
        assert rules.FINDINGS[code]["error_class"] in names
        assert canonical.error_class(rules.error_type(code)("x")) == rules.FINDINGS[code]["error_class"]


# issue 32 item 11: compact records ------------------------------------------------------------

def test_the_compact_decoding_reads_every_case_as_the_general_path_does(tmp_path, monkeypatch):
    """The writer's layout is decoded straight into records (msgspec); every case of the
    suite gives the same records and findings through the general path (json + checks)."""
    from mlf_spec.cache import cases

    for c in cases.all_cases():
        if c.error is not None:
            continue
        d = tmp_path / c.id
        d.mkdir()
        for n, data in c.files.items():
            (d / n).write_bytes(data)
        fast = check.check(d).codes()
        with cache.open(d, strict=False) as lazy:
            fast_tensors = [(t.name, t.shape, t.dtype, t.format, t.nbytes, t.offset, t.path) for t in lazy.tensors]
        with monkeypatch.context() as m:
            m.setattr(index, "_fast_index", lambda *a: None)
            assert check.check(d).codes() == fast, c.id
            with cache.open(d, strict=False) as lazy:
                assert [(t.name, t.shape, t.dtype, t.format, t.nbytes, t.offset, t.path)
                        for t in lazy.tensors] == fast_tensors, c.id


def _big_cache(d: Path, shards: int = 100, per: int = 1000, *, version: int = 2) -> int:
    """A cache of ``shards`` x ``per`` records of 4 bytes (compact JSON); the index's size."""
    import hashlib

    d.mkdir()
    data = b"\0" * 4 * per
    out = []
    for s in range(shards):
        recs = [{"name": f"param_{s}_{j}", "shape": [1], "dtype": "float32", "format": "raw", "nbytes": 4,
                 "byteOffset": 4 * j} for j in range(per)]
        out.append({"dataPath": f"params_shard_{s}.bin", "format": "raw-shard", "nbytes": len(data), "records": recs,
                    "md5sum": hashlib.md5(data).hexdigest()})
        (d / f"params_shard_{s}.bin").write_bytes(data)
    name = "tensor-cache.json" if version == 2 else "ndarray-cache.json"
    (d / name).write_text(json.dumps({"metadata": {}, "records": out}))
    return (d / name).stat().st_size


def _documented_bound() -> float:
    """The bound docs/tensor-cache.md states for opening a cache, in multiples of the index."""
    import re

    text = (Path(__file__).resolve().parents[2] / "docs" / "tensor-cache.md").read_text(encoding="utf-8")
    m = re.search(r"at most ([0-9.]+)x the index's size", text)
    assert m is not None, "docs/tensor-cache.md states the bound"
    return float(m.group(1))


# VmHWM, not ru_maxrss: the latter carries the parent's (pytest's) peak over exec; the growth
# is taken after the imports, under an address-space limit
_GROWTH = ("import resource, sys\nresource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))\n"
           "from mlf_spec import cache\nfrom mlf_spec.cli import main\nimport mlf_spec.cache.migrate, mlf_spec.cache.reading\n"
           "def hwm():\n    for line in open('/proc/self/status'):\n"
           "        if line.startswith('VmHWM:'):\n            return int(line.split()[1]) * 1024\n"
           "before = hwm()\n"
           "if sys.argv[1] == 'open':\n    with cache.open(sys.argv[2]) as lazy:\n        n = len(lazy.by_name)\n"
           "else:\n    sys.stdout = open('/dev/null', 'w')\n    n = main(sys.argv[1:])\n"
           "sys.stderr.write(f'{n} {hwm() - before}\\n')\n")


def _growth(*argv: str) -> tuple[int, int]:
    import sys

    r = subprocess.run([sys.executable, "-c", _GROWTH, *argv], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    n, grown = map(int, r.stderr.split()[-2:])
    return n, grown


def test_opening_a_big_index_costs_what_the_docs_say(tmp_path):
    """10^5 records (11 MB of compact JSON) opened strictly in a child: the memory the open
    takes stays under the bound docs/tensor-cache.md states (issue 32 item 11: it was 5.4x with
    record objects, 9x with a tree of dicts)."""
    size = _big_cache(tmp_path / "big")
    n, grown = _growth("open", str(tmp_path / "big"))
    assert n == 100_000 and grown < _documented_bound() * size, (grown / size)


def test_dump_and_upgrade_of_a_big_index_stay_near_the_open(tmp_path):
    """`cache dump`, `cache dump --json` and `cache upgrade` of 10^5 records stream over the
    records: each takes less than twice the documented bound of the open, of the index it
    reads or (upgrade) writes (they took 14x to 26x the index when every record became a dict)."""
    size = _big_cache(tmp_path / "big", version=1)
    bound = _documented_bound()
    for argv in (["cache", "dump"], ["cache", "dump", "--json"]):
        code, grown = _growth(*argv, str(tmp_path / "big"))
        assert code == 0 and grown < 2 * bound * size, (argv, grown / size)
    code, grown = _growth("cache", "upgrade", str(tmp_path / "big"), "-o", str(tmp_path / "up"))
    written = (tmp_path / "up" / "tensor-cache.json").read_text()
    assert written == json.dumps(json.loads((tmp_path / "big" / "ndarray-cache.json").read_text()), indent=4)
    # the result is opened and checked: its index, longer by its indentation, sets the peak
    assert code == 0 and grown < 2 * bound * len(written), grown / len(written)


def test_records_as_columns_read_as_the_lists_and_dict_they_replace():
    """The columns (cache/records.py) give what the record list and ``{t.name: t for t in
    records}`` gave: slices with steps, negative indexes, a repeated name in its first place
    with its last record, per-shard windows (issue 32 item 11)."""
    names = ["a", "b", "a", "c", "b", "\u00e9", "a"]
    recs = [{"name": n, "shape": [1], "dtype": "float32", "format": "raw", "nbytes": 4, "byteOffset": 4 * j}
            for j, n in enumerate(names)]
    raw = json.dumps({"metadata": {}, "records": [
        {"dataPath": "params_shard_0.bin", "format": "raw-shard", "nbytes": 12, "records": recs[:3], "md5sum": "0" * 32},
        {"dataPath": "params_shard_1.bin", "format": "raw-shard", "nbytes": 16, "records": recs[3:], "md5sum": "0" * 32},
    ]}).encode()
    idx = index.parse(raw, "x", name="tensor-cache.json")
    listed = list(idx.tensors)
    assert [t.name for t in listed] == names and [t.path for t in listed][3] == "records[1].records[0]"
    assert idx.tensors[::3] == listed[::3] and idx.tensors[-2:] == listed[-2:] and idx.tensors[-1] == listed[-1]
    assert list(idx.shards[1].tensors[::-1]) == listed[3:][::-1] and len(idx.shards[0].tensors) == 3
    want = {t.name: t for t in listed}
    got = idx.tensors.by_name()
    assert list(got) == list(want) and list(got.values()) == list(want.values()) and len(got) == len(want) == 4
    assert dict(got.items()) == want and got["a"].path == "records[1].records[3]" and "z" not in got
    with pytest.raises(KeyError):
        got["z"]
