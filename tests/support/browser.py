"""A real headless browser for the tests: Debian's Chromium, driven by Playwright (the Python
package of the `test` extra; its own browser downloads are not used).

On a fresh machine the first test that asks installs Chromium with apt-get (as root, or
through password-less sudo), once, under a file lock so that pytest-xdist workers wait for
each other. A machine where that is impossible fails the test with the command to run: a
browser test is never skipped by default.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

#: flags for a quiet, self-contained headless run (no sandbox: CI containers run as root)
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]
CANDIDATES = ("chromium", "chromium-browser")


def _found() -> str | None:
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


def chromium() -> str:
    """The path of Chromium, installed with apt-get if it is not there yet (RuntimeError if it
    cannot be)."""
    path = _found()
    if path:
        return path
    lock = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mlf-spec" / "chromium.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        path = _found()
        if path:
            return path
        prefix = [] if os.geteuid() == 0 else ["sudo", "-n"]
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        install = [*prefix, "apt-get", "install", "-y", "-q", "chromium"]  # with its recommended fonts
        why = "no message"
        try:
            done = subprocess.run(install, capture_output=True, text=True, env=env, timeout=900)
            if done.returncode != 0:  # a stale package list: refresh it once
                subprocess.run([*prefix, "apt-get", "update", "-q"], capture_output=True, env=env, timeout=600)
                done = subprocess.run(install, capture_output=True, text=True, env=env, timeout=900)
            why = (done.stderr.strip().splitlines() or [why])[-1]
        except (OSError, subprocess.TimeoutExpired) as exc:  # no apt-get or sudo, or it hung
            why = str(exc)
        path = _found()
        if not path:
            raise RuntimeError(f"Chromium is not installed and could not be (run `apt-get install -y chromium`): {why}")
        return path


@contextlib.contextmanager
def browser_page() -> Iterator[Any]:
    """A Playwright page in a fresh headless Chromium (a new, empty profile directory)."""
    from playwright.sync_api import sync_playwright

    executable = chromium()
    with tempfile.TemporaryDirectory(prefix="mlf-spec-chromium-") as profile, sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(profile, executable_path=executable, headless=True,
                                                        args=FLAGS, chromium_sandbox=False)
        try:
            yield context.pages[0] if context.pages else context.new_page()
        finally:
            context.close()
