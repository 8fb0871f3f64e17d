"""What kind of artifact is this? Recognise TVM artifacts (and common look-alikes) by content.

    >>> from mlf_spec import sniff
    >>> sniff.sniff_path("model.tar").name
    'mlf-archive'

Only the first bytes are read (plus, for tars, the first member headers, decompressing at
most :data:`PEEK` bytes of a compressed tar), so sniffing a folder of large files is cheap.
Each :class:`Kind` names what it is and the command that reads it, for messages such as
"this is an MLF archive, not a .params file; try `mlf-spec check`".
"""

from __future__ import annotations

import functools
import io
import os
import struct
from pathlib import Path
from typing import IO, TYPE_CHECKING

from mlf_spec._internal.lean_dataclass import dataclass

from ._compress import COMPRESSION_MAGIC, peek

#: Bytes read from the start of a file to sniff it (and decompressed from a compressed tar).
PEEK = 64 * 1024



@functools.cache
def _params_magic() -> bytes:
    """The 8 bytes a .params file starts with (PARAMS_MAGIC of spec/binary/params.yaml), read
    from the generated constants when first needed (not at import: every command imports this)."""
    from mlf_spec.generated.params_ir import CONSTANTS

    return struct.pack("<Q", CONSTANTS["PARAMS_MAGIC"])


@functools.cache
def _folder_indexes() -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(kind, index file names, newest first) of each folder-shaped format (spec/tables/formats.yaml),
    read from the generated registry when first needed (not at import: every command imports this)."""
    from mlf_spec.generated.formats import INDEX_NAMES, SNIFF_KINDS

    return tuple((SNIFF_KINDS[fmt], names) for fmt, names in INDEX_NAMES.items())


@functools.cache
def _claimed_by_name() -> dict[str, tuple[str, ...]]:
    return {**_CLAIMED_BY_SUFFIX, **dict(_folder_indexes())}


def __getattr__(name: str) -> object:
    if name == "PARAMS_MAGIC_BYTES":
        return _params_magic()
    if name == "CACHE_INDEX_NAMES":  # the index names of a tensor cache folder, newest first
        return dict(_folder_indexes())["tensor-cache"]
    if name == "CLAIMED_BY_NAME":
        return _claimed_by_name()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True)
class Kind:
    """A recognised kind of input: ``name`` (stable id), ``label`` (for messages) and
    ``command`` (the mlf-spec command that reads it, or None)."""

    name: str
    label: str
    command: str | None = None

    def hint(self) -> str:
        """``this is <label>`` plus ``; try `<command>``` when a command reads it."""
        return f"this is {self.label}" + (f"; try `{self.command}`" if self.command else "")


KINDS: dict[str, Kind] = {k.name: k for k in (
    Kind("params", "a TVM .params tensor file", "mlf-spec params dump"),
    Kind("mlf-archive", "an MLF archive", "mlf-spec check"),
    Kind("mlf-metadata", "an MLF metadata.json document", "mlf-spec check"),
    Kind("graph-json", "a GraphExecutor JSON document", "mlf-spec check"),
    Kind("library", "an ELF shared library or object file", "mlf-spec blob dump"),
    Kind("c-source", "C source holding a TVM module blob (devc.c)", "mlf-spec blob dump"),
    Kind("export-tar", "a tar written by export_library", "mlf-spec blob dump"),
    Kind("blob", "a raw TVM module blob", "mlf-spec blob dump"),
    Kind("tensor-cache", "a tensor cache (tensor-cache.json / ndarray-cache.json and shards)", "mlf-spec cache dump"),
    Kind("npz", "a NumPy .npz archive", "mlf-spec params convert"),
    Kind("safetensors", "a safetensors file", "mlf-spec params convert"),
    Kind("tar", "a tar archive that is neither an MLF archive nor an export_library tar"),
    Kind("compressed", "a compressed file whose first block does not decompress"),
    Kind("compressed-data", "a compressed file that holds no tar archive"),
    Kind("zip", "a zip archive"),
    Kind("json", "a JSON document of no known kind"),
    Kind("text", "a text file of no known kind"),
    Kind("directory", "a directory without metadata.json (not an extracted MLF archive)"),
    Kind("empty", "an empty file"),
    Kind("unknown", "a file of no known kind"),
)}

#: Kinds that mlf-spec reads (the others are only named in messages).
ARTIFACT_KINDS = frozenset({"params", "mlf-archive", "mlf-metadata", "graph-json", "library", "c-source",
                            "export-tar", "blob", "npz", "safetensors", "tensor-cache"})

if TYPE_CHECKING:  # read from the formats registry when first used (see __getattr__)
    #: The index names of a tensor cache folder (spec/tables/formats.yaml), newest first.
    CACHE_INDEX_NAMES: tuple[str, ...]
    #: What each kind's file names end with (:data:`_CLAIMED_BY_SUFFIX` and the folder formats' index names).
    CLAIMED_BY_NAME: dict[str, tuple[str, ...]]
    PARAMS_MAGIC_BYTES: bytes

#: Kinds that are no artifact mlf-spec reads (nor a damaged one: a tar of no known kind and a
#: compressed file that does not decompress may be damaged MLF archives, and are read as such).
NOT_ARTIFACT_KINDS = frozenset({"compressed-data", "zip", "json", "text", "empty", "unknown"})


def not_an_artifact(kind: Kind) -> str:
    """The one message every command gives for an input of a kind in :data:`NOT_ARTIFACT_KINDS`."""
    return f"not an artifact mlf-spec reads ({kind.label})"


#: File name endings that claim a kind: content of no known kind under such a name is read as
#: that kind (a damaged .params file, a truncated .tar.gz), so that the reader says what is wrong.
#: ``CLAIMED_BY_NAME`` is these and each folder format's index names.
_CLAIMED_BY_SUFFIX: dict[str, tuple[str, ...]] = {
    "params": (".params",),
    "mlf-archive": (".tar", ".tgz", ".tar.gz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz"),
    "blob": (".bin",),
}


def claimed_kind(name: str) -> str | None:
    """The kind a file name claims (``CLAIMED_BY_NAME``), or None."""
    base = os.path.basename(name).lower()
    return next((k for k, ends in _claimed_by_name().items() if base.endswith(ends)), None)


def sniff_path(path: str | os.PathLike[str]) -> Kind:
    """The kind of the file or directory at ``path`` (``unknown`` if it cannot be read)."""
    p = Path(path)
    if p.is_dir():
        if (p / "metadata.json").is_file():
            return KINDS["mlf-archive"]
        for kind, names in _folder_indexes():
            if any((p / n).is_file() for n in names):
                return KINDS[kind]
        return KINDS["directory"]
    if p.exists() and not p.is_file():
        return KINDS["unknown"]  # a FIFO would wait for a writer, a device may never end: not opened
    try:
        with open(p, "rb") as f:
            head = f.read(PEEK)
            if compression(head) is not None:
                f.seek(0)
                return _sniff_compressed(f)
    except OSError:
        return KINDS["unknown"]
    return sniff_bytes(head, size=p.stat().st_size, name=p.name)


def _names_a_blob(head: bytes) -> bool:
    """Whether ``head`` names a blob symbol (spec/tables/blob_facts.yaml, loaded when first needed)."""
    from mlf_spec._blob_facts import BLOB_SYMBOL_BYTES

    return any(s in head for s in BLOB_SYMBOL_BYTES)


def sniff_bytes(data: bytes | bytearray | memoryview, *, size: int | None = None, name: str = "") -> Kind:
    """The kind of an input given its first bytes (``size``: the whole input's size, if
    ``data`` is only its start; ``name``: a file name whose extension may break a tie)."""
    head = bytes(data[:PEEK])
    size = len(data) if size is None else size
    if not head:
        return KINDS["empty"]
    if head[:8] == _params_magic():
        return KINDS["params"]
    if head[:4] == b"\x7fELF":
        return KINDS["library"]
    if compression(head) is not None:
        return _sniff_compressed(io.BytesIO(bytes(data)))
    if _is_tar(head):
        return _tar_kind(head)
    if len(head) >= 1024 and not head[:1024].strip(b"\0"):
        return KINDS["tar"]  # two zero blocks: an empty tar archive (tar reads it so), as a damaged archive may be
    if head[:4] == b"PK\x03\x04":
        return KINDS["npz"] if name.endswith(".npz") else KINDS["zip"]
    if len(head) >= 9 and head[8:9] == b"{" and struct.unpack_from("<Q", head)[0] < size:
        return KINDS["safetensors"]
    if len(head) >= 8 and struct.unpack_from("<Q", head)[0] == size - 8 and size > 8:
        return KINDS["blob"]
    text = head.lstrip()
    if text[:1] == b"{":
        return _json_kind(head, size)
    if _names_a_blob(head):
        return KINDS["c-source"]
    if _looks_like_text(head):
        return KINDS["text"]
    return KINDS["unknown"]


def compression(head: bytes) -> str | None:
    """``gzip``, ``bzip2`` or ``xz`` from the first bytes of a compressed file, else None."""
    return next((kind for kind, magic in COMPRESSION_MAGIC.items() if head.startswith(magic)), None)


def _sniff_compressed(f: IO[bytes]) -> Kind:
    from mlf_spec.errors import MlfError

    kind = compression(f.read(6))
    f.seek(0)
    try:
        # the readers' own bounded decompressor: a corrupt stream (zlib.error from gzip) or an
        # xz header asking for gigabytes of dictionary is an MlfError here, not a crash
        head = peek(f, kind, PEEK) if kind is not None else b""
    except MlfError:
        return KINDS["compressed"]
    if _is_tar(head):
        return _tar_kind(head)
    return KINDS["compressed-data"]  # it decompresses, to something else: a compressed log, not an archive


def _is_tar(head: bytes) -> bool:
    if len(head) >= 262 and head[257:262] == b"ustar":
        return True
    if len(head) < 512:
        return False
    stored = head[148:156].split(b"\x00")[0].strip()
    try:
        checksum = int(stored or b"x", 8)
    except ValueError:
        return False
    block = head[:148] + b" " * 8 + head[156:512]
    return checksum == sum(block)


def _tar_kind(head: bytes) -> Kind:
    """MLF archive or export_library tar, from the member names in the first headers: a root
    metadata.json or an MLF folder (codegen/, parameters/, ...) makes an MLF archive, even when
    a ``codegen/host/src/lib0.c`` comes first; export_library writes its files (``lib0.o``,
    ``devc.c``, ...) at the root, never in folders."""
    names = [n.removeprefix("./").rstrip("/") for n in _member_names(head)]
    names = [n.removeprefix("./") for n in names if n not in ("", ".")]
    if "metadata.json" in names or any(n.split("/")[0] in _MLF_FOLDERS for n in names if "/" in n):
        return KINDS["mlf-archive"]
    if any("/" not in n and (n.startswith("devc.") or n.startswith("lib") and n.endswith((".o", ".c", ".cc")))
           for n in names):
        return KINDS["export-tar"]
    return KINDS["tar"]


_MLF_FOLDERS = frozenset({"codegen", "parameters", "executor-config", "runtime-config", "src", "templates", "runtime"})


def _member_names(head: bytes) -> list[str]:
    names: list[str] = []
    pos = 0
    while pos + 512 <= len(head):
        block = head[pos:pos + 512]
        if block == b"\x00" * 512:
            break
        name = block[:100].split(b"\x00")[0].decode("utf-8", "replace")
        prefix = block[345:500].split(b"\x00")[0].decode("utf-8", "replace") if block[257:262] == b"ustar" else ""
        names.append(f"{prefix}/{name}" if prefix else name)
        try:
            size = int(block[124:136].split(b"\x00")[0].strip() or b"0", 8)
        except ValueError:
            break
        pos += 512 + (size + 511) // 512 * 512
    return names


def _json_kind(head: bytes, size: int | None = None) -> Kind:
    if b'"records"' in head and b'"dataPath"' in head:
        return KINDS["tensor-cache"]
    if size is not None and size <= len(head):  # the whole document: decide on its top-level keys
        import json

        try:
            doc = json.loads(head)
        except (ValueError, RecursionError):
            return KINDS["json"]
        if not isinstance(doc, dict):
            return KINDS["json"]
        if "arg_nodes" in doc or "node_row_ptr" in doc or "nodes" in doc and "heads" in doc:
            return KINDS["graph-json"]
        if "version" in doc and any(k in doc for k in _METADATA_KEYS):
            return KINDS["mlf-metadata"]
        return KINDS["json"]
    if b'"arg_nodes"' in head or b'"node_row_ptr"' in head:
        return KINDS["graph-json"]
    if b'"version"' in head and any(b'"%s"' % k.encode() in head for k in _METADATA_KEYS):
        return KINDS["mlf-metadata"]
    if b'"nodes"' in head and b'"heads"' in head:
        return KINDS["graph-json"]
    return KINDS["json"]


_METADATA_KEYS = ("modules", "memory", "model_name", "style", "export_datetime", "target")


def _looks_like_text(head: bytes) -> bool:
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 4:  # a character cut at the end of the peek is fine
            return False
    return b"\x00" not in head


__all__ = ["ARTIFACT_KINDS", "KINDS", "NOT_ARTIFACT_KINDS", "PEEK", "Kind", "compression", "not_an_artifact",
           "sniff_bytes", "sniff_path"]
