"""How to install an optional extra, said one way in every message: mlf-spec is installed
from a clone (it is not on the package index), so the command that works is
``pip install -e '.[EXTRA]'`` run in the clone (quoted: a shell expands bare brackets)."""

from __future__ import annotations


def install_hint(extra: str, package: str | None = None) -> str:
    """``pip install -e '.[extra]'`` in a clone of mlf-spec, or the ``package`` itself (its
    PyPI name) into the same Python."""
    alone = f", or `pip install {package}`" if package else ""
    return f"run `pip install -e '.[{extra}]'` in your clone of mlf-spec{alone}"


def missing(what: str, extra: str, package: str | None = None) -> str:
    """The message for an optional feature whose dependency is not installed."""
    return f"{what} needs the optional extra {extra!r}: {install_hint(extra, package)}"


__all__ = ["install_hint", "missing"]
