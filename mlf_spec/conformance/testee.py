"""The runner side of the protocol: drive a testee and turn whatever it does into an
:class:`~mlf_spec.conformance.judge.Answer`, never into a hang or a crash of the runner.

* :class:`InProcess` calls an adapter directly (fast; for adapters that cannot crash).
* :class:`OneShot` starts ``CMD decode FORMAT k=v ...`` per case.
* :class:`Persistent` keeps ``CMD serve`` processes (one per worker thread) and sends one JSON
  line per case; a server that dies, hangs or babbles is killed and started again.

Every child runs in its own session (killed as a group), with a wall-clock timeout, caps on
what it may print and, where the platform has it, an address-space limit (RLIMIT_AS).
"""

from __future__ import annotations

import base64
import importlib
import json
import os
import selectors
import shlex
import signal
import subprocess
import tempfile
import threading
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import IO, Any

from mlf_spec.errors import MlfError

from .adapters.base import Adapter, Crashed, Rejected
from .folders import INPUT_DIR, OUTPUT_DIR, is_folder_format, private_copy, read_output, scratch
from .judge import Answer
from .protocol import carry_out
from .vectors import Case

STDERR_TAIL = 4000


@dataclass(frozen=True)
class Limits:
    """Per-case limits: seconds, bytes of output, megabytes of address space (0: none)."""

    timeout: float = 60.0
    max_output: int = 64 << 20
    memory_mb: int = 0


def signal_name(returncode: int) -> str | None:
    """SIGSEGV for -11 (a child killed by a signal), else None."""
    from mlf_spec.peers.forked import signal_name as _name  # the peers package is not loaded at start-up

    return None if returncode >= 0 else _name(-returncode)


def _resource_module() -> ModuleType | None:
    """The ``resource`` module (None on Windows, which has none)."""
    try:
        return importlib.import_module("resource")
    except ImportError:  # pragma: no cover - not on Windows
        return None


resource = _resource_module()


def _preexec(memory_mb: int) -> Any:
    """Where the child's limit cannot be set from outside (no prlimit), set it in the child
    between fork and exec (a C call only: nothing there takes a Python lock)."""
    if not memory_mb or resource is None or hasattr(resource, "prlimit"):
        return None
    size = memory_mb << 20
    return lambda: resource.setrlimit(resource.RLIMIT_AS, (size, size))


def _limit(proc: subprocess.Popen, memory_mb: int) -> None:
    """Limit a child's address space from outside (Linux prlimit), right after it starts."""
    if memory_mb and resource is not None and hasattr(resource, "prlimit"):
        size = memory_mb << 20
        try:
            resource.prlimit(proc.pid, resource.RLIMIT_AS, (size, size))
        except (ProcessLookupError, PermissionError, OSError):
            pass  # it has already ended: its exit status tells


#: The variable every testee process is started with (a value per testee): what its
#: descendants inherit even when they leave its session (``setsid()``) and lose their parent,
#: so that they are found and ended with the run.
TOKEN_VAR = "MLF_SPEC_TESTEE_RUN"


def _token_env(token: str) -> dict[str, str]:
    return {**os.environ, TOKEN_VAR: token}


def _processes() -> dict[int, tuple[int, bytes]]:
    """Every process but this one: pid -> (parent pid, environment), from /proc ({} where
    there is no /proc)."""
    out: dict[int, tuple[int, bytes]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return out
    me = os.getpid()
    for name in names:
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                ppid = int(f.read().rpartition(b")")[2].split()[1])
            with open(f"/proc/{name}/environ", "rb") as f:
                env = f.read()
        except (OSError, ValueError, IndexError):
            continue
        out[int(name)] = (ppid, env)
    return out


def sweep(token: str | None) -> int:
    """SIGKILL every process that carries ``token`` in its environment (a testee's children
    and grandchildren, in its session or their own), repeated while new ones appear (a child
    forking as it dies). Returns how many were killed."""
    if not token:
        return 0
    needle = f"{TOKEN_VAR}={token}".encode()
    killed = 0
    for _ in range(8):
        found = [pid for pid, (_, env) in _processes().items() if needle in env.split(b"\0")]
        if not found:
            break
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        killed += len(found)
        time.sleep(0.01)
    return killed


def _kill(proc: subprocess.Popen, token: str | None = None) -> None:
    """SIGKILL the testee, its process group, and every descendant (those that left its
    session too: found by parent before it dies, and by ``token``)."""
    descendants = _descendants(proc.pid)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, OSError):
        try:
            proc.kill()
        except OSError:
            pass
    for pid in descendants:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    if token is not None:
        sweep(token)


def _descendants(root: int) -> list[int]:
    procs = _processes()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in procs.items():
        children.setdefault(ppid, []).append(pid)
    out, pending = [], [root]
    while pending:
        for c in children.get(pending.pop(), []):
            out.append(c)
            pending.append(c)
    return out


@dataclass
class Run:
    """What one child did: exit status (None if it was killed by the runner), output, the
    tail of its stderr, and whether it hit the timeout or the output cap."""

    returncode: int | None
    stdout: bytes
    stderr: str
    timed_out: bool = False
    overflow: bool = False


def run_capped(argv: Sequence[str], data: bytes, limits: Limits, token: str | None = None) -> Run:
    """Run ``argv`` with ``data`` on stdin under ``limits``; never blocks past the timeout.
    ``token``: started with it in :data:`TOKEN_VAR`; when it ends, what is left of its
    process group is killed."""
    proc = subprocess.Popen(list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True, preexec_fn=_preexec(limits.memory_mb),
                            env=_token_env(token) if token else None)
    _limit(proc, limits.memory_mb)
    deadline = time.monotonic() + limits.timeout
    pipes = _Pipes(proc, data, limits.max_output)
    try:
        pipes.pump(deadline)
    finally:
        pipes.sel.close()
        timed_out = _reap(proc, token, pipes.timed_out, pipes.overflow, deadline)
    rc = None if (timed_out or pipes.overflow) else proc.returncode
    return Run(rc, bytes(pipes.out), pipes.err[-STDERR_TAIL:].decode("utf-8", "replace"), timed_out, pipes.overflow)


class _Pipes:
    """A child's stdin (fed ``data``), stdout (kept, up to ``max_output`` bytes) and stderr
    (its tail kept), served by one selector."""

    def __init__(self, proc: subprocess.Popen[bytes], data: bytes, max_output: int) -> None:
        assert proc.stdin and proc.stdout and proc.stderr
        self.proc, self.stdin, self.stdout, self.max_output = proc, proc.stdin, proc.stdout, max_output
        self.sel = selectors.DefaultSelector()
        os.set_blocking(self.stdin.fileno(), False)
        self.pending = memoryview(data)
        if self.pending.nbytes:
            self.sel.register(self.stdin, selectors.EVENT_WRITE)
        else:
            self.stdin.close()
        self.sel.register(self.stdout, selectors.EVENT_READ)
        self.sel.register(proc.stderr, selectors.EVENT_READ)
        self.out, self.err = bytearray(), bytearray()
        self.timed_out = self.overflow = False

    def pump(self, deadline: float) -> None:
        """Feed and drain the pipes until they close, the deadline passes (``timed_out``), stdout
        passes the cap (``overflow``), or the child has ended and its pipes are empty."""
        exited = False
        while self.sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                self.timed_out = True
                return
            if not exited and self.proc.poll() is not None:
                exited = True  # from now on only what is already in the pipes is read
            ready = self.sel.select(0.05 if exited else min(left, 0.25))
            if not ready and exited:
                return  # the testee ended; a descendant still holding its pipes does not keep the case waiting
            for key, _ in ready:
                if key.fileobj is self.stdin:
                    self._feed()
                elif not self._drain(key):
                    return

    def _feed(self) -> None:
        try:
            n = os.write(self.stdin.fileno(), self.pending[:65536])
            self.pending = self.pending[n:]
        except (BrokenPipeError, OSError):
            self.pending = self.pending[:0]
        if not self.pending.nbytes:
            self.sel.unregister(self.stdin)
            self.stdin.close()

    def _drain(self, key: selectors.SelectorKey) -> bool:
        """Read what a pipe holds; False once stdout is over the cap."""
        chunk = os.read(key.fd, 65536)
        if not chunk:
            self.sel.unregister(key.fileobj)
        elif key.fileobj is self.stdout:
            self.out += chunk
            if len(self.out) > self.max_output:
                self.overflow = True
                return False
        else:
            self.err += chunk
            if len(self.err) > 2 * STDERR_TAIL:
                del self.err[:-STDERR_TAIL]
        return True


def _reap(proc: subprocess.Popen[bytes], token: str | None, timed_out: bool, overflow: bool, deadline: float) -> bool:
    """Wait for the child (killed at once after a timeout or an overflow, else by the deadline),
    kill what is left of its process group and close its pipes; whether it timed out."""
    if timed_out or overflow:
        _kill(proc, token)
    else:
        try:
            proc.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill(proc, token)
    proc.wait()
    try:  # what it left in its process group ends with it
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    for f in filter(None, (proc.stdin, proc.stdout, proc.stderr)):  # (all three are pipes)
        try:
            f.close()
        except OSError:
            pass
    return timed_out


def _failure(run: Run, limits: Limits) -> Answer | None:
    """The Answer for a child that failed (timeout, overflow, crash), else None."""
    if run.timed_out:
        return Answer.failed("timeout", f"no answer within {limits.timeout:g} s")
    if run.overflow:
        return Answer.failed("output_limit", f"printed more than {limits.max_output} bytes")
    assert run.returncode is not None
    if run.returncode < 0:
        sig = signal_name(run.returncode)
        return Answer.failed("crash", f"killed by {sig}{_tail(run.stderr)}", signal=sig)
    if run.returncode not in (0, 1):
        kind = "memory" if "MemoryError" in run.stderr or "bad_alloc" in run.stderr else "crash"
        return Answer.failed(kind, f"exit status {run.returncode}{_tail(run.stderr)}")
    return None


def internal_kind(sig: str | None) -> str:
    """The error kind of an ``internal`` answer: ``crash`` if a signal ended the
    implementation, else ``internal`` (it failed and said so cleanly)."""
    return "crash" if sig else "internal"


def _tail(stderr: str) -> str:
    lines = [x for x in stderr.strip().splitlines() if x.strip()]
    return f": {lines[-1][:300]}" if lines else ""


def _with_written(answer: Answer, out: Path) -> Answer:
    """An ok answer to a folder-shaped encode, with the files the testee wrote into ``out``
    (a folder holding a link or a special file is a protocol error)."""
    if answer.status != "ok":
        return answer
    try:
        return Answer.ok(files=read_output(out))
    except MlfError as exc:
        return Answer.failed("protocol", f"the folder written is not plain files: {exc}")


class Testee:
    """A testee the runner can ask: ``info()`` once (a command testee asks its handshake once and
    keeps it), then ``ask(case)`` per case."""

    mode = "in-process"

    def info(self) -> dict[str, Any]:
        """The handshake."""
        raise NotImplementedError

    def ask(self, case: Case) -> Answer:
        """The testee's answer to a case."""
        raise NotImplementedError

    def ask_raw(self, op: str, fmt: str, options: dict[str, str], payload: Any) -> Answer:
        """The testee's answer to a request not from a vector file (generated cases)."""
        raise NotImplementedError

    def reproduce(self, case: Case) -> str:
        """A shell command that sends the case's request to the testee."""
        return ""

    def request_line(self, case: Case) -> str:
        """The line a persistent testee is sent for the case ("" for other modes)."""
        return ""

    def describe(self) -> str:
        """How the report names the testee."""
        return ""

    def close(self) -> None:
        """Stop whatever the testee keeps running."""


class InProcess(Testee):
    """An adapter called in this process (exceptions other than Rejected are testee errors)."""

    mode = "in-process"

    def __init__(self, adapter: Adapter) -> None:
        self.adapter = adapter

    def info(self) -> dict[str, Any]:
        """The adapter's handshake."""
        return self.adapter.info()

    def ask(self, case: Case) -> Answer:
        """Call the adapter with the case's request (a folder-shaped input as the path of a
        private copy of its folder)."""
        if case.is_folder and case.role != "encode":
            with private_copy(case.input_files(), case.input_path.name) as folder:
                return self.ask_raw(case.role, case.format, case.options, folder)
        if case.is_folder:  # encode: the adapter writes into options["output_dir"]
            with scratch() as base:
                out = base / "out"
                out.mkdir()
                answer = self.ask_raw(case.role, case.format, {**case.options, OUTPUT_DIR: str(out)},
                                      case.reading_input())
                return _with_written(answer, out)
        payload = case.reading_input() if case.role == "encode" else case.input()
        return self.ask_raw(case.role, case.format, case.options, payload)

    def ask_raw(self, op: str, fmt: str, options: dict[str, str], payload: Any) -> Answer:
        """Call the adapter."""
        try:
            result = carry_out(self.adapter, op, fmt, dict(options), payload)
        except Rejected as exc:
            return Answer.rejected(exc.message, exc.error_class)
        except Crashed as exc:
            return Answer.failed("crash", exc.message, signal=exc.signal)
        except Exception as exc:
            where = traceback.extract_tb(exc.__traceback__)[-1]
            return Answer.failed("internal", f"{type(exc).__name__}: {exc} ({where.filename}:{where.lineno})")
        if op == "encode" and is_folder_format(fmt):
            return Answer.ok()  # the files are in options["output_dir"]: _with_written reads them
        if op == "encode":
            if not isinstance(result, (bytes, bytearray)):
                return Answer.failed("protocol", f"encode returned {type(result).__name__}, not bytes")
            return Answer.ok(output=bytes(result))
        try:
            return Answer.ok(reading=json.loads(json.dumps(result)))
        except (TypeError, ValueError) as exc:
            return Answer.failed("protocol", f"the reading is not JSON data: {exc}")

    def describe(self) -> str:
        """adapter:<name>."""
        return f"adapter:{self.adapter.name}"

    def close(self) -> None:
        """Let the adapter release what it keeps running."""
        self.adapter.close()


class OneShot(Testee):
    """A command started once per case."""

    mode = "one-shot"

    def __init__(self, command: Sequence[str], limits: Limits | None = None, label: str | None = None, *,
                 info: dict[str, Any] | None = None) -> None:
        self.command = list(command)
        self.limits = limits or Limits()
        self.label = label
        self.token = os.urandom(8).hex()
        self._info = info  # the handshake, once asked (or given: asked by whoever made this testee)

    def describe(self) -> str:
        """The label (``adapter:<name>``) or the command line."""
        return self.label or shlex.join(self.command)

    def close(self) -> None:
        """End whatever the testee's processes left running (grandchildren in their own
        session too: they carry the run's :data:`TOKEN_VAR`)."""
        sweep(self.token)

    def info(self) -> dict[str, Any]:
        """``CMD info`` (asked once: later calls return the same handshake); MlfError if the
        command cannot be started or answers nonsense."""
        if self._info is None:
            self._info = self._handshake()
        return self._info

    def _handshake(self) -> dict[str, Any]:
        try:
            run = run_capped(self.command + ["info"], b"", self.limits, self.token)
        except OSError as exc:
            raise MlfError(f"cannot start the testee {self.describe()!r}: {exc.strerror}") from None
        problem = _failure(run, self.limits)
        if problem is not None or run.returncode != 0:
            why = problem.message if problem else f"exit status {run.returncode}{_tail(run.stderr)}"
            raise MlfError(f"the testee {self.describe()!r} did not answer `info`: {why}")
        try:
            doc = json.loads(run.stdout)
        except (ValueError, RecursionError):  # RecursionError: nested deeper than json can read
            raise MlfError(f"the testee {self.describe()!r} answered `info` with something that is not JSON: "
                           f"{run.stdout[:80]!r}") from None
        return check_info(doc, self.describe())

    def ask(self, case: Case) -> Answer:
        """Run ``CMD ROLE FORMAT k=v ...`` with the input on stdin; a folder-shaped input
        as ``input_dir=PATH`` (a private copy of its folder), stdin empty."""
        if case.is_folder and case.role != "encode":
            with private_copy(case.input_files(), case.input_path.name) as folder:
                return self._ask(case.role, case.format, case.options, b"", {INPUT_DIR: str(folder)})
        if case.is_folder:  # encode: the testee writes into output_dir
            with scratch() as base:
                out = base / "out"
                out.mkdir()
                return _with_written(self._ask(case.role, case.format, case.options, case.input(),
                                               {OUTPUT_DIR: str(out)}), out)
        payload = case.input()
        return self._ask(case.role, case.format, case.options, payload)

    def ask_raw(self, op: str, fmt: str, options: dict[str, str], payload: Any) -> Answer:
        """Run one request (a folder-shaped input: ``payload`` is the folder's path)."""
        if is_folder_format(fmt) and op != "encode":
            return self._ask(op, fmt, options, b"", {INPUT_DIR: str(Path(payload).resolve())})
        data = (json.dumps(payload) + "\n").encode() if op == "encode" else bytes(payload)
        return self._ask(op, fmt, options, data)

    def _ask(self, op: str, fmt: str, options: dict[str, str], data: bytes,
             folder_args: dict[str, str] | None = None) -> Answer:
        argv = self.command + [op, fmt] + [f"{k}={v}" for k, v in sorted(options.items())] + \
            [f"{k}={v}" for k, v in (folder_args or {}).items()]
        try:
            run = run_capped(argv, data, self.limits, self.token)
        except OSError as exc:
            return Answer.failed("crash", f"cannot start: {exc.strerror}")
        problem = _failure(run, self.limits)
        if problem is not None:
            return problem
        if run.returncode == 1:
            cls, message, sig = None, _tail(run.stderr)[2:] or "(no message)", None
            if run.stdout.strip():
                try:
                    err = json.loads(run.stdout)["error"]
                    cls, message = err.get("class"), err.get("message") or message
                    sig = err.get("signal") if isinstance(err.get("signal"), str) else None
                except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
                    return Answer.failed("protocol", f"exit status 1 with stdout that is no rejection: "
                                         f"{run.stdout[:80]!r}")
            if cls == "internal":
                return Answer.failed(internal_kind(sig), str(message), signal=sig)
            return Answer.rejected(message, cls)
        if op == "encode" and is_folder_format(fmt):
            return Answer.ok()
        if op == "encode":
            return Answer.ok(output=run.stdout)
        try:
            return Answer.ok(reading=json.loads(run.stdout))
        except (ValueError, RecursionError):
            return Answer.failed("protocol", f"stdout is not JSON: {run.stdout[:80]!r}")

    def reproduce(self, case: Case) -> str:
        """``CMD decode FORMAT k=v < INPUT``; a folder-shaped input: ``... input_dir=FOLDER``
        (the vector's own folder; the run used a private copy of it)."""
        args = [case.role, case.format] + [f"{k}={v}" for k, v in sorted(case.options.items())]
        if case.is_folder and case.role != "encode":
            args.append(f"{INPUT_DIR}={case.input_path.resolve()}")
            return f"{shlex.join(self.command + args)} < /dev/null"
        if case.is_folder:  # the folder written is left for inspection
            return (f"OUT=$(mktemp -d) && {shlex.join(self.command + args)} {OUTPUT_DIR}=\"$OUT\" < "
                    f"{shlex.quote(str(case.input_path))} && echo \"written to $OUT\"")
        return f"{shlex.join(self.command + args)} < {shlex.quote(str(case.input_path))}"


def check_info(doc: Any, who: str) -> dict[str, Any]:
    """The handshake if it matches the schema (testee_info), else MlfError."""
    from pydantic import ValidationError

    from mlf_spec.generated.conformance_protocol_models import TesteeInfo

    try:
        TesteeInfo.model_validate(doc)
    except ValidationError as exc:
        e = exc.errors()[0]
        raise MlfError(f"the handshake of {who!r} is not a testee_info: {'.'.join(map(str, e['loc']))}: "
                       f"{e['msg']}") from None
    return doc


class _Server:
    """One ``CMD serve`` process."""

    def __init__(self, command: list[str], limits: Limits, token: str | None = None) -> None:
        self.stderr: IO[bytes] = tempfile.TemporaryFile()
        self.token = token
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr,
                                     start_new_session=True, preexec_fn=_preexec(limits.memory_mb),
                                     env=_token_env(token) if token else None)
        _limit(self.proc, limits.memory_mb)
        assert self.proc.stdout is not None
        os.set_blocking(self.proc.stdout.fileno(), False)
        self.buffer = bytearray()
        self.next_id = 0

    def stderr_tail(self) -> str:
        self.stderr.seek(0, os.SEEK_END)
        size = self.stderr.tell()
        self.stderr.seek(max(0, size - STDERR_TAIL))
        return self.stderr.read().decode("utf-8", "replace")

    def exchange(self, request: dict[str, Any], limits: Limits) -> tuple[str, Any, str | None]:
        """("ok", response, None) or (error kind, message, signal name or None)."""
        self.next_id += 1
        request = {"id": self.next_id, **request}
        line = (json.dumps(request, ensure_ascii=False) + "\n").encode("utf-8")
        deadline = time.monotonic() + limits.timeout
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            self._write(line, deadline)
        except (BrokenPipeError, OSError):
            return self._dead("could not send the request")
        except TimeoutError:
            return "timeout", f"did not read the request within {limits.timeout:g} s", None
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        scanned = 0  # the buffer before this holds no newline: each byte is searched once
        try:
            while (end := self.buffer.find(b"\n", scanned)) < 0:
                scanned = len(self.buffer)
                left = deadline - time.monotonic()
                if left <= 0:
                    return "timeout", f"no answer within {limits.timeout:g} s", None
                if os.fstat(self.stderr.fileno()).st_size > limits.max_output:
                    return "output_limit", f"printed more than {limits.max_output} bytes on stderr", None
                if not sel.select(min(left, 1.0)):
                    if self.proc.poll() is not None:
                        return self._dead("exited")
                    continue
                chunk = os.read(self.proc.stdout.fileno(), 1 << 20)
                if not chunk:
                    return self._dead("closed its output")
                self.buffer += chunk
                if len(self.buffer) > limits.max_output:
                    return "output_limit", f"printed more than {limits.max_output} bytes", None
        finally:
            sel.close()
        raw = bytes(memoryview(self.buffer)[:end])
        del self.buffer[:end + 1]
        try:
            resp = json.loads(raw)
        except (ValueError, RecursionError):
            return "protocol", f"answered with a line that is not JSON: {raw[:80]!r}", None
        if not isinstance(resp, dict) or resp.get("id") != self.next_id or not isinstance(resp.get("ok"), bool):
            return "protocol", f"answered with a line that is no response to request {self.next_id}: {raw[:80]!r}", None
        return "ok", resp, None

    def _write(self, data: bytes, deadline: float) -> None:
        assert self.proc.stdin is not None
        fd = self.proc.stdin.fileno()
        os.set_blocking(fd, False)
        view = memoryview(data)
        sel = selectors.DefaultSelector()
        sel.register(fd, selectors.EVENT_WRITE)
        try:
            while view.nbytes:
                if time.monotonic() > deadline:
                    raise TimeoutError
                if sel.select(0.5):
                    n = os.write(fd, view[:65536])
                    view = view[n:]
                elif self.proc.poll() is not None:
                    raise BrokenPipeError
        finally:
            sel.close()

    def _dead(self, what: str) -> tuple[str, str, str | None]:
        try:
            rc = self.proc.wait(2)
        except subprocess.TimeoutExpired:
            return "protocol", f"{what} but did not exit", None
        sig = signal_name(rc)
        tail = _tail(self.stderr_tail())
        if sig:
            return "crash", f"killed by {sig}{tail}", sig
        kind = "memory" if "MemoryError" in tail or "bad_alloc" in tail else "crash"
        return kind, f"{what} (exit status {rc}){tail}", None

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.close()
                self.proc.wait(2)
            except (OSError, subprocess.TimeoutExpired):
                _kill(self.proc, self.token)
                self.proc.wait()
        try:  # what it left in its process group ends with it
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:
            pass
        for f in filter(None, (self.proc.stdin, self.proc.stdout, self.stderr)):  # (stdin, stdout: pipes)
            try:
                f.close()
            except OSError:
                pass


class Persistent(Testee):
    """``CMD serve`` processes, one per worker thread, restarted after any failure."""

    mode = "persistent"

    def __init__(self, command: Sequence[str], limits: Limits | None = None, label: str | None = None, *,
                 info: dict[str, Any] | None = None) -> None:
        self.command = list(command)
        self.limits = limits or Limits()
        self.oneshot = OneShot(command, self.limits, label, info=info)
        self._local = threading.local()
        self._all: list[_Server] = []
        self._lock = threading.Lock()

    def describe(self) -> str:
        """The label (``adapter:<name>``) or the command line."""
        return self.oneshot.describe()

    def info(self) -> dict[str, Any]:
        """``CMD info`` (asked once)."""
        return self.oneshot.info()

    def _server(self) -> _Server:
        s = getattr(self._local, "server", None)
        if s is None or s.proc.poll() is not None:
            s = _Server(self.command + ["serve"], self.limits, self.oneshot.token)
            self._local.server = s
            with self._lock:
                self._all.append(s)
        return s

    def _drop(self, s: _Server) -> None:
        _kill(s.proc, s.token)
        s.proc.wait()
        s.close()
        s.buffer = bytearray()  # up to the output cap: freed now, not when the run ends
        with self._lock:
            if s in self._all:
                self._all.remove(s)
        self._local.server = None

    def ask(self, case: Case) -> Answer:
        """One request line for the case (a folder-shaped input: ``input_dir``, the path of a
        private copy of its folder)."""
        if case.is_folder and case.role != "encode":
            with private_copy(case.input_files(), case.input_path.name) as folder:
                return self._ask(case.request(folder))
        if case.is_folder:  # encode: the server writes into output_dir
            with scratch() as base:
                out = base / "out"
                out.mkdir()
                return _with_written(self._ask(case.request(out)), out)
        return self._ask(case.request())

    def ask_raw(self, op: str, fmt: str, options: dict[str, str], payload: Any) -> Answer:
        """One request line (a folder-shaped input: ``payload`` is the folder's path)."""
        req: dict[str, Any] = {"op": op, "format": fmt, "options": dict(options)}
        if is_folder_format(fmt) and op != "encode":
            req[INPUT_DIR] = str(Path(payload).resolve())
        elif op == "encode":
            req["reading"] = payload
        else:
            req["input"] = base64.b64encode(bytes(payload)).decode("ascii")
        return self._ask(req)

    def _ask(self, request: dict[str, Any]) -> Answer:
        try:
            s = self._server()
        except OSError as exc:
            return Answer.failed("crash", f"cannot start: {exc.strerror}")
        status, resp, sig = s.exchange(request, self.limits)
        if status != "ok":
            self._drop(s)
            return Answer.failed(status, resp, signal=sig)
        if resp["ok"]:
            if request["op"] == "encode" and is_folder_format(request["format"]):
                return Answer.ok()
            if request["op"] == "encode":
                try:
                    return Answer.ok(output=base64.b64decode(resp["output"], validate=True))
                except (KeyError, TypeError, ValueError):
                    return Answer.failed("protocol", "an encode response without base64 output")
            if "reading" not in resp:
                return Answer.failed("protocol", "a response without a reading")
            return Answer.ok(reading=resp["reading"])
        err = resp.get("error") if isinstance(resp.get("error"), dict) else {}
        cls = err.get("class")
        if cls in ("internal", "protocol"):
            sig = err.get("signal") if isinstance(err.get("signal"), str) else None
            return Answer.failed(internal_kind(sig) if cls == "internal" else "protocol", str(err.get("message")),
                                 signal=sig)
        return Answer.rejected(str(err.get("message", "")), cls)

    def request_line(self, case: Case) -> str:
        """The request line the case is sent as (id 1; a folder-shaped encode names the output
        folder ``<temp>/mlf-conf-out``, which the reader of the report makes)."""
        if case.is_folder and case.role == "encode":
            import tempfile

            return json.dumps({"id": 1, **case.request(Path(tempfile.gettempdir()) / "mlf-conf-out")},
                              ensure_ascii=False)
        return json.dumps({"id": 1, **case.request()}, ensure_ascii=False)

    def reproduce(self, case: Case) -> str:
        """The same request through ``CMD serve``: ``mlf-spec conformance request`` prints the
        case's request line (with the options it ran with), piped into the server."""
        opts = [f"{k}={v}" for k, v in sorted(case.options.items())]
        maker = shlex.join(["mlf-spec", "conformance", "request", str(case.path), *opts])
        return f"{maker} | {shlex.join(self.command + ['serve'])}"

    def close(self) -> None:
        """Stop every server."""
        with self._lock:
            servers, self._all = self._all, []
        for s in servers:
            s.close()
        self.oneshot.close()


__all__ = ["InProcess", "Limits", "OneShot", "Persistent", "Run", "Testee", "check_info", "internal_kind",
           "run_capped", "signal_name", "sweep"]
