"""One case in a forked process, its crash an outcome: the loop that the peer worker
(:mod:`.worker`), the TVM probes of the tests and :func:`mlf_spec.isolation.forked_call` run
for every request, case or input.

Standard library only, and importable as a lone file: the peer worker and the probes run in
the interpreter of another TVM install, where mlf-spec is not importable, and import this
module from beside them (``import forked``).
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import time
from collections.abc import Callable
from typing import Any, NamedTuple

#: how a forked case sends one JSON part of its result (it may send several, as it goes)
Send = Callable[[Any], None]


class Outcome(NamedTuple):
    """What a forked case gave: the JSON parts it sent, in order, and how its process ended
    (the name of the signal that ended it, else its exit status)."""

    parts: list[Any]
    signal: str | None
    exit: int | None


def fork_and_read(child: Callable[[int], None], deadline: float | None = None) -> tuple[bytes, int | None]:
    """Run ``child(fd)`` in a process forked from this one; it writes what it has to say to
    the pipe ``fd``, then the process leaves at once (status 0, or 3 when ``child`` raised)
    without running any cleanup of this process. Returns what the child wrote and its wait
    status; past ``deadline`` (a :func:`time.monotonic` value) the child is killed and the
    status is None."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        status = 3
        try:
            os.close(r)
            child(w)
            status = 0
        finally:
            os._exit(status)
    os.close(w)
    chunks: list[bytes] = []
    try:
        while True:
            if deadline is not None:
                wait = deadline - time.monotonic()
                if wait <= 0 or not select.select([r], [], [], wait)[0]:
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                    return b"".join(chunks), None
            chunk = os.read(r, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(r)
    _, status = os.waitpid(pid, 0)
    return b"".join(chunks), status


def in_fork(case: Callable[[Send], Any], timeout: int | None = None) -> Outcome:
    """Run ``case(send)`` in a process forked from this one, so that an abort, a segmentation
    fault or a heap it corrupts ends that process only. ``send`` passes a JSON part back at
    once (a part sent before a crash is kept); what ``case`` returns, unless None, is the last
    part. With ``timeout`` (seconds), the child is stopped by SIGALRM (a corrupted heap can
    hang). A child whose ``case`` raises exits with status 3 (the parts sent so far are kept)."""
    sys.stdout.flush()  # nothing buffered may be written twice
    sys.stderr.flush()

    def child(w: int) -> None:
        if timeout is not None:
            signal.alarm(timeout)

        def send(part: Any) -> None:
            view = memoryview((json.dumps(part) + "\n").encode())
            while view:
                view = view[os.write(w, view):]

        last = case(send)
        if last is not None:
            send(last)

    data, st = fork_and_read(child)
    parts: list[Any] = []
    for line in data.decode("utf-8", "replace").splitlines():
        if line.strip():
            try:
                parts.append(json.loads(line))
            except ValueError:  # a line cut short by the crash
                pass
    if st is None or os.WIFSIGNALED(st):  # (no deadline here: st is a status)
        return Outcome(parts, signal_name(os.WTERMSIG(st) if st is not None else signal.SIGKILL), None)
    return Outcome(parts, None, os.WEXITSTATUS(st))


def signal_name(number: int) -> str:
    """``SIGSEGV`` for 11; a number Python has no name for (a real-time signal) as ``signal <n>``."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


__all__ = ["Outcome", "Send", "fork_and_read", "in_fork", "signal_name"]
