"""Module blobs in C source: the array ``PackImportsToC`` writes into ``devc.c`` (every era's
formatting), read back into bytes."""

from __future__ import annotations

import re

from mlf_spec._blob_facts import BLOB_SYMBOL_BYTES as _BLOB_SYMBOL_BYTES
from mlf_spec.errors import (
    ConstraintError,
    CountMismatchError,
    MalformedError,
    TruncatedError,
    UnsupportedError,
)

from .located import LocatedBlob, blob_length, line_of, split_blob_symbol

# Comments are blanked (same length, newlines kept) so that offsets stay byte offsets;
# string and character literals are matched only so that "//" inside them is left alone.
_C_LEXEMES = re.compile(
    rb"""//[^\n]*|/\*.*?(?:\*/|\Z)|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'""",
    re.S,
)
# Blob names are found by their literal part (fast even in a huge file); the declaration
# around each is then checked with the two patterns below.
_C_BLOB_NAME = re.compile(rb"(?:" + b"|".join(map(re.escape, _BLOB_SYMBOL_BYTES)) + rb")(?![A-Za-z0-9_])")
_C_TYPE_BEFORE = re.compile(rb"\b(?:char|uint8_t|int8_t)\s+(?:const\s+)?\Z")
_C_ARRAY_AFTER = re.compile(
    rb"""
    \s*\[(?P<count>[^\]\[]*)\]\s*
    (?:__attribute__\s*\(\((?:[^()]|\([^()]*\))*\)\)\s*)*
    """,
    re.X,
)
_C_IDENT_CHARS = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_C_INT = re.compile(
    rb"\s*(?P<sign>[-+]?)\s*(?:0[xX](?P<hex>[0-9a-fA-F]+)|(?P<dec>[1-9][0-9]*)|(?P<oct>0[0-7]*))[uUlL]*\s*"
)


_WS = re.compile(rb"\s*")
_WHITESPACE = b" \t\r\n\v\f"
_SPACE_INSIDE_TOKEN = re.compile(rb"[0-9A-Za-z]\s+[0-9A-Za-z]")
_UNPADDED_HEX = re.compile(rb"\b0[xX]([0-9a-fA-F])\b")


def _hex_initializer_fast(region: bytes) -> bytes | None:
    """Decode an initializer made only of ``0xH`` / ``0xHH`` elements, or return None.

    Every TVM era writes this form, and it is the one that gets big, so it is decoded with
    whole-buffer operations; anything else (other spellings, or an error to report) goes
    through the per-token path.
    """
    if _SPACE_INSIDE_TOKEN.search(region):
        return None
    compact = region.translate(None, _WHITESPACE)
    if not compact.endswith(b","):
        compact += b","
    data = _padded_units(compact)
    if data is None:
        # Eras up to v0.13 did not zero-pad: widen "0xH" to "0x0H" and try again.
        data = _padded_units(_UNPADDED_HEX.sub(rb"0x0\1", compact))
    return data


def _padded_units(compact: bytes) -> bytes | None:
    n, rest = divmod(len(compact), 5)
    if rest or compact[0::5] != b"0" * n or compact[4::5] != b"," * n:
        return None
    if compact[1::5].replace(b"X", b"x") != b"x" * n:
        return None
    digits = bytearray(2 * n)
    digits[0::2] = compact[2::5]
    digits[1::2] = compact[3::5]
    try:
        return bytes.fromhex(digits.decode("ascii"))
    except ValueError:
        return None


def _skip_ws(code: bytes, pos: int) -> int:
    m = _WS.match(code, pos)  # (never None: _WS matches the empty string)
    return m.end() if m is not None else pos


def _blank_comments(text: bytes) -> bytes:
    def repl(m: re.Match[bytes]) -> bytes:
        s = m.group(0)
        if s[:1] != b"/":
            return s
        return re.sub(rb"[^\n]", b" ", s)

    return _C_LEXEMES.sub(repl, text)


def _c_int(token: bytes) -> int | None:
    m = _C_INT.fullmatch(token)
    if m is None:
        return None
    if m["hex"] is not None:
        value = int(m["hex"], 16)
    elif m["dec"] is not None:
        # Python refuses to convert more than 4300 decimal digits (ValueError); anything
        # over 30 digits is out of every range this module checks anyway
        value = int(m["dec"]) if len(m["dec"]) <= 30 else 10**30
    else:
        value = int(m["oct"], 8)
    return -value if m["sign"] == b"-" else value


def parse_c_source(text: bytes | str, *, file: str = "<c-source>") -> list[LocatedBlob]:
    """Return the blobs defined as byte arrays in C source text (``devc.c`` as TVM writes it).

    Each ``[const] [unsigned] char <prefix><blob symbol>[N] = { ... };`` definition gives one
    blob; declarations without an initializer are ignored. The initializer is tokenised, its
    element count checked against ``N`` and its size prefix against its length.
    """
    raw = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    if not any(s in raw for s in _BLOB_SYMBOL_BYTES):
        return []
    code = _blank_comments(raw)
    blobs = []
    for hit in _C_BLOB_NAME.finditer(code):
        begin = hit.start()
        while begin > 0 and code[begin - 1] in _C_IDENT_CHARS:
            begin -= 1
        decl = _C_ARRAY_AFTER.match(code, hit.end())
        if decl is None or _C_TYPE_BEFORE.search(code, max(0, begin - 64), begin) is None:
            continue  # a use of the name (registration call, pointer), not an array
        if code[begin] in b"0123456789":
            continue  # not an identifier (C reads "0__tvm_..." as a malformed number)
        name = code[begin : hit.end()].decode("ascii")
        split = split_blob_symbol(name)
        if split is None:
            continue
        after = decl.end()
        if after >= len(code):
            raise TruncatedError(
                f"line {line_of(raw, begin)}: source ends after the declaration of {name}",
                file=file,
                field=name,
                offset=len(code),
            )
        if code[after : after + 1] != b"=":
            continue  # a declaration (";"), a parameter ("," or ")"): no bytes here
        brace = _skip_ws(code, after + 1)
        if brace >= len(code):
            raise TruncatedError(
                f"line {line_of(raw, after)}: source ends before the initializer of {name}",
                file=file,
                field=name,
                offset=len(code),
            )
        if code[brace : brace + 1] != b"{":
            raise MalformedError(
                f"line {line_of(raw, brace)}: initializer of {name} does not start with '{{'",
                file=file,
                field=name,
                offset=brace,
            )
        blobs.append(_parse_c_initializer(raw, code, decl, name, split, brace, file))
    return blobs


def _parse_c_initializer(
    raw: bytes,
    code: bytes,
    decl: re.Match[bytes],
    name: str,
    split: tuple[str, str],
    brace: int,
    file: str,
) -> LocatedBlob:
    start = brace + 1
    close = code.find(b"}", start)
    if close < 0:
        raise TruncatedError(
            f"line {line_of(raw, brace)}: initializer of {name} has no closing '}}'",
            file=file,
            field=f"{name}.initializer",
            offset=brace,
        )
    semi = _skip_ws(code, close + 1)
    if semi >= len(code):
        raise TruncatedError(
            f"line {line_of(raw, close)}: source ends before ';' after {name}",
            file=file,
            field=f"{name}.initializer",
            offset=len(code),
        )
    if code[semi : semi + 1] != b";":
        raise MalformedError(
            f"line {line_of(raw, semi)}: expected ';' after the initializer of {name}",
            file=file,
            field=f"{name}.initializer",
            offset=semi,
        )
    region = code[start:close]
    data = _hex_initializer_fast(region)
    if data is None:
        data = _initializer(region, raw, start, name, file)
    count_text = decl["count"].strip()
    if count_text:
        declared = _c_int(count_text)
        if declared is None:
            raise UnsupportedError(
                f"line {line_of(raw, decl.start('count'))}: array size {count_text.decode('latin-1')!r} "
                "is not an integer literal",
                file=file,
                field=f"{name}.size",
                offset=decl.start("count"),
            )
        if declared != len(data):
            raise CountMismatchError(
                f"line {line_of(raw, decl.start('count'))}: array {name} is declared with {declared} elements "
                f"but its initializer has {len(data)}",
                file=file,
                field=f"{name}.size",
                offset=decl.start("count"),
            )
    total = blob_length(
        data, len(data), file=file, field=name, offset=start, what=f"array {name} ({len(data)} elements)"
    )
    return LocatedBlob(
        symbol=split[1], prefix=split[0], data=data[:total], source="c-source", file_offset=None
    )


_WINDOW = 1 << 16
_UNSIGNED_DECIMALS = re.compile(rb"[0-9,\s]*")
_LEADING_ZERO = re.compile(rb"(?<![0-9])0[0-9]")  # an octal literal: C reads 010 as 8


def _initializer(region: bytes, raw: bytes, start: int, name: str, file: str) -> bytes:
    """Decode an initializer in any spelling, window by window (a window ends at a comma),
    so that memory stays near the size of the result and a bad element is found by
    checking one window token by token. Plain unsigned decimals take a quick path."""
    out = bytearray()
    pos = index = 0
    n = len(region)
    while pos < n:
        cut = region.find(b",", min(n, pos + _WINDOW))
        end = n if cut < 0 else cut + 1
        window = region[pos:end]
        tokens = window.split(b",")
        if end < n or not tokens[-1].strip():
            tokens.pop()  # what follows the window's last comma (a trailing comma at the very end)
        chunk = None
        if _UNSIGNED_DECIMALS.fullmatch(window) and not _LEADING_ZERO.search(window):
            try:
                chunk = bytes(map(int, tokens))  # ValueError for an empty element or one over 255
            except ValueError:
                chunk = None
        if chunk is None:
            values = [_c_int(t) for t in tokens]
            if None in values or any(not -128 <= v <= 255 for v in values if v is not None):
                _raise_bad_element(raw, tokens, values, start + pos, name, file, index)
            chunk = bytes(v & 0xFF for v in values if v is not None)  # (the check above raised for any None)
        out += chunk
        index += len(tokens)
        pos = end
    return bytes(out)


def _raise_bad_element(
    raw: bytes, tokens: list[bytes], values: list[int | None], start: int, name: str, file: str, first: int = 0
) -> None:
    pos = start
    for index, (token, value) in enumerate(zip(tokens, values, strict=True), first):
        if value is None or not -128 <= value <= 255:
            where = pos + (len(token) - len(token.lstrip()))
            shown = token.strip()[:40].decode("latin-1")
            line = line_of(raw, where)
            if value is None:
                if not shown:
                    msg = f"line {line}: empty element in the initializer of {name}"
                else:
                    msg = f"line {line}: element {shown!r} of {name} is not an integer literal"
                raise MalformedError(msg, file=file, field=f"{name}[{index}]", offset=where)
            raise ConstraintError(
                f"line {line}: element {shown!r} of {name} does not fit in a byte",
                file=file,
                field=f"{name}[{index}]",
                offset=where,
            )
        pos += len(token) + 1
