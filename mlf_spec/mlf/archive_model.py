"""The archive in memory: its members (:class:`Member`), modules (:class:`Module`) and the
:class:`Archive` itself (read, edit, write back exactly, extract safely), with the writer's
member defaults (group, owner, mode). Opening is in :mod:`mlf_spec.mlf.archive_open`,
building in :mod:`mlf_spec.mlf.archive`, which re-exports all of it."""

from __future__ import annotations

import contextlib
import copy
import functools
import os
import re
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from mlf_spec import tar as _tar
from mlf_spec._io import FileSpan, atomic_writer
from mlf_spec._records import load_json
from mlf_spec.errors import MlfError, OutputExistsError, UnsafeArchiveError, ValidationError
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
        out: dict[str, str] = {}
        for p in self.files.get("tir_text", []):
            m = self.archive.member(p)
            assert m is not None  # the names come from the archive's own placements
            out[p] = m.text()
        return out

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
        m = new_member(rel, data, mtime if mtime is not None else time.time(), group or group_of(rel), owner_of(None))
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
            m.group = group_of(m.path)
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
                m.group = group_of(new)
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


def owner_names(uid: int, gid: int) -> tuple[str, str]:
    """The user and group names of ``uid`` and ``gid`` (empty where unknown)."""
    uname = gname = ""
    with contextlib.suppress(Exception):
        import pwd

        uname = pwd.getpwuid(uid).pw_name
    with contextlib.suppress(Exception):
        import grp

        gname = grp.getgrgid(gid).gr_name
    return uname, gname


@functools.lru_cache(maxsize=8192)
def group_of(path: str) -> str:
    """The writer's group of a path: the group of the layout entry (of any version) it
    matches or lies above (runtime/, templates/), else main."""
    if path == ".":
        return "main"
    for e in _layout.ENTRIES.values():
        group = e.get("group", "main")
        if group != "main" and (re.match(e["regex"], path) or e["path"].startswith(path + "/")):
            return group
    return "main"


def owner_of(owner: tuple[int, int, str, str] | None) -> tuple[int, int, str, str]:
    """``owner``, or (uid, gid, user, group) of the current user."""
    if owner is not None:
        return owner
    uid = os.getuid() if hasattr(os, "getuid") else 0
    gid = os.getgid() if hasattr(os, "getgid") else 0
    return (uid, gid, *owner_names(uid, gid))


def new_member(path: str, data: bytes | None, mtime: float, group: str, source_owner: tuple[int, int, str, str]) -> Member:
    """A new member as TVM's writer made it: its group's owner, the layout's mode and name prefix."""
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
