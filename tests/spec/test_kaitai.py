"""The exported Kaitai Struct specs, checked with the real compiler and runtimes.

Every generated/kaitai/*.ksy is compiled by the npm Kaitai Struct compiler 0.11 (pinned in
tools/kaitai/package-lock.json, installed on demand into a cache directory) to Python and
JavaScript. The generated parsers read files made by apache-tvm 0.27 (.params of every dtype,
the blobs of exported libraries), mlf-spec's own examples and strategy output (every payload
kind, both blob layouts, every era the strategies imitate) and broken files; each reading is
compared field by field with mlf-spec's generated readers. Broken files must be rejected
wherever the .ksy states the rule they break (docs/kaitai.md lists the rules it cannot state).
"""

from __future__ import annotations

import importlib
import math
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mlf_spec import kaitai
from mlf_spec import strategies as ms
from mlf_spec._internal.spec_engine import build
from mlf_spec.blob import codec as blob_codec
from mlf_spec.blob import strategies as blob_st
from mlf_spec.errors import MlfError
from mlf_spec.kaitai.reading import PythonParsers
from mlf_spec.kaitai.testee import KNOWN_GAPS, KaitaiTestee, Refused
from mlf_spec.versions import label as version_label
from tests.support import kaitai as ks

ROOT = Path(__file__).resolve().parents[2]
JS_EXACT = 2**53


@pytest.fixture(scope="session")
def compiled():
    return ks.compiled()


@pytest.fixture(scope="session")
def py(compiled):
    return PythonParsers(compiled[0] / "python")


def _collect(strategy, n: int) -> list:
    """``n`` values of a strategy, the same on every run (a derandomized hypothesis run)."""
    out: list = []

    @settings(max_examples=n, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def run(x):
        out.append(x)

    run()
    return out


def _lib_with(kind: str, fmt: str, era: str):
    return st.builds(lambda p: blob_codec.Module.lib(blob_codec.Module(kind, p)),
                     blob_st.blob_payloads(kind, fmt, era))


@pytest.fixture(scope="session")
def corpus() -> list[tuple[str, str, bytes, tuple[int, ...]]]:
    """(label, spec, data, era): mlf-spec's examples, then strategy output: whole blobs of
    every era the strategies imitate, a blob per payload kind (unknown kinds too, in tvm-ffi)
    and era, .params files of every dtype dialect."""
    items = []
    for spec in ("params", "blob_ffi", "blob_legacy"):
        ir = importlib.import_module(f"mlf_spec.generated.{spec}_ir")
        era = (0, 20) if spec == "blob_legacy" else (0, 27)
        items += [(f"example {ex['name']}", spec, build(ir.STRUCTS, ex["struct"], ex["value"], era), era)
                  for ex in ir.EXAMPLES]
    for fmt, eras in blob_st.BLOB_ERAS.items():
        spec = f"blob_{fmt}"
        for label in eras:
            era = blob_st.era_tuple(label)
            items += [(f"{fmt} blob {label}", spec, b, era) for b in _collect(ms.blob_bytes(fmt, label), 25)]
            kinds = sorted(blob_codec.known_kinds(fmt)) + (["my_npu"] if fmt == "ffi" else [])
            for kind in kinds:
                roots = _collect(_lib_with(kind, fmt, label), 2)
                items += [(f"{fmt} {kind} {label}", spec, blob_codec.build(r, format=fmt, era=era), era) for r in roots]
    for d in ms._dt.DIALECTS:
        items += [(f"params {d.id}", "params", b, d.since)
                  for b in _collect(ms.params_bytes(version_label(d.since)), 25)]
    return items


def _check_alike(py, compiled, items, expect_fields: int) -> tuple[int, int]:
    """Parse every (label, spec, data, era) with both generated parsers and compare with
    mlf-spec; returns (fields compared, JavaScript integers rounded to a double)."""
    fields = 0
    expected = [ks.mlf_read(spec, data, era) for _, spec, data, era in items]
    for (label, spec, data, era), exp in zip(items, expected):
        diffs, n = ks.compare(exp, py.read(spec, data, era))
        assert not diffs, (label, diffs[:5])
        fields += n
    answers = ks.js_read(compiled[0] / "javascript", [(spec, data, era) for _, spec, data, era in items])
    doubles = [0]
    for (label, *_), exp, (ok, got) in zip(items, expected, answers):
        assert ok, (label, got)
        diffs, _n = ks.compare(exp, got, doubles)
        assert not diffs, (label, diffs[:5])
    assert fields >= expect_fields
    return fields, doubles[0]


# --------------------------------------------------------------------------------------------
# the files and the compiler


def test_every_ksy_compiles_to_python_and_javascript(compiled):
    out, figures = compiled
    assert figures["compiler"] == "0.11.0"
    for kid in ks.ksy_objects():
        assert (out / "python" / f"{kid}.py").is_file()
        camel = "".join(p.capitalize() for p in kid.split("_"))
        assert (out / "javascript" / f"{camel}.js").is_file()
    for path in (out / "python").glob("*.py"):
        compile(path.read_text(), str(path), "exec")  # a keyword as an id would be a SyntaxError here


def test_export_writes_the_generated_files(tmp_path):
    from mlf_spec.cli import main

    assert main(["export", "ksy", str(tmp_path)]) == 0
    generated = sorted((ROOT / "generated" / "kaitai").glob("*.ksy"))
    assert sorted(p.name for p in tmp_path.iterdir()) == [p.name for p in generated]
    for p in generated:
        assert (tmp_path / p.name).read_bytes() == p.read_bytes()
    (tmp_path / "tvm_params.ksy").write_text("mine")
    assert main(["export", "ksy", str(tmp_path)]) == 1  # refused, nothing replaced
    assert (tmp_path / "tvm_params.ksy").read_text() == "mine"
    assert main(["export", "ksy", str(tmp_path), "--force"]) == 0
    assert (tmp_path / "tvm_params.ksy").read_bytes() == (ROOT / "generated" / "kaitai" / "tvm_params.ksy").read_bytes()


def test_every_spec_struct_is_a_kaitai_type():
    from specgen.load import load

    objs = ks.ksy_objects()
    for b in load(ROOT / "spec").binaries.values():
        obj = objs[f"tvm_{b.name}"]
        roots = [s.name for s in b.spec.structs if s.root]
        for s in b.spec.structs:
            if roots == [s.name]:
                assert "seq" in obj, s.name  # the top-level type
            else:
                assert s.name in obj["types"], (b.name, s.name)
    # every module kind of both layouts has its case
    for fmt, kid, typ in (("ffi", "tvm_blob_ffi", "ffi_module"), ("legacy", "tvm_blob_legacy", "legacy_entry")):
        seq = objs[kid]["types"][typ]["seq"]
        cases = next(e for e in seq if e["id"] == "payload")["type"]["cases"]
        assert {k.strip("\"") for k in cases if k != "_"} - {"_import_tree"} == set(blob_codec.known_kinds(fmt)) - {"_lib"}


# --------------------------------------------------------------------------------------------
# the same reading as mlf-spec


def test_examples_and_strategy_output_read_alike(py, compiled, corpus):
    kinds = {label.split()[1] for label, *_ in corpus if label.startswith(("ffi ", "legacy ")) and "blob" not in label}
    assert kinds == set(blob_codec.known_kinds("ffi")) | set(blob_codec.known_kinds("legacy")) | {"my_npu"}
    fields, rounded = _check_alike(py, compiled, corpus, expect_fields=15_000)
    print(f"kaitai corpus: {len(corpus)} files, {fields} fields, {rounded} rounded in JavaScript")
    # JavaScript reads u8 as a double: the reserved words etc. above 2^53 come back rounded
    assert rounded < fields // 100


@pytest.mark.tvm
def test_params_written_by_tvm_read_alike(py, compiled):
    ta = pytest.importorskip("tests.support.tvm_artifacts")
    pytest.importorskip("tvm")
    import numpy as np

    dtypes = ta.PARAM_DTYPES + ta.EXTRA_PARAM_DTYPES
    shapes = [(), (3,), (2, 3), (0, 4), (2, 1, 2)]
    rng = np.random.default_rng(12)
    tensors, spelled = {}, []
    for dtype in dtypes:
        for shape in shapes:
            raw = rng.integers(0, 256, ta.alloc_nbytes(dtype, shape), dtype=np.uint8)
            if dtype.startswith("bool"):
                raw &= 1
            tensors[f"{dtype}{list(shape)}"] = ta.make_tvm_tensor(raw.tobytes(), dtype, shape)
            spelled.append(dtype)
    data = ta.save_params_bytes(tensors)
    era = (0, int(ta.tvm_version().split(".")[1]))
    items = [("tvm params", "params", data, era), ("tvm empty", "params", ta.save_params_bytes({}), era)]
    fields, doubles = _check_alike(py, compiled, items, expect_fields=len(tensors) * 12)
    print(f"kaitai tvm params: {len(items)} files, {len(tensors)} tensors, {fields} fields, {doubles} rounded in JS")
    parsed = py.parse("params", data, era)
    assert [t.dtype.spelling for t in parsed.arrays] == spelled  # TVM's own dtype strings
    assert [n.value for n in parsed.names] == list(tensors)


@pytest.mark.tvm
def _as_written_by(root, era):
    """The device modules of ``root`` as a writer of ``era`` made them: before 0.21 a
    FunctionInfo has no arg_extra_tags (blob.build refuses to drop tags silently; these are
    all 0, kNone, which is what an older writer meant)."""
    import dataclasses

    if era >= (0, 21):
        return root
    for m in root.walk():
        rec = m.payload.record if m.payload is not None else None
        if rec is not None and "fmap" in getattr(rec, "_fields", ()):
            assert all(not any(info.arg_extra_tags or ()) for _, info in rec.fmap)
            fmap = [(k, info._replace(arg_extra_tags=None)) for k, info in rec.fmap]
            m.payload = dataclasses.replace(m.payload, record=rec._replace(fmap=fmap))
    return root


def test_blobs_exported_by_tvm_read_alike(py, compiled, tmp_path):
    ta = pytest.importorskip("tests.support.tvm_artifacts")
    pytest.importorskip("tvm")
    from mlf_spec import blob

    era = (0, int(ta.tvm_version().split(".")[1]))
    libs = ta.export_libraries(tmp_path, targets={"cuda", "opencl", "metal", "webgpu", "relax-llvm"})
    items = []
    for lib in libs:
        (b,) = blob.read(lib.path)
        assert b.data == lib.packed_blob
        items.append((lib.path.name, "blob_ffi", b.data, era))
        # the same device payloads in the legacy layout of 0.16 and 0.21 (no legacy TVM installs
        # here); fmt/fmap/data is one grammar in both layouts
        if lib.container == "so" and lib.target in ("cuda", "opencl"):
            for legacy_era in ((0, 16), (0, 21)):
                data = blob.build(_as_written_by(b.root(), legacy_era), format="legacy", era=legacy_era)
                items.append((f"{lib.path.name} as legacy {legacy_era}", "blob_legacy", data, legacy_era))
    items.append(("const_loader", "blob_ffi", ta.const_loader_blob(
        {"c0": ta.make_tvm_tensor(b"\x01\x02\x03\x04" * 3, "float32", (3,))}, {"f": ["c0"]}), era))
    assert sum(spec == "blob_legacy" for _, spec, *_ in items) >= 4
    fields, doubles = _check_alike(py, compiled, items, expect_fields=500)
    print(f"kaitai tvm blobs: {len(items)} files, {fields} fields, {doubles} rounded in JS")


def test_dtype_spelling_is_mlf_specs_in_every_dialect(py, compiled):
    """The spelling instance of dl_datatype (generated from the dtype table) against
    mlf_spec.params.dtypes, for every code, several widths and lanes, in every dialect."""
    from mlf_spec.generated import params_ir

    from mlf_spec.params import dtypes

    keys = [(code, bits, lanes) for code in [*range(0, 19), 128, 129, 200, 255] for bits in (1, 4, 6, 8, 16, 32, 64)
            for lanes in (1, 4, 65535)]
    arrays = [{"device": {"device_type": 1, "device_id": 0}, "dtype": {"code": c, "bits": b, "lanes": n},
               "shape": [0], "data": ""} for c, b, n in keys]
    data = build(params_ir.STRUCTS, "params_file", {"names": [str(i) for i in range(len(keys))], "arrays": arrays})
    for d in dtypes.DIALECTS:
        parsed = py.parse("params", data, d.since)
        got = [a.dtype.spelling for a in parsed.arrays]
        assert got == [dtypes.lookup(d, *k).name for k in keys], d.id
        enum_values = [getattr(a.dtype, f"code_v{d.since[0]}_{d.since[1]}") for a in parsed.arrays]
        assert all(int(v) == k[0] for v, k in zip(enum_values, keys))


# --------------------------------------------------------------------------------------------
# broken input

KAITAI_ACCEPTS = KNOWN_GAPS


@pytest.fixture(scope="session")
def broken() -> list[tuple[str, str, bytes, tuple[int, ...]]]:
    items = []
    for kind in ms.PARAMS_BROKEN_KINDS:
        items += [(kind, "params", b.data, (0, 23)) for b in _collect(ms.broken_params_bytes((kind,)), 6)]
    for kind in blob_st.BLOB_BROKEN_KINDS:
        items += [(kind, f"blob_{b.format}", b.data, blob_st.era_tuple(b.era))
                  for b in _collect(ms.broken_blob_bytes((kind,)), 6)]
    return items


def _mlf_error(spec: str, data: bytes, era: tuple[int, ...]) -> str | None:
    try:
        ks.mlf_read(spec, data, era)
    except MlfError as exc:
        return type(exc).__name__
    return None


def _options(spec: str, era: tuple[int, ...]) -> tuple[str, dict[str, str]]:
    if spec == "params":
        return "params", {"dialect": ms._dt.dialect(f"{era[0]}.{era[1]}").id}
    return "blob", {"layout": spec.removeprefix("blob_"), "era": "latest" if era[0] else f"{era[0]}.{era[1]}"}


#: Kaitai does not check a length against the bytes that remain: it reads until they run out.
_LENGTH = {"LengthError", "TruncatedError"}


def test_broken_files_are_rejected_where_the_ksy_states_the_rule(compiled, broken):
    """Every broken kind of the strategies whose rule the .ksy states is refused by both
    generated parsers, with mlf-spec's error class (Python) for the rule; the others
    (KNOWN_GAPS, and the warnings mlf-spec reports as findings) are read as mlf-spec reads them."""
    testee = KaitaiTestee(compiled[0] / "python")
    answers = ks.js_read(compiled[0] / "javascript", [(spec, data, era) for _, spec, data, era in broken])
    refused: dict[str, int] = {}
    for (kind, spec, data, era), (js_ok, js_got) in zip(broken, answers):
        fmt, options = _options(spec, era)
        mlf_error = _mlf_error(spec, data, era)
        if blob_st.BLOB_BROKEN_KINDS.get(kind) == "finding" or kind in KAITAI_ACCEPTS:
            got = testee.decode(fmt, data, options)
            if mlf_error is None:
                assert ks.compare(ks.mlf_read(spec, data, era), got)[0] == [], kind
            if kind.startswith("unknown_code"):
                parsed = testee.parsers.parse(spec, data, era)
                assert any(a.dtype.spelling.startswith("unknown(") for a in parsed.arrays)
            assert js_ok, (kind, js_got)
            continue
        refused[kind] = refused.get(kind, 0) + 1
        assert mlf_error is not None, kind
        with pytest.raises(Refused) as exc:
            testee.decode(fmt, data, options)
        assert exc.value.mlf_error == mlf_error or {exc.value.mlf_error, mlf_error} <= _LENGTH, (kind, exc.value)
        assert not js_ok, (kind, "accepted by the JavaScript parser")
        assert js_got["name"] in ("EOFError", "ValidationNotEqualError", "ValidationExprError",
                                  "ValidationLessThanError", "ValidationGreaterThanError", "ValidationNotAnyOfError"), js_got
    print(f"kaitai broken: {len(broken)} files, {sum(refused.values())} refused by both parsers")
    assert set(refused) == {k for k in ms.PARAMS_BROKEN_KINDS + tuple(blob_st.BLOB_BROKEN_KINDS)
                            if k not in KAITAI_ACCEPTS and blob_st.BLOB_BROKEN_KINDS.get(k) != "finding"}


def test_testee_reads_like_mlf_spec_and_names_the_broken_rule(compiled):
    from mlf_spec.generated import params_ir

    testee = KaitaiTestee(compiled[0] / "python")
    assert {f["format"] for f in testee.info()["formats"]} == {"params", "blob"}
    data = build(params_ir.STRUCTS, "params_file", params_ir.EXAMPLES[0]["value"])
    assert testee.decode("params", data, {"dialect": "v0.23"}) == ks.mlf_read("params", data, (0, 23))
    cases = {b"x" + data[1:]: "ConstMismatchError", data[:42] + b"\x03" + data[43:]: "CountMismatchError",
             data[:50]: "TruncatedError"}
    for bad, error in cases.items():
        with pytest.raises(Refused) as exc:
            testee.decode("params", bad, {})
        assert exc.value.mlf_error == error
    with pytest.raises(MlfError, match="MLF_SPEC_KAITAI_PYTHON"):
        KaitaiTestee(None)


def test_unknown_legacy_kind_is_named_not_skipped(py):
    """Kaitai skips a switch with no matching case silently; the .ksy validates the kind."""
    from kaitaistruct import ValidationNotAnyOfError

    root = blob_codec.Module.lib(blob_codec.Module("opencl", blob_codec.new_payload(
        "opencl", format="legacy", era=(0, 20), fmt="cl", fmap=[], data=b"x")))
    data = bytearray(blob_codec.build(root, format="legacy", era=(0, 20)))
    at = data.index(b"opencl")
    data[at:at + 6] = b"vulkax"
    with pytest.raises(ValidationNotAnyOfError) as exc:
        py.read("blob_legacy", bytes(data), (0, 20))
    assert exc.value.actual == "vulkax"


# --------------------------------------------------------------------------------------------
# the generator's traps


def _emit(tmp_path: Path, extra: str) -> dict:
    from specgen.emit_kaitai import emit_kaitai
    from specgen.load import load

    spec = tmp_path / "spec"
    import shutil

    shutil.copytree(ROOT / "spec", spec)
    (spec / "binary" / "extra.yaml").write_text(textwrap.dedent(extra))
    _texts, objs, _rules = emit_kaitai(load(spec))
    return objs


def test_python_keywords_are_renamed_and_docs_escaped(tmp_path):
    """A field named like a Python keyword would make the generated Python a SyntaxError; doc
    texts are pasted into docstrings and comments verbatim."""
    from specgen import kaitai_node

    objs = _emit(tmp_path, '''\
        spec: binary
        name: extra
        title: t
        doc: 'Ends a docstring: """ and a JS comment: */ and has a backslash \\\\x41.'
        structs:
          - name: thing
            root: true
            doc: d
            fields:
              - {name: class, type: u8, doc: "a keyword"}
              - {name: from, type: vec, of: u16, doc: "another"}
              - {name: lambda, type: u8, doc: "\\"quoted\\""}
              - {name: n, type: u8, constraint: "n < 3", doc: "a rule"}
        ''')
    seq = objs["tvm_extra"]["seq"]
    assert [e["id"] for e in seq] == ["class_", "num_from_", "from_", "lambda_", "n"]
    assert seq[0]["-orig-id"] == "class"
    answer = kaitai_node.run({"specs": objs, "compile": [{"lang": lang, "main": "tvm_extra"}
                                                         for lang in ("python", "javascript")]})
    py_src = next(r for r in answer["results"] if r["lang"] == "python")["files"]["tvm_extra.py"]
    namespace: dict = {}
    sys.path.insert(0, str(tmp_path))
    try:
        for other in ("tvm_stream",):
            (tmp_path / f"{other}.py").write_text(
                next(r for r in answer["results"] if r["lang"] == "python")["files"][f"{other}.py"])
        exec(compile(py_src, "tvm_extra.py", "exec"), namespace)  # noqa: S102
    finally:
        sys.path.remove(str(tmp_path))
    import io

    from kaitaistruct import KaitaiStream, ValidationFailedError

    good = b"\x07" + (1).to_bytes(8, "little") + b"\x05\x00" + b"\x02"  # class, from (1 x u16), lambda
    obj = namespace["TvmExtra"](KaitaiStream(io.BytesIO(good + b"\x02")))
    assert (obj.class_, obj.from_, obj.lambda_, obj.n) == (7, [5], 2, 2)
    with pytest.raises(ValidationFailedError):
        namespace["TvmExtra"](KaitaiStream(io.BytesIO(good + b"\x03")))


def test_case_collisions_in_javascript_are_refused():
    from specgen.emit_kaitai import KsyError, check_collisions, lower_camel

    check_collisions(["code_v0_21", "code_v0_2"], "t", lower_camel)
    with pytest.raises(KsyError, match="both 'codeV021'"):
        check_collisions(["code_v0_21", "code_v02_1"], "t", lower_camel)


def test_generate_check_fails_clearly_without_the_node_packages(tmp_path):
    import os

    env = dict(os.environ, MLF_SPEC_NODE_CACHE=str(tmp_path / "empty"), PATH=str(Path(sys.executable).parent))
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "generate.py"), "--check"], capture_output=True,
                       text=True, env=env)
    assert r.returncode == 2
    assert "npm is not on PATH" in r.stderr and "Node.js" in r.stderr


def test_ksy_files_are_plain_yaml_with_quoted_expressions():
    """The compiler takes parsed YAML; a big integer or an expression with ': ' must stay a string."""
    def walk(x, name):
        if isinstance(x, dict):
            for k, v in x.items():
                assert not (isinstance(v, int) and abs(v) > JS_EXACT), (name, k, v)
                walk(v, name)
        elif isinstance(x, list):
            for v in x:
                walk(v, name)

    for name, data in kaitai.ksy_files().items():
        obj = yaml.safe_load(data)
        walk(obj, name)
        assert obj["meta"]["id"] == name.removesuffix(".ksy")
        assert math.isfinite(float(obj["meta"]["ks-version"]))
