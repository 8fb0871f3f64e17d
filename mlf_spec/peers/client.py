"""Drive a peer runtime's request loop (:mod:`.worker`) from mlf-spec's side."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from pathlib import Path
from typing import Any

from mlf_spec.errors import MlfError

WORKER = Path(__file__).with_name("worker.py")


class PeerRefused(Exception):
    """The peer raised (TVM refused the input): its message's last line."""


class PeerCrashed(Exception):
    """The peer's child died on the request: ``signal`` (a name such as ``SIGABRT``) or ``exit``."""

    def __init__(self, signal: str | None, exit_code: int | None = None) -> None:
        super().__init__(f"killed by {signal}" if signal else f"exit status {exit_code} without an answer")
        self.signal = signal
        self.exit_code = exit_code


class Peer:
    """One running request loop in ``python`` (a peer venv's interpreter); requests are
    answered one at a time, each in a child forked from the loop."""

    def __init__(self, python: str | os.PathLike[str], env: dict[str, str] | None = None) -> None:
        self.python = str(python)
        self.proc = subprocess.Popen([self.python, str(WORKER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL if os.environ.get("MLF_SPEC_PEER_QUIET") else None,
                                     env={**os.environ, **(env or {})}, text=True, encoding="utf-8")
        self.lock = threading.Lock()
        self.next_id = 0

    def request(self, op: str, **fields: Any) -> dict[str, Any]:
        """The reply to one request; PeerRefused when TVM raised, PeerCrashed when it died,
        MlfError when the loop itself is gone."""
        with self.lock:
            self.next_id += 1
            assert self.proc.stdin is not None and self.proc.stdout is not None
            try:
                self.proc.stdin.write(json.dumps({"op": op, "id": self.next_id, **fields}) + "\n")
                self.proc.stdin.flush()
                line = self.proc.stdout.readline()
            except (BrokenPipeError, OSError):
                line = ""
            if not line:
                raise MlfError(f"the peer runtime {self.python} stopped (exit status {self.proc.poll()})")
        reply = json.loads(line)
        if "died" in reply:
            raise PeerCrashed(reply["died"], reply.get("exit"))
        if "error" in reply:
            raise PeerRefused(f"{reply.get('type', 'Error')}: {reply['error']}")
        return reply

    def close(self) -> None:
        """End the loop."""
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.close()
                self.proc.wait(5)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()

    def __enter__(self) -> Peer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["Peer", "PeerCrashed", "PeerRefused", "WORKER"]
