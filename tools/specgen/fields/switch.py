"""A switch: the layout of the value depends on an earlier field (``switch: {on, cases,
default, extensible}``); codecs registered at run time come before the spec's cases."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..ir import SCALARS
from ..model import RField
from .base import FieldKind

if TYPE_CHECKING:
    from ..expr import Expr
    from ..ksy_base import KsyField
    from .emitters import FastEmitter as StructEmitter
    from .emitters import KsyEmitterLike as KsyEmitter


class Switch(FieldKind):
    """One of the case types, chosen by the value of ``on``."""

    def options(self, f: RField) -> frozenset[str]:
        return frozenset({"sized"})

    def doc_type(self, f: RField) -> str:
        assert f.spec.switch is not None
        return "switch(" + f.spec.switch.on + ")"

    def ksy_sized(self, f: RField) -> bool:
        return True

    def read(self, em: StructEmitter, f: RField, slot: str) -> None:
        c, s, name = em.c, f.spec, f.name
        assert s.switch is not None and f.switch_on is not None
        c(f"_k = {em.py(f.switch_on)}")
        first = True
        if s.switch.extensible:
            # a codec registered at run time takes precedence over the spec's cases
            c(f"_x = _ext_lookup({s.switch.extensible!r}, _k)")
            c("if _x is not None:")
            c.indent()
            c("try:")
            c.indent()
            c(f"{name}, pos = _x.read(buf, pos, end, era)")
            c.dedent()
            c("except MlfError as _e:")
            c.indent()
            c(f"raise _e.prefixed({name!r}) from None")
            c.dedent()
            c.dedent()
            first = False
        for value, type_name in s.switch.cases.items():
            c(f"{'if' if first else 'elif'} _k == {value!r}:")
            first = False
            c.indent()
            em.emit_switch_case(name, type_name)
            c.dedent()
        c("else:")
        c.indent()
        if s.switch.default:
            em.emit_switch_case(name, s.switch.default)
        else:
            c(f"raise UnsupportedError(f\"no layout for {name} when {s.switch.on} is {{_k!r}}\", field={name!r}, offset=pos)")
        c.dedent()
        em.slots.append((name, "object"))

    def write(self, em: StructEmitter, f: RField) -> None:
        c, s, name = em.c, f.spec, f.name
        assert s.switch is not None and f.switch_on is not None
        c(f"_k = {em.py(f.switch_on)}")
        first = True
        if s.switch.extensible:
            c(f"_x = _ext_lookup({s.switch.extensible!r}, _k)")
            c("if _x is not None:")
            c.indent()
            c(f"_x.write(append, {name}, era)")
            c.dedent()
            first = False
        cases = list(s.switch.cases.items()) + ([(None, s.switch.default)] if s.switch.default else [])
        for value, type_name in cases:
            if value is None:
                c("else:")
            else:
                c(f"{'if' if first else 'elif'} _k == {value!r}:")
            first = False
            c.indent()
            em.write_element(type_name, name, None if type_name in SCALARS or type_name == "str"
                             else em.binary.structs.get(type_name))
            c.dedent()
        if not s.switch.default:
            c("else:")
            c.indent()
            c(f"raise UnsupportedError(f\"no layout for {name} when {s.switch.on} is {{_k!r}}\", field={name!r})")
            c.dedent()

    def ksy_type(self, km: KsyEmitter, kf: KsyField) -> Any:
        return km.switch_type(kf)

    def construct(self, f: RField, ctx: Callable[[Expr], str], typ: Callable[[str, str | None], str]) -> str:
        s = f.spec
        assert s.switch is not None and f.switch_on is not None
        cases = ", ".join(f"{k!r}: {typ(v, None)}" for k, v in s.switch.cases.items())
        default = typ(s.switch.default, None) if s.switch.default else "Error"
        return f"Switch(lambda ctx: {ctx(f.switch_on)}, {{{cases}}}, default={default})"
