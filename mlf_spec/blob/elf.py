"""Module blobs in ELF files: shared objects, relocatable objects (``devc.o``) and
executables, found through their symbol tables (``.symtab``, ``.dynsym``)."""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from typing import BinaryIO

import numpy as np
from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile
from elftools.elf.relocation import RelocationSection, RelrRelocationSection
from elftools.elf.sections import Section, SymbolTableIndexSection, SymbolTableSection

from mlf_spec._blob_facts import BLOB_SYMBOL_BYTES as _BLOB_SYMBOL_BYTES
from mlf_spec.errors import (
    ConstraintError,
    LengthError,
    MalformedError,
    MlfError,
    TruncatedError,
    UnsupportedError,
)

from .located import (
    MAX_BLOB_SYMBOLS,
    PREFIX_SIZE,
    LocatedBlob,
    blob_length,
    read_exact,
    split_blob_symbol,
)

# What pyelftools raises on malformed input besides its own ELFError.
_ELF_FAILURES: tuple[type[BaseException], ...] = (
    ELFError,
    struct.error,
    ValueError,
    KeyError,
    IndexError,
    TypeError,
    ArithmeticError,
    EOFError,
    AssertionError,
    OSError,  # a file read by path: seeking to a negative offset from a corrupt header (EINVAL)
)

_SHF_COMPRESSED = 0x800


@contextmanager
def _elf_guard(file: str, field: str, offset: int | None) -> Iterator[None]:
    try:
        yield
    except MlfError:
        raise
    except _ELF_FAILURES as exc:
        raise MalformedError(
            f"unreadable ELF structure: {exc}", file=file, field=field, offset=offset
        ) from exc


def _elf_header_checks(stream: BinaryIO, size: int, label: str) -> bool:
    """Check e_ident and the header extent here, for precise errors; return whether ELF64."""
    stream.seek(0)
    ident = stream.read(16)
    if len(ident) < 6:
        raise TruncatedError("file ends inside e_ident", file=label, field="e_ident", offset=len(ident))
    if ident[4] not in (1, 2):
        raise MalformedError(
            f"EI_CLASS is {ident[4]}, expected 1 or 2", file=label, field="e_ident.EI_CLASS", offset=4
        )
    if ident[5] not in (1, 2):
        raise MalformedError(
            f"EI_DATA is {ident[5]}, expected 1 or 2", file=label, field="e_ident.EI_DATA", offset=5
        )
    is64 = ident[4] == 2
    header_size = 64 if is64 else 52
    if size < header_size:
        raise TruncatedError(
            f"file has {size} bytes, the ELF header needs {header_size}",
            file=label,
            field="elf_header",
            offset=size,
        )
    return is64


def _section_extent_check(sec: Section, index: int, size: int, label: str) -> None:
    if sec["sh_type"] == "SHT_NOBITS":
        return
    end = sec["sh_offset"] + sec["sh_size"]
    if end > size:
        raise TruncatedError(
            f"section {sec.name!r} spans [{sec['sh_offset']}, {end}) but the file has {size} bytes",
            file=label,
            field=f"sections[{index}]({sec.name}).sh_size",
            offset=sec["sh_offset"],
        )


@dataclasses.dataclass
class _Elf:
    """What the ELF helpers share while one file is searched."""

    elf: ELFFile
    sections: list[Section]
    stream: BinaryIO
    size: int
    label: str
    e_type: str
    source: str
    member: str | None


def locate_elf(stream: BinaryIO, size: int, label: str, member: str | None) -> list[LocatedBlob]:
    """The module blobs of the ELF file ``stream`` (``size`` bytes; ``label`` names it in
    errors, ``member`` the tar member it came from), found through its symbol tables."""
    is64 = _elf_header_checks(stream, size, label)
    with _elf_guard(label, "elf_header", 0):
        elf = ELFFile(stream)
        e_type = elf["e_type"]
        shoff = elf["e_shoff"]
        shentsize = elf["e_shentsize"]
    kinds = {"ET_REL": "elf-object", "ET_DYN": "elf-shared-object", "ET_EXEC": "elf-executable"}
    if e_type not in kinds:
        raise UnsupportedError(
            f"ELF type {e_type} cannot hold a module blob", file=label, field="e_type", offset=16
        )
    if shoff == 0:
        raise UnsupportedError(
            "the ELF file has no section headers, so its symbols cannot be looked up",
            file=label,
            field="e_shoff",
            offset=40 if is64 else 32,
        )
    expected_entsize = 64 if is64 else 40
    if shentsize != expected_entsize:
        raise MalformedError(
            f"e_shentsize is {shentsize}, expected {expected_entsize}",
            file=label,
            field="e_shentsize",
            offset=58 if is64 else 46,
        )
    if shoff + shentsize > size:
        raise TruncatedError(
            f"section header table at {shoff} lies beyond the end of the file ({size} bytes)",
            file=label,
            field="e_shoff",
            offset=shoff,
        )
    with _elf_guard(label, "e_shnum", shoff):
        nsec = elf.num_sections()
    if shoff + nsec * shentsize > size:
        raise TruncatedError(
            f"section header table of {nsec} entries at {shoff} runs past the end of the file ({size} bytes)",
            file=label,
            field="section_headers",
            offset=shoff,
        )
    with _elf_guard(label, "section_headers", shoff):
        sections = [elf.get_section(i) for i in range(nsec)]
    ctx = _Elf(
        elf=elf,
        sections=sections,
        stream=stream,
        size=size,
        label=label,
        e_type=e_type,
        source=kinds[e_type] if member is None else f"tar:{member}",
        member=member,
    )
    # .symtab and .dynsym of a shared object usually both list the blob: keep one.
    found: dict[tuple[str, int], LocatedBlob] = {}
    for tab_index, tab in enumerate(sections):
        if tab["sh_type"] in ("SHT_SYMTAB", "SHT_DYNSYM"):
            for blob in _blobs_in_symtab(ctx, tab_index):
                found.setdefault((blob.name, blob.file_offset or 0), blob)
    return sorted(found.values(), key=lambda b: (b.file_offset or 0, b.name))


def _blobs_in_symtab(ctx: _Elf, tab_index: int) -> Iterator[LocatedBlob]:
    tab = ctx.sections[tab_index]
    field = f"sections[{tab_index}]({tab.name})"
    _section_extent_check(tab, tab_index, ctx.size, ctx.label)
    link = tab["sh_link"]
    if link >= len(ctx.sections):
        raise MalformedError(
            f"symbol table links to section {link}, but there are {len(ctx.sections)}",
            file=ctx.label,
            field=f"{field}.sh_link",
            offset=tab["sh_offset"],
        )
    strtab = ctx.sections[link]
    _section_extent_check(strtab, link, ctx.size, ctx.label)
    with _elf_guard(ctx.label, f"sections[{link}]({strtab.name})", strtab["sh_offset"]):
        strings = strtab.data()
    # Cheap pre-filter: most symbol tables contain no blob name at all.
    if not any(s in strings for s in _BLOB_SYMBOL_BYTES):
        return
    if not isinstance(tab, SymbolTableSection):
        raise MalformedError(
            "symbol table section has an unusable type", file=ctx.label, field=field, offset=tab["sh_offset"]
        )
    with _elf_guard(ctx.label, field, tab["sh_offset"]):
        entsize = tab["sh_entsize"]
        expected = 24 if ctx.elf.elfclass == 64 else 16
        if entsize != expected:
            raise MalformedError(f"symbol table sh_entsize is {entsize}, expected {expected}", file=ctx.label,
                                 field=f"{field}.sh_entsize", offset=tab["sh_offset"])
        count = tab.num_symbols()
        table = tab.data()
    candidates = symbols_named(table, entsize, count, ctx.elf.little_endian, ctx.elf.elfclass == 64,
                                _blob_name_offsets(strings))
    if len(candidates) > MAX_BLOB_SYMBOLS:
        raise LengthError(f"{len(candidates)} blob symbols in one symbol table (the limit is {MAX_BLOB_SYMBOLS})",
                          file=ctx.label, field=field, offset=tab["sh_offset"])
    for i in candidates:
        entry_offset = tab["sh_offset"] + i * entsize
        with _elf_guard(ctx.label, f"{field}.symbols[{i}]", entry_offset):
            sym = tab.get_symbol(i)
            split = split_blob_symbol(sym.name) if sym.name else None
            if split is None:
                continue
            bind = sym["st_info"]["bind"]
            stype = sym["st_info"]["type"]
            shndx = sym["st_shndx"]
            value = sym["st_value"]
            st_size = sym["st_size"]
        if shndx == "SHN_UNDEF" or bind == "STB_LOCAL":
            # A reference to a blob defined elsewhere, or a copy the loader cannot see.
            continue
        where = _SymbolRef(sym.name, split, f"{field}.symbols[{i}]({sym.name})", entry_offset)
        if stype not in ("STT_OBJECT", "STT_NOTYPE"):
            raise UnsupportedError(
                f"blob symbol has type {stype}, expected STT_OBJECT",
                file=ctx.label,
                field=f"{where.field}.st_info",
                offset=entry_offset,
            )
        sec_index = _symbol_section_index(ctx, tab_index, i, shndx, where)
        yield _read_symbol_blob(ctx, sec_index, value, st_size, where)


def _blob_name_offsets(strings: bytes) -> np.ndarray:
    """Every string-table offset whose string ends in a blob symbol name (a symbol may point
    into the middle of a string: linkers share suffixes)."""
    found: list[int] = []
    for sym in _BLOB_SYMBOL_BYTES:
        pos = strings.find(sym)
        while pos >= 0:
            end = pos + len(sym)
            if end == len(strings) or strings[end] == 0:
                found.extend(range(strings.rfind(b"\0", 0, pos) + 1, pos + 1))
            pos = strings.find(sym, pos + 1)
    return np.array(sorted(set(found)), dtype=np.uint64)


def symbols_named(table: bytes, entsize: int, count: int, little: bool, is64: bool, names: np.ndarray) -> list[int]:
    """Indices of the defined, non-local symbols whose st_name is one of ``names``: the whole
    table is scanned at once instead of decoding every entry with pyelftools (a table of a
    million symbols would take minutes one by one). Entries the scan cannot decode (a
    short entry size, entries past the data) are left to pyelftools to report."""
    info_at, shndx_at = (4, 6) if is64 else (12, 14)
    if len(table) < entsize:
        return list(range(count))
    if not len(names):
        return []
    n = min(count, len(table) // entsize)
    e = "<" if little else ">"

    def column(offset: int, dtype: str) -> np.ndarray:
        return np.ndarray((n,), dtype=e + dtype, buffer=table, offset=offset, strides=(entsize,))

    wanted = np.isin(column(0, "u4").astype(np.uint64), names)
    wanted &= column(shndx_at, "u2") != 0  # SHN_UNDEF: a reference to a blob defined elsewhere
    wanted &= (column(info_at, "u1") >> 4) != 0  # STB_LOCAL: a copy the loader cannot see
    return np.flatnonzero(wanted).tolist() + list(range(n, count))


@dataclasses.dataclass(frozen=True)
class _SymbolRef:
    """A blob symbol's name, its (prefix, symbol) split and where its entry is, for errors."""

    name: str
    split: tuple[str, str]
    field: str
    entry_offset: int


def _symbol_section_index(
    ctx: _Elf, tab_index: int, sym_index: int, shndx: int | str, where: _SymbolRef
) -> int:
    def fail(cls: type[MlfError], message: str) -> MlfError:
        return cls(message, file=ctx.label, field=f"{where.field}.st_shndx", offset=where.entry_offset)

    if shndx == "SHN_XINDEX":
        for sec in ctx.sections:
            if isinstance(sec, SymbolTableIndexSection) and sec["sh_link"] == tab_index:
                with _elf_guard(ctx.label, f"{where.field}.st_shndx", where.entry_offset):
                    shndx = int(sec.get_section_index(sym_index))
                break
        else:
            raise fail(MalformedError, "symbol uses SHN_XINDEX but no SHT_SYMTAB_SHNDX section exists")
    if shndx == "SHN_COMMON":
        raise fail(
            ConstraintError, "blob symbol is a common (uninitialised) symbol with no bytes in the file"
        )
    if not isinstance(shndx, int):
        raise fail(UnsupportedError, f"blob symbol has special section index {shndx}")
    if shndx >= len(ctx.sections):
        raise fail(MalformedError, f"symbol points to section {shndx}, but there are {len(ctx.sections)}")
    return shndx


def _read_symbol_blob(ctx: _Elf, sec_index: int, value: int, st_size: int, where: _SymbolRef) -> LocatedBlob:
    sec = ctx.sections[sec_index]
    name = where.name
    if sec["sh_type"] == "SHT_NOBITS":
        raise ConstraintError(
            f"blob symbol {name} lies in {sec.name!r}, an SHT_NOBITS section with no bytes in the file",
            file=ctx.label,
            field=f"{where.field}.st_shndx",
            offset=where.entry_offset,
        )
    if sec["sh_flags"] & _SHF_COMPRESSED:
        raise UnsupportedError(
            f"blob section {sec.name!r} is compressed (SHF_COMPRESSED)",
            file=ctx.label,
            field=f"sections[{sec_index}]({sec.name}).sh_flags",
            offset=sec["sh_offset"],
        )
    _section_extent_check(sec, sec_index, ctx.size, ctx.label)
    # ET_REL symbol values are section-relative; linked files hold virtual addresses.
    rel = value if ctx.e_type == "ET_REL" else value - sec["sh_addr"]
    if rel < 0 or rel > sec["sh_size"]:
        raise ConstraintError(
            f"symbol value 0x{value:x} is outside section {sec.name!r} "
            f"(addr 0x{sec['sh_addr']:x}, size {sec['sh_size']})",
            file=ctx.label,
            field=f"{where.field}.st_value",
            offset=where.entry_offset,
        )
    available = sec["sh_size"] - rel
    file_offset = sec["sh_offset"] + rel
    if st_size:
        if st_size > available:
            raise LengthError(
                f"st_size {st_size} exceeds the {available} bytes left in section {sec.name!r}",
                file=ctx.label,
                field=f"{where.field}.st_size",
                offset=where.entry_offset,
            )
        limit, what = st_size, f"symbol {name} (st_size {st_size})"
    else:
        # No size recorded (e.g. a symbol added with objcopy): only the prefix bounds the blob.
        limit, what = available, f"section {sec.name!r} after symbol {name}"
    prefix = read_exact(ctx.stream, file_offset, min(limit, PREFIX_SIZE), file=ctx.label, field=name)
    total = blob_length(prefix, limit, file=ctx.label, field=name, offset=file_offset, what=what)
    lo = rel if ctx.e_type == "ET_REL" else value
    _check_no_relocations(ctx, sec_index, lo, lo + total, name)
    data = read_exact(ctx.stream, file_offset, total, file=ctx.label, field=name)
    return LocatedBlob(
        symbol=where.split[1],
        prefix=where.split[0],
        data=data,
        source=ctx.source,
        file_offset=file_offset,
        container_member=ctx.member,
    )


def _check_no_relocations(ctx: _Elf, sec_index: int, lo: int, hi: int, name: str) -> None:
    """Refuse a blob whose bytes a relocation would patch: the file would not hold what the
    loader sees. TVM never emits such a blob (it is a plain constant byte array).

    ``[lo, hi)`` is section-relative for ET_REL, a virtual address range otherwise.
    """
    for index, sec in enumerate(ctx.sections):
        if not isinstance(sec, (RelocationSection, RelrRelocationSection)):
            continue
        if ctx.e_type == "ET_REL" and sec["sh_info"] != sec_index:
            continue
        field = f"sections[{index}]({sec.name})"
        _section_extent_check(sec, index, ctx.size, ctx.label)
        if sec["sh_type"] != "SHT_RELR" and sec["sh_entsize"] == 0:
            raise MalformedError(
                "relocation section has sh_entsize 0",
                file=ctx.label,
                field=f"{field}.sh_entsize",
                offset=sec["sh_offset"],
            )
        with _elf_guard(ctx.label, field, sec["sh_offset"]):
            hit = _relocation_into(sec, ctx.elf.little_endian, ctx.elf.elfclass == 64, lo, hi)
        if hit is not None:
            k, r_offset = hit
            raise UnsupportedError(
                f"relocation {k} (r_offset 0x{r_offset:x}) patches the bytes of blob symbol {name}",
                file=ctx.label,
                field=f"{field}[{k}].r_offset",
                offset=sec["sh_offset"] + k * (sec["sh_entsize"] or 8),
            )


def _relocation_into(sec: Section, little: bool, is64: bool, lo: int, hi: int) -> tuple[int, int] | None:
    """(index, r_offset) of the first relocation of ``sec`` that patches a byte of
    ``[lo, hi)`` (a relocation patches at most 8 bytes from r_offset), or None. REL and RELA
    tables are scanned at once (r_offset is the first field of an entry); RELR entries are
    expanded one bitmap at a time, skipping bitmaps that cannot reach the range."""
    data = sec.data()
    word = 8 if is64 else 4
    dtype = ("<" if little else ">") + ("u8" if is64 else "u4")
    low = max(lo - 7, 0)
    if isinstance(sec, RelrRelocationSection):
        entries = np.frombuffer(data[: len(data) // word * word], dtype=dtype).tolist()
        base = 0
        for k, e in enumerate(entries):
            if not e & 1:
                if low <= e < hi:
                    return k, e
                base = e + word
                continue
            span = base + (8 * word - 1) * word
            if base < hi and span > low:
                bits = e >> 1
                i = 0
                while bits:
                    if bits & 1 and low <= base + i * word < hi:
                        return k, base + i * word
                    bits >>= 1
                    i += 1
            base += (8 * word - 1) * word
        return None
    entsize = sec["sh_entsize"]
    if entsize < word or len(data) < word:
        return None
    n = (len(data) - word) // entsize + 1
    r_offset = np.ndarray((n,), dtype=dtype, buffer=data, strides=(entsize,))
    hits = np.flatnonzero((r_offset < hi) & (r_offset >= low))
    return (int(hits[0]), int(r_offset[hits[0]])) if len(hits) else None

# the names before they were public
_locate_elf, _symbols_named = locate_elf, symbols_named
