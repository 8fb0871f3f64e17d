"""The converters and derivers that migration specs name (spec/migrations/*.yaml).

A migration spec says *which* conversion or derivation applies *where* (``convert`` with
``converter: target_list_to_dict``, ``derive`` with a derivation whose ``deriver`` is
``main_inputs_from_graph``); the code that needs more than a key rename lives here, keyed
by those names. Nothing here knows which keys changed between versions.

A converter takes the value found at the operation's path and a :class:`Context` and
returns the new value and a list of :class:`Note` (a loss it incurred, by the name the
operation declares, or a value it derived). A deriver takes the context and the object
that will hold the derived key, and returns the value or None when it cannot be derived.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mlf_spec._internal.lean_dataclass import dataclass, field
from mlf_spec.graph import codec as _graph

from . import memory as _memory


@dataclass
class ModuleFiles:
    """What an archive holds for one module, for derivers: its parsed graph JSON (None for
    AOT, operator or bare documents), the names in its .params file (None when there is
    none) and the device types of the operator TIR files (``src/tir-<n>.txt``)."""

    graph: _graph.GraphDocument | None = None
    params: list[str] | None = None
    tir_device_types: list[int] = field(default_factory=list)


@dataclass
class Context:
    """Where a converter or deriver works: the module (name), the record instance holding
    the value (a plain dict in its current state), the module's files (None for a bare
    document), the rows of the table the operation names, and whether the target document
    is dumped with ``sort_keys`` (object keys then come back sorted)."""

    module: str | None
    record: dict[str, Any]
    files: ModuleFiles | None = None
    table: list[dict[str, Any]] | None = None
    sort_keys: bool = False


@dataclass(frozen=True)
class Note:
    """What a converter reports: ``kind`` is ``dropped`` or ``invented`` (a loss, ``name``
    as the operation declares it) or ``derived`` (``name`` of a derivation, with ``value``)."""

    kind: str
    name: str
    detail: str
    value: Any = None


Converter = Callable[[Any, Context], tuple[Any, list[Note]]]
Deriver = Callable[[Context, dict[str, Any]], Any]

CONVERTERS: dict[str, Converter] = {}
DERIVERS: dict[str, Deriver] = {}


def converter(name: str) -> Callable[[Converter], Converter]:
    """Register a converter under the name migration specs use."""

    def register(fn: Converter) -> Converter:
        CONVERTERS[name] = fn
        return fn

    return register


def deriver(name: str) -> Callable[[Deriver], Deriver]:
    """Register a deriver under the name migration specs use."""

    def register(fn: Deriver) -> Deriver:
        DERIVERS[name] = fn
        return fn

    return register


# ----------------------------------------------------------------- target


@converter("target_dict_to_list")
def target_dict_to_list(value: dict[str, str], ctx: Context) -> tuple[list[str], list[Note]]:
    """``{device_type: target}`` -> ``[target, ...]`` in the object's order (full-model
    documents were sorted by device type, operator documents kept insertion order)."""
    return list(value.values()), []


def _device_hints(ctx: Context) -> list[int]:
    """Device types the archive states elsewhere: main's devices (full-model) or the
    operator TIR files."""
    memory = ctx.record.get("memory")
    # an operator document's memory maps PrimFunc names to buffers: one may be "functions"
    functions = memory.get("functions") if isinstance(memory, dict) else None
    main = functions.get("main") if isinstance(functions, dict) else None
    if isinstance(main, list) and main and all(isinstance(e, dict) and "device" in e for e in main):
        return sorted({e["device"] for e in main})
    if ctx.files is not None and ctx.files.tir_device_types:
        return sorted(set(ctx.files.tir_device_types))
    return []


@converter("target_list_to_dict")
def target_list_to_dict(value: list[str], ctx: Context) -> tuple[dict[str, str], list[Note]]:
    """``[target, ...]`` -> ``{device_type: target}``. A device type is the first word of
    the target string looked up in the operation's table (TVM's ``Device.STR2MASK``, the
    rule of the writers that keyed ``target``); a single target with an unknown word takes
    the single device the archive states elsewhere (main's device, the TIR file). A target
    without one, or whose device type an earlier target took, gets the lowest free device
    type (loss ``target_device_type``); a full-model document sorts the keys, so a list in
    another order comes back sorted (loss ``target_order``)."""
    table = {row["word"]: row["device_type"] for row in ctx.table or []}
    derived: list[int | None] = []
    how: list[str] = []
    for t in value:
        words = t.split()
        dt = table.get(words[0]) if words else None
        derived.append(dt)
        how.append(f"the target kind {words[0]!r}" if dt is not None else "")
    hints = _device_hints(ctx)
    if len(value) == 1 and derived[0] is None and len(hints) == 1:
        derived[0] = hints[0]
        how[0] = "the archive's only device"
    notes: list[Note] = []
    taken: dict[int, str] = {}
    keys: list[int] = []
    wanted = {d for d in derived if d is not None}
    for t, dt in zip(value, derived):
        if dt is not None and dt not in taken:
            taken[dt] = t
            keys.append(dt)
            continue
        k = 1
        while k in taken or k in wanted:
            k += 1
        taken[k] = t
        keys.append(k)
        reason = (f"device type {dt} is taken by {taken[dt]!r}" if dt is not None
                  else f"no device type for {t.split()[0] if t.split() else t!r}")
        notes.append(Note("invented", "target_device_type", f"{t!r}: {reason}; written under {k}"))
    out = {str(k): t for k, t in zip(keys, value)}
    if ctx.sort_keys:
        out = dict(sorted(out.items(), key=lambda kv: int(kv[0])))
        if list(out.values()) != list(value):
            notes.append(Note("dropped", "target_order", f"the targets {value} come back ordered by device type "
                                                         f"as {list(out.values())}"))
    known = {str(k): t for k, t, d in zip(keys, value, derived) if d is not None and taken.get(d) == t}
    if known:
        notes.append(Note("derived", "", "device types from " + ", ".join(sorted(set(w for w in how if w))),
                          known))
    return out, notes


# ----------------------------------------------------------------- main inputs and outputs


def _graph_io(ctx: Context) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """main's inputs and outputs as the 5a58c581f5 writer listed them, rebuilt from the
    graph JSON: graph input nodes that are not parameters, and the heads under the default
    names; None unless the module has a graph, main has one entry and its io_size_bytes is
    what TVM's formula gives for that graph (mlf_check.md, memory.io-formula: parameters
    plus k times the k outputs), so the graph shows all of main."""
    files = ctx.files
    if files is None or files.graph is None:
        return None
    memory = ctx.record.get("memory")
    # an operator document's memory maps PrimFunc names to buffers: one may be "functions"
    functions = memory.get("functions") if isinstance(memory, dict) else None
    main = functions.get("main") if isinstance(functions, dict) else None
    if not isinstance(main, list) or len(main) != 1 or not isinstance(main[0], dict):
        return None
    g = files.graph
    params = set(files.params or [])
    inputs: dict[str, Any] = {}
    outputs: dict[str, Any] = {}
    try:
        for name in g.model_input_names(params):
            eid = g.input_entry(name)
            if eid is None:  # (never: a model input is an input node)
                return None
            size = _graph.nbytes(g.entry_shape(eid), g.entry_dtype(eid))
            if size is None or name in inputs:
                return None
            inputs[name] = {"dtype": g.entry_dtype(eid), "size": size}
        heads = g.output_entries()
        for i, eid in enumerate(heads):
            size = _graph.nbytes(g.entry_shape(eid), g.entry_dtype(eid))
            if size is None:
                return None
            outputs["output" if len(heads) == 1 else f"output{i}"] = {"dtype": g.entry_dtype(eid), "size": size}
    except (IndexError, TypeError, KeyError):
        return None
    io = main[0].get("io_size_bytes")
    try:
        eids = _memory.graph_parameters(g, inputs=list(inputs))
        values = _memory.graph_io(g, eids, list(outputs)) if eids is not None else set()
    except (IndexError, TypeError, KeyError):
        return None
    if not isinstance(io, int) or _memory.intended(io) not in {v % _memory.WRAP for v in values}:
        return None
    return inputs, outputs


@deriver("main_inputs_from_graph")
def main_inputs_from_graph(ctx: Context, parent: dict[str, Any]) -> Any:
    """The ``inputs`` of main's (single) memory entry, from the graph JSON."""
    io = _graph_io(ctx)
    return io[0] if io is not None else None


@deriver("main_outputs_from_graph")
def main_outputs_from_graph(ctx: Context, parent: dict[str, Any]) -> Any:
    """The ``outputs`` of main's (single) memory entry, from the graph heads."""
    io = _graph_io(ctx)
    return io[1] if io is not None else None


__all__ = ["CONVERTERS", "DERIVERS", "Context", "ModuleFiles", "Note", "converter", "deriver"]
