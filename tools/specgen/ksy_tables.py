"""The table instances of a .ksy (an enum and a value instance per dialect, TVM's spelling):
the part of :class:`~specgen.emit_kaitai.KsyEmitter` that states the spec's lookup tables."""

from __future__ import annotations

import re
from typing import Any

from .ksy_base import (
    ERA,
    KsyError,
    check_collisions,
    clean_doc,
    ksy_id,
    lit_str,
)
from .ksy_expr import (
    field_of,
)
from .model import Model, RField, RStruct, table_dialects
from .versions import era_condition, vkey


class KsyTables:
    """Table instances and spelling expressions of the fields that name a table."""

    model: Model

    def table_instances(self, rs: RStruct, f: RField, instances: dict[str, Any], enums: dict[str, Any]) -> None:
        """Per dialect of the table: an enum and a value instance of the code; TVM's spelling."""
        table = f.spec.table
        assert table is not None
        tspec, _ = self.model.tables[table]
        cols = {c.name for c in tspec.columns}
        if not {"code", "spelling"} <= cols:
            return
        fid = ksy_id(f.name)
        for since, until, rows in table_dialects(self.model, table):
            label = "v" + since.replace(".", "_")
            enum_name = f"{table}_{label}"
            values: dict[int, Any] = {}
            by_code: dict[int, list[dict]] = {}
            for i in rows:
                row = tspec.rows[i]
                if row.get("code_max") is not None:
                    continue
                by_code.setdefault(row["code"], []).append(row)
            for code in sorted(by_code):
                group = by_code[code]
                anyw = [r for r in group if r.get("bits") is None]
                row = anyw[0] if anyw else group[0]
                name = row["kind"] if (anyw or len(group) > 1) else row["spelling"]
                values[code] = {"id": ksy_id(name), "doc": clean_doc(row["doc"])}
            enums[enum_name] = values
            check_collisions([v["id"] for v in values.values()], f"enum {enum_name}", str.upper)
            lo, hi = vkey(since)[1], (vkey(until)[1] if until else None)
            cond = f"{ERA} >= {lo}" + (f" and {ERA} < {hi}" if hi is not None else "")
            instances[f"{fid}_{label}"] = {
                "value": fid, "enum": enum_name, "if": cond,
                "doc": clean_doc(f"{f.name} as TVM {since}" + (f" to {until} (excluded)" if until else " and later")
                                 + " names it (null for other versions)."),
            }
        instances["base_spelling"] = {"value": self.spelling_expr(rs, f, tspec),
                                      "doc": clean_doc(f"TVM's name of (code, bits) in the dialect of tvm_minor, from "
                                                       f"the table {table}.")}
        instances["spells_lanes"] = {"value": self.spelling_expr(rs, f, tspec, column="spells_lanes"),
                                     "doc": clean_doc("Whether TVM appends the lanes to this spelling (not for a "
                                                      f"handle), from the table {table}.")}
        instances["spelling"] = {"value": self.spelling_suffix(),
                                 "doc": clean_doc("TVM's spelling of this dtype in the dialect of tvm_minor (x<lanes> "
                                                  "appended for vectors), as mlf_spec.params.dtypes spells it; "
                                                  "unknown(code=..,bits=..,lanes=..) for a code the table lacks.")}

    def spelling_expr(self, rs: RStruct, f: RField, tspec: Any, column: str = "spelling") -> str:
        """The spelling rule of the table (or its boolean ``column`` for the same rows) as one
        conditional expression."""
        code = ksy_id(f.name)
        bits = "bits" if field_of(rs, "bits") else None
        lanes = "lanes" if field_of(rs, "lanes") else None
        if bits is None or lanes is None:
            raise KsyError(f"{rs.name}: a {tspec.name} code needs sibling fields bits and lanes for the spelling")

        def template(t: str) -> str:
            parts = re.split(r"(\{bits\}|\{code\})", t)
            out = []
            for p in parts:
                if p == "{bits}":
                    out.append(f"{bits}.to_s")
                elif p == "{code}":
                    out.append(f"{code}.to_s")
                elif p:
                    out.append(lit_str(p))
            return " + ".join(out) if out else '""'

        ordered = [r for r in tspec.rows if r.get("bits") is not None] + [r for r in tspec.rows if r.get("bits") is None]
        branches = []
        for row in ordered:
            c = [f"{code} == {row['code']}"] if row.get("code_max") is None else [
                f"{code} >= {row['code']}", f"{code} <= {row['code_max']}"]
            if row.get("bits") is not None:
                c.append(f"{bits} == {row['bits']}")
            since, until = (str(row[k]) if row.get(k) else None for k in ("since", "until"))
            c += era_condition(since, until, ERA, minor=True)
            branches.append((" and ".join(c), template(row["spelling"]) if column == "spelling" else
                             ("true" if row[column] else "false")))
        if column != "spelling":
            base = "true"
            for when, t in reversed(branches):
                if t != base:
                    base = f"{when} ? {t} : {base}"
            return base
        base = f'"unknown(code=" + {code}.to_s + ",bits=" + {bits}.to_s + ",lanes=" + {lanes}.to_s + ")"'
        for when, t in reversed(branches):
            base = f"{when} ? {t} : {base}"
        return base

    @staticmethod
    def spelling_suffix(lanes: str = "lanes") -> str:
        """The lanes suffix: x<lanes> for vectors, xvscalex<n> for scalable ones (negative as int16)."""
        return (f'base_spelling.substring(0, 8) == "unknown(" or not spells_lanes ? base_spelling : base_spelling + '
                f'({lanes} >= 32768 ? "xvscalex" + (65536 - {lanes}).to_s : {lanes} != 1 ? "x" + {lanes}.to_s : "")')
