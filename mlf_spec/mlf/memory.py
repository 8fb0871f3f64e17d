"""TVM's memory quantities of an MLF module, recomputed from the archive.

The rules, their commits and whether TVM's code proves them are stated in
spec/findings/mlf_check.yaml (``memory.io-size``, ``memory.io-formula``,
``memory.constants``, ``memory.workspace``); this module only does the arithmetic.

The C++ side (``UpdateMainWorkspaceSize``) sizes a tensor as ``es = prod(shape) *
ceil(bits / 8)`` before f7f2cda675 (``dtype.bytes()``, lanes ignored) and ``prod(shape) *
ceil(bits * lanes / 8)`` after; the Python writer's ``size`` / ``size_bytes`` are
``(prod(shape) * bits + 7) // 8``. Both agree for whole-byte scalar dtypes; for sub-byte and
vector dtypes every function here returns the values of both eras. Sizes are 32-bit ints in
C++: :func:`intended` undoes a wrap-around.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from mlf_spec.graph import codec as _graph

_DTYPE = re.compile(r"^(?P<base>bool|int|uint|float|bfloat|custom\[[^\]]*\])(?P<bits>[0-9]*)(?:x(?P<lanes>[0-9]+))?$")
WRAP = 1 << 32


def bits_lanes(dtype: str) -> tuple[int, int] | None:
    """(bits, lanes) of a TVM dtype string (``float32``, ``int4``, ``float32x4``, ``bool``);
    None for one C++ would size otherwise or not at all."""
    m = _DTYPE.match(dtype)
    if m is None:
        return None
    if m.group("base") == "bool":
        bits = int(m.group("bits") or 1)
    elif not m.group("bits"):
        return None
    else:
        bits = int(m.group("bits"))
    lanes = int(m.group("lanes") or 1)
    if bits <= 0 or lanes <= 0:
        return None
    return bits, lanes


def element_sizes(shape: Iterable[int], dtype: str) -> tuple[int, int] | None:
    """``es`` of a tensor before and from f7f2cda675: (prod * ceil(bits/8), prod *
    ceil(bits*lanes/8)); None for a dtype C++ cannot size or a negative extent."""
    bl = bits_lanes(dtype)
    if bl is None:
        return None
    n = 1
    for s in shape:
        if not isinstance(s, int) or s < 0:
            return None
        n *= s
    bits, lanes = bl
    return n * ((bits + 7) // 8), n * ((bits * lanes + 7) // 8)


def intended(value: int) -> int:
    """The size a C++ ``int`` meant: negative values wrapped around at 2**31."""
    return value % WRAP if value < 0 else value


def _sum(pairs: list[tuple[int, int] | None]) -> tuple[int, int] | None:
    known = [p for p in pairs if p is not None]
    if len(known) < len(pairs):
        return None
    return sum(p[0] for p in known), sum(p[1] for p in known)


def graph_parameters(g: _graph.GraphDocument, *, inputs: Iterable[str] | None = None,
                     constants: Iterable[str] | None = None) -> list[int] | None:
    """Entry ids of main's Relay parameters among the graph's input nodes: the names of
    ``inputs`` (version 7 main inputs) if given, else the input nodes not in ``constants``
    (the .params names). None when neither is known or a name is not an input node."""
    if inputs is not None:
        out = []
        for name in inputs:
            eid = g.input_entry(name)
            if eid is None:
                return None
            out.append(eid)
        return out
    if constants is None:
        return None
    skip = set(constants)
    return [g.entry_id(i) for i in g.model.arg_nodes
            if 0 <= i < len(g.model.nodes) and g.model.nodes[i].name not in skip]


def _es_entries(g: _graph.GraphDocument, eids: list[int]) -> tuple[int, int] | None:
    try:
        return _sum([element_sizes(g.entry_shape(e), g.entry_dtype(e)) for e in eids])
    except (IndexError, TypeError):
        return None


def parameter_sizes(g: _graph.GraphDocument, params: list[int]) -> tuple[int, int] | None:
    """Sum of es over the parameters (both eras)."""
    return _es_entries(g, params)


def graph_io(g: _graph.GraphDocument, params: list[int], output_names: Iterable[str] | None = None) -> set[int]:
    """The values io_size_bytes can have for a graph-executor main by TVM's formula:
    ``sum(es(params)) + B``, ``B = 0`` when main returns a bare parameter or constant (one
    head that is an input node), else ``k * sum(es(heads))`` for k heads. When the single
    head is an input node and the outputs' names do not tell a bare value (``output``) from
    a one-field tuple (``output0``), both values. Empty when a size cannot be computed."""
    p = _es_entries(g, params)
    try:
        heads = g.output_entries()
        o = _es_entries(g, heads)
        head_nodes = [h[0] for h in g.model.heads]
        bare = len(heads) == 1 and g.model.nodes[head_nodes[0]].op == "null"
    except (IndexError, TypeError):
        return set()
    if p is None or o is None:
        return set()
    k = len(heads)
    out: set[int] = set()
    names = list(output_names) if output_names is not None else None
    for era in (0, 1):
        body = k * o[era]
        if bare:
            if names == ["output"]:
                out.add(p[era])
            elif names == ["output0"]:
                out.add(p[era] + body)
            else:
                out |= {p[era], p[era] + body}
        else:
            out.add(p[era] + body)
    return out


def graph_constants(g: _graph.GraphDocument, constants: Iterable[str]) -> set[int]:
    """The values constants_size_bytes can have: sum(es) of the graph input nodes named in
    ``constants`` (the .params names). Empty when a size cannot be computed."""
    names = set(constants)
    eids = [g.entry_id(i) for i in g.model.arg_nodes
            if 0 <= i < len(g.model.nodes) and g.model.nodes[i].name in names]
    s = _es_entries(g, eids)
    return set() if s is None else set(s)


def workspace_short(main_ws: int, op_max: int) -> bool:
    """Whether main's workspace on a device breaks the rule: non-zero yet below the
    largest operator workspace on that device."""
    ws = intended(main_ws)
    return 0 < ws < op_max


__all__ = ["WRAP", "bits_lanes", "element_sizes", "graph_constants", "graph_io", "graph_parameters", "intended",
           "parameter_sizes", "workspace_short"]
