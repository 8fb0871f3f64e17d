"""The C header of the compiled .params walker (``generated/params_walker.h``): the constants
``mlf_spec/params/_walker.c`` reads the headers with, taken from the spec rather than written
there by hand: the two magics, the ndim bound, the byte offsets of the fixed part of the file
header and of a tensor record's header (spec/binary/params.yaml, tensor.yaml) and the read
windows (spec/tables/params_read_windows.yaml, which the Python index reader also takes)."""

from __future__ import annotations

from .code import header
from .fields.base import value_kind
from .model import Model, RStruct


def _offsets(struct: RStruct, prefix: str, at: int) -> tuple[list[tuple[str, int, int]], int, str]:
    """(name, offset, size) of each scalar of the fixed part of ``struct`` (inline structs
    flattened, ``device_type`` for ``device.device_type``), the offset where it ends and the
    name of the first field that is not fixed (an array, a vec or bytes)."""
    out: list[tuple[str, int, int]] = []
    for f in struct.fields:
        if f.conditional or f.is_array:
            return out, at, f.name
        nested, size = value_kind(f).nested(f), value_kind(f).fixed_size(f)
        if nested is None and size is not None:  # a scalar
            out.append((prefix + f.name, at, size))
            at += size
        elif nested is not None and nested.inline:
            inner, at, _ = _offsets(nested, "", at)
            # the generated records' names: device.device_type is device_type, dtype.code dtype_code
            out += [(n if n.startswith(f.name + "_") else f"{f.name}_{n}", o, k) for n, o, k in inner]
        else:
            return out, at, f.name
    return out, at, ""


def _const(struct: RStruct, name: str) -> int:
    value = next(f.spec.const for f in struct.fields if f.name == name)
    assert isinstance(value, int)
    return value


def emit_walker_header(model: Model) -> str:
    """C source of ``params_walker.h``."""
    params, tensor = model.binaries["params"], model.binaries["tensor"]
    pfile, record = params.structs["params_file"], tensor.structs["tensor_record"]
    windows, windows_doc = model.tables["params_read_windows"]
    ndim = next(f for f in record.fields if f.name == "ndim")
    low, high = ndim.exprs["constraint"].int_bounds("ndim")
    assert low == 0 and high is not None
    file_fields, names_at, first_open = _offsets(pfile, "", 0)
    assert first_open == "names"
    rec_fields, fixed, after = _offsets(record, "", 0)
    assert after == "shape"
    docs = [params.doc, tensor.doc, windows_doc]
    lines = [header(model, docs, comment="//").rstrip("\n"),
             "/* The constants of the compiled .params walker (mlf_spec/params/_walker.c), from the spec. */",
             "#ifndef MLF_SPEC_PARAMS_WALKER_H", "#define MLF_SPEC_PARAMS_WALKER_H", "",
             f"#define PARAMS_MAGIC 0x{_const(pfile, 'magic'):x}ULL  /* params_file.magic */",
             f"#define TENSOR_MAGIC 0x{_const(record, 'magic'):x}ULL  /* tensor_record.magic */",
             f"#define MAX_NDIM {high}  /* tensor_record.ndim: {ndim.exprs['constraint'].source} */", "",
             "/* Byte offsets in the file header (names: its u64 count, then the names) */"]
    for name, at, _ in file_fields:
        lines.append(f"#define FILE_{name.upper()} {at}")
    lines.append(f"#define FILE_NAMES {names_at}")
    lines += ["", "/* Byte offsets in a tensor record's header; FIXED: the shape starts there */"]
    for name, at, _ in rec_fields:
        lines.append(f"#define REC_{name.upper()} {at}")
    lines.append(f"#define FIXED {fixed}")
    lines += ["", "/* Read windows (spec/tables/params_read_windows.yaml); a build may override the #ifndef ones */"]
    for row in windows.rows:
        if row["reader"] == "python":
            continue
        lines += [f"#ifndef {row['id'].upper()}", f"#define {row['id'].upper()} {row['bytes']}", "#endif"]
    lines += ["", "#endif", ""]
    return "\n".join(lines)
