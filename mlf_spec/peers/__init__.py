"""Peer runtimes that cannot live in mlf-spec's own environment: TVM releases that need
another Python or another NumPy (hhb-tvm 3.2.3, T-Head's TVM 0.16 fork, cp310 wheels with
numpy < 2; apache-tvm 0.25 and 0.26 beside the test extra's 0.27), each installed on first
use into a venv of its own under the user cache (:mod:`.venvs`) and driven through a small
request loop that runs there (:mod:`.worker`, :mod:`.client`).
"""

from __future__ import annotations

from .client import Peer, PeerCrashed, PeerRefused
from .venvs import PEERS, PeerSetupError, ensure, environment, resolve

__all__ = ["PEERS", "Peer", "PeerCrashed", "PeerRefused", "PeerSetupError", "ensure", "environment", "resolve"]
