"""Known failures: the cases an implementation is known to fail, each with its reason.

One entry per line; blank lines and ``#`` comments are ignored::

    params.valid.zero-size-3x0      TVM reads a [k>0, ..., 0] tensor as "Invalid DLTensor file format"
    params.valid.subbyte-*          flaky: 0.27 writes past a packed allocation (may or may not abort)

The first word is a case id, or a pattern with ``*`` and ``?``; the rest of the line is the
reason, which is required. A case listed and failing is an expected failure (``xfail``); a
case listed and passing is reported (``xpass``) so that the list stays honest, unless the
reason starts with ``flaky:`` (the case may pass or fail).
"""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass
from pathlib import Path

from mlf_spec._io import read_limited
from mlf_spec.errors import MlfError

_PATTERN = re.compile(r"^[a-z0-9*?][a-z0-9._*?\[\]-]*$")


@dataclass(frozen=True)
class Entry:
    """One line: the pattern, the reason, whether the case may pass, and where it was."""

    pattern: str
    reason: str
    flaky: bool
    line: int
    source: str = ""


def _cut(text: str, limit: int = 120) -> str:
    """``text`` cut to ``limit`` characters for an error line (a line of a hostile file may be megabytes)."""
    return text if len(text) <= limit else text[:limit] + "..."


class KnownFailures:
    """The entries of one or more known-failure files."""

    def __init__(self, entries: list[Entry] | None = None, source: str = "") -> None:
        self.entries = entries or []
        self.source = source

    @classmethod
    def load(cls, path: str | os.PathLike) -> KnownFailures:
        """Read a known-failures file; MlfError (file, line) for a malformed one."""
        p = Path(path)
        try:
            text = read_limited(p).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MlfError("not UTF-8 text", file=str(p), offset=exc.start) from None
        return cls.parse(text, str(p))

    @classmethod
    def parse(cls, text: str, source: str = "<known failures>") -> KnownFailures:
        """Entries from text."""
        entries = []
        for n, raw in enumerate(text.splitlines(), 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split(None, 1)
            if len(parts) < 2 or not parts[1].strip():
                raise MlfError(f"{_cut(parts[0])!r} has no reason (write the reason after the case id)",
                               file=source, field=f"line {n}")
            pattern, reason = parts[0], parts[1].strip()
            if not _PATTERN.match(pattern):
                raise MlfError(f"{_cut(pattern)!r} is not a case id or pattern", file=source,
                               field=f"line {n}")
            flaky = reason.lower().startswith("flaky:")
            entries.append(Entry(pattern, reason, flaky, n, source))
        return cls(entries, source)

    def merged(self, other: KnownFailures) -> KnownFailures:
        """Both lists (this one's entries first)."""
        return KnownFailures(self.entries + other.entries, ", ".join(s for s in (self.source, other.source) if s))

    def match(self, case_id: str) -> Entry | None:
        """The first entry whose pattern matches ``case_id``."""
        for e in self.entries:
            if e.pattern == case_id or fnmatch.fnmatchcase(case_id, e.pattern):
                return e
        return None

    def unused(self, ids: set[str]) -> list[Entry]:
        """Entries that match none of ``ids`` (a list that names cases no longer in the suite)."""
        return [e for e in self.entries if not any(e.pattern == i or fnmatch.fnmatchcase(i, e.pattern) for i in ids)]

    def __len__(self) -> int:
        return len(self.entries)


__all__ = ["Entry", "KnownFailures"]
