"""The structure-aware mutators of the fuzz targets, one per format (each a factory called
once per process), and the words and paths they and the fuzz dictionaries draw from."""

from __future__ import annotations

import functools
from typing import Any

from . import seeds as _seeds
from .mutators import FirstOf, Mutator, Prefixed


@functools.cache
def params_mutator() -> Mutator:
    """Spec mutator over the .params grammar."""
    from mlf_spec.generated import params_ir

    from .mutate_spec import SpecMutator

    return SpecMutator(params_ir.STRUCTS, [("params_file", None)], words=("w", "b", "p0", "", "\udcff"))


def blob_words() -> list[str]:
    from mlf_spec import blob

    return sorted(set(blob.known_kinds("ffi")) | set(blob.known_kinds("legacy")) | {"_lib", "_import_tree", "my_npu"})


@functools.cache
def blob_mutator() -> Mutator:
    """Spec mutator over both blob layouts, every era the strategies imitate."""
    from mlf_spec import strategies as ms
    from mlf_spec.generated import blob_ffi_ir, blob_legacy_ir

    from .mutate_spec import SpecMutator

    ffi = SpecMutator(blob_ffi_ir.STRUCTS, [("ffi_blob", e) for e in ms.BLOB_ERAS["ffi"]], words=blob_words())
    legacy = SpecMutator(blob_legacy_ir.STRUCTS, [("legacy_blob", e) for e in reversed(ms.BLOB_ERAS["legacy"])],
                         words=blob_words())
    return FirstOf((None, ffi), (None, legacy))


@functools.cache
def _payload_mutator(fmt: str, era: tuple[int, ...], kind: str) -> Mutator | None:
    from mlf_spec import blob
    from mlf_spec.generated import blob_ffi_ir, blob_legacy_ir

    from .mutate_spec import SpecMutator

    struct = blob.known_kinds(fmt).get(kind)
    if struct is None:
        return None
    structs = blob_ffi_ir.STRUCTS if fmt == "ffi" else blob_legacy_ir.STRUCTS
    return SpecMutator(structs, [(struct, era)], words=blob_words())


def payload_header(data: bytes) -> tuple[str, tuple[int, ...], str, int] | None:
    nl = data.find(b"\n", 0, 80)
    if nl < 0:
        return None
    parts = data[:nl].decode("ascii", "replace").split(" ")
    if len(parts) != 3:
        return None
    fmt, era_s, kind = parts
    try:
        era = tuple(int(x) for x in era_s.split("."))
    except ValueError:
        return None
    return fmt, era, kind, nl + 1


@functools.cache
def payload_mutator() -> Mutator:
    """Mutates the payload after the ``<format> <era> <kind>`` line with the kind's grammar,
    or the line itself (another kind, era or layout)."""
    from mlf_spec import strategies as ms

    def head(data: bytes) -> int | None:
        h = payload_header(data)
        return None if h is None else h[3]

    def inner(prefix: bytes) -> Mutator | None:
        h = payload_header(prefix)
        return None if h is None else _payload_mutator(h[0], h[1], h[2])

    def header(prefix: bytes, rng: Any) -> bytes:
        h = payload_header(prefix)
        fmt = rng.choice(("ffi", "legacy")) if h is None or rng.random() < 0.3 else h[0]
        era = rng.choice(ms.BLOB_ERAS.get(fmt, ms.BLOB_ERAS["ffi"]))
        kind = rng.choice(blob_words())
        return _seeds.payload_input(fmt, era, kind, b"")

    return Prefixed(head, inner, header)


@functools.cache
def container_mutator() -> Mutator:
    """ELF, C source, tar and raw-blob mutators, chosen by what the input looks like."""
    from .mutate_native import CSourceMutator, ElfMutator, c_source, elf_header
    from .mutate_tar import TarMutator

    b = blob_mutator()
    c = CSourceMutator(b)
    e = ElfMutator(b)
    tar = TarMutator({"*devc.c": c, "*devc.cc": c, "*.o": e, "*.so": e}, paths=("devc.c", "devc.o", "lib0.o",
                                                                                "sys_devc.c", "lib1.c"))
    return FirstOf((elf_header, e), (c_source, c), (None, tar), (None, b))


def graph_words() -> list[str]:
    from mlf_spec.generated import graph_json_models

    from .mutate_json import model_words

    return model_words(graph_json_models) + ["float32", "int8", "uint8", "float16", "bfloat16", "null", "tvm_op",
                                             "__nop", "__copy", "list_int", "list_shape", "list_str", "int64"]


@functools.cache
def graph_mutator() -> Mutator:
    """JSON mutator with the GraphExecutor JSON vocabulary."""
    from .mutate_json import JsonMutator

    return JsonMutator(graph_words())


def metadata_words() -> list[str]:
    import importlib

    from mlf_spec.mlf import metadata

    from .mutate_json import model_words

    mods = [importlib.import_module(f"mlf_spec.generated.mlf_v{v}_models") for v in metadata.VERSIONS]
    return model_words(*mods) + ["c -keys=cpu", "llvm", "1", "2", "12", "2022-01-01 00:00:00Z", "float32", "int8",
                                 "tvm_standalone_crt", "mlf_path", "./runtime", "default", "tvmgen_default___tvm_main__"]


@functools.cache
def metadata_mutator() -> Mutator:
    """JSON mutator with the vocabulary of every metadata version."""
    from .mutate_json import JsonMutator

    return JsonMutator(metadata_words())


def layout_paths() -> list[str]:
    from mlf_spec.mlf import layout

    out = []
    for e in layout.ENTRIES.values():
        p = e["path"]
        out.append(p.replace("{module}", "default").replace("{target}", "host").replace("{n}", "0")
                   .replace("{name}", "x").replace("{ext}", "c"))
    return sorted(set(out))


@functools.cache
def archive_mutator() -> Mutator:
    """Tar mutator whose members are mutated by their own format's mutator."""
    from .mutate_tar import TarMutator

    inner = {"*metadata.json": metadata_mutator(), "*.params": params_mutator(), "*.graph": graph_mutator(),
             "*graph.json": graph_mutator(), "*executor-config/graph/*.json": graph_mutator()}
    return FirstOf((None, TarMutator(inner, paths=layout_paths())), (None, metadata_mutator()))
