"""Structure-aware mutation of the containers a module blob lives in: C source
(``devc.c``) and ELF objects and shared libraries.

* :class:`CSourceMutator` finds the blob arrays (``[const] unsigned char <name>[N] = {...};``)
  and changes one thing: the blob itself (decoded, mutated by the blob mutator, written back
  in one of TVM's styles), the declared count, one element, the symbol name, the closing
  brace or semicolon; or it repeats the array to make it very long.
* :class:`ElfMutator` writes one field of the ELF header, of a section header or of a blob
  symbol's entry wrong in place (section tables that lie about offsets, sizes, counts,
  links and types), or mutates the blob bytes where they sit.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from mlf_spec.blob import locate as _locate

from .mutators import Mutator, ParseCache, pick_int

_ARRAY = re.compile(
    rb"(?P<decl>(?:const\s+)?(?:unsigned\s+)?char\s+(?P<name>[A-Za-z_0-9]*__tvm_[A-Za-z_0-9]+)\s*)"
    rb"\[(?P<count>[^\]\[]*)\](?P<mid>\s*=\s*)\{(?P<body>[^}]*)\}(?P<end>\s*;)")
_ELEMENT = re.compile(rb"[^,\s]+")
_BAD_ELEMENTS = (b"0x100", b"-129", b"'a'", b"", b"0x", b"1e3", b"0xFFFFFFFFFFFFFFFFFFFF", b"09", b"+", b"x")


@dataclass
class _Array:
    match: re.Match[bytes]
    data: bytes | None  # the decoded bytes, None if an element is not a plain integer


def _decode(body: bytes) -> bytes | None:
    out = bytearray()
    for tok in _ELEMENT.findall(body):
        try:
            v = int(tok, 0)
        except ValueError:
            return None
        if not -128 <= v <= 255:
            return None
        out.append(v & 0xFF)
    return bytes(out)


def _parse_c(data: bytes) -> list[_Array] | None:
    arrays = [_Array(m, _decode(m["body"])) for m in _ARRAY.finditer(data)]
    return arrays or None


class CSourceMutator:
    """Mutate C sources holding blob arrays; ``blob`` mutates the decoded blob bytes."""

    def __init__(self, blob: Mutator | None = None) -> None:
        self.blob = blob
        self.parse = ParseCache(_parse_c, size=32)

    def mutate(self, data: bytes, rng: random.Random) -> bytes | None:
        """A variant of ``data`` with one thing about one blob array changed."""
        arrays = self.parse(data)
        if not arrays:
            return None
        a = rng.choice(arrays)
        m = a.match
        op = rng.randrange(8)
        if op in (0, 1) and self.blob is not None and a.data is not None:
            new = self.blob.mutate(a.data, rng)
            if new is None:
                return None
            count = str(len(new)).encode() if rng.random() < 0.9 else str(len(new) + rng.choice((-1, 1))).encode()
            return data[:m.start("count")] + count + m["mid"] + b"{" + _render(new, rng) + b"}" + data[m.end("end"):]
        if op == 2:
            n = len(_ELEMENT.findall(m["body"]))
            count = rng.choice((b"", b"0", str(n + 1).encode(), str(max(0, n - 1)).encode(), b"N", b"0x10",
                                b"99999999999999999999", b"-1"))
            return data[:m.start("count")] + count + data[m.end("count"):]
        if op == 3:
            toks = list(_ELEMENT.finditer(m["body"]))
            if not toks:
                return None
            t = rng.choice(toks)
            at = m.start("body") + t.start()
            return data[:at] + rng.choice(_BAD_ELEMENTS) + data[m.start("body") + t.end():]
        if op == 4:
            name = rng.choice(_locate.BLOB_SYMBOLS)
            prefix = rng.choice((b"", b"sys_", b"__tvm_", b"0"))
            return data[:m.start("name")] + prefix + name.encode() + data[m.end("name"):]
        if op == 5:
            cut = rng.choice((m.end("body"), m.end("end") - 1, m.start("body") + len(m["body"]) // 2))
            return data[:cut] + data[cut + 1:]
        if op == 6:
            return data + b"\n" + m.group(0)  # a second definition
        if a.data is None or len(a.data) < 8:
            return None
        # a size prefix that lies about the body
        nbytes = pick_int(rng, len(a.data) - 8, 64, False, [len(a.data), len(a.data) - 7])
        new = nbytes.to_bytes(8, "little") + a.data[8:]
        return data[:m.start("body")] + _render(new, rng) + data[m.end("body"):]


def _render(blob: bytes, rng: random.Random) -> bytes:
    """The initializer of ``blob`` in one of TVM's styles (padded hex twenty per line, or
    unpadded), sometimes in decimal or with comments."""
    r = rng.random()
    if r < 0.6:
        lines = ("\n  " + "".join(f"0x{b:02x}," for b in blob[i:i + 20]) for i in range(0, len(blob), 20))
        return ("".join(lines) + "\n").encode()
    if r < 0.85:
        return ("\n  " + ",".join(f"0x{b:x}" for b in blob) + "\n").encode()
    if r < 0.95:
        return (", ".join(str(b) for b in blob)).encode()
    return ("/* c */ " + ",// x\n".join(f"0{b:o}" if b else "0" for b in blob)).encode()


# ----------------------------------------------------------------- ELF

@dataclass
class _ElfLayout:
    is64: bool
    endian: str
    shoff: int
    shentsize: int
    shnum: int
    sections: list[tuple[int, int, int, int, int, int]]  # header offset, type, offset, size, link, entsize
    symbols: list[int]  # file offsets of blob symbol entries
    blobs: list[tuple[int, int]]  # (file offset, length) of located blobs


_EHDR = {True: {"e_type": (16, 2), "e_shoff": (40, 8), "e_shentsize": (58, 2), "e_shnum": (60, 2),
                "e_shstrndx": (62, 2), "e_phoff": (32, 8), "e_phnum": (56, 2)},
         False: {"e_type": (16, 2), "e_shoff": (32, 4), "e_shentsize": (46, 2), "e_shnum": (48, 2),
                 "e_shstrndx": (50, 2), "e_phoff": (28, 4), "e_phnum": (44, 2)}}
_SHDR = {True: {"sh_name": (0, 4), "sh_type": (4, 4), "sh_flags": (8, 8), "sh_addr": (16, 8), "sh_offset": (24, 8),
                "sh_size": (32, 8), "sh_link": (40, 4), "sh_info": (44, 4), "sh_entsize": (56, 8)},
         False: {"sh_name": (0, 4), "sh_type": (4, 4), "sh_flags": (8, 4), "sh_addr": (12, 4), "sh_offset": (16, 4),
                 "sh_size": (20, 4), "sh_link": (24, 4), "sh_info": (28, 4), "sh_entsize": (36, 4)}}
_SYM = {True: {"st_name": (0, 4), "st_info": (4, 1), "st_other": (5, 1), "st_shndx": (6, 2), "st_value": (8, 8),
               "st_size": (16, 8)},
        False: {"st_name": (0, 4), "st_value": (4, 4), "st_size": (8, 4), "st_info": (12, 1), "st_other": (13, 1),
                "st_shndx": (14, 2)}}


def _parse_elf(data: bytes) -> _ElfLayout | None:
    if data[:4] != b"\x7fELF" or len(data) < 64:
        return None
    is64 = data[4] == 2
    endian = "<" if data[5] == 1 else ">"

    def num(off: int, size: int) -> int:
        return int.from_bytes(data[off:off + size], "little" if endian == "<" else "big")

    h = _EHDR[is64]
    shoff, shentsize, shnum = num(*h["e_shoff"]), num(*h["e_shentsize"]), num(*h["e_shnum"])
    sections = []
    s = _SHDR[is64]
    if shentsize and shoff + shnum * shentsize <= len(data):
        for i in range(min(shnum, 256)):
            at = shoff + i * shentsize
            sections.append((at, num(at + s["sh_type"][0], 4), num(at + s["sh_offset"][0], s["sh_offset"][1]),
                             num(at + s["sh_size"][0], s["sh_size"][1]), num(at + s["sh_link"][0], 4),
                             num(at + s["sh_entsize"][0], s["sh_entsize"][1])))
    symbols = []
    names = tuple(n.encode() for n in _locate.BLOB_SYMBOLS)
    for _at, stype, off, size, link, entsize in sections:
        if stype not in (2, 11) or not entsize or link >= len(sections) or off + size > len(data):
            continue
        str_off, str_size = sections[link][2], sections[link][3]
        for k in range(min(size // entsize, 4096)):
            e = off + k * entsize
            name_at = str_off + num(e + _SYM[is64]["st_name"][0], 4)
            if name_at < str_off + str_size:
                end = data.find(b"\0", name_at, str_off + str_size)
                if data[name_at:end if end >= 0 else name_at + 64].endswith(names):
                    symbols.append(e)
    try:
        blobs = [(b.file_offset, len(b.data)) for b in _locate.locate_blobs(data, kind="elf")
                 if b.file_offset is not None]
    except Exception:
        blobs = []
    return _ElfLayout(is64, endian, shoff, shentsize, shnum, sections, symbols, blobs)


class ElfMutator:
    """Mutate ELF files: lying header, section and blob-symbol fields, or the blob bytes
    in place (``blob`` mutates them; a longer result is cut to the room there is)."""

    def __init__(self, blob: Mutator | None = None) -> None:
        self.blob = blob
        self.parse = ParseCache(_parse_elf, size=16)

    def mutate(self, data: bytes, rng: random.Random) -> bytes | None:
        """A variant of ``data`` with one field written wrong, or the blob changed."""
        e = self.parse(data)
        if e is None:
            return None
        r = rng.random()
        if r < 0.3 and self.blob is not None and e.blobs:
            off, n = rng.choice(e.blobs)
            new = self.blob.mutate(data[off:off + n], rng)
            if new is None:
                return None
            new = new[:n] + bytes(max(0, n - len(new)))
            return data[:off] + new + data[off + n:]
        if r < 0.45 or not e.sections:
            name, (off, size) = rng.choice(list(_EHDR[e.is64].items()))
            base = 0
        elif r < 0.8 or not e.symbols:
            base = rng.choice(e.sections)[0]
            name, (off, size) = rng.choice(list(_SHDR[e.is64].items()))
        else:
            base = rng.choice(e.symbols)
            name, (off, size) = rng.choice(list(_SYM[e.is64].items()))
        at = base + off
        if at + size > len(data):
            return None
        order = "little" if e.endian == "<" else "big"
        old = int.from_bytes(data[at:at + size], order)
        context = [len(data), len(data) - 1, e.shnum, e.shnum + 1, 0xFFF1, 0xFFF2, 0xFFFF, 0x800, 8, 11, 2, 9, 4]
        context += [s[2] for s in e.sections] + [b[0] for b in e.blobs] + [b[1] for b in e.blobs]
        new = pick_int(rng, old, 8 * size, False, context)
        return data[:at] + new.to_bytes(size, order) + data[at + size:]


def elf_header(data: bytes) -> bool:
    """Whether ``data`` starts like an ELF file."""
    return data[:4] == b"\x7fELF"


def c_source(data: bytes) -> bool:
    """Whether ``data`` looks like C text holding a blob array."""
    return b"__tvm_" in data and b"\0" not in data[:4096]


__all__ = ["CSourceMutator", "ElfMutator", "c_source", "elf_header"]
