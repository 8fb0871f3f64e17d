"""Emit the fast reader/writer of a binary spec.

The reader walks a buffer (bytes, bytearray, memoryview or mmap) with ``struct`` calls:
runs of fixed-size fields are one ``unpack_from``; bulk bytes marked ``lazy`` are recorded
by offset and never copied. Every length and count is checked against the bytes that
remain before anything is allocated. Records are flat tuples with named fields (inline structs are
flattened: ``dtype.bits`` becomes ``dtype_bits``).
"""

from __future__ import annotations

from typing import Any

from . import runtime
from .code import Code
from .common import camel, header, inline_scalars
from .emit_heads import emit_heads
from .emit_runs import emit_many, emit_start_of, emit_write_many
from .expr import Expr
from .fields import has_many, kind_of
from .fields.base import read_struct
from .ir import SCALARS
from .model import Binary, Model, RField, RStruct
from .versions import era_condition

FASTLIB = runtime.source("fastlib")


class StructEmitter:
    def __init__(self, model: Model, binary: Binary, rs: RStruct, out: Code, consts: dict[str, int | str]) -> None:
        self.model, self.binary, self.rs, self.c = model, binary, rs, out
        self.consts = consts
        self.locals: dict[str, str] = {}  # dotted name -> local variable
        self.slots: list[tuple[str, str]] = []  # (attribute, python type)
        self.runs: list[tuple[str, str]] = []  # (name, format)
        self.segments: list[tuple[str, Any, Any]] = []  # how the reader grouped the fields
        self.started: set[str] = set()  # fields with a _start_<name> local
        self.tmp = 0
        self.takes_runs = False  # the reader has a ``runs`` option (its last field is a run-read array)

    # ---------------------------------------------------------------- naming
    def local(self, dotted: str) -> str:
        if dotted in self.locals:
            return self.locals[dotted]
        if dotted in self.consts:
            return dotted
        if dotted == "each":
            return "each"
        head, _, rest = dotted.partition(".")
        if head in self.locals and rest:
            return f"{self.locals[head]}.{rest.replace('.', '_')}"
        raise KeyError(dotted)

    def py(self, e: Expr) -> str:
        return e.translate(self.local, func_prefix="_", inline=True, remaining="end - pos")

    def new_tmp(self) -> str:
        self.tmp += 1
        return f"_t{self.tmp}"

    # ---------------------------------------------------------------- checks
    def checks(self, f: RField, var: str, dotted: str, offset: str) -> None:
        c = self.c
        s = f.spec
        if s.const is not None:
            if isinstance(s.const, int):
                c(f"if {var} != {s.const:#x}:")
                c.indent()
                c(f"raise ConstMismatchError(f\"{dotted} is {{{var}:#x}}, expected {s.const:#x}\", field={dotted!r}, offset={offset})")
            else:
                lit = s.const.encode("utf-8")
                c(f"if {var} != {lit!r}:")
                c.indent()
                c(f"raise ConstMismatchError(f\"{dotted} is {{{var}!r}}, expected {lit!r}\", field={dotted!r}, offset={offset})")
            c.dedent()
        if "equals" in f.exprs and kind_of(f).len_equals and not f.is_array:
            e = f.exprs["equals"]  # a vec/map: its element count must equal the expression
            c(f"if len({var}) != {self.py(e)}:")
            c.indent()
            c(f"raise CountMismatchError(f\"{dotted} has {{len({var})}} elements but {e.source} is {{{self.py(e)}}}\", field={dotted!r}, offset={offset})")
            c.dedent()
        elif "equals" in f.exprs:
            e = f.exprs["equals"]
            c(f"if {var} != {self.py(e)}:")
            c.indent()
            c(f"raise CountMismatchError(f\"{dotted} is {{{var}}} but {e.source} is {{{self.py(e)}}}\", field={dotted!r}, offset={offset})")
            c.dedent()
        if "derive" in f.exprs:
            e = f.exprs["derive"]
            t = self.new_tmp()
            c(f"{t} = {self.py(e)}")
            c(f"if {var} != {t}:")
            c.indent()
            c(f"raise ConstraintError(f\"{dotted} is {{{var}}}, expected {{{t}}} (= {e.source})\", field={dotted!r}, offset={offset})")
            c.dedent()
        if "constraint" in f.exprs:
            e = f.exprs["constraint"]
            if "each" in e.names and kind_of(f).each_elements(f):
                size, offset = kind_of(f).each_layout(f, offset)
                if e.is_pure_bounds("each"):
                    # min/max run in C; the per-element loop only runs to name the culprit
                    lo, hi = e.int_bounds("each")
                    tests = ([f"min({var}) < {lo}"] if lo is not None else []) + ([f"max({var}) > {hi}"] if hi is not None else [])
                    c(f"if {var} and ({' or '.join(tests)}):")
                    c.indent()
                c(f"for _i, each in enumerate({var}):")
                c.indent()
                c(f"if not ({self.py(e)}):")
                c.indent()
                off = f"{offset} + _i * {size}" if size else offset
                c(f"raise ConstraintError(f\"{dotted}[{{_i}}] is {{each}}, which breaks `{e.source}`\", field=f\"{dotted}[{{_i}}]\", offset={off})")
                c.dedent()
                c.dedent()
                if e.is_pure_bounds("each"):
                    c.dedent()
            else:
                c(f"if {_negated(self.py(e))}:")
                c.indent()
                c(f"raise ConstraintError(f\"{dotted} is {{{var}}}, which breaks `{e.source}`\", field={dotted!r}, offset={offset})")
                c.dedent()

    def struct_checks(self, rs: RStruct, dotted_prefix: str, offsets: dict[str, int]) -> None:
        """Checks of the members of an inline struct, after its run was unpacked."""
        for f in rs.fields:
            dotted = f"{dotted_prefix}.{f.name}"
            if f.is_scalar:
                self.checks(f, self.locals[dotted], dotted, f"pos + {offsets[dotted]}")
            else:
                assert f.struct is not None
                self.struct_checks(f.struct, dotted, offsets)

    # ---------------------------------------------------------------- reader
    def runnable(self, f: RField) -> bool:
        if f.conditional or f.is_array or f.spec.sized or f.spec.keep_span:
            return False
        return f.is_scalar or f.inline_struct is not None

    def emit_run(self, fields: list[RField]) -> None:
        c = self.c
        fmt = "<"
        names: list[str] = []
        ends: list[tuple[int, int, str]] = []
        offsets: dict[str, int] = {}
        off = 0
        for f in fields:
            if f.is_scalar:
                members = [(f.name, f.name, f)]
            else:
                assert f.struct is not None
                members = inline_scalars(f.struct, f.name, f.name)
                self.locals[f.name] = f"({', '.join(m[0] for m in members)})"
            start = off
            for flat, dotted, sf in members:
                size, code = SCALARS[sf.spec.type]
                fmt += code
                names.append(flat)
                offsets[dotted] = off
                self.locals[dotted] = flat
                self.slots.append((flat, "float" if code in "fd" else "int"))
                off += size
            if not f.is_scalar:  # an inline struct
                offsets[f.name] = start
            ends.append((start, off, f.name))
        run = f"_{self.rs.name.upper()}_RUN{len(self.runs)}"
        self.runs.append((run, fmt))
        self.segments.append(("run", run, names))
        ends_name = run + "_ENDS"
        self.runs.append((ends_name, repr(tuple(ends))))
        c(f"if end - pos < {off}:")
        c.indent()
        c(f"raise _truncated(pos, end, {ends_name})")
        c.dedent()
        target = ", ".join(names) + ("," if len(names) == 1 else "")
        c(f"{target} = {run}.unpack_from(buf, pos)")
        for f in fields:
            if f.is_scalar:
                self.checks(f, f.name, f.name, f"pos + {offsets[f.name]}")
            else:
                assert f.struct is not None
                self.struct_checks(f.struct, f.name, offsets)
                self.checks(f, self.locals[f.name], f.name, f"pos + {offsets[f.name]}")
        c(f"pos += {off}")

    def mergeable_array(self, fields: list[RField], i: int) -> bool:
        """A counted scalar array followed by fixed scalars: read both with one unpack."""
        f = fields[i]
        return (f.is_scalar and f.is_array and not f.conditional and i + 1 < len(fields)
                and self.runnable(fields[i + 1]) and fields[i + 1].is_scalar)

    def emit_array_with_run(self, arr: RField, run: list[RField]) -> None:
        c = self.c
        name = arr.name
        size, code = SCALARS[arr.spec.type]
        tail = "".join(SCALARS[f.spec.type][1] for f in run)
        ends: list[tuple[int, int, str]] = []
        off = 0
        offsets = {}
        for f in run:
            fsize = SCALARS[f.spec.type][0]
            ends.append((off, off + fsize, f.name))
            offsets[f.name] = off
            off += fsize
        ends_name = f"_{self.rs.name.upper()}_TAIL{len(self.runs)}_ENDS"
        self.runs.append((ends_name, repr(tuple(ends))))
        self.locals[name] = name
        self.segments.append(("merged", (code, tail), [name] + [f.name for f in run]))
        c(f"_start_{name} = pos")
        c(f"_n = {self.py(arr.exprs['count'])}")
        c("if _n < 0:")
        c.indent()
        c(f"raise ConstraintError(f\"{name} count is {{_n}}\", field={name!r}, offset=pos)")
        c.dedent()
        c(f"_s = _arr_run({code!r}, _n, {tail!r})")
        c("if _s.size > end - pos:")
        c.indent()
        c(f"if _n * {size} > end - pos:")
        c.indent()
        c(f"raise TruncatedError(f\"input ends inside {name}: {{_n}} x {size} bytes needed, {{end - pos}} remain\", field={name!r}, offset=pos)")
        c.dedent()
        c(f"raise _truncated(pos + _n * {size}, end, {ends_name})")
        c.dedent()
        c("_v = _s.unpack_from(buf, pos)")
        c(f"{name} = _v[:_n]")
        names = [f.name for f in run]
        c(f"{', '.join(names)}{',' if len(names) == 1 else ''} = _v[_n:]")
        for f in run:
            self.locals[f.name] = f.name
        self.slots.append((name, "tuple"))
        self.checks(arr, name, name, f"_start_{name}")
        c(f"pos += _n * {size}")
        for f in run:
            self.slots.append((f.name, "float" if SCALARS[f.spec.type][1] in "fd" else "int"))
            self.checks(f, f.name, f.name, f"pos + {offsets[f.name]}")
        c(f"pos += {off}")

    def read_u64(self, var: str, dotted: str, what: str) -> None:
        c = self.c
        c("if end - pos < 8:")
        c.indent()
        c(f"raise TruncatedError(\"input ends inside the {what} of {dotted}\", field={dotted!r}, offset=pos)")
        c.dedent()
        c(f"{var} = _U64(buf, pos)[0]")
        c("pos += 8")

    def check_room(self, n: str, unit: int, dotted: str, what: str, count_offset: str) -> None:
        c = self.c
        if unit <= 0:
            return
        cond = f"{n} > end - pos" if unit == 1 else f"{n} * {unit} > end - pos"
        c(f"if {cond}:")
        c.indent()
        c(f"raise LengthError(f\"{dotted} claims {{{n}}} {what} ({{{n} * {unit}}}+ bytes) but {{end - pos}} bytes remain\", field={dotted!r}, offset={count_offset})")
        c.dedent()

    def read_str_into(self, target: str, dotted_expr: str, encoding: str | None, append: bool) -> None:
        c = self.c
        c("if end - pos < 8:")
        c.indent()
        c(f"raise TruncatedError(\"input ends inside a string length\", field={dotted_expr}, offset=pos)")
        c.dedent()
        c("_n = _U64(buf, pos)[0]")
        c("pos += 8")
        c("if _n > end - pos:")
        c.indent()
        c(f"raise LengthError(f\"string claims {{_n}} bytes but {{end - pos}} remain\", field={dotted_expr}, offset=pos - 8)")
        c.dedent()
        val = "str(buf[pos:pos + _n], 'utf-8', 'surrogateescape')" if encoding else "bytes(buf[pos:pos + _n])"
        c(f"{target}.append({val})" if append else f"{target} = {val}")
        c("pos += _n")

    def read_element(self, type_name: str, target: str, path_expr: str, encoding: str | None, struct: RStruct | None) -> None:
        """Read one element of a vec/map/array and append it to ``target``."""
        c = self.c
        if type_name in SCALARS:
            size, code = SCALARS[type_name]
            c(f"if end - pos < {size}:")
            c.indent()
            c(f"raise TruncatedError(\"input ends inside an element\", field={path_expr}, offset=pos)")
            c.dedent()
            c(f"{target}.append(_arr({code!r}, 1).unpack_from(buf, pos)[0])")
            c(f"pos += {size}")
        elif type_name == "str":
            self.read_str_into(target, path_expr, encoding, append=True)
        else:
            assert struct is not None
            read_struct(self, struct.name, "_v", path_expr)
            c(f"{target}.append(_v)")

    def emit_field(self, f: RField) -> None:
        c = self.c
        s = f.spec
        name = f.name
        cond_parts = era_condition(s.since, s.until)
        if "when" in f.exprs:
            cond_parts.append(f"({self.py(f.exprs['when'])})")
        slot_name = f"{name}_offset" if kind_of(f).lazy(f) else name
        self.locals[name] = slot_name
        if cond_parts:
            c(f"{slot_name} = None")
            if s.keep_span:
                c(f"{name}_span = None")
            c(f"if {' and '.join(cond_parts)}:")
            c.indent()
        if s.sized:
            self.sized_open(name)
        start = "_start_" + name
        c(f"{start} = pos")
        kind_of(f).read(self, f, slot_name)
        if s.sized:
            self.sized_close(name)
        if s.keep_span:
            c(f"{name}_span = ({start}, pos)")
            self.slots.append((f"{name}_span", "tuple"))
        self.started.add(name)
        if not kind_of(f).lazy(f):
            self.checks(f, self.locals[name], name, start)
        if cond_parts:
            c.dedent()

    def invariant_check(self, inv: Any, e: Expr) -> None:
        """An error invariant: raise at the first field the rule names (or the struct start)."""
        c = self.c
        cond = era_condition(inv.since, inv.until) + [f"not ({self.py(e)})"]
        first = next((n.split(".")[0] for n in e.names if n.split(".")[0] in self.started), None)
        offset = f"_start_{first}" if first else "_pos0"
        summary = inv.doc.strip().split(". ")[0].rstrip(".").replace('"', "'").replace("{", "{{").replace("}", "}}")
        c(f"if {' and '.join(cond)}:")
        c.indent()
        c(f"raise ConstraintError(\"breaks {inv.name}: {summary}\", field={(first or inv.name)!r}, offset={offset})")
        c.dedent()

    def emit_lint(self, slots: list[str]) -> None:
        """``lint_<struct>(rec, era)``: the warning invariants that ``rec`` breaks."""
        warnings = [(inv, e) for inv, e, _ in self.rs.invariants if inv.severity == "warning"]
        if not warnings:
            return
        c = self.c
        cls = camel(self.rs.name)
        c()
        c()
        c(f"def lint_{self.rs.name}(rec: {cls}, era: tuple[int, ...] = LATEST) -> list[tuple[str, str]]:")
        c.indent()
        c(f'"""(name, explanation) of every warning-level invariant of {self.rs.name} that ``rec`` breaks."""')
        if slots:
            c(f"{', '.join(slots)}{',' if len(slots) == 1 else ''} = rec")
        c("out: list[tuple[str, str]] = []")
        for inv, e in warnings:
            cond = era_condition(inv.since, inv.until) + [f"not ({self.py(e)})"]
            c(f"if {' and '.join(cond)}:")
            c.indent()
            c(f"out.append(({inv.name!r}, {' '.join(inv.doc.split())!r}))")
            c.dedent()
        c("return out")
        c.dedent()

    def sized_open(self, name: str) -> None:
        """A sized field: read its u64 length and narrow ``end`` to its content."""
        c = self.c
        c("if end - pos < 8:")
        c.indent()
        c(f"raise TruncatedError(\"input ends inside the length of {name}\", field={name!r}, offset=pos)")
        c.dedent()
        c("_z = _U64(buf, pos)[0]")
        c("if _z > end - pos - 8:")
        c.indent()
        c(f"raise LengthError(f\"{name} claims {{_z}} bytes but {{end - pos - 8}} remain\", field={name!r}, offset=pos)")
        c.dedent()
        c("pos += 8")
        c(f"_end_{name} = end")
        c("end = pos + _z")

    def sized_close(self, name: str) -> None:
        """The content of a sized field must fill its length exactly; restore ``end``."""
        c = self.c
        c("if pos != end:")
        c.indent()
        c(f"raise LengthError(f\"{name}: its layout ends {{end - pos}} bytes before its stated length\", field={name!r}, offset=pos)")
        c.dedent()
        c(f"end = _end_{name}")

    def emit_switch_case(self, name: str, type_name: str) -> None:
        c = self.c
        if type_name in SCALARS:
            size, code = SCALARS[type_name]
            c(f"if end - pos < {size}:")
            c.indent()
            c(f"raise TruncatedError(\"input ends inside {name}\", field={name!r}, offset=pos)")
            c.dedent()
            c(f"{name} = _arr({code!r}, 1).unpack_from(buf, pos)[0]")
            c(f"pos += {size}")
        elif type_name == "str":
            self.read_str_into(name, repr(name), None, append=False)
        else:
            read_struct(self, type_name, name, repr(name))

    def emit_reader(self) -> list[str]:
        c = self.c
        rs = self.rs
        body = Code()
        saved = self.c
        self.c = body
        body.level = 1
        errors = [(inv, e) for inv, e, _ in rs.invariants if inv.severity == "error"]
        if errors:
            body("_pos0 = pos")
        fields = rs.fields
        i = 0
        while i < len(fields):
            if self.runnable(fields[i]):
                j = i
                while j < len(fields) and self.runnable(fields[j]):
                    j += 1
                self.emit_run(fields[i:j])
                i = j
            elif self.mergeable_array(fields, i):
                j = i + 1
                while j < len(fields) and self.runnable(fields[j]) and fields[j].is_scalar:
                    j += 1
                self.emit_array_with_run(fields[i], fields[i + 1:j])
                i = j
            else:
                self.segments.append(("field", None, fields[i]))
                self.emit_field(fields[i])
                i += 1
        for inv, e in errors:
            self.invariant_check(inv, e)
        cls = camel(rs.name)
        members = ", ".join(a for a, _ in self.slots)
        body(f"return _new({cls}, ({members}{',' if len(self.slots) == 1 else ''})), pos")
        self.c = saved
        c(f"class {cls}(Record):")
        c.indent()
        c(f'"""{rs.spec.doc.strip()} (flat record of {rs.name})."""')
        c()
        c("__slots__ = ()")
        c(f"_fields = {tuple(a for a, _ in self.slots)!r}")
        for k, (attr, typ) in enumerate(self.slots):
            c(f"{attr}: {_annot(typ)} = property(_item({k}))  # type: ignore[assignment]")
        c.dedent()
        c()
        c()
        for run, fmt in self.runs:
            if run.endswith("_ENDS"):
                c(f"{run} = {fmt}")
            else:
                c(f"{run} = struct.Struct({fmt!r})")
        c()
        c()
        if self.takes_runs:
            c(f"def read_{rs.name}(buf: Buffer, pos: int, end: int, era: tuple[int, ...] = LATEST, runs: Any = False) -> tuple[{cls}, int]:")
            c.indent()
            c(f'"""Read one {rs.name} at ``pos``; return it and the offset after it. Raises MlfError.')
            c("With ``runs``, its last field holds runs ``(first record, count, stride)`` of identical")
            c("record headers (see ``read_<record>_runs``) instead of one record each; a callable")
            c('``runs`` with the signature of ``read_<record>_runs`` reads those runs in its place."""')
        else:
            c(f"def read_{rs.name}(buf: Buffer, pos: int, end: int, era: tuple[int, ...] = LATEST) -> tuple[{cls}, int]:")
            c.indent()
            c(f'"""Read one {rs.name} at ``pos``; return it and the offset after it. Raises MlfError."""')
        c.dedent()
        c.lines.extend(body.lines)
        return [a for a, _ in self.slots]

    # ---------------------------------------------------------------- writer
    def emit_writer(self, slots: list[str]) -> None:
        c = self.c
        rs = self.rs
        cls = camel(rs.name)
        c()
        c()
        c(f"def write_{rs.name}(append: Callable[[Any], Any], rec: {cls}, lazy: Lazy | None = None, era: tuple[int, ...] = LATEST) -> None:")
        c.indent()
        c('"""Append the bytes of ``rec`` as chunks; ``lazy(field, rec)`` supplies lazy bytes fields."""')
        if slots:
            c(f"{', '.join(slots)}{',' if len(slots) == 1 else ''} = rec")
        for kind, what, members in self.segments:
            if kind == "run":
                c(f"append({what}.pack({', '.join(members)}))")
            elif kind == "merged":
                code, tail = what
                arr, rest = members[0], members[1:]
                c(f"append(_arr_run({code!r}, len({arr}), {tail!r}).pack(*{arr}, {', '.join(rest)}))")
            else:
                self.write_field(members)
        c.dedent()

    def write_field(self, f: RField) -> None:
        c = self.c
        s = f.spec
        name = f.name
        var = f"{name}_offset" if kind_of(f).lazy(f) else name
        cond = era_condition(s.since, s.until)
        if "when" in f.exprs:
            cond.append(f"({self.py(f.exprs['when'])})")
        if cond:
            # a record read or made for another TVM version: a clear error, not a TypeError
            c(f"if {' and '.join(cond)}:")
            c.indent()
            c(f"if {var} is None:")
            c(f"    raise ConstraintError(f\"{name} is part of this layout in TVM {{_era_text(era)}}, but the record "
              f"holds none (it was read or made for another TVM version)\", field={name!r})")
        if s.sized:  # write the content aside, then its length and the content
            c(f"_outer_{name} = append")
            c(f"_sub_{name}: list = []")
            c(f"append = _sub_{name}.append")
        kind_of(f).write(self, f)
        if s.sized:
            c(f"append = _outer_{name}")
            c(f"_b = b''.join(_sub_{name})")
            c("append(_U64P(len(_b)))")
            c("append(_b)")
        if cond:
            c.dedent()
            sized = kind_of(f).has_len(f)
            c(f"elif {var} is not None{f' and len({var}) != 0' if sized else ''}:  # an empty one loses nothing")
            c(f"    raise ConstraintError(f\"{name} has no place in this layout in TVM {{_era_text(era)}}, but the record "
              f"holds one (it was read or made for another TVM version)\", field={name!r})")
        del var

    def write_element(self, type_name: str, var: str, struct: RStruct | None = None) -> None:
        c = self.c
        if type_name in SCALARS:
            c(f"append(_arr({SCALARS[type_name][1]!r}, 1).pack({var}))")
        elif type_name == "str":
            c(f"_b = {var}.encode('utf-8', 'surrogateescape') if isinstance({var}, str) else {var}")
            c("append(_U64P(len(_b)))")
            c("append(_b)")
        else:
            c(f"write_{type_name}(append, {var}, lazy, era)")

    # ---------------------------------------------------------------- constructor
    def emit_new(self, slots: list[str]) -> None:
        c = self.c
        rs = self.rs
        cls = camel(rs.name)
        count_sources: dict[str, str] = {}
        for f in rs.fields:
            if f.is_array and f.spec.count and f.spec.count.isidentifier():
                count_sources[f.spec.count] = f.name
        defaults: dict[str, str] = {}
        computed: list[tuple[str, str]] = []

        def visit(f: RField, flat: str) -> None:
            s = f.spec
            if s.const is not None:
                defaults[flat] = repr(s.const if isinstance(s.const, int) else s.const.encode())
            elif s.canonical is not None:
                defaults[flat] = repr(s.canonical)
            elif flat in count_sources:
                defaults[flat] = "None"
                computed.insert(0, (flat, f"len({count_sources[flat]})"))
            elif "equals" in f.exprs and not kind_of(f).len_equals:
                defaults[flat] = "None"
                computed.append((flat, self.py(f.exprs["equals"])))
            elif "derive" in f.exprs:
                defaults[flat] = "None"
                computed.append((flat, self.py(f.exprs["derive"])))
            elif kind_of(f).lazy(f):
                defaults[flat] = "0"
            elif f.conditional:
                defaults[flat] = "None"
            if s.keep_span:
                defaults[f"{flat}_span"] = "None"

        for f in rs.fields:
            inner = f.inline_struct
            if inner is not None and not f.conditional and not f.is_array and not f.spec.sized and not f.spec.keep_span:
                for flat, _dotted, sf in inline_scalars(inner, f.name, f.name):
                    visit(sf, flat)
            else:
                visit(f, f"{f.name}_offset" if kind_of(f).lazy(f) else f.name)
        required = [s for s in slots if s not in defaults]
        optional = [s for s in slots if s in defaults]
        params = ", ".join([*(f"{s}: Any" for s in required), *(f"{s}: Any = {defaults[s]}" for s in optional)])
        c()
        c()
        c(f"def new_{rs.name}(*, {params}) -> {cls}:" if params else f"def new_{rs.name}() -> {cls}:")
        c.indent()
        c(f'"""A {rs.name} with constants, canonical values, counts and derived sizes filled in."""')
        for flat, expr in computed:
            c(f"if {flat} is None:")
            c.indent()
            c(f"{flat} = {expr}")
            c.dedent()
        c(f"return _new({cls}, ({', '.join(slots)}{',' if len(slots) == 1 else ''}))")
        c.dedent()


def _negated(source: str) -> str:
    """``not (source)``, written ``a not in b`` for a membership test."""
    import ast

    tree = ast.parse(source, mode="eval").body
    if isinstance(tree, ast.Compare) and len(tree.ops) == 1 and isinstance(tree.ops[0], (ast.In, ast.NotIn)):
        tree.ops = [ast.NotIn() if isinstance(tree.ops[0], ast.In) else ast.In()]
        return ast.unparse(tree)
    return f"not ({source})"


def _helpers_used(binary: Binary) -> list[str]:
    """The _fastlib helpers that the readers of ``binary``'s own structs call."""
    used: set[str] = set()
    for rs in binary.structs.values():
        if rs.owner != binary.name:
            continue
        for f in rs.fields:
            for e in [*f.exprs.values(), *([f.switch_on] if f.switch_on is not None else [])]:
                used |= e.helpers
            if f.spec.switch is not None and f.spec.switch.extensible:
                used.add("ext_lookup")
        for _inv, e, _loc in rs.invariants:
            used |= e.helpers
    used.discard("remaining")
    return sorted(used)


def _annot(typ: str) -> str:
    return {"tuple": "tuple", "list": "list", "object": "Any"}.get(typ, typ)


def emit_fast(model: Model, binary: Binary) -> str:
    """Python source of the fast reader/writer module of ``binary``."""
    docs = [binary.doc] + [model.binaries[u].doc for u in binary.spec.uses]
    if any(r for r in binary.structs.values() if any(f.spec.table for f in r.fields)):
        docs += [model.tables[f.spec.table][1] for r in binary.structs.values() for f in r.fields if f.spec.table]
    seen = []
    for d in docs:
        if d not in seen:
            seen.append(d)
    c = Code()
    c.lines.append(header(model, seen).rstrip("\n"))
    c(f'"""Fast reader and writer: {binary.spec.title}."""')
    c()
    c("from __future__ import annotations")
    c()
    c("import struct")
    c("from collections.abc import Callable")
    c("from operator import itemgetter as _item")
    c("from typing import Any")
    c()
    c("from mlf_spec.errors import (  # noqa: F401")
    for name in ("ConstMismatchError", "ConstraintError", "CountMismatchError", "LengthError", "MlfError",
                 "TruncatedError", "UnsupportedError"):
        c(f"    {name},")
    c(")")
    c()
    c("from ._fastlib import LATEST, U64P as _U64P, U64 as _U64, array_struct as _arr, ceil_div as _ceil_div  # noqa: F401")
    c("from ._fastlib import numel as _numel, truncated as _truncated, array_run_struct as _arr_run  # noqa: F401")
    c("from ._fastlib import read_strs as _read_strs, same_heads as _same_heads, write_strs as _write_strs, Record  # noqa: F401")
    c("from ._fastlib import era_text as _era_text  # noqa: F401")
    c("from math import prod as _prod  # noqa: F401")
    extras = _helpers_used(binary)
    if extras:
        c(f"from ._fastlib import {', '.join(f'{h} as _{h}' for h in extras)}  # noqa: F401")
    consts: dict[str, int | str] = {}
    for used in binary.spec.uses:
        ub = model.binaries[used]
        names = [f"read_{s}, write_{s}, new_{s}, {camel(s)}" + (f", read_{s}_many, read_{s}_runs, write_{s}_many, start_of_{s}" if has_many(ub.structs[s]) else "")
                 for s in ub.structs]
        c(f"from .{used}_fast import {', '.join(names)}  # noqa: F401")
        for k in ub.spec.constants:
            consts[k.name] = k.value
            c(f"from .{used}_fast import {k.name}  # noqa: F401")
    c()
    c("Buffer = bytes | bytearray | memoryview | Any")
    c("Lazy = Callable[[str, Any], Any]")
    c("_new = tuple.__new__")
    for k in binary.spec.constants:
        consts[k.name] = k.value
        c(f"{k.name} = {k.value:#x}  # {k.doc}" if isinstance(k.value, int) else f"{k.name} = {k.value!r}  # {k.doc}")
    for rs in binary.structs.values():
        if rs.owner != binary.name:
            continue
        c()
        c()
        em = StructEmitter(model, binary, rs, c, consts)
        slots = em.emit_reader()
        em.emit_writer(slots)
        em.emit_new(slots)
        em.emit_lint(slots)
        if has_many(rs):
            emit_many(c, rs, slots)
            emit_write_many(c, rs, slots)
            emit_start_of(c, rs, em.segments)
            emit_heads(c, rs, em.segments, slots)
    return c.text()
