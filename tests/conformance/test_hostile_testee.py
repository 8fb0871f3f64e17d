"""Issue 32 items 13-20: the conformance runner against a testee that attacks its resources
(tests/support/conformance_testees/hostile.py). Each run is ``mlf-spec conformance run`` in
a child under an address-space cap (RLIMIT_AS) and a CPU limit, as the hostile-resource
tests run the other commands; each asserts the run ends with a report and no traceback."""

from __future__ import annotations

import os
import resource
import shlex
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HOSTILE = [sys.executable, str(ROOT / "tests" / "support" / "conformance_testees" / "hostile.py")]
MiB = 1 << 20


def conformance(args: list[str], cwd: Path, *, cap: int = 1024 * MiB, cpu: int = 120, timeout: float = 300,
                statuses: tuple[int, ...] = (0, 1)) -> subprocess.CompletedProcess:
    def limits() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))

    p = subprocess.run([sys.executable, "-m", "mlf_spec", "conformance", *args], cwd=cwd, capture_output=True,
                       timeout=timeout, preexec_fn=limits, env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    err = p.stderr.decode("utf-8", "replace")
    assert "Traceback" not in err, err[-3000:]
    assert p.returncode in statuses, (p.returncode, err[-2000:])
    return p


def hostile(mode: str) -> str:
    return shlex.join([*HOSTILE, mode])


def report(path: Path) -> list[dict]:
    import json

    return [json.loads(line) for line in path.read_text().splitlines()]


def cases_of(path: Path) -> list[dict]:
    return [r for r in report(path) if r.get("type") == "case"]


# -- item 13: a dropped server's buffer is freed ------------------------------------------

def test_servers_dropped_for_the_output_cap_free_their_buffers(tmp_path):
    """12 servers each dropped at a 64 MiB line: kept, their buffers would need 768 MiB; the
    runner's address space is capped at 640 MiB."""
    conformance(["run", "--testee", hostile("flood-line"), "--id", "params.valid.[d-n]*", "--id", "params.valid.0-d",
                 "--report-json", "r.jsonl", "--max-output", str(64 * MiB), "--quiet"], tmp_path, cap=640 * MiB)
    got = cases_of(tmp_path / "r.jsonl")
    assert len(got) >= 12 and all(r["error_kind"] == "output_limit" for r in got), got[:2]


# -- item 14: judging a huge wrong reading is bounded work --------------------------------------

@pytest.mark.parametrize("size, one_shot", [(3 * MiB, False), (3 * MiB, True), (12 * MiB, False)])
def test_a_huge_wrong_answer_is_judged_in_bounded_memory_and_time(tmp_path, size, one_shot):
    args = ["run", "--testee", hostile(f"big-line:{size}"), "--id", "params.valid.w-and-b", "--report-json", "r.jsonl",
            "--quiet"] + (["--one-shot"] if one_shot else [])
    conformance(args, tmp_path, cap=(512 if size < 8 * MiB else 1024) * MiB, cpu=60)
    (rec,) = cases_of(tmp_path / "r.jsonl")
    assert rec["outcome"] == "fail" and len(rec.get("diff", [])) <= 50, rec


def test_sigterm_stops_a_run_judging_a_huge_answer(tmp_path):
    """SIGTERM while a 60 MB answer is read and judged ends the run within seconds (the
    validator that collected every error held the interpreter in C code for minutes)."""
    proc = subprocess.Popen([sys.executable, "-m", "mlf_spec", "conformance", "run", "--testee", hostile(f"big-line:{60 * MiB}"),
                             "--id", "params.valid.*", "--max-output", str(128 * MiB), "--quiet"], cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(10)
    proc.send_signal(signal.SIGTERM)
    t0 = time.monotonic()
    try:
        err = proc.communicate(timeout=30)[1].decode()
    finally:
        proc.kill()
    assert time.monotonic() - t0 < 30
    assert "Traceback" not in err and proc.returncode == 128 + signal.SIGTERM, (proc.returncode, err[-2000:])


# -- items 15, 16: what a testee writes into output_dir -------------------------------------

@pytest.mark.parametrize("mode", ["sparse", "deep"])
def test_a_hostile_output_folder_is_an_error_of_its_case_and_leaves_nothing(tmp_path, mode):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env_tmp = {"TMPDIR": str(scratch)}
    before = set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()
    for extra in ({}, env_tmp):
        def limits() -> None:
            resource.setrlimit(resource.RLIMIT_AS, (1024 * MiB, 1024 * MiB))
            resource.setrlimit(resource.RLIMIT_CPU, (120, 120))

        p = subprocess.run([sys.executable, "-m", "mlf_spec", "conformance", "run", "--testee", hostile(mode),
                            "--id", "tensor-cache.encode.valid.base", "--report-json", "r.jsonl", "--quiet",
                            "--one-shot"], cwd=tmp_path, capture_output=True, timeout=300, preexec_fn=limits,
                           env={k: v for k, v in {**os.environ, **extra}.items() if extra or k != "TMPDIR"})
        err = p.stderr.decode()
        assert "Traceback" not in err and p.returncode == 1, (p.returncode, err[-3000:])
        (rec,) = cases_of(tmp_path / "r.jsonl")
        assert rec["outcome"] == "error" and rec["error_kind"] == "protocol", rec
    assert os.listdir(scratch) == []
    if os.path.isdir("/dev/shm"):
        assert not [n for n in set(os.listdir("/dev/shm")) - before if n.startswith("mlf-conf-")]


# -- item 17: the testee's whole process tree ends with the run --------------------------------

def _alive(mark: str) -> list[int]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if mark.encode() in f.read():
                    found.append(int(pid))
        except OSError:
            pass
    return found


@pytest.mark.parametrize("one_shot", [False, True])
def test_grandchildren_in_their_own_session_do_not_outlive_the_run(tmp_path, one_shot):
    mark = f"mlf-hostile-{os.getpid()}-{int(one_shot)}-{time.monotonic_ns()}"
    try:
        conformance(["run", "--testee", hostile(f"setsid:{mark}"), "--id", "params.valid.w-and-b", "--id",
                     "params.valid.0-d", "--quiet", "--report-json", "r.jsonl", "--timeout", "30"]
                    + (["--one-shot"] if one_shot else []), tmp_path)
        # a grandchild holding the testee's pipes does not make its case wait for the timeout
        assert [r["outcome"] for r in cases_of(tmp_path / "r.jsonl")] == ["pass", "pass"]
        deadline = time.monotonic() + 5
        while _alive(mark) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _alive(mark) == []
    finally:
        for pid in _alive(mark):
            os.kill(pid, signal.SIGKILL)


# -- items 18, 19: reports of a testee's bytes ------------------------------------------------

def test_ansi_on_stderr_gives_a_junit_file_that_parses(tmp_path):
    conformance(["run", "--testee", hostile("ansi"), "--id", "params.valid.w-and-b", "--junit", "j.xml", "--quiet",
                 "--one-shot"], tmp_path)
    root = ET.parse(tmp_path / "j.xml").getroot()
    text = ET.tostring(root, encoding="unicode")
    assert "bad" in text and "\x1b" not in text and "\x07" not in text


def test_the_markdown_page_escapes_the_testee_name_version_and_messages(tmp_path):
    conformance(["run", "--testee", hostile("html"), "--id", "params.valid.w-and-b", "--report-json", "r.jsonl",
                 "--quiet", "--one-shot"], tmp_path)
    conformance(["report", "r.jsonl", "-o", "page.md"], tmp_path, statuses=(0, 1))
    page = (tmp_path / "page.md").read_text()
    assert "](javascript" not in page and "<script" not in page and "<img" not in page and "\x1b" not in page and "\x07" not in page, page[:2000]
    assert "&lt;script" in page or "\\<script" in page, page[:2000]


# -- item 20: a FIFO as a case's input ------------------------------------------------------------

def _suite_with_a_fifo(tmp_path: Path) -> Path:
    subprocess.run([sys.executable, "-m", "mlf_spec", "conformance", "vectors", str(tmp_path / "v"), "--format",
                    "params"], check=True, capture_output=True, timeout=300)
    target = tmp_path / "v" / "params" / "params.valid.w-and-b.params"
    assert target.is_file()
    target.unlink()
    os.mkfifo(target)
    return tmp_path / "v"


def test_a_fifo_as_a_case_input_never_blocks(tmp_path):
    v = _suite_with_a_fifo(tmp_path)
    p = conformance(["run", "--testee", hostile("good"), "--vectors", str(v), "--id", "params.valid.w-and-b",
                     "--report-json", "r.jsonl", "--quiet", "--timeout", "20"], tmp_path, timeout=60,
                    statuses=(1, 2))
    if p.returncode == 1:
        (rec,) = cases_of(tmp_path / "r.jsonl")
        assert rec["outcome"] == "error" and "regular file" in rec["message"], rec
    p = conformance(["request", str(v / "params" / "params.valid.w-and-b.case.json")], tmp_path, timeout=60, statuses=(2,))
    assert "regular file" in p.stderr.decode()
