"""Internals that are not public API: the spec-as-data engine (:mod:`.spec_engine`), the
strategies built on it (:mod:`.spec_strategies`) and what strategies draw (:mod:`.drawn`).
Import them from here; the public facades are :mod:`mlf_spec.strategies` and the format
subpackages. Nothing here keeps a stable interface."""
