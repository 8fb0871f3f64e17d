"""Module blob facts as the spec states them (spec/tables/blob_facts.yaml, generated as
``mlf_spec.generated.blob_facts_table``): the blob symbols with their layouts, since/until
and system-lib registration functions, the context symbols TVM's host code generator
defines, the C-source styles of ``PackImportsToC`` and the member names of an
``export_library`` tar. Kept at the package base, importing nothing but the generated table,
so that sniffing (which every command may do) reads the same facts as the blob codec.
"""

from __future__ import annotations

import re

from mlf_spec.generated import blob_facts_table as _table

Version = tuple[int, ...]


def _rows(kind: str) -> list[dict]:
    return [r for r in _table.ROWS if r["kind"] == kind]


def _newest_first(rows: list[dict]) -> list[dict]:
    return sorted(rows, key=lambda r: r["since"], reverse=True)


_SYMBOL_ROWS = _rows("blob-symbol")
_BY_ID = {r["id"]: r for r in _table.ROWS}

SYMBOL_LEGACY: str = _BY_ID["symbol-legacy"]["value"]
SYMBOL_FFI_V021: str = _BY_ID["symbol-ffi-v021"]["value"]
SYMBOL_FFI: str = _BY_ID["symbol-ffi"]["value"]

#: Every blob symbol, longest first (suffix matching picks the most specific name).
BLOB_SYMBOLS: tuple[str, ...] = tuple(sorted((r["value"] for r in _SYMBOL_ROWS), key=len, reverse=True))
BLOB_SYMBOL_BYTES: tuple[bytes, ...] = tuple(s.encode() for s in BLOB_SYMBOLS)
#: The body layout TVM releases write under each blob symbol.
SYMBOL_LAYOUT: dict[str, str] = {r["value"]: r["layout"] for r in _SYMBOL_ROWS}
#: The function a system library registers the blob with, by blob symbol.
REGISTRATION: dict[str, str] = {r["value"]: r["registration"] for r in _SYMBOL_ROWS}

#: The symbols whose definition shows that TVM's host code generator wrote an ELF file.
CONTEXT_SYMBOLS: tuple[bytes, ...] = tuple(r["value"].encode() for r in _newest_first(_rows("context-symbol")))
#: The prefix of the functions a tvm-ffi library exports.
FFI_FUNCTION_PREFIX: bytes = _BY_ID["ffi-function"]["value"].encode()

_STYLE_ROWS = _newest_first(_rows("c-style"))
#: The C-source styles of PackImportsToC, newest first.
C_SOURCE_STYLES: tuple[str, ...] = tuple(r["value"] for r in _STYLE_ROWS)
#: Per style: the array's element type and whether hex values are zero-padded (``0x%02x,``).
C_STYLE_TYPE: dict[str, str] = {r["value"]: r["c_type"] for r in _STYLE_ROWS}
C_STYLE_PADDED: dict[str, bool] = {r["value"]: r["hex"] == "padded" for r in _STYLE_ROWS}

_MEMBERS = _rows("export-member")
_LIB = "|".join(r["value"] for r in _MEMBERS if not r["value"].startswith("devc"))
_DEVC = "|".join(r["value"] for r in _MEMBERS if r["value"].startswith("devc"))
#: The member names of an export_library tar (a system-lib prefix ``<prefix>_`` may come before devc).
EXPORT_MEMBER = re.compile(rf"(?:{_LIB}|(?:\w+_)?(?:{_DEVC}))")
#: The member that carries the blob, whatever comes before ``devc``.
DEVC_MEMBER = re.compile(rf".*(?:{_DEVC})")


def symbol_at(layout: str, version: Version) -> str:
    """The blob symbol TVM ``version`` exports a ``layout`` blob under (the newest symbol of
    that layout when no release wrote it at that version)."""
    rows = [r for r in _newest_first(_SYMBOL_ROWS) if r["layout"] == layout]
    for r in rows:
        if r["since"] <= version and (r["until"] is None or version < r["until"]):
            return str(r["value"])
    return str(rows[0]["value"] if version >= rows[0]["since"] else rows[-1]["value"])


__all__ = ["BLOB_SYMBOLS", "BLOB_SYMBOL_BYTES", "CONTEXT_SYMBOLS", "C_SOURCE_STYLES", "C_STYLE_PADDED",
           "C_STYLE_TYPE", "DEVC_MEMBER", "EXPORT_MEMBER", "FFI_FUNCTION_PREFIX", "REGISTRATION", "SYMBOL_FFI",
           "SYMBOL_FFI_V021", "SYMBOL_LAYOUT", "SYMBOL_LEGACY", "symbol_at"]
