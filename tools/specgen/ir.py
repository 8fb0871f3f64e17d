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
    value: int
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
    type: Literal["int", "str", "bool", "int_list", "int_or_null", "str_or_null", "int_list_or_null"]
    doc: str


class TableSpec(Strict):
    """spec: table — rows keyed by a value, each valid for a range of TVM versions."""

    spec: Literal["table"]
    name: str = Field(pattern=IDENT)
    title: str
    doc: str
    columns: list[ColumnSpec]
    rows: list[dict[str, Any]]


class RecordField(Strict):
    name: str
    doc: str
    type: str = Field(description="str, int, bool, float, null, any, list[T], map[T], a record name, or T|U.")
    required: bool = True
    const: Any = None
    enum: list[Any] | None = None
    since: str | None = None
    until: str | None = None


class RecordSpec(Strict):
    name: str = Field(pattern=IDENT)
    doc: str
    fields: list[RecordField]
    extra: Literal["forbid", "allow"] = "forbid"


class RecordsSpec(Strict):
    """spec: records — JSON documents as typed records (models and JSON Schemas)."""

    spec: Literal["records"]
    name: str = Field(pattern=IDENT)
    title: str
    doc: str
    root: str
    records: list[RecordSpec]


SPEC_KINDS: dict[str, type[BaseModel]] = {
    "binary": BinarySpec,
    "eras": ErasSpec,
    "table": TableSpec,
    "records": RecordsSpec,
}
