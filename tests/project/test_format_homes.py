"""Format homes (issue 21 item 9): GraphExecutor JSON in mlf_spec.graph; spec_engine,
spec_strategies and _drawn under mlf_spec._internal. The old module names keep working, with a
DeprecationWarning, and give the very module of the new home; the package itself uses none."""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings

import pytest

MOVED = {
    "mlf_spec.graph_json": "mlf_spec.graph.codec",
    "mlf_spec.graph_check": "mlf_spec.graph.check",
    "mlf_spec.spec_engine": "mlf_spec._internal.spec_engine",
    "mlf_spec.spec_strategies": "mlf_spec._internal.spec_strategies",
    "mlf_spec._drawn": "mlf_spec._internal.drawn",
}


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_name_warns_and_is_the_new_module(old: str, monkeypatch: pytest.MonkeyPatch) -> None:
    new = importlib.import_module(MOVED[old])
    monkeypatch.delitem(sys.modules, old, raising=False)
    with pytest.warns(DeprecationWarning, match=f"{old} is deprecated: import {MOVED[old]}"):
        module = importlib.import_module(old)
    assert module is new
    assert sys.modules[old] is new


def test_the_names_users_import_from_the_old_modules_still_resolve(monkeypatch: pytest.MonkeyPatch) -> None:
    for old in MOVED:
        monkeypatch.delitem(sys.modules, old, raising=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from mlf_spec._drawn import Broken, Data
        from mlf_spec.graph_check import check
        from mlf_spec.graph_json import dumps, parse
        from mlf_spec.spec_engine import build, trace
        from mlf_spec.spec_strategies import valid_bytes
    from mlf_spec._internal import drawn, spec_engine, spec_strategies
    from mlf_spec.graph import check as graph_check
    from mlf_spec.graph import codec

    assert (Broken, Data) == (drawn.Broken, drawn.Data)
    assert (parse, dumps, check) == (codec.parse, codec.dumps, graph_check.check)
    assert (build, trace, valid_bytes) == (spec_engine.build, spec_engine.trace, spec_strategies.valid_bytes)


def test_the_short_names_do_not_warn_and_the_package_uses_no_old_name() -> None:
    code = """
import importlib, warnings
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as seen:
    import mlf_spec
    assert mlf_spec.graph_json is importlib.import_module("mlf_spec.graph.codec")
    from mlf_spec import graph, strategies
    for name in ("mlf_spec.mlf.check", "mlf_spec.mlf.strategies", "mlf_spec.blob.strategies", "mlf_spec.cli.check",
                 "mlf_spec.conformance.suite", "mlf_spec.fuzzing.targets", "mlf_spec.params.check",
                 "mlf_spec.generated.params_strategies", "mlf_spec.conformance.canonical"):
        importlib.import_module(name)
moved = [str(w.message) for w in seen if "is deprecated: import mlf_spec." in str(w.message)]
assert not moved, moved
print("ok")
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]


def test_the_graph_package_reads_without_pydantic_and_gives_the_model_when_asked() -> None:
    code = """
import sys
import mlf_spec.graph as g
assert g.parse is g.codec.parse and g.__all__ == g.codec.__all__
assert "pydantic" not in sys.modules, "importing mlf_spec.graph loaded pydantic"
assert g.Graph is g.codec.Graph and "pydantic" in sys.modules
print("ok")
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]
