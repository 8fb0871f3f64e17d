"""Debian packages the tests need (nginx, Chromium), installed on first use.

The first test that asks installs the package with apt-get (as root, or through password-less
sudo), once, under a file lock so that pytest-xdist workers wait for each other. A machine where
that is impossible fails the test with the command to run: never skipped by default.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path


def ensure(what: str, packages: Sequence[str], found: Callable[[], str | None], *,
           recommends: bool = True, timeout: int = 900) -> str:
    """The path ``found()`` gives, after installing ``packages`` with apt-get if it gave none
    (RuntimeError naming the command to run if the install is impossible)."""
    path = found()
    if path:
        return path
    lock = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mlf-spec" / f"{what.lower()}.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        path = found()
        if path:
            return path
        prefix = [] if os.geteuid() == 0 else ["sudo", "-n"]
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        options = [] if recommends else ["--no-install-recommends"]
        install = [*prefix, "apt-get", "install", "-y", "-q", *options, *packages]
        why = "no message"
        try:
            done = subprocess.run(install, capture_output=True, text=True, env=env, timeout=timeout)
            if done.returncode != 0:  # a stale package list: refresh it once
                subprocess.run([*prefix, "apt-get", "update", "-q"], capture_output=True, env=env, timeout=600)
                done = subprocess.run(install, capture_output=True, text=True, env=env, timeout=timeout)
            why = (done.stderr.strip().splitlines() or [why])[-1]
        except (OSError, subprocess.TimeoutExpired) as exc:  # no apt-get or sudo, or it hung
            why = str(exc)
        path = found()
        if not path:
            raise RuntimeError(f"{what} is not installed and could not be "
                               f"(run `apt-get install -y {' '.join(packages)}`): {why}")
        return path
