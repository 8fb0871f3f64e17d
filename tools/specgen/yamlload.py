"""YAML loading that remembers where every mapping key and value came from.

A spec mistake has to be reported as ``file:line: field.path: message``; PyYAML's
composed nodes carry the marks, so the loader keeps a map from data path to line.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml


class SpecError(Exception):
    """A mistake in a spec file, with file, line and field path."""

    def __init__(self, file: str, line: int | None, path: str, message: str) -> None:
        self.file, self.line, self.path, self.message = file, line, path, message
        loc = f"{file}:{line}" if line else file
        super().__init__(f"{loc}: {path}: {message}" if path else f"{loc}: {message}")


Loc = tuple[Any, ...]


class _Loader(yaml.SafeLoader):
    pass


def _no_duplicates(loader: _Loader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _no_duplicates)

# YAML 1.2 booleans: only true/false. YAML 1.1's yes/no/on/off would turn the `on:` key of
# a switch into True.
_Loader.yaml_implicit_resolvers = {
    first: [(tag, regex) for tag, regex in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)


def _walk(node: yaml.Node, loc: Loc, lines: dict[Loc, int]) -> None:
    lines[loc] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            key = k.value
            lines[loc + (key,)] = k.start_mark.line + 1
            _walk(v, loc + (key,), lines)
    elif isinstance(node, yaml.SequenceNode):
        for i, v in enumerate(node.value):
            _walk(v, loc + (i,), lines)


class SpecDocument:
    """One parsed spec file: its data and the line of every path in it."""

    def __init__(self, path: Path, root: Path) -> None:
        self.path = path
        self.rel = path.relative_to(root.parent).as_posix()
        text = path.read_text(encoding="utf-8")
        self.text = text
        try:
            node = yaml.compose(text, Loader=_Loader)
            self.data = yaml.load(text, Loader=_Loader)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
            line = mark.line + 1 if mark else None
            raise SpecError(self.rel, line, "", f"not valid YAML: {exc}") from None
        self.lines: dict[Loc, int] = {}
        if node is not None:
            _walk(node, (), self.lines)

    def line_of(self, loc: Loc) -> int | None:
        """The line of ``loc`` or of its nearest ancestor that has one."""
        loc = tuple(loc)
        while loc:
            if loc in self.lines:
                return self.lines[loc]
            loc = loc[:-1]
        return self.lines.get(())

    def error(self, loc: Loc, message: str) -> SpecError:
        """A SpecError located at ``loc`` in this file."""
        return SpecError(self.rel, self.line_of(loc), format_loc(loc), message)


def format_loc(loc: Loc) -> str:
    """Render a data path as ``structs[1].fields[4].type``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out
