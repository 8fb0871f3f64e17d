"""Coverage-guided fuzzing of mlf-spec's readers, and a harness to reuse for your own.

* :mod:`.invariants`: the promises a reader keeps, as checks (only MlfError escapes,
  exact round trips, a memory budget, no writes outside a temporary directory, no leaks).
* :mod:`.mutators` and ``mutate_*``: structure-aware mutators that parse an input with the
  format's grammar, change one field and write it back (binary formats through the spec
  engine, JSON documents, tarballs, C sources, ELF files), plus the libFuzzer glue.
* :mod:`.targets`: one target per reader and checker, in a registry.
* :mod:`.seeds`: deterministic seed corpora from the hypothesis strategies (and the
  conformance vectors when ``vectors/`` exists).
* :mod:`.engine`: run a target under atheris, or replay files without it.

Command line: ``python -m mlf_spec.fuzzing {list,seeds,replay,fuzz}``; the OSS-Fuzz entry
points are ``fuzz/<target>_fuzzer.py``. See docs/fuzzing.md.
"""

from .invariants import InvariantBreak, MemoryBudget, Sandbox, agree, attempt, guarded, rejects, same_bytes
from .mutators import Mutator, custom_mutator

__all__ = ["InvariantBreak", "MemoryBudget", "Mutator", "Sandbox", "agree", "attempt", "custom_mutator", "guarded",
           "rejects", "same_bytes"]
