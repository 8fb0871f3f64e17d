"""The generated plain back end (generated/mlf_plain.py, graph_json_plain.py: validators and
typed records) and the pydantic models accept and refuse the same metadata and graph
documents: on the conformance vectors, on hypothesis-made valid documents and on those
documents broken one value, key or type at a time; where both accept, the typed records
read the same (data, dumps, writer revisions). Archive check and inspect run without
pydantic."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mlf_spec.generated import graph_json_plain, mlf_plain

from mlf_spec._records import validate as pydantic_validate
from mlf_spec.cli import COMMANDS
from mlf_spec.errors import MlfError
from mlf_spec.mlf import metadata as md
from mlf_spec.mlf.strategies import metadata_documents
from tests.support.imports import modules_after

ROOT = Path(__file__).resolve().parents[2]
TARGETS = [(v, s) for v in md.VERSIONS for s in md.styles(v)]


def _verdicts(doc: Any) -> list[tuple[int, str, bool, bool]]:
    """(version, style, pydantic accepts, plain accepts) for every version and style."""
    out = []
    for v, s in TARGETS:
        value, issues = pydantic_validate(md.model_for(v, s), doc)
        out.append((v, s, value is not None and not issues, not mlf_plain.validate(doc, v, s)))
    return out


def _agree(doc: Any) -> None:
    for v, s, by_pydantic, by_plain in _verdicts(doc):
        assert by_pydantic == by_plain, (v, s, by_pydantic, mlf_plain.validate(doc, v, s), json.dumps(doc)[:400])
    _typed_agree(doc)
    _read_agrees(doc)


def _outcome(doc: Any, **how: Any) -> tuple[str, Any]:
    """What ``from_document`` gives: the error's text, or the document's data and unknown keys."""
    try:
        got = md.from_document(copy.deepcopy(doc), **how)
    except MlfError as exc:
        return "refused", str(exc)
    return "read", (got.version, got.style, md.to_data(got.document), got.unknown, got.dumps())


def _read_agrees(doc: Any) -> None:
    """``from_document(plain=True)`` (archives' metadata, migrations) reads and refuses a
    document under its declared version as the models do: same data, same unknown keys,
    same error text, strict and lenient."""
    for lenient in (False, True):
        by_plain = _outcome(doc, lenient=lenient, plain=True)
        assert by_plain == _outcome(doc, lenient=lenient), (lenient, json.dumps(doc)[:400])
        if by_plain[0] == "read":
            assert isinstance(md.from_document(copy.deepcopy(doc), lenient=lenient, plain=True).document,
                              mlf_plain.PlainRecord)


def _typed_agree(doc: Any) -> None:
    """Where pydantic accepts a document leniently (unknown keys kept), the plain validators
    find nothing but unknown keys, and the plain typed records read as the model does."""
    if not isinstance(doc, dict):
        return
    for v, s in TARGETS:
        value, issues = pydantic_validate(md.model_for(v, s), doc, lenient=True)
        found = mlf_plain.validate(doc, v, s)
        plain_ok = all(m == "unknown key" for _, m in found)
        assert (value is not None) == plain_ok, (v, s, issues, found)
        if value is None:
            continue
        typed, checked = md.check_document(doc, v, s)
        assert isinstance(typed, mlf_plain.PlainRecord) and not [i for i in checked if i.kind != "unknown-key"]
        assert md.to_data(typed) == md.to_data(value)
        assert md.dumps(typed, v, s) == md.dumps(value, v, s)
        assert md.fields_set(typed) == md.fields_set(value)
        got_modules = md.Metadata(v, s, typed).modules
        for name, want in md.Metadata(v, s, value).modules.items():
            got = got_modules[name]
            for ident in type(want).model_fields:
                assert md.to_data(getattr(got, ident)) == md.to_data(getattr(want, ident)), (v, s, name, ident)
        assert md.consistent_revisions(md.Metadata(v, s, typed)) == md.consistent_revisions(md.Metadata(v, s, value))


def _vector_documents() -> list[Path]:
    out = []
    for p in sorted((ROOT / "vectors").glob("*/*metadata.json")):
        try:
            json.loads(p.read_bytes())
        except ValueError:  # not JSON: refused before either validator runs
            continue
        out.append(p)
    return out


def test_the_vectors_are_there():
    assert len(_vector_documents()) > 100


@pytest.mark.parametrize("path", _vector_documents(), ids=lambda p: p.name)
def test_both_back_ends_agree_on_the_vectors(path):
    _agree(json.loads(path.read_bytes()))


def test_a_valid_example_of_every_version_passes_both():
    from mlf_spec.generated import mlf_ir

    seen = set()
    for ex in mlf_ir.EXAMPLES:
        doc, v, s = ex["value"], ex["version"], ex["style"]
        assert mlf_plain.validate(doc, v, s) == []
        seen.add(v)
        _agree(doc)
    assert seen == set(md.VERSIONS)


_ODD_VALUES = [None, True, False, 0, 1, -1, 7, 2**70, 1.0, 1.5, "", "x", "7", "2021-01-01 00:00:00Z\n", [], [1], {},
               {"x": 1}, ["graph"], ["aot", "graph"], "graph"]


@st.composite
def broken_documents(draw: Any) -> Any:
    """A valid document with one place changed: a value replaced, a key dropped or added."""
    _, _, doc = draw(metadata_documents())
    return _break(draw, copy.deepcopy(doc))


def _break(draw: Any, doc: Any) -> Any:
    places: list[tuple[Any, Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                places.append((node, k))
                walk(v)
        elif isinstance(node, list):
            for i, v in enumerate(node):
                places.append((node, i))
                walk(v)

    walk(doc)
    container, key = draw(st.sampled_from(places)) if places else (doc, "version")
    how = draw(st.sampled_from(["replace", "drop", "add", "version"]))
    if how == "replace" or (how == "drop" and isinstance(container, list)):
        container[key] = draw(st.sampled_from(_ODD_VALUES))
    elif how == "drop":
        del container[key]
    elif how == "add":
        target = container if isinstance(container, dict) else doc
        target[draw(st.sampled_from(["x_unknown", "model_name", "sids", "version", "1", "01"]))] = draw(
            st.sampled_from(_ODD_VALUES))
    else:
        doc["version"] = draw(st.sampled_from(md.VERSIONS))
    return doc


@settings(max_examples=30)
@given(metadata_documents())
def test_both_back_ends_accept_generated_documents(drawn):
    version, style, doc = drawn
    assert mlf_plain.validate(doc, version, style) == []
    _agree(doc)


@settings(max_examples=100)
@given(broken_documents())
def test_both_back_ends_agree_on_broken_documents(doc):
    _agree(doc)


# ----------------------------------------------------------------- graph JSON


def _graph_agree(doc: Any) -> None:
    """Both back ends give the same verdict, strict and lenient; where they accept, the
    typed records read as the model does and the unknown keys are the same."""
    from mlf_spec.generated import graph_json_models
    from mlf_spec.generated._recordlib import to_data

    from mlf_spec import graph_json

    for lenient in (False, True):
        value, issues = pydantic_validate(graph_json_models.Graph, doc, lenient=lenient)
        found = graph_json_plain.validate(doc)
        plain_ok = not found or (lenient and all(m == "unknown key" for _, m in found))
        assert (value is not None) == plain_ok, (lenient, issues, found, json.dumps(doc)[:400])
        if value is None or not isinstance(doc, dict):
            continue
        typed = graph_json_plain.typed(doc)
        assert graph_json_plain.to_data(typed) == to_data(value)
        g, checked = graph_json.check_document(doc)
        assert g is not None and isinstance(g.model, graph_json_plain.Graph)
        assert [i.path for i in checked] == [i.path for i in issues], (checked, issues)
        for node, want in zip(typed.nodes, value.nodes):
            assert type(node).__name__ == type(want).__name__ and node.name == want.name
        if not checked:
            assert graph_json.structure_issues(g) == graph_json.structure_issues(graph_json.GraphDocument(value, doc))


def _graph_vectors() -> list[Path]:
    out = []
    for p in sorted((ROOT / "vectors" / "graph-json").glob("*.graph.json")):
        try:
            json.loads(p.read_bytes())
        except ValueError:
            continue
        out.append(p)
    return out


@pytest.mark.parametrize("path", _graph_vectors(), ids=lambda p: p.name)
def test_both_back_ends_agree_on_the_graph_vectors(path):
    _graph_agree(json.loads(path.read_bytes()))


def test_the_graph_vectors_are_there():
    assert len(_graph_vectors()) >= 15


@st.composite
def broken_graphs(draw: Any) -> Any:
    """A valid graph with one place changed: a value replaced, a key dropped or added."""
    from mlf_spec.strategies import graph_jsons

    doc = json.loads(draw(graph_jsons()))
    return _break(draw, doc) if draw(st.booleans()) else doc


@settings(max_examples=60)
@given(broken_graphs())
def test_both_back_ends_agree_on_graphs(doc):
    _graph_agree(doc)


def test_shape_detection_gives_the_models_verdicts():
    """metadata.detect finds the versions a document fits with the plain validators; the
    fits are the (version, style) pairs whose pydantic model accepts the document."""
    from mlf_spec.generated import mlf_ir

    for ex in mlf_ir.EXAMPLES[:12]:
        doc = dict(ex["value"])
        doc.pop("version", None)
        want = []
        for v in md.VERSIONS:
            trial = dict(doc, version=v)
            s = md.style_of(trial, v)
            value, issues = pydantic_validate(md.model_for(v, s), trial)
            if value is not None and not issues:
                want.append((v, s))
        assert md.detect(doc).fits == want and want




def test_reading_imports_no_pydantic(tmp_path):
    """params dump, params check, blob dump, check of a .params file and check and inspect
    of MLF archives (graph and AOT, text and JSON) run without pydantic."""
    import sys

    from mlf_spec import params

    sys.path.insert(0, str(ROOT / "examples"))
    try:
        from make_example_artifacts import aot_archive_object, small_archive
    finally:
        sys.path.remove(str(ROOT / "examples"))
    p = tmp_path / "a.params"
    params.save({"w": __import__("numpy").ones(3, "float32")}, p)
    blob = sorted((ROOT / "vectors" / "blob").glob("*.bin"))[0]
    graph, aot = tmp_path / "graph.tar", tmp_path / "aot.tar"
    graph.write_bytes(small_archive())
    aot_archive_object().write(aot)
    for argv in (["params", "dump", str(p)], ["params", "check", str(p)], ["check", str(p)], ["blob", "dump", str(blob)],
                 ["check", str(graph)], ["check", "--json", str(aot)], ["inspect", str(graph)],
                 ["inspect", "--json", str(aot)]):
        mods = modules_after(argv)
        assert f"mlf_spec.cli.{COMMANDS[argv[0]][0]}" in mods, argv  # the command ran
        assert "pydantic" not in mods, argv
    assert "mlf_spec.mlf.check" in modules_after(["check", str(graph)])  # the archive was checked


def test_tvm_verdicts_and_migrations_import_no_pydantic(tmp_path):
    """check --tvm (the readers read the archive's metadata), upgrade and downgrade of
    archives and of a bare metadata.json, and the library's migrate.upgrade run without
    pydantic when the documents are valid."""
    import subprocess
    import sys
    import tarfile

    sys.path.insert(0, str(ROOT / "examples"))
    try:
        from make_example_artifacts import aot_archive_object, small_archive
    finally:
        sys.path.remove(str(ROOT / "examples"))
    graph, aot = tmp_path / "graph.tar", tmp_path / "aot.tar"
    graph.write_bytes(small_archive())
    aot_archive_object().write(aot)
    v6, up, v5 = tmp_path / "v6.tar", tmp_path / "up.tar", tmp_path / "v5.json"
    with tarfile.open(graph) as t:
        (tmp_path / "metadata.json").write_bytes(t.extractfile("./metadata.json").read())  # type: ignore[union-attr]
    runs = [(["check", "--tvm", "0.12", str(graph)], "mlf_spec.mlf.readers", None),
            (["check", "--tvm", "0.12", "--json", str(aot)], "mlf_spec.mlf.readers", None),
            (["downgrade", "--to", "6", str(graph), "-o", str(v6)], "mlf_spec.mlf.migrate", v6),
            (["upgrade", str(v6), "-o", str(up)], "mlf_spec.mlf.migrate", up),
            (["downgrade", "--to", "5", "--accept-loss", "v6_v7.main_io", str(tmp_path / "metadata.json"), "-o", str(v5)], "mlf_spec.mlf.migrate", v5)]
    for argv, ran, wrote in runs:
        mods = modules_after(argv)
        assert ran in mods, argv  # the verdict was given / the migration ran
        assert wrote is None or wrote.exists(), argv
        assert "pydantic" not in mods, argv
    assert tarfile.open(up).extractfile("./metadata.json").read() == (tmp_path / "metadata.json").read_bytes()  # type: ignore[union-attr]
    code = (f"import sys\nfrom mlf_spec import migrate\nr = migrate.upgrade({str(v6)!r})\n"
            "print(r.version, 'pydantic' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["7", "False"]
