"""The console transcript of docs/howto/check-a-folder-in-ci.md is what the commands print
(every figure in the docs comes from a run): each ``$ command`` runs in a fresh folder and its
output (standard output and error, in order) must be the lines under it."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "howto" / "check-a-folder-in-ci.md"


def _first_console_block(text: str) -> list[tuple[str, list[str]]]:
    block = re.search(r"^```console\n(.*?)^```", text, re.S | re.M)
    assert block is not None
    steps: list[tuple[str, list[str]]] = []
    for line in block.group(1).splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        else:
            steps[-1][1].append(line)
    return steps


def test_the_ci_howto_transcript_is_what_the_commands_print(tmp_path: Path) -> None:
    status = 0
    steps = _first_console_block(PAGE.read_text(encoding="utf-8"))
    assert len(steps) >= 3
    for command, expected in steps:
        if command == "echo $?":
            got = [str(status)]
        else:
            words = shlex.split(command)
            if words[0] == "python":
                words = [sys.executable, str(ROOT / words[1]), *words[2:]]
            elif words[0] == "mlf-spec":
                words = [sys.executable, "-m", "mlf_spec", *words[1:]]
            p = subprocess.run(words, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               timeout=300)
            status = p.returncode
            got = p.stdout.splitlines()
        assert got == expected, (command, got)
