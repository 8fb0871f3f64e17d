"""A Kaitai-generated Python parser as an implementation under test.

:class:`KaitaiTestee` reads .params files and module blobs with the Python parsers that a
Kaitai Struct compiler made from the exported .ksy files, and answers in mlf-spec's terms:
the value tree of the spec (as :func:`mlf_spec._internal.spec_engine.trace` gives it), or a refusal
naming the ``mlf_spec.errors`` class that mlf-spec raises for the rule the parser found broken
(each validated field of the .ksy carries it as ``-mlf-error``). Its interface follows the
conformance kit's adapter API (``name``, ``info()``, ``decode(format, data, options)`` with the
options ``dialect`` for .params and ``layout``/``era`` for blobs), so that the kit's
``--adapter kaitai-python`` is this object plus the kit's canonical form of a value tree.

What the parsers cannot check is in generated/docs/kaitai.md; :data:`KNOWN_GAPS` names the
broken kinds of mlf-spec's strategies that they therefore accept.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from mlf_spec.errors import MlfError

from . import roots

#: Broken kinds of mlf_spec.strategies whose rule the .ksy cannot state, with the reason:
#: the generated parsers read such files (as TVM's loaders do).
KNOWN_GAPS: dict[str, str] = {
    "duplicate_lib_legacy": "legacy_body rule single_lib (count_where) has no Kaitai form: no reduction over an array",
    "unknown_code:dl_datatype.code": "a dtype code no TVM version defines is kept (spelled unknown(...)); refusing "
                                     "it is mlf-spec's policy (params strict mode), not a rule of the byte layout",
}

#: The environment variable naming a directory of generated Python parsers (when none is given).
PARSERS_ENV = "MLF_SPEC_KAITAI_PYTHON"


class Refused(MlfError):
    """The generated parser refused the input; ``mlf_error`` is the mlf_spec.errors class name
    mlf-spec raises for the same fault (as far as the parser's error tells)."""

    def __init__(self, message: str, mlf_error: str) -> None:
        super().__init__(message)
        self.mlf_error = mlf_error


def _ksy_entries() -> dict[str, dict[str, Any]]:
    """'/types/<type>/seq/<i>' (and '/seq/<i>' per file) -> the .ksy seq entry, as Kaitai's
    validation errors name them."""
    import yaml

    from . import ksy_files

    out: dict[str, dict[str, Any]] = {}

    def walk(t: dict[str, Any], prefix: str) -> None:
        for i, e in enumerate(t.get("seq", [])):
            out[f"{prefix}/seq/{i}"] = e
        for name, sub in t.get("types", {}).items():
            walk(sub, f"{prefix}/types/{name}")

    for name, data in ksy_files().items():
        walk(yaml.safe_load(data), f"{name.removesuffix('.ksy')}:")
    return out


_ENTRIES: dict[str, dict[str, Any]] | None = None


def mlf_error_of(exc: BaseException) -> str:
    """The mlf_spec.errors class name for an exception of Kaitai's Python runtime."""
    global _ENTRIES
    from kaitaistruct import EndOfStreamError, ValidationFailedError

    if isinstance(exc, EndOfStreamError):
        return "TruncatedError"
    if isinstance(exc, ValidationFailedError):
        if _ENTRIES is None:
            _ENTRIES = _ksy_entries()
        entry = _ENTRIES.get(f"{_raising_module(exc)}:{getattr(exc, 'src_path', '')}") or {}
        error = entry.get("-mlf-error", "ConstraintError")
        if isinstance(error, dict):  # one class per part of the rule: {min: ..., max: ...}
            key = {"ValidationGreaterThanError": "max", "ValidationLessThanError": "min",
                   "ValidationNotEqualError": "eq", "ValidationNotAnyOfError": "any-of"}.get(type(exc).__name__, "expr")
            error = error.get(key, "ConstraintError")
        return str(error)
    return "MlfError"


def _raising_module(exc: BaseException) -> str | None:
    """The generated module (= .ksy id) whose code raised: src_path is relative to its file."""
    from kaitaistruct import KaitaiStruct

    found = None
    tb = exc.__traceback__
    while tb is not None:
        obj = tb.tb_frame.f_locals.get("self")
        if isinstance(obj, KaitaiStruct):
            found = type(obj).__module__
        tb = tb.tb_next
    return found


class KaitaiTestee:
    """The generated Python parsers in ``parsers`` (default: ``$MLF_SPEC_KAITAI_PYTHON``)."""

    name = "kaitai-python"

    def __init__(self, parsers: str | os.PathLike[str] | None = None) -> None:
        where = parsers or os.environ.get(PARSERS_ENV)
        if not where:
            raise MlfError(f"no Kaitai-generated Python parsers: compile the .ksy files (`mlf-spec export ksy DIR`, "
                           f"then `kaitai-struct-compiler -t python --outdir OUT DIR/*.ksy`) and pass OUT or set "
                           f"{PARSERS_ENV}")
        from .reading import PythonParsers

        self.parsers = PythonParsers(Path(where))

    def info(self) -> dict[str, Any]:
        """What it reads: .params in every dialect, both blob layouts in every era (decode only)."""
        import kaitaistruct

        from mlf_spec.generated.formats import PROTOCOL

        return {"protocol": PROTOCOL, "name": "kaitai-struct generated Python parser",
                "version": f"kaitaistruct {getattr(kaitaistruct, '__version__', '?')}",
                "formats": [{"format": "params", "roles": ["decode"]}, {"format": "blob", "roles": ["decode"]}]}

    def decode(self, format: str, data: bytes, options: dict[str, str]) -> dict[str, Any]:  # noqa: A002
        """The value tree of ``data`` (``format`` params or blob); raises Refused."""
        spec, era = spec_and_era(format, options)
        if spec not in roots():
            raise MlfError(f"no .ksy reads {format} ({spec})")
        try:
            return self.parsers.read(spec, data, era)
        except Exception as exc:  # whatever the generated parser raises is its refusal
            if isinstance(exc, MlfError):
                raise
            raise Refused(f"{type(exc).__name__}: {exc}", mlf_error_of(exc)) from None


def spec_and_era(format: str, options: dict[str, str]) -> tuple[str, tuple[int, ...]]:  # noqa: A002
    from mlf_spec.blob.codec import LATEST
    from mlf_spec.blob.eras import era_of
    from mlf_spec.params import dtypes

    if format == "params":
        d = dtypes.dialect(options.get("dialect")) if options.get("dialect") else dtypes.LATEST
        return "params", d.since
    if format == "blob":
        layout = options.get("layout") or "ffi"
        era = options.get("era")
        return f"blob_{layout}", LATEST if era in (None, "latest") else era_of(era, layout)
    raise MlfError(f"the Kaitai specs read params and blob, not {format}")
