"""Many inputs per command: paths, directories, '-', JSON Lines, -j, kind sniffing, escaping."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from mlf_spec.generated.cli_error_models import CliError
from mlf_spec.generated.params_dump_models import ParamsDump

from mlf_spec import blob, cli, params, sniff

ROOT = Path(__file__).resolve().parents[2]


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
    assert out.strip().splitlines()[-1] == ("3 inputs: 2 ok, 0 with findings or refused, 1 unreadable; "
                                            "1 other file(s) skipped (not a .params file)")
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
    assert code == 2 and f"found nothing that is a .params file in {tmp_path}" in err


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
    assert sniff.sniff_path(tmp_path / "junk.gz").name == "compressed-data"


def test_help_and_version_do_not_import_the_codecs():
    code = ("import sys; from mlf_spec.cli import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "heavy = [m for m in ('numpy', 'pydantic', 'hypothesis', 'construct', 'mlf_spec.params.codec',"
            " 'mlf_spec.mlf.archive', 'mlf_spec.blob.codec') if m in sys.modules]\n"
            "print('HEAVY:' + ','.join(heavy))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip().splitlines()[-1] == "HEAVY:", r.stdout + r.stderr


def test_check_without_tvm_does_not_load_the_verdict_engine(tree):
    """The verdict rules are loaded for --tvm only (start-up of `check`, benchmarks/startup.py)."""
    code = ("import sys; from mlf_spec.cli import main\n"
            f"rc = main(['check', {str(tree / 'a.params')!r}])\n"
            "print('LOADED:', rc, 'mlf_spec.verdict.engine' in sys.modules)\n"
            f"main(['params', 'check', {str(tree / 'a.params')!r}, '--tvm', '0.27'])\n"
            "print('LOADED:', 'mlf_spec.verdict.engine' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert [line for line in r.stdout.splitlines() if line.startswith("LOADED:")] == ["LOADED: 0 False", "LOADED: True"], \
        r.stdout + r.stderr


def test_convert_several_inputs_into_a_directory(tree, tmp_path, capsys):
    out = tmp_path / "npz"
    code, text, err = run(["params", "convert", str(tree / "a.params"), str(tree / "sub"), "-o", str(out),
                           "--to", "npz"], capsys)
    assert code == 0 and sorted(p.name for p in out.iterdir()) == ["a.npz", "weights.npz"]
    assert f"{tree / 'a.params'} -> {out / 'a.npz'}: 1 tensors" in text
    back = tmp_path / "back"
    code, _, _ = run(["params", "convert", str(out), "-o", str(back), "--to", "params"], capsys)
    assert code == 0
    assert (back / "a.params").read_bytes() == (tree / "a.params").read_bytes()
    # an .npz named otherwise is recognised by content; an existing output is refused (1)
    (out / "a.npz").rename(out / "renamed.data")
    code, _, err = run(["params", "convert", str(out / "renamed.data"), "-o", str(back), "--to", "params"], capsys)
    assert code == 0
    code, _, err = run(["params", "convert", str(tree / "a.params"), "-o", str(back), "--to", "params"], capsys)
    assert code == 1 and "exists; pass --force" in err
    code, _, err = run(["params", "convert", str(tree / "a.params"), "-o", str(back)], capsys)
    assert code == 2 and "needs --to" in err


def test_a_damaged_archive_in_a_checked_folder_is_reported_not_skipped(tmp_path, capsys):
    sys.path.insert(0, str(ROOT / "examples"))
    from make_example_artifacts import main as make

    make(tmp_path / "demo")
    code, out, err = run(["check", str(tmp_path / "demo" / "ci")], capsys)
    assert code == 2
    assert "model7.tar: offset 1536 (0x600): bad tar header" in err  # truncated: its head looks like any tar
    assert out.strip().splitlines()[-1] == ("8 inputs: 6 ok, 1 with findings or refused, 1 unreadable; "
                                            "1 other file(s) skipped (not an artifact mlf-spec checks)")


def test_blob_extract_names_a_wrong_kind(tree, tmp_path, capsys):
    code, _, err = run(["blob", "extract", str(tree / "a.params"), "-o", str(tmp_path / "x.bin")], capsys)
    assert code == 2 and "this is a TVM .params tensor file, not a file holding a module blob" in err
    assert not (tmp_path / "x.bin").exists()


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
