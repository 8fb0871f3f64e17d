"""Emit the entry points of the hypothesis strategies of a versioned records spec and its
archives, with every nameable way to break a document or an archive."""

from __future__ import annotations

from .common import header
from .emit_fast import Code
from .model import Model
from .versioned import project


def broken_metadata_kinds(model: Model, name: str) -> list[str]:
    """Every nameable way to break a document of the versioned records spec ``name``."""
    kinds: list[str] = ["not_json", "not_object", "bad_version"]
    for p in project(model, name):
        for rname, rec in p.records.items():
            for k in [f"unknown_key:{rname}"]:
                if k not in kinds:
                    kinds.append(k)
            for f in rec.fields:
                c = f.constraints()
                cand = [f"wrong_type:{rname}.{f.name}"]
                if f.required:
                    cand.append(f"missing_key:{rname}.{f.name}")
                if f.const is not None or c.get("enum") or c.get("item_enum") or c.get("pattern") or \
                        c.get("key_pattern") or c.get("minimum") is not None or c.get("keyed_by"):
                    cand.append(f"bad_value:{rname}.{f.name}")
                for k in cand:
                    if k not in kinds:
                        kinds.append(k)
    return kinds


def emit_versioned_strategies(model: Model, name: str, layout: str, findings: str | None) -> str:
    """Entry points of the hypothesis strategies for documents and archives of ``name``."""
    spec, doc = model.records[name]
    lspec, ldoc = model.layouts[layout]
    docs = [doc, ldoc] + ([model.findings[findings][1]] if findings else [])
    c = Code()
    c.lines.append(header(model, docs).rstrip("\n"))
    c(f'"""Hypothesis strategies: {spec.title} and archives, valid and broken by named kind."""')
    c()
    c("from __future__ import annotations")
    c()
    c("from typing import Any")
    c()
    c(f"METADATA_BROKEN_KINDS = {tuple(broken_metadata_kinds(model, name))!r}")
    kinds = ["not_a_tar", "truncated"] + [f"unsafe:{k.name}" for k in lspec.tar.refused]
    kinds += [f"missing_member:{e.id}" for e in lspec.entries if e.required and e.path != "."]
    if findings:
        kinds += [f"finding:{f.code}" for f in model.findings[findings][0].findings if f.broken]
    c(f"ARCHIVE_BROKEN_KINDS = {tuple(kinds)!r}")
    for fn, what, args, call in (
        ("valid_metadata", "(version, style, document) of valid metadata documents",
         "version: int | None = None, style: str | None = None", f"metadata_documents({name!r}, version, style)"),
        ("broken_metadata", "(kind, version, style, text) of metadata broken in one named way",
         "kinds: tuple[str, ...] | None = None", f"broken_metadata({name!r}, kinds or METADATA_BROKEN_KINDS)"),
        ("valid_archive", "(version, style, tar bytes) of archives as TVM wrote them",
         "version: int | None = None, style: str | None = None", "archives(version, style)"),
        ("broken_archive", "(kind, tar bytes) of archives broken in one named way",
         "kinds: tuple[str, ...] | None = None", "broken_archives(kinds or ARCHIVE_BROKEN_KINDS)"),
    ):
        c()
        c()
        c(f"def {fn}({args}) -> Any:")
        c.indent()
        c(f'"""Strategy for {what}."""')
        c(f"from mlf_spec.mlf.strategies import {call.split('(')[0]}")
        c()
        c(f"return {call}")
        c.dedent()
    return c.text()
