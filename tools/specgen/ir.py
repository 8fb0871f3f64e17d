"""The typed intermediate representation of spec/ (and so the spec language's meta-schema).

Every spec file is validated against these models (unknown keys are errors), then checked
semantically (references resolve, expressions name earlier fields). Emitters read only
these objects.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

IDENT = r"^[a-z_][a-z0-9_]*$"

# name -> (size in bytes, struct format letter, signed/float kind)
SCALARS: dict[str, tuple[int, str]] = {
    "u8": (1, "B"),
    "u16": (2, "H"),
    "u32": (4, "I"),
    "u64": (8, "Q"),
    "i8": (1, "b"),
    "i16": (2, "h"),
    "i32": (4, "i"),
    "i64": (8, "q"),
    "f32": (4, "f"),
    "f64": (8, "d"),
}
# Composite built-ins of the stream conventions: str = u64 length + bytes,
# vec = u64 count + elements, map = u64 count + (key, value) pairs, bytes = raw sized bytes.
BUILTINS = {"str", "bytes", "vec", "map"}

_VERSION = re.compile(r"^\d+\.\d+$")


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False, populate_by_name=True)


def _check_version(v: str | None) -> str | None:
    if v is not None and not _VERSION.match(v):
        raise ValueError(f"a TVM version like '0.21' is expected, got {v!r}")
    return v


class Switch(Strict):
    """A tagged payload: the field's type is chosen by the value of an earlier field."""

    on: str = Field(description="Expression whose value selects the case.")
    cases: dict[str | int, str] = Field(description="Value -> type name.")
    default: str | None = Field(None, description="Type for values not listed; absent = error.")
    extensible: str | None = Field(
        None, description="Name of a runtime registry of extra cases, consulted first (mlf_spec.blob.register_payload)."
    )


class Strategy(Strict):
    """Hints for hypothesis strategies (bounds that keep generated artifacts small)."""

    min: int | None = None
    max: int | None = None
    max_size: int | None = Field(None, description="Maximum element count / byte length.")
    alphabet: str | None = Field(None, description="'text' for Unicode text, 'bytes' for any bytes.")


class FieldSpec(Strict):
    """One field of a binary struct."""

    name: str = Field(pattern=IDENT)
    doc: str
    type: str = Field(description="Scalar (u8..i64, f32, f64), str, bytes, vec, map, or a struct name.")
    of: str | None = Field(None, description="Element type of a vec.")
    key: str | None = Field(None, description="Key type of a map.")
    value: str | None = Field(None, description="Value type of a map.")
    count: str | None = Field(None, description="Expression: the field is an array of this many `type`.")
    size: str | None = Field(None, description="Expression: byte size of a `bytes` field.")
    const: int | str | None = Field(None, description="Required value; anything else is an error.")
    canonical: int | None = Field(None, description="Value written for new data; any value is kept on read.")
    equals: str | None = Field(None, description="Expression the value must equal (e.g. a count of another field).")
    derive: str | None = Field(None, description="Expression that computes the value; checked on read.")
    constraint: str | None = Field(None, description="Boolean expression; `each` names an array element.")
    table: str | None = Field(None, description="Table whose rows give this field's meaning.")
    encoding: Literal["utf-8"] | None = Field(None, description="Decode a str as text (lossless).")
    lazy: bool = Field(False, description="bytes: keep only the offset; never copy the payload.")
    when: str | None = Field(None, alias="if", description="Expression: the field is present only if true.")
    since: str | None = Field(None, description="First TVM version that has the field.")
    until: str | None = Field(None, description="First TVM version that no longer has it.")
    switch: Switch | None = None
    strategy: Strategy | None = None
    role: str | None = Field(None, description="Meaning for engines, e.g. tensor_payload, name.")
    sized: bool = Field(False, description="Stored like a str: a u64 byte length, then the value, which must fill it.")
    keep_span: bool = Field(False, description="Records also get <name>_span: (start, end) offsets of the value.")
    order: Literal["unspecified"] | None = Field(
        None, description="unspecified: the writer's element order carries no meaning (a C++ unordered_map); "
        "conformance readings of a vec or map compare it as a multiset.")

    _v_since = field_validator("since", "until")(classmethod(lambda cls, v: _check_version(v)))


class InvariantSpec(Strict):
    """A rule over several fields of a struct, checked once the struct has been read."""

    name: str = Field(pattern=IDENT)
    rule: str = Field(description="Boolean expression over the struct's fields.")
    doc: str
    severity: Literal["error", "warning"] = Field("error", description="error: reading fails; warning: reported by lint_<struct>.")
    since: str | None = Field(None, description="First TVM version whose readers enforce it.")
    until: str | None = Field(None, description="First TVM version that no longer does.")

    _v_since = field_validator("since", "until")(classmethod(lambda cls, v: _check_version(v)))


class StructSpec(Strict):
    """A binary struct: fields back to back, no padding."""

    name: str = Field(pattern=IDENT)
    doc: str
    fields: list[FieldSpec]
    root: bool = Field(False, description="A whole file has this layout.")
    invariants: list[InvariantSpec] = Field(default_factory=list, description="Rules over several fields.")


class ConstantSpec(Strict):
    name: str = Field(pattern=r"^[A-Z_][A-Z0-9_]*$")
    value: int | str
    doc: str


class ExampleSpec(Strict):
    name: str
    doc: str
    struct: str
    value: dict[str, Any]


class BinarySpec(Strict):
    """spec: binary — one binary format."""

    spec: Literal["binary"]
    name: str = Field(pattern=IDENT)
    title: str
    doc: str
    endian: Literal["little"] = "little"
    uses: list[str] = Field(default_factory=list, description="Other binary specs whose structs are used.")
    constants: list[ConstantSpec] = Field(default_factory=list)
    structs: list[StructSpec]
    examples: list[ExampleSpec] = Field(default_factory=list)


class EraSpec(Strict):
    """A TVM version at which some format or table changed."""

    version: str
    doc: str

    _v = field_validator("version")(classmethod(lambda cls, v: _check_version(v)))


class ErasSpec(Strict):
    """spec: eras — the TVM versions at which something changed; since/until name one of them."""

    spec: Literal["eras"]
    name: str = Field(pattern=IDENT)
    title: str
    doc: str
    eras: list[EraSpec]


class ColumnSpec(Strict):
    name: str = Field(pattern=IDENT)
    type: Literal["int", "str", "bool", "int_list", "str_list", "int_or_null", "str_or_null", "int_list_or_null",
                  "str_list_or_null"]
    doc: str


class TableSpec(Strict):
    """spec: table — rows keyed by a value, each valid for a range of TVM versions."""

    spec: Literal["table"]
    name: str = Field(pattern=IDENT)
    title: str
    doc: str
    columns: list[ColumnSpec]
    rows: list[dict[str, Any]]


class FieldRule(Strict):
    """A rule a field carries beyond its type and constraints (a relation to other fields);
    its id is ``<record>.<field>.<id>`` in the conformance vectors."""

    id: str = Field(pattern=r"^[a-z][a-z0-9-]*$")
    doc: str


class RecordField(Strict):
    name: str
    doc: str
    type: str = Field(
        description="str, int, bool, float, null, any, 'literal', list[T], map[T], map[int, T], "
        "tuple[T, U], a record or alias name, or T|U."
    )
    required: bool = True
    const: Any = None
    enum: list[Any] | None = None
    enum_from: str | None = Field(None, pattern=r"^[a-z_][a-z0-9_]*\.[a-z_][a-z0-9_]*$",
                                  description="TABLE.COLUMN: the enum is that column of the table's rows (the loader "
                                  "fills in `enum`; written once, in the table).")
    since: str | None = Field(None, description="First revision of the records' timeline (or TVM version) with it.")
    until: str | None = Field(None, description="First revision (or TVM version) without it.")
    pattern: str | None = Field(None, description="Regular expression a str value must match.")
    key_pattern: str | None = Field(None, description="Regular expression every key of a map must match.")
    minimum: int | None = Field(None, description="Smallest allowed int value.")
    min_items: int | None = Field(None, description="Fewest elements of a list or map.")
    max_items: int | None = Field(None, description="Most elements of a list or map.")
    item_enum: list[Any] | None = Field(None, description="Allowed values of the elements of a list.")
    discriminator: str | None = Field(None, description="Key whose const value tells the records of a union apart.")
    keyed_by: str | None = Field(None, description="map of records: each key equals this field of its value.")
    role: Literal["version"] | None = Field(None, description="version: the metadata version number (const per version).")
    compare: list[Literal["unordered", "writer_order", "may_omit", "informative", "payload_fields"]] = Field(
        default_factory=list,
        description="How the conformance kit compares this key of a reading (see spec/README.md): unordered, "
        "writer_order, may_omit, informative, payload_fields.")
    rules: list[FieldRule] = Field(
        default_factory=list,
        description="Rules of this field that relate it to other fields (rule ids `<record>.<field>.<id>`).")


class RecordAlias(Strict):
    """A named type with constraints, usable wherever a type is (e.g. a graph node entry)."""

    name: str = Field(pattern=IDENT)
    doc: str
    type: str
    pattern: str | None = None
    minimum: int | None = None
    min_items: int | None = None
    max_items: int | None = None
    dump: Literal["multiline"] | None = Field(
        None, description="multiline: a dmlc JSONWriter writes this array on several lines whatever its length."
    )


class RecordSpec(Strict):
    name: str = Field(pattern=IDENT)
    doc: str
    fields: list[RecordField]
    extra: Literal["forbid", "allow"] = "forbid"
    extra_type: str | None = Field(None, description="With extra: allow, the type of the values of unknown keys.")
    since: str | None = Field(None, description="First revision of the timeline with this record.")
    until: str | None = Field(None, description="First revision without it.")


class JsonDump(Strict):
    """How a writer serialised a document (Python json.dump options)."""

    indent: int | None = None
    sort_keys: bool = False
    ensure_ascii: bool = True
    trailing_newline: bool = False
    doc: str = ""


class RootMatch(Strict):
    """How a reader tells this root from the other roots of the same version."""

    key: str
    value: Any = None


class RootSpec(Strict):
    """One kind of whole document (a style) over a range of revisions."""

    style: str
    record: str
    doc: str
    since: str | None = None
    until: str | None = None
    match: RootMatch | None = Field(None, description="Chosen when the document has `key` (equal to `value` if given).")
    json_dump: JsonDump = Field(default_factory=JsonDump, alias="json")


class RecordsExample(Strict):
    name: str = Field(pattern=IDENT)
    doc: str
    version: int | None = None
    style: str | None = None
    value: Any


class RecordsConstant(Strict):
    """A number the documents' protocol fixes (a limit), not a field of any record."""

    name: str = Field(pattern=IDENT)
    value: int
    doc: str


class RecordsSpec(Strict):
    """spec: records — JSON documents as typed records (models and JSON Schemas)."""

    spec: Literal["records"]
    name: str = Field(pattern=IDENT)
    title: str
    doc: str
    root: str | None = Field(None, description="The whole document (records without a timeline).")
    uses: list[str] = Field(default_factory=list,
                            description="Records specs whose records this one refers to: plain specs (their records "
                            "are included in its models), or, for a lenient spec, lenient specs (imported).")
    records: list[RecordSpec]
    timeline: str | None = Field(None, description="A timeline spec: since/until name its revisions; one model per version.")
    roots: list[RootSpec] = Field(default_factory=list, description="With a timeline: the document kinds (styles).")
    lenient: bool = Field(False, description="Models can be read leniently: unknown keys are kept and reported.")
    plain: bool = Field(False, description="A lenient spec without a timeline: also emit plain validators and typed "
                        "records (<name>_plain.py), the read path without pydantic (specs with a timeline always have them).")
    aliases: list[RecordAlias] = Field(default_factory=list)
    examples: list[RecordsExample] = Field(default_factory=list)
    constants: list[RecordsConstant] = Field(default_factory=list,
                                             description="Limits the protocol of these documents fixes (e.g. the most "
                                             "bytes of a request), emitted for the runtime.")


REVISION_ID = r"^v[1-9][0-9]*(\.[a-z0-9_]+)?$"


class RevisionSpec(Strict):
    """One state of a writer: the format version it wrote and the commit that made it."""

    id: str = Field(pattern=REVISION_ID)
    version: int = Field(ge=1)
    commit: str = Field(pattern=r"^[0-9a-f]{7,40}$")
    date: str = Field(pattern=r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")
    release: str | None = Field(None, description="First release that shipped this revision.")
    doc: str


class TimelineSpec(Strict):
    """spec: timeline — the ordered revisions of a writer; records and layouts name them."""

    spec: Literal["timeline"]
    name: str = Field(pattern=IDENT)
    title: str
    doc: str
    revisions: list[RevisionSpec]


class LayoutKind(Strict):
    name: str = Field(pattern=IDENT)
    doc: str


class LayoutPlaceholder(Strict):
    """A `{name}` in a path pattern."""

    name: str = Field(pattern=IDENT)
    regex: str
    doc: str
    role: Literal["module", "module_lower", "counter"] | None = Field(
        None, description="module: a module name; module_lower: its ASCII lower case; counter: 0, 1, ... per module."
    )


class LayoutCondition(Strict):
    name: str = Field(pattern=IDENT)
    scope: Literal["module", "archive"]
    doc: str


class LayoutGroup(Strict):
    """Members a writer added with one tarfile call, in the order of the groups."""

    name: str = Field(pattern=IDENT)
    owner: Literal["reset", "source"] = Field(description="reset: uid/gid 0, root/root; source: the files' own.")
    order: Literal["sorted_tree", "listed"]
    directories: bool = Field(description="Whether directories are members of their own.")
    doc: str


class LayoutTarFormat(Strict):
    """A tar header format the writer produced, with the Python versions that wrote it."""

    name: Literal["pax", "gnu", "ustar", "v7"]
    python: str = Field(description="The Python versions whose tarfile default this was, as text.")
    siblings: Literal["sorted", "any"] = Field(
        description="sorted: directory listings were sorted (a member order with unsorted siblings is not the "
        "writer's); any: some Python of this format listed directories unsorted.")
    unsorted: str | None = Field(None, description="Who wrote unsorted listings in this format (siblings: any).")
    extended: list[str] = Field(default_factory=list,
                                description="Extended-header record keywords this format's writer used.")
    doc: str


class LayoutTar(Strict):
    """How the writer made the tar container."""

    root_member: str
    prefix: str
    format: Literal["pax", "gnu", "ustar"] = Field(description="The format mlf-spec writes new archives in.")
    formats: list[LayoutTarFormat] = Field(default_factory=list,
                                           description="Every format TVM's writer produced (by Python version).")
    record_size: int
    compression: Literal["none", "gzip"]
    modes: dict[str, int] = Field(description="root, directory and file permission bits mlf-spec writes.")
    umasks: list[int] = Field(default_factory=list,
                              description="Process umasks the writer's main tree may have been made under: "
                              "files 0o666 & ~umask, directories 0o777 & ~umask.")
    root_modes: list[int] = Field(default_factory=list,
                                  description="Modes of the root member besides the umask-derived directory mode.")
    member_types: dict[str, str] = Field(default_factory=dict,
                                         description="file and directory: the tar type flag the writer used.")
    refused: list[LayoutKind] = Field(default_factory=list, description="Member kinds a reader refuses (unsafe).")
    doc: str


class LayoutEntry(Strict):
    """One path pattern of the archive."""

    id: str = Field(pattern=IDENT)
    path: str
    kind: str
    doc: str
    style: Literal["full-model", "operator", "both"] = "both"
    required: bool = False
    when: str | None = Field(None, description="A condition: the member is written exactly when it holds.")
    group: str = "main"
    since: str | None = None
    until: str | None = None


class LayoutSpec(Strict):
    """spec: layout — the members of an archive: path patterns, content kinds, versions."""

    spec: Literal["layout"]
    name: str = Field(pattern=IDENT)
    title: str
    doc: str
    timeline: str
    metadata: str = Field(description="The records spec of the archive's metadata document.")
    findings: str | None = Field(None, description="The findings spec of the checker of these archives.")
    tar: LayoutTar
    kinds: list[LayoutKind]
    placeholders: list[LayoutPlaceholder]
    conditions: list[LayoutCondition]
    groups: list[LayoutGroup]
    entries: list[LayoutEntry]


class FindingBasis(Strict):
    """A commit of the writer's (or compiler's) history that a cross-check rule rests on."""

    commit: str = Field(pattern=r"^[0-9a-f]{7,40}$")
    doc: str


class FindingRow(Strict):
    """One row of a finding: when it is reported for a part of a subject, and how."""

    subject: str = Field(description="The part the row is about: a subject of the findings spec's `facts_from` "
                         "verdicts spec, or one the findings spec declares.")
    when: str | None = Field(None, description="The condition over the subject's facts (the spec's expression "
                             "language) under which the finding is reported.")
    each: str | None = Field(None, description="A list fact: the row is evaluated once per element, named `each`.")
    path: str | None = Field(None, description="The field path, a template: `{expression}` over the facts.")
    message: str | None = Field(None, description="The message, a template: `{expression[!r][:spec]}` over the facts.")
    offset: str | None = Field(None, description="The byte offset, an expression over the facts; null: none.")
    file: str | None = Field(None, description="The file the offset is in, an expression over the facts; null: "
                             "the input's.")
    stop: bool = Field(False, description="When the row holds, the later rows of the subject are not evaluated "
                       "for this part (the reader stops there).")


class FindingSpec(Strict):
    code: str = Field(pattern=r"^[a-z]+(\.[a-z0-9-]+)+$")
    severity: Literal["error", "warning", "info"]
    doc: str
    broken: bool = Field(False, description="Strategies can build an artifact that has this finding.")
    invariants: list[str] = Field(default_factory=list,
                                  description="Warning-level invariants of binary specs (struct.name) this finding reports.")
    rule: str | None = Field(None, description="A cross-check: what must hold for the writer's output, as text.")
    provable: bool | None = Field(
        None, description="Whether the writer's code proves the rule for every archive it wrote (a rule that "
        "cannot be proven is info at most).")
    basis: list[FindingBasis] = Field(default_factory=list, description="The commits the rule rests on.")
    was: str | None = Field(None, description="The earlier, wrong form of the rule and why it was wrong.")
    error_class: str | None = Field(
        None, description="The conformance error class (table conformance_errors) of the rejection when a reader "
        "refuses an input for this finding; null: the finding does not stop a reader.")
    strict_refuses: bool = Field(
        False, description="Whether mlf-spec's strict reader refuses an input that has this finding (the checker "
        "reads further and reports it).")
    subject: str | None = Field(None, description="The part the row is about: a subject of the findings spec's "
                                "`facts_from` verdicts spec (or one the findings spec declares); null: the finding "
                                "is written by the check module.")
    # the finding's row, when it has one (the fields of FindingRow)
    when: str | None = None
    each: str | None = None
    path: str | None = None
    message: str | None = None
    offset: str | None = None
    file: str | None = None
    stop: bool = False
    rows: list[FindingRow] = Field(default_factory=list, description="More rows of the finding (another subject, "
                                   "another message): each as the finding's own row fields.")


class FindingsSubject(Strict):
    """Facts of a subject that only the findings use (offsets, texts of messages), beside those
    of the verdicts spec's subject of the same name."""

    name: str = Field(pattern=IDENT)
    doc: str | None = None
    facts: list[FactSpec] = Field(default_factory=list)
    order: list[str] | None = Field(None, description="The codes of the subject's rows in the order they are "
                                    "evaluated (the order of a part's findings); none: the findings' order.")


class FindingsSpec(Strict):
    """spec: findings — the stable codes of a checker's findings."""

    spec: Literal["findings"]
    name: str = Field(pattern=IDENT)
    title: str
    doc: str
    facts_from: str | None = Field(None, description="The verdicts spec whose subjects and facts the rows name.")
    subjects: list[FindingsSubject] = Field(default_factory=list)
    findings: list[FindingSpec]


MIGRATION_METADATA_OPS = ("rename", "move", "wrap", "unwrap", "add", "derive", "convert", "drop", "keep", "leave_out")
MIGRATION_LAYOUT_OPS = ("move", "add", "drop", "keep", "leave_out")


class MigrationOp(Strict):
    """One direction of an operation: what a step does to the metadata or to the layout."""

    op: str = Field(description="metadata: rename, move, wrap, unwrap, add, derive, convert, drop, keep, leave_out; "
                    "layout: move, add, drop, keep, leave_out.")
    path: str | None = Field(None, description="metadata: dotted key path inside the record (`*` = every element).")
    to: str | None = Field(None, description="rename/move target: a key path (metadata) or a layout entry id.")
    entry: str | None = Field(None, description="layout: the entry whose members the operation acts on.")
    into: str | None = Field(None, description="wrap: the field of the new root that holds the record, keyed by `key`.")
    key: str | None = Field(None, description="wrap: the record's field whose value keys it.")
    source: str | None = Field(None, alias="from", description="unwrap: the field of the root holding one record.")
    value: Any = Field(None, description="add: the value written (default: the field's const).")
    converter: str | None = Field(None, description="convert: a name in mlf_spec.mlf.migrate_registry.CONVERTERS.")
    derivation: str | None = Field(None, description="derive (or convert): a derivation declared in the file.")
    table: str | None = Field(None, description="convert/derive: a table spec the converter or deriver reads.")
    omit_empty: bool = Field(False, description="move: an empty list or object is left out instead of moved.")
    default: Any = Field(None, description="move: the value moved when the source key is absent.")
    set: dict[str, str] = Field(default_factory=dict, description="layout move: values of target placeholders.")
    only: dict[str, str] = Field(default_factory=dict,
                                 description="layout move: members whose placeholders differ are dropped (a loss).")
    losses: list[str] = Field(default_factory=list, description="Losses (declared in the file) it may incur.")
    refusals: list[str] = Field(default_factory=list, description="Refusals (declared in the file) it may raise.")


class MigrationItem(Strict):
    """An operation and its inverse: `up` turns the older version into the newer, `down` back."""

    id: str = Field(pattern=IDENT)
    doc: str
    records: list[str] = Field(default_factory=list, description="metadata: the records whose instances it acts on.")
    up: MigrationOp
    down: MigrationOp


class MigrationLoss(Strict):
    """Information a direction cannot carry; refused unless the caller accepts it by name."""

    name: str = Field(pattern=IDENT)
    doc: str
    up: str | None = Field(None, description="What the upgrade loses or has to invent.")
    down: str | None = Field(None, description="What the downgrade loses or has to invent.")


class MigrationDerivation(Strict):
    """A value rebuilt from other data of the archive (marked as derived in the result)."""

    name: str = Field(pattern=IDENT)
    doc: str
    deriver: str | None = Field(None, description="A name in mlf_spec.mlf.migrate_registry.DERIVERS (derive ops).")


class MigrationRefusal(Strict):
    """Why a direction is impossible for some documents."""

    name: str = Field(pattern=IDENT)
    doc: str
    direction: Literal["up", "down"]
    style: str | None = Field(None, description="Every document of this style (it has no form in the other version).")


class MigrationSpec(Strict):
    """spec: migration — the operations between two consecutive versions, in both directions."""

    spec: Literal["migration"]
    name: str = Field(pattern=r"^v[0-9]+_v[0-9]+$")
    title: str
    doc: str
    records: str = Field(description="The versioned records spec of the metadata.")
    layout: str = Field(description="The layout spec of the archives.")
    source: int = Field(alias="from", description="The older version.")
    target: int = Field(alias="to", description="The newer version (the next one).")
    losses: list[MigrationLoss] = Field(default_factory=list)
    derivations: list[MigrationDerivation] = Field(default_factory=list)
    refusals: list[MigrationRefusal] = Field(default_factory=list)
    metadata: list[MigrationItem] = Field(default_factory=list, description="Operations on the metadata document.")
    layout_ops: list[MigrationItem] = Field(default_factory=list, alias="files",
                                            description="Operations on the archive members (by layout entry).")


class VerdictName(Strict):
    name: str = Field(pattern=IDENT)
    doc: str


class FactSpec(Strict):
    name: str = Field(pattern=IDENT)
    type: Literal["int", "str", "list"]
    doc: str
    derive: str | None = Field(None, description="A fact defined over other facts (the expression language): "
                               "the generator writes the expression where a condition names the fact, so the part's "
                               "facts do not carry it.")


class TestSpec(Strict):
    name: str = Field(pattern=IDENT)
    argument: str | None = Field(None, description="What the test's argument is; None: it takes none.")
    doc: str


class SubjectSpec(Strict):
    name: str = Field(pattern=IDENT)
    doc: str
    facts: list[FactSpec] = Field(default_factory=list, description="Values a rule's `when` names.")
    tests: list[TestSpec] = Field(default_factory=list,
                                  description="Named tests the engine implements, for rules that `require` one.")


class ReaderSpec(Strict):
    name: str = Field(pattern=IDENT)
    source: str = Field(description="Where its code lives.")
    commit: str = Field(description="The commit that made it read the artifact.")
    general: bool = Field(description="Whether it counts for the top-level verdict.")
    since: str | None = None
    until: str | None = None
    doc: str

    _v_since = field_validator("since", "until")(classmethod(lambda cls, v: _check_version(v)))


class WithoutReaderSpec(Strict):
    since: str | None = None
    until: str | None = None
    verdict: str
    reason: str = Field(description="{version}, {first} and {last} (the readers' first and past-last versions) are filled in.")
    evidence: str

    _v_since = field_validator("since", "until")(classmethod(lambda cls, v: _check_version(v)))


class RuleSpec(Strict):
    id: str = Field(pattern=r"^[a-z0-9_]+(\.[a-z0-9_-]+)+$")
    readers: list[str] | None = Field(None, description="The declared readers whose code the rule describes.")
    subject: str
    when: str | None = Field(None, description="Condition over the subject's facts (the spec's expression language).")
    requires: str | None = Field(None, description="A test of the subject that the part must pass (else the rule holds).")
    argument: str | None = Field(None, description="The test's argument.")
    since: str | None = Field(None, description="First reader version the rule applies to.")
    until: str | None = Field(None, description="First reader version it no longer applies to.")
    writer_since: str | None = Field(None, description="First writer version the rule applies to.")
    writer_until: str | None = Field(None, description="First writer version it no longer applies to.")
    verdict: str
    machine: str | None = Field(None, description="A condition on the reading machine under which the verdict "
                                  "holds (e.g. 'without CUDA'); the verdict's headline names it.")
    reason: str = Field(description="What the reader does; {fact} placeholders are filled in.")
    evidence: str = Field(description="TVM commits, `src vX.Y`, or `observed 0.25/0.26/0.27`.")

    _v_since = field_validator("since", "until", "writer_since", "writer_until")(
        classmethod(lambda cls, v: _check_version(v)))


class VerdictsSpec(Strict):
    """spec: verdicts — rules that tell what a reader version does with an artifact."""

    spec: Literal["verdicts"]
    name: str = Field(pattern=IDENT)
    title: str
    doc: str
    verdicts: list[VerdictName]
    readers: list[ReaderSpec] = Field(default_factory=list,
                                      description="Several readers per version, each with its own verdict; none: one.")
    without_reader: list[WithoutReaderSpec] = Field(default_factory=list,
                                                    description="What a version in which no declared reader exists gets.")
    subjects: list[SubjectSpec]
    rules: list[RuleSpec]


SPEC_KINDS: dict[str, type[BaseModel]] = {
    "binary": BinarySpec,
    "eras": ErasSpec,
    "table": TableSpec,
    "records": RecordsSpec,
    "timeline": TimelineSpec,
    "layout": LayoutSpec,
    "findings": FindingsSpec,
    "migration": MigrationSpec,
    "verdicts": VerdictsSpec,
}
