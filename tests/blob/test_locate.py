"""Tests for mlf_spec.blob.locate: finding the module blob in .so / .o / .c / .tar / .bin.

Blobs are embedded with ``c_source_for_blob`` and compiled with the system gcc, so the ELF
side is exercised against real toolchain output; the last test does the same against a real
apache-tvm export.
"""

from __future__ import annotations

import io
import os
import shutil
import struct
import subprocess
import tarfile
import tracemalloc
from pathlib import Path

import pytest

from mlf_spec.blob.locate import (
    BLOB_SYMBOLS,
    SYMBOL_FFI,
    SYMBOL_FFI_V021,
    SYMBOL_LEGACY,
    LocatedBlob,
    c_source_for_blob,
    locate_blobs,
    parse_c_source,
    split_blob_symbol,
    write_bin,
)
from mlf_spec.errors import (
    ConstraintError,
    CountMismatchError,
    LengthError,
    MalformedError,
    MlfError,
    OutputExistsError,
    TruncatedError,
    UnsafeArchiveError,
    UnsupportedError,
)

GCC = shutil.which("gcc")
needs_gcc = pytest.mark.skipif(GCC is None, reason="gcc is not installed")


# --------------------------------------------------------------------------------------------
# Blob builders (the bytes only need to be well-formed at the envelope level)


def _u64(v: int) -> bytes:
    return struct.pack("<Q", v)


def _str(s: bytes) -> bytes:
    return _u64(len(s)) + s


def _envelope(body: bytes) -> bytes:
    return _u64(len(body)) + body


def ffi_blob(*payload_sizes: int) -> bytes:
    """A tvm-ffi (v0.22+) blob with one "opencl" module per payload size, no imports."""
    n = len(payload_sizes)
    body = _u64(n + 1) + b"".join(_u64(0) for _ in range(n + 1)) + _u64(0)
    for k, size in enumerate(payload_sizes):
        payload = bytes((i * 7 + k) & 0xFF for i in range(size))
        body += _str(b"opencl") + _str(payload)
    return _envelope(body)


def legacy_blob(count: int = 0) -> bytes:
    """A legacy blob: count + that many `_lib` entries."""
    return _envelope(_u64(count) + b"".join(_str(b"_lib") for _ in range(count)))


BLOBS = {
    "ffi-0-modules": ffi_blob(),
    "legacy-0-modules": legacy_blob(0),
    "ffi-odd-1": ffi_blob(1),
    "ffi-odd-255-all-bytes": _envelope(bytes(range(256)) * 3 + b"\x01"),
    "ffi-odd-4097": ffi_blob(4097, 13),
}


# --------------------------------------------------------------------------------------------
# Toolchain helpers


def _run(cmd: list[str]) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, f"{cmd}: {proc.stderr}"


def compile_c(tmp: Path, source: str, stem: str, *, cxx: bool = False, extra: tuple[str, ...] = ()) -> Path:
    """Compile C (or C++) text into ``<stem>.o``."""
    src = tmp / f"{stem}.c"
    src.write_text(source)
    obj = tmp / f"{stem}.o"
    lang = ["-x", "c++"] if cxx else []
    _run([GCC, *lang, "-c", "-fPIC", *extra, str(src), "-o", str(obj)])
    return obj


def compile_asm(tmp: Path, source: str, stem: str, extra: tuple[str, ...] = ()) -> Path:
    src = tmp / f"{stem}.s"
    src.write_text(source)
    obj = tmp / f"{stem}.o"
    _run([GCC, "-c", *extra, str(src), "-o", str(obj)])
    return obj


def link_so(tmp: Path, objs: list[Path], stem: str, extra: tuple[str, ...] = ()) -> Path:
    out = tmp / f"{stem}.so"
    _run([GCC, "-shared", *extra, *map(str, objs), "-o", str(out)])
    return out


LIB0_C = "int add_one(int x) { return x + 1; }\n"


def tvm_like_tar(tmp: Path, members: dict[str, bytes], name: str = "lib.tar", gz: bool = True) -> Path:
    """A tarball laid out like export_library(...tar) writes it (tar -czf of flat files)."""
    out = tmp / name
    with tarfile.open(out, "w:gz" if gz else "w") as tf:
        for member, data in members.items():
            info = tarfile.TarInfo(member)
            info.size = len(data)
            info.mode = 0o644
            tf.addfile(info, io.BytesIO(data))
    return out


def symbol_offset(path: Path, name: str) -> int:
    """File offset of a symbol's bytes, computed with readelf-independent pyelftools."""
    from elftools.elf.elffile import ELFFile

    with open(path, "rb") as fh:
        elf = ELFFile(fh)
        for sec in elf.iter_sections():
            if sec["sh_type"] not in ("SHT_SYMTAB", "SHT_DYNSYM"):
                continue
            for sym in sec.iter_symbols():
                if sym.name == name and sym["st_shndx"] != "SHN_UNDEF":
                    target = elf.get_section(sym["st_shndx"])
                    base = 0 if elf["e_type"] == "ET_REL" else target["sh_addr"]
                    return target["sh_offset"] + sym["st_value"] - base
    raise AssertionError(f"{name} not in {path}")


# --------------------------------------------------------------------------------------------
# Symbol names


def test_split_blob_symbol() -> None:
    assert split_blob_symbol("__tvm_ffi__library_bin") == ("", SYMBOL_FFI)
    assert split_blob_symbol("__tvm_ffi_library_bin") == ("", SYMBOL_FFI_V021)
    assert split_blob_symbol("__tvm_dev_mblob") == ("", SYMBOL_LEGACY)
    assert split_blob_symbol("pfx___tvm_ffi__library_bin") == ("pfx_", SYMBOL_FFI)
    assert split_blob_symbol("my_model___tvm_dev_mblob") == ("my_model_", SYMBOL_LEGACY)
    assert split_blob_symbol("__tvm_dev_mblob_nbytes") is None
    assert split_blob_symbol("__tvm_ffi__library_bin_reg_") is None
    assert split_blob_symbol("__tvm_ffi__library_ctx") is None


# --------------------------------------------------------------------------------------------
# C source writer: exact formatting per era


def test_c_source_current_style_exact() -> None:
    blob = _envelope(bytes(range(13)))  # 21 bytes: one full line of 20 and one of 1
    text = c_source_for_blob(blob)
    first = ",".join(f"0x{b:02x}" for b in blob[:20]) + ","
    assert text == (
        "#ifdef _WIN32\n#define TVM_EXPORT __declspec(dllexport)\n#else\n#define TVM_EXPORT\n#endif\n"
        '#ifdef __cplusplus\nextern "C" {\n#endif\n'
        "TVM_EXPORT extern const unsigned char __tvm_ffi__library_bin[];\n"
        "const unsigned char __tvm_ffi__library_bin[21] = {\n"
        f"  {first}\n"
        "  0x0c,\n"
        "};\n"
        "#ifdef __cplusplus\n}\n#endif\n"
    )


def test_c_source_legacy_style_exact() -> None:
    blob = _envelope(bytes(range(13)))
    text = c_source_for_blob(blob, symbol=SYMBOL_LEGACY, style="legacy")
    assert "const unsigned char __tvm_dev_mblob[21] = {\n" in text
    # Unpadded hex, separators only between values, a break every 20 values from the start.
    assert (
        "  0xd,0x0,0x0,0x0,0x0,0x0,0x0,0x0,0x0,0x1,0x2,0x3,0x4,0x5,0x6,0x7,0x8,0x9,0xa,0xb,\n  0xc\n};\n"
        in text
    )
    char_text = c_source_for_blob(blob, symbol=SYMBOL_LEGACY, style="legacy-char")
    assert "TVM_EXPORT extern const char __tvm_dev_mblob[];\nconst char __tvm_dev_mblob[21] = {" in char_text


def test_c_source_registration_line_per_symbol() -> None:
    blob = ffi_blob()
    ffi = c_source_for_blob(blob, SYMBOL_FFI, system_lib_prefix="pfx_")
    assert "extern int TVMFFIEnvModRegisterSystemLibSymbol(const char*, void*);\n" in ffi
    assert (
        'static int pfx___tvm_ffi__library_bin_reg_ = TVMFFIEnvModRegisterSystemLibSymbol("pfx___tvm_ffi__library_bin",'
        " (void*)pfx___tvm_ffi__library_bin);\n" in ffi
    )
    for legacy_symbol in (SYMBOL_LEGACY, SYMBOL_FFI_V021):
        text = c_source_for_blob(legacy_blob(), legacy_symbol, system_lib_prefix="")
        assert f'TVMBackendRegisterSystemLibSymbol("{legacy_symbol}", (void*){legacy_symbol});' in text
    assert "Register" not in c_source_for_blob(blob)


def test_c_source_refuses_bad_blob_and_arguments() -> None:
    with pytest.raises(ConstraintError) as info:
        c_source_for_blob(ffi_blob() + b"junk")
    assert info.value.field == "blob.trailing"
    with pytest.raises(LengthError):
        c_source_for_blob(_u64(100) + b"short")
    with pytest.raises(ValueError):
        c_source_for_blob(ffi_blob(), style="v0.1")
    with pytest.raises(ValueError):
        c_source_for_blob(ffi_blob(), symbol="not an identifier")


# --------------------------------------------------------------------------------------------
# C source parser


@pytest.mark.parametrize("style", ["current", "legacy", "legacy-char"])
@pytest.mark.parametrize("case", sorted(BLOBS))
def test_parse_c_source_roundtrip(style: str, case: str) -> None:
    blob = BLOBS[case]
    text = c_source_for_blob(blob, SYMBOL_LEGACY if style != "current" else SYMBOL_FFI, style=style)
    (found,) = parse_c_source(text)
    assert found.data == blob
    assert found.source == "c-source" and found.file_offset is None and found.prefix == ""


def test_parse_c_source_variants() -> None:
    blob = ffi_blob(3)
    hexes = [f"0X{b:X}" for b in blob]
    text = (
        "// generated\n#include <stdint.h>\n"
        '#ifdef __cplusplus\nextern "C" {\n#endif\n'
        "/* the blob, } with a brace in a comment */\n"
        '__attribute__((visibility("default"))) const unsigned char m1___tvm_ffi__library_bin[] '
        "__attribute__((aligned(1))) = { " + ", ".join(hexes) + " };\r\n"
        "TVM_EXPORT const char __tvm_dev_mblob["
        + str(len(blob))
        + "] = {\r\n"
        + ",\r\n".join(f"  {b}" for b in blob)
        + " /* last */\r\n};\r\n"
        'static int r = TVMFFIEnvModRegisterSystemLibSymbol("m1___tvm_ffi__library_bin", (void*)0);\n'
        "unsigned char __tvm_ffi_library_bin[16];  /* no initializer: no bytes */\n"
        "extern const unsigned char __tvm_ffi__library_bin[];\n"
        "#ifdef __cplusplus\n}\n#endif\n"
    )
    found = parse_c_source(text.encode())
    assert [(b.prefix, b.symbol) for b in found] == [("m1_", SYMBOL_FFI), ("", SYMBOL_LEGACY)]
    assert all(b.data == blob for b in found)


def test_parse_c_source_decimal_octal_and_negative_chars() -> None:
    blob = _envelope(bytes([0, 8, 200, 255]))
    elems = ["4", "0", "0", "0", "0", "0", "0", "00", "0", "010", "-56", "0xffu"]
    (found,) = parse_c_source("const char __tvm_dev_mblob[12] = {" + ",".join(elems) + "};")
    assert found.data == blob


def test_parse_c_source_without_blob() -> None:
    assert parse_c_source(LIB0_C) == []
    assert parse_c_source("extern const unsigned char __tvm_ffi__library_bin[];\n") == []


def test_parse_c_truncated_array() -> None:
    text = c_source_for_blob(BLOBS["ffi-odd-4097"])
    cut = text[: len(text) // 2]
    with pytest.raises(TruncatedError) as info:
        parse_c_source(cut, file="devc.c")
    err = info.value
    assert err.field == "__tvm_ffi__library_bin.initializer"
    assert err.offset == cut.index("= {") + 2
    assert "line 10" in str(err) and "devc.c" in str(err) and f"offset {err.offset}" in str(err)


def test_parse_c_truncated_before_semicolon_and_initializer() -> None:
    text = c_source_for_blob(ffi_blob())
    with pytest.raises(TruncatedError):
        parse_c_source(text[: text.index("};") + 1])
    with pytest.raises(TruncatedError):
        parse_c_source(text[: text.index("= {") + 1])


def test_parse_c_malformed_element_reports_line_and_offset() -> None:
    text = c_source_for_blob(ffi_blob(40))
    bad = text.replace("0x28,", "0xZZ,", 1)
    with pytest.raises(MalformedError) as info:
        parse_c_source(bad)
    err = info.value
    assert err.offset == bad.index("0xZZ")
    assert err.field is not None and err.field.startswith("__tvm_ffi__library_bin[")
    assert "'0xZZ'" in str(err) and f"line {bad[: err.offset].count(chr(10)) + 1}" in str(err)


def test_parse_c_space_inside_element_or_missing_comma() -> None:
    text = c_source_for_blob(ffi_blob())
    with pytest.raises(MalformedError, match="'0x0 0'"):
        parse_c_source(text.replace("0x00,", "0x0 0,", 1))
    with pytest.raises(MalformedError, match="not an integer literal"):
        parse_c_source(text.replace("0x00,", "0x00\n  ", 1))


def test_parse_c_empty_element_and_out_of_range() -> None:
    text = c_source_for_blob(ffi_blob())
    with pytest.raises(MalformedError, match="empty element"):
        parse_c_source(text.replace("0x00,", "0x00,,", 1))
    with pytest.raises(ConstraintError, match="does not fit in a byte") as info:
        parse_c_source(text.replace("0x00,", "0x100,", 1))
    assert info.value.field == "__tvm_ffi__library_bin[1]"


def test_parse_c_count_mismatch() -> None:
    blob = ffi_blob()
    text = c_source_for_blob(blob).replace(f"[{len(blob)}] =", f"[{len(blob) + 1}] =")
    with pytest.raises(CountMismatchError) as info:
        parse_c_source(text)
    assert info.value.field == "__tvm_ffi__library_bin.size"
    assert info.value.offset == text.index(f"[{len(blob) + 1}]") + 1


def test_parse_c_lying_prefix() -> None:
    blob = _u64(10**9) + b"\x01\x02\x03"
    text = c_source_for_blob(blob, check=False)
    with pytest.raises(LengthError) as info:
        parse_c_source(text)
    assert info.value.field == "__tvm_ffi__library_bin.nbytes"
    assert info.value.offset == text.index("= {") + 3


def test_parse_c_missing_brace_or_semicolon() -> None:
    with pytest.raises(MalformedError, match="does not start with"):
        parse_c_source("const unsigned char __tvm_dev_mblob[8] = 0;")
    text = c_source_for_blob(ffi_blob())
    with pytest.raises(MalformedError, match="expected ';'"):
        parse_c_source(text.replace("};", "}", 1))


# --------------------------------------------------------------------------------------------
# Compiled objects and shared libraries


@needs_gcc
@pytest.mark.parametrize("prefix", [None, "", "mod1_"])
@pytest.mark.parametrize("symbol", BLOB_SYMBOLS)
def test_locate_in_object_and_shared_library(tmp_path: Path, symbol: str, prefix: str | None) -> None:
    blob = BLOBS["ffi-odd-4097"] if symbol == SYMBOL_FFI else legacy_blob(3)
    source = c_source_for_blob(blob, symbol, system_lib_prefix=prefix)
    # The registration line is a C++ dynamic initializer; TVM compiles devc.c with g++ too.
    obj = compile_c(tmp_path, source, "devc", cxx=prefix is not None)
    so = link_so(tmp_path, [obj, compile_c(tmp_path, LIB0_C, "lib0")], "lib")
    full = (prefix or "") + symbol
    for path, kind in ((obj, "elf-object"), (so, "elf-shared-object")):
        (found,) = locate_blobs(path)
        assert found.data == blob
        assert (found.symbol, found.prefix, found.name) == (symbol, prefix or "", full)
        assert found.source == kind and found.container_member is None
        assert found.file_offset == symbol_offset(path, full)
        assert path.read_bytes()[found.file_offset : found.file_offset + len(blob)] == blob


@needs_gcc
@pytest.mark.parametrize("case", sorted(BLOBS))
@pytest.mark.parametrize("style", ["current", "legacy"])
def test_locate_blob_sizes(tmp_path: Path, case: str, style: str) -> None:
    blob = BLOBS[case]
    obj = compile_c(tmp_path, c_source_for_blob(blob, style=style), "devc")
    so = link_so(tmp_path, [obj], "lib")
    for path in (obj, so):
        (found,) = locate_blobs(path)
        assert found.data == blob and found.symbol == SYMBOL_FFI


@needs_gcc
def test_locate_compiled_as_cxx_keeps_external_linkage(tmp_path: Path) -> None:
    blob = ffi_blob(5)
    obj = compile_c(tmp_path, c_source_for_blob(blob), "devc", cxx=True)
    (found,) = locate_blobs(obj)
    assert found.data == blob


@needs_gcc
def test_locate_in_tar_like_tvm(tmp_path: Path) -> None:
    blob = ffi_blob(1000)
    devc = compile_c(tmp_path, c_source_for_blob(blob), "devc").read_bytes()
    lib0 = compile_c(tmp_path, LIB0_C, "lib0").read_bytes()
    for gz in (True, False):
        tar = tvm_like_tar(tmp_path, {"lib0.o": lib0, "devc.o": devc}, f"lib{gz}.tar", gz=gz)
        (found,) = locate_blobs(tar)
        assert found.data == blob
        assert (found.source, found.container_member) == ("tar:devc.o", "devc.o")
        assert found.file_offset is not None and devc[found.file_offset :].startswith(blob)


@needs_gcc
def test_locate_in_tar_with_system_lib_prefix_and_c_member(tmp_path: Path) -> None:
    blob = ffi_blob(77)
    text = c_source_for_blob(blob, system_lib_prefix="net_")
    devc = compile_c(tmp_path, text, "devc", cxx=True).read_bytes()
    tar = tvm_like_tar(tmp_path, {"lib0.o": b"\x7fELF-not-looked-at", "net_devc.o": devc})
    (found,) = locate_blobs(tar)
    assert (found.prefix, found.symbol, found.source) == ("net_", SYMBOL_FFI, "tar:net_devc.o")
    assert found.data == blob
    ctar = tvm_like_tar(tmp_path, {"lib0.c": LIB0_C.encode(), "net_devc.c": text.encode()}, "c.tar")
    (cfound,) = locate_blobs(ctar)
    assert (cfound.prefix, cfound.source, cfound.file_offset, cfound.container_member) == (
        "net_",
        "tar:net_devc.c",
        None,
        "net_devc.c",
    )
    assert cfound.data == blob


@needs_gcc
def test_locate_in_tar_fallback_to_any_object(tmp_path: Path) -> None:
    blob = legacy_blob(2)
    obj = compile_c(tmp_path, c_source_for_blob(blob, SYMBOL_LEGACY), "blob").read_bytes()
    tar = tvm_like_tar(
        tmp_path, {"lib0.o": compile_c(tmp_path, LIB0_C, "lib0").read_bytes(), "imports.o": obj}
    )
    (found,) = locate_blobs(tar)
    assert (found.source, found.symbol, found.data) == ("tar:imports.o", SYMBOL_LEGACY, blob)


@needs_gcc
def test_no_blob_gives_empty_list(tmp_path: Path) -> None:
    obj = compile_c(tmp_path, LIB0_C, "lib0")
    so = link_so(tmp_path, [obj], "lib")
    src = tmp_path / "lib0.c"
    assert locate_blobs(obj) == []
    assert locate_blobs(so) == []
    assert locate_blobs(src) == []
    assert locate_blobs(tvm_like_tar(tmp_path, {"lib0.o": obj.read_bytes()})) == []
    # A program that only references the blob (undefined symbol) defines none.
    user = compile_c(
        tmp_path,
        "extern const unsigned char __tvm_ffi__library_bin[];\n"
        "const void* p(void) { return __tvm_ffi__library_bin; }\n",
        "user",
    )
    assert locate_blobs(user) == []


@needs_gcc
def test_several_blobs_in_one_library(tmp_path: Path) -> None:
    a, b = ffi_blob(10), ffi_blob(11, 12)
    objs = [
        compile_c(tmp_path, c_source_for_blob(a, system_lib_prefix="a_"), "a", cxx=True),
        compile_c(tmp_path, c_source_for_blob(b, system_lib_prefix="b_"), "b", cxx=True),
    ]
    so = link_so(tmp_path, objs, "both")
    found = locate_blobs(so)
    assert sorted((x.prefix, x.data) for x in found) == [("a_", a), ("b_", b)]
    assert found == sorted(found, key=lambda x: x.file_offset or 0)


@needs_gcc
def test_input_forms_and_content_detection(tmp_path: Path) -> None:
    blob = ffi_blob(9)
    obj = compile_c(tmp_path, c_source_for_blob(blob), "devc")
    so = link_so(tmp_path, [obj], "lib")
    disguised = tmp_path / "lib.dat"
    shutil.copy(so, disguised)
    data = so.read_bytes()
    assert locate_blobs(disguised)[0].data == blob
    assert locate_blobs(str(so))[0].data == blob
    assert locate_blobs(data)[0].data == blob
    assert locate_blobs(bytearray(data))[0].data == blob
    assert locate_blobs(memoryview(data))[0].data == blob
    with open(so, "rb") as fh:
        assert locate_blobs(fh)[0].data == blob
    # A stream positioned past some leading bytes is read from there on.
    framed = io.BytesIO(b"HEADER" + data)
    framed.seek(6)
    found = locate_blobs(framed)[0]
    assert found.data == blob and found.file_offset == symbol_offset(so, SYMBOL_FFI)

    class Pipe(io.RawIOBase):
        def __init__(self, payload: bytes) -> None:
            self._src = io.BytesIO(payload)

        def readable(self) -> bool:
            return True

        def readinto(self, buf) -> int:  # noqa: ANN001
            chunk = self._src.read(len(buf))
            buf[: len(chunk)] = chunk
            return len(chunk)

    assert locate_blobs(io.BufferedReader(Pipe(data)))[0].data == blob
    tar = tvm_like_tar(tmp_path, {"devc.o": obj.read_bytes()}, "x.bin")
    assert locate_blobs(tar)[0].source == "tar:devc.o"
    text = tmp_path / "devc.txt"
    text.write_text(c_source_for_blob(blob))
    assert locate_blobs(text)[0].source == "c-source"


@needs_gcc
def test_blob_in_lrodata_and_sizeless_symbol(tmp_path: Path) -> None:
    blob = ffi_blob(21)
    body = ",".join(str(b) for b in blob)
    asm = (
        '.section .lrodata,"a"\n.globl __tvm_ffi__library_bin\n.type __tvm_ffi__library_bin, @object\n'
        f"__tvm_ffi__library_bin:\n.byte {body}\n.size __tvm_ffi__library_bin, {len(blob)}\n"
        # No .size: st_size is 0, as for a symbol added with objcopy --add-symbol.
        '.section .rodata.other,"a"\n.byte 1,2,3\n.globl x___tvm_dev_mblob\nx___tvm_dev_mblob:\n'
        f".byte {body}\n.byte 9,9,9\n"
    )
    obj = compile_asm(tmp_path, asm, "devc")
    so = link_so(tmp_path, [obj], "lib", ("-nostdlib",))
    for path in (obj, so):
        found = {b.name: b for b in locate_blobs(path)}
        assert found["__tvm_ffi__library_bin"].data == blob
        assert found["x___tvm_dev_mblob"].data == blob  # bounded by its prefix, not the section


@needs_gcc
@pytest.mark.skipif(shutil.which("objcopy") is None, reason="objcopy is not installed")
def test_objcopy_added_symbol_like_hexagon(tmp_path: Path) -> None:
    blob = ffi_blob(33)
    (tmp_path / "imports.bin").write_bytes(blob)
    obj = tmp_path / "devc.o"
    _run([GCC, "-x", "c", "-c", "/dev/null", "-o", str(obj)])
    _run(
        [
            "objcopy",
            str(obj),
            "--add-section",
            f".rodata={tmp_path / 'imports.bin'}",
            "--add-symbol",
            "pfx___tvm_ffi__library_bin=.rodata:0,object,global",
        ]
    )
    (found,) = locate_blobs(obj)
    assert (found.prefix, found.data) == ("pfx_", blob)
    # GNU objcopy makes an added symbol LOCAL unless told otherwise (llvm-objcopy, which TVM's
    # Hexagon path uses, defaults to GLOBAL); a local blob is invisible to the loader.
    local = tmp_path / "local.o"
    _run([GCC, "-x", "c", "-c", "/dev/null", "-o", str(local)])
    _run(
        [
            "objcopy",
            str(local),
            "--add-section",
            f".rodata={tmp_path / 'imports.bin'}",
            "--add-symbol",
            "__tvm_ffi__library_bin=.rodata:0,object",
        ]
    )
    assert locate_blobs(local) == []


@needs_gcc
def test_32bit_elf(tmp_path: Path) -> None:
    blob = ffi_blob(5)
    try:
        obj = compile_c(tmp_path, c_source_for_blob(blob), "devc", extra=("-m32",))
        so = link_so(tmp_path, [obj], "lib", ("-m32", "-nostdlib"))
    except AssertionError as exc:
        pytest.skip(f"no 32-bit toolchain: {exc}")
    for path in (obj, so):
        assert locate_blobs(path)[0].data == blob


# --------------------------------------------------------------------------------------------
# Bad ELF input


def _shdr_offset(data: bytes, index: int) -> int:
    e_shoff = struct.unpack_from("<Q", data, 0x28)[0]
    return e_shoff + index * 64


def _section_index(path: Path, name: str) -> int:
    from elftools.elf.elffile import ELFFile

    with open(path, "rb") as fh:
        elf = ELFFile(fh)
        return next(i for i, s in enumerate(elf.iter_sections()) if s.name == name)


def _symbol_entry(path: Path, name: str) -> int:
    from elftools.elf.elffile import ELFFile

    with open(path, "rb") as fh:
        elf = ELFFile(fh)
        tab = elf.get_section_by_name(".symtab")
        i = next(i for i, s in enumerate(tab.iter_symbols()) if s.name == name)
        return tab["sh_offset"] + i * tab["sh_entsize"]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    if GCC is None:
        pytest.skip("gcc is not installed")
    tmp = tmp_path_factory.mktemp("built")
    blob = ffi_blob(300)
    obj = compile_c(tmp, c_source_for_blob(blob), "devc")
    so = link_so(tmp, [obj, compile_c(tmp, LIB0_C, "lib0")], "lib")
    liar = compile_c(tmp, c_source_for_blob(_u64(1 << 40) + bytes(32), check=False), "liar")
    return {"obj": obj, "so": so, "liar": liar}


@pytest.mark.parametrize("which", ["obj", "so"])
def test_truncated_elf(built: dict[str, Path], which: str) -> None:
    data = built[which].read_bytes()
    for length in (5, 16, 40, 63, 64, 100, len(data) // 3, len(data) // 2, len(data) - 1):
        with pytest.raises(MlfError) as info:
            locate_blobs(data[:length], name="cut.so")
        err = info.value
        assert isinstance(err, TruncatedError), (length, err)
        assert err.offset is not None and err.field
        assert "cut.so" in str(err) and err.field in str(err) and f"offset {err.offset}" in str(err)


def test_truncated_inside_blob(built: dict[str, Path]) -> None:
    data = bytearray(built["obj"].read_bytes())
    found = locate_blobs(bytes(data))[0]
    # Move the section header table to the front is not possible; instead point the blob's
    # section past the end of the file.
    idx = _section_index(built["obj"], ".rodata")
    struct.pack_into("<Q", data, _shdr_offset(data, idx) + 24, len(data) - 10)
    with pytest.raises(TruncatedError) as info:
        locate_blobs(bytes(data))
    assert info.value.field == f"sections[{idx}](.rodata).sh_size"
    assert info.value.offset == len(data) - 10
    assert found.file_offset is not None


def test_lying_st_size(built: dict[str, Path]) -> None:
    data = bytearray(built["obj"].read_bytes())
    entry = _symbol_entry(built["obj"], SYMBOL_FFI)
    struct.pack_into("<Q", data, entry + 16, 1 << 50)
    with pytest.raises(LengthError) as info:
        locate_blobs(bytes(data))
    assert info.value.field is not None and info.value.field.endswith("st_size")
    assert info.value.offset == entry


def test_lying_size_prefix_with_st_size(built: dict[str, Path]) -> None:
    with pytest.raises(LengthError) as info:
        locate_blobs(built["liar"])
    err = info.value
    assert err.field == "__tvm_ffi__library_bin.nbytes"
    assert err.offset == symbol_offset(built["liar"], SYMBOL_FFI)
    assert str(1 << 40) in str(err)


@needs_gcc
def test_lying_size_prefix_without_st_size_constant_memory(tmp_path: Path) -> None:
    asm = (
        '.section .rodata,"a"\n.globl __tvm_ffi__library_bin\n__tvm_ffi__library_bin:\n'
        ".quad 0x7000000000000000\n.byte 1,2,3\n"
    )
    obj = compile_asm(tmp_path, asm, "devc")
    raw = tmp_path / "blob.bin"
    raw.write_bytes(_u64(1 << 62) + bytes(64))
    for path in (obj, raw):
        tracemalloc.start()
        try:
            with pytest.raises(LengthError) as info:
                locate_blobs(path)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 4 << 20
        assert info.value.field is not None and info.value.field.endswith("nbytes")
        assert info.value.offset == (symbol_offset(obj, SYMBOL_FFI) if path == obj else 0)


@needs_gcc
def test_blob_in_nobits_or_common(tmp_path: Path) -> None:
    bss = compile_c(tmp_path, "unsigned char __tvm_ffi__library_bin[64];\n", "bss")
    with pytest.raises(ConstraintError, match="SHT_NOBITS") as info:
        locate_blobs(bss)
    assert info.value.field is not None and info.value.field.endswith("st_shndx")
    assert info.value.offset == _symbol_entry(bss, SYMBOL_FFI)
    common = compile_c(tmp_path, "unsigned char __tvm_dev_mblob[64];\n", "common", extra=("-fcommon",))
    with pytest.raises(ConstraintError, match="common"):
        locate_blobs(common)


@needs_gcc
def test_relocation_inside_blob_is_refused(tmp_path: Path) -> None:
    asm = (
        '.section .data.rel.ro,"aw"\n.globl __tvm_ffi__library_bin\n.type __tvm_ffi__library_bin, @object\n'
        "__tvm_ffi__library_bin:\n.quad 16\n.quad target\n.quad 0\n.size __tvm_ffi__library_bin, 24\n"
        ".data\ntarget: .quad 0\n"
    )
    obj = compile_asm(tmp_path, asm, "devc")
    so = link_so(tmp_path, [obj], "lib", ("-nostdlib",))
    for path in (obj, so):
        with pytest.raises(UnsupportedError, match="patches the bytes") as info:
            locate_blobs(path)
        assert info.value.field is not None and info.value.field.endswith("r_offset")


def test_corrupted_headers(built: dict[str, Path]) -> None:
    data = built["obj"].read_bytes()

    def patched(offset: int, fmt: str, value: int) -> bytes:
        out = bytearray(data)
        struct.pack_into(fmt, out, offset, value)
        return bytes(out)

    with pytest.raises(MalformedError, match="EI_CLASS"):
        locate_blobs(data[:4] + b"\x07" + data[5:])
    with pytest.raises(MalformedError) as info:
        locate_blobs(patched(0x3A, "<H", 12))
    assert info.value.field == "e_shentsize" and info.value.offset == 0x3A
    with pytest.raises(TruncatedError) as info:
        locate_blobs(patched(0x28, "<Q", 1 << 40))
    assert info.value.field == "e_shoff"
    with pytest.raises(UnsupportedError):
        locate_blobs(patched(0x10, "<H", 4))  # ET_CORE
    symtab = _section_index(built["obj"], ".symtab")
    with pytest.raises(MlfError):
        locate_blobs(patched(_shdr_offset(data, symtab) + 40, "<I", 999))  # sh_link
    with pytest.raises(MlfError):
        locate_blobs(patched(_shdr_offset(data, symtab) + 56, "<Q", 0))  # sh_entsize
    entry = _symbol_entry(built["obj"], SYMBOL_FFI)
    with pytest.raises(MalformedError) as info:
        locate_blobs(patched(entry + 6, "<H", 500))  # st_shndx
    assert info.value.offset == entry
    with pytest.raises(ConstraintError, match="outside section"):
        locate_blobs(patched(entry + 8, "<Q", 1 << 30))  # st_value


def test_random_corruption_only_raises_mlf_errors(built: dict[str, Path]) -> None:
    import random

    rng = random.Random(1234)
    for which in ("obj", "so"):
        data = built[which].read_bytes()
        e_shoff = struct.unpack_from("<Q", data, 0x28)[0]
        hot = list(range(0, 64)) + list(range(e_shoff, len(data)))
        symtab = _section_index(built[which], ".symtab")
        from elftools.elf.elffile import ELFFile

        with open(built[which], "rb") as fh:
            sec = ELFFile(fh).get_section(symtab)
            hot += list(range(sec["sh_offset"], sec["sh_offset"] + sec["sh_size"]))
        for _ in range(400):
            out = bytearray(data)
            for _ in range(rng.randint(1, 4)):
                out[rng.choice(hot)] = rng.randrange(256)
            try:
                result = locate_blobs(bytes(out))
            except MlfError:
                continue
            assert isinstance(result, list)
            assert all(isinstance(b, LocatedBlob) for b in result)


# --------------------------------------------------------------------------------------------
# Bad tar input


def _tar_with(tmp_path: Path, build: object) -> Path:
    out = tmp_path / "bad.tar"
    with tarfile.open(out, "w:gz") as tf:
        build(tf)  # type: ignore[operator]
    return out


def _add(tf: tarfile.TarFile, name: str, data: bytes = b"", **attrs: object) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    for key, value in attrs.items():
        setattr(info, key, value)
    tf.addfile(info, io.BytesIO(data) if data else None)


def test_tar_symlink_member_refused(tmp_path: Path) -> None:
    tar = _tar_with(
        tmp_path,
        lambda tf: (
            _add(tf, "lib0.o", b"x"),
            _add(tf, "devc.o", type=tarfile.SYMTYPE, linkname="/etc/passwd"),
        ),
    )
    with pytest.raises(UnsafeArchiveError) as info:
        locate_blobs(tar)
    err = info.value
    assert err.field == "tar.members[1](devc.o)" and err.offset == 1024  # header, data, header
    assert "link" in str(err) and "devc.o" in str(err)


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda tf: _add(tf, "devc.o", type=tarfile.LNKTYPE, linkname="lib0.o"), "link"),
        (lambda tf: _add(tf, "devc.o", type=tarfile.CHRTYPE), "device"),
        (lambda tf: _add(tf, "../devc.o", b"x"), "escapes"),
        (lambda tf: (_add(tf, "devc.o", b"x"), _add(tf, "./devc.o", b"y")), "twice"),
    ],
)
def test_tar_unsafe_members(tmp_path: Path, build: object, match: str) -> None:
    with pytest.raises(UnsafeArchiveError, match=match):
        locate_blobs(_tar_with(tmp_path, build))


def test_tar_size_and_count_limits(tmp_path: Path) -> None:
    tar = _tar_with(tmp_path, lambda tf: [_add(tf, f"m{i}.o", bytes(100)) for i in range(5)])
    with pytest.raises(UnsafeArchiveError, match="max_size") as info:
        locate_blobs(tar, max_size=99)
    assert info.value.field == "tar.members[0](m0.o)"
    with pytest.raises(UnsafeArchiveError, match="max_members"):
        locate_blobs(tar, max_members=3)


def test_tar_corrupt_and_truncated(tmp_path: Path) -> None:
    tar = tvm_like_tar(tmp_path, {"devc.c": c_source_for_blob(ffi_blob(3000)).encode()})
    data = tar.read_bytes()
    with pytest.raises(MlfError):
        locate_blobs(data[: len(data) // 2])
    plain = tvm_like_tar(tmp_path, {"devc.c": c_source_for_blob(ffi_blob(3000)).encode()}, "p.tar", gz=False)
    pdata = plain.read_bytes()
    with pytest.raises(TruncatedError):
        locate_blobs(pdata[:3000])
    with pytest.raises(UnsupportedError):
        locate_blobs(tvm_like_tar(tmp_path, {"devc.o": bytes(100) + b"\x01"}, "z.tar"))


def test_tar_damaged_header_is_not_read_as_the_end(tmp_path: Path) -> None:
    # tarfile silently stops at an unreadable header after the first member; the blob in the
    # member behind it must not be reported as "no blob".
    text = c_source_for_blob(ffi_blob(3)).encode()
    plain = tvm_like_tar(tmp_path, {"lib0.c": LIB0_C.encode(), "devc.c": text}, "p.tar", gz=False)
    data = bytearray(plain.read_bytes())
    second = 512 + 512  # lib0.c header + one data block
    data[second + 148 : second + 156] = b"0000000\x00"  # wrong header checksum
    with pytest.raises(MalformedError) as info:
        locate_blobs(bytes(data))
    assert info.value.field == "tar.end" and info.value.offset == second
    gz = bytearray(tvm_like_tar(tmp_path, {"lib0.c": LIB0_C.encode(), "devc.c": text}).read_bytes())
    gz[-8] ^= 0xFF  # gzip CRC32 trailer
    with pytest.raises(MalformedError, match="CRC"):
        locate_blobs(bytes(gz))


def test_tar_member_errors_name_the_member(tmp_path: Path) -> None:
    text = c_source_for_blob(ffi_blob(3))
    tar = tvm_like_tar(tmp_path, {"devc.c": text[: len(text) // 2].encode()})
    with pytest.raises(TruncatedError) as info:
        locate_blobs(tar)
    assert f"{tar}[devc.c]" in str(info.value)


# --------------------------------------------------------------------------------------------
# Raw .bin and writers


def test_raw_bin(tmp_path: Path) -> None:
    blob = ffi_blob(100)
    (found,) = locate_blobs(blob)
    assert (found.source, found.symbol, found.prefix, found.file_offset) == ("raw", "", "", 0)
    assert found.data == blob and found.layout is None
    (after,) = locate_blobs(blob + b"\x00\x00")  # bytes after the prefixed size are not part of the blob
    assert after.data == blob and after.after_end == 2
    with pytest.raises(TruncatedError):
        locate_blobs(b"")
    with pytest.raises(TruncatedError):
        locate_blobs(b"\x01\x00\x00", kind="raw")
    with pytest.raises(UnsupportedError):
        locate_blobs(b"!<arch>\n" + bytes(100))


def test_raw_prefix_resembling_magic_is_still_raw() -> None:
    # nbytes = 0x5a4d starts with "MZ"; the exact size match identifies it as a blob.
    blob = _envelope(bytes(0x5A4D))
    assert blob[:2] == b"MZ"
    assert locate_blobs(blob)[0].data == blob


def test_write_bin_atomic(tmp_path: Path) -> None:
    blob = ffi_blob(7)
    out = tmp_path / "imports.bin"
    write_bin(blob, out)
    assert out.read_bytes() == blob
    assert locate_blobs(out)[0].data == blob
    write_bin(legacy_blob(), out)
    assert out.read_bytes() == legacy_blob()
    with pytest.raises(OutputExistsError):
        write_bin(blob, out, overwrite=False)
    with pytest.raises(ConstraintError):
        write_bin(blob + b"x", out)
    assert out.read_bytes() == legacy_blob()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["imports.bin"]
    fresh = tmp_path / "new.bin"
    write_bin(blob, str(fresh), overwrite=False)
    assert fresh.read_bytes() == blob
    assert oct(fresh.stat().st_mode & 0o777) == oct(0o666 & ~_umask())


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# --------------------------------------------------------------------------------------------
# Differential: a real apache-tvm export


def _opencl_kernel_module():  # noqa: ANN202
    import tvm
    from tvm.script import tirx as T

    @T.prim_func
    def add_one(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
        for i in T.thread_binding(64, thread="threadIdx.x"):
            B[i] = A[i] + T.float32(1)

    return tvm.IRModule({"add_one": add_one})


def _cpu_kernel_module():  # noqa: ANN202
    import tvm
    from tvm.script import tirx as T

    @T.prim_func
    def add_one_cpu(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
        for i in range(64):
            B[i] = A[i] + T.float32(1)

    return tvm.IRModule({"add_one_cpu": add_one_cpu})


@pytest.mark.tvm
def test_tvm_opencl_export_blob_matches_pack_imports(tmp_path: Path) -> None:
    tvm = pytest.importorskip("tvm")
    mod = _opencl_kernel_module()
    lib = tvm.compile(mod, target=tvm.target.Target("opencl", host="llvm"))
    assert [m.kind for m in lib.mod.imports] == ["opencl"]
    so, tar = tmp_path / "k.so", tmp_path / "k.tar"
    lib.export_library(str(so))
    lib.export_library(str(tar))

    pack = tvm.get_global_func("runtime.ModulePackImportsToTensor")
    packed = pack(lib.mod).numpy().tobytes()
    assert int.from_bytes(packed[:8], "little") == len(packed) - 8

    (in_so,) = locate_blobs(so)
    (in_tar,) = locate_blobs(tar)
    assert in_so.data == in_tar.data == packed
    assert (in_so.symbol, in_so.prefix, in_so.source) == (SYMBOL_FFI, "", "elf-shared-object")
    assert (in_tar.source, in_tar.container_member) == ("tar:devc.o", "devc.o")
    assert tvm.get_global_func("runtime.ModuleImportsBlobName")() == SYMBOL_FFI

    # Our C writer reproduces TVM's PackImportsToC byte for byte, with and without system-lib.
    to_c = tvm.get_global_func("runtime.ModulePackImportsToC")
    assert c_source_for_blob(packed) == to_c(lib.mod, False, "")
    assert c_source_for_blob(packed, system_lib_prefix="") == to_c(lib.mod, True, "")
    assert c_source_for_blob(packed, system_lib_prefix="pfx_") == to_c(lib.mod, True, "pfx_")
    (from_c,) = parse_c_source(to_c(lib.mod, True, "pfx_"))
    assert (from_c.prefix, from_c.data) == ("pfx_", packed)


@pytest.mark.tvm
def test_tvm_system_lib_and_c_host_exports(tmp_path: Path) -> None:
    tvm = pytest.importorskip("tvm")
    mod = _opencl_kernel_module()
    syslib = tvm.compile(
        mod.with_attr("system_lib_prefix", "net_"), target=tvm.target.Target("opencl", host="llvm")
    )
    syslib.export_library(str(tmp_path / "sys.tar"))
    (found,) = locate_blobs(tmp_path / "sys.tar")
    assert (found.prefix, found.symbol, found.container_member) == ("net_", SYMBOL_FFI, "net_devc.o")
    packed = tvm.get_global_func("runtime.ModulePackImportsToTensor")(syslib.mod).numpy().tobytes()
    assert found.data == packed

    chost = tvm.compile(mod, target=tvm.target.Target("opencl", host="c"))
    chost.export_library(str(tmp_path / "c.tar"))
    chost.export_library(str(tmp_path / "c.so"))
    (in_c,) = locate_blobs(tmp_path / "c.tar")
    (in_so,) = locate_blobs(tmp_path / "c.so")
    assert in_c.source == "tar:devc.c"
    assert in_c.data == in_so.data
    assert in_c.data == tvm.get_global_func("runtime.ModulePackImportsToTensor")(chost.mod).numpy().tobytes()


@pytest.mark.tvm
def test_tvm_cpu_only_export_has_no_blob(tmp_path: Path) -> None:
    tvm = pytest.importorskip("tvm")
    lib = tvm.compile(_cpu_kernel_module(), target="llvm")
    lib.export_library(str(tmp_path / "cpu.so"))
    lib.export_library(str(tmp_path / "cpu.tar"))
    assert locate_blobs(tmp_path / "cpu.so") == []
    assert locate_blobs(tmp_path / "cpu.tar") == []


def test_tar_extended_header_of_impossible_size_is_an_mlf_error() -> None:
    # Found by fuzzing (issue 11): a PAX header whose size field (base-256) exceeds any file
    # offset made tarfile raise OverflowError from locate_blobs; a merely huge one was read
    # into memory. Both are refused before tarfile reads the header.
    import tarfile as _tarfile

    for size in (8**11 - 1, 1 << 70):
        info = _tarfile.TarInfo("././@PaxHeader")
        info.type = _tarfile.XHDTYPE
        block = bytearray(info.tobuf(_tarfile.USTAR_FORMAT))
        block[124:136] = (b"\x80" + size.to_bytes(11, "big")) if size >= 8**11 else b"%011o\0" % size
        block[148:156] = b"%06o\0 " % (256 + sum(block[:148]) + sum(block[156:]))
        with pytest.raises(MlfError):
            locate_blobs(bytes(block) + bytes(1024))


def test_c_array_name_starting_with_a_digit_is_not_a_blob_definition() -> None:
    # Found by fuzzing (issue 11): "0__tvm_dev_mblob" was taken for a blob with the prefix
    # "0", which no C compiler accepts and c_source_for_blob then refused with ValueError.
    raw = (8).to_bytes(8, "little") + bytes(8)
    text = c_source_for_blob(raw).replace("__tvm_ffi__library_bin[", "0__tvm_ffi__library_bin[")
    assert locate_blobs(text.encode()) == []


def test_cli_extract_to_c_with_a_symbol_that_is_no_identifier_is_an_error(tmp_path: Path, capsys) -> None:
    from mlf_spec.cli import main
    from mlf_spec.fuzzing.seeds import elf_with_blob

    raw = (8).to_bytes(8, "little") + bytes(8)
    so = tmp_path / "lib.so"
    so.write_bytes(elf_with_blob(raw, "my.lib__tvm_ffi__library_bin", shared=True))
    assert [b.prefix for b in locate_blobs(so)] == ["my.lib"]
    assert main(["blob", "extract", str(so), "-o", str(tmp_path / "out.c")]) == 2
    assert capsys.readouterr().err.startswith("mlf-spec: error: ")
    assert main(["blob", "extract", str(so), "-o", str(tmp_path / "out.bin")]) == 0
    assert (tmp_path / "out.bin").read_bytes() == raw


def test_huge_symbol_tables_and_relocation_tables_are_scanned_at_once() -> None:
    # Found while stating limits (issue 11): 300,000 symbols named like the blob took pyelftools
    # over a minute, one by one; the tables are now scanned with NumPy, and more than 64
    # defined blob symbols in one table are refused (each would be read into memory).
    from mlf_spec.blob.locate import SYMBOL_FFI
    from mlf_spec.fuzzing.seeds import elf_with_blob

    raw = (16).to_bytes(8, "little") + bytes(16)
    data = bytearray(elf_with_blob(raw, SYMBOL_FFI))
    shoff = struct.unpack_from("<Q", data, 40)[0]
    symtab = shoff + 2 * 64
    undefined = struct.pack("<IBBHQQ", 1, 0x10, 0, 0, 0, 0)  # global, SHN_UNDEF: skipped
    defined = struct.pack("<IBBHQQ", 1, 0x11, 0, 1, 0, len(raw))
    for extra, expect in ((undefined * 200_000, [raw]), (defined * 100, None)):
        table = bytes(24) + extra + defined
        f = bytearray(data)
        struct.pack_into("<QQ", f, symtab + 24, len(f), len(table))
        f += table
        if expect is None:
            with pytest.raises(LengthError, match="blob symbols"):
                locate_blobs(bytes(f))
        else:
            assert [b.data for b in locate_blobs(bytes(f))] == expect


@pytest.mark.parametrize("decimal", [True, False])
def test_enormous_c_initializers_decode_in_windows(decimal: bool) -> None:
    # Issue 11: initializers other than TVM's hex are decoded window by window (memory near
    # the result's size) and a decimal literal of thousands of digits is an error, not the
    # ValueError Python raises past 4300 digits.
    raw = (300_000).to_bytes(8, "little") + bytes(range(256)) * 1171 + bytes(224)
    body = ",".join(str(b) if decimal else f"0{b:o}" if b else "0" for b in raw)
    text = f"unsigned char __tvm_ffi__library_bin[{len(raw)}] = {{{body}}};".encode()
    assert [b.data for b in locate_blobs(text)] == [raw]
    bad = text.replace(b",255,", b",256,", 1) if decimal else text.replace(b",0377,", b",0400,", 1)
    with pytest.raises(ConstraintError) as info:
        locate_blobs(bad)
    assert info.value.field == f"__tvm_ffi__library_bin[{8 + 255}]"
    huge = b"unsigned char __tvm_ffi__library_bin[1] = {" + b"1" * 5000 + b"};"
    with pytest.raises(ConstraintError):
        locate_blobs(huge)
    with pytest.raises(CountMismatchError):
        locate_blobs(b"unsigned char __tvm_ffi__library_bin[" + b"9" * 5000 + b"] = {1};")
