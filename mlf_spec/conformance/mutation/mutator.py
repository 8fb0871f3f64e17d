"""A small source-to-source mutator for C readers, as a mutant schema: one instrumented source
holds every mutant, each guarded by a runtime switch (``MLF_MUTANT=<id>`` in the
environment selects the active one; unset, the program is the original). One sanitizer build
then serves all mutants.

Operators, applied between the lines ``/* MUTATE BEGIN */`` and ``/* MUTATE END */`` (the whole
file if it has none), inside function bodies, outside comments, strings, preprocessor lines and
what C needs constant (``static``, ``enum``, ``typedef``, ``struct`` declarations, constant
``[...]`` such as an array size, ``case`` labels, ``= {0}``); a mutant inside the arguments of a
call that only makes a message, and a comparison with an enumerator turned into one that agrees on
every value of its enum (``state != V_OK`` -> ``state > V_OK`` when V_OK is the least), are equivalent
by construction (:attr:`Mutant.equivalent`):

* ``rel``: a comparison ``a OP b`` becomes the neighbouring operators (``<`` -> ``<=``, ``!=``;
  ``==`` -> ``!=``, ``<=``; ...), and a literal operand its value +/- 1;
* ``check``: the condition of an ``if`` whose statement returns or fails is dropped (never true);
* ``read``: a call of a fixed-width read (``rd_u64(...)``, ``read_i32(...)``) is narrowed to
  half its width (the value truncated, then widened again);
* ``arith``: ``a + b`` <-> ``a - b``, ``a * b`` -> ``a + b``, ``a / b`` -> ``a * b`` in an
  assignment or initializer;
* ``const``: an integer literal becomes its value + 1, - 1 and 0.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mlf_spec.errors import MlfError

PRELUDE = """#include <stdlib.h>
static long mlf_mutant_id(void) {
  static long v = -2;
  if (v == -2) { const char *e = getenv("MLF_MUTANT"); v = e ? atol(e) : -1; }
  return v;
}
#define MLF_M(i) (mlf_mutant_id() == (i))
"""

_REL_SWAPS = {"<": ["<=", "!="], "<=": ["<", "=="], ">": [">=", "!="], ">=": [">", "=="], "==": ["!=", "<="],
              "!=": ["==", ">"]}
_ARITH_SWAPS = {"+": "-", "-": "+", "*": "+", "/": "*"}
_NARROW = {"u64": ("uint64_t", "uint32_t"), "i64": ("int64_t", "int32_t"), "u32": ("uint32_t", "uint16_t"),
           "i32": ("int32_t", "int16_t"), "u16": ("uint16_t", "uint8_t"), "i16": ("int16_t", "int8_t")}
READ_CALL = re.compile(r"\b(?:rd|read|get|load)_([ui](?:64|32|16))\s*\(")
_INT = re.compile(r"(?<![\w.])(0[xX][0-9a-fA-F]+|\d+)([uUlL]*)(?![\w.])")


@dataclass(frozen=True)
class Mutant:
    """One mutant of the schema: its id (the MLF_MUTANT value), operator, line and change."""

    id: int
    operator: str
    line: int
    original: str
    replacement: str
    nth: int = 1
    equivalent: str = ""  # why it is equivalent by construction ("" : it is scored)

    @property
    def signature(self) -> str:
        """A stable name: ``rel@L45: ndim < 0 -> ndim <= 0`` (what an equivalents file lists;
        the same change twice on a line: ``rel@L45#2: ...``)."""
        at = f"L{self.line}" + (f"#{self.nth}" if self.nth > 1 else "")
        return f"{self.operator}@{at}: {self.original} -> {self.replacement}"


def _mask(src: str) -> str:
    """``src`` with comments, string and char literals and preprocessor lines blanked (same
    length, newlines kept), so that operators are found in code only."""
    out = list(src)
    i, n = 0, len(src)
    line_start = True
    while i < n:
        c = src[i]
        if line_start and c == "#" or (line_start and src[i:].lstrip(" \t").startswith("#") and c in " \t"):
            j = src.find("\n", i)
            j = n if j < 0 else j
            while j > 0 and src[j - 1] == "\\" and j < n:
                j = src.find("\n", j + 1)
                j = n if j < 0 else j
            for k in range(i, j):
                out[k] = " "
            i = j
            continue
        if src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
        elif src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
        elif c in "\"'":
            j = i + 1
            while j < n and src[j] != c:
                j += 2 if src[j] == "\\" else 1
            j = min(n, j + 1)
        else:
            line_start = c == "\n" or (line_start and c in " \t")
            i += 1
            continue
        for k in range(i, j):
            if out[k] != "\n":
                out[k] = " "
        i = j
    return "".join(out)


def _close(m: str, i: int) -> int:
    """Index of the parenthesis closing the one at ``i``."""
    depth = 0
    for j in range(i, len(m)):
        if m[j] == "(":
            depth += 1
        elif m[j] == ")":
            depth -= 1
            if depth == 0:
                return j
    raise MlfError("unbalanced parentheses", offset=i)


def _top_level(m: str, s: int, e: int) -> list[int]:
    """Indices in [s, e) at parenthesis/bracket depth 0."""
    out, depth = [], 0
    for j in range(s, e):
        c = m[j]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif depth == 0:
            out.append(j)
    return out


def _pieces(m: str, s: int, e: int) -> list[tuple[int, int]]:
    """[s, e) split at top-level ``&&``, ``||``, ``,``, ``?``, ``:`` and ``;``."""
    cuts = [s]
    top = _top_level(m, s, e)
    skip = -1
    for j in top:
        if j <= skip:
            continue
        two = m[j:j + 2]
        if two in ("&&", "||"):
            cuts += [j, j + 2]
            skip = j + 1
        elif m[j] in ",?:;":
            cuts += [j, j + 1]
    cuts.append(e)
    return [(cuts[k], cuts[k + 1]) for k in range(0, len(cuts), 2) if cuts[k] < cuts[k + 1]]


def _rel_op(m: str, s: int, e: int) -> tuple[int, str] | None:
    """The single top-level comparison operator of [s, e), if there is exactly one."""
    found = []
    top = set(_top_level(m, s, e))
    j = s
    while j < e:
        if j in top:
            two = m[j:j + 2]
            if two in ("<=", ">=", "==", "!="):
                found.append((j, two))
                j += 2
                continue
            if m[j] in "<>" and m[j + 1:j + 2] not in "<>=" and m[j - 1] not in "<>-":
                found.append((j, m[j]))
        j += 1
    return found[0] if len(found) == 1 else None


def _arith_op(m: str, s: int, e: int) -> tuple[int, str] | None:
    """The last top-level binary + or - of [s, e), else the last * or / (the operator that
    binds last)."""
    top = _top_level(m, s, e)
    for ops in ("+-", "*/"):
        for j in reversed(top):
            c = m[j]
            if c in ops and m[j + 1:j + 2] not in "=+-" and m[j - 1] not in "+-=":
                prev = m[s:j].rstrip()
                if c == "*" and _TYPE_END.search(m[s:j + 1]):
                    continue  # a pointer: (const unsigned char *)p, uint8_t *q
                if not m[j + 1:e].strip():
                    continue  # no right operand: not a binary operator
                if prev and (prev[-1].isalnum() or prev[-1] in "_)]") and not re.search(r"\bsizeof$", prev):
                    return j, c
    return None


#: a declarator's type before a ``*``: the ``*`` of ``(const unsigned char *)p`` or ``uint8_t *q = ...``
#: is a pointer, not a product
_TYPE_END = re.compile(r"(?:\b(?:char|short|int|long|float|double|void|signed|unsigned|const|volatile|restrict|"
                       r"_Bool|bool|size_t|ssize_t|ptrdiff_t|FILE|\w+_t)|\b(?:struct|union|enum)\s+\w+)\s*\**\s*$")
_KEYWORD = re.compile(r"\b(?:static|enum|typedef|struct|union)\b")
#: calls whose arguments only make an error message or a diagnostic (never the reading)
_MESSAGE_CALL = re.compile(r"\bv?s?n?printf\s*\(\s*[^,()]*?(?:msg|err|message|why|reason)[^,()]*,"
                           r"|\bv?fprintf\s*\(\s*stderr\s*,|\bperror\s*\(|\bfputs\s*\([^;]*?,\s*stderr\s*\)")


def _bodies(m: str) -> list[tuple[int, int]]:
    """The spans of the function bodies of masked source ``m`` (a ``{`` at file scope right
    after a ``)``, to its closing ``}``): file-scope initializers, enums and structs are not
    code that runs, and a mutant there would not compile."""
    out, depth, start = [], 0, -1
    for i, c in enumerate(m):
        if c == "{":
            if depth == 0 and m[:i].rstrip().endswith(")"):
                start = i
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0 and start >= 0:
                out.append((start + 1, i))
                start = -1
    return out


def _constant_spans(m: str, bodies: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Spans in which nothing may be mutated because C needs a constant there or the text is a
    declaration: each statement of a body that declares a ``static`` object, an ``enum``, a
    ``typedef``, a ``struct`` or ``union``, every ``[...]`` whose contents are a constant
    expression (an array size: ``wide[CHUNK * 2]``), and all file scope."""
    out: list[tuple[int, int]] = []
    at = 0
    for bs, be in bodies:
        out.append((at, bs))
        at = be
    out.append((at, len(m)))
    for bs, be in bodies:
        i = bs
        while i < be:  # statements: from after a ; { or } to the next ;
            j = i
            while j < be and m[j] not in ";{}":
                j += 1
            if _KEYWORD.search(m[i:j]) and j < be:
                end = j
                if m[j] == "{":  # an enum / struct body, or a static initializer list: to its ;
                    depth = 0
                    while end < be:
                        depth += (m[end] == "{") - (m[end] == "}")
                        if depth == 0 and m[end] == ";":
                            break
                        end += 1
                out.append((i, end + 1))
                i = end + 1
                continue
            i = j + 1
    for mt in re.finditer(r"\[([^\[\]]*)\]", m):
        inner = re.sub(r"\bsizeof\s*(?:\([^()]*\)|\w+)", "", mt.group(1))
        if not re.search(r"[a-z]", re.sub(r"0[xX][0-9a-fA-F]+|\b\d+[uUlL]*", "", inner)):
            out.append((mt.start(), mt.end()))
    return out


def _message_spans(m: str) -> list[tuple[int, int]]:
    """The argument lists of calls that only make a message (an snprintf into a message
    buffer, an fprintf to stderr, perror): a mutant there changes no reading nor refusal."""
    out = []
    for mt in _MESSAGE_CALL.finditer(m):
        open_at = m.find("(", mt.start())
        try:
            out.append((open_at, _close(m, open_at) + 1))
        except MlfError:
            continue
    return out


def _enums(m: str) -> dict[str, tuple[str, int, tuple[int, ...]]]:
    """Enumerator -> (its enum's name, its value, the values of every enumerator of that enum),
    for the enums of masked source ``m`` whose values are all integer literals or implied."""
    out: dict[str, tuple[str, int, tuple[int, ...]]] = {}
    for mt in re.finditer(r"\benum\s*(\w*)\s*\{([^{}]*)\}", m):
        items, value, ok = [], -1, True
        for part in (x.strip() for x in mt.group(2).split(",")):
            if not part:
                continue
            name, eq, given = (x.strip() for x in part.partition("="))
            lit = _INT.fullmatch(given) if eq else None
            if eq and not lit:
                ok = False
                break
            value = int(lit.group(1), 0) if lit else value + 1
            items.append((name, value))
        if ok and items:
            values = tuple(v for _, v in items)
            out.update({name: (mt.group(1) or "an enum", v, values) for name, v in items})
    return out


_CMP = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
        "==": lambda a, b: a == b, "!=": lambda a, b: a != b}


def _enum_equivalent(lhs: str, op: str, new: str, rhs: str, enums: dict[str, tuple[str, int, tuple[int, ...]]]) -> str:
    """Why ``lhs new rhs`` is equivalent to ``lhs op rhs`` when one side is an enumerator and
    the other holds a value of its enum: both operators agree on every value ("" : not shown)."""
    for ident, other, flip in ((rhs, lhs, False), (lhs, rhs, True)):
        if ident in enums and other not in enums and not _INT.fullmatch(other):
            name, e, values = enums[ident]
            if all(_CMP[op](*((e, v) if flip else (v, e))) == _CMP[new](*((e, v) if flip else (v, e))) for v in values):
                return (f"{other} holds a value of enum {name} ({', '.join(map(str, sorted(set(values))))}), on each of "
                        f"which `{op} {ident}` and `{new} {ident}` agree")
    return ""


def _code_start(m: str) -> int:
    """Where the first line holding code begins (after the leading comments, blank lines and
    preprocessor lines: ``#define _POSIX_C_SOURCE`` must stay before every include)."""
    first = next((i for i, c in enumerate(m) if not c.isspace()), len(m))
    return m.rfind("\n", 0, first) + 1


#: A mutable leaf expression: (priority, start, end, operator, [(shown, code) per variant], original).
_Leaf = tuple[int, int, int, str, list[tuple[str, str]], str]


def instrument(src: str, skip_lines: frozenset[int] = frozenset()) -> tuple[str, list[Mutant]]:
    """The mutant schema of C source ``src``: (instrumented source, mutants), none on the lines
    ``skip_lines``. The prelude goes before the first line of code, with a ``#line`` that keeps
    the compiler's line numbers those of ``src``."""
    m = _mask(src)
    bodies = _bodies(m)
    fixed = _constant_spans(m, bodies)
    messages = _message_spans(m)
    begin, end = src.find("/* MUTATE BEGIN */"), src.find("/* MUTATE END */")
    lo = 0 if begin < 0 else src.find("\n", begin) + 1
    hi = len(src) if end < 0 else src.rfind("\n", 0, end)
    line_of = [0] * (len(src) + 1)
    ln = 1
    for i, c in enumerate(src):
        line_of[i] = ln
        ln += c == "\n"
    line_of[len(src)] = ln

    groups, wrappers = _groups(m, lo, hi)
    leaves, enum_why = _operator_leaves(src, m, groups, _enums(m))
    leaves += _read_and_const_leaves(src, m, lo, hi)
    chosen: list[_Leaf] = []
    taken: list[tuple[int, int]] = []
    for leaf in sorted(leaves, key=lambda x: (x[0], x[2] - x[1], x[1])):
        s, e = leaf[1], leaf[2]
        if line_of[s] in skip_lines:
            continue
        # not inside a span that must stay constant (a leaf holding all of one, `kind[0] == 'c'`, is fine)
        if any(s < te and ts < e for ts, te in taken) or \
                any(s < fe and fs < e and not (s <= fs and fe <= e) for fs, fe in fixed):
            continue
        taken.append((s, e))
        chosen.append(leaf)

    mutants: list[Mutant] = []
    events: list[tuple[int, int, int, str]] = []  # (position, order, end, text): replacements and insertions
    for _, s, e, op, variants, original in sorted(chosen, key=lambda x: x[1]):
        text = src[s:e]
        chain = ""
        why = "it changes an error message or a diagnostic only (messages are not compared)" \
            if any(ms <= s and e <= me for ms, me in messages) else ""
        for shown, code in variants:
            mutants.append(Mutant(len(mutants), op, line_of[s], " ".join(original.split()), " ".join(shown.split()),
                                  equivalent=why or enum_why.get((s, " ".join(shown.split())), "")))
            chain += f"MLF_M({mutants[-1].id}) ? {code} : "
        events.append((s, 1, e, f"({chain}({text}))"))
    for s, e in wrappers:
        if line_of[s] in skip_lines:
            continue
        if any(ts < s < te or ts < e < te for ts, te in taken) or any(fs <= s < fe for fs, fe in fixed):
            continue
        cond = " ".join(src[s:e].split())
        mutants.append(Mutant(len(mutants), "check", line_of[s], f"if ({cond})", "if (0)"))
        events.append((s, 0, s, f"MLF_M({mutants[-1].id}) ? 0 : ("))
        events.append((e, 2, e, ")"))
    return _apply(src, m, line_of, _numbered(mutants), events)


def _numbered(mutants: list[Mutant]) -> list[Mutant]:
    """The mutants with the occurrence number of each signature (the second ``a < b`` -> ``a <= b``
    of a file is told from the first)."""
    seen: dict[str, int] = {}
    for i, mu in enumerate(mutants):
        seen[mu.signature] = seen.get(mu.signature, 0) + 1
        if seen[mu.signature] > 1:
            mutants[i] = Mutant(mu.id, mu.operator, mu.line, mu.original, mu.replacement, seen[mu.signature],
                                mu.equivalent)
    return mutants


def _apply(src: str, m: str, line_of: list[int], mutants: list[Mutant],
           events: list[tuple[int, int, int, str]]) -> tuple[str, list[Mutant]]:
    """(the source with every event applied and the prelude before its code, mutants)."""
    out = src
    for pos, _, end, text in sorted(events, key=lambda x: (x[0], x[1]), reverse=True):
        out = out[:pos] + text + out[end:]
    at = _code_start(m)  # before every event: events are in code
    return out[:at] + PRELUDE + f"#line {line_of[at]}\n" + out[at:], mutants


def _groups(m: str, lo: int, hi: int) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """(groups, wrappers) of the masked source between ``lo`` and ``hi``: every parenthesised
    expression in a function body and every return / assignment expression; the condition
    spans (inside the parentheses) of checks."""
    wrappers: list[tuple[int, int]] = []
    depth_at = [0] * (len(m) + 1)
    d = 0
    for i, c in enumerate(m):
        d += (c == "{") - (c == "}")
        depth_at[i] = d
    groups: list[tuple[int, int]] = []
    for i in range(lo, hi):
        if m[i] == "(" and depth_at[i] > 0:  # inside a function body: not a parameter list
            j = _close(m, i)
            if j < hi:
                groups.append((i + 1, j))
    for mt in re.finditer(r"\breturn\b([^;]*);", m[lo:hi]):
        groups.append((lo + mt.start(1), lo + mt.end(1)))
    for mt in re.finditer(r"(?<![=!<>+\-*/&|^%])=(?!=)([^;]*);", m[lo:hi]):
        groups.append((lo + mt.start(1), lo + mt.end(1)))
    for mt in re.finditer(r"\bif\s*\(", m[lo:hi]):
        open_at = lo + mt.end() - 1
        cl = _close(m, open_at)
        after = m[cl + 1:cl + 200].lstrip()
        stmt = after[:after.find(";") + 1] if ";" in after else after
        if after.startswith("return") or "fail(" in stmt or after.startswith("{"):
            wrappers.append((open_at + 1, cl))
    return groups, wrappers


def _operator_leaves(src: str, m: str, groups: list[tuple[int, int]],
                     enums: dict[str, tuple[str, int, tuple[int, ...]]]) -> tuple[list[_Leaf], dict[tuple[int, str], str]]:
    """(relational and arithmetic leaves of the groups, (start, shown) -> why that relational
    mutant is equivalent by the enums)."""
    leaves: list[_Leaf] = []
    enum_why: dict[tuple[int, str], str] = {}
    for gs, ge in groups:
        for ps, pe in _pieces(m, gs, ge):
            rel = _rel_op(m, ps, pe)
            if rel:
                j, op = rel
                lhs, rhs = src[ps:j].strip(), src[j + len(op):pe].strip()
                variants = [(f"{lhs} {o} {rhs}", f"({lhs} {o} {rhs})") for o in _REL_SWAPS[op]]
                for o in _REL_SWAPS[op]:
                    why = _enum_equivalent(lhs, op, o, rhs, enums)
                    if why:
                        enum_why[(ps, " ".join(f"{lhs} {o} {rhs}".split()))] = why
                lit = _INT.fullmatch(rhs)
                if lit:
                    v = int(lit.group(1), 0)
                    for w in (v + 1, v - 1):
                        if w >= 0:
                            variants.append((f"{lhs} {op} {w}", f"({lhs} {op} {w}{lit.group(2)})"))
                leaves.append((0, ps, pe, "rel", variants, f"{lhs} {op} {rhs}"))
                continue
            ar = _arith_op(m, ps, pe)
            if ar and not re.search(r"[<>]=?|==|!=", m[ps:pe]):
                j, op = ar
                lhs, rhs = src[ps:j].strip(), src[j + 1:pe].strip()
                alt = _ARITH_SWAPS[op]
                leaves.append((2, ps, pe, "arith", [(f"{lhs} {alt} {rhs}", f"({lhs} {alt} {rhs})")],
                               f"{lhs} {op} {rhs}"))
    return leaves, enum_why


def _read_and_const_leaves(src: str, m: str, lo: int, hi: int) -> list[_Leaf]:
    """The narrowed-read leaves (each read call) and constant leaves (each integer literal but
    array sizes, case labels and ``= {0}``) between ``lo`` and ``hi``."""
    leaves: list[_Leaf] = []
    for mt in READ_CALL.finditer(m, lo, hi):
        s = mt.start()
        e = _close(m, mt.end() - 1) + 1
        wide, narrow = _NARROW[mt.group(1)]
        call = src[s:e]
        leaves.append((1, s, e, "read", [(f"({narrow}){call}", f"(({wide})({narrow}){call})")], call))
    for mt in _INT.finditer(m, lo, hi):
        s, e = mt.start(), mt.end()
        before = m[:s].rstrip()
        if before.endswith("[") or re.search(r"\bcase\s*$", before) or \
                (re.search(r"=\s*\{$", before) and m[e:].lstrip().startswith("}")):  # `= {0}`: zero-initialize all
            continue
        v = int(mt.group(1), 0)
        variants = [(str(w), f"({w}{mt.group(2)})") for w in (v + 1, v - 1, 0) if w >= 0 and w != v]
        if v == 1:
            variants = [x for x in variants if x[0] != "0"] + [("0", f"(0{mt.group(2)})")]
        variants = list(dict(variants).items())
        leaves.append((3, s, e, "const", variants, src[s:e]))
    return leaves


__all__ = ["Mutant", "PRELUDE", "READ_CALL", "instrument"]
