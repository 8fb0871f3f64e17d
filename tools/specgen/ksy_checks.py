"""The checks a .ksy states (const, equals/derive, constraints, helpers) and the notes of what
it cannot state: the part of :class:`~specgen.emit_kaitai.KsyEmitter` that turns a field's rules
into ``valid`` keys."""

from __future__ import annotations

import ast
from typing import Any

from .expr import Expr
from .fields import kind_of
from .fields.base import value_kind
from .ksy_base import (
    FlowList,
    HexInt,
    KsyField,
    Rule,
    Untranslatable,
    bounds_form,
    bytes_lit,
    lit_str,
)
from .ksy_expr import (
    FirstElement,
    Nondecreasing,
    Scope,
    Translator,
    conjuncts,
    len_bounds,
    names_in,
    only_len_of,
    replace_first,
)
from .model import RStruct


class KsyChecks:
    """Checks of a field's rules and the notes of each rule's status (``rules``)."""

    rules: list[Rule]

    def note(self, rs: RStruct, where: str, rule: str, status: str, how: str) -> None:
        """Record the status of one rule of ``rs`` (at ``where``) and how the .ksy states it."""
        self.rules.append(Rule(rs.owner, rs.name, where, rule, status, how))

    def _sub_scope(self, kf: KsyField, **kw: Any) -> Scope:
        scope = kf.scope
        return Scope(kf.rs, scope.consts, bytes_fields=scope.bytes_fields, versions=scope.versions,
                     helpers=scope.helpers, selectors=scope.selectors, **kw)

    def const_check(self, kf: KsyField) -> None:
        """``const``: ``contents`` for a 64-bit value read as bytes, else ``valid`` on the value."""
        f, s = kf.f, kf.f.spec
        if s.const is None:
            return
        if isinstance(s.const, int) and kf.read_as_bytes:
            kf.contents = FlowList(HexInt(x) for x in s.const.to_bytes(8, "little", signed=s.const < 0))
        elif isinstance(s.const, int):
            kf.value_checks.add(f"_ == {s.const}", {"eq": s.const}, "ConstMismatchError")
        elif s.encoding and kf.inline_str:
            kf.value_checks.add(f"_ == {lit_str(s.const)}", {"eq": lit_str(s.const)}, "ConstMismatchError")
        elif s.encoding:
            kf.value_checks.add(f"_.value == {lit_str(s.const)}", None, "ConstMismatchError")
        else:  # compared as bytes
            raw = s.const.encode("utf-8")
            kf.value_checks.add(f"_.value == [{', '.join(f'0x{x:02x}' for x in raw)}]", None, "ConstMismatchError")
        self.note(kf.rs, f.name, f"const {s.const:#x}" if isinstance(s.const, int) else f"const {s.const!r}", "yes",
                  "`contents` (compared as bytes: JavaScript reads u8 as a double)" if kf.contents is not None
                  else "`valid`")

    def expr_checks(self, kf: KsyField) -> None:
        """``equals`` / ``derive``: ``valid: {eq}`` on the value (on the count of a vec or map)."""
        f = kf.f
        for key in ("equals", "derive"):
            if key not in f.exprs:
                continue
            rule = f"{key}: {f.exprs[key].source}"
            try:
                rhs = Translator(self._sub_scope(kf))(f.exprs[key])
            except Untranslatable as exc:
                self.note(kf.rs, f.name, rule, "no", str(exc))
                continue
            on_count = key == "equals" and kind_of(f).len_equals
            (kf.count_checks if on_count else kf.value_checks).add(
                f"_ == {rhs}", {"eq": rhs}, "CountMismatchError" if key == "equals" else "ConstraintError")
            self.note(kf.rs, f.name, rule, "yes", "`valid: {eq: " + rhs + "}` on "
                      + (f"`num_{kf.fid}`" if on_count else "the value"))

    def constraint_checks(self, kf: KsyField) -> None:
        """``constraint``, conjunct by conjunct: on each element, on the count, on the value, or a gap."""
        if "constraint" not in kf.f.exprs:
            return
        for c in conjuncts(kf.f.exprs["constraint"]):
            src = ast.unparse(c)
            try:
                self._conjunct_check(kf, c, src)
            except Untranslatable as exc:
                self.note(kf.rs, kf.f.name, src, "no", str(exc))
                kf.doc += f" Not checked here: {src} ({exc})."

    def _conjunct_check(self, kf: KsyField, c: ast.AST, src: str) -> None:
        f, rs, fid, scope = kf.f, kf.rs, kf.fid, kf.scope
        sub = Expr(src)
        if "each" in names_in(c):
            t = Translator(self._sub_scope(kf, subject=f.name, element=True))(sub)
            kf.elem_checks.add(t, bounds_form(sub.int_bounds("each")) if sub.is_pure_bounds("each") else None)
            self.note(rs, f.name, src, "yes", "`valid` on each element")
            return
        if (kind_of(f).list_like(f) or kf.inline_str) and only_len_of(c, f.name):
            t = Translator(self._sub_scope(kf, subject=f.name, count_level=True))(sub)
            bounds = len_bounds(c, f.name)
            kf.count_checks.add(t, bounds_form(bounds) if bounds else None)
            self.note(rs, f.name, src, "yes", f"`valid` on `{'len' if kf.inline_str else 'num'}_{fid}`")
            return
        if kind_of(f).list_like(f):
            try:
                Translator(self._sub_scope(kf, subject=f.name, element=True))(sub)
                raise Untranslatable(f"a rule over the whole list {f.name}")
            except FirstElement:
                inner = replace_first(c, f.name)
                t = Translator(self._sub_scope(kf, subject=f.name, element=True))(Expr(ast.unparse(inner)))
                kf.elem_checks.add(f"(_index != 0 or {t})")
                self.note(rs, f.name, src, "yes", "`valid` on each element, for `_index == 0`")
            except Nondecreasing:
                kf.elem_checks.add(f"(_index == 0 or _ >= {fid}[_index - 1])")
                self.note(rs, f.name, src, "yes", "`valid` on each element against the one before "
                          f"(`{fid}[_index - 1]`)")
            return
        if kf.read_as_bytes:
            ch = sub.choices(f.name)
            if ch is None:
                raise Untranslatable("a rule on a 64-bit value read as bytes")
            vals = [v if isinstance(v, int) else scope.consts[v] for v in ch]
            lits = [bytes_lit(int(v)) for v in vals]
            kf.value_checks.add("(" + " or ".join(f"_ == {x}" for x in lits) + ")", {"any-of": lits})
            self.note(rs, f.name, src, "yes", "`valid: any-of` over 8-byte literals (read as bytes: "
                      "JavaScript reads u8 as a double)")
            return
        t = Translator(self._sub_scope(kf, subject=f.name))(sub)
        form = None
        valid_form = value_kind(f).ksy_valid_form(f)
        if valid_form and sub.is_pure_bounds(f.name):
            form = bounds_form(sub.int_bounds(f.name))
        ch = sub.choices(f.name) if valid_form else None
        if ch is not None:
            form = {"any-of": [v if isinstance(v, int) else scope.consts[v] for v in ch]}
        kf.value_checks.add(t, form)
        self.note(rs, f.name, src, "yes", "`valid` on the value")

    def helper_notes(self, kf: KsyField) -> None:
        """decimal() and at_least() translate with a difference: noted once per rule."""
        f, rs = kf.f, kf.rs
        for e_ in f.exprs.values():
            for h, why in (("decimal", "to_i raises ValueError (Python) or gives NaN (JavaScript) where mlf-spec's "
                                       "decimal() gives -1 for a string that is not a plain decimal number"),
                           ("at_least", "the version is split at dots and read with to_i: a string that is not "
                                        "<major>.<minor>[.<rest>] with decimal numbers is an error (Python) or NaN "
                                        "(JavaScript), where mlf-spec counts it as the oldest version")):
                if h in e_.helpers and not any(g.struct == rs.name and g.where == f.name and g.rule == e_.source
                                               and g.status == "partly" for g in self.rules):
                    self.note(rs, f.name, e_.source, "partly", why)
