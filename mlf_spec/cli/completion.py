"""``mlf-spec completion bash|zsh``: a shell completion script for the command line.

The script is made from the parser itself (every command, action and option of this
version), so it never falls out of date with the commands; paths complete as files.
Install it once per shell::

    eval "$(mlf-spec completion bash)"      # in ~/.bashrc
    eval "$(mlf-spec completion zsh)"       # in ~/.zshrc (through zsh's bashcompinit)
"""

from __future__ import annotations

import argparse
import shlex
import sys
from typing import Any

from . import add_command


def register(sub: Any) -> None:
    """Add the ``completion`` command to the CLI."""
    p = add_command(sub, "completion", description=(
        "Print a completion script for SHELL: commands, actions and options complete by Tab, paths as files. "
        'Install: eval "$(mlf-spec completion bash)" in ~/.bashrc, or eval "$(mlf-spec completion zsh)" in ~/.zshrc.'))
    p.add_argument("shell", choices=("bash", "zsh"), metavar="SHELL", help="bash or zsh")
    p.set_defaults(handler=_completion)


def tree() -> dict[str, tuple[list[str], list[str]]]:
    """Each command path (``_`` for the top level, ``_ params dump`` below it) with its
    sub-commands and its options, from a parser holding every command."""
    import importlib

    from . import COMMAND_MODULES, DESCRIPTION

    parser = argparse.ArgumentParser(prog="mlf-spec", description=DESCRIPTION)
    parser.add_argument("--version", action="version")
    sub = parser.add_subparsers(dest="command")
    for module in COMMAND_MODULES:
        importlib.import_module(f"mlf_spec.cli.{module}").register(sub)
    out: dict[str, tuple[list[str], list[str]]] = {}

    def walk(p: argparse.ArgumentParser, path: str) -> None:
        subs: list[str] = []
        opts: list[str] = []
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    subs.append(name)
                    walk(child, f"{path} {name}")
            else:
                opts += [o for o in action.option_strings if o.startswith("--") or len(action.option_strings) == 1]
        out[path] = (sorted(subs), sorted(set(opts)))

    walk(parser, "_")
    return out


def script(shell: str) -> str:
    """The completion script for ``shell`` (bash, or zsh through its bashcompinit)."""
    subs = " ".join(f"[{shlex.quote(k)}]={shlex.quote(' '.join(v[0]))}" for k, v in tree().items())
    opts = " ".join(f"[{shlex.quote(k)}]={shlex.quote(' '.join(v[1]))}" for k, v in tree().items())
    body = f"""# mlf-spec completion ({shell}); made by `mlf-spec completion {shell}` from this version's commands
declare -gA _mlf_spec_subs=({subs})
declare -gA _mlf_spec_opts=({opts})
_mlf_spec() {{
  local cur="${{COMP_WORDS[COMP_CWORD]}}" path="_" w i
  for ((i = 1; i < COMP_CWORD; i++)); do
    w="${{COMP_WORDS[i]}}"
    case " ${{_mlf_spec_subs[$path]}} " in *" $w "*) path="$path $w" ;; esac
  done
  local words="${{_mlf_spec_subs[$path]}} ${{_mlf_spec_opts[$path]}}"
  [[ $cur == -* ]] && words="${{_mlf_spec_opts[$path]}}"
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
  if [[ ${{#COMPREPLY[@]}} -eq 0 && $cur != -* ]]; then COMPREPLY=($(compgen -f -- "$cur")); fi
}}
complete -o default -F _mlf_spec mlf-spec
"""
    if shell == "zsh":
        body = "autoload -U +X bashcompinit && bashcompinit\n" + body
    return body


def _completion(args: argparse.Namespace) -> int:
    sys.stdout.write(script(args.shell))
    return 0
