"""The testee side of the protocol (docs/conformance/protocol.md): serve an adapter on the
command line, one-shot or persistent.

One-shot: ``CMD info`` | ``CMD decode FORMAT [k=v ...]`` | ``CMD encode FORMAT [k=v ...]`` |
``CMD migrate FORMAT to=N``; the artifact (or, for encode, the canonical reading) on stdin;
the reading (or bytes) on stdout, exit 0; a refusal exits 1 with a message on stderr and
optionally ``{"error": {"class": ..., "message": ...}}`` on stdout. Persistent: ``CMD serve``
answers one JSON request per line with one JSON response per line.

An adapter's methods raise :class:`Rejected` to refuse an input; any other exception is a
fault of the testee: an ``internal`` error (one-shot: exit 1 with ``{"error": {"class":
"internal"}}`` on stdout and the traceback on stderr; persistent: an ``internal`` response).

A request is held in memory whole, so its size is bounded: at most :data:`MAX_INPUT` bytes
(64 MiB) on a one-shot stdin (more: "bad request" on stderr, exit 2, nothing on stdout) and
at most :data:`MAX_LINE` bytes in a persistent request line (its base64 ``input`` of
``MAX_INPUT`` bytes and the rest of the request; a longer line is answered with a
``protocol`` error, id -1, and skipped). Conformance cases are far smaller; a 1 GiB stdin
cost 2 GB before the bound.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import sys
import traceback
from pathlib import Path
from typing import IO, Any

from mlf_spec.generated.formats import MAX_INPUT, PROTOCOL
from mlf_spec.generated.formats import OPS as ROLES

from .adapters.base import Adapter, Crashed, Rejected
from .folders import INPUT_DIR, OUTPUT_DIR, is_folder_format

#: The longest persistent request line: a base64 ``input`` of MAX_INPUT bytes and 1 MiB more.
MAX_LINE = -(-MAX_INPUT // 3) * 4 + (1 << 20)


def parse_options(args: list[str]) -> dict[str, str]:
    """``["dialect=v0.23", "to=5"]`` -> ``{"dialect": "v0.23", "to": "5"}``."""
    out = {}
    for a in args:
        key, sep, value = a.partition("=")
        if not sep or not key:
            raise ValueError(f"an option is key=value, got {a!r}")
        out[key] = value
    return out


def folder_argument(value: Any, key: str = INPUT_DIR) -> Path:
    """The folder a folder-shaped request names (``input_dir``, for encode ``output_dir``): an
    absolute path to a folder; ValueError otherwise (a bad request)."""
    if not isinstance(value, str) or not value:
        raise ValueError(f"a folder-shaped format needs {key}=PATH (the folder holding the artifact)")
    path = Path(value)
    if not path.is_absolute() or not path.is_dir():
        raise ValueError(f"{key} must be the absolute path of a folder, got {value!r}")
    return path


def carry_out(adapter: Adapter, op: str, fmt: str, options: dict[str, str], payload: Any) -> Any:
    """Run one request on an adapter: a reading (decode, migrate) or bytes (encode)."""
    if op == "decode":
        return adapter.decode(fmt, payload, options)
    if op == "encode":
        return adapter.encode(fmt, payload, options)
    if op == "migrate":
        return adapter.migrate(fmt, payload, options)
    raise ValueError(f"unknown op {op!r}; ops: {', '.join(ROLES)}")


def one_shot(adapter: Adapter, argv: list[str], stdin: IO[bytes] | None = None, stdout: IO[bytes] | None = None,
             stderr: IO[str] | None = None) -> int:
    """Answer one command line; return the exit status (0 done, 1 refused, 2 usage or fault)."""
    stdin = stdin or sys.stdin.buffer
    stdout = stdout or sys.stdout.buffer
    stderr = stderr or sys.stderr
    if not argv:
        print("usage: info | decode FORMAT [k=v ...] | encode FORMAT [k=v ...] | migrate FORMAT to=N | serve",
              file=stderr)
        return 2
    if argv[0] == "info":
        stdout.write((json.dumps(adapter.info(), ensure_ascii=False) + "\n").encode("utf-8"))
        return 0
    if argv[0] == "serve":
        return serve(adapter, stdin, stdout)
    if argv[0] not in ROLES or len(argv) < 2:
        print(f"unknown command {' '.join(argv)!r}", file=stderr)
        return 2
    from .vectors import format_name

    op, fmt = argv[0], format_name(argv[1])  # `cache` names the tensor cache too
    try:
        options = parse_options(argv[2:])
        payload: Any
        if is_folder_format(fmt) and op != "encode":
            payload = folder_argument(options.pop(INPUT_DIR, None))
        else:
            raw = stdin.read(MAX_INPUT + 1)
            if len(raw) > MAX_INPUT:
                raise ValueError(f"stdin holds more than {MAX_INPUT} bytes, the most a request may hold")
            payload = json.loads(raw) if op == "encode" else raw
        if is_folder_format(fmt) and op == "encode":  # the adapter writes into options["output_dir"]
            options[OUTPUT_DIR] = str(folder_argument(options.get(OUTPUT_DIR), OUTPUT_DIR))
    except ValueError as exc:
        print(f"bad request: {exc}", file=stderr)
        return 2
    try:
        result = carry_out(adapter, op, fmt, options, payload)
    except Crashed as exc:
        print(exc.message, file=stderr)
        stderr.flush()
        if exc.signal and hasattr(signal, exc.signal):  # end as the implementation ended
            sig = getattr(signal, exc.signal)
            signal.signal(sig, signal.SIG_DFL)
            os.kill(os.getpid(), sig)
        return 3
    except Rejected as exc:
        print(exc.message, file=stderr)
        error = {"message": exc.message, **({"class": exc.error_class} if exc.error_class else {})}
        # ASCII escapes: the message may quote a path that is not UTF-8 (a lone surrogate)
        stdout.write((json.dumps({"error": error}) + "\n").encode("utf-8"))
        return 1
    except Exception as exc:
        traceback.print_exc(file=stderr)
        stdout.write(json.dumps({"error": {"class": "internal", "message": f"{type(exc).__name__}: {exc}"}},
                                ensure_ascii=True).encode("utf-8") + b"\n")
        return 1
    if op == "encode":
        if not is_folder_format(fmt):  # a folder-shaped artifact is in output_dir
            stdout.write(result)
        return 0
    try:
        text = (json.dumps(result, ensure_ascii=False) + "\n").encode("utf-8")
    except (UnicodeEncodeError, TypeError, ValueError) as exc:
        print(f"the answer cannot be written as JSON: {_unwritable(exc)}", file=stderr)
        stdout.write(json.dumps({"error": {"class": "internal", "message": f"the answer cannot be written as JSON: "
                                           f"{_unwritable(exc)}"}}).encode("utf-8") + b"\n")
        return 1
    stdout.write(text)
    return 0


def serve(adapter: Adapter, stdin: IO[bytes], stdout: IO[bytes]) -> int:
    """The persistent form: one JSON request per line in, one JSON response per line out,
    until stdin ends. An ``isolated`` adapter answers each request in a forked child (where
    the platform forks), so that a crash, or memory corrupted by one input, stays with that
    request: the response then says which signal ended the child."""
    fork = adapter.isolated and hasattr(os, "fork")
    adapter.prepare()
    while line := stdin.readline(MAX_LINE + 1):
        if len(line) > MAX_LINE:
            while line and not line.endswith(b"\n"):  # the rest of the line, a MiB at a time
                line = stdin.readline(1 << 20)
            resp = {"id": -1, "ok": False, "error": {"class": "protocol", "message": "bad request: a line longer "
                                                     f"than {MAX_LINE} bytes, the most a request may hold"}}
        elif not line.strip():
            continue
        else:
            resp = respond_in_child(adapter, line) if fork else respond(adapter, line)
        stdout.write(response_line(resp))
        stdout.flush()
    return 0


def response_line(resp: dict[str, Any]) -> bytes:
    """One response as a UTF-8 JSON line; a response that cannot be written (a reading with a
    lone surrogate) becomes an ``internal`` error response, so the server lives on."""
    try:
        return (json.dumps(resp, ensure_ascii=False) + "\n").encode("utf-8")
    except (UnicodeEncodeError, TypeError, ValueError) as exc:
        bad = {"id": resp.get("id", -1), "ok": False,
               "error": {"class": "internal", "message": f"the answer cannot be written as JSON: {_unwritable(exc)}"}}
        return (json.dumps(bad) + "\n").encode("utf-8")


def _unwritable(exc: Exception) -> str:
    """Why an answer cannot be written, without the character's position (it moves with the
    length of the case's paths, so the same answer would read differently run to run)."""
    if isinstance(exc, UnicodeEncodeError):
        return f"{exc.encoding!r} codec can't encode {exc.object[exc.start:exc.end]!r}: {exc.reason}"
    return str(exc)


def respond_in_child(adapter: Adapter, line: bytes) -> dict[str, Any]:
    """``respond`` in a forked child; a child that dies gives an ``internal`` error response."""
    from mlf_spec.isolation import forked_call
    from mlf_spec.peers.forked import signal_name

    reply = forked_call(lambda request: respond(adapter, request), line, None)
    if reply[0] == "ok":
        return reply[1]
    rid = _request_id(line)
    if reply[0] == "crash" and reply[1] is not None:
        sig = signal_name(reply[1])
        return {"id": rid, "ok": False, "error": {"class": "internal", "signal": sig,
                                                  "message": f"the implementation was killed by {sig}"}}
    what = f"exit status {reply[2]}" if reply[0] == "crash" else f"{reply[1]}: {reply[2]}"
    return {"id": rid, "ok": False, "error": {"class": "internal", "message": f"the child answered nothing ({what})"}}


def _request_id(line: bytes) -> int:
    try:
        rid = json.loads(line).get("id")
    except (ValueError, AttributeError, RecursionError):
        return -1
    return rid if isinstance(rid, int) else -1


def respond(adapter: Adapter, line: bytes | str) -> dict[str, Any]:
    """The response to one request line."""
    rid = -1
    try:
        req = json.loads(line)
        rid = req["id"] if isinstance(req.get("id"), int) else -1
        op, fmt, options = req["op"], req["format"], dict(req.get("options") or {})
        payload: Any
        if is_folder_format(fmt) and op != "encode":
            payload = folder_argument(req.get(INPUT_DIR))
        else:
            payload = req["reading"] if op == "encode" else base64.b64decode(req["input"], validate=True)
        if is_folder_format(fmt) and op == "encode":
            options[OUTPUT_DIR] = str(folder_argument(req.get(OUTPUT_DIR), OUTPUT_DIR))
    except RecursionError:  # json nests one call per bracket
        return {"id": rid, "ok": False, "error": {"class": "protocol", "message": "bad request: nested too deeply"}}
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        return {"id": rid, "ok": False, "error": {"class": "protocol", "message": f"bad request: {exc!r}"}}
    try:
        result = carry_out(adapter, op, fmt, options, payload)
    except Rejected as exc:
        return {"id": rid, "ok": False,
                "error": {"message": exc.message, **({"class": exc.error_class} if exc.error_class else {})}}
    except Crashed as exc:
        return {"id": rid, "ok": False, "error": {"class": "internal", "message": exc.message,
                                                  **({"signal": exc.signal} if exc.signal else {})}}
    except Exception as exc:
        return {"id": rid, "ok": False, "error": {"class": "internal", "message": f"{type(exc).__name__}: {exc}"}}
    if op == "encode":
        if is_folder_format(fmt):  # written into output_dir
            return {"id": rid, "ok": True}
        return {"id": rid, "ok": True, "output": base64.b64encode(result).decode("ascii")}
    return {"id": rid, "ok": True, "reading": result}


__all__ = ["MAX_INPUT", "MAX_LINE", "PROTOCOL", "ROLES", "carry_out", "folder_argument", "one_shot", "parse_options", "respond", "serve"]
