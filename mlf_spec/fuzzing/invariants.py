"""The promises every reader keeps, as checks a fuzz target (or a test) can run.

* **Only MlfError escapes.** :func:`attempt` calls a reader and turns any other exception
  into an :class:`InvariantBreak`.
* **Round trip exact.** :func:`same_bytes` compares what a writer produced with what was read
  and names the first differing offset.
* **Bounded memory.** :class:`MemoryBudget` states the peak a call may allocate as
  ``base + factor * len(input)``; :func:`guarded` measures it with :mod:`tracemalloc`
  (Python objects and NumPy buffers; memory maps of files are not heap and not counted).
* **Nothing written outside a temporary directory.** :class:`Sandbox` points
  :mod:`tempfile` at a private directory and watches every write-like operation through
  an audit hook (:pep:`578`): writing, creating, renaming, removing or changing the mode of
  a path outside the sandbox is refused as it happens and reported; a file left behind in
  the sandbox, or a file descriptor left open, is reported too.

``guarded(fn, data, budget=...)`` runs a target under all of these.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
import tempfile
import threading
import tracemalloc
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mlf_spec.errors import MlfError


class InvariantBreak(AssertionError):
    """A reader broke one of its promises on some input. ``kind`` is one of
    ``exception`` (something other than MlfError escaped), ``round-trip``, ``memory``,
    ``write`` (a path outside the sandbox was modified), ``leak`` (a temporary file or a
    file descriptor was left behind) or ``consistency`` (two readers disagree)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"[{kind}] {message}")
        self.kind = kind
        self.message = message


def attempt(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)``; None if it raised an MlfError (the input is rejected);
    any other exception is an :class:`InvariantBreak` of kind ``exception``."""
    try:
        return fn(*args, **kwargs)
    except MlfError:
        return None
    except InvariantBreak:
        raise
    except Exception as exc:
        name = getattr(fn, "__qualname__", repr(fn))
        raise InvariantBreak("exception", f"{name} raised {type(exc).__name__}: {exc}") from exc


def rejects(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> MlfError | None:
    """The MlfError ``fn`` raised, or None if it returned; any other exception breaks the
    invariant (see :func:`attempt`)."""
    try:
        fn(*args, **kwargs)
    except MlfError as exc:
        return exc
    except InvariantBreak:
        raise
    except Exception as exc:
        name = getattr(fn, "__qualname__", repr(fn))
        raise InvariantBreak("exception", f"{name} raised {type(exc).__name__}: {exc}") from exc
    return None


def same_bytes(what: str, got: bytes | bytearray | memoryview, expected: bytes | bytearray | memoryview) -> None:
    """Raise a ``round-trip`` InvariantBreak unless ``got == expected``."""
    g, e = bytes(got), bytes(expected)
    if g == e:
        return
    at = next((i for i, (x, y) in enumerate(zip(g, e)) if x != y), min(len(g), len(e)))
    raise InvariantBreak("round-trip", f"{what}: {len(g)} bytes written for {len(e)} read; first difference at "
                                       f"offset {at}: {g[at:at + 16].hex()} != {e[at:at + 16].hex()}")


def agree(what: str, a: Any, b: Any) -> None:
    """Raise a ``consistency`` InvariantBreak unless ``a == b``."""
    if a != b:
        raise InvariantBreak("consistency", f"{what}: {a!r:.300} != {b!r:.300}")


@dataclass(frozen=True)
class MemoryBudget:
    """The peak a call may allocate: ``base + factor * size`` bytes for ``size`` input bytes."""

    factor: float
    base: int = 8 << 20

    def limit(self, size: int) -> int:
        """The budget in bytes for an input of ``size`` bytes."""
        return int(self.base + self.factor * size)

    def __str__(self) -> str:
        return f"{self.base >> 20} MiB + {self.factor:g} x input"


@contextlib.contextmanager
def measure_memory() -> Iterator[list[int]]:
    """Yield a one-element list that holds, after the block, the peak number of bytes
    allocated (and not yet freed) inside the block, as traced by :mod:`tracemalloc`."""
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    result = [0]
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        yield result
        result[0] = max(0, tracemalloc.get_traced_memory()[1] - before)
    finally:
        if started:
            tracemalloc.stop()


# ----------------------------------------------------------------- writes

# Audit events that create, modify or remove a path: the indices of their path arguments,
# each with the index of the directory descriptor it is relative to (None: the cwd).
_PATH_EVENTS: dict[str, tuple[tuple[int, int | None], ...]] = {
    "os.rename": ((0, 2), (1, 3)), "os.link": ((0, 2), (1, 3)), "os.remove": ((0, 1),), "os.rmdir": ((0, 1),),
    "os.mkdir": ((0, 2),), "os.chmod": ((0, 2),), "os.chown": ((0, 3),), "os.symlink": ((1, 2),),
    "os.truncate": ((0, None),), "os.utime": ((0, 3),), "os.mkfifo": ((0, 2),), "os.mknod": ((0, 3),),
    "os.setxattr": ((0, None),), "os.removexattr": ((0, None),), "shutil.copyfile": ((1, None),),
    "shutil.copymode": ((1, None),), "shutil.copystat": ((1, None),), "shutil.copytree": ((1, None),),
    "shutil.move": ((1, None),), "shutil.rmtree": ((0, 1),),
}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC


def _scratch() -> str | None:
    """Where sandboxes go: ``$MLF_FUZZ_TMPDIR``, else ``/dev/shm`` (a memory file system:
    creating and removing directories there costs microseconds, on disk milliseconds),
    else the system's temporary directory."""
    env = os.environ.get("MLF_FUZZ_TMPDIR")
    if env:
        return env
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
        return "/dev/shm"
    return None


class Sandbox:
    """A private temporary directory that :mod:`tempfile` uses while the sandbox is
    active, and an audit hook that refuses (and records) any change to a path outside it.

    One audit hook is installed per process, the first time a sandbox is activated; it
    does nothing while no sandbox is active. Not for concurrent use from several threads.
    """

    _active: Sandbox | None = None
    _hooked = False
    _lock = threading.Lock()

    def __init__(self, root: str | os.PathLike | None = None) -> None:
        self.root = Path(root) if root is not None else Path(tempfile.mkdtemp(prefix="mlf-fuzz-", dir=_scratch()))
        self.root.mkdir(parents=True, exist_ok=True)
        self.real = os.path.realpath(self.root)
        self.violations: list[str] = []

    def allowed(self, path: Any, dir_fd: Any = None) -> bool:
        """Whether changing ``path`` (str, bytes or PathLike, relative to the directory
        descriptor ``dir_fd`` if given; file descriptors themselves are allowed) stays
        inside the sandbox."""
        if isinstance(path, int) or path is None:
            return True
        try:
            p = os.fsdecode(os.fspath(path))
        except TypeError:
            return True
        if isinstance(dir_fd, int) and dir_fd >= 0 and not os.path.isabs(p):
            try:
                p = os.path.join(os.readlink(f"/proc/self/fd/{dir_fd}"), p)
            except OSError:
                return False
        real = os.path.realpath(p)
        return real == self.real or real.startswith(self.real + os.sep)

    @classmethod
    def _hook(cls, event: str, args: tuple) -> None:
        box = cls._active
        if box is None:
            return
        if event == "open":
            path, mode, flags = args
            writing = (flags & _WRITE_FLAGS) if isinstance(flags, int) else False
            if mode is not None and any(c in mode for c in "wax+"):
                writing = True
            if writing and not box.allowed(path):
                box._refuse(event, path)
            return
        where = _PATH_EVENTS.get(event)
        if where is None:
            return
        for i, fd in where:
            if i < len(args) and not box.allowed(args[i], args[fd] if fd is not None and fd < len(args) else None):
                box._refuse(event, args[i])

    def _refuse(self, event: str, path: Any) -> None:
        self.violations.append(f"{event} {path!r}")
        raise PermissionError(f"mlf-spec fuzzing sandbox: {event} outside {self.real}: {path!r}")

    @contextlib.contextmanager
    def active(self) -> Iterator[Sandbox]:
        """Route tempfile to the sandbox and watch writes while the block runs."""
        with Sandbox._lock:
            if not Sandbox._hooked:
                sys.addaudithook(Sandbox._hook)
                Sandbox._hooked = True
        previous_box, previous_tmp = Sandbox._active, tempfile.tempdir
        previous_bytecode = sys.dont_write_bytecode
        tempfile.tempdir = str(self.root)
        # A module imported for the first time (a command's module, in a fresh checkout)
        # would have its bytecode cached in __pycache__: the import system's write, not the
        # reader's, so it is not made rather than allowed.
        sys.dont_write_bytecode = True
        Sandbox._active = self
        try:
            yield self
        finally:
            Sandbox._active = previous_box
            tempfile.tempdir = previous_tmp
            sys.dont_write_bytecode = previous_bytecode

    def leftovers(self) -> list[str]:
        """Names left in the sandbox directory."""
        try:
            return sorted(os.listdir(self.root))
        except OSError:
            return []

    def clear(self) -> None:
        """Remove whatever is in the sandbox (after a failed input)."""
        import shutil

        for name in self.leftovers():
            p = self.root / name
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    p.unlink()

    def remove(self) -> None:
        """Delete the sandbox directory."""
        import shutil

        shutil.rmtree(self.root, ignore_errors=True)


def open_descriptors() -> int | None:
    """The number of open file descriptors of this process (None where /proc is absent)."""
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        return None


def guarded(fn: Callable[[bytes], Any], data: bytes, *, budget: MemoryBudget | None = None,
            sandbox: Sandbox | None = None, check_memory: bool = True) -> Any:
    """Run ``fn(data)`` under the invariants: an exception other than MlfError or
    InvariantBreak becomes an ``exception`` break (an MlfError escaping ``fn`` is fine); the
    peak allocation must stay within ``budget``; nothing may be written outside ``sandbox``
    (a new one if None), nothing left in it, no file descriptor left open."""
    own = sandbox is None
    box = sandbox if sandbox is not None else Sandbox()
    fds = open_descriptors()
    result = None
    try:
        with box.active():
            box.violations.clear()
            if check_memory and budget is not None:
                limit = budget.limit(len(data))
                for attempt_no in (1, 2):
                    with measure_memory() as peak:
                        result = _call(fn, data)
                    if peak[0] <= limit:
                        break
                    # The first call on a new path imports modules and fills caches (counted
                    # as allocations); only a second call over the budget is a finding.
                    if attempt_no == 2:
                        raise InvariantBreak("memory", f"peak allocation {peak[0]} bytes for {len(data)} input "
                                                       f"bytes, over the budget of {limit} ({budget})")
                    box.clear()
            else:
                result = _call(fn, data)
        if box.violations:
            raise InvariantBreak("write", f"modified outside the sandbox: {'; '.join(box.violations[:5])}")
        left = box.leftovers()
        if left:
            box.clear()
            raise InvariantBreak("leak", f"left in the temporary directory: {left[:5]}")
        after = open_descriptors()
        if fds is not None and after is not None and after > fds:
            # a descriptor held by a reference cycle (an exception's traceback and the frames
            # it keeps) goes with the next collection: only one that outlives it is a leak
            gc.collect()
            after = open_descriptors()
            if after is not None and after > fds:
                raise InvariantBreak("leak", f"{after - fds} file descriptor(s) left open")
    finally:
        if own:
            box.remove()
    return result


def _call(fn: Callable[[bytes], Any], data: bytes) -> Any:
    try:
        return fn(data)
    except MlfError:
        return None
    except InvariantBreak:
        raise
    except Exception as exc:
        raise InvariantBreak("exception", f"{type(exc).__name__}: {exc}") from exc


__all__ = ["InvariantBreak", "MemoryBudget", "Sandbox", "agree", "attempt", "guarded", "measure_memory",
           "open_descriptors", "rejects", "same_bytes"]
