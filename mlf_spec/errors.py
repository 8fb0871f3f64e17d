"""The exception family of mlf-spec.

Every failure caused by the content of an artifact is an :class:`MlfError` (or a
subclass) that names, where known, the file, the field path inside the format and the
byte offset at which the problem was found. Callers can catch ``MlfError`` alone.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # every command imports this module: no typing or dataclasses at start-up
    from collections.abc import Iterable


class MlfError(Exception):
    """Root of every error mlf-spec raises for bad or unsupported input.

    ``file`` is the path (or a description such as ``<bytes>``) of the artifact,
    ``field`` the dotted field path inside it (``arrays[3].shape[1]``) and ``offset``
    the byte offset inside ``file`` where the field starts.
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        field: str | None = None,
        offset: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.field = field
        self.offset = offset

    def with_file(self, file: str) -> MlfError:
        """Return self after recording ``file`` if no file was recorded yet."""
        if self.file is None:
            self.file = file
        return self

    def prefixed(self, prefix: str) -> MlfError:
        """Return self with ``prefix`` put in front of the field path (for nested fields)."""
        if not self.field:
            self.field = prefix
        elif self.field.startswith("["):
            self.field = prefix + self.field
        else:
            self.field = f"{prefix}.{self.field}"
        return self

    def shifted(self, base: int) -> MlfError:
        """Return self with the offset moved by ``base`` (for nested containers)."""
        if self.offset is not None:
            self.offset += base
        return self

    def __str__(self) -> str:
        where = []
        if self.file is not None:
            where.append(self.file)
        if self.field:
            where.append(self.field)
        if self.offset is not None:
            where.append(f"offset {self.offset} (0x{self.offset:x})")
        prefix = ": ".join(where)
        return f"{prefix}: {self.message}" if prefix else self.message


class MalformedError(MlfError):
    """The bytes do not follow the format's grammar."""


class TruncatedError(MalformedError):
    """The input ends before a field that the grammar requires."""


class ConstMismatchError(MalformedError):
    """A field with a fixed value (a magic number, a key) holds another value."""


class CountMismatchError(MalformedError):
    """Two counts that the format requires to be equal differ."""


class LengthError(MalformedError):
    """A length, count or size read from the input exceeds what the input can hold."""


class ConstraintError(MalformedError):
    """A field value breaks a constraint the spec states (range, relation, table)."""


class UnknownDtypeError(ConstraintError):
    """A DLDataType code is not defined in the dialect that is being read."""


class UnsupportedError(MlfError):
    """Valid input that this reader cannot interpret (for example an unknown module kind
    in a legacy blob, whose payload has no length and cannot be skipped)."""


class AmbiguousDialectError(UnsupportedError):
    """A .params file reads differently in several dtype dialects and the caller named
    none; ``candidates`` are the dialect ids (the CLI exits with status 1: a refusal)."""

    def __init__(self, message: str, candidates: list[str], *, file: str | None = None, field: str | None = None,
                 offset: int | None = None) -> None:
        super().__init__(message, file=file, field=field, offset=offset)
        self.candidates = candidates


class UnsafeArchiveError(MlfError):
    """An archive member would escape the destination, is a link or device, is duplicated
    or exceeds the member size limit."""


class Issue:
    """One problem of a document: ``kind`` is ``schema`` or ``unknown-key``. Immutable,
    compared and hashed by value (a plain class: ``dataclasses`` costs every command ~9 ms of
    start-up, and this module is imported by all of them)."""

    __slots__ = ("path", "message", "kind")
    path: str
    message: str
    kind: str

    def __init__(self, path: str, message: str, kind: str = "schema") -> None:
        object.__setattr__(self, "path", path)
        object.__setattr__(self, "message", message)
        object.__setattr__(self, "kind", kind)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Issue is immutable: cannot set {name!r}")

    def _key(self) -> tuple[str, str, str]:
        return (self.path, self.message, self.kind)

    def __eq__(self, other: object) -> bool:
        return self._key() == other._key() if isinstance(other, Issue) else NotImplemented

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"Issue(path={self.path!r}, message={self.message!r}, kind={self.kind!r})"


class ValidationError(MlfError):
    """A document (metadata JSON, graph JSON) does not match the model for its version;
    ``issues`` are all its problems when they were collected (the message names the first)."""

    def __init__(self, message: str, *, issues: Iterable[Issue] = (), file: str | None = None,
                 field: str | None = None, offset: int | None = None) -> None:
        super().__init__(message, file=file, field=field, offset=offset)
        self.issues: list[Issue] = list(issues)


class MigrationError(MlfError):
    """A migration cannot be planned or applied.

    ``refusal`` names the declared refusal (``step.refusal``, e.g. ``v6_v7.several_modules``)
    when the migration is impossible for this source, else None. ``source_version``,
    ``style`` and ``kind`` (``archive`` or ``document``) describe the source when the error
    arose while planning a source that was read (else None): ``mlf-spec upgrade --json``
    reports them."""

    def __init__(self, message: str, *, refusal: str | None = None, source_version: int | None = None,
                 style: str | None = None, kind: str | None = None, file: str | None = None,
                 field: str | None = None, offset: int | None = None) -> None:
        super().__init__(message, file=file, field=field, offset=offset)
        self.refusal = refusal
        self.source_version = source_version
        self.style = style
        self.kind = kind

    def of_source(self, version: int, style: str, kind: str) -> MigrationError:
        """Return self after recording the source's version, style and kind."""
        self.source_version, self.style, self.kind = version, style, kind
        return self


class LossRefusedError(MigrationError):
    """A migration would lose information that the caller did not accept: ``losses`` are
    the names (``step.loss``) of the losses not accepted."""

    def __init__(self, message: str, *, losses: Iterable[str] = (), file: str | None = None,
                 field: str | None = None, offset: int | None = None) -> None:
        super().__init__(message, file=file, field=field, offset=offset)
        self.losses: list[str] = list(losses)


class CannotOpenError(MlfError):
    """The input could not be opened or its folder not listed (permissions, a directory
    named as a file): no reader saw its bytes."""


class OutputExistsError(MlfError):
    """The output path exists and the caller did not ask to replace it."""


class NotAnArtifactError(MlfError):
    """The input is none of the artifacts mlf-spec reads (e.g. an ELF program that neither
    carries a module blob nor shows any sign of TVM's code generator)."""
