"""Emit what the fast reader/writer of a struct ending in lazy bytes adds for runs of records:
``read_<s>_runs`` / ``read_<s>_many`` (records whose header bytes repeat, taken in bulk),
``write_<s>_many`` and ``start_of_<s>`` (where a record began, from its payload's offset)."""

from __future__ import annotations

from .code import Code
from .common import camel, inline_scalars
from .ir import SCALARS
from .model import RStruct


def emit_many(c: Code, rs: RStruct, slots: list[str]) -> None:
    """``read_<s>_runs``: n records as runs ``(record, count, stride)``: after each record,
    the following records whose header bytes equal it are taken in bulk (they parse to the
    same values, and pass or fail the same checks), differing only in where their payload
    starts (``stride`` bytes apart). ``read_<s>_many``: the same records, one tuple each."""
    cls = camel(rs.name)
    lazy_slot = f"{rs.fields[-1].name}_offset"
    k = slots.index(lazy_slot)
    c()
    c()
    c(f"def read_{rs.name}_runs(buf: Buffer, pos: int, end: int, n: int, era: tuple[int, ...] = LATEST) -> tuple[list[tuple[{cls}, int, int]], int]:")
    c.indent()
    c(f'"""Read ``n`` consecutive {rs.name} records as runs ``(first record, count, stride)``: the')
    c("records of a run have the first one's header bytes, their payloads ``stride`` bytes apart.\"\"\"")
    c(f"out: list[tuple[{cls}, int, int]] = []")
    c("done = 0")
    c("window = 16")
    c("while done < n:")
    c.indent()
    c("try:")
    c.indent()
    c(f"rec, nxt = read_{rs.name}(buf, pos, end, era)")
    c.dedent()
    c("except MlfError as _e:")
    c.indent()
    c("raise _e.prefixed(f\"[{done}]\") from None")
    c.dedent()
    c("rest = n - done - 1")
    c("stride = nxt - pos")
    c("m = 0")
    c("if rest and stride > 0:")
    c.indent()
    c("k = min(rest, (end - nxt) // stride, window)")
    c("if k:")
    c.indent()
    c("# probe the next records one by one; NumPy's bulk compare pays only inside a long run")
    c(f"head_len = rec[{k}] - pos")
    c("ref = buf[pos:pos + head_len]")
    c("probe = nxt")
    c("lim = min(k, 8)")
    c("while m < lim and buf[probe:probe + head_len] == ref:")
    c.indent()
    c("m += 1")
    c("probe += stride")
    c.dedent()
    c("if m == 8 and k > 8:")
    c.indent()
    c("m = 8 + _same_heads(buf, pos, probe, stride, head_len, k - 8)")
    c.dedent()
    c("window = min(window * 2, 1 << 16) if m == k else 16")
    c.dedent()
    c.dedent()
    c("out.append((rec, m + 1, stride))")
    c("done += m + 1")
    c("pos = nxt + m * stride")
    c.dedent()
    c("return out, pos")
    c.dedent()
    c()
    c()
    c(f"def read_{rs.name}_many(buf: Buffer, pos: int, end: int, n: int, era: tuple[int, ...] = LATEST) -> tuple[list[{cls}], int]:")
    c.indent()
    c(f'"""Read ``n`` consecutive {rs.name} records (bulk path for runs of identical headers)."""')
    c(f"runs, pos = read_{rs.name}_runs(buf, pos, end, n, era)")
    c(f"out: list[{cls}] = []")
    c("for rec, m, stride in runs:")
    c.indent()
    c("out.append(rec)")
    c("if m > 1:")
    c.indent()
    c(f"head, tail = rec[:{k}], rec[{k + 1}:]")
    c(f"first = rec[{k}] + stride")
    c(f"out.extend([_new({cls}, head + (o,) + tail) for o in range(first, first + (m - 1) * stride, stride)])")
    c.dedent()
    c.dedent()
    c("return out, pos")
    c.dedent()


def emit_write_many(c: Code, rs: RStruct, slots: list[str]) -> None:
    """``write_<s>_many``: records that differ only in their lazy payload share one
    encoded header (cached by the record minus its payload offset)."""
    cls = camel(rs.name)
    lazy_slot = f"{rs.fields[-1].name}_offset"
    k = slots.index(lazy_slot)
    field = rs.fields[-1].name
    c()
    c()
    c(f"def write_{rs.name}_many(append: Callable[[Any], Any], recs: list[{cls}], lazy: Lazy, era: tuple[int, ...] = LATEST) -> None:")
    c.indent()
    c('"""Append the bytes of every record of ``recs``, encoding each distinct header once."""')
    c("heads: dict[tuple, bytes] = {}")
    c("marker = object()")
    c("last: Any = None")
    c("head = b''")
    c("for rec in recs:")
    c.indent()
    c("if rec is not last:  # writers often pass one record object for many tensors")
    c.indent()
    c("last = rec")
    c(f"key = rec[:{k}] + rec[{k + 1}:]")
    c("head = heads.get(key)")
    c("if head is None:")
    c.indent()
    c("parts: list[Any] = []")
    c(f"write_{rs.name}(parts.append, rec, lambda _f, _r: marker, era)")
    c("head = heads[key] = b''.join(parts[:-1])")
    c.dedent()
    c.dedent()
    c("append(head)")
    c(f"append(lazy({field!r}, rec) if lazy is not None else b'')")
    c.dedent()
    c.dedent()


def emit_start_of(c: Code, rs: RStruct, segments: list) -> None:
    """``start_of_<s>(rec)``: where a record began, from where its lazy payload begins
    (so errors found after parsing can name the byte offset of any header field), and
    ``<S>_OFFSETS``: the offsets of the leading fixed fields from that start."""
    terms: list[str] = []
    offsets: dict[str, int] = {}
    fixed = 0
    leading = True
    for kind, what, members in segments[:-1]:
        if kind == "run":
            if leading:
                pos = fixed
                for f in rs.fields:
                    if f.name in offsets:
                        continue
                    inner = f.inline_struct
                    if f.is_scalar and not f.is_array and f.name in members:
                        offsets[f.name] = pos
                        pos += SCALARS[f.spec.type][0]
                    elif inner is not None and all(m[0] in members for m in inline_scalars(inner, f.name, f.name)):
                        offsets[f.name] = pos
                        pos += inner.fixed_size or 0
            fixed += int(sum(SCALARS[_flat_type(rs, m)][0] for m in members))
        elif kind == "merged":
            code, tail = what
            size = {v[1]: v[0] for v in SCALARS.values()}[code]
            terms.append(f"len(rec.{members[0]}) * {size}")
            fixed += sum({v[1]: v[0] for v in SCALARS.values()}[ch] for ch in tail)
            leading = False
        else:
            return  # a layout this helper does not cover: emit nothing
    lazy_slot = f"{rs.fields[-1].name}_offset"
    total = " + ".join([str(fixed), *terms])
    c()
    c()
    c(f"{rs.name.upper()}_OFFSETS = {offsets!r}")
    c()
    c()
    c(f"def start_of_{rs.name}(rec: {camel(rs.name)}) -> int:")
    c.indent()
    c('"""Offset of the first byte of ``rec`` in the buffer it was read from."""')
    c(f"return rec.{lazy_slot} - ({total})")
    c.dedent()


def _flat_type(rs: RStruct, flat: str) -> str:
    for f in rs.fields:
        if f.is_scalar and f.name == flat:
            return f.spec.type
        if f.inline_struct is not None:
            for name, _dotted, sf in inline_scalars(f.inline_struct, f.name, f.name):
                if name == flat:
                    return sf.spec.type
    raise KeyError(flat)
