"""The second newcomer's edges (issue 30): folders that hide nothing they skipped, one message
for what is no artifact, one rule for every option and output."""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from mlf_spec.cli import main

ROOT = Path(__file__).resolve().parents[2]
VECTOR_BIN = ROOT / "vectors" / "blob" / "blob.ffi.0.23.opaque_payload.bin"


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Run the CLI in this process (a traceback fails the test by raising)."""
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A folder every user may enter (pytest's tmp_path is root's alone)."""
    d = Path(tempfile.mkdtemp(prefix="mlf-spec-newcomer-"))
    d.chmod(0o755)
    try:
        yield d
    finally:
        for root, dirs, _ in os.walk(d):
            for x in dirs:
                os.chmod(os.path.join(root, x), 0o755)
        shutil.rmtree(d)


def _as_nobody(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """The CLI run as the unprivileged user ``nobody`` (root reads every file), by util-linux's setpriv."""
    if os.geteuid() != 0:
        pytest.fail("this test drops root's privileges to make permissions bite; run it as root")
    setpriv = shutil.which("setpriv")
    assert setpriv, "setpriv (util-linux) is needed to drop privileges"
    return subprocess.run([setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-m",
                           "mlf_spec", *argv], cwd=cwd, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "HOME": str(cwd)})


def test_an_unreadable_file_and_an_unenterable_folder_are_errors_of_the_run(shared_dir: Path) -> None:
    # as nobody, `check .` said "1 inputs: 1 ok ... 1 other file(s) skipped", exit 0; the folder was not counted
    d = shared_dir / "f"
    (d / "sub").mkdir(parents=True)
    shutil.copy(VECTOR_BIN, d / "ok.bin")
    shutil.copy(VECTOR_BIN, d / "locked.bin")
    shutil.copy(VECTOR_BIN, d / "sub" / "hidden.bin")
    (d / "notes.txt").write_text("not an artifact\n")
    for p in (shared_dir, d, d / "ok.bin", d / "notes.txt"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    (d / "locked.bin").chmod(0)
    (d / "sub").chmod(0)
    for argv in (["check", "f"], ["blob", "check", "f"], ["blob", "dump", "f"], ["check", "-j", "2", "f"]):
        p = _as_nobody(argv, shared_dir)
        assert p.returncode == 2, (argv, p.stdout, p.stderr)
        errors = [line for line in p.stderr.splitlines() if line.startswith("mlf-spec: error:")]
        assert errors == [f"mlf-spec: error: {os.path.join('f', 'locked.bin')}: cannot open: Permission denied",
                          f"mlf-spec: error: {os.path.join('f', 'sub')}: cannot list this folder: Permission denied"]
        summary = (p.stdout + p.stderr).splitlines()
        # counted apart from files that were read and are malformed (tests/cli/test_batch.py: "1 unreadable")
        assert any(line.startswith("3 inputs: 1 ok, 0 with findings or refused, 2 unreadable (2 cannot be opened)")
                   for line in summary), summary


def test_a_compressed_file_that_holds_no_tar_is_skipped_and_counted(tmp_path: Path, capsys) -> None:
    # a folder with a PNG, a text file, random bytes and hello.txt.gz: "not a tar archive", exit 2
    (tmp_path / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 2)
    (tmp_path / "t.txt").write_text("hello\n")
    (tmp_path / "rand.bin.x").write_bytes(os.urandom(300))
    (tmp_path / "hello.txt.gz").write_bytes(gzip.compress(b"hello world\n" * 10))
    shutil.copy(VECTOR_BIN, tmp_path / "ok.bin")
    code, out, err = run(["check", str(tmp_path)], capsys)
    assert code == 0, err
    assert out.splitlines()[-1] == "1 inputs: 1 ok, 0 with findings or refused, 0 unreadable; 4 other file(s) " \
                                   "skipped (not an artifact mlf-spec checks)"
    code, _, err = run(["check", str(tmp_path / "hello.txt.gz")], capsys)
    assert code == 2
    assert err == f"mlf-spec: error: {tmp_path / 'hello.txt.gz'}: not an artifact mlf-spec reads (a compressed " \
                  "file that holds no tar archive)\n"


def test_a_damaged_compressed_tar_in_a_folder_is_still_reported(tmp_path: Path, capsys) -> None:
    (tmp_path / "model.tar.gz").write_bytes(gzip.compress(b"A" * 4096))  # decompresses, to no tar
    code, _, err = run(["check", str(tmp_path)], capsys)
    assert code == 2 and "model.tar.gz: offset 0 (0x0): not a tar archive" in err, err


@pytest.mark.parametrize("argv", [["check"], ["diff", "{f}"], ["params", "dump"], ["params", "check"],
                                  ["blob", "dump"], ["blob", "check"], ["cache", "dump"], ["cache", "check"],
                                  ["inspect"], ["extract"], ["upgrade"]])
def test_every_command_says_the_same_of_a_file_that_is_no_artifact(tmp_path: Path, capsys, argv) -> None:
    png = tmp_path / "img.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    words = [w.replace("{f}", str(png)) for w in argv] + [str(png)]
    if argv[0] in ("extract", "upgrade"):
        words += ["-o", str(tmp_path / "out")]
    code, _, err = run(words, capsys)
    assert code == 2
    assert err.splitlines()[0] == f"mlf-spec: error: {png}: not an artifact mlf-spec reads (a file of no known kind)"


def test_a_wrong_magic_is_spelt_in_hex_by_params_dump_and_params_check(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.params"
    bad.write_bytes(b"x" * 40)
    for action in ("dump", "check"):
        code, _, err = run(["params", action, str(bad)], capsys)
        assert code == 2
        assert err == f"mlf-spec: error: {bad}: magic: offset 0 (0x0): magic is 0x7878787878787878, expected " \
                      "0xf7e58d4f05049cb7\n", (action, err)


def _on_a_terminal(argv: list[str], cwd: Path, timeout: float = 240) -> tuple[int, bytes, bytes]:
    """The CLI with standard error on a pseudo-terminal: (exit status, stdout, what the terminal got)."""
    import pty
    import select

    master, slave = pty.openpty()
    p = subprocess.Popen([sys.executable, "-m", "mlf_spec", *argv], cwd=cwd, stdout=subprocess.PIPE,
                         stderr=slave, stdin=subprocess.DEVNULL)
    os.close(slave)
    got = bytearray()
    import time

    end = time.monotonic() + timeout
    while time.monotonic() < end:
        ready, _, _ = select.select([master], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the child closed its end
                break
            if not chunk:
                break
            got += chunk
        elif p.poll() is not None:
            break
    out = p.stdout.read() if p.stdout else b""
    code = p.wait(timeout=30)
    os.close(master)
    return code, out, bytes(got)


def test_conformance_run_progress_on_a_terminal_writes_real_carriage_returns(tmp_path: Path) -> None:
    # the bar went through the CLI's escaping stream: "\u000d[....] 1/3633 \u000d[....] 2/3633" on one line,
    # and the --generate phase showed nothing
    code, out, tty = _on_a_terminal(["conformance", "run", "--adapter", "mlf-spec", "--format", "graph-json",
                                     "--generate", "20", "--generate-budget", "5", "--save-dir",
                                     str(tmp_path / "f")], tmp_path)
    assert code == 0, (out, tty[-2000:])
    assert b"\\u000d" not in tty and b"\r[" in tty, tty[-2000:]
    assert b"generated, " in tty, tty[-2000:]  # the --generate phase's own progress
    assert b"\x1b[K" in tty  # the bar is cleared before the summary
    code, out, tty = _on_a_terminal(["conformance", "run", "--adapter", "mlf-spec", "--format", "graph-json",
                                     "--quiet"], tmp_path)
    assert code == 0 and b"\r[" not in tty  # --quiet: no bar


def test_blob_extract_replaces_a_folder_output_with_force_and_refuses_an_existing_one_with_1(tmp_path: Path,
                                                                                            capsys) -> None:
    # the second `blob extract X --module 0 -o gef --force` said "the output is a directory; name a file", exit 2;
    # an existing -o vm.bin exited 2 with "error:" where --help says 1
    gef = ROOT / "vectors" / "blob" / "blob.legacy.0.14.graph_executor_factory.bin"
    out = tmp_path / "gef"
    argv = ["blob", "extract", str(gef), "--module", "GraphExecutorFactory", "-o", str(out)]
    assert run(argv, capsys)[0] == 0
    first = sorted(p.name for p in out.iterdir())
    code, _, err = run(argv, capsys)
    assert code == 1 and err == f"mlf-spec: refused: {out}: output exists; pass --force to replace it\n"
    code, _, err = run([*argv, "--force"], capsys)
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir()) == first
    vm = ROOT / "vectors" / "blob" / "blob.ffi.0.23.relax_vm_body.bin"
    bin_out = tmp_path / "vm.bin"
    assert run(["blob", "extract", str(vm), "-o", str(bin_out)], capsys)[0] == 0
    code, _, err = run(["blob", "extract", str(vm), "-o", str(bin_out)], capsys)
    assert code == 1 and err.startswith("mlf-spec: refused: ") and "error" not in err
    # a single-file payload never lands in a folder
    code, _, err = run(["blob", "extract", str(vm), "--module", "1", "-o", str(out), "--force"], capsys)
    assert code == 2 and "the output is a directory; name a file" in err


def _small_archive(tmp_path: Path) -> Path:
    sys.path.insert(0, str(ROOT / "examples"))
    from make_example_artifacts import small_archive

    p = tmp_path / "a.tar"
    p.write_bytes(small_archive())
    return p


@pytest.mark.parametrize("argv", [["check", "--from", "0.8"], ["check", "--fail-on", "rejects"],
                                  ["params", "check", "--from", "0.16"], ["blob", "check", "--fail-on", "misreads"],
                                  ["cache", "check", "--from", "0.20", "--fail-on", "rejects"]])
def test_verdict_options_without_tvm_are_refused(tmp_path: Path, capsys, argv) -> None:
    # `--from` and `--fail-on` without `--tvm` did nothing, silently
    code, out, err = run([*argv, str(tmp_path)], capsys)
    assert code == 2 and out == ""
    assert err.startswith("mlf-spec: error: option") and "only qualif" in err and "give --tvm too" in err
    assert len(err.splitlines()) == 1


def test_from_on_an_mlf_archive_is_refused_not_shown_as_detected(tmp_path: Path, capsys) -> None:
    # `check --tvm 0.12 --from 0.8` of an MLF archive still said "(detected)"
    a = _small_archive(tmp_path)
    code, out, err = run(["check", "--tvm", "0.12", "--from", "0.8", "--json", str(a)], capsys)
    assert code == 2 and "--from applies to .params files and module blobs" in err
    assert '"from_source":"detected"' not in out


def test_a_missing_extra_names_the_command_that_works_from_a_clone(tmp_path: Path) -> None:
    # "needs `pip install mlf-spec[safetensors]`": unquoted brackets, and the package is not on the index;
    # `conformance run --adapter tvm` without TVM gave no install hint
    import numpy as np

    from mlf_spec import params

    params.save({"w": np.ones(3, "f4")}, tmp_path / "a.params")
    cases = [("safetensors", ["params", "convert", str(tmp_path / "a.params"), str(tmp_path / "a.safetensors")],
              "safetensors support needs the optional extra 'safetensors': run `pip install -e '.[safetensors]'` "
              "in your clone of mlf-spec, or `pip install safetensors`"),
             ("tvm", ["conformance", "run", "--adapter", "tvm", "--format", "params"],
              "the tvm adapter needs the optional extra 'tvm': run `pip install -e '.[tvm]'` in your clone of "
              "mlf-spec, or `pip install apache-tvm`")]
    for module, argv, message in cases:
        code = (f"import sys; sys.modules[{module!r}] = None  # as if not installed\n"
                f"from mlf_spec.cli import main; sys.exit(main({argv!r}))")
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120)
        assert p.returncode == 2, p.stderr
        assert p.stderr.splitlines()[-1].endswith(message), p.stderr
    assert not (tmp_path / "a.safetensors").exists()


def test_the_readme_names_every_extra_of_pyproject() -> None:
    import re

    text = (ROOT / "pyproject.toml").read_text()
    table = text.split("[project.optional-dependencies]", 1)[1].split("\n[", 1)[0]
    extras = set(re.findall(r"^([a-z][a-z0-9-]*) = \[", table, re.M))
    block = re.search(r"<!-- extras -->(.*?)<!-- /extras -->", (ROOT / "README.md").read_text(), re.S)
    assert block is not None and len(extras) >= 5
    assert {w for w in re.findall(r"`([a-z][a-z0-9-]*)`", block.group(1)) if w in extras} == extras


def test_the_npz_metadata_entry_and_int4_bytes_are_as_help_and_readme_say(tmp_path: Path, capsys) -> None:
    # the .npz carried an undocumented __mlf_spec__ entry (a <U114 array) and int4 tensors as raw uint8
    import json

    import numpy as np

    src = ROOT / "vectors" / "params" / "params.dtype.v0.20.int4.0-4.params"
    out = tmp_path / "a.npz"
    assert run(["params", "convert", str(src), str(out)], capsys)[0] == 0
    with np.load(out) as z:
        meta = z["__mlf_spec__"]
        assert meta.shape == () and meta.dtype.kind == "U"
        doc = json.loads(str(meta))
        (name,) = [n for n in z.files if n != "__mlf_spec__"]
        assert z[name].dtype == np.uint8 and z[name].shape == (6,)  # int4 2x3: six bytes, one element each
    assert doc["stored"][name] == {"code": 0, "bits": 4, "lanes": 1, "shape": [2, 3]}
    with pytest.raises(SystemExit):
        main(["params", "convert", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    readme = " ".join((ROOT / "README.md").read_text().split())
    for text in (help_text, readme):
        assert "__mlf_spec__" in text and "int4" in text and "uint8" in text and "one element per byte" in text


def test_cache_dump_stats_text_shows_nan_and_inf_and_a_b16_index_names_its_version(tmp_path: Path, capsys) -> None:
    # the --stats text dropped the NaN/Inf counts that --help promises; ndarray-cache-b16.json said "cache version None"
    import numpy as np

    from mlf_spec import cache

    w = np.array([1.0, np.nan, np.inf, -np.inf, np.nan, 2.0], "float32")
    cache.write(tmp_path / "c", {"w": w}, version=1, encode_format="f32-to-bf16")
    b16 = tmp_path / "c" / "ndarray-cache-b16.json"
    assert b16.is_file()
    code, out, err = run(["cache", "dump", "--stats", str(tmp_path / "c")], capsys)
    assert code == 0, err
    lines = out.splitlines()
    head, row = lines[1].split(), lines[2].split()
    assert head[-2:] == ["nan", "inf"] and row[-2:] == ["2", "2"], out
    code, out, err = run(["cache", "dump", str(b16)], capsys)
    assert code == 0, err
    assert "(the bfloat16 companion index of cache version 1)" in out.splitlines()[0] and "None" not in out


def test_every_output_names_a_dialect_with_its_one_label_from_the_spec(capsys) -> None:
    # "v0.20 (TVM 0.13 to 0.20)" beside "v0.13 (TVM 0.13 to 0.19)"; v0.26 as "(TVM 0.2 and later)", "(0.21 and
    # later)" and "(0.26 and later)" in different outputs
    import re

    from mlf_spec.params import dtypes

    labels = {d.id: d.label for d in dtypes.DIALECTS}
    seen: set[str] = set()
    files = sorted((ROOT / "vectors" / "params").glob("params.dtype.*.params"))[::7]
    assert len(files) > 10
    for f in files:
        texts = []
        for argv in (["params", "dump", str(f)], ["params", "check", "--tvm", "0.27", str(f)],
                     ["params", "check", "--tvm", "0.16", "--from", "0.16", str(f)], ["check", "--tvm", "0.20", str(f)]):
            code, out, err = run(argv, capsys)
            assert code in (0, 1), err
            texts.append(out)
        named = re.findall(r"\b(v0\.\d+) \(([^)]*)\)", "\n".join(texts))
        assert named, texts
        for dialect_id, label in named:
            assert label == labels[dialect_id], (f.name, dialect_id, label)
            seen.add(dialect_id)
        assert "dialect v0.13 (TVM 0.13 to 0.19), given" in texts[2]
    assert len(seen) >= 2
    # the reason of a file several dialects read otherwise named the writer as a range ('0.26 on')
    code, out, err = run(["params", "check", "--tvm", "0.27", str(ROOT / "vectors" / "params" /
                                                                  "params.bound.dbs-subbyte-floor.params")], capsys)
    (reason,) = [line for line in out.splitlines() if "file.writer-uncertain" in line]
    dialect_id, label = re.search(r"the verdict takes the writer's dialect to be (v0\.\d+) \(([^)]*)\)", reason).groups()
    assert label == labels[dialect_id] and " on " not in reason, reason


def test_a_tensor_tvm_016_cannot_use_at_all_is_rejected_not_misread(tmp_path: Path, capsys) -> None:
    # `params check --tvm 0.16` of the float8 files of TVM 0.27 (codes 8-14) said `misreads`, though every use of
    # the tensor raises "Type code 10 not registered" (issue 30 item 13b); misreads stays for other values
    import numpy as np

    from mlf_spec import params

    for code in range(8, 15):
        files = sorted((ROOT / "vectors" / "params").glob(f"params.dtype.v0.26.*.{code}-8.params"))
        assert files, code
        code_, out, _ = run(["params", "check", "--tvm", "0.16", str(files[0])], capsys)
        headline = next(line for line in out.splitlines() if line.startswith("  TVM 0.16"))
        assert headline.endswith(": rejects") and "refused at first use" in out, out
    bool_file = tmp_path / "b.params"
    params.save({"b": np.array([True, False])}, bool_file)  # bool (6, 8, 1) of 0.21+: 0.16 reads float8 values
    code_, out, _ = run(["params", "check", "--tvm", "0.16", str(bool_file)], capsys)
    assert next(line for line in out.splitlines() if line.startswith("  TVM 0.16")).endswith(": misreads"), out


def test_control_characters_and_undecodable_names_print_as_readme_says_in_aligned_columns(tmp_path: Path,
                                                                                          capsys) -> None:
    # `params dump` showed `\x1b[31mred\x07` (README says \uNNNN) and `\udcff\udcfebad`, and that row's columns shifted
    import numpy as np

    from mlf_spec import params

    bad = b"\xff\xfebad".decode("utf-8", "surrogateescape")
    p = tmp_path / "n.params"
    params.save({"\x1b[31mred\x07": np.ones(2, "f4"), bad: np.ones(3, "i4"), "plain": np.ones(1, "u1")}, p)
    code, out, err = run(["params", "dump", str(p)], capsys)
    assert code == 0, err
    rows = out.splitlines()[2:]
    assert [r.split()[0] for r in rows[1:]] == ["\\u001b[31mred\\u0007", "\\udcff\\udcfebad", "plain"]
    starts = {r.index(dtype) for r, dtype in zip(rows[1:], ("float32", "int32", "uint8"))}
    assert len(starts) == 1, rows  # the dtype column starts at one offset in every row
    assert rows[0].index("dtype") in starts
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert "are written as `\\uNNNN`" in readme


@pytest.mark.parametrize("command", ["upgrade", "downgrade"])
def test_top_level_migrations_and_diff_of_a_tensor_cache_name_the_cache_command(tmp_path: Path, capsys,
                                                                             command) -> None:
    # `upgrade` / `downgrade` of a cache said "try `mlf-spec cache dump`"; `diff` of two caches did not say `cache diff`
    import numpy as np

    from mlf_spec import cache

    cache.write(tmp_path / "c", {"w": np.ones(3, "f4")}, version=1)
    code, _, err = run([command, str(tmp_path / "c"), "-o", str(tmp_path / "out"), "--to", "6"], capsys)
    assert code == 2 and f"with `mlf-spec cache {command}`" in err and "cache dump" not in err, err
    assert not (tmp_path / "out").exists()
    code, _, err = run(["diff", str(tmp_path / "c"), str(tmp_path / "c")], capsys)
    assert code == 2 and "`mlf-spec cache diff`" in err, err


def test_top_level_help_names_caches_among_what_check_handles(capsys) -> None:
    assert main(["--help"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.strip().startswith("check "))
    assert "tensor caches" in line


def test_every_check_json_line_has_a_kind(tmp_path: Path, capsys) -> None:
    # MLF `check --json` lines had no `kind` key, unlike every other kind
    import json

    a = _small_archive(tmp_path)
    shutil.copy(VECTOR_BIN, tmp_path / "b.bin")
    code, out, err = run(["check", "--json", str(tmp_path)], capsys)
    assert code == 0, err
    kinds = {json.loads(line)["path"].rsplit("/", 1)[-1]: json.loads(line)["kind"] for line in out.splitlines()}
    assert kinds == {a.name: "mlf-archive", "b.bin": "blob"}
    (tmp_path / "m").mkdir()
    import tarfile

    with tarfile.open(a) as t:
        member = next(m for m in t.getmembers() if m.name.lstrip("./") == "metadata.json")
        (tmp_path / "m" / "metadata.json").write_bytes(t.extractfile(member).read())
    code, out, err = run(["check", "--json", str(tmp_path / "m" / "metadata.json")], capsys)
    assert json.loads(out)["kind"] == "mlf-metadata", out
    from mlf_spec.generated.mlf_check_output_models import CheckReport

    CheckReport.model_validate(json.loads(out))


def test_shell_completion_completes_commands_actions_and_options(tmp_path: Path) -> None:
    # no shell completion for the mlf-spec command
    script = subprocess.run([sys.executable, "-m", "mlf_spec", "completion", "bash"], capture_output=True, text=True,
                            timeout=120, check=True).stdout
    (tmp_path / "model.params").write_bytes(b"")
    (tmp_path / "c.sh").write_text(script + '''
complete_line() {
  read -ra W <<< "mlf-spec $1"; [[ $1 == *" " ]] && W+=("")
  COMP_WORDS=("${W[@]}"); COMP_CWORD=$((${#W[@]} - 1)); COMPREPLY=(); _mlf_spec; echo "${COMPREPLY[*]}"
}
complete_line "par"; complete_line "params "; complete_line "params dump --j"; complete_line "cache d"
complete_line "check --tv"; complete_line "params dump mod"; complete_line "compl"
complete -p mlf-spec
''')
    p = subprocess.run(["bash", str(tmp_path / "c.sh")], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == ["params", "check convert dump --help", "--jobs --json", "diff downgrade dump",
                                     "--tvm", "model.params", "completion", "complete -o default -F _mlf_spec mlf-spec"]
    zsh = subprocess.run([sys.executable, "-m", "mlf_spec", "completion", "zsh"], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    assert zsh.startswith("autoload -U +X bashcompinit && bashcompinit\n") and zsh.endswith(script.split("\n", 1)[1])


def test_inspect_names_the_kind_of_any_artifact_and_what_it_holds(tmp_path: Path, capsys) -> None:
    # `inspect` took only MLF archives
    import json

    import numpy as np

    from mlf_spec import cache, params

    params.save({"w": np.ones(3, "f4")}, tmp_path / "a.params")
    shutil.copy(VECTOR_BIN, tmp_path / "b.bin")
    cache.write(tmp_path / "c", {"w": np.ones(3, "f4")})
    arc = _small_archive(tmp_path)
    code, out, err = run(["inspect", str(tmp_path / "a.params"), str(tmp_path / "b.bin"), str(tmp_path / "c"),
                          str(arc)], capsys)
    assert code == 0, err
    for name, label in (("a.params", "a TVM .params tensor file"), ("b.bin", "a raw TVM module blob"),
                        ("c", "a tensor cache")):
        assert f"{tmp_path / name}: {label}" in out, out
    assert "w     float32  3" in out and "[1] my_npu" in out
    assert f"{arc}: an MLF archive\n{arc}: MLF version 7" in out  # its first line is worded as the others'
    code, out, _ = run(["inspect", "--json", str(tmp_path / "a.params")], capsys)
    assert code == 0 and json.loads(out)["format"] == "tvm-params"
    png = tmp_path / "i.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(100))
    code, _, err = run(["inspect", str(png)], capsys)
    assert code == 2 and "not an artifact mlf-spec reads" in err


def test_params_convert_and_cache_convert_say_what_they_wrote_as_json(tmp_path: Path, capsys) -> None:
    # no --json on params convert and cache convert
    import hashlib
    import json

    import numpy as np

    from mlf_spec import params

    params.save({"w": np.arange(6, dtype="f4"), "b": np.ones(2, "i4")}, tmp_path / "a.params")
    code, out, err = run(["params", "convert", str(tmp_path / "a.params"), str(tmp_path / "a.npz"), "--json"], capsys)
    assert code == 0, err
    doc = json.loads(out)
    data = (tmp_path / "a.npz").read_bytes()
    assert doc == {"input": str(tmp_path / "a.params"), "format": "npz", "tensors": 2, "output": str(tmp_path / "a.npz"),
                   "bytes": len(data), "files": [{"name": "a.npz", "bytes": len(data),
                                                  "sha256": hashlib.sha256(data).hexdigest()}]}
    code, out, err = run(["params", "convert", str(tmp_path / "a.params"), "-o", str(tmp_path / "d"), "--to",
                          "params", "--json"], capsys)
    assert code == 0 and json.loads(out)["files"][0]["name"] == "a.params", (out, err)
    code, out, err = run(["cache", "convert", str(tmp_path / "a.params"), str(tmp_path / "c"), "--json"], capsys)
    assert code == 0, err
    doc = json.loads(out)
    names = sorted(str(p.relative_to(tmp_path / "c")) for p in (tmp_path / "c").rglob("*") if p.is_file())
    assert doc["tensors"] == 2 and [f["name"] for f in doc["files"]] == names and "tensor-cache.json" in names
    assert doc["bytes"] == sum((tmp_path / "c" / n).stat().st_size for n in names)


def test_long_single_file_work_shows_a_line_on_a_terminal_and_none_when_piped(tmp_path: Path) -> None:
    # `params dump --stats` of a 1.2 GB file (28.5 s) and `params convert` to .npz (11.5 s) were silent
    import numpy as np

    from mlf_spec import params

    params.save({f"t{i}": np.arange(1000, dtype="f4") for i in range(20)}, tmp_path / "a.params")
    env_key = "MLF_SPEC_PROGRESS_AFTER"
    os.environ[env_key] = "0"  # show it from the start: the file is small
    try:
        for argv in (["params", "dump", "--stats", "a.params"], ["params", "convert", "a.params", "a.npz"]):
            code, out, tty = _on_a_terminal(argv, tmp_path)
            assert code == 0, tty
            assert b"\r[0 s] working on a.params" in tty and b"\r\x1b[K" in tty, tty[-500:]
        p = subprocess.run([sys.executable, "-m", "mlf_spec", "params", "dump", "--stats", "a.params"], cwd=tmp_path,
                           capture_output=True, timeout=120)
        assert p.returncode == 0 and b"working on" not in p.stderr + p.stdout  # piped: no line
    finally:
        del os.environ[env_key]


def test_a_cache_downgrade_whose_result_the_target_loaders_reject_says_so(tmp_path: Path, capsys) -> None:
    # `cache downgrade` to version 1 produced a folder TVM 0.16 rejects, with no warning
    import json

    import ml_dtypes
    import numpy as np

    from mlf_spec import cache

    cache.write(tmp_path / "c2", {"w": np.ones(4, ml_dtypes.float8_e4m3fn), "b": np.ones(2, "f4")})
    code, out, err = run(["cache", "downgrade", str(tmp_path / "c2"), "-o", str(tmp_path / "c1")], capsys)
    assert code == 0
    assert err.splitlines() == [f"mlf-spec: warning: {tmp_path / 'c1'}: TVM 0.16's loaders reject the result "
                                "(tensor.dtype-new-spelling: float8 dtypes are spelled e4m3_float8 / e5m2_float8 "
                                f"before 0.20: this spelling is unknown); `mlf-spec cache check --tvm 0.16 "
                                f"{tmp_path / 'c1'}` says why"]
    code, out, err = run(["cache", "downgrade", str(tmp_path / "c2"), "-o", str(tmp_path / "j"), "--json"], capsys)
    assert json.loads(out)["refused_by"] == [{"tvm": "0.16", "rule": "tensor.dtype-new-spelling"}]
    cache.write(tmp_path / "plain", {"b": np.ones(2, "f4")})
    code, out, err = run(["cache", "downgrade", str(tmp_path / "plain"), "-o", str(tmp_path / "p1")], capsys)
    assert code == 0 and err == ""


def test_the_first_line_of_every_check_names_the_kind(tmp_path: Path, capsys) -> None:
    import numpy as np

    from mlf_spec import cache, params

    params.save({"w": np.ones(3, "f4")}, tmp_path / "a.params")
    shutil.copy(VECTOR_BIN, tmp_path / "b.bin")
    cache.write(tmp_path / "c", {"w": np.ones(3, "f4")})
    _small_archive(tmp_path)
    code, out, err = run(["check", str(tmp_path)], capsys)
    heads = sorted(line for line in out.splitlines() if line.startswith(str(tmp_path)))
    assert [h.split(": ")[1] for h in heads] == [".params file", "MLF archive, version 7, full-model", "module blob",
                                                 "tensor cache"], heads


def test_blob_extract_of_a_folder_says_it_is_a_folder_not_that_it_is_missing(tmp_path: Path, capsys) -> None:
    # `blob extract DIR -o x.bin` said "DIR: no such file"
    (tmp_path / "d").mkdir()
    code, _, err = run(["blob", "extract", str(tmp_path / "d"), "-o", str(tmp_path / "x.bin")], capsys)
    assert code == 2 and err.strip() == f"mlf-spec: error: {tmp_path / 'd'}: a directory, not a file; name a file"
    code, _, err = run(["blob", "extract", str(tmp_path / "gone"), "-o", str(tmp_path / "x.bin")], capsys)
    assert code == 2 and err.strip() == f"mlf-spec: error: {tmp_path / 'gone'}: no such file"
    assert not (tmp_path / "x.bin").exists()
