"""The version of mlf-spec (pyproject.toml's), in a module that imports nothing, so that any module may name it."""

__version__ = "0.1.0"
