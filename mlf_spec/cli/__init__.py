"""The ``mlf-spec`` command line.

Exit status: 0 success; 1 a check found an error-severity finding, a migration was
refused (a loss not accepted, an impossible migration, an existing output without
--force) or ``diff`` found a difference; 2 the input could not be read (a one-line error
on stderr names the file, field and byte offset).

Start-up is kept short: ``--version`` and ``--help`` need no parser (the help lists the
commands from :data:`COMMANDS`), and a command imports only its own module (which imports
the codecs it needs when it runs).
"""

from __future__ import annotations

import contextlib
import sys

from . import _signals

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs a few ms at start-up; annotations are strings here
    import argparse
    from collections.abc import Callable, Sequence

    Handler = Callable[[argparse.Namespace], int]

#: The command modules of this package (each has ``register(subparsers)``), in the order
#: their commands are listed. A module whose commands are not in :data:`COMMANDS` is
#: imported on every start (correct, only slower).
COMMAND_MODULES = ("params", "cache", "blob", "archive", "check", "diff", "extract", "migrate", "export",
                   "conformance", "completion")

#: command name -> (command module, one-line help): what ``--help`` lists without imports.
COMMANDS: dict[str, tuple[str, str]] = {
    "params": ("params", "inspect and convert .params tensor files"),
    "cache": ("cache", "inspect, check, migrate, compare and convert tensor caches (tensor-cache.json + shards)"),
    "blob": ("blob", "inspect the module blob of exported TVM libraries"),
    "inspect": ("archive", "show what an artifact holds: its kind, then its contents (any kind check reads)"),
    "check": ("check", "check artifacts (MLF archives, .params, blobs, graph JSON, tensor caches) for conformance"),
    "diff": ("diff", "compare two artifacts of the same kind (.params, MLF archives, module blobs)"),
    "extract": ("extract", "extract an MLF archive into a new directory, safely"),
    "upgrade": ("migrate", "migrate an MLF archive or metadata.json to a later metadata version"),
    "downgrade": ("migrate", "migrate an MLF archive or metadata.json to an earlier metadata version"),
    "export": ("export", "write the formats as specs for other tools (Kaitai Struct .ksy)"),
    "conformance": ("conformance", "test an implementation of these formats against the spec"),
    "completion": ("completion", "print a bash or zsh completion script for mlf-spec"),
}

#: The command modules whose commands read or write the formats: their runs import numpy (through
#: the codecs), which :func:`main` then imports first (see :func:`_import_numpy_first`).
NUMPY_MODULES = frozenset({"params", "cache", "blob", "archive", "check", "diff", "extract", "migrate"})

DESCRIPTION = ("Read, write, check, compare and convert Apache TVM deployment artifacts\n"
               "(MLF archives, .params files, module blobs, GraphExecutor JSON, tensor caches).")


def add_command(sub: argparse._SubParsersAction, name: str, **kw: object) -> argparse.ArgumentParser:
    """Add command ``name`` with the help line of :data:`COMMANDS` (for command modules)."""
    return sub.add_parser(name, help=COMMANDS[name][1], **kw)  # type: ignore[arg-type]  # keyword arguments passed through to argparse unchanged


def _command_of(argv: Sequence[str]) -> str | None:
    """The command word of ``argv`` (the first argument not starting with ``-``)."""
    for a in argv:
        if not a.startswith("-"):
            return a
    return None


def _build_parser(command: str | None = None, *, placeholders: bool = True) -> argparse.ArgumentParser:
    """The parser: only ``command``'s module imported and registered (all of them when
    ``command`` is None and some module is not in :data:`COMMANDS`); with ``placeholders``, every
    other command too, as a placeholder (for the top-level help and the error naming the
    choices; a parser each, so it is left out when ``argv`` starts with a known command)."""
    import argparse
    import importlib

    from mlf_spec import __version__

    parser = argparse.ArgumentParser(prog="mlf-spec", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"mlf-spec {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    listed = {module for module, _ in COMMANDS.values()}
    wanted = [COMMANDS[command][0]] if command in COMMANDS else []
    wanted += [m for m in COMMAND_MODULES if m not in listed]
    for module in COMMAND_MODULES:
        if module in wanted:
            importlib.import_module(f"mlf_spec.cli.{module}").register(sub)
    for name, (_, text) in COMMANDS.items() if placeholders or command not in COMMANDS else ():
        if name not in sub.choices:
            sub.add_parser(name, help=text, add_help=False)
    # list the commands in the order of COMMANDS, whichever were registered first
    order = list(COMMANDS)
    sub._choices_actions.sort(key=lambda a: order.index(a.dest) if a.dest in order else len(order))
    return parser


def help_text() -> str:
    """The top-level ``--help`` text, from :data:`COMMANDS` (no parser is built for it)."""
    width = max(len(name) for name in COMMANDS) + 2
    lines = ["usage: mlf-spec [-h] [--version] COMMAND ...", "", DESCRIPTION, "", "commands:"]
    lines += [f"  {name:<{width}}{text}" for name, (_, text) in COMMANDS.items()]
    lines += ["", "options:", "  -h, --help  show this help message and exit",
              "  --version   show program's version number and exit", "",
              "`mlf-spec COMMAND --help` describes a command. Exit status: 0 success, 1 a finding,",
              "a refusal or a difference, 2 unreadable input. Outputs: mlf-spec creates the output",
              "it is given, never the folders above it; an output that is, holds or lies inside the",
              "input is refused (exit 2); an existing output is replaced only with --force."]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status. SIGINT, SIGTERM and SIGHUP at any moment of the
    run (imports and argument parsing too) give one line and exit status 128 + the signal's
    number, temporary files removed on the way out."""
    program = argv is None  # the process is this command: its handlers stay until it exits
    saved: dict[int, object] = {}
    try:  # from the first handler on: a signal while the others are installed is a stop too
        _signals.catch(saved)
        status = _main(list(sys.argv[1:] if argv is None else argv))
        signum = _signals.received()  # a signal some library swallowed on its way up: still the stop
    except BaseException as exc:
        # after a signal, whatever it became on its way up is the stop (numpy's import turns a
        # KeyboardInterrupt into an ImportError); temporary files were removed on the way out
        signum = _signals.received() or (2 if isinstance(exc, KeyboardInterrupt) else None)
        if signum is None:
            raise
    finally:
        _signals.quiet()
        if not program:
            _signals.restore(saved)
    if signum is None:
        return status
    if signum == 2:
        return _stopped("mlf-spec: interrupted", 130)
    import signal

    return _stopped(f"mlf-spec: stopped by {signal.Signals(signum).name}", 128 + signum)


def _main(argv: list[str]) -> int:
    try:
        if argv == ["--version"]:
            from mlf_spec import __version__

            print(f"mlf-spec {__version__}", flush=True)
            return 0
        if argv in (["--help"], ["-h"]):
            print(help_text(), flush=True)
            return 0
    except BrokenPipeError:
        return _pipe_closed()
    import os

    # the CLI uses no pydantic plugin: skip pydantic's scan of every installed distribution
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    from mlf_spec.errors import MlfError

    from ._text import safe_output

    command = _command_of(argv)
    with safe_output():
        _import_numpy_first(command, argv)
        parser = _build_parser(command, placeholders=argv[:1] != [command])
        args = parser.parse_args(argv)
        handler: Handler | None = getattr(args, "handler", None)
        if handler is None:  # a listed command whose module did not register it
            parser.error(f"command {args.command!r} is not available")
        try:
            return handler(args)
        except MlfError as exc:
            from ._batch import error_line

            print(error_line(exc), file=sys.stderr)
            return 2
        except BrokenPipeError:  # e.g. piped into head
            return _pipe_closed()
        except OSError as exc:  # a path the checks before writing did not foresee: one line, no traceback
            where = f"{exc.filename}: " if exc.filename else ""
            print(f"mlf-spec: error: {where}{exc.strerror or exc}", file=sys.stderr)
            return 2


def _stopped(line: str, status: int) -> int:
    with contextlib.suppress(OSError, ValueError):  # a hung-up terminal may refuse the line
        print(line, file=sys.stderr, flush=True)
    return status


def _import_numpy_first(command: str | None, argv: Sequence[str]) -> None:
    """Import numpy from here, near the bottom of the stack, when the command will import it
    anyway. Imported deep inside a command (a dozen import levels down), its import's many
    small calls sat on a boundary of CPython 3.11's frame stack, which then allocated and
    freed a chunk of it (mmap / munmap) some 800 times: 3-4 % of ``upgrade``'s start-up."""
    if command in COMMANDS and COMMANDS[command][0] in NUMPY_MODULES and not {"-h", "--help"} & set(argv):
        import numpy  # noqa: F401


def _pipe_closed() -> int:
    """Standard output was closed by the reader (``| head``): stop quietly, without the
    interpreter complaining when it flushes standard output at exit."""
    import os

    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return 0
