"""Run a target on an input in a child process, so that a crash is a result, not the end.

A C++ reader that aborts on bad input (TVM's heap corruption on some sub-byte tensors, a
failed ``CHECK`` that calls ``abort()``, a segmentation fault) takes the Python process
with it. Run it here instead::

    from mlf_spec.isolation import Isolated, run_isolated

    def load_in_tvm(data: bytes) -> int:          # a module-level function (it is pickled)
        import tvm
        return len(tvm.runtime.load_param_dict(bytearray(data)))

    r = run_isolated(load_in_tvm, data, timeout=60)   # one input, one fresh child
    r.status            # "ok", "error" (it raised), "crash" (a signal or exit) or "timeout"
    r.value, r.error, r.signal_name, r.exit_code, r.stderr

    with Isolated(load_in_tvm, preload=["tvm"]) as target:  # many inputs: one worker imports
        for data in inputs:                                  # tvm once and forks a fresh
            assert target(data).status != "crash"            # process for each input

With hypothesis::

    target = Isolated(load_in_tvm, preload=["tvm"])

    @given(ms.params_bytes(accepted_by="0.27"))
    def test_tvm_loads(data):
        r = target(data)
        assert r.ok, r

The worker is started with ``multiprocessing``'s ``spawn`` method by default (a fresh
interpreter: safe whatever threads the parent runs; the target and the input must be
picklable, so the target is a module-level function, and a script that uses it needs the
usual ``if __name__ == "__main__":`` guard); ``start_method="fork"`` starts faster on Linux. A fresh process per input (the default on POSIX) keeps one input's heap
corruption from crashing the next; it costs a ``fork`` (about a millisecond). What the child writes to its standard error (glibc's ``free(): invalid
pointer``, TVM's check messages) is captured in ``stderr``.
"""

from __future__ import annotations

import os
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: How much of the child's standard error an Outcome keeps (the end of it).
STDERR_LIMIT = 8192


@dataclass
class Outcome:
    """What happened when the target ran on one input.

    ``status`` is ``ok`` (it returned ``value``), ``error`` (it raised: ``error_type`` and
    ``error`` hold the exception's class name and message, ``traceback`` its traceback),
    ``crash`` (the child died: ``signal``/``signal_name`` when a signal killed it, else
    ``exit_code``) or ``timeout`` (killed after ``timeout`` seconds). ``stderr`` is what the
    child wrote to standard error while it ran this input; ``seconds`` the time it took."""

    status: str
    value: Any = None
    error_type: str | None = None
    error: str | None = None
    traceback: str | None = None
    signal: int | None = None
    exit_code: int | None = None
    stderr: str = ""
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """True when the target returned."""
        return self.status == "ok"

    @property
    def crashed(self) -> bool:
        """True when the child died (a signal or an exit) or hung."""
        return self.status in ("crash", "timeout")

    @property
    def signal_name(self) -> str | None:
        """``SIGABRT``, ``SIGSEGV``... when a signal killed the child."""
        from mlf_spec.peers.forked import signal_name  # the peers package is not loaded at start-up

        return None if self.signal is None else signal_name(self.signal)

    def __repr__(self) -> str:
        if self.status == "ok":
            v = repr(self.value)
            return f"Outcome(ok, value={v if len(v) <= 80 else v[:77] + '...'})"
        if self.status == "error":
            return f"Outcome(error, {self.error_type}: {_clip(self.error or '', 200)!r})"
        what = self.signal_name if self.signal is not None else (
            f"exit status {self.exit_code}" if self.status == "crash" else f"after {self.seconds:.1f} s")
        tail = _clip(self.stderr.strip().splitlines()[-1], 200) if self.stderr.strip() else ""
        return f"Outcome({self.status}, {what}" + (f", stderr ends {tail!r})" if tail else ")")


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 3] + "..."


def _child(conn: Any, target: Callable[[Any], Any], stderr_path: str, fresh: bool, preload: tuple[str, ...],
           timeout: float | None) -> None:
    """The worker: import ``preload``, then run ``target`` on each input received (in a
    process forked for it when ``fresh``) and send back what happened."""
    fd = os.open(stderr_path, os.O_WRONLY | os.O_APPEND)
    os.dup2(fd, 2)
    os.close(fd)
    import importlib

    for name in preload:
        importlib.import_module(name)
    while True:
        try:
            data = conn.recv()
        except EOFError:
            break
        reply = forked_call(target, data, timeout) if fresh else _call(target, data)
        try:
            conn.send(reply)
        except Exception as exc:  # the value does not pickle
            conn.send(("error", type(exc).__name__, f"the target's return value cannot be sent back: {exc}", ""))
    os._exit(0)


def _call(target: Callable[[Any], Any], data: Any) -> tuple:
    try:
        return ("ok", target(data))
    except BaseException as exc:  # the target's failure is the result
        return ("error", type(exc).__name__, str(exc), traceback.format_exc())


def forked_call(target: Callable[[Any], Any], data: Any, timeout: float | None) -> tuple:
    """Run ``target(data)`` in a process forked for it (POSIX). The reply:
    ``("ok", value)``, ``("error", exception name, message, traceback)``,
    ``("crash", signal number or None, exit status)`` when the process died without a
    reply, or ``("timeout",)`` (the process is killed)."""
    import pickle

    from mlf_spec.peers.forked import fork_and_read

    def child(w: int) -> None:  # run, write the reply
        reply = _call(target, data)
        try:
            payload = pickle.dumps(reply)
        except Exception as exc:
            payload = pickle.dumps(("error", type(exc).__name__, f"the target's return value cannot be sent back: {exc}",
                                    ""))
        with os.fdopen(w, "wb") as f:
            f.write(payload)

    out, status = fork_and_read(child, None if timeout is None else time.monotonic() + timeout)
    if status is None:
        return ("timeout",)
    if os.WIFSIGNALED(status):
        return ("crash", os.WTERMSIG(status), None)
    code = os.WEXITSTATUS(status)
    if code != 0 or not out:
        return ("crash", None, code)
    return pickle.loads(out)


class Isolated:
    """``target`` run in a child process (the worker) that is kept between calls. Call it
    with an input to get an :class:`Outcome`; close it (or use ``with``) to stop the worker.

    ``fresh`` (the default where ``os.fork`` exists) runs every input in a process forked
    from the worker for it: what one input does to the heap cannot crash the next one, and
    the modules named in ``preload`` (e.g. ``["tvm"]``) are imported once, by the worker.
    ``fresh=False`` runs the inputs one after another in the worker itself (faster; the
    worker is started again after a crash, but memory corrupted by one input may crash a
    later one). A worker that forks should not have started threads of its own (import,
    do not run, in ``preload``)."""

    def __init__(self, target: Callable[[Any], Any], *, timeout: float | None = 60.0, fresh: bool | None = None,
                 preload: tuple[str, ...] | list[str] = (), start_method: str = "spawn") -> None:
        self.target = target
        self.timeout = timeout
        self.fresh = hasattr(os, "fork") if fresh is None else fresh
        if self.fresh and not hasattr(os, "fork"):
            raise ValueError("fresh=True needs os.fork (POSIX)")
        self.preload = tuple(preload)
        self.start_method = start_method
        self._proc: Any = None
        self._conn: Any = None
        fd, self._stderr_path = tempfile.mkstemp(prefix="mlf-spec-isolated-", suffix=".stderr")
        os.close(fd)

    def _start(self) -> None:
        import multiprocessing

        ctx = multiprocessing.get_context(self.start_method)
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=_child, args=(child, self.target, self._stderr_path, self.fresh, self.preload,
                                                self.timeout), daemon=True)
        try:
            proc.start()
        finally:
            child.close()
        self._proc, self._conn = proc, parent

    def __call__(self, data: Any) -> Outcome:
        """Run the target on ``data`` in the child; never raises for what the target does."""
        if self._proc is None or not self._proc.is_alive():
            self._start()
        start_err = os.path.getsize(self._stderr_path)
        t0 = time.monotonic()
        try:
            self._conn.send(data)
            # a fresh process enforces the timeout itself; this is the backstop (and the
            # import of ``preload`` by a new worker)
            ready = self._conn.poll(None if self.timeout is None else self.timeout + (30 if self.fresh else 0))
        except (BrokenPipeError, EOFError, ConnectionResetError):
            ready = True  # the child is gone; recv below says so
        if not ready:
            self._kill()
            return Outcome("timeout", seconds=time.monotonic() - t0, stderr=self._stderr_since(start_err))
        try:
            reply = self._conn.recv()
        except (EOFError, ConnectionResetError, OSError):
            self._proc.join(5)
            code = self._proc.exitcode
            self._reset()
            sig = -code if code is not None and code < 0 else None
            return Outcome("crash", signal=sig, exit_code=None if sig is not None else code,
                           seconds=time.monotonic() - t0, stderr=self._stderr_since(start_err))
        seconds = time.monotonic() - t0
        if reply[0] == "timeout":
            return Outcome("timeout", seconds=seconds, stderr=self._stderr_since(start_err))
        if reply[0] == "crash":
            return Outcome("crash", signal=reply[1], exit_code=reply[2], seconds=seconds,
                           stderr=self._stderr_since(start_err))
        if reply[0] == "ok":
            return Outcome("ok", value=reply[1], seconds=seconds, stderr=self._stderr_since(start_err))
        return Outcome("error", error_type=reply[1], error=reply[2], traceback=reply[3], seconds=seconds,
                       stderr=self._stderr_since(start_err))

    def _stderr_since(self, offset: int) -> str:
        try:
            with open(self._stderr_path, "rb") as f:
                f.seek(offset)
                text = f.read().decode("utf-8", "replace")
        except OSError:
            return ""
        return text[-STDERR_LIMIT:]

    def _kill(self) -> None:
        if self._proc is not None and self._proc.is_alive():
            self._proc.kill()
            self._proc.join(5)
        self._reset()

    def _reset(self) -> None:
        if self._conn is not None:
            self._conn.close()
        self._proc = self._conn = None

    def close(self) -> None:
        """Stop the child and remove the captured standard error."""
        if self._conn is not None:
            try:
                self._conn.close()  # the child's recv ends: it exits
            except OSError:
                pass
        if self._proc is not None:
            self._proc.join(2)
        self._kill()
        try:
            os.unlink(self._stderr_path)
        except OSError:
            pass

    def __enter__(self) -> Isolated:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


def run_isolated(target: Callable[[Any], Any], data: Any, *, timeout: float | None = 60.0,
                 start_method: str = "spawn") -> Outcome:
    """Run ``target(data)`` once in a new child process and say what happened (see
    :class:`Outcome`); a crash of the child (abort, segmentation fault, exit) or a hang
    longer than ``timeout`` seconds is reported, never raised."""
    with Isolated(target, timeout=timeout, fresh=False, start_method=start_method) as iso:
        return iso(data)


__all__ = ["STDERR_LIMIT", "Isolated", "Outcome", "forked_call", "run_isolated"]
