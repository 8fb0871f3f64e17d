"""The old private name of :mod:`mlf_spec.compression`, kept for the modules and tests that still
import it: the same module object (so that patching either patches both)."""

from __future__ import annotations

import sys

from mlf_spec import compression
from mlf_spec.compression import *  # noqa: F403  (the names, for type checkers)

sys.modules[__name__] = compression
