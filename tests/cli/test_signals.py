"""Issue 32 item 10: SIGTERM or SIGINT at any moment of a command, during its imports and
argument parsing too, gives one line and exit status 128 + the signal, never a traceback."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DELAYS = [0.05, 0.08, 0.12, 0.16, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_at_any_moment_is_one_line_and_128_plus_the_signal(tmp_path, sig):
    caught = 0
    for delay in DELAYS:
        proc = subprocess.Popen([sys.executable, "-m", "mlf_spec", "check", str(ROOT / "vectors")],
                                cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(delay)
        proc.send_signal(sig)
        err = proc.communicate(timeout=60)[1].decode("utf-8", "replace")
        if "Traceback" in err and "/mlf_spec/" not in err:  # the interpreter's own start (site, runpy): no mlf-spec frame
            continue
        assert "Traceback" not in err, (delay, err[-3000:])
        # -sig: killed before the interpreter ran any of mlf-spec (no Python handler yet)
        assert proc.returncode in (128 + sig, -sig), (delay, proc.returncode, err[-2000:])
        if proc.returncode == 128 + sig:
            caught += 1
            word = "interrupted" if sig == signal.SIGINT else f"stopped by {signal.Signals(sig).name}"
            assert err.strip().splitlines()[-1] == f"mlf-spec: {word}", (delay, err[-2000:])
            assert len(err.strip().splitlines()) == 1, (delay, err[-2000:])
    assert caught >= 4, caught  # on a loaded machine the interpreter's start-up takes the first delays


def test_in_process_main_restores_the_handlers(monkeypatch, capsys):
    from mlf_spec.cli import main

    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    assert main(["--version"]) == 0
    assert {s: signal.getsignal(s) for s in before} == before


@pytest.mark.parametrize("swallow", ["caught", "became-an-error"])
def test_a_signal_a_library_swallows_still_stops_the_batch(monkeypatch, capsys, tmp_path, swallow):
    """A signal raised inside one input's work and swallowed there (caught, or turned into
    another error on its way up, as an import can) ends the run at that input, with 130."""
    import os

    from mlf_spec.cli import check, main
    from mlf_spec.errors import MlfError

    for name in ("a.params", "b.params", "c.params"):
        (tmp_path / name).write_bytes(b"not a params file")
    seen: list[str] = []
    real = check._check_one

    def work(inp, args):
        seen.append(inp.name)
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1)  # the handler runs here
        except KeyboardInterrupt:
            if swallow == "became-an-error":
                raise MlfError("a library's own error") from None
        return real(inp, args)

    monkeypatch.setattr(check, "_check_one", work)
    assert main(["check", str(tmp_path)]) == 130
    assert len(seen) == 1, seen
    assert capsys.readouterr().err.strip().splitlines() == ["mlf-spec: interrupted"]
