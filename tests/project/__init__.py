"""The house itself: ruff, mypy, no import cycles, module homes."""
