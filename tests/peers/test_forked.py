"""The fork-per-case loop (mlf_spec/peers/forked.py) that the peer worker and the TVM probes
share: a crash, a hang and an exception in the case are outcomes, not failures of the loop,
and what the case sent before dying is kept."""

from __future__ import annotations

import faulthandler
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from mlf_spec.peers.forked import fork_and_read, in_fork, signal_name


def test_parts_and_the_returned_value_come_back_in_order() -> None:
    out = in_fork(lambda send: (send({"a": 1}), send([2]), {"b": "é"})[-1])
    assert out == ([{"a": 1}, [2], {"b": "é"}], None, 0)


def test_a_crash_is_an_outcome_and_what_was_sent_before_it_is_kept() -> None:
    def case(send):
        send({"loaded": True})
        faulthandler.disable()  # pytest's traceback dump on SIGABRT: noise here
        os.abort()

    out = in_fork(case)
    assert out.parts == [{"loaded": True}] and out.signal == "SIGABRT" and out.exit is None


def test_a_hang_is_stopped_by_the_timeout() -> None:
    out = in_fork(lambda send: signal.pause(), timeout=1)
    assert out == ([], "SIGALRM", None)


def test_an_exception_in_the_case_exits_3_and_the_loop_goes_on() -> None:
    def case(send):
        send({"first": 1})
        raise RuntimeError("boom")

    assert in_fork(case) == ([{"first": 1}], None, 3)
    assert in_fork(lambda send: None) == ([], None, 0)  # nothing sent, a clean exit


def test_it_imports_as_a_lone_file_without_the_package(tmp_path: Path) -> None:
    """The peer worker and the probes import it from beside them in a TVM venv, where
    mlf-spec is not importable: it needs the standard library only."""
    import mlf_spec.peers.forked as forked

    code = ("import sys; sys.modules['mlf_spec'] = None; import forked; "
            "print(forked.in_fork(lambda send: {'x': 1}))")
    r = subprocess.run([sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(Path(forked.__file__).parent)!r}); "
                        + code], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "Outcome(parts=[{'x': 1}], signal=None, exit=0)"


def test_past_the_deadline_the_child_is_killed_and_what_it_wrote_is_kept() -> None:
    def child(w: int) -> None:
        os.write(w, b"started")
        signal.pause()

    assert fork_and_read(child, time.monotonic() + 0.5) == (b"started", None)
    data, status = fork_and_read(lambda w: os.write(w, b"done") and None, time.monotonic() + 60)
    assert data == b"done" and status is not None and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def test_a_signal_python_has_no_name_for_is_still_an_outcome() -> None:
    """A real-time signal (no ``signal.Signals`` member) ends the case like any other: its
    number is named, not a ValueError raised in the parent."""
    number = signal.SIGRTMIN + 3
    out = in_fork(lambda send: os.kill(os.getpid(), number))
    assert out.signal == signal_name(number) == f"signal {number}" and out.exit is None
    assert signal_name(signal.SIGSEGV) == "SIGSEGV"
