"""What the command line imports at start-up, and that the light command table agrees
with what the command modules register (times are measured in benchmarks/startup.py)."""

from __future__ import annotations

import argparse
import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

from mlf_spec import cli
from tests.support.imports import modules_after

#: what every run imports from the CLI package: its signal handling (no command module)
CORE = {"mlf_spec.cli._signals"}


def test_version_needs_no_parser_and_no_command_module():
    mods = modules_after(["--version"])
    assert "argparse" not in mods and "typing" not in mods
    assert not [m for m in mods if m.startswith("mlf_spec.cli.") and m not in CORE]


def test_help_lists_every_command_without_importing_them():
    mods = modules_after(["--help"])
    assert not [m for m in mods if m.startswith("mlf_spec.cli.") and m not in CORE]
    assert "numpy" not in mods and "pydantic" not in mods
    assert "argparse" not in mods
    r = subprocess.run([sys.executable, "-m", "mlf_spec", "--help"], capture_output=True, text=True)
    listed = [m.group(1) for line in r.stdout.splitlines() if (m := re.match(r"^  ([a-z]\S+)  ", line))]
    assert r.returncode == 0 and listed == list(cli.COMMANDS)
    # the parser (for errors) knows the same commands
    r = subprocess.run([sys.executable, "-m", "mlf_spec", "nope"], capture_output=True, text=True)
    assert r.returncode == 2 and all(f"'{c}'" in r.stderr for c in cli.COMMANDS), r.stderr


def test_a_command_imports_its_module_only():
    mods = modules_after(["diff", "--help"])
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


#: a command of each module in cli.NUMPY_MODULES, run on a small archive (its exit status does not matter)
_NUMPY_RUNS = {"params": ["params", "dump", "{tar}"], "cache": ["cache", "dump", "{tar}"], "blob": ["blob", "dump", "{tar}"],
               "archive": ["inspect", "{tar}"], "check": ["check", "{tar}"], "diff": ["diff", "{tar}", "{tar}"],
               "extract": ["extract", "{tar}", "-o", "{out}"], "migrate": ["upgrade", "--dry-run", "{tar}"]}


def test_numpy_is_imported_first_only_by_commands_that_import_it_anyway(tmp_path):
    """main() imports numpy before a command of NUMPY_MODULES runs (for the frame stack, see
    cli._import_numpy_first); each of those commands imports it when it runs without that,
    and help does not import it."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
    try:
        from make_example_artifacts import small_archive
    finally:
        sys.path.pop(0)
    tar = tmp_path / "small.tar"
    tar.write_bytes(small_archive())
    assert set(_NUMPY_RUNS) == set(cli.NUMPY_MODULES) and cli.NUMPY_MODULES < set(cli.COMMAND_MODULES)
    for module, argv in _NUMPY_RUNS.items():
        argv = [a.format(tar=tar, out=tmp_path / f"out-{module}") for a in argv]
        assert cli.COMMANDS[argv[0]][0] == module
        code = ("import sys\nfrom mlf_spec import cli\ncli._import_numpy_first = lambda *a: None\n"
                f"try:\n    cli.main({argv!r})\nexcept SystemExit:\n    pass\n"
                "print('NUMPY:', 'numpy' in sys.modules)")
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert r.stdout.splitlines()[-1] == "NUMPY: True", (argv, r.stderr[-500:])
    assert "numpy" not in modules_after(["check", "--help"])
    assert "numpy" in modules_after(["check", str(tar)])


def test_conformance_help_imports_the_formats_registry_and_no_heavy_module():
    """`conformance` builds its parser from the generated formats registry (FORMATS, OPS,
    MAX_INPUT: two small modules of constants) and loads nothing else of the kit."""
    mods = modules_after(["conformance", "run", "--help"])
    assert "numpy" not in mods and "pydantic" not in mods and "hypothesis" not in mods
    assert sorted(m for m in mods if m.startswith("mlf_spec")) == [
        "mlf_spec", "mlf_spec._text", "mlf_spec._version", "mlf_spec.cli", "mlf_spec.cli._signals", "mlf_spec.cli._text",
        "mlf_spec.cli.conformance", "mlf_spec.conformance", "mlf_spec.conformance.adapters",
        "mlf_spec.conformance.adapters.base", "mlf_spec.errors", "mlf_spec.generated", "mlf_spec.generated.formats"]
