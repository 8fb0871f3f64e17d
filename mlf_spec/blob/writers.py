"""Writing a module blob back out: a raw ``.bin`` file and C source as TVM's ``PackImportsToC``
writes it."""

from __future__ import annotations

import os
import re
from pathlib import Path

from mlf_spec._blob_facts import (
    C_SOURCE_STYLES,
    C_STYLE_PADDED,
    C_STYLE_TYPE,
    REGISTRATION,
    SYMBOL_FFI,
    SYMBOL_LEGACY,
)
from mlf_spec._io import atomic_write_bytes
from mlf_spec.errors import (
    ConstraintError,
)

from .located import PREFIX_SIZE, blob_length


def _check_blob(blob: bytes, what: str) -> None:
    blob_length(blob, len(blob), file=what, field="blob", offset=0, what="the blob")
    nbytes = int.from_bytes(blob[:PREFIX_SIZE], "little")
    if PREFIX_SIZE + nbytes != len(blob):
        raise ConstraintError(
            f"{len(blob) - PREFIX_SIZE - nbytes} bytes follow the body (size prefix says {nbytes})",
            file=what,
            field="blob.trailing",
            offset=PREFIX_SIZE + nbytes,
        )


def write_bin(blob: bytes, path: str | os.PathLike[str], *, overwrite: bool = True) -> None:
    """Write ``blob`` (size prefix + body) to ``path`` atomically (temp file + rename).

    The size prefix must match the length. With ``overwrite=False`` an existing file is left
    alone and :class:`~mlf_spec.errors.OutputExistsError` is raised; a replaced file keeps its
    permission bits.
    """
    data = bytes(blob)
    _check_blob(data, "<blob>")
    atomic_write_bytes(Path(path), data, overwrite=overwrite)


_HEX_PADDED = [f"0x{b:02x}," for b in range(256)]
_HEX_PLAIN = [f"0x{b:x}" for b in range(256)]
_C_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def c_source_for_blob(
    blob: bytes,
    symbol: str = SYMBOL_FFI,
    system_lib_prefix: str | None = None,
    style: str = "current",
    *,
    check: bool = True,
) -> str:
    """Return a C source file defining ``blob`` the way TVM's ``PackImportsToC`` writes it.

    ``style`` selects the era's formatting: ``"current"`` (v0.14+, ``0x%02x,`` twenty per
    line), ``"legacy"`` (v0.4-v0.13, unpadded hex, separators between values) or
    ``"legacy-char"`` (v0.2-v0.3, the same with ``const char``). A ``system_lib_prefix``
    (``""`` for a system library without prefix) names the symbol ``<prefix><symbol>`` and adds
    the registration call TVM emits for system libraries. With ``check`` the blob's size
    prefix must match its length.
    """
    if style not in C_SOURCE_STYLES:
        raise ValueError(f"unknown style {style!r}; expected one of {C_SOURCE_STYLES}")
    if not _C_IDENT.fullmatch(symbol):
        raise ValueError(f"symbol {symbol!r} is not a C identifier")
    if system_lib_prefix and not _C_IDENT.fullmatch(system_lib_prefix):
        raise ValueError(f"system_lib_prefix {system_lib_prefix!r} is not a C identifier prefix")
    blob = bytes(blob)
    if check:
        _check_blob(blob, "<blob>")
    elif len(blob) < PREFIX_SIZE:
        raise ValueError("a blob needs at least its 8-byte size prefix")
    name = (system_lib_prefix or "") + symbol
    ctype = C_STYLE_TYPE[style]
    parts = [
        "#ifdef _WIN32\n#define TVM_EXPORT __declspec(dllexport)\n#else\n#define TVM_EXPORT\n#endif\n",
        '#ifdef __cplusplus\nextern "C" {\n#endif\n',
        f"TVM_EXPORT extern {ctype} {name}[];\n",
        f"{ctype} {name}[{len(blob)}] = {{",
    ]
    if C_STYLE_PADDED[style]:
        for i in range(0, len(blob), 20):
            parts.append("\n  ")
            parts.append("".join(map(_HEX_PADDED.__getitem__, blob[i : i + 20])))
    else:
        # The prefix goes on the first line, then the body continues it: a line break every
        # 20 values counted from the start of the array, "," between values, none at the end.
        parts.append("\n  ")
        parts.append(",".join(map(_HEX_PLAIN.__getitem__, blob[:PREFIX_SIZE])))
        for i in range(PREFIX_SIZE, len(blob)):
            parts.append(",\n  " if i % 20 == 0 else ",")
            parts.append(_HEX_PLAIN[blob[i]])
    parts.append("\n};\n")
    if system_lib_prefix is not None:
        register = REGISTRATION.get(symbol, REGISTRATION[SYMBOL_LEGACY])
        parts.append(f"extern int {register}(const char*, void*);\n")
        parts.append(f'static int {name}_reg_ = {register}("{name}", (void*){name});\n')
    parts.append("#ifdef __cplusplus\n}\n#endif\n")
    return "".join(parts)
