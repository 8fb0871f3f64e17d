"""The migration steps as the engine runs them: the spec's data (the generated
``mlf_migrations.STEPS``) turned once, at import, into frozen dataclasses.

A step (:class:`StepSpec`) declares its losses, derivations and refusals by name and its
operations in two lists: on the metadata (:class:`MetadataItem`, acting on the instances of
some records) and on the archive's members (:class:`FileItem`, by layout entry). Every item
holds both directions, ``up`` and ``down``; each is a :class:`MetadataOp` or :class:`FileOp`
whose ``op`` is one of the kinds the spec language allows (``METADATA_OPS``, ``LAYOUT_OPS``).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Literal

from mlf_spec._internal.lean_dataclass import dataclass, field
from mlf_spec.generated import mlf_migrations as _spec

Direction = Literal["up", "down"]

#: The operation kinds the spec language allows, on the metadata and on the layout.
METADATA_OPS: tuple[str, ...] = tuple(_spec.METADATA_OPS)
LAYOUT_OPS: tuple[str, ...] = tuple(_spec.LAYOUT_OPS)


@dataclass(frozen=True)
class MetadataOp:
    """One direction of a metadata operation: its kind ``op``, the key ``path`` inside the
    record (``*``: every element) and what the kind needs (``to`` of rename/move; ``into``
    and ``key`` of wrap; ``source`` of unwrap; ``value`` of add; ``default``, present when
    ``has_default``, and ``omit_empty`` of move; ``converter``, ``table`` and ``derivation``
    of convert/derive), the names of the ``losses`` and ``refusals`` it may incur, and the
    one-line ``summary`` the generator wrote."""

    op: str
    summary: str
    path: tuple[str, ...] = ()
    to: tuple[str, ...] = ()
    into: str | None = None
    key: str | None = None
    source: str | None = None
    value: Any = None
    has_default: bool = False
    default: Any = None
    omit_empty: bool = False
    converter: str | None = None
    table: str | None = None
    derivation: str | None = None
    losses: tuple[str, ...] = ()
    refusals: tuple[str, ...] = ()

    @classmethod
    def of(cls, d: Mapping[str, Any]) -> MetadataOp:
        """From the generated data of one direction."""
        return cls(op=d["op"], summary=d["summary"], path=tuple(d.get("path", ())), to=tuple(d.get("to", ())),
                   into=d.get("into"), key=d.get("key"), source=d.get("from"), value=d.get("value"),
                   has_default="default" in d, default=d.get("default"), omit_empty=bool(d.get("omit_empty")),
                   converter=d.get("converter"), table=d.get("table"), derivation=d.get("derivation"),
                   losses=tuple(d.get("losses", ())), refusals=tuple(d.get("refusals", ())))


@dataclass(frozen=True)
class FileOp:
    """One direction of a layout operation: its kind ``op`` on the members of layout
    ``entry``; for ``move`` the target entry ``to``, the placeholder values it ``set`` and
    those it keeps ``only`` (other members are dropped); the ``losses`` it may incur and the
    generator's ``summary``."""

    op: str
    summary: str
    entry: str
    to: str | None = None
    set: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    only: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    losses: tuple[str, ...] = ()

    @classmethod
    def of(cls, d: Mapping[str, Any]) -> FileOp:
        """From the generated data of one direction."""
        return cls(op=d["op"], summary=d["summary"], entry=d["entry"], to=d.get("to"),
                   set=MappingProxyType(dict(d.get("set", {}))), only=MappingProxyType(dict(d.get("only", {}))),
                   losses=tuple(d.get("losses", ())))


@dataclass(frozen=True)
class MetadataItem:
    """A metadata operation and its inverse, on the instances of ``records``."""

    id: str
    doc: str
    records: tuple[str, ...]
    up: MetadataOp
    down: MetadataOp

    def way(self, d: Direction) -> tuple[MetadataOp, MetadataOp]:
        """(the operation of direction ``d``, its inverse)."""
        return (self.up, self.down) if d == "up" else (self.down, self.up)


@dataclass(frozen=True)
class FileItem:
    """A layout operation and its inverse."""

    id: str
    doc: str
    up: FileOp
    down: FileOp

    def way(self, d: Direction) -> tuple[FileOp, FileOp]:
        """(the operation of direction ``d``, its inverse)."""
        return (self.up, self.down) if d == "up" else (self.down, self.up)


@dataclass(frozen=True)
class LossSpec:
    """A declared loss: what it is (``doc``) and what each direction does about it."""

    name: str
    doc: str
    up: str | None
    down: str | None

    def text(self, d: Direction) -> str:
        """The loss's documentation for direction ``d`` (what a plan reports)."""
        return f"{self.doc} {self.up if d == 'up' else self.down}"


@dataclass(frozen=True)
class DerivationSpec:
    """A declared derivation: ``doc`` and the registry's ``deriver`` (None: a converter
    derives it)."""

    name: str
    doc: str
    deriver: str | None


@dataclass(frozen=True)
class RefusalSpec:
    """A declared refusal: the ``direction`` it refuses, for every document of ``style``
    (None: only where an operation raises it)."""

    name: str
    doc: str
    direction: Direction
    style: str | None


@dataclass(frozen=True)
class StepSpec:
    """One step between consecutive versions (spec/migrations/<name>.yaml)."""

    name: str
    source: int
    target: int
    title: str
    doc: str
    losses: Mapping[str, LossSpec]
    derivations: Mapping[str, DerivationSpec]
    refusals: Mapping[str, RefusalSpec]
    metadata: tuple[MetadataItem, ...]
    files: tuple[FileItem, ...]

    @classmethod
    def of(cls, s: Mapping[str, Any]) -> StepSpec:
        """From the generated data of one step."""
        return cls(
            name=s["name"], source=s["from"], target=s["to"], title=s["title"], doc=s["doc"],
            losses=MappingProxyType({n: LossSpec(n, x["doc"], x.get("up"), x.get("down"))
                                     for n, x in s["losses"].items()}),
            derivations=MappingProxyType({n: DerivationSpec(n, x["doc"], x.get("deriver"))
                                          for n, x in s["derivations"].items()}),
            refusals=MappingProxyType({n: RefusalSpec(n, x["doc"], x["direction"], x.get("style"))
                                       for n, x in s["refusals"].items()}),
            metadata=tuple(MetadataItem(it["id"], it["doc"], tuple(it["records"]), MetadataOp.of(it["up"]),
                                        MetadataOp.of(it["down"])) for it in s["metadata"]),
            files=tuple(FileItem(it["id"], it["doc"], FileOp.of(it["up"]), FileOp.of(it["down"]))
                        for it in s["files"]))


#: Every step by (older version, newer version).
STEPS: Mapping[tuple[int, int], StepSpec] = MappingProxyType(
    {(s["from"], s["to"]): StepSpec.of(s) for s in _spec.STEPS})

__all__ = ["LAYOUT_OPS", "METADATA_OPS", "STEPS", "DerivationSpec", "Direction", "FileItem", "FileOp",
           "LossSpec", "MetadataItem", "MetadataOp", "RefusalSpec", "StepSpec"]
