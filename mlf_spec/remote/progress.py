"""A progress bar on standard error while shards stream (only on a terminal: nothing when
standard error is piped or redirected)."""

from __future__ import annotations

import sys
import threading
import time
from typing import TextIO


class Progress:
    """Bytes done of ``total`` across threads, redrawn at most ten times a second."""

    def __init__(self, total: int, label: str, stream: TextIO | None = None, *, force: bool = False) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = force or (hasattr(self.stream, "isatty") and self.stream.isatty())
        self.total, self.label = max(total, 1), label
        self.done = self.files = 0
        self.start = self._last = time.monotonic()
        self._lock = threading.Lock()

    def add(self, nbytes: int, *, file_done: bool = False) -> None:
        """Count ``nbytes`` more (and a finished file)."""
        with self._lock:
            self.done += nbytes
            self.files += int(file_done)
            now = time.monotonic()
            if self.enabled and (now - self._last >= 0.1 or file_done):
                self._last = now
                self._draw(now)

    def _draw(self, now: float) -> None:
        frac = min(1.0, self.done / self.total)
        bar = "#" * int(frac * 30)
        rate = self.done / max(now - self.start, 1e-6) / 1e6
        self.stream.write(f"\r{self.label} [{bar:<30}] {frac * 100:5.1f}% {self.done / 1e6:,.1f}/"
                          f"{self.total / 1e6:,.1f} MB {rate:,.1f} MB/s")
        self.stream.flush()

    def close(self) -> None:
        """End the bar's line."""
        if self.enabled:
            with self._lock:
                self._draw(time.monotonic())
                self.stream.write("\n")
                self.stream.flush()
