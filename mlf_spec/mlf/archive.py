"""Model Library Format archives: open, inspect, write back exactly, build, extract safely.

    >>> from mlf_spec import archive
    >>> with archive.open("model.tar") as a:          # a tarball, a directory or a binary file
    ...     a.version, a.style, list(a.modules)
    ...     mod = a.modules["add"]
    ...     [i.name for i in mod.params.index]         # lazy params index, zero-copy
    ...     mod.graph.input_names()                    # typed GraphExecutor JSON
    ...     assert a.to_bytes() == open("model.tar", "rb").read()   # exact round trip

Reading streams the tar headers (no member data is read until asked for) and refuses unsafe
members (:class:`~mlf_spec.errors.UnsafeArchiveError`). Every member keeps its stored name,
position and header blocks, so writing an archive that was read reproduces it byte for
byte. :func:`build` writes a new archive the way TVM's writer did for the version and style
(layout, ``.`` first, ``./`` names, sorted depth-first order, modes, owners, PAX headers,
metadata dumped with the style's json options). Layouts come from spec/layouts/mlf_layout.yaml
through :mod:`mlf_spec.layout`; metadata models from :mod:`mlf_spec.metadata`.
"""

from __future__ import annotations

import builtins
import contextlib
import copy
import functools
import io
import mmap
import os
import re
import stat
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from mlf_spec import sniff as _sniff
from mlf_spec import tar as _tar
from mlf_spec._io import FileSpan, atomic_writer, describe, open_regular, read_at
from mlf_spec._records import load_json
from mlf_spec.errors import MalformedError, MlfError, OutputExistsError, UnsafeArchiveError, ValidationError
from mlf_spec.graph import codec as _graph
from mlf_spec.params import codec as _params

from . import layout as _layout
from . import metadata as _md

Source = str | os.PathLike | bytes | bytearray | memoryview | IO[bytes]
DEFAULT_MAX_MEMBER_SIZE = _tar.DEFAULT_MAX_MEMBER
DEFAULT_MAX_MEMBERS = _tar.DEFAULT_MAX_MEMBERS
DEFAULT_MAX_TOTAL_SIZE = 8 << 30
METADATA: str = _layout.ENTRIES["metadata"]["path"]


class Member:
    """One member: ``name`` as stored (``./src/add.relay``), ``path`` relative to the root
    (``src/add.relay``, ``.`` for the root), ``is_dir``, ``size`` and the tar header fields
    (``mode``, ``uid``, ``gid``, ``uname``, ``gname``, ``mtime``, ``pax_headers``; ``header``
    describes the header blocks as read: format, type flag, extended records). The data is
    read on demand: :meth:`view` (zero-copy where the source allows) or :meth:`read`."""

    def __init__(self, name: str, path: str, is_dir: bool, size: int, *, mode: int = 0o644, uid: int = 0,
                 gid: int = 0, uname: str = "", gname: str = "", mtime: float = 0,
                 pax_headers: dict[str, str] | None = None, raw_header: bytes | None = None,
                 loader: Any = None, group: str = "main") -> None:
        self.name = name
        self.path = path
        self.is_dir = is_dir
        self.size = size
        self.mode = mode
        self.uid, self.gid, self.uname, self.gname = uid, gid, uname, gname
        self.mtime = mtime
        self.pax_headers = dict(pax_headers or {})
        self.raw_header = raw_header
        self.header: _tar.HeaderInfo | None = _tar.describe_header(raw_header) if raw_header else None
        # the bytes between the data and the next block as read, when they are not zeros
        # (kept so that such an archive is still written back byte for byte)
        self.raw_padding: bytes | None = None
        self._loader = loader
        self.group = group

    def view(self) -> memoryview:
        """The member's bytes (zero-copy for mapped tar files and bytes; a copy read by pread
        for a tar opened with ``mapped=False``; read for directories)."""
        if self.is_dir:
            return memoryview(b"")
        loader = self._loader
        data = b"" if loader is None else loader.read() if isinstance(loader, FileSpan) else loader()
        return data if isinstance(data, memoryview) else memoryview(data)

    def pieces(self, chunk: int = 1 << 20) -> Iterator[memoryview]:
        """The member's bytes in order, as buffers: for a tar opened with ``mapped=False``
        copies of at most ``chunk`` bytes read one at a time; otherwise one view."""
        if isinstance(self._loader, FileSpan) and not self.is_dir:
            yield from self._loader.pieces(chunk)
        else:
            yield self.view()

    def read(self) -> bytes:
        """A copy of the member's bytes."""
        return bytes(self.view())

    def text(self) -> str:
        """The member decoded as UTF-8 (raises ValidationError otherwise)."""
        try:
            return self.read().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValidationError(f"not UTF-8 text: {exc.reason}", field=self.name, offset=exc.start) from None

    def tar_entry(self) -> _tar.TarEntry:
        """The header fields as a tar entry (to encode a header)."""
        return _tar.TarEntry(self.name, self.path, _tar.DIRECTORY if self.is_dir else _tar.FILE, self.size,
                             self.mode, self.uid, self.gid, self.uname, self.gname, self.mtime, dict(self.pax_headers))

    def __repr__(self) -> str:
        return f"<Member {self.name!r} {'dir' if self.is_dir else f'{self.size} bytes'}>"


class Module:
    """One module of an archive: ``name``, its ``metadata`` record, its files by kind
    (``files``: content kind -> member paths) and lazy accessors for params, graph and text."""

    def __init__(self, archive: Archive, name: str, metadata: Any) -> None:
        self.archive = archive
        self.name = name
        self.metadata = metadata
        self.files: dict[str, list[str]] = {}
        self._params: _params.LazyParams | None = None
        self._graph: _graph.GraphDocument | None = None

    def field(self, key: str) -> Any:
        """A key of the module's metadata (typed record or plain dict), None when absent."""
        rec = self.metadata
        return rec.get(key) if isinstance(rec, dict) else getattr(rec, key, None)

    @property
    def executor(self) -> str | None:
        """``graph`` or ``aot`` (None for operator modules)."""
        ex = self.field("executors") or self.field("runtimes") or []
        return ex[0] if isinstance(ex, list) and ex and isinstance(ex[0], str) else None

    @property
    def targets(self) -> list[str]:
        """Target strings (the values of a version 1-5 target dict)."""
        t = self.field("target")
        values = list(t.values()) if isinstance(t, dict) else list(t) if isinstance(t, list) else []
        return [v for v in values if isinstance(v, str)]

    def member(self, kind: str) -> Member | None:
        """The first member of a content kind (``params``, ``graph_json``, ``relay_text`` ...)."""
        paths = self.files.get(kind) or []
        return self.archive.member(paths[0]) if paths else None

    @property
    def params(self) -> _params.LazyParams | None:
        """The module's parameters opened lazily over the archive's bytes (index of name,
        dtype, shape, offset, nbytes; zero-copy views). None without a params member."""
        if self._params is None:
            m = self.member("params")
            if m is None:
                return None
            try:
                self._params = _params.open(m.view())
            except MlfError as exc:
                raise exc.with_file(f"{self.archive.file}:{m.name}") from None
        return self._params

    @property
    def graph(self) -> _graph.GraphDocument | None:
        """The module's GraphExecutor JSON, parsed and validated (None for AOT/operator)."""
        if self._graph is None:
            m = self.member("graph_json")
            if m is None:
                return None
            self._graph = _graph.parse(m.read(), lenient=True, file=f"{self.archive.file}:{m.name}")
        return self._graph

    @property
    def relay_text(self) -> str | None:
        """The Relay text of a full-model module."""
        m = self.member("relay_text")
        return m.text() if m is not None else None

    @property
    def tir_texts(self) -> dict[str, str]:
        """TIR text per member path (operator modules)."""
        return {p: self.archive.member(p).text() for p in self.files.get("tir_text", [])}  # type: ignore[union-attr]  # the names come from the archive's own placements, so member() finds them

    @property
    def sources(self) -> list[str]:
        """Member paths of the generated C/C++ sources."""
        return list(self.files.get("c_source", []))

    @property
    def objects(self) -> list[str]:
        """Member paths of the generated object files."""
        return list(self.files.get("object_file", []))

    @property
    def headers(self) -> list[str]:
        """Member paths of the C interface headers."""
        return list(self.files.get("c_header", []))

    def close(self) -> None:
        """Release the params mapping."""
        if self._params is not None:
            self._params.close()
            self._params = None

    def __repr__(self) -> str:
        return f"<Module {self.name!r} {self.executor or 'operator'}>"


class Archive:
    """An MLF archive read from a tar, a directory or bytes, or built new. See the module doc."""

    def __init__(self, members: list[Member], *, file: str, container: str, compression: str | None = None,
                 trailer: bytes | memoryview | FileSpan | None = None, closer: Any = None, size: int | None = None) -> None:
        self.members = members
        self.file = file
        self.container = container
        self.compression = compression
        self.trailer = trailer
        #: Bytes of the tar as read (after decompression); None for directories and new archives.
        self.size = size
        self._closer = closer
        formats = {m.header.format for m in members if m.header is not None}
        #: The tar format of the headers read (``pax``, ``gnu``, ``ustar``, ``v7``, ``mixed``;
        #: None for a directory or a new archive); members re-encoded later keep it (GNU stays GNU).
        self.tar_format: str | None = (formats.pop() if len(formats) == 1 else "mixed") if formats else None
        self._by_path = {m.path: m for m in members}
        self._metadata: _md.Metadata | None = None
        self._modules: dict[str, Module] | None = None
        self._metadata_override: _md.Metadata | None = None

    # ------------------------------------------------------------- members

    def member(self, path: str) -> Member | None:
        """The member at ``path`` (``./`` prefix optional), or None."""
        return self._by_path.get(_tar.normalize(path, file=self.file, offset=None) if path else ".")

    def __contains__(self, path: str) -> bool:
        return self.member(path) is not None

    def __iter__(self) -> Iterator[Member]:
        return iter(self.members)

    def read(self, path: str) -> bytes:
        """The bytes of the file member at ``path``; MlfError if there is none."""
        m = self.member(path)
        if m is None or m.is_dir:
            raise MlfError("no such file member", file=self.file, field=path)
        return m.read()

    # ------------------------------------------------------------- metadata

    def _metadata_member(self) -> Member:
        m = self.member(METADATA)
        if m is None or m.is_dir:
            raise ValidationError("the archive has no metadata.json", file=self.file, field=METADATA)
        return m

    def metadata_document(self) -> Any:
        """metadata.json parsed as JSON (not validated). Raises MlfError."""
        m = self._metadata_member()
        return load_json(m.view(), f"{self.file}:{m.name}", "metadata.json")

    @property
    def detection(self) -> _md.Detection:
        """Declared version, style and shape-based fits of metadata.json."""
        return _md.detect(self.metadata_document())

    @property
    def metadata(self) -> _md.Metadata:
        """The typed metadata (read leniently: unknown keys are kept and listed in
        ``metadata.unknown``; anything else invalid raises ValidationError). Its document
        is typed by the plain records of ``mlf_plain`` (no pydantic); ``metadata.parse``
        gives the pydantic models."""
        if self._metadata_override is not None:
            return self._metadata_override
        if self._metadata is None:
            m = self._metadata_member()
            doc = self.metadata_document()
            self._metadata = _md.from_document(doc, lenient=True, file=f"{self.file}:{m.name}", raw=m.read(),
                                               plain=True)
        return self._metadata

    @property
    def version(self) -> int:
        """The metadata version."""
        return self.metadata.version

    @property
    def style(self) -> str:
        """``full-model`` or ``operator``."""
        return self.metadata.style

    def set_metadata(self, md: _md.Metadata) -> None:
        """Replace metadata.json by ``md`` dumped as TVM did for its version and style."""
        self._metadata_override = md
        self.replace(METADATA, md.dumps())
        self._modules = None

    # ------------------------------------------------------------- modules

    def placements(self, version: int | None = None, style: str | None = None,
                   names: list[str] | None = None) -> dict[str, _layout.Placement | None]:
        """Layout placement of every member path (None: no entry of the layout matches), in
        the layout of the metadata's version, style and module names unless given."""
        if version is None or style is None or names is None:
            md = self.metadata
            version, style, names = md.version, md.style, list(md.modules)
        return {m.path: _layout.classify(m.path, version, style, names) for m in self.members}

    def modules_of(self, records: Mapping[str, Any], version: int, style: str) -> dict[str, Module]:
        """:class:`Module` objects for the given per-module metadata: typed records, or the
        plain dicts of a document that departs from its version's model (what ``inspect``
        shows of such an archive; see :func:`mlf_spec.check.read_metadata`)."""
        mods = {name: Module(self, name, rec) for name, rec in records.items()}
        for path, pl in self.placements(version, style, list(records)).items():
            if pl is None or pl.module is None or pl.module not in mods or pl.kind == "directory":
                continue
            mods[pl.module].files.setdefault(pl.kind, []).append(path)
        return mods

    @property
    def modules(self) -> dict[str, Module]:
        """Module name -> :class:`Module`, in metadata order."""
        if self._modules is None:
            md = self.metadata
            self._modules = self.modules_of(md.modules, md.version, md.style)
        return self._modules

    # ------------------------------------------------------------- writing

    def replace(self, path: str, data: bytes | str, *, mtime: float | None = None) -> Member:
        """Set the content of the file member at ``path`` (added in TVM's place if absent).
        The member's other header fields are kept; its header is encoded anew."""
        m = self.member(path)
        if m is None:
            return self.add(path, data, mtime=mtime)
        if m.is_dir:
            raise MlfError("is a directory", file=self.file, field=path)
        buf = data.encode("utf-8") if isinstance(data, str) else bytes(data)
        m.size = len(buf)
        m.raw_header = None
        m.raw_padding = None
        m._loader = lambda b=buf: b
        if mtime is not None:
            m.mtime = mtime
            m.pax_headers.pop("mtime", None)
        m.pax_headers.pop("size", None)
        return m

    def add(self, path: str, data: bytes | str | None, *, mtime: float | None = None, group: str | None = None) -> Member:
        """Add a file (or, with ``data=None``, a directory) member in TVM's order, with the
        writer's mode and owner for its group."""
        rel = _tar.normalize(path, file=self.file, offset=None)
        if rel in self._by_path:
            raise UnsafeArchiveError("member exists", file=self.file, field=path)
        if isinstance(data, str):
            data = data.encode("utf-8")
        m = _new_member(rel, data, mtime if mtime is not None else time.time(), group or _group_of(rel), _owner(None))
        self.members.append(m)
        self._by_path[rel] = m
        self.reorder()
        self._modules = None
        return m

    def rename(self, old: str, new: str) -> Member:
        """Move a member (and, for a directory, everything under it) to ``new``; header
        fields are kept, headers re-encoded; the order is left as it is (see :meth:`reorder`)."""
        src = _tar.normalize(old, file=self.file, offset=None)
        dst = _tar.normalize(new, file=self.file, offset=None)
        if src not in self._by_path:
            raise MlfError("no such member", file=self.file, field=old)
        moved = [m for m in self.members if m.path == src or m.path.startswith(src + "/")]
        targets = {m.path: dst + m.path[len(src):] for m in moved}
        clash = [t for t in targets.values() if t in self._by_path and t not in targets]
        if clash:
            raise UnsafeArchiveError("member exists", file=self.file, field=clash[0])
        for m in moved:
            m.path = targets[m.path]
            m.name = _layout.TAR["prefix"] + m.path
            m.raw_header = None
            m.pax_headers.pop("path", None)
            m.group = _group_of(m.path)
        self._by_path = {m.path: m for m in self.members}
        self._modules = None
        return self._by_path[dst]

    def copy(self) -> Archive:
        """A new archive with copies of the members over the same data (nothing is read):
        edit it without changing this one. Its member data lives in this archive's buffers,
        so it must not be used after this archive is closed. The copy gets TVM's end blocks
        when written (edits change the size the original end padding was made for)."""
        members = [copy.copy(m) for m in self.members]
        for m in members:
            m.pax_headers = dict(m.pax_headers)
        a = Archive(members, file=self.file, container="new", compression=None, trailer=None)
        a.tar_format = self.tar_format
        a._metadata = self._metadata_override or self._metadata
        return a

    def relocate(self, moves: Mapping[str, str | None]) -> None:
        """Move or remove many members at once: the member at each path of ``moves`` goes to
        the new path (None removes it). Unlike :meth:`rename`, a directory moves alone (its
        content goes where ``moves`` says). Header fields are kept and headers re-encoded
        for moved members; the order is left as it is (see :meth:`reorder`)."""
        norm = {_tar.normalize(k, file=self.file, offset=None): (None if v is None else
                _tar.normalize(v, file=self.file, offset=None)) for k, v in moves.items()}
        missing = [k for k in norm if k not in self._by_path]
        if missing:
            raise MlfError("no such member", file=self.file, field=missing[0])
        kept: list[Member] = []
        for m in self.members:
            if m.path not in norm:
                kept.append(m)
                continue
            new = norm[m.path]
            if new is None:
                continue
            if new != m.path:
                m.path = new
                m.name = _layout.TAR["prefix"] + new
                m.raw_header = None
                m.pax_headers.pop("path", None)
                m.group = _group_of(new)
            kept.append(m)
        paths = [m.path for m in kept]
        if len(set(paths)) != len(paths):
            dup = next(p for p in paths if paths.count(p) > 1)
            raise UnsafeArchiveError("two members would have the same path", file=self.file, field=dup)
        self.members = kept
        self._by_path = {m.path: m for m in kept}
        self._modules = None

    def reorder(self) -> None:
        """Put the members in the order TVM's writer added them (groups, sorted trees)."""
        order = _layout.tvm_order((m.path, m.group) for m in self.members)
        rank = {p: i for i, p in enumerate(order)}
        self.members.sort(key=lambda m: rank[m.path])

    def remove(self, path: str) -> None:
        """Remove a member (and, for a directory, everything under it)."""
        rel = _tar.normalize(path, file=self.file, offset=None)
        self.members = [m for m in self.members if not (m.path == rel or m.path.startswith(rel + "/"))]
        self._by_path = {m.path: m for m in self.members}
        self._modules = None

    def chunks(self) -> Iterator[Any]:
        """The archive's bytes as buffers: each member's header (as read, or encoded),
        data and padding, then the end blocks (as read, or TVM's)."""
        offset = 0
        fmt = "gnu" if self.tar_format == "gnu" else "pax"
        for m in self.members:
            header = m.raw_header if m.raw_header is not None else _tar.encode_header(m.tar_entry(), format=fmt)
            yield header
            offset += len(header)
            if not m.is_dir and m.size:
                got = 0
                for data in m.pieces():
                    got += data.nbytes
                    yield data
                if got != m.size:
                    raise MlfError(f"member data is {got} bytes, its header says {m.size}", field=m.name)
                pad = (-m.size) % _tar.BLOCK
                if pad:
                    raw = m.raw_padding
                    yield raw if raw is not None and len(raw) == pad else b"\0" * pad
                offset += m.size + pad
        if isinstance(self.trailer, FileSpan):
            yield from self.trailer.pieces()
        else:
            yield self.trailer if self.trailer is not None else _tar.end_blocks(offset)

    def to_bytes(self) -> bytes:
        """The whole archive as bytes."""
        return b"".join(bytes(c) if isinstance(c, memoryview) else c for c in self.chunks())

    def write(self, dest: str | os.PathLike | IO[bytes], *, overwrite: bool = True) -> None:
        """Write the archive (uncompressed tar) to a path (atomically) or a binary file."""
        if hasattr(dest, "write"):
            for c in self.chunks():
                dest.write(c)
            return
        with atomic_writer(Path(dest), overwrite=overwrite) as f:
            for c in self.chunks():
                f.write(c)

    def extract(self, dest: str | os.PathLike, *, overwrite: bool = False) -> Path:
        """Extract into the directory ``dest`` (created if needed; must be empty unless
        ``overwrite``). Nothing is written outside it: member paths were checked when read,
        and no symbolic link inside ``dest`` is followed. Member modes (permission bits) and
        mtimes are restored, those of the root member ``.`` on ``dest`` itself, so that an
        extracted directory compares clean with its archive. Returns the resolved directory."""
        root = Path(dest)
        root.mkdir(parents=True, exist_ok=True)
        if root.is_symlink():
            raise UnsafeArchiveError("destination is a symbolic link", file=os.fspath(dest))
        root = root.resolve()
        if not overwrite and any(root.iterdir()):
            raise OutputExistsError("destination is not empty; pass overwrite", file=os.fspath(root))
        for m in self.members:
            if m.path == ".":
                continue
            try:
                self._extract_member(m, root)
            except OSError as exc:  # e.g. a name component longer than the file system allows
                raise MlfError(f"cannot extract: {exc.strerror or exc}", file=os.fspath(root), field=m.name) from None
        # directories last and deepest first: writing into a directory changes its mtime, and a
        # mode without write permission would stop the writes below it
        for m in sorted(self.members, key=lambda m: (m.is_dir, -m.path.count("/"), m.path != "."), reverse=False):
            target = root if m.path == "." else root.joinpath(*m.path.split("/"))
            with contextlib.suppress(OSError):
                if m.is_dir:
                    os.chmod(target, (m.mode & 0o7777) or 0o755)
                os.utime(target, (m.mtime, m.mtime), follow_symlinks=False)
        return root

    def _extract_member(self, m: Member, root: Path) -> None:
        parts = m.path.split("/")
        cur = root
        for p in parts[:-1]:
            cur = cur / p
            _ensure_dir(cur, root)
        target = cur / parts[-1]
        if m.is_dir:
            _ensure_dir(target, root)
            return
        if target.is_symlink():
            raise UnsafeArchiveError("a symbolic link is in the way", file=os.fspath(target))
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
        fd = os.open(target, flags, 0o644)
        with os.fdopen(fd, "wb") as f:
            for piece in m.pieces():
                f.write(piece)
        with contextlib.suppress(OSError):
            os.chmod(target, (m.mode & 0o777) or 0o644)

    # ------------------------------------------------------------- lifetime

    def close(self) -> None:
        """Release mappings and files (views of member data must not outlive it)."""
        for mod in (self._modules or {}).values():
            mod.close()
        # modules point back at the archive: without this cycle, the mapping goes as soon
        # as the last view of it does (a view left in a traceback keeps mmap.close() from
        # working, and a cycle would keep the descriptor open until the garbage collector ran)
        self._modules = None
        if isinstance(self.trailer, memoryview):
            # the archive's own view of the end blocks would keep the mapping (and, for a
            # compressed source, the decompressed temporary file) open after close
            self.trailer.release()
            self.trailer = None
        if self._closer is not None:
            self._closer()
            self._closer = None

    def __enter__(self) -> Archive:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Archive {self.file!r} {self.container} {len(self.members)} members>"


def _ensure_dir(path: Path, root: Path) -> None:
    if path.is_symlink():
        raise UnsafeArchiveError("a symbolic link is in the way", file=os.fspath(path))
    if path.exists() and not path.is_dir():
        raise UnsafeArchiveError("a file is in the way of a directory", file=os.fspath(path))
    path.mkdir(exist_ok=True)
    if root not in path.resolve().parents and path.resolve() != root:
        raise UnsafeArchiveError("path escapes the destination", file=os.fspath(path))


# ----------------------------------------------------------------- opening


def open(source: Source, *, max_member_size: int = DEFAULT_MAX_MEMBER_SIZE,  # noqa: A001
         max_members: int = DEFAULT_MAX_MEMBERS, max_total_size: int = DEFAULT_MAX_TOTAL_SIZE,
         mapped: bool = True) -> Archive:
    """Open an MLF archive: a path to a tar (uncompressed, or gzip/bz2/xz: decompressed to a
    temporary file first) or to a directory (an extracted archive), bytes, or a binary file
    object. Headers are read streaming and checked; member data stays where it is (mmap)
    until asked for. Raises MlfError (UnsafeArchiveError for unsafe members).

    As with ``numpy.memmap``, a view of a mapped file that another process truncates raises
    SIGBUS, which no Python code can catch. With ``mapped=False`` the file is never mapped:
    a member's bytes are read by pread when asked for (a copy of that member; ``Member.pieces``
    and writing the archive read a MiB at a time), and a file that shrinks meanwhile is an
    MlfError, "file shrank while it was being read" (what the command line does)."""
    name = describe(source)
    if isinstance(source, (str, os.PathLike)):
        p = Path(source)
        if p.is_dir():
            return _open_directory(p, max_member_size=max_member_size, max_members=max_members)
        f = open_regular(p)
        return _open_file(f, name, own=True, max_member_size=max_member_size, max_members=max_members,
                          max_total_size=max_total_size, mapped=mapped)
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = source if isinstance(source, bytes) else bytes(source)
        # the BytesIO shares ``data`` while it is only read; member views come from ``data``
        # itself (BytesIO.getbuffer() would copy it)
        return _open_file(io.BytesIO(data), name, own=True, max_member_size=max_member_size,
                          max_members=max_members, max_total_size=max_total_size, buffer=memoryview(data),
                          mapped=mapped)
    if hasattr(source, "read"):
        seekable = False
        with contextlib.suppress(Exception):
            seekable = source.seekable() and source.tell() == 0
        if not seekable:
            import tempfile  # only for compressed input: not on every start

            tmp = tempfile.TemporaryFile()
            total = 0
            while True:
                chunk = source.read(1 << 20)
                if not chunk:
                    break
                if not isinstance(chunk, (bytes, bytearray)):
                    tmp.close()
                    raise MlfError("file object must be opened in binary mode", file=name)
                total += len(chunk)
                if total > max_total_size:
                    tmp.close()
                    raise UnsafeArchiveError(f"archive exceeds {max_total_size} bytes", file=name)
                tmp.write(chunk)
            tmp.seek(0)
            return _open_file(tmp, name, own=True, max_member_size=max_member_size, max_members=max_members,
                              max_total_size=max_total_size, mapped=mapped)
        return _open_file(source, name, own=False, max_member_size=max_member_size,
                          max_members=max_members, max_total_size=max_total_size, mapped=mapped)
    raise TypeError(f"expected a path, bytes or a binary file object, got {type(source).__name__}")


def _size_of(f: IO[bytes]) -> int:
    pos = f.tell()
    f.seek(0, os.SEEK_END)
    size = f.tell()
    f.seek(pos)
    return size


def _buffer_of(f: IO[bytes], size: int) -> tuple[Any, Any]:
    """A zero-copy buffer over the container and its closer."""
    if isinstance(f, io.BytesIO):
        return f.getbuffer(), None
    if size == 0:
        return memoryview(b""), None
    try:
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError, io.UnsupportedOperation):
        f.seek(0)
        return memoryview(f.read()), None

    def close() -> None:
        with contextlib.suppress(BufferError):
            mm.close()

    return mm, close


def _open_file(f: IO[bytes], name: str, *, own: bool, max_member_size: int, max_members: int,
               max_total_size: int, buffer: memoryview | None = None, mapped: bool = True) -> Archive:
    closers: list[Any] = []
    if own:
        closers.append(f.close)

    def close_all() -> None:
        for c in reversed(closers):
            with contextlib.suppress(Exception):
                c()

    try:
        f.seek(0)
        head = f.read(_tar.BLOCK)
        f.seek(0)
        kind = _sniff.compression(head)
        compression = None
        if kind is not None:
            tmp = _tar.decompressed(f, kind, max_total_size, file=name)
            closers.append(tmp.close)
            f, compression = tmp, kind
        elif not head:
            raise MalformedError("empty file: not a tar archive", file=name, offset=0)
        # mapped=False: members read by pread from the file (or from the decompressed temporary file)
        fd = _fileno(f) if not mapped and (buffer is None or compression is not None) else None
        size = os.fstat(fd).st_size if fd is not None else _size_of(f)
        if fd is not None:
            buf: Any = None
        elif buffer is not None and compression is None:
            buf = buffer
        else:
            buf, close_buf = _buffer_of(f, size)
            if close_buf is not None:
                closers.append(close_buf)
        members: list[Member] = []
        limits = _tar.TarLimits(max_members=max_members, max_member_size=max_member_size)
        it = _tar.read_entries(f, size, file=name, limits=limits)
        while True:
            try:
                e = next(it)
            except StopIteration as stop:
                end = stop.value
                if fd is not None:
                    _check_size(fd, size, name)  # tarfile takes a cut-short file for its end
                break
            except MlfError:
                if fd is not None:
                    _check_size(fd, size, name)  # a header cut short by a truncation says so
                raise
            loader: Any = None
            if e.type == _tar.FILE:
                loader = FileSpan(f, e.data_offset, e.size, name) if fd is not None else \
                    _slicer(buf, e.data_offset, e.size)
            m = Member(e.name, e.path, e.type == _tar.DIRECTORY, e.size, mode=e.mode, uid=e.uid,
                       gid=e.gid, uname=e.uname, gname=e.gname, mtime=e.mtime,
                       pax_headers=e.pax_headers, raw_header=e.raw_header, loader=loader,
                       group=_group_of(e.path))
            if e.type == _tar.FILE and e.size % _tar.BLOCK:
                end_of_data = e.data_offset + e.size
                pad = (-e.size) % _tar.BLOCK
                padding = bytes(read_at(fd, end_of_data, pad, file=name)) if fd is not None else \
                    bytes(buf[end_of_data:end_of_data + pad])
                if padding.strip(b"\0"):
                    m.raw_padding = padding
            members.append(m)
        trailer: memoryview | FileSpan = FileSpan(f, end, size - end, name) if fd is not None else \
            memoryview(buf)[end:size]
    except BaseException:
        close_all()
        raise
    return Archive(members, file=name, container="tar", compression=compression, trailer=trailer, closer=close_all,
                   size=size)


def _fileno(f: IO[bytes]) -> int | None:
    """The descriptor of a real file (None for BytesIO and other file-like objects)."""
    if isinstance(f, io.BytesIO):
        return None
    try:
        return f.fileno()
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        return None


def _check_size(fd: int, size: int, name: str) -> None:
    """MlfError if the file ``fd`` is now shorter than the ``size`` it had when opened."""
    with contextlib.suppress(OSError):
        now = os.fstat(fd).st_size
        if now < size:
            raise MlfError("file shrank while it was being read", file=name, offset=now)


def _slicer(buf: Any, start: int, n: int) -> Any:
    return lambda: memoryview(buf)[start:start + n]


def _owner_names(uid: int, gid: int) -> tuple[str, str]:
    uname = gname = ""
    with contextlib.suppress(Exception):
        import pwd

        uname = pwd.getpwuid(uid).pw_name
    with contextlib.suppress(Exception):
        import grp

        gname = grp.getgrgid(gid).gr_name
    return uname, gname


def _open_directory(root: Path, *, max_member_size: int, max_members: int) -> Archive:
    """An extracted archive: members in TVM's order, headers as TVM's tarfile.add would have
    made them from this tree (main group reset to root, runtime/templates as on disk)."""
    name = os.fspath(root)
    found: list[tuple[str, os.stat_result]] = []
    try:
        st_root = os.lstat(root)
    except OSError as exc:
        raise MlfError(f"cannot read: {exc.strerror}", file=name) from None
    found.append((".", st_root))
    stack = [(root, "")]
    while stack:
        d, rel = stack.pop()
        try:
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except OSError as exc:
            raise MlfError(f"cannot list: {exc.strerror}", file=os.fspath(d)) from None
        for e in entries:
            path = f"{rel}/{e.name}" if rel else e.name
            _tar.normalize(path, file=name, offset=None)
            st = os.lstat(e.path)
            if stat.S_ISLNK(st.st_mode):
                raise UnsafeArchiveError("symbolic link in the archive directory", file=name, field=path)
            if not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
                raise UnsafeArchiveError("special file (device, FIFO or socket) in the archive directory", file=name,
                                         field=path)
            if stat.S_ISREG(st.st_mode) and st.st_size > max_member_size:
                raise UnsafeArchiveError(f"file of {st.st_size} bytes exceeds the limit of {max_member_size}",
                                         file=name, field=path)
            found.append((path, st))
            if len(found) > max_members:
                raise UnsafeArchiveError(f"more than {max_members} members", file=name)
            if stat.S_ISDIR(st.st_mode):
                stack.append((Path(e.path), path))
    members: list[Member] = []
    for path, st in found:
        group = _group_of(path)
        info = _layout.GROUP_INFO.get(group, {"directories": True, "owner": "reset"})
        is_dir = stat.S_ISDIR(st.st_mode)
        if is_dir and not info["directories"] and path != ".":
            continue
        if info["owner"] == "reset":
            uid = gid = 0
            uname = gname = "root"
        else:
            uid, gid = st.st_uid, st.st_gid
            uname, gname = _owner_names(uid, gid)
        full = root / path if path != "." else root
        loader = None if is_dir else (lambda p=full: _read_file(p, max_member_size))
        members.append(Member("." if path == "." else _layout.TAR["prefix"] + path, path, is_dir,
                              0 if is_dir else st.st_size, mode=stat.S_IMODE(st.st_mode), uid=uid, gid=gid,
                              uname=uname, gname=gname, mtime=st.st_mtime, loader=loader, group=group))
    order = _layout.tvm_order((m.path, m.group) for m in members)
    rank = {p: i for i, p in enumerate(order)}
    members.sort(key=lambda m: rank[m.path])
    return Archive(members, file=name, container="directory")


def _read_file(path: Path, limit: int) -> bytes:
    try:
        with builtins.open(path, "rb") as f:
            data = f.read(limit + 1)
    except OSError as exc:
        raise MlfError(f"cannot read: {exc.strerror}", file=os.fspath(path)) from None
    if len(data) > limit:
        raise UnsafeArchiveError(f"file grew beyond the limit of {limit}", file=os.fspath(path))
    return data


# ----------------------------------------------------------------- building


@functools.lru_cache(maxsize=8192)
def _group_of(path: str) -> str:
    """The writer's group of a path: the group of the layout entry (of any version) it
    matches or lies above (runtime/, templates/), else main."""
    if path == ".":
        return "main"
    for e in _layout.ENTRIES.values():
        group = e.get("group", "main")
        if group != "main" and (re.match(e["regex"], path) or e["path"].startswith(path + "/")):
            return group
    return "main"


def _owner(owner: tuple[int, int, str, str] | None) -> tuple[int, int, str, str]:
    if owner is not None:
        return owner
    uid = os.getuid() if hasattr(os, "getuid") else 0
    gid = os.getgid() if hasattr(os, "getgid") else 0
    return (uid, gid, *_owner_names(uid, gid))


def _new_member(path: str, data: bytes | None, mtime: float, group: str, source_owner: tuple[int, int, str, str]) -> Member:
    modes = _layout.TAR["modes"]
    is_dir = data is None
    if _layout.GROUP_INFO.get(group, {}).get("owner", "reset") == "reset":
        uid, gid, uname, gname = 0, 0, "root", "root"
    else:
        uid, gid, uname, gname = source_owner
    mode = modes["root"] if path == "." else modes["directory"] if is_dir else modes["file"]
    name = _layout.TAR["root_member"] if path == "." else _layout.TAR["prefix"] + path
    buf = b"" if data is None else bytes(data)
    # os.stat gives tarfile a float mtime, so every member of a PAX archive TVM wrote has a
    # PAX mtime record; a float here does the same.
    return Member(name, path, is_dir, len(buf), mode=mode, uid=uid, gid=gid, uname=uname, gname=gname,
                  mtime=float(mtime), loader=None if is_dir else (lambda b=buf: b), group=group)


def build(metadata: _md.Metadata | Any, files: Mapping[str, bytes | str], *, version: int | None = None,
          style: str | None = None, mtime: float | Mapping[str, float] | None = None,
          source_owner: tuple[int, int, str, str] | None = None) -> Archive:
    """A new archive laid out as TVM's writer did: ``metadata.json`` dumped with the style's
    json options, the given ``files`` (relative path -> content: codegen files, params,
    Relay/TIR text, graph JSON, ``runtime/...``, ``templates/...``), every parent directory
    plus the directories the writer always created, in TVM's member order, with the
    writer's modes, owners (``root`` for the main tree; ``source_owner``, default the
    current user, for runtime/ and templates/) and ``mtime`` (a float, or per path;
    default now). Write it with :meth:`Archive.write` or :meth:`Archive.to_bytes`."""
    if not isinstance(metadata, _md.Metadata):
        if isinstance(metadata, dict):
            metadata = _md.from_document(metadata, version=version, style=style)
        else:
            raw = _md.dumps(metadata, version, style)
            metadata = _md.parse(raw)
    md: _md.Metadata = metadata
    owner = _owner(source_owner)
    now = time.time()

    def when(path: str) -> float:
        if mtime is None:
            return now
        if isinstance(mtime, Mapping):
            return mtime.get(path, now)
        return mtime

    contents: dict[str, bytes | None] = {METADATA: md.dumps()}
    for p, data in files.items():
        rel = _tar.normalize(p, file="<build>", offset=None)
        if rel == METADATA:
            raise MlfError("metadata.json comes from the metadata argument", field=p)
        contents[rel] = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    for e, path, _module in _layout.expected(md.version, md.style, md.modules):
        if e["kind"] == "directory" and "{" not in path and path != ".":
            contents.setdefault(path, None)
    for rel in list(contents):
        group = _group_of(rel)
        parts = rel.split("/")
        for i in range(1, len(parts)):
            d = "/".join(parts[:i])
            if _layout.GROUP_INFO.get(_group_of(d), {}).get("directories", True) and \
                    _layout.GROUP_INFO.get(group, {}).get("directories", True):
                contents.setdefault(d, None)
    members = [_new_member(".", None, when("."), "main", owner)]
    members += [_new_member(rel, data, when(rel), _group_of(rel), owner) for rel, data in contents.items()]
    order = _layout.tvm_order((m.path, m.group) for m in members)
    rank = {p: i for i, p in enumerate(order)}
    members.sort(key=lambda m: rank[m.path])
    a = Archive(members, file="<new>", container="new")
    a._metadata = md
    return a


__all__ = ["DEFAULT_MAX_MEMBERS", "DEFAULT_MAX_MEMBER_SIZE", "DEFAULT_MAX_TOTAL_SIZE", "Archive", "Member", "Module", "build", "open"]
