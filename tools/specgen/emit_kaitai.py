"""Emit Kaitai Struct specs (.ksy) of the binary formats, from the IR only.

One ``tvm_<spec>.ksy`` per binary spec plus ``tvm_stream.ksy`` (the length-prefixed strings of
TVM's stream conventions and two zero-byte helpers). A spec with exactly one root struct has it
as the file's top-level type; the other specs are libraries of nested types. Every struct is
a type, every field one or more ``seq`` entries:

* ``str`` -> ``tvm_stream::lp_str`` (``len_value``, ``raw``, decoded ``value``; decoding is
  lazy, so bytes that are not UTF-8 never stop a parse: TVM does not validate them either) or
  ``lp_bytes``; ``vec``/``map`` -> ``num_<x>`` (u8) + ``<x>`` repeated; ``count`` -> ``repeat-expr``;
  ``size`` -> ``size`` (``remaining()`` -> ``size-eos``); ``sized`` -> ``len_<x>`` + ``<x>`` in a
  substream + a zero-byte ``<x>_fully_read`` check (``_io.eof``).
* ``since``/``until`` -> ``if:`` on the parameter ``tvm_minor`` (the minor of the producing TVM
  0.<minor>), threaded explicitly through every type that needs it (``_root`` of a type used
  from another file is null in the generated Python).
* ``const`` -> ``valid`` (or ``contents`` bytes for values above 2^53: JavaScript reads u8 as a
  double); ``equals``/``derive`` -> ``valid: {eq}``; ``constraint`` -> ``valid`` on the field, on
  its count or on each element (``_index`` for ``row_ptr[0]`` and ``nondecreasing``); error
  invariants -> zero-byte check fields; ``numel`` -> a zero-byte running product; a switch
  without default -> a failing ``_`` case (Kaitai otherwise skips silently) and, where the
  selector is a string field, ``valid: any-of`` over the known values; ``table`` -> one enum
  per dialect of the table plus TVM's spelling as a value instance.

What became of every rule is recorded as a :class:`Rule`; what Kaitai cannot state is written
into the types' docs and the reference page ``docs/kaitai.md`` instead of being dropped silently.
"""

from __future__ import annotations

import ast
from typing import Any

from .common import header
from .expr import Expr, dotted_name
from .fields import kind_of
from .fields.base import value_kind
from .ksy_base import (
    ERA,
    JS_SAFE,
    KS_VERSION,
    KSY_SCALAR,
    PREFIX,
    REMAINING,
    STREAM,
    Checks,
    KsyError,
    KsyField,
    Rule,
    Untranslatable,
    check_collisions,
    clean_doc,
    file_id,
    ksy_id,
    ksy_text,
    length_guard,
    lit_str,
    lower_camel,
    plain,
    stream_ksy,
    upper_camel,
)
from .ksy_checks import KsyChecks
from .ksy_expr import (
    Scope,
    Translator,
    field_of,
    int_value,
)
from .ksy_tables import KsyTables
from .model import Binary, Model, RField, RStruct
from .versions import era_condition, vkey


class KsyEmitter(KsyChecks, KsyTables):
    """Builds every .ksy object of a model (``files``) and the list of what they cannot check (``gaps``)."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.rules: list[Rule] = []
        for era in model.boundaries():
            if vkey(era)[0] != 0:
                raise KsyError(f"era {era}: the Kaitai back end passes the TVM version as tvm_minor and only knows 0.x")
        self.structs: dict[tuple[str, str], RStruct] = {}
        for b in model.binaries.values():
            for rs in b.structs.values():
                self.structs[(rs.owner, rs.name)] = rs
        self.roots: dict[str, list[str]] = {
            b.name: [s.name for s in b.spec.structs if s.root] for b in model.binaries.values()}
        self.needs_era = self._era_closure()
        self._map_entries: dict[str, dict[str, Any]] = {}
        self.files: dict[str, dict[str, Any]] = {STREAM: stream_ksy()}
        for b in model.binaries.values():
            self.files[file_id(b.name)] = self.emit_binary(b)

    @property
    def gaps(self) -> list[Rule]:
        """The rules the .ksy does not state, or states in part."""
        return [r for r in self.rules if r.status != "yes"]

    # analysis -----------------------------------------------------------------------------
    def _refs(self, rs: RStruct) -> list[RStruct]:
        out = []
        for f in rs.fields:
            for ref in (f.struct, f.elem_struct, f.value_struct):
                if ref is not None:
                    out.append(ref)
            if f.spec.switch is not None:
                for t in list(f.spec.switch.cases.values()) + [f.spec.switch.default]:
                    if t:
                        target = self.find(rs.owner, t)
                        if target is not None:
                            out.append(target)
        return out

    def find(self, from_spec: str, name: str) -> RStruct | None:
        """The struct a name means in a spec (its own structs, then those of the specs it uses)."""
        b = self.model.binaries[from_spec]
        if name in b.structs:
            return b.structs[name]
        for used in b.spec.uses:
            if name in self.model.binaries[used].structs:
                return self.model.binaries[used].structs[name]
        return None

    def _era_closure(self) -> set[tuple[str, str]]:
        needs = {k for k, rs in self.structs.items()
                 if any(f.spec.since or f.spec.until or f.spec.table for f in rs.fields)}
        changed = True
        while changed:
            changed = False
            for k, rs in self.structs.items():
                if k not in needs and any((t.owner, t.name) in needs for t in self._refs(rs)):
                    needs.add(k)
                    changed = True
        return needs

    def era(self, rs: RStruct) -> bool:
        return (rs.owner, rs.name) in self.needs_era

    def is_top(self, rs: RStruct) -> bool:
        return self.roots[rs.owner] == [rs.name]

    def type_ref(self, rs: RStruct, from_spec: str) -> str:
        """How a file refers to a struct (with its era argument)."""
        if rs.owner == from_spec:
            base = file_id(rs.owner) if self.is_top(rs) else ksy_id(rs.name)
        else:
            base = file_id(rs.owner) if self.is_top(rs) else f"{file_id(rs.owner)}::{ksy_id(rs.name)}"
        return f"{base}({ERA})" if self.era(rs) else base

    def element_type(self, type_name: str, encoding: str | None, owner: RStruct, spec_name: str,
                     versions: bool = False) -> tuple[str, set[str]]:
        """The Kaitai type of one element (scalar, str or struct) and the files it needs."""
        if type_name in KSY_SCALAR:
            return KSY_SCALAR[type_name], set()
        if type_name == "str":
            t = "lp_version" if versions else ("lp_str" if encoding else "lp_bytes")
            return f"{STREAM}::{t}", {STREAM}
        target = self.find(spec_name, type_name)
        if target is None:
            raise KsyError(f"{owner.name}: unknown type {type_name!r}")
        return self.type_ref(target, spec_name), ({file_id(target.owner)} if target.owner != spec_name else set())

    # one spec file ------------------------------------------------------------------------
    def emit_binary(self, b: Binary) -> dict[str, Any]:
        spec = b.spec
        imports: set[str] = {STREAM}
        types: dict[str, Any] = {}
        enums: dict[str, Any] = {}
        top: dict[str, Any] | None = None
        consts: dict[str, int | str] = {}
        for used in spec.uses:
            consts.update({k.name: k.value for k in self.model.binaries[used].spec.constants})
        consts.update({k.name: k.value for k in spec.constants})
        for s in spec.structs:
            rs = b.structs[s.name]
            body, needs = self.emit_struct(b, rs, consts, enums)
            imports |= needs
            if self.is_top(rs):
                top = body
            else:
                types[ksy_id(rs.name)] = body
        entries = self._map_entries.pop(spec.name, {})
        for name, body in entries.items():
            types[name] = body
        imports.discard(file_id(spec.name))
        check_collisions(list(types), f"{file_id(spec.name)}.ksy types", upper_camel)
        check_collisions(list(enums), f"{file_id(spec.name)}.ksy enums", upper_camel)
        doc = spec.doc
        if top is None:
            doc += " This file is a library of types for the other .ksy files; it has no top-level layout."
        if any(self.era(b.structs[s.name]) for s in spec.structs):
            doc += (f" Types that take `{ERA}` read the bytes of TVM 0.<{ERA}>: the layout or the meaning of a "
                    "code changed between versions and nothing in the bytes says which one was written.")
        meta: dict[str, Any] = {"id": file_id(spec.name), "title": spec.title, "ks-version": KS_VERSION,
                                "endian": "le", "imports": sorted(imports)}
        if spec.name == "params":
            meta["file-extension"] = "params"
        meta["-mlf-spec"] = {"source": b.doc.rel, "sha256": self.model.digest(b.doc)}
        out: dict[str, Any] = {"meta": meta, "doc": clean_doc(doc)}
        if top is not None:
            tdoc = top.pop("doc")
            out["doc"] = clean_doc(doc + " The top-level type: " + tdoc)
            out.update(top)
        if types:
            out["types"] = types
        if enums:
            out["enums"] = enums
        return out

    def map_entry(self, b: Binary, rs: RStruct, f: RField) -> tuple[str, set[str]]:
        """The type of one key/value pair of a map field (deduplicated per file)."""
        key_t, n1 = self.element_type(f.key or "", f.spec.encoding, rs, b.name)
        val_t, n2 = self.element_type(f.value or "", f.spec.encoding, rs, b.name)
        short = {"lp_str": "str", "lp_bytes": "bytes"}

        def label(t: str) -> str:
            t = t.split("(")[0].split("::")[-1]
            return short.get(t, t.removeprefix(PREFIX))

        name = f"{label(key_t)}_to_{label(val_t)}"
        per_file = self._map_entries.setdefault(b.name, {})
        era = self.era(f.value_struct) if f.value_struct is not None else False
        if name not in per_file:
            body: dict[str, Any] = {"doc": f"One key/value pair of a map ({f.key} -> {f.value})."}
            if era:
                body["params"] = [{"id": ERA, "type": "u2"}]
            body["seq"] = [{"id": "key", "type": key_t, "doc": "The key."},
                           {"id": "value", "type": val_t, "doc": "The value."}]
            per_file[name] = body
        return (f"{name}({ERA})" if era else name), n1 | n2

    def emit_struct(self, b: Binary, rs: RStruct, consts: dict[str, int | str],
                    enums: dict[str, Any]) -> tuple[dict[str, Any], set[str]]:
        """The .ksy type of one struct and the files it needs."""
        needs: set[str] = set()
        seq: list[dict[str, Any]] = []
        instances: dict[str, Any] = {}
        rules_before = len(self.rules)
        scope = self.struct_scope(rs, consts)
        selector_values = self.selector_values(rs)
        invariants_after = self.place_invariants(rs, scope, instances)
        for f in rs.fields:
            entries, n = self.emit_field(b, rs, f, scope, selector_values.get(f.name))
            needs |= n
            seq.extend(entries)
            for inv, e in invariants_after.get(f.name, []):
                check = self.invariant_check(rs, scope, inv, e)
                if check is not None:
                    seq.append(check)
            if f.spec.table:
                self.table_instances(rs, f, instances, enums)
        for h_field, inst in scope.helpers.items():
            instances[inst] = {
                "value": f"{ksy_id(h_field)}_products.size == 0 ? 1 : {ksy_id(h_field)}_products.last.value",
                "doc": clean_doc(f"Product of {h_field} (1 for an empty list).")}
        body: dict[str, Any] = {"doc": rs.spec.doc}
        if self.era(rs):
            body["params"] = [{"id": ERA, "type": "u2", "doc": "Minor version of the producing TVM (0.<tvm_minor>)."}]
        if seq:
            body["seq"] = seq
        if instances:
            body["instances"] = instances
        notes = [g.line() for g in self.rules[rules_before:] if g.status != "yes"]
        if notes:
            body["doc"] = rs.spec.doc + " Not stated in this Kaitai spec: " + " ".join(
                f"({i}) {t}." for i, t in enumerate(notes, 1))
        body["doc"] = clean_doc(body["doc"])
        ids = [e["id"] for e in seq] + list(instances) + [p["id"] for p in body.get("params", [])]
        check_collisions(ids, f"{file_id(b.name)}::{rs.name}", lower_camel)
        return body, needs

    def struct_scope(self, rs: RStruct, consts: dict[str, int | str]) -> Scope:
        """The names in reach of the struct's rules, with the fields read in a special way: u64s
        read as bytes, strings used as versions, strings that select a layout."""
        scope = Scope(rs, consts)
        # u64 fields compared with constants beyond 2^53 are read as 8 bytes
        for f in rs.fields:
            if value_kind(f).wide_int(f):
                big = isinstance(f.spec.const, int) and abs(f.spec.const) > JS_SAFE
                if "constraint" in f.exprs:
                    ch = f.exprs["constraint"].choices(f.name) or []
                    big |= any(abs(int_value(ast.parse(str(c), mode="eval").body, consts) or 0) > JS_SAFE
                               for c in ch)
                if big:
                    scope.bytes_fields.add(f.name)
        # str fields used as TVM versions
        for f in rs.fields:
            for e in f.exprs.values():
                for node in ast.walk(e.tree):
                    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "at_least"
                            and (version := dotted_name(node.args[0]))):
                        scope.versions.add(version)
        # strings that select a layout (switch-on, if) are read inline and decoded while parsing
        for f in rs.fields:
            sources = ([f.switch_on] if f.switch_on is not None else []) + ([f.exprs["when"]] if "when" in f.exprs else [])
            for e in sources:
                for name in e.names:
                    g = field_of(rs, name.split(".")[0])
                    if g is not None and value_kind(g).selects_by_name(g) and g.spec.encoding and g.name not in scope.versions:
                        scope.selectors.add((rs.name, g.name))
        return scope

    def selector_values(self, rs: RStruct) -> dict[str, list[str]]:
        """Selectors of switches without default: the values that have a layout (for any-of)."""
        out: dict[str, list[str]] = {}
        for f in rs.fields:
            sw = f.spec.switch
            if sw is None or sw.default or f.spec.sized:
                continue
            on = dotted_name(f.switch_on.tree.body) if f.switch_on is not None else None
            on_field = field_of(rs, on) if on else None
            if on_field is None or not value_kind(on_field).selects_by_name(on_field):
                continue
            values = [str(k) for k in sw.cases]
            ok = True
            if "when" in f.exprs:
                w = f.exprs["when"].tree.body
                if (isinstance(w, ast.Compare) and len(w.ops) == 1 and isinstance(w.ops[0], ast.NotEq)
                        and dotted_name(w.left) == on and isinstance(w.comparators[0], ast.Constant)):
                    values.insert(0, str(w.comparators[0].value))
                else:
                    ok = False
            if ok and on is not None:
                out[on] = values
        return out

    def place_invariants(self, rs: RStruct, scope: Scope, instances: dict[str, Any]) -> dict[str, list[tuple[Any, Expr]]]:
        """Warning rules become boolean instances; error rules go after the last field they name
        (returned by field name)."""
        after: dict[str, list[tuple[Any, Expr]]] = {}
        for inv, e, _loc in rs.invariants:
            if inv.severity != "error":
                try:
                    cond = Translator(scope)(e)
                except Untranslatable as exc:
                    self.note(rs, f"rule {inv.name}", f"{inv.rule} (warning)", "no", str(exc))
                    continue
                instances[ksy_id(inv.name)] = {"value": cond, "doc": clean_doc(
                    f"The warning rule {inv.name} (true if it holds; a validation would stop the parse): {inv.doc}")}
                self.note(rs, f"rule {inv.name}", f"{inv.rule} (warning)", "yes",
                          f"a boolean value instance `{ksy_id(inv.name)}` (a warning does not stop a parse)")
                continue
            named = [n.split(".")[0] for n in e.names if n.split(".")[0] in {x.name for x in rs.fields}]
            last = max(named, key=lambda n: [x.name for x in rs.fields].index(n)) if named else rs.fields[-1].name
            after.setdefault(last, []).append((inv, e))
        return after

    def invariant_check(self, rs: RStruct, scope: Scope, inv: Any, e: Expr) -> dict[str, Any] | None:
        """The zero-byte check field of an error rule (None, and a gap noted, if it cannot be stated)."""
        try:
            cond = Translator(scope)(e)
        except Untranslatable as exc:
            self.note(rs, f"rule {inv.name}", inv.rule, "no", str(exc))
            return None
        self.note(rs, f"rule {inv.name}", inv.rule, "yes", f"a zero-byte check field `{ksy_id(inv.name)}`")
        check: dict[str, Any] = {"id": ksy_id(inv.name), "size": 0, "valid": {"expr": cond},
                                 "-mlf-error": "ConstraintError",
                                 "doc": clean_doc(f"Zero-byte check of the rule {inv.name}: {inv.doc}")}
        era_conds = era_condition(inv.since, inv.until, ERA, minor=True, outside=True)
        if era_conds:
            check["valid"] = {"expr": " or ".join(era_conds + [cond])}
        return check

    def emit_field(self, b: Binary, rs: RStruct, f: RField, scope: Scope,
                   any_of: list[str] | None) -> tuple[list[dict[str, Any]], set[str]]:
        """The seq entries of one field and the files they need: what all fields share here (the
        ``if``, the checks), the rest from the field's kind (:mod:`specgen.fields`)."""
        kf = self.field_start(b, rs, f, scope, any_of)
        kind = kind_of(f)
        vtype = kind.ksy_type(self, kf)
        self.const_check(kf)
        self.expr_checks(kf)
        self.constraint_checks(kf)
        if any_of is not None:
            lits = [lit_str(v) for v in any_of]
            kf.value_checks.add("(" + " or ".join(f"_ == {x}" for x in lits) + ")", {"any-of": lits}, "UnsupportedError")
            kf.doc += (" Only the values that have a layout are accepted: the payload that follows has no length, so "
                       "a parser that does not know it cannot go on.")
        self.helper_notes(kf)
        return kind.ksy_entries(self, kf, vtype), kf.needs

    def field_start(self, b: Binary, rs: RStruct, f: RField, scope: Scope, any_of: list[str] | None) -> KsyField:
        """The field's ``if`` (since/until and ``if``) and the notes on its era, condition, sized and table."""
        s = f.spec
        fid = ksy_id(f.name)
        conds: list[str] = era_condition(s.since, s.until, ERA, minor=True)
        if "when" in f.exprs:
            try:
                conds.append(Translator(scope)(f.exprs["when"]))
            except Untranslatable as exc:
                raise KsyError(f"{rs.name}.{f.name}: its condition {s.when!r} cannot be stated: {exc}") from None
        if s.since or s.until:
            era_rule = " ".join(x for x in (f"since {s.since}" if s.since else "", f"until {s.until}" if s.until else "") if x)
            self.note(rs, f.name, era_rule, "yes", f"`if: {' and '.join(conds[:len(conds) - ('when' in f.exprs)])}`")
        if "when" in f.exprs:
            self.note(rs, f.name, f"if: {s.when}", "yes", f"`if: {conds[-1]}`")
        if s.sized:
            self.note(rs, f.name, "sized", "yes", f"`len_{fid}` + a substream + the zero-byte check `{fid}_fully_read`")
        if s.table:
            self.note(rs, f.name, f"table: {s.table}", "yes", f"an enum per dialect (`{fid}_v0_<n>` instances) "
                      "and TVM's spelling (`spelling` instance)")
        return KsyField(b, rs, f, scope, any_of, " and ".join(conds) if conds else None, s.doc)

    def value_type(self, kf: KsyField) -> Any:
        """The Kaitai type of a scalar, str or struct value (or of each element of an array)."""
        vtype, n = self.element_type(kf.f.spec.type, kf.f.spec.encoding, kf.rs, kf.b.name,
                                     versions=kf.f.name in kf.scope.versions)
        kf.needs |= n
        return vtype

    def switch_type(self, kf: KsyField) -> Any:
        """``switch-on`` over the cases (a failing ``_`` case where there is no default)."""
        f, s, rs = kf.f, kf.f.spec, kf.rs
        assert s.switch is not None and f.switch_on is not None
        on_src = Translator(kf.scope)(f.switch_on)
        on_field = field_of(rs, dotted_name(f.switch_on.tree.body) or "")
        cases: dict[str, str] = {}
        for k, t in s.switch.cases.items():
            by_name = on_field is not None and value_kind(on_field).selects_by_name(on_field)
            key = lit_str(k) if isinstance(k, str) and by_name else str(k)
            kt, n = self.element_type(t, None, rs, kf.b.name)
            kf.needs |= n
            cases[key] = kt
        if s.switch.default:
            kt, n = self.element_type(s.switch.default, None, rs, kf.b.name)
            kf.needs |= n
            cases["_"] = kt
        elif not s.sized:
            cases["_"] = f"{STREAM}::unsupported"
        if s.switch.default:
            how = "`switch-on`; other values: the default case"
        elif s.sized:
            how = "`switch-on`; other values: a failing `_` case"
        elif kf.any_of is not None:
            how = "`switch-on`; other values: `valid: any-of` on the selector (and a failing `_` case)"
        else:
            how = "`switch-on`; other values: a failing `_` case (Kaitai would otherwise read nothing)"
        self.note(rs, f.name, f"switch on {s.switch.on}", "yes", how)
        if s.switch.extensible:
            self.note(rs, f.name, f"extensible: {s.switch.extensible}", "partly",
                      "codecs registered at run time do not exist in a generated parser: add a case to the "
                      ".ksy (or use Kaitai's opaque types)")
        return {"switch-on": on_src, "cases": cases}


    # entries -------------------------------------------------------------------------------
    def sized_entries(self, kf: KsyField, vtype: Any) -> list[dict[str, Any]]:
        """A sized value: a length, then the value in a substream that it must fill."""
        f, fid = kf.f, kf.fid
        if not kind_of(f).ksy_sized(f):
            raise KsyError(f"{kf.rs.name}.{f.name}: a sized {f.kind} has no Kaitai form here (only struct, switch)")
        guard = Checks()
        length_guard(guard)
        le = kf.entry(f"len_{fid}", type="u8", doc=f"Byte length of {f.name}.")
        guard.apply(le)
        e = kf.entry(fid, size=f"len_{fid}", type=vtype, doc=clean_doc(kf.doc))
        kf.value_checks.apply(e)
        return [le, e, kf.entry(f"{fid}_fully_read", size=0, valid={"expr": f"{fid}._io.eof"},
                                **{"-mlf-error": "LengthError"},
                                doc=clean_doc(f"Zero-byte check: the value of {f.name} fills its length exactly."))]

    def bytes_entries(self, kf: KsyField) -> list[dict[str, Any]]:
        """``size`` bytes (``size-eos`` for remaining()), after a zero-byte check that they are there."""
        f, s, fid = kf.f, kf.f.spec, kf.fid
        out: list[dict[str, Any]] = []
        size_e = f.exprs["size"]
        if "remaining" in size_e.helpers:
            e = kf.entry(fid, **{"size-eos": True})
        else:
            try:
                size_src = Translator(kf.scope)(size_e)
            except Untranslatable as exc:
                raise KsyError(f"{kf.rs.name}.{f.name}: size {s.size!r}: {exc}") from None
            out.append(kf.entry(f"{fid}_fits", size=0, valid={"expr": f"{size_src} <= {REMAINING}"},
                                **{"-mlf-error": "LengthError"},
                                doc=clean_doc(f"Zero-byte check: the {size_src} bytes of {f.name} are there "
                                              "(checked before they are read).")))
            e = kf.entry(fid, size=size_src)
        if s.lazy:
            kf.doc += " (Kaitai's Python runtime copies these bytes; its JavaScript runtime gives a view.)"
        e["doc"] = clean_doc(kf.doc)
        kf.value_checks.apply(e)
        out.append(e)
        return out

    def inline_str_entries(self, kf: KsyField) -> list[dict[str, Any]]:
        """A string that selects a layout: its length, then the text decoded while parsing."""
        fid = kf.fid
        length_guard(kf.count_checks)
        le = kf.entry(f"len_{fid}", type="u8", doc=f"Byte length of {kf.f.name}.")
        kf.count_checks.apply(le)
        e = kf.entry(fid, type="str", size=f"len_{fid}", encoding="UTF-8")
        kf.value_checks.apply(e)
        e["doc"] = clean_doc(kf.doc + " Decoded while parsing, since it selects what follows.")
        self.note(kf.rs, kf.f.name, "encoding: utf-8", "partly",
                  "a string that selects a layout is decoded while parsing: bytes that are not UTF-8 stop the "
                  "Python parser (UnicodeDecodeError) and become U+FFFD in JavaScript; mlf-spec keeps them "
                  "(surrogateescape)")
        return [le, e]

    def count_entry(self, kf: KsyField, unit: int) -> dict[str, Any]:
        """``num_<x>``: the u64 element count of a vec or map (guarded by the bytes that remain)."""
        length_guard(kf.count_checks, unit)
        ce = kf.entry(f"num_{kf.fid}", type="u8", doc=f"Number of elements of {kf.f.name}.")
        kf.count_checks.apply(ce)
        return ce

    def array_count(self, kf: KsyField) -> str:
        """The ``repeat-expr`` of a counted array."""
        try:
            count = Translator(kf.scope)(kf.f.exprs["count"])
        except Untranslatable as exc:
            raise KsyError(f"{kf.rs.name}.{kf.f.name}: count {kf.f.spec.count!r}: {exc}") from None
        if kf.count_checks:
            raise KsyError(f"{kf.rs.name}.{kf.f.name}: a rule on the count of a counted array")
        return count

    def u64_bytes_entry(self, kf: KsyField) -> dict[str, Any]:
        """A u64 read as 8 bytes (``contents`` for a const)."""
        if kf.contents is not None:
            e = kf.entry(kf.fid, contents=kf.contents, **{"-mlf-error": "ConstMismatchError"})
        else:
            e = kf.entry(kf.fid, size=8)
            kf.value_checks.apply(e)
        kf.doc += " Read as 8 bytes (little-endian): JavaScript reads a u8 as a double, which cannot tell these values apart."
        e["doc"] = clean_doc(kf.doc)
        return e

    def value_entries(self, kf: KsyField, vtype: Any, count: str | None,
                      out: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
        """The value (``repeat-expr: count`` for a list) after the entries ``out``, and for a list
        whose numel() a later rule takes, a zero-byte running product."""
        f, fid = kf.f, kf.fid
        out = list(out or [])
        e = kf.entry(fid, type=vtype)
        if count is not None:
            e["repeat"] = "expr"
            e["repeat-expr"] = count
            kf.elem_checks.apply(e)
            if kf.value_checks:
                raise KsyError(f"{kf.rs.name}.{f.name}: a rule on a whole list")
        else:
            kf.value_checks.apply(e)
        if f.spec.keep_span:
            kf.doc += " (Compile with --read-pos / debug mode for its offsets.)"
        e["doc"] = clean_doc(kf.doc)
        out.append(e)
        # numel(x) in a later rule: a running product right after x
        if kind_of(f).list_like(f) and self._numel_used(kf.rs, f.name):
            inst = f"{fid}_numel"
            prev = f"({fid}_products[_index - 1].value)"
            out.append(kf.entry(f"{fid}_products",
                                type=f"{STREAM}::product_step(_index == 0 ? 1 : {prev}, {fid}[_index])",
                                repeat="expr", **{"repeat-expr": count},
                                doc=clean_doc(f"Zero bytes: {fid}_products[i].value = {f.name}[0] * ... * {f.name}[i] "
                                              "(Kaitai has no product over an array).")))
            kf.needs.add(STREAM)
            kf.scope.helpers[f.name] = inst
        return out

    def _numel_used(self, rs: RStruct, name: str) -> bool:
        for f in rs.fields:
            for e in f.exprs.values():
                for node in ast.walk(e.tree):
                    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "numel"
                            and dotted_name(node.args[0]) == name):
                        return True
        return False



def emit_kaitai(model: Model) -> tuple[dict[str, str], dict[str, dict[str, Any]], list[Rule]]:
    """(file name -> .ksy text, ksy id -> object, what became of every rule) for generated/kaitai/."""
    em = KsyEmitter(model)
    texts: dict[str, str] = {}
    for kid, obj in em.files.items():
        if kid == STREAM:
            comment = ("# Generated by tools/generate.py (the stream conventions of spec/README.md).\n"
                       "# Do not edit: change the spec or the generator and run `python tools/generate.py`.\n")
        else:
            b = model.binaries[kid.removeprefix(PREFIX)]
            docs = [b.doc] + [model.binaries[u].doc for u in b.spec.uses]
            comment = header(model, docs)
        texts[f"{kid}.ksy"] = ksy_text(obj, comment)
    return texts, {k: plain(v) for k, v in em.files.items()}, em.rules


# --------------------------------------------------------------------------------------------
# diagrams and the reference page


def graph_specs(objs: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The .ksy objects as drawn: long computed values (the dtype spelling) left out, since the
    graphviz target prints every expression in full."""
    import copy

    def walk(t: dict[str, Any]) -> None:
        inst = t.get("instances")
        if inst:
            for k in [k for k, v in inst.items() if len(str(v.get("value", ""))) > 100]:
                del inst[k]
        for sub in t.get("types", {}).values():
            walk(sub)

    out = {}
    for k, v in objs.items():
        c = copy.deepcopy(v)
        walk(c)
        out[k] = c
    return out


def emit_kaitai_doc(model: Model, objs: dict[str, dict[str, Any]], rules: list[Rule]) -> str:
    """docs/kaitai.md: the exported files and what each rule of the spec became."""
    out = ["<!-- Generated by tools/generate.py from spec/binary/*.yaml. Do not edit. -->", "",
           "# Kaitai Struct specs", "",
           "Every binary format of the spec as a [Kaitai Struct](https://kaitai.io) `.ksy` file, emitted by "
           "`tools/specgen/emit_kaitai.py` from the same spec as mlf-spec's own readers (files in "
           "[`generated/kaitai/`](../kaitai/); `mlf-spec export ksy OUT_DIR` writes them). A Kaitai Struct "
           "compiler (0.11 or later) turns them into parsers for C++, C#, Go, Java, JavaScript, Lua, Nim, Perl, "
           "PHP, Python, Ruby and Rust. How to compile them: `docs/kaitai.md` in the repository.", "",
           "| File | Top-level type | Needs `tvm_minor` | Spec |", "|---|---|---|---|"]
    for kid, obj in objs.items():
        spec = kid.removeprefix(PREFIX)
        top = "yes" if "seq" in obj else "no (types only)"
        typed = [obj] + list(obj.get("types", {}).values())
        era = ("yes" if any(p.get("id") == ERA for p in obj.get("params", [])) else
               "some types" if any(p.get("id") == ERA for t in typed for p in t.get("params", [])) else "no")
        src = f"[{spec}]({spec}.md)" if spec in model.binaries else "stream conventions"
        out.append(f"| `{kid}.ksy` | {top} | {era} | {src} |")
    out += ["", "## The parameter `tvm_minor`", "",
            "The bytes do not say which TVM version wrote them, yet some layouts (FunctionInfo's "
            "`arg_extra_tags` from 0.21, Vulkan and Metal payloads at 0.24, relax VM constant tags) and the "
            "meaning of DLDataType codes changed between versions. Every type whose bytes depend on the version "
            "takes `tvm_minor`, the minor version of the TVM that wrote the file (`21` for 0.21; any number above "
            "the newest version the spec names means \"the newest\"), and passes it down. Kaitai's generated "
            "Python takes parameters first (`TvmParams(27, KaitaiStream(f))`), JavaScript last "
            "(`new TvmParams(new KaitaiStream(buf), null, null, 27)`).", "",
            "## What each rule of the spec became", "",
            "Status `yes`: the generated parser rejects input that breaks the rule. `partly`: it does in the "
            "cases named. `no`: it does not check it (mlf-spec's readers do).", "",
            "| Spec | Field | Rule | In the .ksy | How / why not |", "|---|---|---|---|---|"]
    for r in rules:
        where = f"{r.struct}.{r.where}" if not r.where.startswith("rule ") else f"{r.struct} {r.where}"
        rule_txt = r.rule.replace("|", "\\|")
        out.append(f"| {r.spec} | `{where}` | `{rule_txt}` | {r.status} | {r.how.replace('|', chr(92) + '|')} |")
    out += ["", "## Everywhere", "",
            "- Strings are read as bytes (`raw`) and decoded lazily (`value`), so bytes that are not UTF-8 never "
            "stop a parse (TVM does not validate them either); only module kinds and relay VM versions, which "
            "select a layout, are decoded while parsing.",
            "- 64-bit magic numbers are compared as bytes (`contents`): Kaitai's JavaScript runtime reads u8 as a "
            "double, so two magics that differ in the low bits would compare equal. Other u8 values (lengths, "
            "counts, row pointers) are exact in JavaScript up to 2^53 only, and byte sizes from 2^31 on wrap in "
            "its `readBytes`.",
            "- Every length and count read from the input is checked against the bytes that remain (a count "
            "against the fewest bytes its elements take) before anything is read, as mlf-spec's readers do "
            "(`valid: {max: _io.size - _io.pos}`); this also keeps Kaitai's JavaScript runtime from wrapping "
            "sizes of 2^31 and more.",
            "- Kaitai's Python runtime copies every `size` field (tensor data included) where mlf-spec returns "
            "views.",
            "- Validation errors of Kaitai's Python runtime name the .ksy path of the rule and the stream "
            "position; those of its JavaScript runtime carry neither.", ""]
    return "\n".join(out)
