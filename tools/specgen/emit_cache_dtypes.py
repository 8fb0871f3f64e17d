"""The page of the dtype strings a tensor cache record may hold (generated/docs/cache_dtypes.md),
from the DLDataType table (spec/tables/dtype_codes.yaml): the grammar the reference reads
(mlf_spec.cache.dtypes.parse) and, per spelling, which index names and loaders take it."""

from __future__ import annotations

from typing import Any

from .common import header
from .model import Model

_V1 = ((0, 16), (0, 22))  # ndarray-cache.json: the loaders of 0.16 to 0.21
_V2 = ((0, 22), None)  # tensor-cache.json: from 0.22


def _v(text: Any) -> tuple[int, ...] | None:
    return None if text in (None, "") else tuple(int(p) for p in str(text).split("."))


def _overlaps(row: dict, lo: tuple[int, ...], hi: tuple[int, ...] | None) -> bool:
    since, until = _v(row.get("since")), _v(row.get("until"))
    return (until is None or until > lo) and (hi is None or since is None or since < hi)


def _python(row: dict) -> str:
    """What TVM's Python loader does: np.frombuffer(dtype=<the spelling>) reads it only where the
    spelling is a NumPy / ml_dtypes name of the same width (bfloat16 and two float8 it special-cases)."""
    spelling, numpy = row["spelling"], row.get("numpy")
    widths = row.get("numpy_bits") or ([row["bits"]] if row.get("bits") else [])
    if numpy is None:
        return "fails (no NumPy type)"
    if spelling == "bfloat{bits}":
        return "reads `bfloat16` (special-cased)"
    if spelling in ("e4m3_float8", "e5m2_float8"):
        return "reads (mapped to ml_dtypes)"
    if numpy == spelling:
        return "reads" + (f" widths {', '.join(map(str, widths))}" if "{bits}" in spelling else "")
    return "fails (np.frombuffer: unknown name)"


def emit_cache_dtypes(model: Model) -> str:
    """The page's Markdown."""
    spec, doc = model.tables["dtype_codes"]
    out = ["<!-- " + line.lstrip("# ") + " -->" for line in header(model, [doc]).splitlines()]
    out += ["", "# Dtype strings of a tensor cache record", "",
            "The `dtype` of a tensor record is a string that TVM's DataType parser reads (tvm-ffi's "
            "`StringToDLDataType` from 0.21, `String2DLDataType` before). The reference reading "
            "(`mlf_spec.cache.dtypes.parse`) follows the C++ loader's parser, the one every loader runs "
            "(the Python loader calls `tvm.runtime.empty(shape, dtype)` first, the web runtime runs it "
            "compiled to WebAssembly), restricted to the spellings of the TVM versions that read the "
            "index's name. Generated from the DLDataType table (dtype_codes).", "",
            "## Grammar", "",
            "- `<spelling><bits>[x<lanes>]`, the spelling one of the table below; `bits` and `lanes` are "
            "decimal digits and **leading zeros are allowed** (`int08` is int8, `float16x02` float16x2, "
            "`float32x01` float32: the parser reads digits as strtoul does; observed 0.27).",
            "- `bits` 1 to 255 (DLDataType.bits is a uint8: `int256` is refused, \"Bits value 256 is out of range "
            "for uint8_t\"); `lanes` 1 to 65535 (a uint16: `int8x65536` is refused; `x0` is refused, \"Lanes "
            "must be a positive integer\"). A number of more than 6 significant digits is past both bounds "
            "(the reference never converts thousands of digits).",
            "- `x1` is one lane: `float32x1` is float32 (the C++ loader decodes it under f32-to-bf16, since it "
            "compares the parsed type; the Python loader refuses it: np.frombuffer does not know the name).",
            "- `handle` takes bits and lanes as any spelling does, 64 bits when none are given: `handle` and "
            "`handle64` are (3, 64, 1), `handle32` (3, 32, 1), `handlex2` (3, 64, 2) (String2DLDataType in "
            "0.16, tvm-ffi's StringToDLDataType in 0.27: the C++ loader loads all of them, observed 0.27; "
            "TVM prints each as `handle`). `handle0`, `handle256`, `handlex0` are refused (bits 0 is past "
            "the bound, as `int0` is). A handle has no NumPy type (the reading hashes its stored bytes; the "
            "Python loader refuses it: `tensor.dtype-numpy`).",
            "- The empty string and `void` are the void type (3, 0, 0): no stored bytes whatever the shape "
            "(nbytes 0). Both parsers read it so (`s.length() == 0 || s == \"void\"` in 0.16; tvm-ffi 0.27's "
            "`dtype(\"\")` is (3, 0, 0)) and the C++ loader of 0.27 loads it (observed); 0.16 refuses it at "
            "allocation (NDArray::Empty's VerifyDataType: lanes >= 1, src/runtime/ndarray.cc); the Python loader "
            "refuses it (np.frombuffer: \"data type '' not understood\"): `tensor.dtype-numpy`. `voidx2` is "
            "refused.",
            "- `complex64`, `complex128` and `custom[...]` are refused (`tensor.dtype`): TVM never gave complex "
            "a spelling (\"unknown dtype `complex64`\", observed 0.27), custom types are named at run time.",
            "- A spelling without bits (`float`, `int`, `int0`, `uintx2`) is refused by the reference "
            "(`tensor.dtype`, as by the Python loader); the C++ parser reads it at its default width (32; "
            "bfloat 16): the verdict rules say so (cache_read_rules).",
            "- A spelling is accepted in an index when some TVM version that reads that index name parses it: "
            "`ndarray-cache.json` is read by 0.16 to 0.21, `tensor-cache.json` from 0.22, an index of another "
            "name by any of them. Its width and NumPy type are the newest row's (`bool` is one byte).",
            "- The Python loader reads a spelling only when np.frombuffer knows it as that type: other "
            "spellings are accepted with the warning `tensor.dtype-numpy`.", "",
            "## Spellings by version and loader", "",
            "| spelling | code | bits | TVM versions | `ndarray-cache.json` | `tensor-cache.json` | "
            "Python loader | C++ loader | web runtime (0.27) | 0.16 |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for row in spec.rows:
        if row.get("code_max") is not None or not row.get("tvm_named"):
            continue
        spelling = row["spelling"].replace("{bits}", "<bits>")
        if row["kind"] == "handle":  # the parser reads bits and lanes after it (the printer prints neither)
            spelling += "[<bits>][x<lanes>]"
        elif row.get("spells_lanes"):
            spelling += "[x<lanes>]"
        since, until = row.get("since"), row.get("until")
        span = f"{since or '…'} to {until} (excl.)" if until else f"{since or 'all'} on" if since else "all"
        v1 = "yes" if _overlaps(row, *_V1) else "no"
        v2 = "yes" if _overlaps(row, *_V2) else "no"
        live = until is None
        in016 = _overlaps(row, (0, 16), (0, 17))
        bits = "64 or any" if row["kind"] == "handle" else row.get("bits") or "any"
        out.append(f"| `{spelling}` | {row['code']} | {bits} | {span} | {v1} | {v2} | "
                   f"{_python(row)} | {'parses' if _overlaps(row, (0, 16), None) else 'no'} | "
                   f"{'parses' if live else 'no'} | {'parses' if in016 else 'no'} |")
    out += ["", "The TVM versions are the table's `since`/`until` (a range ends before `until`); the loaders' "
            "columns say whether the parser of that loader takes the spelling (the web runtime's JavaScript does "
            "not parse dtypes: its WebAssembly half does, built from 0.27). What each version then does with the "
            "bytes (sizes, sub-byte layouts) is in cache_read_rules and dtype_codes.", ""]
    return "\n".join(out)
