"""The reference testee: mlf-spec itself (``--adapter mlf-spec``; ``mlf-spec conformance
testee ...`` on the command line). It must pass every vector."""

from __future__ import annotations

from typing import Any

from mlf_spec.errors import MlfError

from .. import canonical
from ..folders import FOLDER_FORMATS, OUTPUT_DIR
from .base import Adapter, Rejected


class MlfSpecAdapter(Adapter):
    """mlf-spec's own readers and writers, in process."""

    name = "mlf-spec"

    def info(self) -> dict[str, Any]:
        """Every format, every role mlf-spec has, no scope restriction."""
        from mlf_spec import __version__
        from mlf_spec.generated.formats import PROTOCOL

        return {"protocol": PROTOCOL, "name": "mlf-spec", "version": __version__, "serve": True,
                "formats": [{"format": f, "roles": list(canonical.ROLES[f])} for f in canonical.FORMATS]}

    def decode(self, format: str, data: bytes, options: dict[str, str]) -> Any:  # noqa: A002
        """mlf-spec's canonical reading."""
        try:
            return canonical.decode(format, data, options)
        except MlfError as exc:
            raise Rejected(str(exc), canonical.error_class(exc)) from None

    def encode(self, format: str, reading: Any, options: dict[str, str]) -> bytes:  # noqa: A002
        """mlf-spec's writer (a folder-shaped format: into ``options["output_dir"]``)."""
        try:
            if format in FOLDER_FORMATS:
                from ..canonical_cache import encode_folder

                encode_folder(format, reading, options, options[OUTPUT_DIR])
                return b""
            return canonical.encode(format, reading, options)
        except MlfError as exc:
            raise Rejected(str(exc), canonical.error_class(exc)) from None

    def migrate(self, format: str, data: bytes, options: dict[str, str]) -> Any:  # noqa: A002
        """mlf-spec's migrations, accepting every loss."""
        try:
            return canonical.migrate(format, data, options)
        except MlfError as exc:
            raise Rejected(str(exc), canonical.error_class(exc)) from None


ADAPTER = MlfSpecAdapter
