"""The edges a new user meets (issue 18): path mistakes and hostile inputs for every
command give one line and exit 2, never a traceback, and leave nothing behind."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mlf_spec import params
from mlf_spec.blob.locate import SYMBOL_FFI, c_source_for_blob
from mlf_spec.cli import main
from mlf_spec.fuzzing.seeds import elf_with_blob

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))
from make_example_artifacts import small_archive  # noqa: E402

VECTOR_BIN = ROOT / "vectors" / "blob" / "blob.ffi.0.23.opaque_payload.bin"


@pytest.fixture(scope="module")
def art(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of one artifact of each kind the commands read."""
    d = tmp_path_factory.mktemp("art")
    params.save({"w": np.arange(6, dtype="float32").reshape(2, 3)}, d / "a.params")
    (d / "a.tar").write_bytes(small_archive())
    blob = VECTOR_BIN.read_bytes()
    (d / "lib.so").write_bytes(elf_with_blob(blob, SYMBOL_FFI, shared=True))
    (d / "devc.c").write_text(c_source_for_blob(blob, SYMBOL_FFI, None))
    (d / "a.bin").write_bytes(blob)
    (d / "file").write_text("a file where a folder is wanted\n")
    return d


def _listing(*dirs: Path) -> set[str]:
    return {os.path.join(root, f) for d in dirs for root, ds, fs in os.walk(d) for f in fs + ds}


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Run the CLI in this process (a traceback would fail the test by raising)."""
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


#: Every command that writes, with {IN} (its input) and {OUT} (its output path) to fill.
WRITERS = [
    ("params convert {a.params} {OUT}", "file", "npz"),
    ("params convert {a.params} -o {OUT} --to npz", "dir", None),
    ("blob extract {lib.so} -o {OUT}", "file", "bin"),
    ("blob extract {devc.c} -o {OUT}", "file", "c"),
    ("extract {a.tar} -o {OUT}", "dir", None),
    ("upgrade {a.tar} -o {OUT} --force", "file", "tar"),
    ("downgrade {a.tar} --to 6 -o {OUT} --force", "file", "tar"),
    ("upgrade {a.tar} {a.tar} -o {OUT}", "dir", None),
    ("export ksy {OUT}", "dir", None),
    ("conformance vectors {OUT} --format graph-json", "dir", None),
    ("conformance run --adapter mlf-spec --id nothing-at-all --report-json {OUT}", "file", "jsonl"),
    ("conformance run --adapter mlf-spec --id nothing-at-all --junit {OUT}", "file", "xml"),
]


def _argv(template: str, art: Path, out: str) -> list[str]:
    words = []
    for w in template.split():
        if w == "{OUT}":
            words.append(out)
        elif w.startswith("{") and w.endswith("}"):
            words.append(str(art / w[1:-1]))
        else:
            words.append(w)
    return words


def _input_of(template: str, art: Path) -> Path:
    first = next(w for w in template.split() if w.startswith("{") and w != "{OUT}")
    return art / first[1:-1]


def _writer_cases() -> list:
    cases = []
    for i, (template, kind, ext) in enumerate(WRITERS):
        for case in ("missing-folder", "folder-is-a-file", "proc", "equals-input", "file-for-folder"):
            if case == "equals-input" and (kind != "file" or "conformance" in template):
                continue  # the output is a directory (an input file is never one) or nothing is read
            if case == "file-for-folder" and "grade" in template:
                continue  # upgrade -o EXISTING_DIR writes into it (documented)
            name = template.split(" {")[0].replace(" ", "-")
            cases.append(pytest.param(template, kind, ext, case, id=f"{name}-{i}-{case}"))
    return cases


@pytest.mark.parametrize(("template", "kind", "ext", "case"), _writer_cases())
def test_every_writer_refuses_path_mistakes_in_one_line(art: Path, tmp_path: Path, capsys, template: str, kind: str,
                                                        ext: str | None, case: str) -> None:
    suffix = f".{ext}" if ext else ""
    if case == "missing-folder":
        out = str(tmp_path / "no" / "such" / f"out{suffix}")
    elif case == "folder-is-a-file":
        out = str(art / "file" / f"out{suffix}")
    elif case == "proc":
        out = f"/proc/mlf-spec-nope/out{suffix}" if kind == "file" else "/proc/mlf-spec-nope"
    elif case == "equals-input":
        out = str(_input_of(template, art))
    else:  # an existing file where a folder is wanted, or a folder where a file is wanted
        out = str(art / "file") if kind == "dir" else str(tmp_path)
    before = _listing(art, tmp_path)
    stamp = {p: os.stat(p).st_mtime_ns for p in before if os.path.isfile(p)}
    code, _, err = run(_argv(template, art, out), capsys)
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mlf-spec: error: "), err
    assert "Traceback" not in err and "Errno" not in err
    assert _listing(art, tmp_path) == before  # nothing left behind
    assert {p: os.stat(p).st_mtime_ns for p in stamp} == stamp  # nothing modified


def test_the_path_checks_name_the_mistake(art: Path, tmp_path: Path, capsys) -> None:
    code, _, err = run(["params", "convert", str(art / "a.params"), str(tmp_path / "x" / "o.npz")], capsys)
    assert code == 2 and "does not exist" in err and str(tmp_path / "x") in err
    code, _, err = run(["params", "convert", str(art / "a.params"), str(art / "a.params"), "--force"], capsys)
    assert code == 2 and "the output is the input" in err
    code, _, err = run(["conformance", "vectors", str(art / "file")], capsys)
    assert code == 2 and "not a directory" in err


HOSTILE_INPUTS = ["missing", "directory", "empty", "dev-null", "proc-file", "binary", "text"]


def _hostile(name: str, tmp_path: Path) -> str:
    if name == "missing":
        return str(tmp_path / "missing.params")
    if name == "directory":
        (tmp_path / "emptydir").mkdir(exist_ok=True)
        return str(tmp_path / "emptydir")
    if name == "empty":
        (tmp_path / "empty").write_bytes(b"")
        return str(tmp_path / "empty")
    if name == "dev-null":
        return "/dev/null"
    if name == "proc-file":
        return "/proc/self/status"
    if name == "binary":
        (tmp_path / "noise.bin").write_bytes(bytes(range(256)) * 7)
        return str(tmp_path / "noise.bin")
    (tmp_path / "notes.md").write_text("# notes\nmentions __tvm_dev_mblob and __tvm_ffi__library_bin\n")
    return str(tmp_path / "notes.md")


READERS = ["params dump {IN}", "params check {IN}", "blob dump {IN}", "blob check {IN}", "inspect {IN}",
           "check {IN}", "diff {IN} {IN}", "extract {IN} -o {TMP}/x", "upgrade {IN} -o {TMP}/x.tar",
           "downgrade {IN} --to 6 -o {TMP}/x.tar", "params convert {IN} {TMP}/x.npz",
           "blob extract {IN} -o {TMP}/x.bin"]


@pytest.mark.parametrize("hostile", HOSTILE_INPUTS)
@pytest.mark.parametrize("template", READERS)
def test_every_reader_gives_one_line_and_exit_2_for_hostile_input(tmp_path: Path, capsys, template: str,
                                                                  hostile: str) -> None:
    src = _hostile(hostile, tmp_path)
    before = _listing(tmp_path)
    argv = [w.replace("{IN}", src).replace("{TMP}", str(tmp_path)) for w in template.split()]
    code, _, err = run(argv, capsys)
    assert code == 2, (argv, err)
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if line.startswith("mlf-spec: error: ")]
    assert errors, err
    assert _listing(tmp_path) == before


def test_no_traceback_in_a_real_process(tmp_path: Path) -> None:
    """The console entry point, not only main(): a path mistake is one line on stderr."""
    p = tmp_path / "a.params"
    params.save({"w": np.zeros(2, "float32")}, p)
    r = subprocess.run([sys.executable, "-m", "mlf_spec", "params", "convert", str(p), str(tmp_path / "no" / "o.npz")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr


# ------------------------------------------------- item 2: non-artifacts are never "conformant"


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Files that are no TVM artifact though they sniff as one, and TVM libraries without a blob."""
    d = tmp_path_factory.mktemp("plain")
    files = {
        "program": elf_with_blob(b"\x01" * 32, "some_table", shared=True),  # an ELF with no TVM symbol
        "program2": elf_with_blob(b"\x02" * 48, "other_table", shared=True),
        "mentions.md": b"# notes\nexport_library writes `__tvm_dev_mblob` and __tvm_ffi__library_bin.\n",
        "mentions.c": b"/* __tvm_ffi__library_bin */\nextern const char* __tvm_dev_mblob;\nint f(void) { return 0; }\n",
        "tvm_lib.so": elf_with_blob(b"\x00" * 8, "__tvm_module_ctx", shared=True),  # TVM host code, no imports
        "tvm_lib2.so": elf_with_blob(b"\x00" * 16, "__tvm_ffi__library_ctx", shared=True),
    }
    for name, data in files.items():
        (d / name).write_bytes(data)
    return {name: d / name for name in files}


@pytest.mark.parametrize("name", ["program", "mentions.md", "mentions.c"])
@pytest.mark.parametrize("command", [["check"], ["blob", "check"], ["blob", "dump"], ["blob", "extract"]])
def test_a_file_that_is_no_tvm_artifact_is_never_conformant(plain, capsys, tmp_path, name: str,
                                                            command: list[str]) -> None:
    extra = ["-o", str(tmp_path / "x.bin")] if command[-1] == "extract" else []
    code, out, err = run([*command, str(plain[name]), *extra], capsys)
    assert code == 2 and "conformant" not in out
    assert err.strip().splitlines() == [f"mlf-spec: error: {plain[name]}: not a TVM artifact: it holds no module "
                                        "blob and nothing in it shows that TVM wrote it"]


def test_diff_agrees_with_dump_and_check(plain, capsys) -> None:
    code, _, err = run(["diff", str(plain["program"]), str(plain["program2"])], capsys)
    assert code == 2 and "not a TVM artifact" in err
    # two TVM libraries without a blob: dump and check call them TVM libraries, diff says they differ
    for lib in ("tvm_lib.so", "tvm_lib2.so"):
        code, out, _ = run(["blob", "dump", str(plain[lib])], capsys)
        assert code == 0 and "no module blob (it defines __tvm_" in out
        code, out, _ = run(["check", str(plain[lib])], capsys)
        assert code == 0 and "library.no-blob" in out
    code, out, _ = run(["diff", str(plain["tvm_lib.so"]), str(plain["tvm_lib2.so"])], capsys)
    assert code == 1 and "neither holds a module blob; the files differ" in out
    code, out, _ = run(["diff", str(plain["tvm_lib.so"]), str(plain["tvm_lib.so"])], capsys)
    assert code == 0


def test_a_folder_skips_and_counts_what_is_no_tvm_artifact(plain, art, capsys) -> None:
    code, out, err = run(["check", str(plain["program"].parent)], capsys)
    assert code == 0, err
    assert "2 inputs: 2 ok" in out and "4 other file(s) skipped" in out
    assert "program" not in out.replace("4 other", "")


def test_export_tar_evidence_is_its_member_layout(tmp_path, capsys) -> None:
    import io
    import tarfile

    def tar(members: dict[str, bytes]) -> bytes:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tf:
            for n, data in members.items():
                ti = tarfile.TarInfo(n)
                ti.size = len(data)
                tf.addfile(ti, io.BytesIO(data))
        return buf.getvalue()

    (tmp_path / "export.tar").write_bytes(tar({"lib0.o": elf_with_blob(b"\0" * 8, "__tvm_module_ctx"),
                                               "lib1.c": b"int x;\n"}))
    (tmp_path / "other.tar").write_bytes(tar({"lib0.c": b"int x;\n", "README": b"hello"}))
    code, out, _ = run(["check", str(tmp_path / "export.tar")], capsys)
    assert code == 0 and "library.no-blob" in out
    code, _, err = run(["check", str(tmp_path / "other.tar")], capsys)
    assert code == 2 and "not a TVM artifact" in err


# ------------------------------------------------- item 3: an MLF archive is never an export tar


def test_an_aot_archive_round_trips_v7_v2_v7_even_with_large_sources(tmp_path, capsys) -> None:
    from make_example_artifacts import aot_archive_object

    a = aot_archive_object()
    # sources larger than the sniffer's peek: in v2 metadata.json comes after codegen/host/src/lib0.c
    a.replace("codegen/host/src/add_lib0.c", b"/* generated */\n" + b"int pad;\n" * 20_000)
    a.write(tmp_path / "aot.tar")
    from mlf_spec import sniff

    assert sniff.sniff_path(tmp_path / "aot.tar").name == "mlf-archive"
    losses = ["v6_v7.main_io", "v6_v7.templates", "v4_v5.standalone_crt", "v4_v5.c_header"]
    accept = [w for n in losses for w in ("--accept-loss", n)]
    assert run(["downgrade", str(tmp_path / "aot.tar"), "--to", "2", "-o", str(tmp_path / "v2.tar"), *accept],
               capsys)[0] == 0
    assert sniff.sniff_path(tmp_path / "v2.tar").name == "mlf-archive"
    code, out, _ = run(["check", str(tmp_path / "v2.tar")], capsys)
    assert code == 0 and "version 2" in out and "blob" not in out
    code, out, err = run(["upgrade", str(tmp_path / "v2.tar"), "-o", str(tmp_path / "v7.tar")], capsys)
    assert code == 0, err
    code, out, _ = run(["check", str(tmp_path / "v7.tar")], capsys)
    assert code == 0 and "version 7" in out


# ------------------------------------------------- item 4: a bare metadata.json is checked


def test_a_bare_metadata_json_is_checked_against_its_version(art, tmp_path, capsys) -> None:
    import json
    import tarfile

    with tarfile.open(art / "a.tar") as tf:
        member = next(m for m in tf.getmembers() if m.name.lstrip("./") == "metadata.json")
        doc = json.loads(tf.extractfile(member).read())  # type: ignore[union-attr]
    good = tmp_path / "metadata.json"
    good.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    code, out, err = run(["check", str(good)], capsys)
    assert code == 0, err
    assert "metadata.json of version 7, full-model: conformant" in out
    bad = tmp_path / "bad" / "metadata.json"
    bad.parent.mkdir()
    del doc["modules"]["add"]["export_datetime"]
    doc["extra"] = 1
    bad.write_text(json.dumps(doc))
    code, out, _ = run(["check", str(bad)], capsys)
    assert code == 1 and "export_datetime: required key is missing" in out and "metadata.unknown-key: extra" in out
    code, out, _ = run(["check", "--json", str(bad)], capsys)
    assert code == 1 and json.loads(out)["version"] == 7
    other = tmp_path / "package.json"
    other.write_text(json.dumps({"name": "x", "version": "1.0", "nested": {"version": 1, "target": "c"}}))
    code, _, err = run(["check", str(other)], capsys)
    assert code == 2 and "MLF metadata" not in err and "no known kind" in err


# ------------------------------------------------- items 7, 8: --fail-on and one validation of versions


@pytest.mark.parametrize("argv", [
    ["check", "--tvm", "0.99"], ["check", "--tvm", "1.5"], ["check", "--tvm", "0.1"], ["check", "--from", "0.99"],
    ["params", "check", "--tvm", "0.99"], ["params", "check", "--from", "9.9"], ["blob", "check", "--tvm", "0.99"],
    ["blob", "check", "--era", "0.99"], ["blob", "dump", "--era", "0.99"], ["params", "dump", "--dialect", "0.99"],
    ["params", "check", "--dialect", "v0.99"], ["check", "--dialect", "1.0"], ["blob", "dump", "--era", "x"],
])
def test_every_version_option_refuses_unknown_versions_with_the_range(art, capsys, argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main([*argv, str(art / "a.params")])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "0.2 to 0.27" in err or "from 0.2 to 0.27" in err, err


def test_fail_on_turns_a_bad_verdict_into_exit_1(art, tmp_path, capsys) -> None:
    # TVM 0.27 has no MLF reader: "rejects"
    tar = str(art / "a.tar")
    assert run(["check", "--tvm", "0.27", tar], capsys)[0] == 0
    assert run(["check", "--tvm", "0.27", "--fail-on", "rejects", tar], capsys)[0] == 1
    assert run(["check", "--tvm", "0.27", "--fail-on", "misreads", tar], capsys)[0] == 1
    assert run(["check", "--tvm", "0.27", "--fail-on", "crashes", tar], capsys)[0] == 0
    # a bool tensor written by 0.16 (code 1, 1 bit) is read by 0.27 as another dtype
    p = tmp_path / "b.params"
    params.save({"m": np.array([True, False])}, p, dialect="0.16")
    code, out, _ = run(["params", "check", "--tvm", "0.27", "--from", "0.16", str(p)], capsys)
    verdict = out.split("TVM 0.27")[1].split(":")[1].split()[0]
    assert code == 0 and verdict in ("misreads", "rejects", "crashes")
    assert run(["params", "check", "--tvm", "0.27", "--from", "0.16", "--fail-on", verdict, str(p)], capsys)[0] == 1
    assert run(["blob", "check", "--tvm", "0.27", "--fail-on", "misreads", str(art / "a.bin")], capsys)[0] in (0, 1)


def test_check_says_why_a_kind_has_no_verdict(art, tmp_path, capsys) -> None:
    import tarfile

    with tarfile.open(art / "a.tar") as tf:
        member = next(m for m in tf.getmembers() if m.name.endswith(".graph"))
        (tmp_path / "graph.json").write_bytes(tf.extractfile(member).read())  # type: ignore[union-attr]
    code, out, _ = run(["check", "--tvm", "0.27", str(tmp_path / "graph.json")], capsys)
    assert code == 0 and "TVM 0.27: no verdict: " in out


# ------------------------------------------------- item 9: a batch downgrade skips older archives


def test_a_batch_downgrade_skips_archives_already_below_the_target(art, tmp_path, capsys) -> None:
    import json

    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "new.tar").write_bytes((art / "a.tar").read_bytes())
    assert run(["downgrade", str(art / "a.tar"), "--to", "3", "-o", str(folder / "old.tar"),
                "--accept-loss", "v6_v7.main_io"], capsys)[0] == 0
    code, out, err = run(["downgrade", str(folder), "--to", "4", "-o", str(tmp_path / "out") + "/"], capsys)
    assert code == 0, err
    assert "skipped: " in err and "old.tar: this is version 3, already below 4" in err and "unreadable" not in err
    assert "1 unreadable" not in out and "1 skipped" in out
    assert sorted(os.listdir(tmp_path / "out")) == ["new.tar"]
    code, out, _ = run(["downgrade", str(folder), "--to", "4", "-o", str(tmp_path / "out2") + "/", "--json"], capsys)
    docs = {os.path.basename(d["input"]): d for d in map(json.loads, out.splitlines())}
    assert code == 0 and docs["old.tar"]["status"] == "skipped" and docs["new.tar"]["status"] == "done"
    # one input named alone: refused with the reason (exit 1), not "unreadable"
    code, _, err = run(["downgrade", str(folder / "old.tar"), "--to", "4", "-o", str(tmp_path / "x.tar")], capsys)
    assert code == 1 and "refused" in err and "already below 4" in err


# ------------------------------------------------- item 6: diff shows dtype codes when spellings agree


def test_diff_shows_codes_when_dtype_spellings_agree_and_counts_alike(tmp_path, capsys) -> None:
    import json

    m = np.array([True, False, True])
    params.save({"m": m, "w": np.zeros(2, "float32")}, tmp_path / "old.params", dialect="0.16")  # bool (1,1,1)
    params.save({"m": m, "w": np.ones(2, "float32")}, tmp_path / "new.params", dialect="0.23")  # bool (6,8,1)
    code, out, _ = run(["diff", str(tmp_path / "old.params"), str(tmp_path / "new.params")], capsys)
    assert code == 1
    assert "dtype bool (code 1, 1 bits, 1 lanes) -> bool (code 6, 8 bits, 1 lanes)" in out
    text_counts = out.strip().splitlines()[-1]
    code, js, _ = run(["diff", "--json", str(tmp_path / "old.params"), str(tmp_path / "new.params")], capsys)
    counts = json.loads(js)["counts"]
    assert text_counts.endswith(", ".join(f"{counts[k]} {k}" for k in sorted(counts, key=lambda k: (
        k not in ("added", "removed"), ("added", "removed").index(k) if k in ("added", "removed") else 0, k))))
    assert f"{sum(counts.values())} difference(s)" in text_counts and counts.get("dtype") == 1


# ------------------------------------------------- item 5: the dialect note groups dialects by reading


def test_the_dialect_note_names_only_dialects_that_read_otherwise(tmp_path, capsys) -> None:
    import json

    p = tmp_path / "d16.params"
    params.save({"i": np.arange(3, dtype="int32"), "u": np.arange(3, dtype="uint8"), "f": np.ones(2, "float32"),
                 "b": np.array([True, False])}, p, dialect="0.16")
    code, out, _ = run(["params", "dump", "--json", str(p)], capsys)
    choice = json.loads(out)["dialect_choice"]
    assert {"v0.7", "v0.13", "v0.20", "v0.21"} <= set(choice["same_reading"])
    assert not {"v0.23", "v0.26"} & set(choice["same_reading"])
    note = choice["note"]
    differ = note.split(";", 1)[1]
    assert "v0.7" not in differ and "v0.13" not in differ and "v0.20" not in differ
    assert "v0.23 would read (1,1,1) as uint1, not bool" in differ
    code, out, _ = run(["params", "dump", str(p)], capsys)
    # a 0.16 file: the chosen dialect with its one label (issue 30 item 12), and the range of every dialect that
    # reads it alike
    assert "dialect: v0.21 (TVM 0.21 to 0.22); ambiguous: read as v0.21, as v0.2, v0.7, v0.13, v0.20 read it too " \
           "(TVM 0.2 to 0.22)" in out
    assert "TVM 0.2 to 0.22" in out


# ------------------------------------------------- feature: params dump --stats / --values


def _every_dtype() -> dict:
    import ml_dtypes

    from mlf_spec.params.codec import StoredTensor

    rng = np.random.default_rng(7)
    out: dict = {}
    for t in ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
              "uint64", "complex64", "complex128"):
        a = (rng.standard_normal(50) * 100).astype(t) if "complex" not in t else \
            (rng.standard_normal(50) + 1j * rng.standard_normal(50)).astype(t)
        out[t] = a
    out["float32_special"] = np.array([1.5, np.nan, -np.inf, 0.0, np.inf, -2.0], "float32")
    out["bool"] = np.array([True, False, True, True])
    for t in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        out[t] = np.array([0.5, -1.0, 2.0, 0.0], getattr(ml_dtypes, t))
    # sub-byte, as TVM 0.26 stores them (bit-packed), with the values they hold
    out["int4_packed"] = (StoredTensor.of(0, 4, 1, (4,), bytes([0x8F, 0x71, 0, 0]), "0.26"), [-1, -8, 1, 7])
    out["uint1_packed"] = (StoredTensor.of(1, 1, 1, (5,), bytes([0b01101, 0, 0, 0, 0]), "0.26"), [1, 0, 1, 1, 0])
    out["float4_packed"] = (StoredTensor.of(17, 4, 1, (4,), bytes([0xA2, 0x04, 0, 0]), "0.26"), [1.0, -1.0, 2.0, 0.0])
    out["int8x4"] = (StoredTensor.of(0, 8, 4, (2,), np.array([1, -2], "int8").tobytes(), "0.26"), [1, -2])
    return out


def test_params_dump_stats_and_values_for_every_dtype(tmp_path, capsys) -> None:
    import json

    from mlf_spec.generated.params_dump_models import ParamsDump

    cases = _every_dtype()
    p = tmp_path / "all.params"
    params.save({k: v[0] if isinstance(v, tuple) else v for k, v in cases.items()}, p, dialect="0.26")
    code, out, err = run(["params", "dump", "--json", "--stats", "--values", "3", "--dialect", "0.26", str(p)], capsys)
    assert code == 0, err
    ParamsDump.model_validate_json(out)
    got = {t["name"]: t for t in json.loads(out)["tensors"]}
    for name, v in cases.items():
        ref = np.asarray(v[1] if isinstance(v, tuple) else v)
        s = got[name]["stats"]
        assert s is not None and s["elements"] == ref.size, name
        vals = ref.astype(np.complex128) if ref.dtype.kind == "c" else ref.astype(np.float64)
        mag = np.abs(vals) if ref.dtype.kind == "c" else vals
        finite = mag[np.isfinite(mag)]
        assert s["nan"] == int(np.isnan(mag).sum()) and s["inf"] == int(np.isinf(mag).sum()), name
        assert s["zeros"] == int((mag == 0).sum()), name
        assert s["min"] == pytest.approx(finite.min()) and s["max"] == pytest.approx(finite.max()), name
        assert s["mean"] == pytest.approx(finite.mean(), rel=1e-9, abs=1e-9), name
        assert s["std"] == pytest.approx(finite.std(), rel=1e-9, abs=1e-9), name
        shown = got[name]["values"]
        assert len(shown) == min(3, ref.size)
        if ref.dtype.kind in "iu":
            assert shown == ref[:3].tolist(), name
    assert got["float32_special"]["values"] == [1.5, "nan", "-inf"]
    code, out, _ = run(["params", "dump", "--stats", "--values", "2", "--dialect", "0.26", str(p)], capsys)
    assert code == 0 and "int4_packed: [-1, -8, ...]" in out and "name" in out and "zeros" in out


# ------------------------------------------------- feature: blob extract --module


def test_blob_extract_module_writes_the_payload_as_its_kind_stores_it(tmp_path, capsys) -> None:
    from mlf_spec import blob

    m = blob.Module.lib(blob.Module.of("cuda", fmt="ptx", fmap=[], data=b".version 7.0 // ptx"),
                        blob.Module.of("webgpu", fmap=[], smap=[("k0", "fn main() {}"), ("k1", "fn x() {}")]))
    lib = tmp_path / "lib.so"
    lib.write_bytes(elf_with_blob(blob.build(m), SYMBOL_FFI, shared=True))
    code, _, err = run(["blob", "extract", str(lib), "--module", "cuda", "-o", str(tmp_path / "k.ptx")], capsys)
    assert code == 0, err
    assert (tmp_path / "k.ptx").read_bytes() == b".version 7.0 // ptx"
    code, _, err = run(["blob", "extract", str(lib), "--module", "webgpu", "-o", str(tmp_path / "wgsl")], capsys)
    assert code == 0, err
    assert {p.name: p.read_text() for p in (tmp_path / "wgsl").iterdir()} == {"k0.wgsl": "fn main() {}",
                                                                              "k1.wgsl": "fn x() {}"}
    code, _, err = run(["blob", "extract", str(lib), "--module", "0", "-o", str(tmp_path / "x")], capsys)
    assert code == 2 and "no payload" in err and not (tmp_path / "x").exists()
    code, _, err = run(["blob", "extract", str(lib), "--module", "vulkan", "-o", str(tmp_path / "x")], capsys)
    assert code == 2 and "no module of that kind" in err and "[2] cuda" in err
    # a GraphExecutorFactory: its graph JSON and its parameters as a .params file TVM reads
    gef = ROOT / "vectors" / "blob" / "blob.legacy.0.14.graph_executor_factory.bin"
    b = blob.read_one(gef)
    rec = next(e for e in b.entries if e.kind == "GraphExecutorFactory").payload.record
    rec = getattr(rec, "body", rec)
    code, _, err = run(["blob", "extract", str(gef), "--module", "GraphExecutorFactory", "-o", str(tmp_path / "g")],
                       capsys)
    assert code == 0, err
    assert (tmp_path / "g" / "graph.json").read_text() == rec.graph_json
    loaded = params.load(tmp_path / "g" / f"{rec.module_name}.params")
    assert list(loaded) == list(rec.names)


def test_a_compiled_library_that_only_mentions_tvm_symbols_is_no_tvm_artifact(tmp_path, capsys) -> None:
    import shutil

    cc = shutil.which("cc") or shutil.which("gcc")
    assert cc is not None, "a C compiler is part of the test setup (test_blob_locate builds libraries too)"
    src = tmp_path / "x.c"
    src.write_text('const char* names[] = {"__tvm_ffi__library_bin", "__tvm_module_ctx", "__tvm_ffi_main"};\n'
                   "extern void* __tvm_ffi__library_ctx;\n"
                   "void* get(void) { return &__tvm_ffi__library_ctx; }\nint f(void) { return 1; }\n")
    so = tmp_path / "x.so"
    subprocess.run([cc, "-shared", "-fPIC", "-Wl,--unresolved-symbols=ignore-all", "-o", str(so), str(src)],
                   check=True, capture_output=True)
    for argv in (["check", str(so)], ["blob", "dump", str(so)], ["blob", "check", str(so)]):
        code, _, err = run(argv, capsys)
        assert code == 2 and "not a TVM artifact" in err, (argv, err)


# ------------------------------------------------- item 12: display widths, elided names, quiet raw-layout line


def test_tables_align_wide_characters_and_elide_long_names(tmp_path, capsys) -> None:
    from mlf_spec.cli._text import width

    names = {"权重": np.zeros(2, "float32"), "🙂bias": np.zeros(3, "float32"), "w" * 1000: np.zeros(1, "int8"),
             "plain": np.zeros(4, "float32")}
    p = tmp_path / "wide.params"
    params.save(names, p)
    code, out, _ = run(["params", "dump", str(p)], capsys)
    assert code == 0
    rows = [line for line in out.splitlines() if "float32" in line or "int8" in line]
    assert len(rows) == 4
    ends = {width(line[: line.index("float32") if "float32" in line else line.index("int8")]) for line in rows}
    assert len(ends) == 1  # the dtype column starts at one display column in every row
    assert all(width(line) < 200 for line in rows) and "..." in out


def test_a_raw_blob_gets_the_other_layouts_failure_only_with_json_or_v(art, capsys) -> None:
    import json

    code, out, _ = run(["blob", "check", str(art / "a.bin")], capsys)
    assert code == 0 and "the legacy layout does not read it" in out and "breaks at" not in out
    code, out, _ = run(["blob", "check", "-v", str(art / "a.bin")], capsys)
    assert "breaks at" in out
    code, out, _ = run(["blob", "check", "--json", str(art / "a.bin")], capsys)
    assert any("breaks at" in f["message"] for f in json.loads(out)["findings"] if f["code"] == "blob.raw-layout")


def test_mlf_verdicts_name_tvm_versions(art, capsys) -> None:
    code, out, _ = run(["check", "--tvm", "0.12", str(art / "a.tar")], capsys)
    assert "written by TVM 0.12 or later, metadata revision v7.templates (detected)" in out


def test_extract_restores_modes_and_mtimes_and_counts_as_inspect(art, tmp_path, capsys) -> None:
    import json

    out = tmp_path / "x"
    code, text, _ = run(["extract", str(art / "a.tar"), "-o", str(out), "--json"], capsys)
    assert code == 0
    members = json.loads(text)["members"]
    code, text, _ = run(["inspect", str(art / "a.tar")], capsys)
    assert f"{members} members" in text
    code, text, _ = run(["diff", str(art / "a.tar"), str(out)], capsys)
    assert "mtime" not in text and ": mode" not in text, text
    assert text.strip().endswith("1 difference(s): 1 changed") and "container tar -> directory" in text


def test_params_dump_and_check_give_one_message_for_a_lying_string_length(tmp_path, capsys) -> None:
    import struct

    data = bytearray(params.dumps({"abc": np.zeros(1, "float32")}))
    struct.pack_into("<Q", data, 24, 7000)  # the first name's length
    (tmp_path / "bad.params").write_bytes(data)
    errs = set()
    for argv in (["params", "dump"], ["params", "check"], ["check"]):
        code, _, err = run([*argv, str(tmp_path / "bad.params")], capsys)
        assert code == 2
        errs.add(err)
    assert len(errs) == 1 and "string claims 7000 bytes but" in errs.pop()


def test_help_describes_commands_and_lists_every_adapter(capsys) -> None:
    from mlf_spec.conformance.adapters import BUILTIN

    for argv, words in ((["params", "dump"], "--stats"), (["blob", "extract"], "--module"),
                        (["conformance", "run"], "kaitai-js")):
        with pytest.raises(SystemExit):
            main([*argv, "--help"])
        out = " ".join(capsys.readouterr().out.split())
        assert words in out
        head = out.split("positional arguments")[0].split("options:")[0]
        assert len(head.split("]")[-1].strip()) > 40, (argv, head)  # a description after the usage
    with pytest.raises(SystemExit):
        main(["conformance", "run", "--help"])
    out = " ".join(capsys.readouterr().out.split()).replace("- ", "-")
    assert all(name in out for name in BUILTIN)


# ------------------------------------------------- item 10: a conformance run that selects nothing


def test_conformance_run_selecting_nothing_exits_2(tmp_path, capsys) -> None:
    code, _, err = run(["conformance", "run", "--adapter", "mlf-spec", "--id", "typo*"], capsys)
    assert code == 2 and "no case" in err and err.count("\n") == 1
    (tmp_path / "empty").mkdir()
    code, _, err = run(["conformance", "run", "--adapter", "mlf-spec", "--vectors", str(tmp_path / "empty")], capsys)
    assert code == 2 and "no case" in err
