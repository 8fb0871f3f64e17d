"""A real headless browser for the tests: Debian's Chromium, driven by Playwright (the Python
package of the `test` extra; its own browser downloads are not used).

On a fresh machine the first test that asks installs Chromium (tests/support/debian.py): a
browser test is never skipped by default.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from typing import Any

from .debian import ensure

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
    """The path of Chromium, installed with apt-get (with its recommended fonts) if it is not
    there yet (RuntimeError if it cannot be)."""
    return ensure("Chromium", ["chromium"], _found)


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
