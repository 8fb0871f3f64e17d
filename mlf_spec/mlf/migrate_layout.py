"""The layout half of a migration step: archive members moved, dropped, renumbered and added
by layout entry, as the step's file operations declare."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mlf_spec.errors import MigrationError

from . import archive as _archive
from . import layout as _layout
from . import migrate_ir as _mir
from .migrate_ir import Direction, FileOp, StepSpec
from .migrate_metadata import Events, State, describe, loss_at
from .migrate_plans import Operation

# ----------------------------------------------------------------- layout operations


def _entry_path(entry: dict[str, Any], values: dict[str, str], module: str | None, fixed: Mapping[str, str]) -> str:
    filled: dict[str, str] = {}
    for ph in entry["placeholders"]:
        role = _layout.ROLES.get(ph)
        if ph in fixed:
            filled[ph] = fixed[ph]
        elif ph in values:
            filled[ph] = values[ph]
        elif role == "module" and module is not None:
            filled[ph] = module
        elif role == "module_lower" and module is not None:
            filled[ph] = _layout.ascii_lower(module)
        else:
            raise MigrationError(f"no value for {{{ph}}} of layout entry {entry['id']}")
    return _layout.template(entry, **filled)


#: The layout operation kinds :func:`layout_step` carries out: on existing members (by
#: entry), adding a directory, and declared only for the changelog (checked at import).
_MEMBER_OPS = frozenset({"move", "drop", "keep"})
_LAYOUT_OPS = _MEMBER_OPS | {"add", "leave_out"}
if _LAYOUT_OPS != set(_mir.LAYOUT_OPS):
    raise RuntimeError(f"mlf_spec.migrate carries out the layout operations {sorted(_LAYOUT_OPS)}, the spec "
                       f"declares {sorted(_mir.LAYOUT_OPS)}")


def layout_step(state: State, step: StepSpec, d: Direction, source: int, target: int, names: list[str],
                 events: Events, operations: list[Operation], mtime: float) -> None:
    """Carry out the file operations of ``step`` going ``d`` on the archive of ``state``: move,
    drop and keep members by layout entry, renumber the gaps, add directories."""
    a = state.archive
    assert a is not None
    ops = [(it, *it.way(d)) for it in step.files]
    by_entry = {op.entry: (it, op, inv) for it, op, inv in ops if op.op in _MEMBER_OPS}
    counts: dict[str, int] = {it.id: 0 for it in step.files}
    moves: dict[str, str | None] = {}
    dropped: dict[tuple[str, str | None], list[str]] = {}
    for m in list(a.members):
        pl = _layout.classify(m.path, source, state.style, names)
        if pl is None or pl.unknown_module is not None:
            raise MigrationError(f"{m.name} is not a member of a version {source} {state.style} archive",
                                 file=a.file)
        hit = by_entry.get(pl.entry["id"])
        if hit is None:
            continue
        it, op, inv = hit
        if op.op == "keep":
            continue
        if op.op == "drop" or any(pl.values.get(k) != v for k, v in op.only.items()):
            moves[m.path] = None
            counts[it.id] += 1
            if not m.is_dir:
                dropped.setdefault((pl.kind, pl.module), []).extend(op.losses)
                for name in op.losses:
                    events.losses.append(loss_at(step, d, name, "dropped", "files", pl.module, m.name, (),
                                               f"{m.size} bytes dropped"))
            continue
        assert op.to is not None
        new = _entry_path(_layout.ENTRIES[op.to], pl.values, pl.module, op.set)
        if new == m.path:
            continue
        moves[m.path] = new
        counts[it.id] += 1
        back = _inverse_path(inv, op, new, pl.module)
        if back != m.path:
            declared = op.losses
            if len(declared) != 1:
                raise MigrationError(f"{step.name}.{it.id} ({d}) cannot be undone for {m.name} and the spec "
                                     f"declares {'no loss' if not declared else 'several losses'} for it: a spec bug")
            events.losses.append(loss_at(step, d, declared[0], "dropped", "files", pl.module, m.name, (),
                                       f"{m.name} becomes ./{new} (the inverse gives ./{back})"))
    a.relocate(moves)
    _renumber(a, target, state.style, names, dropped, step, d, events)
    for it, op, _inv in ops:
        if op.op == "add":
            path = _layout.ENTRIES[op.entry]["path"]
            if path not in a:
                a.add(path, None, mtime=mtime)
                counts[it.id] += 1
    for it, op, _inv in ops:
        operations.append(Operation(it.id, "files", op.op, describe(op), it.doc, [],
                                    [f"{step.name}.{x}" for x in op.losses], counts[it.id]))
    a.reorder()


def _renumber(a: _archive.Archive, version: int, style: str, names: list[str],
              dropped: dict[tuple[str, str | None], list[str]], step: StepSpec, d: Direction,
              events: Events) -> None:
    """Close the gaps that dropped members left in a counter sequence (``lib<n>``: one
    per module and content kind, 0, 1, ... as the writer numbered them), keeping the order;
    each renamed member is reported under the loss of the drop that made the gap."""
    groups: dict[tuple[str, str | None], list[tuple[int, str, _layout.Placement, str]]] = {}
    for m in a.members:
        pl = None if m.is_dir else _layout.classify(m.path, version, style, names)
        if pl is None:
            continue
        for ph, value in pl.values.items():
            if _layout.ROLES.get(ph) == "counter":
                groups.setdefault((pl.kind, pl.module), []).append((int(value), m.path, pl, ph))
    moves: dict[str, str | None] = {}
    for key, items in groups.items():
        items.sort(key=lambda x: x[0])
        if [n for n, *_ in items] == list(range(len(items))):
            continue
        losses = dropped.get(key)
        if not losses:
            raise MigrationError(f"{step.name} ({d}) left a gap in the {key[0]} counters of module {key[1]!r} "
                                 "without dropping anything: a spec or engine bug")
        for i, (n, path, pl, ph) in enumerate(items):
            if n != i:
                moves[path] = _layout.template(pl.entry, **{**pl.values, ph: str(i)})
                events.losses.append(loss_at(step, d, losses[0], "dropped", "files", pl.module, "./" + path, (),
                                           f"renumbered ./{moves[path]} to close the gap the dropped members left"))
    if moves:
        a.relocate(moves)


def _inverse_path(inv: FileOp, op: FileOp, new: str, module: str | None) -> str | None:
    """Where the inverse operation puts a member that ``op`` moved to ``new``."""
    if inv.op == "keep":
        return new
    if inv.op != "move" or op.to is None or inv.to is None:
        return None
    entry = _layout.ENTRIES[op.to]
    import re

    m = re.match(entry["regex"], new)
    if m is None:
        return None
    values = {k: v for k, v in m.groupdict().items() if v is not None}
    return _entry_path(_layout.ENTRIES[inv.to], values, module, inv.set)
