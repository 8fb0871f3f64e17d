"""The library owns the documents the CLI prints: ``inspect``, ``params dump`` and ``blob
dump`` give an API user what ``--json`` prints (built in mlf_spec.mlf.inspection,
mlf_spec.params.listing and mlf_spec.blob.listing, typed by the generated TypedDicts of the
output records), and the rules the CLI applies (migration direction, loss names, ``--tvm``)
are the library's."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from mlf_spec.cli import main
from mlf_spec.errors import MigrationError, UnsupportedError

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("docs")
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        from make_example_artifacts import doc_files
    finally:
        sys.path.remove(str(ROOT / "examples"))
    doc_files(out)
    return out


def _cli_json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict:
    capsys.readouterr()
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_the_library_documents_are_what_the_cli_prints(files, capsys):
    from mlf_spec.blob import listing as blob_listing
    from mlf_spec.mlf import inspection
    from mlf_spec.params import listing as params_listing

    tar, params, so = (str(files / n) for n in ("model.tar", "model.params", "deploy.so"))
    doc = inspection.inspect(tar)
    assert doc == _cli_json(["inspect", "--json", tar], capsys)
    assert doc["version"] == 7 and [m["name"] for m in doc["modules"]] == ["default"]
    doc = params_listing.dump(params, stats=True, values=2)
    assert doc == _cli_json(["params", "dump", "--json", "--stats", "--values", "2", params], capsys)
    assert list(doc)[0] == "path" and doc["tensors"][0]["name"] == "w"
    doc = blob_listing.dump(so)
    assert doc == _cli_json(["blob", "dump", "--json", so], capsys)
    assert [m["kind"] for m in doc["blobs"][0]["modules"]] == ["_lib", "const_loader"]


def test_the_documents_have_the_keys_of_their_records(files):
    """Every key the TypedDicts declare as required is in the documents, and no other key."""
    from typing import get_type_hints

    from mlf_spec.generated import blob_dump_documents, mlf_inspect_output_documents, params_dump_documents

    from mlf_spec.blob import listing as blob_listing
    from mlf_spec.mlf import inspection
    from mlf_spec.params import listing as params_listing

    def keys_fit(doc: dict, cls: type) -> None:
        assert set(cls.__required_keys__) <= set(doc) <= set(get_type_hints(cls, include_extras=True)), cls

    doc = inspection.inspect(str(files / "model.tar"))
    keys_fit(doc, mlf_inspect_output_documents.InspectReport)
    keys_fit(doc["modules"][0], mlf_inspect_output_documents.Module)
    doc = params_listing.dump(str(files / "model.params"))
    keys_fit(doc, params_dump_documents.ParamsDump)
    keys_fit(doc["tensors"][0], params_dump_documents.TensorEntry)
    doc = blob_listing.dump(str(files / "deploy.so"))
    keys_fit(doc, blob_dump_documents.BlobDumpFile)
    keys_fit(doc["blobs"][0], blob_dump_documents.BlobDump)


def test_upgrade_and_downgrade_refuse_the_other_direction(files):
    from mlf_spec.mlf import migrate

    assert migrate.direction(3, 7) == "upgrade" and migrate.direction(7, 3) == "downgrade"
    assert migrate.direction(5, 5) == "none"
    migrate.check_direction("upgrade", 7, 7)  # staying is neither way
    with pytest.raises(MigrationError, match="already above 4") as err:
        migrate.upgrade(str(files / "model.tar"), 4)
    assert err.value.refusal == "direction"
    with pytest.raises(MigrationError, match="already below"):
        migrate.check_direction("downgrade", 3, 4)


def test_loss_names_are_checked_by_one_function():
    from mlf_spec.mlf import migrate

    migrate.check_loss_names(migrate.loss_names())
    with pytest.raises(MigrationError, match="no loss is called 'nope'"):
        migrate.check_loss_names(["nope"])


def test_every_tvm_option_is_checked_by_versions_known(files):
    from mlf_spec import versions
    from mlf_spec.blob import check as bcheck
    from mlf_spec.mlf import check as mcheck
    from mlf_spec.params import check as pcheck

    for bad in ("0.99", "banana"):
        with pytest.raises(UnsupportedError) as want:
            versions.known(bad)
        for run, name in ((mcheck.check, "model.tar"), (pcheck.check, "model.params"), (bcheck.check, "deploy.so")):
            with pytest.raises(UnsupportedError) as got:
                run(str(files / name), tvm=bad)
            assert got.value.message == want.value.message


def test_the_library_imports_nothing_from_the_cli():
    import ast

    for path in (ROOT / "mlf_spec").rglob("*.py"):
        rel = path.relative_to(ROOT / "mlf_spec")
        if rel.parts[0] in ("cli", "fuzzing"):  # the fuzz targets drive the CLI on purpose
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            assert not any(n == "mlf_spec.cli" or n.startswith("mlf_spec.cli.") for n in names), (rel, names)
