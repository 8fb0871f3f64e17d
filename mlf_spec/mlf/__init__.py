"""Model Library Format archives: reading and writing (:mod:`~mlf_spec.mlf.archive`),
metadata of every version (:mod:`~mlf_spec.mlf.metadata`), the layout of each version
(:mod:`~mlf_spec.mlf.layout`), conformance checks (:mod:`~mlf_spec.mlf.check`),
migrations between versions (:mod:`~mlf_spec.mlf.migrate`) and hypothesis strategies
(:mod:`~mlf_spec.mlf.strategies`).

Import the submodules you need; ``from mlf_spec import archive`` works as well.
"""
