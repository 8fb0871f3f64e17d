"""``mlf-spec extract ARCHIVE -o DIR``: what it writes, what it refuses, and that a failure
leaves neither a partial DIR nor a temporary directory behind."""

from __future__ import annotations

import io
import json
import os
import sys

import pytest
from hypothesis import given, settings
from mlf_spec.generated.cli_error_models import CliError
from mlf_spec.generated.extract_output_models import ExtractReport

from mlf_spec import archive
from mlf_spec import strategies as ms
from mlf_spec.cli import main
from tests.support.models import real_graph_v7


def tree(root) -> dict[str, bytes | None]:
    out: dict[str, bytes | None] = {}
    for dirpath, dirs, files in os.walk(root):
        for d in dirs:
            out[os.path.relpath(os.path.join(dirpath, d), root)] = None
        for f in files:
            p = os.path.join(dirpath, f)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, root)] = fh.read()
    return out


@pytest.fixture
def mlf(tmp_path):
    p = tmp_path / "m.tar"
    p.write_bytes(real_graph_v7())
    return p


def test_extracts_every_member_and_reports_it(mlf, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["extract", str(mlf), "-o", str(out), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    ExtractReport.model_validate(doc)
    with archive.open(mlf) as a:
        expected = {m.path: (None if m.is_dir else m.read()) for m in a.members if m.path != "."}
        assert doc == {"input": str(mlf), "output": str(out), "members": len(a.members),  # as inspect counts
                       "files": sum(v is not None for v in expected.values()),
                       "bytes": sum(len(v) for v in expected.values() if v is not None), "replaced": False}
    assert tree(out) == expected
    assert sorted(os.listdir(tmp_path)) == ["m.tar", "out"]  # no temporary directory left


def test_existing_directory_needs_force_and_is_replaced_whole(mlf, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "precious.txt").write_text("keep me")
    assert main(["extract", str(mlf), "-o", str(out)]) == 1
    assert "not empty; pass --force" in capsys.readouterr().err
    assert tree(out) == {"precious.txt": b"keep me"}
    assert main(["extract", str(mlf), "-o", str(out), "--force"]) == 0
    assert "replaced the old directory" in capsys.readouterr().out
    assert "precious.txt" not in tree(out) and "metadata.json" in tree(out)
    assert sorted(os.listdir(tmp_path)) == ["m.tar", "out"]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["extract", str(mlf), "-o", str(empty)]) == 0  # an empty directory is fine


def test_a_failure_half_way_leaves_nothing(mlf, tmp_path, monkeypatch, capsys):
    from mlf_spec.mlf.archive import Member

    calls = {"n": 0}
    real_pieces = Member.pieces  # extraction writes each member's pieces

    def failing(self, *a):
        calls["n"] += 1
        if calls["n"] == 4:
            raise OSError(28, "No space left on device")
        return real_pieces(self, *a)

    monkeypatch.setattr(Member, "pieces", failing)
    assert main(["extract", str(mlf), "-o", str(tmp_path / "out")]) == 2
    assert "No space left on device" in capsys.readouterr().err
    assert sorted(os.listdir(tmp_path)) == ["m.tar"]


@settings(max_examples=25)
@given(ms.broken_mlf_archives(kinds=tuple(k for k in ms.MLF_ARCHIVE_BROKEN_KINDS if k.startswith("unsafe:"))))
def test_unsafe_archives_are_refused_and_write_nothing(tmp_path_factory, case):
    kind, data = case.kind, case.data
    tmp = tmp_path_factory.mktemp("x")
    (tmp / "a.tar").write_bytes(data)
    code = main(["extract", str(tmp / "a.tar"), "-o", str(tmp / "out")])
    assert code == 2, kind
    assert sorted(os.listdir(tmp)) == ["a.tar"], kind


def test_wrong_kind_symlink_and_stdin(mlf, tmp_path, monkeypatch, capsys):
    (tmp_path / "x.params").write_bytes(bytes.fromhex("b79c04054f8de5f7") + bytes(16))
    assert main(["extract", str(tmp_path / "x.params"), "-o", str(tmp_path / "o"), "--json"]) == 2
    out, err = capsys.readouterr()
    CliError.model_validate(json.loads(out))
    assert "not an MLF archive; try `mlf-spec params dump`" in err
    os.symlink(tmp_path / "elsewhere", tmp_path / "link")
    assert main(["extract", str(mlf), "-o", str(tmp_path / "link")]) == 2
    assert "symbolic link" in capsys.readouterr().err
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(mlf.read_bytes())))
    assert main(["extract", "-", "-o", str(tmp_path / "fromstdin")]) == 0
    assert (tmp_path / "fromstdin" / "metadata.json").is_file()
