"""Many inputs per command: paths, directories, '-', JSON Lines, -j, kind sniffing, escaping."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import numpy as np
import pytest
from mlf_spec.generated.cli_error_models import CliError
from mlf_spec.generated.params_dump_models import ParamsDump

from mlf_spec import blob, cli, params, sniff


@pytest.fixture()
def tree(tmp_path):
    params.save({"w": np.arange(6, dtype="float32").reshape(2, 3)}, tmp_path / "a.params")
    params.save({"tab\tname\nnewline": np.zeros(2, "int8")}, tmp_path / "odd.params")
    (tmp_path / "broken.params").write_bytes((tmp_path / "a.params").read_bytes()[:40])
    sub = tmp_path / "sub"
    sub.mkdir()
    params.save({"b": np.ones(3, "int64")}, sub / "weights.bin")  # recognised by content, not name
    (sub / "notes.txt").write_text("not an artifact\n")
    return tmp_path


def run(argv, capsys):
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_several_paths_and_a_directory_give_one_result_each_and_the_worst_status(tree, capsys):
    code, out, err = run(["params", "dump", str(tree / "a.params"), str(tree / "sub"), str(tree / "broken.params")],
                         capsys)
    assert code == 2
    assert f"{tree / 'a.params'}: 1 tensors" in out and f"{tree / 'sub' / 'weights.bin'}: 1 tensors" in out
    assert "notes.txt" not in out + err
    assert out.strip().splitlines()[-1] == "3 inputs: 2 ok, 0 with findings or refused, 1 unreadable"
    assert err.count("mlf-spec: error:") == 1 and "broken.params" in err


def test_json_lines_hold_every_input_and_errors_as_objects(tree, capsys):
    code, out, err = run(["params", "dump", "--json", str(tree)], capsys)
    assert code == 2
    lines = [json.loads(line) for line in out.splitlines()]
    assert [d["path"] for d in lines] == [str(tree / n) for n in ("a.params", "broken.params", "odd.params",
                                                                   "sub/weights.bin")]
    bad = lines[1]
    CliError.model_validate(bad)
    assert bad["error"]["type"] == "TruncatedError" or bad["error"]["type"] == "LengthError"
    assert bad["error"]["offset"] is not None
    for d in (lines[0], lines[2], lines[3]):
        ParamsDump.model_validate(d)
    assert "4 inputs" in err  # the summary goes to stderr when stdout is JSON


def test_standard_input_is_read_with_a_dash(tree, monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO((tree / "a.params").read_bytes())))
    code, out, _ = run(["params", "dump", "-", "--json"], capsys)
    assert code == 0 and json.loads(out)["path"] == "<stdin>"


def test_a_pool_gives_the_same_lines_in_the_same_order(tree, capsys):
    one = run(["params", "dump", "--json", str(tree)], capsys)
    two = run(["params", "dump", "--json", "-j", "2", str(tree)], capsys)
    assert one[:2] == two[:2]


def test_control_characters_in_names_are_escaped_in_tables(tree, capsys):
    code, out, _ = run(["params", "dump", str(tree / "odd.params")], capsys)
    assert code == 0
    row = [line for line in out.splitlines() if line.startswith("tab")]
    assert row and row[0].startswith("tab\\tname\\nnewline")


def test_a_file_of_another_kind_is_named_with_the_command_that_reads_it(tmp_path, capsys):
    from hypothesis import given, settings

    from mlf_spec import strategies as ms

    found = []

    @settings(max_examples=1, database=None)
    @given(ms.mlf_archives(7))
    def grab(x):
        found.append(x[2])

    grab()
    (tmp_path / "model.tar").write_bytes(found[0])
    code, _, err = run(["params", "dump", str(tmp_path / "model.tar")], capsys)
    assert code == 2
    assert "this is an MLF archive, not a .params file; try `mlf-spec check`" in err
    assert "magic" not in err
    code, _, err = run(["inspect", str(tmp_path)], capsys)  # a folder holding the tar
    assert code == 0


def test_blob_dump_rejects_a_params_file_by_name(tree, capsys):
    code, _, err = run(["blob", "dump", str(tree / "a.params")], capsys)
    assert code == 2 and "this is a TVM .params tensor file" in err and "mlf-spec params dump" in err


def test_nothing_found_is_an_error(tmp_path, capsys):
    (tmp_path / "x.txt").write_text("hello")
    code, _, err = run(["params", "dump", str(tmp_path)], capsys)
    assert code == 2 and f"no a .params file found in {tmp_path}" in err


@pytest.mark.parametrize("make, kind", [
    (lambda p: params.save({"x": np.zeros(1, "f4")}, p), "params"),
    (lambda p: p.write_bytes(blob.build(blob.Module.lib(blob.Module.of("const_loader", variables=["c"],
                                                                          arrays=[np.ones(2, "f4")],
                                                                          symbols=["f"], const_vars=[["c"]])))),
     "blob"),
    (lambda p: p.write_text('{"nodes": [], "arg_nodes": [], "heads": []}'), "graph-json"),
    (lambda p: p.write_text('{"version": 7, "modules": {}}'), "mlf-metadata"),
    (lambda p: p.write_bytes(b"\x7fELF" + bytes(60)), "library"),
    (lambda p: p.write_text('const unsigned char __tvm_ffi__library_bin[] = {0x01};'), "c-source"),
    (lambda p: p.write_bytes(b""), "empty"),
    (lambda p: np.savez(p, a=np.zeros(2)), "zip"),
])
def test_sniffing_recognises_kinds_by_content(tmp_path, make, kind):
    p = tmp_path / "input"
    make(p)
    if kind == "zip":
        p = tmp_path / "input.npz"
        assert sniff.sniff_path(p).name == "npz"
        return
    assert sniff.sniff_path(p).name == kind


def test_compressed_tars_are_sniffed_through_the_compression(tmp_path):
    import bz2
    import gzip
    import lzma
    import tarfile

    src = tmp_path / "metadata.json"
    src.write_text("{}")
    plain = tmp_path / "m.tar"
    with tarfile.open(plain, "w", format=tarfile.PAX_FORMAT) as t:
        t.add(src, arcname="./metadata.json")
    data = plain.read_bytes()
    for comp, ext in ((gzip.compress, "gz"), (bz2.compress, "bz2"), (lzma.compress, "xz")):
        p = tmp_path / f"m.tar.{ext}"
        p.write_bytes(comp(data))
        assert sniff.sniff_path(p).name == "mlf-archive", ext
    (tmp_path / "junk.gz").write_bytes(gzip.compress(b"hello"))
    assert sniff.sniff_path(tmp_path / "junk.gz").name == "compressed"


def test_help_and_version_do_not_import_the_codecs():
    code = ("import sys; from mlf_spec.cli import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "heavy = [m for m in ('numpy', 'pydantic', 'hypothesis', 'construct', 'mlf_spec.params.codec',"
            " 'mlf_spec.mlf.archive', 'mlf_spec.blob.codec') if m in sys.modules]\n"
            "print('HEAVY:' + ','.join(heavy))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip().splitlines()[-1] == "HEAVY:", r.stdout + r.stderr


def test_a_corrupt_compressed_stream_is_sniffed_without_a_traceback(tmp_path, capsys):
    # Found by the fuzz harness (issue 11, cli target): a gzip stream with a bad back-reference
    # made sniffing raise zlib.error from every reading command (a traceback, status 1).
    import gzip as _gzip

    good = _gzip.compress(b"x" * 100_000)
    bad = bytearray(good)
    bad[20:40] = b"\xff" * 20
    path = tmp_path / "bad.tar.gz"
    path.write_bytes(bytes(bad))
    assert sniff.sniff_path(path).name == "compressed"
    assert sniff.sniff_bytes(bytes(bad)).name == "compressed"
    for argv in (["inspect", str(path)], ["check", str(path)], ["blob", "dump", str(path)]):
        assert cli.main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("mlf-spec: error: ") and "Traceback" not in err
