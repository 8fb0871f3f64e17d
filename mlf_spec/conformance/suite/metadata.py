"""MLF metadata boundary vectors: every rule of every version's records (``spec/records/mlf.yaml``
projected onto versions 1 to 7) on both sides.

Rule ids are ``mlf_v<N>.<record>.<field>.<aspect>`` (:mod:`.records`): each field's JSON type,
whether it is required, its constant (the version number among them), enum, pattern,
minimum, element counts and map keys, the keys the record has only in other versions
(``absent``: a version 4 document with ``executors`` is refused) and unknown keys. The
documents are the fixed exports of :func:`.mlf.specs` (graph, AOT with and without the CRT,
operator, two modules), every variant dumped as the writer of its version would; integers
go through 0, 1, -1, the sign bit, 2^31, 2^32, 2^63, 2^64 - 1 and 2^64.
"""

from __future__ import annotations

import json
from typing import Any

from mlf_spec.generated import mlf_ir as _ir
from mlf_spec.mlf import metadata as _md
from mlf_spec.mlf import strategies as _ms

from . import records as _rec
from .common import Collector, doc_ref, outcome, unique
from .mlf import specs


def _root(version: int, style: str) -> str:
    return next(r["record"] for r in _ir.PROJECTIONS[version]["roots"] if r["style"] == style)


def _records(version: int) -> dict[str, Any]:
    return _ir.PROJECTIONS[version]["records"]


def _absent(version: int) -> dict[str, list[str]]:
    """record -> the keys it has in other versions but not in ``version``."""
    mine = _records(version)
    out: dict[str, list[str]] = {}
    for v, proj in _ir.PROJECTIONS.items():
        for name, rec in proj["records"].items():
            if v == version or name not in mine:
                continue
            have = {f["name"] for f in mine[name]["fields"]}
            for f in rec["fields"]:
                if f["name"] not in have and f["name"] not in out.get(name, []):
                    out.setdefault(name, []).append(f["name"])
    return out


def _dump(doc: Any, version: int, style: str) -> bytes:
    opts = _md.json_options(version, style)
    return json.dumps(doc, indent=opts["indent"], sort_keys=opts["sort_keys"], ensure_ascii=opts["ensure_ascii"]).encode()


def _documents() -> dict[int, list[tuple[str, _ms.ArchiveSpec, dict[str, Any]]]]:
    """version -> (label, spec, document) of the fixed exports, one per distinct set of keys."""
    out: dict[int, list[tuple[str, _ms.ArchiveSpec, dict[str, Any]]]] = {}
    shapes: set[tuple[int, str]] = set()
    for label, spec in specs():
        doc = _ms.document_of(spec)
        shape = (spec.version, json.dumps(_keys(doc), sort_keys=True))
        if shape in shapes:
            continue
        shapes.add(shape)
        out.setdefault(spec.version, []).append((label, spec, doc))
    return out


def _keys(value: Any) -> Any:
    """The key structure of a document (values aside)."""
    if isinstance(value, dict):
        return {k: _keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_keys(v) for v in value[:1]]
    return None


def _samples(docs: dict[int, list[tuple[str, _ms.ArchiveSpec, dict[str, Any]]]]) -> dict[tuple[str, str], Any]:
    """(record, key) -> a value the key has in some version's document."""
    out: dict[tuple[str, str], Any] = {}
    for v, items in docs.items():
        for _label, spec, doc in items:
            for _path, kind, name, value in _rec.occurrences(doc, _root(v, spec.style), _records(v)):
                if kind == "record":
                    for k, x in value.items():
                        out.setdefault((name, k), x)
    return out


def rule_ids() -> list[str]:
    """Every rule of the metadata of every version the vectors must probe on both sides."""
    out: list[str] = []
    for v in _ir.PROJECTIONS:
        out += _rec.record_rules(f"mlf_v{v}.", _records(v), absent=_absent(v))
    return sorted(out)


def build_metadata_rules(c: Collector) -> None:
    """Add the boundary vectors of every rule of every metadata version to ``c``."""
    docs = _documents()
    samples = _samples(docs)
    swept: set[tuple[str, str, str]] = set()  # every edge value once per key, in its newest version
    for v, items in sorted(docs.items(), reverse=True):
        prefix = f"mlf_v{v}."
        records = _records(v)
        absent = {r: {k: samples.get((r, k), 1) for k in keys} for r, keys in _absent(v).items()}
        reached: set[str] = set()
        seen: set[bytes] = set()  # per version: a document without its version may be any version's
        for label, spec, doc in items:
            root = _root(v, spec.style)
            scope = {"version": str(v), "style": spec.style}
            tvm = f"writer revision {spec.revision}"
            here = _reached(doc, root, records, prefix, absent) - reached
            if here:
                _probe(c, seen, f"v{v}.{label}.whole", _dump(doc, v, spec.style), sorted(here),
                       f"metadata.json of version {v} ({label}), every rule at its exact value", scope, tvm)
            for rids, at, d in _rec.variants(doc, root, records, prefix, absent=absent, skip=reached, swept=swept):
                _probe(c, seen, f"{rids[0]}.{at}", _dump(d, v, spec.style), rids, f"{rids[0]} probed at {at}",
                       scope, tvm)
            reached |= here


def _probe(c: Collector, seen: set[bytes], vid: str, data: bytes, rids: list[str], what: str, scope: dict[str, str],
           tvm: str) -> None:
    """Add one vector on the side of its rule(s) mlf-spec's reading puts it (once per input of a version)."""
    if data in seen:
        return
    seen.add(data)
    want = outcome("mlf-metadata", "decode", data, {})["outcome"]
    v, record = scope["version"], rids[0].split(".")[1]
    c.add(unique(c, f"mlf-metadata.bound.{vid}"), "mlf-metadata", data, scope=scope, tvm=tvm,
          features={"rule": rids, "version": [v], "style": [scope["style"]]},
          description=f"{what}: " + ("accepted" if want == "accept" else "must be rejected"),
          spec_ref=doc_ref(f"mlf_v{v}", f"`{record}`"), expect=want)


def _reached(doc: Any, root: str, records: dict[str, Any], prefix: str, absent: dict[str, dict[str, Any]]) -> set[str]:
    out: set[str] = set()
    for _path, kind, name, value in _rec.occurrences(doc, root, records):
        if kind != "record":
            continue
        rec = records[name]
        out |= {f"{prefix}{name}.unknown"} if rec["extra"] == "forbid" else set()
        out |= {f"{prefix}{name}.{k}.absent" for k in absent.get(name, {})}
        out |= {f"{prefix}{name}.{f['name']}.{a}" for f in rec["fields"] if f["name"] in value
                for a in _rec.field_aspects(f)}
    return out


__all__ = ["build_metadata_rules", "rule_ids"]
