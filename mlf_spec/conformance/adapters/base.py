"""The adapter API: an implementation under test as a Python object.

    class MyAdapter(Adapter):
        name = "my-reader"
        def info(self): return {"protocol": "mlf-conformance/1", "name": "my-reader", "version": "1.0",
                                "formats": [{"format": "params", "roles": ["decode"]}]}
        def decode(self, format, data, options): ...   # -> canonical reading; raise Rejected to refuse

``isolated = True`` runs the adapter in a child process (``python -m
mlf_spec.conformance.adapters NAME ...``, which speaks the testee protocol), so that a crash,
an abort or a hang of the implementation is an outcome of one case, not of the run. A file
``<module>.known-failures`` next to the adapter's module lists the cases it is known to fail,
each with its reason (see :mod:`mlf_spec.conformance.known_failures`); ``<name>.known-failures``
when one module holds several adapters.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


class Rejected(Exception):
    """The implementation refused the input: ``message``, and the error class if it can tell
    (generated/docs/conformance_errors.md)."""

    def __init__(self, message: str, error_class: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.error_class = error_class


class Crashed(Exception):
    """The implementation died on the input in a process of the adapter's own (a peer
    runtime's child): ``signal`` is its name (``SIGABRT``), or None for an exit without an
    answer. The runner records it as a crash of that case, as if the adapter had died."""

    def __init__(self, message: str, signal: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.signal = signal


class Adapter:
    """Base class of adapters; override what the implementation supports."""

    #: the name used with --adapter
    name: str = ""
    #: run in a child process (for implementations that can crash or hang)
    isolated: bool = False

    def command(self) -> list[str] | None:
        """For an implementation in another language: the command that speaks the testee
        protocol (docs/conformance/protocol.md), which the runner then drives instead of this
        object (its ``info``/``decode`` are not called). None: a Python implementation."""
        return None

    def setup(self, progress: bool = True) -> None:
        """Make the implementation available before a run: an adapter whose implementation
        lives in a venv of its own installs it there on first use (a progress line on
        standard error when ``progress``); raise MlfError with one line if it cannot."""

    def needs(self, module: str, extra: str, package: str) -> None:
        """Raise MlfError (one line, with the install command) when ``module`` cannot be
        imported: for :meth:`setup` of an adapter whose implementation is an optional extra."""
        import importlib.util

        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            from mlf_spec._extras import missing
            from mlf_spec.errors import MlfError

            raise MlfError(missing(f"the {self.name} adapter", extra, package))

    def prepare(self) -> None:
        """Load the implementation (called once before serving, so that forked children
        share it instead of each loading it)."""

    def info(self) -> dict[str, Any]:
        """The handshake (generated/schemas/conformance_protocol.schema.json, testee_info)."""
        raise NotImplementedError

    def decode(self, format: str, data: bytes, options: dict[str, str]) -> Any:  # noqa: A002
        """The canonical reading of ``data``; raise Rejected to refuse it. For a folder-shaped
        format (tensor-cache), ``data`` is the path of the folder (a private copy)."""
        raise Rejected(f"{self.name} does not decode {format}")

    def encode(self, format: str, reading: Any, options: dict[str, str]) -> bytes:  # noqa: A002
        """The bytes of a canonical reading; raise Rejected to refuse it. For a folder-shaped
        format, write the files into the empty folder ``options["output_dir"]`` instead (the
        return value is not used)."""
        raise Rejected(f"{self.name} does not encode {format}")

    def migrate(self, format: str, data: bytes, options: dict[str, str]) -> Any:  # noqa: A002
        """The canonical migration of ``data`` to ``options['to']``; raise Rejected to refuse."""
        raise Rejected(f"{self.name} does not migrate {format}")

    def close(self) -> None:
        """Release what the adapter keeps running (called when the run ends)."""

    def known_failures_path(self) -> Path | None:
        """The known-failures file next to the adapter's module: ``<name>.known-failures``, else
        ``<module>.known-failures`` (None if there is neither)."""
        import sys

        module = sys.modules.get(type(self).__module__)
        source = getattr(module, "__file__", None)
        if source is None:
            return None
        for path in (Path(source).with_name(f"{self.name}.known-failures"), Path(source).with_suffix(".known-failures")):
            if self.name and path.is_file():
                return path
        return None


__all__ = ["Adapter", "Crashed", "Rejected"]
