"""Many inputs for one command: paths, directories (walked, artifacts recognised by
content), ``-`` for standard input; one result per input, in order; ``-j N`` processes.

A command describes the kinds it reads and a function that turns one :class:`Input` into
an :class:`Outcome` (exit status, text, JSON document). :func:`run` expands the inputs,
runs the function (in a process pool with ``-j``), prints each outcome as it comes (text,
or one JSON object per line with ``--json``), shows a progress line on a terminal, prints a
summary when there was more than one input and returns the worst status.
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from mlf_spec import sniff as _sniff
from mlf_spec._internal.lean_dataclass import dataclass, field
from mlf_spec._text import terminal_safe
from mlf_spec.errors import CannotOpenError, MlfError

from ._signals import stop_if_received

STDIN = "-"


@dataclass
class Input:
    """One input: ``name`` as shown (``<stdin>`` for ``-``), ``source`` (a path, or the
    bytes read from standard input) and its sniffed ``kind``."""

    name: str
    source: str | bytes
    kind: _sniff.Kind
    explicit: bool = True  #: named on the command line (False: found by walking a directory)
    piped: bool = False  #: a pipe named on the command line, read once (``source``: its bytes or a spooled copy)
    unreadable: str = ""  #: why a directory walk could not open this file or enter this folder (an error of the run)

    @property
    def path(self) -> str | None:
        """The path, or None for standard input (and a pipe, read once)."""
        return self.source if isinstance(self.source, str) and not self.is_stdin and not self.piped else None

    @property
    def is_stdin(self) -> bool:
        """Whether this input is standard input (its source may be a spooled file)."""
        return self.name == "<stdin>"


#: The most standard input may hold: the limit on anything read whole (``max_size``).
MAX_STDIN = 8 << 30
#: Standard input up to this size is kept in memory; more is spooled to a temporary file.
STDIN_IN_MEMORY = 16 << 20


def read_stdin(limit: int = MAX_STDIN) -> bytes | str:
    """Standard input: its bytes when small, else the path of a temporary file it was
    spooled into a MiB at a time (``.stdin.mlf-spec-PID-*.tmp``, removed at exit, and by a
    later run if this one is killed), so that a large input costs what a file costs: a
    mapping, not heap. More than ``limit`` bytes is a LengthError."""
    return read_stream(sys.stdin.buffer, "<stdin>", limit)


def read_stream(src: Any, name: str, limit: int = MAX_STDIN) -> bytes | str:
    """What :func:`read_stdin` does, for any binary stream read once (``name`` in messages)."""
    import atexit
    import tempfile

    from mlf_spec._io import clear_stale, temp_prefix
    from mlf_spec.errors import LengthError

    head = src.read(STDIN_IN_MEMORY)
    more = src.read(1 << 20) if len(head) == STDIN_IN_MEMORY else b""
    if not more:
        return head
    clear_stale(tempfile.gettempdir())
    fd, path = tempfile.mkstemp(prefix=temp_prefix("stdin"), suffix=".tmp")
    atexit.register(_remove, path)
    total = len(head)
    what = "standard input" if name == "<stdin>" else "the pipe"
    try:
        with os.fdopen(fd, "wb") as spool:
            chunk = head
            while chunk:
                spool.write(chunk)
                chunk, more = more, src.read(1 << 20)
                total += len(chunk)
                if total > limit:
                    raise LengthError(f"{what} holds more than {limit} bytes; give a file", file=name)
    except OSError as exc:
        _remove(path)
        raise MlfError(f"cannot spool {what} to a temporary file: {exc.strerror or exc}", file=name) from None
    except BaseException:
        _remove(path)
        raise
    return path


def read_named(path: str) -> str | bytes | None:
    """A path named on the command line that is not a file to open again and again: the
    contents of a pipe (a FIFO, ``<(command)``), read once as standard input is (its size
    is 0 and a second open would wait for a writer that is gone); MlfError for a device or
    a socket (``/dev/zero`` never ends, a terminal waits). None for anything else (a
    regular file, a folder, a path stat cannot see: the reader says why)."""
    import stat

    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    if not stat.S_ISFIFO(mode):
        raise MlfError("not a regular file (a device or a socket); give a file, or pipe it into '-'", file=path)
    try:
        with open(path, "rb") as f:
            return read_stream(f, path)
    except OSError as exc:
        raise MlfError(f"cannot read: {exc.strerror or exc}", file=path) from None


def _remove(path: str) -> None:
    import contextlib

    with contextlib.suppress(OSError):
        os.unlink(path)


@dataclass
class Outcome:
    """What a command made of one input: exit ``status`` (0, 1 or 2), ``text`` for the
    terminal, ``doc`` for ``--json`` and ``notes`` (warnings for standard error)."""

    status: int
    text: str = ""
    doc: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)
    #: for ``--json``: the object's JSON text in pieces, written as they come (instead of
    #: ``doc``: a document too large to hold whole); an MlfError while they are made ends
    #: the line and makes the input unreadable (status 2). Without ``--json``: the text in
    #: pieces (instead of ``text``), each ending its lines
    pieces: Iterable[str] | None = None
    #: not counted as an input: a file a directory walk found that is no TVM artifact (nothing
    #: shown), or an input passed over with the reason in ``notes`` (e.g. already past a migration's target)
    skipped: bool = False
    #: unreadable because it could not be opened or listed (counted apart in the summary line)
    unopened: bool = False


Work = Callable[[Input, argparse.Namespace], Outcome]


def add_arguments(parser: argparse.ArgumentParser, *, what: str, jobs: bool = True) -> None:
    """The input arguments every reading command shares."""
    parser.add_argument("paths", nargs="+", metavar="PATH",
                        help=f"{what}; a directory is searched for them (by content), '-' reads standard input")
    if jobs:
        parser.add_argument("-j", "--jobs", type=positive, default=1, metavar="N",
                            help="work on N inputs at once in N processes (default 1)")


def shown_paths(paths: Iterable[str]) -> str:
    """Paths named on the command line, for one line of an error message (newlines, escape
    sequences and undecodable bytes escaped)."""
    from mlf_spec._text import printable

    return ", ".join(terminal_safe(printable(p)) for p in paths)


def positive(text: str) -> int:
    """argparse type: an int of at least 1."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return n


def error_doc(name: str, exc: MlfError) -> dict[str, Any]:
    """The JSON object that stands for an input that could not be read."""
    return {"path": name, "error": {"type": type(exc).__name__, "message": exc.message, "file": exc.file,
                                    "field": exc.field, "offset": exc.offset}}


def error_line(exc: MlfError) -> str:
    """The one-line ``mlf-spec: error: ...`` text for an MlfError."""
    line = "; ".join(part.strip(" -") for part in str(exc).splitlines() if part.strip())
    return f"mlf-spec: error: {line}"


#: Kinds that may be a damaged archive: a directory walk for MLF archives takes them too,
#: so that a truncated archive in a checked folder is reported, not skipped.
_DAMAGED_ARCHIVE = frozenset({"tar", "compressed"})
#: The kinds that hold a module blob.
_BLOB_KINDS = frozenset({"library", "c-source", "export-tar", "blob"})


def expand(paths: Iterable[str], accept: frozenset[str], skipped: list[str] | None = None) -> Iterator[Input]:
    """The inputs named by ``paths``: files as given, directories walked in sorted order
    for files of the ``accept``-ed kinds (an extracted MLF archive counts as one input;
    when MLF archives are accepted, so are tars and compressed files that look like no
    known kind, which may be damaged archives), ``-`` as standard input and unexpanded
    glob patterns expanded. Files a walk leaves out are appended to ``skipped``."""
    if "mlf-archive" in accept:
        accept = accept | _DAMAGED_ARCHIVE
    skipped = [] if skipped is None else skipped
    for raw in paths:
        if raw == STDIN:
            data = read_stdin()
            yield Input("<stdin>", data, _sniff.sniff_bytes(data) if isinstance(data, bytes) else _sniff.sniff_path(data))
            continue
        if "://" in raw and _is_remote(raw):  # a remote tensor cache (hf://, https://, s3://, ...)
            yield Input(raw, raw, _sniff.KINDS["tensor-cache"])
            continue
        if not os.path.exists(raw) and glob.has_magic(raw):
            matches = sorted(glob.glob(raw, recursive=True))
            if not matches:
                yield Input(raw, raw, _sniff.KINDS["unknown"])
            for m in matches:
                yield from _one(m, accept, skipped, explicit=True)
            continue
        yield from _one(raw, accept, skipped, explicit=True)


def _is_remote(path: str) -> bool:
    from mlf_spec.remote import is_remote

    return is_remote(path)


def _one(path: str, accept: frozenset[str], skipped: list[str], *, explicit: bool) -> Iterator[Input]:
    data = read_named(path)
    if data is not None:
        yield Input(path, data, _sniff.sniff_bytes(data) if isinstance(data, bytes) else _sniff.sniff_path(data),
                    piped=True)
        return
    kind = _sniff.sniff_path(path)
    if kind.name == "directory":
        yield from _walk(path, accept, skipped)
        return
    if explicit or kind.name in accept:
        yield Input(path, path, kind)


def _walk(top: str, accept: frozenset[str], skipped: list[str]) -> Iterator[Input]:
    refused: list[OSError] = []  # folders os.walk could not list: each an unreadable input, in order

    def refusals() -> Iterator[Input]:
        while refused:
            exc = refused.pop(0)
            where = exc.filename if isinstance(exc.filename, str) else top
            yield Input(where, where, _sniff.KINDS["directory"], explicit=False,
                        unreadable=f"cannot list this folder: {exc.strerror or exc}")

    for root, dirs, files in os.walk(top, onerror=refused.append):
        yield from refusals()
        dirs.sort()
        files.sort()
        keep = []
        for d in dirs:
            sub = os.path.join(root, d)
            if d.startswith(".") or os.path.islink(sub):
                continue
            if "mlf-archive" in accept and os.path.isfile(os.path.join(sub, "metadata.json")):
                yield Input(sub, sub, _sniff.KINDS["mlf-archive"])
                continue
            if "tensor-cache" in accept and any(os.path.isfile(os.path.join(sub, n)) for n in _sniff.CACHE_INDEX_NAMES):
                yield Input(sub, sub, _sniff.KINDS["tensor-cache"])
                continue
            keep.append(d)
        dirs[:] = keep
        for f in files:
            p = os.path.join(root, f)
            if f.startswith(".") or os.path.islink(p):
                continue
            if not _regular(p):  # a FIFO would block the first read; devices, sockets: never opened
                skipped.append(p)
                continue
            why = _cannot_open(p)
            if why:
                yield Input(p, p, _sniff.KINDS["unknown"], explicit=False, unreadable=why)
                continue
            kind = _sniff.sniff_path(p)
            if kind.name in accept or kind.name in _sniff.NOT_ARTIFACT_KINDS and _sniff.claimed_kind(f) in accept:
                yield Input(p, p, kind, explicit=False)
            else:
                skipped.append(p)
    yield from refusals()


def _cannot_open(path: str) -> str:
    """Why ``path`` cannot be opened for reading ("" when it can): a walk reports such a
    file as unreadable instead of passing over it as no artifact."""
    try:
        os.close(os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)))
    except FileNotFoundError:
        return ""  # gone since the listing: nothing to report
    except OSError as exc:
        return f"cannot open: {exc.strerror or exc}"
    return ""


def _regular(path: str) -> bool:
    """Whether ``path`` is a regular file (stat only: the file is not opened)."""
    import stat

    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return True  # gone or unreadable: the reader says so


def guard(inp: Input, accept: frozenset[str], what: str) -> None:
    """Raise MlfError (naming what the input looks like and the command that reads it)
    when a recognised input is of a kind the command does not read."""
    k = inp.kind
    if k.name in accept:
        return
    if k.name in _sniff.NOT_ARTIFACT_KINDS or k.name == "tar":  # (a tar of no known kind: a weak recognition)
        claimed = _sniff.claimed_kind(inp.name)
        if claimed in accept or claimed == "blob" and accept & _BLOB_KINDS:
            return  # named as what the command reads: its reader says what is wrong
    if k.name in _sniff.NOT_ARTIFACT_KINDS:
        from mlf_spec.errors import NotAnArtifactError

        raise NotAnArtifactError(_sniff.not_an_artifact(k), file=inp.name)
    if k.name in _DAMAGED_ARCHIVE and "mlf-archive" in accept:
        return  # perhaps a damaged MLF archive: the archive reader says what is wrong
    if k.name == "directory":
        raise MlfError(f"{k.hint()}; no {what} found in it", file=inp.name)
    try_ = f"; try `{k.command}`" if k.command else ""
    raise MlfError(f"this is {k.label}, not {what}{try_}", file=inp.name)


def require_file(path: str, name: str) -> None:
    """MlfError unless ``path`` is a file: "no such file", or a directory named where a
    file is wanted."""
    p = Path(path)
    if p.is_dir():
        raise MlfError("a directory, not a file; name a file", file=name)
    if not p.is_file():
        raise MlfError("no such file", file=name)


def _call(work: Work, inp: Input, args: argparse.Namespace) -> Outcome:
    from mlf_spec.errors import NotAnArtifactError

    if inp.unreadable:
        return _failed(inp, CannotOpenError(inp.unreadable, file=inp.name))
    try:
        return work(inp, args)
    except NotAnArtifactError as exc:
        if not inp.explicit:
            return Outcome(0, skipped=True)
        exc.with_file(inp.name)
        return Outcome(2, doc=error_doc(inp.name, exc), notes=[error_line(exc)])
    except MlfError as exc:
        return _failed(inp, exc)
    finally:
        stop_if_received()  # a signal swallowed in the work (or become its error) ends the run here


def _failed(inp: Input, exc: MlfError) -> Outcome:
    if (inp.is_stdin or inp.piped) and exc.file == inp.source:
        exc.file = None  # the spooled file stands for standard input (or the pipe)
    exc.with_file(inp.name)
    return Outcome(2, doc=error_doc(inp.name, exc), notes=[error_line(exc)],
                   unopened=isinstance(exc, CannotOpenError))


def _pool_call(job: tuple[Work, Input, argparse.Namespace]) -> Outcome:
    outcome = _call(*job)
    if outcome.pieces is not None:  # a generator does not cross processes: made whole here
        try:
            outcome.pieces = ["".join(outcome.pieces)]
        except MlfError as exc:
            return _failed(job[1], exc)
    return outcome


def run(args: argparse.Namespace, work: Work, *, accept: frozenset[str], what: str,
        paths: list[str] | None = None, inputs: list[Input] | None = None) -> int:
    """Run ``work`` over the inputs named in ``args.paths`` (or ``paths``, or the already
    expanded ``inputs``); print outcomes; return the worst status. ``what`` names the
    expected input in messages (e.g. "a .params file")."""
    as_json = bool(getattr(args, "json", False))
    jobs = int(getattr(args, "jobs", 1) or 1)
    names = paths if paths is not None else args.paths
    skipped: list[str] = list(getattr(args, "skipped", []))
    if inputs is None:
        inputs = list(expand(names, accept, skipped))
    if not inputs:
        print(f"mlf-spec: error: found nothing that is {what} in {shown_paths(names)}", file=sys.stderr)
        return 2
    progress = _Progress(len(inputs)) if len(inputs) > 1 and sys.stderr.isatty() else None
    counts = [0, 0, 0]
    unopened = 0
    passed_over = 0
    worst = 0
    for i, (inp, outcome) in enumerate(zip(inputs, _outcomes(work, inputs, args, jobs))):
        if progress:
            progress.clear()
        if outcome.skipped:
            if outcome.notes or outcome.doc:
                _emit(outcome, as_json)
                passed_over += 1
            else:
                skipped.append(inp.name)
            continue
        failure = _emit(outcome, as_json)
        if failure is not None:  # the JSON line was cut short: the input is unreadable after all
            outcome = _failed(inp, failure)
            _emit(outcome, as_json)
        status = min(max(outcome.status, 0), 2)
        counts[status] += 1
        unopened += outcome.unopened
        worst = max(worst, status)
        if progress:
            progress.show(i + 1, inp.name)
    if progress:
        progress.clear()
    if not sum(counts) and not passed_over:
        print(f"mlf-spec: error: found nothing that is {what} in {shown_paths(names)}", file=sys.stderr)
        return 2
    if len(inputs) > 1 or skipped or passed_over:
        line = (f"{sum(counts) + passed_over} inputs: {counts[0]} ok, {counts[1]} with findings or refused, "
                f"{counts[2]} unreadable" + (f" ({unopened} cannot be opened)" if unopened else "")
                + (f", {passed_over} skipped" if passed_over else ""))
        if skipped:
            special = sum(1 for p in skipped if not _regular(p))
            line += f"; {len(skipped) - special} other file(s) skipped (not {what})" if len(skipped) > special else ""
            line += f"; {special} not a regular file (FIFO, socket, device) skipped" if special else ""
        print(line, file=sys.stderr if as_json else sys.stdout)
    return worst


def _outcomes(work: Work, inputs: list[Input], args: argparse.Namespace, jobs: int) -> Iterator[Outcome]:
    if len(inputs) == 1 and sys.stderr.isatty():  # one long input (a 1 GB file): a line says it is being worked on
        with _Working(inputs[0].name):
            outcome = _call(work, inputs[0], args)
        yield outcome
        return
    if jobs <= 1 or len(inputs) < 2:
        for inp in inputs:
            yield _call(work, inp, args)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    fork = sys.platform.startswith("linux")
    ctx = multiprocessing.get_context("fork" if fork else "spawn")
    if fork:  # the first input in this process: the workers inherit what it imported
        yield _call(work, inputs[0], args)
        inputs = inputs[1:]
    chunk = max(1, min(16, len(inputs) // (jobs * 4)))
    with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
        yield from pool.map(_pool_call, [(work, inp, args) for inp in inputs], chunksize=chunk)


_SLICE = 1 << 20


def _emit(outcome: Outcome, as_json: bool) -> MlfError | None:
    """Print one outcome; the MlfError that cut its JSON pieces short, if any (the line
    written so far is ended)."""
    for note in outcome.notes:
        print(note, file=sys.stderr)
    if outcome.pieces is not None:  # text pieces end their own lines; a JSON line is ended here
        try:
            for piece in outcome.pieces:
                for start in range(0, len(piece), _SLICE):
                    sys.stdout.write(piece[start:start + _SLICE])
        except MlfError as exc:
            return exc
        finally:
            if as_json:
                sys.stdout.write("\n")
            sys.stdout.flush()
    elif as_json:
        if outcome.doc is not None:
            import json

            line = json.dumps(outcome.doc, ensure_ascii=False, separators=(",", ":"))
            try:
                line.encode("utf-8")
            except UnicodeEncodeError:  # a lone surrogate (undecodable bytes kept): escape, stay valid UTF-8
                line = json.dumps(outcome.doc, ensure_ascii=True, separators=(",", ":"))
            sys.stdout.write(line + "\n")
    elif outcome.text:
        text = outcome.text if outcome.text.endswith("\n") else outcome.text + "\n"
        for start in range(0, len(text), _SLICE):  # no single write of gigabytes (a write may be cut short)
            sys.stdout.write(text[start:start + _SLICE])
    sys.stdout.flush()
    return None


class _Progress:
    """A one-line progress display on standard error (terminals only), shown after 0.5 s."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.start = time.monotonic()
        self.shown = False

    def show(self, done: int, name: str) -> None:
        if time.monotonic() - self.start < 0.5:
            return
        width = 80
        try:
            width = os.get_terminal_size(sys.stderr.fileno()).columns
        except OSError:
            pass
        text = f"[{done}/{self.total}] {name}"
        out = getattr(sys.stderr, "unescaped", sys.stderr)  # this line's own \r; the name escaped
        out.write("\r" + terminal_safe(text[: max(10, width - 1)]))
        out.flush()
        self.shown = True

    def clear(self) -> None:
        if self.shown:
            out = getattr(sys.stderr, "unescaped", sys.stderr)
            out.write("\r\x1b[K")
            out.flush()
            self.shown = False


class _Working:
    """While one input is worked on, a line on a terminal's standard error that counts the
    seconds (``[12 s] model.params``), from ``$MLF_SPEC_PROGRESS_AFTER`` seconds on (default
    1), redrawn every half second and cleared before the result is printed."""

    def __init__(self, name: str) -> None:
        import threading

        self.name = name
        self.start = time.monotonic()
        self.stop = threading.Event()
        self.shown = False
        self.lock = threading.Lock()
        try:
            self.after = float(os.environ.get("MLF_SPEC_PROGRESS_AFTER", "1"))
        except ValueError:
            self.after = 1.0
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> _Working:
        if self.after <= 0:
            self._draw()
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()
        with self.lock:
            if self.shown:
                out = getattr(sys.stderr, "unescaped", sys.stderr)
                out.write("\r\x1b[K")
                out.flush()

    def _run(self) -> None:
        if self.stop.wait(max(0.0, self.after)):
            return
        while not self.stop.is_set():
            self._draw()
            self.stop.wait(0.5)

    def _draw(self) -> None:
        with self.lock:
            out = getattr(sys.stderr, "unescaped", sys.stderr)  # this line's own \r; the name escaped
            out.write(f"\r[{time.monotonic() - self.start:.0f} s] working on " + terminal_safe(self.name[:200]))
            out.flush()
            self.shown = True
