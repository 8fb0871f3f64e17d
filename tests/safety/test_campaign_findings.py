"""Regression tests for what the hostile-input campaign (``fuzz/cli_campaign.py``) found:
each case is the campaign's input made small, run the way the campaign ran it."""

from __future__ import annotations

import contextlib
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from mlf_spec import archive, blob, cache, diff, params
from mlf_spec.errors import MlfError
from mlf_spec.mlf import check as mlf_check

ROOT = Path(__file__).resolve().parents[2]
PARAMS = ROOT / "vectors" / "params" / "params.valid.zero-size-0x4.params"
ARCHIVE = ROOT / "vectors" / "mlf-archive" / "migration.archive.v3.graph.to-v7.tar"


def cli(args: list[str], cwd: Path, *, timeout: float = 120) -> subprocess.CompletedProcess:
    """``mlf-spec ARGS`` in a child: no traceback, exit status 0, 1 or 2."""
    p = subprocess.run([sys.executable, "-m", "mlf_spec", *args], cwd=cwd, capture_output=True, timeout=timeout,
                       stdin=subprocess.DEVNULL)
    err = p.stderr.decode("utf-8", "replace")
    assert "Traceback" not in err, err[-3000:]
    assert p.returncode in (0, 1, 2), (p.returncode, err[-2000:])
    return p


def _feed(fifo: Path, data: bytes) -> threading.Thread:
    """A writer that fills ``fifo`` once (as ``<(cat FILE)`` does), then closes it."""

    def write() -> None:
        with open(fifo, "wb") as f:  # blocks until the reader opens it
            f.write(data)

    t = threading.Thread(target=write, daemon=True)
    t.start()
    return t


@pytest.mark.parametrize(("args", "src", "expect"), [
    (["params", "dump"], PARAMS, b"1 tensors"),
    (["check"], ARCHIVE, b"conformant"),
    (["diff", str(PARAMS)], PARAMS, b"same"),
])
def test_a_pipe_named_on_the_command_line_is_read_once(tmp_path, args, src, expect):
    # ``mlf-spec params dump <(cat x.params)``: the pipe was sniffed, then opened again (it reads
    # as 0 bytes: "input ends inside magic"), and a named FIFO waited for a second writer for ever
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    writer = _feed(fifo, src.read_bytes())
    p = cli([*args, str(fifo)], tmp_path, timeout=120)
    writer.join(5)
    assert p.returncode == 0, p.stderr
    assert expect in p.stdout


@pytest.mark.parametrize("args", [["check"], ["blob", "dump"], ["extract", "-o", "x"]])
def test_a_device_named_on_the_command_line_is_refused(tmp_path, args):
    # /dev/zero read as "ends inside magic", or (blob dump) "no such file"
    p = cli([*args, "/dev/zero"], tmp_path)
    assert p.returncode == 2
    assert p.stderr.decode().splitlines() == ["mlf-spec: error: /dev/zero: not a regular file (a device or a "
                                              "socket); give a file, or pipe it into '-'"]
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("read", [
    lambda p: params.load(p), lambda p: params.load(p, mapped=False), lambda p: params.open(p),
    lambda p: archive.open(p), lambda p: archive.open(p, mapped=False), lambda p: blob.read(p),
    lambda p: mlf_check.check(p), lambda p: diff.diff(PARAMS, p),
])
def test_library_readers_refuse_a_fifo_path_instead_of_waiting(tmp_path, read):
    fifo = tmp_path / "pipe.params"
    os.mkfifo(fifo)
    old = signal.signal(signal.SIGALRM, lambda *_: pytest.fail("the reader waits for a writer"))
    signal.alarm(20)
    try:
        with pytest.raises(MlfError):
            read(str(fifo))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def test_params_check_of_a_huge_file_that_is_no_params_file_stops_at_the_magic(tmp_path):
    # a 16 GiB sparse file of zeros named .params: `params check` read it whole first (16 GiB of
    # memory, 137 s) to report a wrong magic at offset 0
    big = tmp_path / "big.params"
    with big.open("wb") as f:
        f.truncate(16 << 30)

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1536 << 20, 1536 << 20))

    p = subprocess.run([sys.executable, "-m", "mlf_spec", "params", "check", str(big)], capture_output=True,
                       timeout=120, preexec_fn=cap)
    assert p.returncode == 2, p.stderr[-2000:]
    assert p.stderr.decode().splitlines() == [f"mlf-spec: error: {big}: magic: offset 0 (0x0): magic is 0x0, expected "
                                              "0xf7e58d4f05049cb7"]


def test_a_cache_index_with_an_integer_of_5000_digits_is_an_mlf_error(tmp_path):
    # json.loads raised ValueError past sys.get_int_max_str_digits(): a traceback from every cache command
    folder = tmp_path / "c"
    shutil.copytree(ROOT / "vectors" / "tensor-cache" / "valid.sharded", folder)
    (folder / "case.json").unlink(missing_ok=True)
    index = folder / "tensor-cache.json"
    doc = json.loads(index.read_text())
    doc["records"][0]["nbytes"] = 0
    index.write_text(json.dumps(doc).replace('"nbytes": 0', '"nbytes": ' + "9" * 5000, 1))
    with pytest.raises(MlfError, match="more than 4,300 digits"):
        cache.open(folder)
    p = cli(["cache", "convert", str(folder), str(tmp_path / "x.npz")], tmp_path)
    assert p.returncode == 2 and len(p.stderr.splitlines()) == 1, p.stderr
    assert not (tmp_path / "x.npz").exists()



def test_mutate_of_a_source_whose_name_is_not_utf8_is_an_mlf_error(tmp_path):
    # the compiler quotes the file name in its errors: decoding them as UTF-8 raised UnicodeDecodeError
    # (`conformance mutate` printed a traceback)
    from mlf_spec.conformance.mutation.harness import DEFAULT_BUILD, build

    src = tmp_path / os.fsdecode(b"bad\xff.c")
    src.write_bytes(b"#include <nothing.h>\n")
    (tmp_path / "work").mkdir()
    with pytest.raises(MlfError, match="does not build"):
        build(src, DEFAULT_BUILD, tmp_path / "work")


_SIDE_FILE_READ = """
import sys
from pathlib import Path
from mlf_spec.conformance import report, vectors
from mlf_spec.conformance.known_failures import KnownFailures
from mlf_spec.errors import MlfError
read = {"report": report.read_report, "known_failures": KnownFailures.load, "case": lambda p: vectors.load_case(Path(p))}
try:
    read[sys.argv[1]](sys.argv[2])
except MlfError as exc:
    print(str(exc))
"""


@pytest.mark.parametrize(("load", "path"), [("report", "/dev/zero"), ("known_failures", "/dev/zero"),
                                           ("report", "fifo"), ("case", "fifo")])
def test_side_files_of_the_conformance_kit_are_refused_when_not_regular(tmp_path, load, path):
    # `conformance report /dev/zero` and `--known-failures /dev/zero` read until memory ran out
    # (MemoryError under a cap); a FIFO waited for a writer. Read in a child under a cap and a
    # timeout, so that a regression fails here instead of filling this process.
    if path == "fifo":
        path = str(tmp_path / "fifo")
        os.mkfifo(path)

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    p = subprocess.run([sys.executable, "-c", _SIDE_FILE_READ, load, path], capture_output=True, timeout=60,
                       preexec_fn=cap)
    assert p.returncode == 0 and b"not a regular file" in p.stdout, p.stderr[-2000:]


def test_a_cache_index_over_256_mib_is_refused_before_it_is_read(tmp_path):
    # a 1 GiB index (a sparse file) was read and decoded whole: 2.1 GB peak for `cache upgrade/downgrade/diff`
    (tmp_path / "c").mkdir()
    with (tmp_path / "c" / "tensor-cache.json").open("wb") as f:
        f.truncate((256 << 20) + 1)
    with pytest.raises(MlfError, match="more than the 268435456 mlf-spec reads"):
        cache.open(tmp_path / "c")


def test_mutate_refuses_a_huge_source_before_reading_it(tmp_path):
    # a 1 GiB (sparse) source was read whole: 1.1 GB peak before the build failed
    from mlf_spec.conformance.mutation.harness import DEFAULT_BUILD, SOURCE_LIMIT, build

    src = tmp_path / "r.c"
    with src.open("wb") as f:
        f.truncate(SOURCE_LIMIT + 1)
    (tmp_path / "work").mkdir()
    with pytest.raises(MlfError, match="larger than"):
        build(src, DEFAULT_BUILD, tmp_path / "work")


_DEEP_TESTEE = """
import json, sys
if sys.argv[1] == "info":
    print(json.dumps({"protocol": "mlf-conformance/1", "name": "deep", "version": "1", "serve": True,
                      "formats": [{"format": "params", "roles": ["decode"]}]}) if sys.argv[2:] != ["deep"] else DEEP)
    sys.exit(0)
if sys.argv[1] == "serve":
    for line in sys.stdin:
        print(DEEP, flush=True)
    sys.exit(0)
sys.stdin.buffer.read()
print(DEEP)
""".replace("DEEP", repr("[" * 100_000 + "]" * 100_000))


def test_a_testee_answering_json_nested_too_deeply_is_a_protocol_error(tmp_path):
    # json.loads raised RecursionError through the runner: `conformance run` printed a traceback for a
    # testee whose `info`, one-shot answer or `serve` line was 100,000 brackets deep
    from mlf_spec.conformance.testee import OneShot, Persistent

    script = tmp_path / "deep.py"
    script.write_text(_DEEP_TESTEE)
    with pytest.raises(MlfError, match="answered `info` with something that is not JSON"):
        OneShot([sys.executable, str(script), "deep"]).info()
    one = OneShot([sys.executable, str(script)]).ask_raw("decode", "params", {}, PARAMS.read_bytes())
    assert (one.status, one.error_kind) == ("error", "protocol"), one
    served = Persistent([sys.executable, str(script)])
    try:
        answer = served.ask_raw("decode", "params", {}, PARAMS.read_bytes())
    finally:
        served.close()
    assert (answer.status, answer.error_kind) == ("error", "protocol"), answer


def test_run_reports_and_known_failures_nested_too_deeply_are_one_line(tmp_path):
    # read_report let RecursionError through (`conformance report`, `--compare`: a traceback); the
    # known-failures error quoted the whole 100,000-character line
    from mlf_spec.conformance import report
    from mlf_spec.conformance.known_failures import KnownFailures

    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "\n")
    with pytest.raises(MlfError, match="not JSON"):
        report.read_report(deep)
    with pytest.raises(MlfError) as err:
        KnownFailures.load(deep)
    assert len(str(err.value)) < 300


def test_a_testee_rejection_quoting_a_path_that_is_not_utf8_is_json(tmp_path):
    # the rejection's JSON was encoded as UTF-8 with the path's lone surrogate in it: UnicodeEncodeError
    folder = tmp_path / os.fsdecode(b"cache\xff")
    shutil.copytree(ROOT / "vectors" / "tensor-cache" / "unreadable.data-path-dotdot", folder)
    p = cli(["conformance", "testee", "decode", "tensor-cache", f"input_dir={folder}"], tmp_path)
    assert p.returncode == 1, p.stderr
    assert json.loads(p.stdout)["error"]["class"] == "unsafe"


def test_found_nothing_names_a_hostile_folder_on_one_line_without_escapes(tmp_path):
    # "found nothing that is ... in PATH" printed the path raw: a newline made two lines, an escape
    # sequence reached the terminal
    folder = tmp_path / os.fsdecode(b"new\nline\x1b[31m\xff")
    folder.mkdir()
    p = cli(["check", str(folder)], tmp_path)
    assert p.returncode == 2
    err = p.stderr.decode("utf-8", "replace")
    assert len(err.splitlines()) == 1 and "\x1b" not in err and "new\\nline\\u001b[31m" in err, err


_MEASURED = """
import resource, subprocess, sys
cap = int(sys.argv[1])
def limit():
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
stdin = open(sys.argv[2], "rb") if sys.argv[2] != "-" else subprocess.DEVNULL
p = subprocess.run(sys.argv[3:], stdin=stdin, stdout=open("out", "wb"), stderr=open("err", "wb"),
                   preexec_fn=limit)
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(p.returncode, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024)
"""


@dataclass
class Measured:
    """A child's exit status, output, CPU seconds and peak RSS (MB)."""

    returncode: int
    stdout: bytes
    stderr: bytes
    cpu: float
    rss_mb: float


def measured(argv: list[str], cwd: Path, *, stdin: Path | None = None, cap: int = 1536 << 20,
             timeout: float = 60) -> Measured:
    """``mlf-spec ARGV`` in a child under an address-space cap, measured by a parent of its own
    (``RUSAGE_CHILDREN`` there counts this child alone, not every child this process waited for);
    no traceback, exit status 0, 1 or 2."""
    work = cwd / ".measure"
    work.mkdir()
    try:
        p = subprocess.run([sys.executable, "-c", _MEASURED, str(cap), str(stdin or "-"), sys.executable, "-m",
                            "mlf_spec", *argv], cwd=work, capture_output=True, timeout=timeout, check=True)
        rc, cpu, rss = p.stdout.split()
        m = Measured(int(rc), (work / "out").read_bytes(), (work / "err").read_bytes(), float(cpu), float(rss))
    finally:
        shutil.rmtree(work)
    err = m.stderr.decode("utf-8", "replace")
    assert "Traceback" not in err, err[-3000:]
    assert m.returncode in (0, 1, 2), (m.returncode, err[-2000:])
    return m


def test_check_of_a_huge_file_of_zeros_reads_a_bounded_prefix(tmp_path):
    # a file of zeros reads as an empty tar followed by padding: `check` scanned the whole
    # padding for a non-zero byte (2 GiB: 8.9 s, 4 GiB: 48 s); only the 11,264 bytes a tar
    # writer could leave are read now (16 GiB: 0.5 s, as for 256 MiB)
    big = tmp_path / "zeros.bin"
    with big.open("wb") as f:
        f.truncate(16 << 30)
    m = measured(["check", "--json", str(big)], tmp_path)
    assert m.returncode == 1, m.stderr
    doc = json.loads(m.stdout)
    assert [f["code"] for f in doc["findings"]] == ["layout.padding", "metadata.missing"], doc
    assert "17179869184 bytes after the last member; more than the 11264 bytes" in doc["findings"][0]["message"]
    assert m.cpu < 4, m.cpu
    assert sorted(os.listdir(tmp_path)) == ["zeros.bin"]


def test_check_still_finds_a_non_zero_byte_in_the_padding_a_writer_leaves(tmp_path):
    # the bounded scan still reads all of a padding a tar writer could have left
    data = bytearray(ARCHIVE.read_bytes())
    data[-1] = 1
    (tmp_path / "a.tar").write_bytes(data)
    report = mlf_check.check(tmp_path / "a.tar")
    pad = [f for f in report.findings if f.code == "layout.padding"]
    assert pad and "not all zero from byte" in pad[0].message, report.findings


def _params_with_trailing_bytes(path: Path, size: int, *, device_type: int = 1) -> None:
    """A one-tensor .params file (its device type ``device_type``) made ``size`` bytes long by
    zeros after it (a sparse file)."""
    import numpy as np

    data = bytearray(params.dumps({"w": np.ones((4, 4), "f4")}))
    at = data.index(bytes.fromhex("3fa1b496f0405edd")) + 16  # the tensor magic, reserved, then the device
    data[at:at + 4] = device_type.to_bytes(4, "little")
    path.write_bytes(data)
    with path.open("r+b") as f:
        f.truncate(size)


@pytest.mark.parametrize("device_type", [1, 2], ids=["fast-reader", "loader-reading"])
def test_params_check_of_a_huge_file_with_the_right_magic_is_not_read_whole(tmp_path, device_type):
    # a valid header followed by gigabytes: `params check` read the file into memory first
    # (2 GiB: 2,129 MB peak, 10.8 s); now the headers are read by pread a window at a time
    # (2 GiB: 33 MB, 0.4 s), by the fast reader and by the loader-like reading it falls back on
    # (a device type TVM's loader does not check) alike
    big = tmp_path / "big.params"
    _params_with_trailing_bytes(big, 4 << 30, device_type=device_type)
    m = measured(["params", "check", "--json", str(big)], tmp_path)
    assert m.returncode == (0 if device_type == 1 else 1), m.stderr
    codes = [f["code"] for f in json.loads(m.stdout)["findings"]]
    assert codes == ["params.trailing-bytes"] + (["tensor.device-type"] if device_type == 2 else []), codes
    assert m.rss_mb < 150 and m.cpu < 4, (m.rss_mb, m.cpu)
    assert sorted(os.listdir(tmp_path)) == ["big.params"]


def test_params_check_reads_the_bytes_that_tell_dialects_apart_a_piece_at_a_time(tmp_path):
    # a bool tensor's bytes tell dialects apart, so they are read: they were read with the
    # whole file (256 MiB: 294 MB peak); now a MiB at a time (35 MB)
    import numpy as np

    path = tmp_path / "bool.params"
    path.write_bytes(params.dumps({"m": np.ones((96 << 20,), "bool")}))
    m = measured(["params", "check", "--json", str(path)], tmp_path)
    assert m.returncode == 0, m.stderr
    doc = json.loads(m.stdout)
    assert doc["conformant"] and doc["dialect_choice"]["by_data"] is not None
    assert m.rss_mb < 80, m.rss_mb  # the whole file: 96 MiB more


def test_params_check_reads_a_path_by_pread_as_it_reads_the_same_bytes_in_memory(tmp_path):
    # the pread reading (a path, as the CLI reads it) and the reading of the bytes in memory
    # give the same report or the same error, with either walker, on every vector and on
    # damaged copies of them
    import random

    from mlf_spec.params import accel, check

    def report(src: object, **kw: object) -> tuple:
        try:
            return ("ok", check.check(src, name="x", tvm="0.27", **kw).to_dict())
        except MlfError as exc:
            return ("error", type(exc).__name__, exc.field, exc.offset, str(exc))

    rng = random.Random(18)
    vectors = sorted((ROOT / "vectors" / "params").glob("*.params"))
    cases = [v.read_bytes() for v in vectors]
    for _ in range(300):
        data = bytearray(rng.choice(cases))
        op = rng.randrange(3)
        if op == 0 and data:
            del data[rng.randrange(len(data)):]
        elif op == 1 and data:
            for _ in range(rng.randint(1, 4)):
                data[rng.randrange(len(data))] = rng.randrange(256)
        else:
            data += bytes(rng.randrange(70_000))  # past the first pread window
        cases.append(bytes(data))
    path = tmp_path / "x.params"
    for i, data in enumerate(cases):
        path.write_bytes(data)
        with accel.pure_python() if i % 2 else contextlib.nullcontext():
            assert report(path, mapped=False) == report(data), (i, vectors[i] if i < len(vectors) else data[:64])


def test_testee_decode_refuses_a_stdin_over_its_limit_in_one_line(tmp_path):
    # `conformance testee decode` read all of stdin: 1 GiB cost 2,072 MB; now it reads at
    # most MAX_INPUT (64 MiB) + 1 bytes and refuses the request (512 MiB: 85 MB, 0.2 s)
    from mlf_spec.conformance.protocol import MAX_INPUT

    big = tmp_path / "stdin.bin"
    with big.open("wb") as f:
        f.truncate(512 << 20)
    m = measured(["conformance", "testee", "decode", "params"], tmp_path, stdin=big)
    assert m.returncode == 2 and m.stdout == b"", m.stderr
    assert m.stderr.decode().splitlines() == [f"bad request: stdin holds more than {MAX_INPUT} bytes, the most a "
                                              "request may hold"]
    assert m.rss_mb < MAX_INPUT / (1 << 20) + 100, m.rss_mb
    help_text = cli(["conformance", "testee", "--help"], tmp_path).stdout.decode()
    assert f"at most {MAX_INPUT >> 20} MiB ({MAX_INPUT} bytes" in " ".join(help_text.split())
    # at the limit, the input is read and judged
    with big.open("r+b") as f:
        f.truncate(MAX_INPUT)
    m = measured(["conformance", "testee", "decode", "params"], tmp_path, stdin=big)
    assert m.returncode == 1 and json.loads(m.stdout)["error"]["class"] == "bad_constant", m.stderr
    assert sorted(os.listdir(tmp_path)) == ["stdin.bin"]


def test_testee_serve_answers_a_line_over_its_limit_with_a_protocol_error_and_goes_on(tmp_path):
    # `serve` read each line whole (`for line in stdin`): a 192 MiB line without a newline
    # was held whole (and a 1 GiB one cost more than 2 GB); now at most MAX_LINE bytes of it,
    # the rest skipped a MiB at a time
    import base64

    from mlf_spec.conformance.protocol import MAX_LINE

    good = json.dumps({"id": 2, "op": "decode", "format": "params", "options": {},
                       "input": base64.b64encode(PARAMS.read_bytes()).decode()}).encode()
    requests = tmp_path / "requests"
    with requests.open("wb") as f:
        f.write(b'{"id": 1, "input": "' + b"A" * (1 << 20))
        f.seek(192 << 20)
        f.write(b'"}\n' + good + b"\n")
    m = measured(["conformance", "testee", "serve"], tmp_path, stdin=requests)
    assert m.returncode == 0, m.stderr
    first, second = (json.loads(line) for line in m.stdout.splitlines())
    assert first == {"id": -1, "ok": False, "error": {"class": "protocol", "message": "bad request: a line longer "
                                                      f"than {MAX_LINE} bytes, the most a request may hold"}}
    assert second["id"] == 2 and second["ok"], second
    assert m.rss_mb < 2 * MAX_LINE / (1 << 20) + 60 and m.cpu < 4, (m.rss_mb, m.cpu)  # 194 MB (the line grows)


def _raw_params(code: int, bits: int, shape: tuple[int, ...], data: bytes) -> bytes:
    """A one-tensor .params file of dtype (code, bits, 1) holding ``data`` as stored."""
    import struct

    from mlf_spec.generated.params_ir import CONSTANTS

    n = -(-bits // 8)
    for e in shape:
        n *= e
    head = struct.pack("<QQQQ1sQ", CONSTANTS["PARAMS_MAGIC"], 0, 1, 1, b"t", 1)
    rec = bytes.fromhex("3fa1b496f0405edd") + struct.pack("<QiiiBBH", 0, 1, 0, len(shape), code, bits, 1)
    rec += struct.pack(f"<{len(shape)}qq", *shape, n)
    return head + rec + data.ljust(n, b"\0")[:n]


@pytest.mark.parametrize(("bits", "data", "values"), [
    (12, ((-2048) & 0xFFF | 2047 << 12).to_bytes(3, "little"), [-2048, 2047]),  # read as [0, -1]
    (62, ((-(1 << 61)) & ((1 << 62) - 1) | 3 << 62).to_bytes(16, "little"), [-(1 << 61), 3]),  # OverflowError
    (65, bytes(9), None),  # no NumPy integer holds it: no values (was OverflowError)
], ids=["int12", "int62", "int65"])
def test_params_dump_stats_of_odd_width_integers(tmp_path, bits, data, values):
    # the walker campaign (fuzz/params_walker_diff.py): `params dump --stats` of an int12 or int62
    # tensor (a header's bits field changed) printed a traceback: np.int16(1 << (bits - 1))
    # overflowed, and widths of 9 to 15 bits were shifted within uint8 (wrong values, silently)
    (tmp_path / "w.params").write_bytes(_raw_params(0, bits, (2,) if bits < 64 else (1,), data))
    p = cli(["params", "dump", "--stats", "--values", "2", "--json", "w.params"], tmp_path)
    assert p.returncode == 0, p.stderr
    (tensor,) = json.loads(p.stdout)["tensors"]
    assert tensor.get("values") == values, tensor
    if values is not None:
        assert (tensor["stats"]["min"], tensor["stats"]["max"]) == (min(values), max(values))


def test_params_dump_stats_of_huge_floats_is_strict_json_without_warnings(tmp_path):
    # the mean of four 1.7e308 was printed as Infinity (not JSON) with an overflow warning on stderr
    import numpy as np

    (tmp_path / "f.params").write_bytes(params.dumps({"w": np.array([1.7e308, 1.7e308, -1.7e308, 1e308])}))
    p = cli(["params", "dump", "--stats", "--json", "f.params"], tmp_path)
    assert p.returncode == 0 and p.stderr == b"", p.stderr

    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} is not JSON")

    stats = json.loads(p.stdout, parse_constant=refuse)["tensors"][0]["stats"]
    values = np.array([1.7e308, 1.7e308, -1.7e308, 1e308], np.longdouble)
    assert stats["mean"] == pytest.approx(float(values.mean()), rel=1e-12)
    assert stats["std"] == pytest.approx(float(values.std()), rel=1e-12)


def test_params_check_of_extents_multiplying_past_4300_digits_is_one_finding(tmp_path):
    # fuzz/params_walker_diff.py: a record of 255 dimensions (TVM's loader follows the stored
    # ndim, so does the check) whose extents multiply to ~16,000 bits: the message formatted
    # the product with str(), which refuses more than 4,300 digits (ValueError: a traceback)
    import struct

    shape = (1 << 62,) * 255
    data = _raw_params(2, 32, (1,), b"\0" * 4)
    at = data.index(bytes.fromhex("3fa1b496f0405edd"))
    rec = data[at:at + 32]
    rec = rec[:24] + struct.pack("<i", len(shape)) + rec[28:] + struct.pack(f"<{len(shape)}qq", *shape, 0)
    (tmp_path / "d.params").write_bytes(data[:at] + rec)
    p = cli(["params", "check", "--json", "--tvm", "0.27", "d.params"], tmp_path)
    assert p.returncode == 1, p.stderr
    doc = json.loads(p.stdout)
    messages = {f["code"]: f["message"] for f in doc["findings"]}
    assert messages["tensor.numel-overflow"] == "the extents multiply to a 15811-bit number", messages
    assert messages["tensor.size"].endswith("numel x ceil(bits/8) is a 15813-bit number"), messages
    assert doc["tvm"]["verdict"], doc["tvm"]


def test_check_of_a_compressed_non_tar_stops_at_the_first_block(tmp_path):
    # a gzip stream of 4 GiB of text (64 members of 64 MiB, 18 MB compressed) was decompressed
    # whole into a temporary file (5.1 s, 4 GiB of disk) before its first header was found
    # invalid; the first block decides now (0.25 s), with the reader's own error
    import gzip

    member = gzip.compress(b"A" * (64 << 20), compresslevel=1, mtime=0)
    path = tmp_path / "text.tar.gz"
    path.write_bytes(member * 64)
    m = measured(["check", str(path)], tmp_path)
    assert m.returncode == 2, m.stderr
    assert m.stderr.decode().splitlines() == [f"mlf-spec: error: {path}: offset 0 (0x0): not a tar archive: invalid "
                                              "header"]
    assert m.cpu < 2.5, m.cpu
    assert sorted(os.listdir(tmp_path)) == ["text.tar.gz"]


def test_a_compressed_bomb_of_zeros_takes_no_disk(tmp_path):
    # a gzip stream of zeros (an empty tar and its padding to tarfile) was written out whole
    # into the temporary file: 8 MB could fill up to max_total_size (8 GiB) of disk. Runs of
    # zeros are holes now; what is read back is the same
    import gzip
    import io

    from mlf_spec.tar import read as tar_read

    src = io.BytesIO(gzip.compress(bytes(64 << 20), compresslevel=1, mtime=0) * 4 + gzip.compress(b"\1" * 700))
    with tar_read.decompressed(src, "gzip", 1 << 40, file=None) as tmp:
        st = os.fstat(tmp.fileno())
        assert st.st_size == (256 << 20) + 700
        assert st.st_blocks * 512 < 1 << 20, st.st_blocks  # was 256 MiB
        tmp.seek((256 << 20) - 3)
        assert tmp.read() == b"\0" * 3 + b"\1" * 700
    report = mlf_check.check(gzip.compress(bytes(1 << 20), mtime=0))
    assert [f.code for f in report.findings] == ["layout.compressed", "layout.padding", "metadata.missing"]
