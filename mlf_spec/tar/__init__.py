"""Tar containers, read safely and written as CPython's tarfile writes them.

One reader (:mod:`mlf_spec.tar.read`) serves every tar the package opens: MLF archives, the
tars ``export_library`` writes (the blob locator) and the export-tar evidence, with one set of
limits (:class:`TarLimits`, and the decompression limits of :mod:`mlf_spec._compress`), one
set of messages and one form of field path (``tar.members[<index>](<name>)``, ``tar.end``).
:mod:`mlf_spec.tar.write` encodes headers for an exact or TVM-like rewrite.
"""

from .read import (
    BLOCK,
    DEFAULT_MAX_MEMBER,
    DEFAULT_MAX_MEMBERS,
    DIRECTORY,
    END_FIELD,
    FILE,
    MAX_EXTENDED_CHAIN,
    MAX_EXTENDED_HEADER,
    MAX_NAME_DEPTH,
    MAX_NAME_LENGTH,
    RECORD,
    TarEntry,
    TarLimits,
    check_end,
    check_extended_header,
    decompress_to,
    decompressed,
    member_field,
    normalize,
    plain_tar,
    read_entries,
    stream_size,
)
from .write import GNU_MAGIC, HeaderInfo, describe_header, encode_header, end_blocks

__all__ = ["BLOCK", "DEFAULT_MAX_MEMBER", "DEFAULT_MAX_MEMBERS", "DIRECTORY", "END_FIELD", "FILE", "GNU_MAGIC",
           "MAX_EXTENDED_CHAIN", "MAX_EXTENDED_HEADER", "MAX_NAME_DEPTH", "MAX_NAME_LENGTH", "RECORD", "HeaderInfo",
           "TarEntry", "TarLimits", "check_end", "check_extended_header", "decompress_to", "decompressed",
           "describe_header", "encode_header", "end_blocks", "member_field", "normalize", "plain_tar",
           "read_entries", "stream_size"]
