"""The licence pyproject names is the one shipped, and the changelog names the current version
(issue 30: no LICENSE, no CHANGELOG)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_license_file_is_the_apache_2_text_pyproject_names() -> None:
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert 'license = {text = "Apache-2.0"}' in (ROOT / "pyproject.toml").read_text()
    assert text.split("\n", 3)[:2] == [" " * 33 + "Apache License", " " * 27 + "Version 2.0, January 2004"]
    for clause in ("1. Definitions.", "2. Grant of Copyright License.", "3. Grant of Patent License.",
                   "9. Accepting Warranty or Additional Liability.", "END OF TERMS AND CONDITIONS"):
        assert clause in text, clause
    assert "TVM" not in text  # the licence alone, not a project's notices


def test_the_changelog_has_a_section_for_the_current_version() -> None:
    version = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M).group(1)
    sections = re.findall(r"^## (\S+)", (ROOT / "CHANGELOG.md").read_text(encoding="utf-8"), re.M)
    assert sections and sections[0] == version
