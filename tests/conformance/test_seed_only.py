"""A seed's generated cases do not depend on what the process imported: hypothesis's local
constants (collected from every imported module outside site-packages) are pinned while the
engine draws."""

from __future__ import annotations

import importlib
import sys

from mlf_spec._internal import pinned_draw
from mlf_spec.conformance.generated_cases import drawn_cases

INFO = {"protocol": "mlf-conformance/1", "name": "x", "version": "1", "serve": True,
        "formats": [{"format": "params", "roles": ["decode"], "scope": {"dialect": ["v0.26"]}},
                    {"format": "blob", "roles": ["decode"], "scope": {"era": ["0.20"]}}]}


def _import_constants(tmp_path, name: str, start: int) -> None:
    """Import a new local module full of integer, byte and string constants."""
    # fewer than the 1024 hypothesis reads from a module; small ones, which the strategies' ranges allow
    ints = ", ".join(str(i) for i in range(start, start + 500))
    strs = ", ".join(repr(chr(97 + i % 26) + str(start + i)) for i in range(200))
    byts = ", ".join(repr(bytes([i % 256, (start + i) % 256])) for i in range(200))
    (tmp_path / f"{name}.py").write_text(f"INTS = [{ints}]\nSTRS = [{strs}]\nBYTES = [{byts}]\n")
    sys.path.insert(0, str(tmp_path))
    try:
        importlib.import_module(name)
    finally:
        sys.path.remove(str(tmp_path))


def _inputs(tmp_path, n: int = 40) -> list[tuple[str, str]]:
    return [(c.id, c.input_sha256) for c in drawn_cases(INFO, n, seed_value=5, where=tmp_path)]


def test_importing_a_module_does_not_change_a_seeds_cases(tmp_path):
    before = _inputs(tmp_path)
    _import_constants(tmp_path, "mlf_spec_test_constants_a", 101)
    assert _inputs(tmp_path) == before


def test_without_the_pin_the_same_import_feeds_the_draws(tmp_path):
    """The control: unpinned, hypothesis does take the new module's constants into the pool it
    draws from (whether a given draw then uses one depends on the pool the worker had already,
    so the pool itself is what is asserted); pinned, the pool is empty."""
    from hypothesis.internal.conjecture import providers

    _import_constants(tmp_path, "mlf_spec_test_constants_b", 103)
    assert set(range(103, 603)) <= set(providers._get_local_constants().integers)
    with pinned_draw.seed_only():
        assert not providers._get_local_constants().integers


def test_the_pool_is_restored_after_the_block():
    from hypothesis.internal.conjecture import providers

    getter = providers._get_local_constants
    with pinned_draw.seed_only() as pinned:
        assert pinned
        assert not providers._get_local_constants().integers
    assert providers._get_local_constants is getter
