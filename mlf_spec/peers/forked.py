"""One case in a forked process, its crash an outcome: the loop the peer worker
(:mod:`.worker`) and the TVM probes of the tests run for every request or case.

Standard library only, and importable as a lone file: the peer worker and the probes run in
the interpreter of another TVM install, where mlf-spec is not importable, and import this
module from beside them (``import forked``).
"""

from __future__ import annotations

import json
import os
import signal
import sys
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


def in_fork(case: Callable[[Send], Any], timeout: int | None = None) -> Outcome:
    """Run ``case(send)`` in a process forked from this one, so that an abort, a segmentation
    fault or a heap it corrupts ends that process only. ``send`` passes a JSON part back at
    once (a part sent before a crash is kept); what ``case`` returns, unless None, is the last
    part. With ``timeout`` (seconds), the child is stopped by SIGALRM (a corrupted heap can
    hang). A child whose ``case`` raises exits with status 3 (the parts sent so far are kept)."""
    sys.stdout.flush()  # nothing buffered may be written twice
    sys.stderr.flush()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: run, write, leave without running any cleanup of the parent's
        status = 3
        try:
            os.close(r)
            if timeout is not None:
                signal.alarm(timeout)

            def send(part: Any) -> None:
                view = memoryview((json.dumps(part) + "\n").encode())
                while view:
                    view = view[os.write(w, view):]

            last = case(send)
            if last is not None:
                send(last)
            status = 0
        finally:
            os._exit(status)
    os.close(w)
    chunks: list[bytes] = []
    while True:
        b = os.read(r, 1 << 20)
        if not b:
            break
        chunks.append(b)
    os.close(r)
    _, st = os.waitpid(pid, 0)
    parts: list[Any] = []
    for line in b"".join(chunks).decode("utf-8", "replace").splitlines():
        if line.strip():
            try:
                parts.append(json.loads(line))
            except ValueError:  # a line cut short by the crash
                pass
    if os.WIFSIGNALED(st):
        return Outcome(parts, signal.Signals(os.WTERMSIG(st)).name, None)
    return Outcome(parts, None, os.WEXITSTATUS(st))


__all__ = ["Outcome", "Send", "in_fork"]
