"""Two builds of the Kaitai Python parsers in one process (e.g. a plain and a debug-mode
compile): each PythonParsers imports its own directory's modules, whichever was imported first
under the same module name."""

from __future__ import annotations

import sys

from mlf_spec.kaitai.reading import PythonParsers


def _build(root, label: str):
    d = root / label
    d.mkdir()
    (d / "mlf_spec_fake_ksy.py").write_text(f"BUILD = {label!r}\n")
    (d / "mlf_spec_fake_ksy_common.py").write_text(f"BUILD = {label!r}\n")
    return d


def test_each_directory_gets_its_own_modules(tmp_path):
    plain, debug = _build(tmp_path, "plain"), _build(tmp_path, "debug")
    try:
        assert PythonParsers(plain)._import("mlf_spec_fake_ksy").BUILD == "plain"
        assert PythonParsers(debug)._import("mlf_spec_fake_ksy").BUILD == "debug"
        assert PythonParsers(debug)._import("mlf_spec_fake_ksy_common").BUILD == "debug"
        assert PythonParsers(plain)._import("mlf_spec_fake_ksy").BUILD == "plain"
    finally:
        for name in ("mlf_spec_fake_ksy", "mlf_spec_fake_ksy_common"):
            sys.modules.pop(name, None)
