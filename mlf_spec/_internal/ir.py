"""The run-time IR of the binary specs: what ``mlf_spec.generated.*_ir`` instantiate.

One frozen class per field kind (:class:`Scalar`, :class:`Str`, :class:`Bytes`, :class:`Vec`,
:class:`Map`, :class:`Nested`, :class:`Switch`), each carrying its own behaviour side by side,
as Construct keeps ``_parse`` / ``_build`` / ``_sizeof`` together: how the spec engine builds
and traces it (:meth:`Field.build`, :meth:`Field.trace`), how a strategy draws its value
(:meth:`Field.draw`) and where a structure-aware mutator may edit it (:meth:`Field.locations`).
The engine, the strategies and the mutator drive the kinds and never compare kind names.

The instances also read as the dicts the IR used to be (``f["size"]``, ``"const" in f``,
``f.get("strategy", {})``): an attribute that is None (or a flag that is False) is an absent
key. Callers outside the engine still use that form; new code uses the attributes.

Kept cheap to import (tests/cli/test_start.py): plain ``__slots__`` classes, no dataclass
machinery, nothing imported but :mod:`typing` and :mod:`collections.abc`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, ClassVar, NamedTuple, Protocol

Path = tuple[Any, ...]


class Expr(NamedTuple):
    """A spec expression: its source text and the compiled function over a field namespace
    (``fn(ns, each=None[, remaining=None])``). A pair, so ``e[0]`` / ``e[1]`` still read."""

    text: str
    fn: Callable[..., Any]

    def __call__(self, ns: Mapping[str, Any], each: Any = None, **kw: Any) -> Any:
        return self.fn(ns, each, **kw)

    @property
    def uses_remaining(self) -> bool:
        """Whether the value depends on the bytes left in the region (``remaining()``)."""
        return "remaining" in self.text


def _absent(v: Any) -> bool:
    """An unset attribute or a flag not set (0 and other falsy values are present)."""
    return v is None or v is False


class _Node(Mapping[str, Any]):
    """A frozen record with ``__slots__`` that also reads as a mapping of its set attributes."""

    __slots__: ClassVar[tuple[str, ...]] = ()
    _KEYS: ClassVar[tuple[str, ...]] = ()

    def __init__(self, **kw: Any) -> None:
        unknown = set(kw) - set(self._KEYS)
        if unknown:
            raise TypeError(f"{type(self).__name__} has no {sorted(unknown)}")
        for k in self._keys_set():
            object.__setattr__(self, k, kw.get(k))

    @classmethod
    def _keys_set(cls) -> tuple[str, ...]:
        return tuple(k for k in cls._KEYS if k != "kind")

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen")

    def __getitem__(self, key: str) -> Any:
        v = getattr(self, key, None) if key in self._KEYS else None
        if _absent(v):
            raise KeyError(key)
        return v

    def __iter__(self) -> Iterator[str]:
        return (k for k in self._KEYS if not _absent(getattr(self, k, None)))

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={getattr(self, k)!r}" for k in self if k != "kind")
        return f"{type(self).__name__}({inner})"

    # Mapping's __eq__ and no __hash__: equal as the dicts they stand for and unhashable like
    # them (hypothesis labels a sampled_from over spans by the hashes of hashable elements, so
    # a hashable field would change which examples it mutates: tests/blob/test_edges.py)


# ------------------------------------------------------------------ what the kinds drive

class Builder(Protocol):
    """What a kind asks of the spec engine's builder (``spec_engine.Builder``)."""

    overrides: dict

    def emit(self, raw: bytes) -> None: ...
    def scalar(self, type_name: str, value: Any, path: Path) -> None: ...
    def length(self, n: int, path: Path) -> None: ...
    def value(self, type_name: str, value: Any, path: Path, f: Field) -> None: ...
    def struct(self, name: str, tree: dict, path: Path) -> dict: ...
    def no_layout(self, f: Field, key: Any, path: Path) -> Exception: ...


class Tracer(Protocol):
    """What a kind asks of the spec engine's tracer (``spec_engine.Tracer``)."""

    pos: int
    end: int

    def take(self, n: int, path: Path) -> bytes: ...
    def scalar(self, type_name: str, path: Path, f: Field, role: str = "value") -> Any: ...
    def value(self, type_name: str, path: Path, f: Field) -> Any: ...
    def struct(self, name: str, path: Path = ()) -> dict: ...
    def span(self, path: Path, start: int, size: int, f: Field, role: str) -> None: ...
    def elements(self, f: Field, path: Path) -> int: ...
    def no_layout(self, f: Field, key: Any, path: Path) -> Exception: ...


class Draw(Protocol):
    """What a kind asks of a strategy drawing one struct (``spec_strategies.TreeDraw``)."""

    c: Any  # the Choices
    ns: dict
    pins: dict
    row: dict | None
    counted: set[str]

    def element(self, f: Field, type_name: str | None, each: bool = False) -> Any: ...
    def subtree(self, name: str, pins: dict | None) -> dict: ...
    def elements(self, f: Field, make: Callable[[], Any]) -> list: ...


class Places(Protocol):
    """What a kind asks of a mutator listing the editable places of a tree (``mutate_spec``)."""

    def place(self, owner: Any, key: Any, type_name: str, f: Field) -> Any: ...
    def struct_places(self, name: str, node: dict) -> Iterable[Any]: ...
    def element_places(self, items: list, type_name: str, f: Field, owner: list | None = None,
                       base: int = 0) -> Iterable[Any]: ...
    def is_struct(self, type_name: str) -> bool: ...


_NOTHING: Any = object()


class Field(_Node):
    """What every field has: its name, type and documentation, the checks that bind it
    (const, equals, derive, constraint and the bounds taken from it), the era it exists in,
    a ``count`` when it is a counted array, and strategy hints."""

    kind: ClassVar[str] = ""
    #: an ``equals`` rule gives the number of elements (vec, map), not the value
    len_equals: ClassVar[bool] = False
    #: payload spans of this kind sit right after their u64 length (strings and what holds them)
    length_prefixed: ClassVar[bool] = False
    #: a constraint not over ``each`` is checked after drawing (the draw does not meet it by construction)
    checks_drawn: ClassVar[bool] = False

    _KEYS: ClassVar[tuple[str, ...]] = (
        "name", "kind", "type", "doc", "const", "canonical", "table", "encoding", "role", "order", "lazy", "sized",
        "keep_span", "since", "until", "strategy", "count", "equals", "derive", "constraint", "bounds",
        "member_bounds", "choices", "when")
    __slots__ = tuple(k for k in _KEYS if k != "kind")

    name: str
    type: str
    doc: str
    const: Any
    canonical: Any
    table: str | None
    encoding: str | None
    role: str | None
    order: str | None
    lazy: bool | None
    sized: bool | None
    keep_span: bool | None
    since: tuple[int, ...] | None
    until: tuple[int, ...] | None
    strategy: dict | None
    count: Expr | None
    equals: Expr | None
    derive: Expr | None
    constraint: Expr | None
    bounds: tuple[int | None, int | None] | None
    member_bounds: dict[str, tuple[int | None, int | None]] | None
    choices: list | None
    when: Expr | None

    def present(self, ns: Mapping[str, Any], era: tuple[int, ...]) -> bool:
        """Whether the field exists in ``era`` given the fields read before it."""
        if self.since is not None and era < tuple(self.since):
            return False
        if self.until is not None and era >= tuple(self.until):
            return False
        return self.when is None or bool(self.when(ns))

    def hint(self) -> dict:
        """The strategy hints (``{}`` without)."""
        return self.strategy or {}

    # -------------------------------------------------------------- engine

    def build(self, b: Builder, ns: dict, path: Path) -> None:
        """Write the field's value ``ns[name]`` (a counted array: each element)."""
        if self.count is not None:
            value: Any = ns.get(self.name)
            for i, v in enumerate(value):
                b.value(self.type, v, path + (i,), self)
            return
        self.build_one(b, ns.get(self.name), ns, path)

    def build_one(self, b: Builder, value: Any, ns: dict, path: Path) -> None:
        """Write a value of the field (not an array)."""

    def trace(self, t: Tracer, ns: dict, path: Path) -> Any:
        """Read the field's value (a counted array: ``count`` elements)."""
        if self.count is not None:
            return [t.value(self.type, path + (i,), self) for i in range(self.count(ns))]
        return self.trace_one(t, ns, path)

    def trace_one(self, t: Tracer, ns: dict, path: Path) -> Any:
        """Read a value of the field (not an array)."""
        return None

    def refit(self, ns: dict, filled: Mapping[str, Any], cap: int, fill: Callable[[int], bytes]) -> None:
        """After an edit: resize what the recomputed fields ``filled`` size (bytes do)."""

    # -------------------------------------------------------------- strategies

    def draw(self, d: Draw) -> Any:
        """A valid value of the field, given the fields drawn before it (``d.ns``)."""
        v = self.draw_first(d)
        if v is not _NOTHING:
            return v
        ns = d.ns
        if self.equals is not None:
            return self.equals(ns)
        if self.derive is not None:
            return self.derive(ns)
        if d.row is not None and self.table is not None:
            row = d.row
            return d.c.code(row["code"], row["code_max"] if row["code_max"] is not None else row["code"])
        v = self.draw_from_row(d)
        if v is not _NOTHING:
            return v
        if self.count is not None:
            count = self.count(ns)
            d.c.require(0 <= count <= 64)
            return [d.element(self, self.type, each=True) for _ in range(count)]
        return self.draw_own(d)

    def draw_first(self, d: Draw) -> Any:
        """A value that comes before the shared rules (``_NOTHING`` when none)."""
        return _NOTHING

    def draw_from_row(self, d: Draw) -> Any:
        """A value the drawn table row fixes (``_NOTHING`` when none)."""
        return _NOTHING

    def draw_own(self, d: Draw) -> Any:
        """A free value of the kind."""
        return None

    def text_size(self) -> int:
        """The longest string drawn for this field's strings (a vec's ``max_size`` counts elements)."""
        return 12

    def constraint_target(self, structs: Mapping[str, Struct], path: Path) -> tuple[Path, Any, str]:
        """Where a broken constraint is written: (path, (lo, hi), scalar type)."""
        return path, self.bounds or (None, None), self.type

    # -------------------------------------------------------------- mutation

    def locations(self, m: Places, node: dict) -> Iterator[Any]:
        """The editable places of this field's value in ``node``."""
        v = node[self.name]
        if self.count is not None:
            yield m.place(node, self.name, "list", self)
            yield from m.element_places(v, self.type, self)
            return
        yield from self.own_locations(m, node, v)

    def own_locations(self, m: Places, node: dict, v: Any) -> Iterator[Any]:
        """The editable places of a value that is not a counted array."""
        yield m.place(node, self.name, self.kind, self)


class Scalar(Field):
    """A fixed-size little-endian number: ``fmt`` is its struct code, ``size`` its bytes."""

    kind = "scalar"
    _KEYS = Field._KEYS + ("fmt", "size")
    __slots__ = ("fmt", "size")
    fmt: str
    size: int

    def build_one(self, b: Builder, value: Any, ns: dict, path: Path) -> None:
        b.scalar(self.type, value, path)

    def trace_one(self, t: Tracer, ns: dict, path: Path) -> Any:
        return t.scalar(self.type, path, self)

    def draw_first(self, d: Draw) -> Any:
        if self.choices is not None:
            return d.c.pick(self.choices)
        if self.name in d.pins:
            return d.c.integer(self, d.pins[self.name])
        return _NOTHING

    def draw_from_row(self, d: Draw) -> Any:
        row, n = d.row, self.name
        if row is not None and n in row and row[n] is not None:
            return row[n]
        if row is not None and n == "bits" and row.get("numpy_bits"):
            return d.c.bits(self, row["numpy_bits"])
        return _NOTHING

    def draw_own(self, d: Draw) -> Any:
        if self.canonical is not None and self.bounds is None:
            return d.c.canonical(self)
        if self.name in d.counted:
            return d.c.integer(self)
        return d.element(self, self.type)

    def own_locations(self, m: Places, node: dict, v: Any) -> Iterator[Any]:
        yield m.place(node, self.name, self.type, self)


class Str(Field):
    """TVM's stream string: a u64 byte count, then the bytes (text with ``encoding``)."""

    kind = "str"
    length_prefixed = True
    checks_drawn = True
    __slots__ = ()

    def build_one(self, b: Builder, value: Any, ns: dict, path: Path) -> None:
        b.value("str", value, path, self)

    def trace_one(self, t: Tracer, ns: dict, path: Path) -> Any:
        return t.value("str", path, self)

    def draw_own(self, d: Draw) -> Any:
        return d.element(self, "str")

    def text_size(self) -> int:
        return int(self.hint().get("max_size", 12))


class Bytes(Field):
    """Raw bytes whose number is the expression ``size`` (``remaining()``: the rest of the region)."""

    kind = "bytes"
    _KEYS = Field._KEYS + ("size",)
    __slots__ = ("size",)
    size: Expr

    def build_one(self, b: Builder, value: Any, ns: dict, path: Path) -> None:
        raw = bytes.fromhex(value) if isinstance(value, str) else bytes(value)
        b.emit(b.overrides.get(path, raw))

    def trace_one(self, t: Tracer, ns: dict, path: Path) -> Any:
        start = t.pos
        size = self.size(ns, remaining=t.end - t.pos) if self.size.uses_remaining else self.size(ns)
        raw = t.take(size, path)
        t.span(path, start, size, self, "payload")
        return raw

    def draw_own(self, d: Draw) -> Any:
        if self.size.uses_remaining:  # the rest of its region: any bytes
            return d.c.rest(self, d.ns)
        return d.c.sized(self.size(d.ns))

    def refit(self, ns: dict, filled: Mapping[str, Any], cap: int, fill: Callable[[int], bytes]) -> None:
        if self.size.uses_remaining or ns.get(self.name) is None:
            return
        size = self.size(filled)
        old = bytes(ns[self.name])
        if isinstance(size, int) and 0 <= size <= cap and size != len(old):
            ns[self.name] = old[:size] + fill(size - len(old))


class Vec(Field):
    """A u64 element count, then the elements (of type ``elem``)."""

    kind = "vec"
    len_equals = True
    length_prefixed = True
    checks_drawn = True
    _KEYS = Field._KEYS + ("elem",)
    __slots__ = ("elem",)
    elem: str

    def build_one(self, b: Builder, value: Any, ns: dict, path: Path) -> None:
        b.length(len(value), path)
        for i, v in enumerate(value):
            b.value(self.elem, v, path + (i,), self)

    def trace_one(self, t: Tracer, ns: dict, path: Path) -> Any:
        count = t.elements(self, path)
        return [t.value(self.elem, path + (i,), self) for i in range(count)]

    def draw_first(self, d: Draw) -> Any:
        if self.equals is not None:  # exactly that many elements
            return [d.element(self, self.elem) for _ in range(self.equals(d.ns))]
        return _NOTHING

    def draw_own(self, d: Draw) -> Any:
        return d.elements(self, lambda: d.element(self, self.elem))

    def own_locations(self, m: Places, node: dict, v: Any) -> Iterator[Any]:
        yield m.place(node, self.name, "list", self)
        yield from m.element_places(v, self.elem, self)


class Map(Field):
    """A u64 pair count, then key / value pairs (of types ``key`` and ``value``)."""

    kind = "map"
    len_equals = True
    length_prefixed = True
    checks_drawn = True
    _KEYS = Field._KEYS + ("key", "value")
    __slots__ = ("key", "value")
    key: str
    value: str

    def build_one(self, b: Builder, value: Any, ns: dict, path: Path) -> None:
        b.length(len(value), path)
        for i, (k, v) in enumerate(value):
            b.value(self.key, k, path + (i, "key"), self)
            b.value(self.value, v, path + (i, "value"), self)

    def trace_one(self, t: Tracer, ns: dict, path: Path) -> Any:
        count = t.elements(self, path)
        return [(t.value(self.key, path + (i, "key"), self), t.value(self.value, path + (i, "value"), self))
                for i in range(count)]

    def draw_first(self, d: Draw) -> Any:
        if self.equals is not None:
            return [(d.element(self, self.key), d.element(self, self.value)) for _ in range(self.equals(d.ns))]
        return _NOTHING

    def draw_own(self, d: Draw) -> Any:
        return d.elements(self, lambda: (d.element(self, self.key), d.element(self, self.value)))

    def own_locations(self, m: Places, node: dict, v: Any) -> Iterator[Any]:
        node[self.name] = v = [list(kv) for kv in v]
        yield m.place(node, self.name, "list", self)
        for kv in v:
            yield from m.element_places(kv[:1], self.key, self, kv)
            yield from m.element_places(kv[1:], self.value, self, kv, 1)


class Nested(Field):
    """A struct of the spec (``struct``), laid out in place."""

    kind = "struct"
    _KEYS = Field._KEYS + ("struct",)
    __slots__ = ("struct",)
    struct: str

    def build_one(self, b: Builder, value: Any, ns: dict, path: Path) -> None:
        ns[self.name] = b.struct(self.struct, value, path)

    def trace_one(self, t: Tracer, ns: dict, path: Path) -> Any:
        return t.struct(self.struct, path)

    def draw_own(self, d: Draw) -> Any:
        return d.subtree(self.struct, self.member_bounds)

    def constraint_target(self, structs: Mapping[str, Struct], path: Path) -> tuple[Path, Any, str]:
        assert self.member_bounds is not None
        member, bounds = next(iter(self.member_bounds.items()))
        member_type = next(m for m in structs[self.struct].fields if m.name == member).type
        return path + (member,), bounds, member_type

    def own_locations(self, m: Places, node: dict, v: Any) -> Iterator[Any]:
        yield from m.struct_places(self.struct, v)


class Switch(Field):
    """One of the ``cases`` types chosen by the value of ``on`` (``switch_on`` computes it),
    ``default`` otherwise; ``extensible`` names the registry of codecs added at run time."""

    kind = "switch"
    length_prefixed = True
    _KEYS = Field._KEYS + ("switch", "switch_on")
    __slots__ = ("switch", "switch_on")
    switch: dict
    switch_on: Callable[..., Any]

    @property
    def cases(self) -> dict:
        """Value of ``on`` -> the type laid out."""
        return self.switch["cases"]

    def case(self, ns: Mapping[str, Any]) -> str | None:
        """The type laid out given the fields before (None: no layout)."""
        return self.switch["cases"].get(self.switch_on(ns), self.switch["default"])

    def build(self, b: Builder, ns: dict, path: Path) -> None:
        type_name = self.case(ns)
        if type_name is None:
            raise b.no_layout(self, self.switch_on(ns), path)
        b.value(type_name, ns.get(self.name), path, self)

    def trace(self, t: Tracer, ns: dict, path: Path) -> Any:
        type_name = self.case(ns)
        if type_name is None:
            raise t.no_layout(self, self.switch_on(ns), path)
        return t.value(type_name, path, self)

    def draw_own(self, d: Draw) -> Any:
        return d.element(self, self.case(d.ns))

    def locations(self, m: Places, node: dict) -> Iterator[Any]:
        v = node[self.name]
        tname = self.case(node) if self.switch_on is not None else None
        if tname is not None and m.is_struct(tname) and isinstance(v, dict):
            yield from m.struct_places(tname, v)
        elif tname is not None:
            yield m.place(node, self.name, tname, self)


class Struct(_Node):
    """One struct of a binary spec: its fields in order and the invariants over them."""

    _KEYS = ("name", "record", "inline", "root", "doc", "fields", "invariants")
    __slots__ = _KEYS
    name: str
    record: str
    inline: bool
    root: bool
    doc: str
    fields: tuple[Field, ...]
    invariants: tuple[dict, ...] | None

    def __getitem__(self, key: str) -> Any:
        if key in ("inline", "root"):  # False is a value here, not an absent key
            return getattr(self, key)
        return super().__getitem__(key)


__all__ = ["Bytes", "Expr", "Field", "Map", "Nested", "Scalar", "Str", "Struct", "Switch", "Vec"]
