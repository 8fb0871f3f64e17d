"""Emit ``generated/formats.py``: the registry of the conformance kit's formats (the ``formats``
table) and the constants of its testee protocol (the ``conformance_protocol`` records), the
one place the runtime (sniffing, canonical readings, folders, protocol, report, CLI) reads them."""

from __future__ import annotations

from pprint import pformat

from .code import Code, header
from .ir import RecordField
from .model import Model

TABLE = "formats"
PROTOCOL = "conformance_protocol"
OPS = ("decode", "encode", "migrate")


def _field(model: Model, records: str, record: str, field: str) -> RecordField:
    spec, doc = model.records[records]
    for r in spec.records:
        for f in r.fields:
            if r.name == record and f.name == field:
                return f
    raise doc.error(("records",), f"{records} needs a record {record!r} with a field {field!r}")


def _check(model: Model) -> None:
    """Each row's canonical records spec exists, its roles are protocol ops, and a folder
    format (and only one) names its index files."""
    spec, doc = model.tables[TABLE]
    for i, row in enumerate(spec.rows):
        if row["canonical"] not in model.records:
            raise doc.error(("rows", i, "canonical"), f"no records spec {row['canonical']!r}")
        bad = [r for r in row["roles"] if r not in OPS]
        if bad or not row["roles"]:
            raise doc.error(("rows", i, "roles"), f"roles are some of {', '.join(OPS)}, got {row['roles']!r}")
        if bool(row.get("index_names")) != bool(row["folder"]):
            raise doc.error(("rows", i, "index_names"), "a folder format names its index files; a file format none")


def emit_registry(model: Model) -> str:
    """Python source of ``formats.py`` (the model has the ``formats`` table and the protocol records)."""
    _check(model)
    spec, doc = model.tables[TABLE]
    pspec, pdoc = model.records[PROTOCOL]
    rows = spec.rows
    const = _field(model, PROTOCOL, "testee_info", "protocol").const
    ops = tuple(_field(model, PROTOCOL, "request", "op").enum or ())
    if ops != OPS:
        raise pdoc.error(("records",), f"request.op is one of {', '.join(OPS)} (the roles of the formats table)")
    c = Code()
    c.lines.append(header(model, [doc, pdoc]).rstrip("\n"))
    c('"""The formats of the conformance kit and the constants of its testee protocol."""')
    c()
    c("#: The formats, in the order of the table (vectors, handshakes and reports list them so).")
    c(f"FORMATS: tuple[str, ...] = {tuple(r['format'] for r in rows)!r}")
    c("#: format -> what the reference testee (mlf-spec) does with it")
    c(f"ROLES: dict[str, tuple[str, ...]] = {pformat({r['format']: tuple(r['roles']) for r in rows}, width=110, sort_dicts=False)}")
    c("#: format -> the mlf_spec.sniff kind of its artifacts")
    c(f"SNIFF_KINDS: dict[str, str] = {pformat({r['format']: r['sniff_kind'] for r in rows}, width=110, sort_dicts=False)}")
    c("#: format -> the records spec of its canonical reading (generated/schemas/<name>.schema.json)")
    c(f"CANONICAL: dict[str, str] = {pformat({r['format']: r['canonical'] for r in rows}, width=110, sort_dicts=False)}")
    c("#: the formats whose artifacts are folders (input_dir / output_dir in a request)")
    c(f"FOLDER_FORMATS: frozenset[str] = frozenset({sorted(r['format'] for r in rows if r['folder'])!r})")
    c("#: folder format -> the index files that make a folder one of its artifacts, newest first")
    index = {r["format"]: tuple(r["index_names"]) for r in rows if r.get("index_names")}
    c(f"INDEX_NAMES: dict[str, tuple[str, ...]] = {pformat(index, width=110, sort_dicts=False)}")
    c()
    c("#: The protocol version a testee's handshake names (testee_info.protocol).")
    c(f"PROTOCOL = {const!r}")
    c("#: What a request asks (request.op): the roles.")
    c(f"OPS: tuple[str, ...] = {ops!r}")
    for k in pspec.constants:
        c(f"#: {' '.join(k.doc.split())}")
        c(f"{k.name.upper()} = {k.value!r}")
    return c.text()
