"""The blob writer eras as the spec states them (spec/tables/blob_writer_eras.yaml, generated as
``mlf_spec.generated.blob_writer_eras_table``): per TVM release line, whether its writer packs
an import tree, merges the DSO-exportable modules into one ``_lib``, which root without imports
packs count 0, the C-source style, the label of the era and which eras a reader tries for a
blob found under a symbol. A new TVM release whose writer changes is a row of that table."""

from __future__ import annotations

from typing import NamedTuple

from mlf_spec import versions as _versions
from mlf_spec.generated import blob_facts_table as _facts_table
from mlf_spec.generated import blob_writer_eras_table as _table
from mlf_spec.generated._fastlib import LATEST

Era = tuple[int, ...]


class WriterEra(NamedTuple):
    """One row of the table: the writer of TVM ``since`` up to the next row's."""

    since: Era
    era: Era  # the version blobs of this writer are labelled by (LATEST: the newest grammar)
    label: str
    layout: str
    import_tree: bool
    merge_lib: bool
    omit_root: str  # "lib": only a _lib root without imports packs count 0; "any": every root
    c_style: str
    read_rank: int | None
    read_symbols: tuple[str, ...]
    default: bool


def _era(text: str) -> Era:
    return LATEST if text == "latest" else _versions.required(text)


#: The rows, oldest first.
WRITER_ERAS: tuple[WriterEra, ...] = tuple(
    WriterEra(r["since"], _era(r["era"]), r["label"], r["layout"], r["import_tree"], r["merge_lib"], r["omit_root"],
              r["c_style"], r["read_rank"], tuple((r["read_symbols"] or "").split()), r["default"])
    for r in sorted(_table.ROWS, key=lambda r: r["since"]))

#: The label of each era a blob is read or written as (others are labelled by their version).
ERA_LABELS: dict[Era, str] = {w.era: w.label for w in WRITER_ERAS}
#: The first version of the newest grammar (blobs of it and later are read as LATEST).
NEWEST_SINCE: Era = WRITER_ERAS[-1].since
_DEFAULTS = {w.layout: w.era for w in WRITER_ERAS if w.default}
_SYMBOL_IDS = {r["value"]: r["id"] for r in _facts_table.ROWS if r["kind"] == "blob-symbol"}


def writer_era(e: Era) -> WriterEra:
    """The row whose writer TVM ``e`` follows (the oldest row for a version before every row)."""
    found = WRITER_ERAS[0]
    for w in WRITER_ERAS:
        if w.since <= e:
            found = w
    return found


def default_era(layout: str) -> Era:
    """The era of a ``layout`` blob when none is given."""
    return _DEFAULTS[layout]


def era_of(era: str | Era | None, layout: str) -> Era:
    """The era tuple of ``era`` (a version text, "latest", a tuple, or None: the layout's default)."""
    if era is None:
        return default_era(layout)
    if isinstance(era, tuple):
        return tuple(int(x) for x in era[:2])
    if era == "latest":  # the conformance scope value for the newest grammar of the layout
        return LATEST
    return _versions.required(str(era))


def candidates(layout: str, symbol: str) -> list[Era]:
    """TVM versions whose grammar may have written a blob of ``layout`` under ``symbol``,
    most likely first (a symbol no row of the layout names is taken as no symbol)."""
    rows = [w for w in WRITER_ERAS if w.layout == layout and w.read_rank is not None]
    sid = _SYMBOL_IDS.get(symbol, "raw")
    named = [w for w in rows if sid in w.read_symbols] or [w for w in rows if "raw" in w.read_symbols]
    return [w.era for w in sorted(named, key=lambda w: w.read_rank or 0)]


__all__ = ["ERA_LABELS", "NEWEST_SINCE", "WRITER_ERAS", "Era", "WriterEra", "candidates", "default_era", "era_of",
           "writer_era"]
