"""Check a .params file: findings (spec/findings/params_check.yaml) and, for a TVM
version, the verdict of its reader (spec/verdicts/tvm_read_rules.yaml).

    >>> from mlf_spec.params import check
    >>> report = check.check("model.params", tvm="0.27")
    >>> report.conformant, report.codes(), report.tvm.verdict
    (True, [], 'loads')

The file is read the way TVM's loader reads it. The fast reader (:func:`codec.open`) is
tried first; a file it refuses for a value TVM's loader does not check or checks later
(a device type other than CPU, a data size that does not match, negative extents, more
than 64 dimensions, a count that differs from the names, data cut short) is read again by
the spec interpreter, which follows the stored counts and sizes as TVM does, and the
deviations become findings. What that reading cannot follow either (a bad magic, a header
cut short, lengths past the end) is an unreadable input: MlfError.
"""

from __future__ import annotations

import os
import struct
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from mlf_spec._internal.ir import Field
from mlf_spec._internal.spec_engine import Tracer
from mlf_spec._io import PreadWindow, describe, open_regular_fd, read_source
from mlf_spec.errors import ConstraintError, MlfError, TruncatedError
from mlf_spec.findings import ArtifactReport, Collector
from mlf_spec.generated import params_check_rows as _rows
from mlf_spec.generated import params_ir as _ir
from mlf_spec.generated.params_check_findings import FINDINGS
from mlf_spec.generated.tensor_fast import TENSOR_RECORD_OFFSETS
from mlf_spec.verdict import lazy_engine as _engine
from mlf_spec.verdict.facts import Facts, lazy

if TYPE_CHECKING:  # the verdict engine is imported for --tvm only
    from mlf_spec.verdict import engine as _verdict

from . import codec as _codec
from . import dtypes as _dt

_I64 = 1 << 64


@dataclass
class _Rec:
    """One tensor record as the loader sees it, with the offsets of its fields."""

    index: int
    name: str
    reserved: int
    device_type: int
    device_id: int
    ndim: int
    code: int
    bits: int
    lanes: int
    shape: tuple[int, ...]
    nbytes: int
    start: int
    data_offset: int
    present: int

    def offset(self, field: str) -> int:
        """Byte offset of a field of the record (shape and data_byte_size follow dtype)."""
        if field in TENSOR_RECORD_OFFSETS:
            return self.start + TENSOR_RECORD_OFFSETS[field]
        if field == "shape":
            return self.data_offset - 8 - 8 * self.ndim
        if field == "data_byte_size":
            return self.data_offset - 8
        return self.data_offset

    @property
    def key(self) -> tuple[int, int, int]:
        """(code, bits, lanes)."""
        return self.code, self.bits, self.lanes


@dataclass
class _File:
    reserved: int
    names: list[str]
    count: int
    records: list[_Rec]
    trailing: int
    truncated: bool


def check(source: Any, *, dialect: str | None = None, tvm: str | None = None, writer: str | None = None,
          name: str | None = None, mapped: bool = True) -> ArtifactReport:
    """Check a .params file (path, bytes or binary file object). ``dialect`` reads the
    dtype codes as that TVM version's (default: detected); ``tvm`` adds the verdict of that
    TVM version's reader, taking the writer to be ``writer`` (a version, whose dtype codes
    then apply unless ``dialect`` says otherwise; default: the dialect's range). Raises
    MlfError when the file's structure cannot be followed. ``mapped=False`` reads a path
    by pread instead of mapping it (a file that shrinks meanwhile is an MlfError, not
    SIGBUS): the headers a window at a time and the data bytes dialect detection needs a
    MiB at a time, so memory does not grow with the file's size."""
    reader = _engine().reader_version(tvm) if tvm is not None else None
    r = _read(source, dialect, writer, name, mapped)
    c = Collector(FINDINGS)
    _file_findings(r.file, c)
    _dialect_findings(r.choice, r.detected, r.keys, r.max_bytes, c)
    for rec in r.file.records:
        _tensor_findings(rec, r.choice.dialect, r.max_bytes.get(rec.key, -1), c)
    report = ArtifactReport(r.label, c.findings, kind="params", dialect_choice=r.choice.to_dict())
    if tvm is not None and reader is not None:
        report.tvm = _tvm_verdict(r, reader, tvm, writer)
    return report


def verdict(source: Any, tvm: str, *, writer: str | None = None, dialect: str | None = None,
            name: str | None = None) -> _verdict.Verdict:
    """Only the verdict of TVM ``tvm``'s reader on a .params file (what ``check(...,
    tvm=...).tvm`` holds, without the findings). Raises MlfError as :func:`check` does."""
    reader = _engine().reader_version(tvm)
    return _tvm_verdict(_read(source, dialect, writer, name), reader, tvm, writer)


@dataclass
class _Reading:
    label: str
    file: _File
    max_bytes: dict[tuple[int, int, int], int]
    keys: list[tuple[int, int, int]]
    detected: _dt.DialectChoice
    choice: _dt.DialectChoice


def _read(source: Any, dialect: str | None, writer: str | None, name: str | None, mapped: bool = True) -> _Reading:
    label = name or describe(source)
    given = _dt.dialect(dialect) if dialect is not None else None
    if given is None and writer is not None:
        given = _dt.of_version(_engine().writer_range(writer)[0])  # the writer's codes
    try:
        if not mapped and isinstance(source, (str, os.PathLike)):
            pf, max_bytes = _read_by_pread(source)
        else:
            with read_source(source, mapped) as (buf, size, _fd):
                pf = _scan(buf, size)
                max_bytes = _max_bytes(buf, pf.records)
    except MlfError as exc:
        raise exc.with_file(label) from None
    keys = [r.key for r in pf.records]
    detected = _dt.detect(keys, max_bytes)
    choice = _dt.given(given) if given is not None else detected
    return _Reading(label, pf, max_bytes, keys, detected, choice)


# ------------------------------------------------------------------------------ reading


def _read_by_pread(path: str | os.PathLike[str]) -> tuple[_File, dict[tuple[int, int, int], int]]:
    """The records and the dialect-telling bytes of a file read by pread, never whole: a
    16 GiB file of zeros after the magic cost 16 GiB when it was read into memory."""
    fd = open_regular_fd(path)
    try:
        size = os.fstat(fd).st_size
        window = PreadWindow(fd, size, os.fspath(path))
        try:
            # the fast reader's checks, its headers read by pread (never mapped); the dialect
            # is detected below from the same bytes, so the index need not detect it
            with _codec.open(path, mapped=False, dialect=_dt.LATEST) as lazy:
                idx = lazy._idx
                pf = _file_of(idx.reserved, idx.names, idx.records, size - idx.end)
        except MlfError:
            pf = _scan_leniently(window, size)
        return pf, _max_bytes(window, pf.records)
    finally:
        os.close(fd)


def _scan(buf: Any, size: int) -> _File:
    """The records, by the fast reader or, where it refuses, as TVM's loader follows them."""
    try:
        rec, end = _codec.read_params_file(buf, 0, size)
    except MlfError:
        return _scan_leniently(buf, size)
    return _file_of(rec.reserved, rec.names, rec.arrays, size - end)


def _file_of(reserved: int, names: list[str], arrays: list[Any], trailing: int) -> _File:
    """The file the fast reader read (its checks passed: as many records as names)."""
    records = []
    for i, (n, r) in enumerate(zip(names, arrays)):
        start = _codec.start_of_tensor_record(r)
        records.append(_Rec(i, n, r.reserved, r.device_type, r.device_id, r.ndim, r.dtype_code, r.dtype_bits,
                            r.dtype_lanes, tuple(r.shape), r.data_byte_size, start, r.data_offset, r.data_byte_size))
    return _File(reserved, list(names), len(names), records, trailing, False)


class _Stop(Exception):
    """The file ends inside the data of a tensor: nothing follows."""


class _LoaderTracer(Tracer):
    """The spec interpreter, reading as TVM's loader does: stored counts and sizes are
    followed (not checked against each other), tensor data is not copied, and data cut
    short ends the file instead of failing."""

    def __init__(self, structs: dict, buf: Any, size: int) -> None:
        super().__init__(structs, buf)
        self.end = size
        self.cut: tuple[tuple, int, int] | None = None  # (path, start, bytes present)

    def take(self, n: int, path: tuple) -> Any:
        if n < 0 or n > self.end - self.pos:
            raise TruncatedError(f"needs {n} bytes, {self.end - self.pos} remain", field=_path(path), offset=self.pos)
        b = bytes(self.buf[self.pos:self.pos + n])
        self.pos += n
        return b

    def _field(self, f: Field, ns: dict, fpath: tuple) -> None:
        if f["kind"] == "bytes" and f.get("role") == "tensor_payload":
            size = f["size"][1](ns)
            if size < 0:
                raise ConstraintError(f"data size is {size}", field=_path(fpath), offset=self.pos)
            have = min(size, self.end - self.pos)
            ns[f["name"]] = (self.pos, have)
            self.pos += have
            if have < size:
                self.cut = (fpath, self.pos - have, have)
                raise _Stop
            return
        if "count" in f and f["kind"] == "scalar":
            count = f["count"][1](ns)
            if count < 0:
                raise ConstraintError(f"{f['name']} count is {count}: TVM's loader fails too (length_error)",
                                      field=_path(fpath), offset=self.pos)
            if count * f["size"] > self.end - self.pos:
                raise TruncatedError(f"input ends inside {f['name']}: {count} x {f['size']} bytes needed, "
                                     f"{self.end - self.pos} remain", field=_path(fpath), offset=self.pos)
        super()._field(f, ns, fpath)


def _path(path: tuple) -> str:
    from mlf_spec._internal.spec_engine import path_str

    return path_str(path)


def _scan_leniently(buf: Any, size: int) -> _File:
    view = buf if isinstance(buf, (memoryview, PreadWindow)) else memoryview(buf)
    t = _LoaderTracer(_ir.STRUCTS, view, size)
    ns: dict[str, Any] = {}
    arrays: list[dict[str, Any]] = []
    truncated = stopped = False
    try:
        for f in _ir.STRUCTS["params_file"]["fields"]:
            if f["name"] != "arrays":
                t._field(f, ns, (f["name"],))
                continue
            if ns["count"] != len(ns["names"]):
                stopped = True  # TVM's loader stops here ('Invalid parameters file format'); so do we
                break
            for i in range(ns["count"]):  # every record takes bytes: a huge count ends in TruncatedError
                arrays.append(t.struct(f["struct"], ("arrays", i)))
    except _Stop:
        truncated = True
    starts = {s.path[1]: s.offset for s in t.spans if len(s.path) == 3 and s.path[0] == "arrays" and s.path[2] == "magic"}
    names = ns.get("names", [])
    records = []
    for i, a in enumerate(arrays):
        data_start, present = a["data"]
        dt, dev = a["dtype"], a["device"]
        records.append(_Rec(i, names[i] if i < len(names) else "", a["reserved"], dev["device_type"], dev["device_id"],
                            a["ndim"], dt["code"], dt["bits"], dt["lanes"], tuple(a["shape"]), a["data_byte_size"],
                            starts[i], data_start, present))
    if truncated:
        partial = _partial_record(t, len(arrays), names)
        if partial is not None:
            records.append(partial)
    trailing = 0 if truncated or stopped else size - t.pos  # after a count mismatch the rest is unread records
    return _File(ns.get("reserved", 0), list(names), ns.get("count", 0), records, trailing, truncated)


def _partial_record(t: _LoaderTracer, i: int, names: list[str]) -> _Rec | None:
    """The record whose data the file cuts short, from the spans the tracer recorded."""
    fields: dict[tuple, Any] = {}
    for s in t.spans:
        if len(s.path) >= 3 and s.path[0] == "arrays" and s.path[1] == i:
            fields[s.path[2:]] = s
    if ("magic",) not in fields or t.cut is None:
        return None

    def value(*path: Any) -> int:
        s = fields[path]
        fmt = {1: "<B", 2: "<H", 4: "<i", 8: "<q"}[s.size]
        raw = int(struct.unpack(fmt, t.buf[s.offset:s.offset + s.size])[0])
        if path in (("reserved",),):
            raw %= _I64
        return raw

    ndim = value("ndim")
    shape = tuple(value("shape", k) for k in range(ndim))
    _, data_start, present = t.cut
    return _Rec(i, names[i] if i < len(names) else "", value("reserved"), value("device", "device_type"),
                value("device", "device_id"), ndim, value("dtype", "code"), value("dtype", "bits"),
                value("dtype", "lanes"), shape, value("data_byte_size"), fields[("magic",)].offset, data_start, present)


def _max_bytes(buf: Any, records: list[_Rec]) -> dict[tuple[int, int, int], int]:
    """The largest stored byte of each (code, bits, lanes) whose bytes can tell dialects apart."""
    out: dict[tuple[int, int, int], int] = {}
    need: dict[tuple[int, int], bool] = {}
    for r in records:
        cb = (r.code, r.bits)
        if cb not in need:
            need[cb] = _dt.needs_data(*cb)
        if not need[cb]:
            continue
        out[r.key] = max(out.get(r.key, -1), _top(buf, r.data_offset, r.present))
    return out


def _top(buf: Any, at: int, n: int) -> int:
    """The largest of ``n`` bytes at ``at`` (-1 for none): a view of a buffer, or read a MiB
    at a time from a PreadWindow."""
    if not isinstance(buf, PreadWindow):
        return int(np.frombuffer(buf, np.uint8, count=n, offset=at).max()) if n else -1
    top = -1
    for start in range(at, at + n, 1 << 20):
        piece = buf[start:min(at + n, start + (1 << 20))]
        top = max(top, int(np.frombuffer(piece, np.uint8).max()))
    return top


# ------------------------------------------------------------------------------ findings


def _add(c: Collector, rows: list[tuple[str, str, str, int | None, str | None]]) -> None:
    for code, path, message, offset, _file in rows:
        c.add(code, path, message, offset=offset)


def _file_findings(pf: _File, c: Collector) -> None:
    last = pf.records[-1] if pf.records else None
    _add(c, _rows.params_file({
        "reserved": pf.reserved, "count": pf.count, "names": len(pf.names), "trailing_bytes": pf.trailing,
        "truncated": int(pf.truncated), "records": len(pf.records),
        "last_index": last and last.index, "last_name": last and last.name, "last_present": last and last.present,
        "last_nbytes": last and last.nbytes, "last_data_offset": last and last.data_offset}))
    later: Counter[str] = Counter(pf.names)  # occurrences at or after index i
    rows, make = _rows.name, _NAME_TEXTS
    for i, n in enumerate(pf.names):
        later[n] -= 1
        found = rows(make({"index": i, "repeated": int(later[n] > 0), "utf8": int(_utf8(n)), "name": n}))
        if found:
            _add(c, found)


#: The facts of a name, its texts made when a row reads them.
_NAME_TEXTS = lazy("NameFacts", {"shown": lambda f: _show(f["name"]), "hex": lambda f: _codec.name_bytes(f["name"]).hex()})


def _dialect_findings(choice: _dt.DialectChoice, detected: _dt.DialectChoice, keys: list[tuple[int, int, int]],
                      max_bytes: dict[tuple[int, int, int], int], c: Collector) -> None:
    if choice.detected and choice.ambiguous:
        parts = []
        for key in sorted(set(keys)):
            options = _dt.readings(choice, key)
            if len(options) > 1:
                parts.append(f"{key} is " + " or ".join(f"{k} ({', '.join(v)})" for k, v in options.items()))
        c.add("params.dialect-ambiguous", "", f"read as {choice.dialect.id}; " + "; ".join(parts[:4]))
    if choice.detected and choice.data_conflict:
        c.add("params.dialect-data", "", "the stored bytes fit no dialect's writers; the codes alone decided "
              f"({choice.dialect.id})")
    elif not choice.detected:
        d = choice.dialect
        misfit = [k for k in set(keys) if k in max_bytes and not _dt.data_fits(d, k[0], k[1], max_bytes[k])]
        if misfit and detected.candidates and d not in detected.candidates:
            c.add("params.dialect-data", "", f"the stored bytes of {sorted(misfit)} are not what writers of "
                  f"{d.id} store; they fit {', '.join(x.id for x in detected.candidates)}")


def _tensor_findings(r: _Rec, d: _dt.Dialect, max_byte: int, c: Collector) -> None:
    shape = r.shape
    bits = r.bits
    key = (d.id, r.code, bits, r.lanes)
    kind = _kinds.get(key)
    if kind is None:
        if len(_kinds) > 4096:  # dtypes are few in a file; a hostile one cannot grow this
            _kinds.clear()
        dt = _dt.lookup(d, r.code, bits, r.lanes)
        kind = _kinds[key] = (dt, int(dt.known), _handle(d, r.code, bits))
    dt = kind[0]
    found = _rows.tensor(_TENSOR_TEXTS({
        "index": r.index, "reserved": r.reserved, "device_type": r.device_type, "device_id": r.device_id,
        "ndim": r.ndim, "code": r.code, "bits": bits, "lanes": r.lanes, "nbytes": r.nbytes, "numel": _numel(shape),
        "elem_bytes": -(-bits // 8), "first_extent": shape[0] if shape else 1, "max_byte": max_byte,
        "negative_at": [(k, e) for k, e in enumerate(shape) if e < 0] if shape and min(shape) < 0 else (),
        "zero_extent_at": shape.index(0, 1) if len(shape) > 1 and shape[0] != 0 and 0 in shape[1:] else 0,
        "known": kind[1], "handle": kind[2], "dialect": d.id, "data_offset": r.data_offset, "part": (r, d, dt),
    }))
    if found:
        _add(c, found)


#: (dialect, code, bits, lanes) -> (the dtype, whether the dialect defines it, whether it is a handle)
_kinds: dict[tuple[str, int, int, int], tuple[Any, int, int]] = {}


def _handle(d: _dt.Dialect, code: int, bits: int) -> int:
    """1 when the dialect's dtype table names (code, bits) an opaque handle (its row, not a code)."""
    return int((_dt.row_of(d, code, bits) or {}).get("kind") == "handle")


def _layout_text(f: Facts) -> str:
    r, d, _ = f["part"]
    return "bit-packed" if _dt.layout(d, r.code, r.bits) == "packed" else "one element per ceil(bits/8) bytes"


#: The facts of a record, its offsets and texts made when a row reads them (``part``: the
#: record, the dialect, the dtype).
_TENSOR_TEXTS = lazy("TensorFacts", {
    "at_reserved": lambda f: f["part"][0].offset("reserved"), "at_device": lambda f: f["part"][0].offset("device"),
    "at_ndim": lambda f: f["part"][0].offset("ndim"), "at_dtype": lambda f: f["part"][0].offset("dtype"),
    "at_shape": lambda f: f["part"][0].offset("shape"),
    "at_data_byte_size": lambda f: f["part"][0].offset("data_byte_size"),
    "shape_text": lambda f: _shape_text(f["part"][0].shape), "numel_text": lambda f: _int_text(f["numel"]),
    "expected_text": lambda f: _int_text(f["numel"] * f["elem_bytes"]), "dialect_label": lambda f: f["part"][1].label,
    "layout_text": _layout_text, "dtype_name": lambda f: f["part"][2].name,
    "data_fits": lambda f: int(_dt.data_fits(f["part"][1], f["code"], f["bits"], f["max_byte"])),
})


def _int_text(n: int) -> str:
    """``n`` in digits, or its size in bits when it is too long to read (the extents of a
    record TVM's loader follows past 64 dimensions multiply to thousands of digits, more than
    ``str`` converts)."""
    bits = abs(n).bit_length()
    return str(n) if bits <= 256 else f"{'-' if n < 0 else ''}a {bits}-bit number"


def _shape_text(shape: tuple[int, ...]) -> str:
    """``shape`` as a list, its first 16 extents when it has more (a stored ndim can be huge)."""
    return str(list(shape)) if len(shape) <= 16 else f"{str(list(shape[:16]))[:-1]}, ... ({len(shape)} extents)]"


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for e in shape:
        n *= e
    return n


def _wrap(n: int) -> int:
    n %= _I64
    return n - _I64 if n >= 1 << 63 else n


def _utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _show(name: str) -> str:
    return repr(_codec.name_bytes(name).decode("utf-8", "replace"))


# ------------------------------------------------------------------------------ verdict


def _usable(n: int) -> int:
    """What glibc's malloc gives for a request of n bytes: 16-byte chunks with an 8-byte
    header, at least 24 usable."""
    return max(24, -(-(n + 8) // 16) * 16 - 8)


def tensor_facts(r: _Rec, writer: _dt.Dialect, max_byte: int, dropped: bool) -> dict[str, Any]:
    """The facts of the ``tensor`` subject of the verdict rules for one record."""
    numel = _numel(r.shape)
    numel_i64 = _wrap(numel)
    alloc = max(0, -(-(numel_i64 * r.bits * r.lanes) // 8)) if numel_i64 >= 0 else 0
    return {
        "index": r.index, "code": r.code, "bits": r.bits, "lanes": r.lanes,
        "lanes_signed": r.lanes - 0x10000 if r.lanes >= 0x8000 else r.lanes, "ndim": r.ndim,
        "first_extent": r.shape[0] if r.shape else 1, "negative_extents": sum(1 for e in r.shape if e < 0),
        "numel": numel, "numel_i64": numel_i64, "elem_bytes": -(-r.bits // 8), "nbytes": r.nbytes,
        "present": r.present, "device_type": r.device_type, "device_id": r.device_id, "reserved": r.reserved,
        "max_byte": max_byte,
        "packed": int(_dt.layout(writer, r.code, r.bits) == "packed"),
        "alloc_packed": alloc, "usable_packed": _usable(alloc),
        "writer_known": int(_dt.row_of(writer, r.code, r.bits) is not None),
        "name_utf8": int(_utf8(r.name)), "dropped": int(dropped),
    }


def _tvm_verdict(r: _Reading, reader: tuple[int, ...], version: str, writer: str | None) -> _verdict.Verdict:
    pf, choice = r.file, r.choice
    ambiguous, candidates = choice.ambiguous, [x.id for x in choice.candidates]
    if writer is not None:
        wrange = _engine().writer_range(writer)
        writer_dialect = _dt.of_version(wrange[0])
        source = "given"
    else:
        writer_dialect = choice.dialect
        wrange = (writer_dialect.since, writer_dialect.until or _engine().PAST_NEWEST)
        source = "detected"
    ev = _engine().Evaluator(reader, wrange)
    label = writer or _engine().range_label(wrange) or ""
    reasons = ev.apply("params_file", {"names": len(pf.names), "count": pf.count, "trailing_bytes": pf.trailing,
                                       "reserved": pf.reserved, "truncated": int(pf.truncated),
                                       "ambiguous": int(ambiguous and source == "detected"),
                                       "candidates": ", ".join(candidates), "writer": writer_dialect.text}, "file")
    last = {n: i for i, n in enumerate(pf.names)}
    for rec in pf.records:
        facts = tensor_facts(rec, writer_dialect, r.max_bytes.get(rec.key, -1), last.get(rec.name, rec.index) != rec.index)
        reasons += ev.apply("tensor", facts, f"arrays[{rec.index}]", _codec.json_name(rec.name)["name"])
    v = _engine().Verdict.of(version, label, source, reasons)
    # the text names the writer's dialect as every output does (Dialect.text); the JSON keeps the version range
    v.writer_text = f"TVM {writer}, dialect {writer_dialect.text}" if writer is not None else \
        f"a writer of dialect {writer_dialect.text}"
    return v


__all__ = ["check", "tensor_facts", "verdict"]
