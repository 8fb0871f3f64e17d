"""libFuzzer dictionaries: the tokens of each format (magic numbers, keys, kinds, names).

libFuzzer inserts dictionary entries into inputs during byte-level mutation; the tokens
come from the spec and the models, so they follow the formats as they change.
"""

from __future__ import annotations

import struct
from pathlib import Path


def _u64(v: int) -> bytes:
    return struct.pack("<Q", v)


def _quoted(words: list[str]) -> list[bytes]:
    return [b'"' + w.encode("utf-8", "surrogatepass") + b'"' for w in words]


def words(seed_set: str) -> list[bytes]:
    """Tokens for the targets fed from the seed set ``seed_set`` (see :data:`seeds.SEEDS`)."""
    from mlf_spec.generated import params_ir

    from . import format_mutators

    out: list[bytes] = []
    magic = [_u64(v) for v in params_ir.CONSTANTS.values()]
    if seed_set in ("params", "blob", "payload", "container"):
        out += magic + [_u64(0), _u64(1), _u64(0xFFFFFFFFFFFFFFFF), b"\x01\x00\x00\x00", b"\x02\x20\x01\x00"]
    if seed_set in ("blob", "payload", "container"):
        from mlf_spec.generated import blob_ffi_ir

        out += [_u64(v) for v in blob_ffi_ir.CONSTANTS.values()]
        out += [_u64(len(k)) + k.encode() for k in format_mutators.blob_words()]
    if seed_set == "container":
        from mlf_spec.blob.locate import BLOB_SYMBOLS

        out += [s.encode() for s in BLOB_SYMBOLS] + [b"\x7fELF", b"unsigned char", b"ustar\x0000", b"BZh91AY&SY",
                                                     b"\x1f\x8b\x08", b"\xfd7zXZ\x00", b".symtab", b".rodata"]
    if seed_set == "npz":
        out += [b"PK\x03\x04", b"PK\x01\x02", b"PK\x05\x06", b"\x93NUMPY\x01\x00", b"\x93NUMPY\x02\x00", b".npy",
                b"'descr': ", b"'fortran_order': ", b"'shape': ", b"<f4", b"|u1", b"__mlf_spec__", b'"stored"',
                b'"order"', b'"shapes"', b'"numpy"', b'"code"', b'"bits"', b'"lanes"']
    if seed_set == "graph":
        out += _quoted(format_mutators.graph_words())
    if seed_set in ("metadata", "archive", "migration"):
        out += _quoted(format_mutators.metadata_words())
    if seed_set in ("archive", "migration"):
        out += [p.encode() for p in format_mutators.layout_paths()] + [b"ustar\x0000", b"ustar  \x00", b"././@PaxHeader",
                                                               b"././@LongLink", b"path=", b"size=", b"mtime="]
        out += magic + _quoted(format_mutators.graph_words())
    if seed_set == "cache":
        from mlf_spec.cache.fuzz_target import words as cache_words

        out += _quoted(cache_words()) + [b"ustar  \x00", b"params_shard_0.bin", b"tensor-cache.json"]
    return list(dict.fromkeys(out))


def render(tokens: list[bytes]) -> str:
    """The tokens in libFuzzer's dictionary syntax (``kw<i>="..."`` with ``\\xNN`` escapes)."""
    lines = []
    for i, tok in enumerate(tokens):
        esc = "".join(chr(b) if 0x20 <= b < 0x7F and b not in (0x22, 0x5C) else f"\\x{b:02x}" for b in tok)
        lines.append(f'kw{i}="{esc}"')
    return "\n".join(lines) + "\n"


def write(target_name: str, path: str | Path) -> Path:
    """Write the dictionary of a target to ``path``."""
    from . import targets

    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(render(words(targets.TARGETS[target_name].seeds)), "ascii")
    return p


__all__ = ["render", "words", "write"]
