"""What the command line imports at start-up, and that the light command table agrees
with what the command modules register (times are measured in benchmarks/startup.py)."""

from __future__ import annotations

import argparse
import importlib
import re
import subprocess
import sys

import pytest

from mlf_spec import cli


def _imports_after(argv: list[str]) -> set[str]:
    code = ("import sys\nfrom mlf_spec.cli import main\n"
            f"try:\n    main({argv!r})\nexcept SystemExit:\n    pass\n"
            "print('MODULES:' + ','.join(sorted(sys.modules)))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    line = [x for x in r.stdout.splitlines() if x.startswith("MODULES:")][-1]
    return set(line[len("MODULES:"):].split(","))


def test_version_needs_no_parser_and_no_command_module():
    mods = _imports_after(["--version"])
    assert "argparse" not in mods and "typing" not in mods
    assert not [m for m in mods if m.startswith("mlf_spec.cli.")]


def test_help_lists_every_command_without_importing_them():
    mods = _imports_after(["--help"])
    assert not [m for m in mods if m.startswith("mlf_spec.cli.")]
    assert "numpy" not in mods and "pydantic" not in mods
    assert "argparse" not in mods
    r = subprocess.run([sys.executable, "-m", "mlf_spec", "--help"], capture_output=True, text=True)
    listed = [m.group(1) for line in r.stdout.splitlines() if (m := re.match(r"^  ([a-z]\S+)  ", line))]
    assert r.returncode == 0 and listed == list(cli.COMMANDS)
    # the parser (for errors) knows the same commands
    r = subprocess.run([sys.executable, "-m", "mlf_spec", "nope"], capture_output=True, text=True)
    assert r.returncode == 2 and all(f"'{c}'" in r.stderr for c in cli.COMMANDS), r.stderr


def test_a_command_imports_its_module_only():
    mods = _imports_after(["diff", "--help"])
    assert "mlf_spec.cli.diff" in mods and "mlf_spec.cli.params" not in mods and "numpy" not in mods


def test_the_command_table_matches_what_the_modules_register():
    for module in cli.COMMAND_MODULES:
        parser = argparse.ArgumentParser()
        sub = parser.add_subparsers()
        importlib.import_module(f"mlf_spec.cli.{module}").register(sub)
        for name in sub.choices:
            assert cli.COMMANDS[name][0] == module, name
        helps = {a.dest: a.help for a in sub._choices_actions}
        for name, help_text in helps.items():
            assert help_text == cli.COMMANDS[name][1], name
    assert {m for m, _ in cli.COMMANDS.values()} == set(cli.COMMAND_MODULES)


@pytest.mark.parametrize("command", list(cli.COMMANDS))
def test_every_command_has_its_own_help(command, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main([command, "--help"])
    assert exit_.value.code == 0
    assert f"usage: mlf-spec {command}" in capsys.readouterr().out
