"""Options several commands share, validated one way: TVM versions (``--tvm``, ``--from``,
``--era``), dtype dialects (``--dialect``) and ``--fail-on`` (a TVM verdict that fails the run)."""

from __future__ import annotations

import argparse
from typing import Any

#: The verdicts from best to worst (spec/verdicts/*.yaml list them in this order; MLF readers
#: have no ``crashes``).
VERDICT_ORDER = ("loads", "misreads", "rejects", "crashes")


def tvm_version(text: str) -> str:
    """argparse type of every TVM version option: a version the spec describes (spec/eras.yaml),
    else a usage error (exit 2) naming the valid range."""
    from mlf_spec import versions
    from mlf_spec.errors import UnsupportedError

    try:
        versions.known(text)
    except UnsupportedError as exc:
        raise argparse.ArgumentTypeError(exc.message) from None
    return text


def dialect(text: str) -> str:
    """argparse type of --dialect: a dialect id (v0.13) or a TVM version the spec describes,
    else a usage error listing the valid ones."""
    from mlf_spec.errors import UnsupportedError
    from mlf_spec.params import dtypes as _dt

    try:
        _dt.dialect(text)
    except UnsupportedError as exc:
        raise argparse.ArgumentTypeError(exc.message) from None
    return text


def add_fail_on(parser: argparse.ArgumentParser) -> None:
    """--fail-on VERDICT: exit 1 when a TVM verdict is that bad or worse."""
    parser.add_argument("--fail-on", choices=VERDICT_ORDER[1:], metavar="{misreads,rejects,crashes}",
                        help="with --tvm: exit 1 when a verdict is this bad or worse (crashes > rejects > misreads "
                        "> loads)")


def verdict_fails(args: argparse.Namespace, verdict: Any) -> bool:
    """True when ``--fail-on`` is given and the verdict (a string, or None) is that bad or worse."""
    wanted = getattr(args, "fail_on", None)
    if wanted is None or verdict is None:
        return False
    return VERDICT_ORDER.index(verdict) >= VERDICT_ORDER.index(wanted)
