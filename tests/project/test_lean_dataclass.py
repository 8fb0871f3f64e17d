"""The start-up path's ``@dataclass`` (mlf_spec._internal.lean_dataclass) behaves as the
standard one: each class shape is made by both, and construction (positional, keyword,
defaults, factories, every wrong call), repr, equality, hashing, frozenness, the
signature, the docstring and the dataclasses functions must give the same results."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import sys
from typing import Any, ClassVar

import pytest

from mlf_spec._internal import lean_dataclass as lean

std = dataclasses


def _shapes(dc: Any, fld: Any) -> dict[str, tuple[type, list[tuple[tuple, dict]]]]:
    """Class shapes made with decorator ``dc`` and ``field`` ``fld``, each with the calls
    to try on it (good and bad)."""

    @dc
    class Plain:
        """A mutable record."""

        a: int
        b: str = "x"
        c: list[int] = fld(default_factory=list)

    @dc(frozen=True)
    class Frozen:
        """A frozen record."""

        a: int
        b: tuple[int, ...] = ()
        c: dict[str, int] = fld(default_factory=dict, repr=False, hash=False)
        d: int = fld(default=0, compare=False)
        e: int = fld(default=1, hash=False)

    @dc(kw_only=True)
    class KwOnly:
        """Keyword-only fields."""

        a: int
        b: int = 2

    @dc
    class Mixed:
        """Some fields keyword-only, some not in __init__, a ClassVar, a __post_init__."""

        limit: ClassVar[int] = 10
        a: int
        k: str = fld(kw_only=True)
        b: int = 3
        hidden: list[int] = fld(default_factory=lambda: [7], init=False)
        fixed: int = fld(default=5, init=False)

        def __post_init__(self) -> None:
            self.total = self.a + self.b

    @dc(frozen=True)
    class Own:
        """Its own repr, eq and hash are kept."""

        a: int

        def __repr__(self) -> str:
            return "own"

        def __eq__(self, other: object) -> bool:
            return True

        def __hash__(self) -> int:
            return 42

    @dc
    class OwnEq:
        a: int

        def __eq__(self, other: object) -> bool:
            return False

    @dc
    class Empty:
        pass

    calls: list[tuple[tuple, dict]] = [((), {}), ((1,), {}), ((1, "y"), {}), ((1, "y", [3]), {}),
                                       ((1, "y", [3], 4), {}), ((), {"a": 1}), ((1,), {"a": 2}),
                                       ((1,), {"zz": 0}), ((), {"b": "q"}), ((1,), {"k": "s"}),
                                       ((), {"a": 1, "k": "s", "b": 4}), ((1, 2), {"k": "s"}),
                                       ((1, 2, 3), {"k": "s"}), ((), {"a": 1, "b": 2}), ((1, ()), {"c": {"x": 1}})]
    return {n: (c, calls) for n, c in (("Plain", Plain), ("Frozen", Frozen), ("KwOnly", KwOnly), ("Mixed", Mixed),
                                       ("Own", Own), ("OwnEq", OwnEq), ("Empty", Empty))}


STD = _shapes(std.dataclass, std.field)
LEAN = _shapes(lean._dataclass, lean.field)


def _outcome(fn: Any, *args: Any, **kwargs: Any) -> tuple[str, Any]:
    try:
        return "ok", fn(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001  # the type and message are what is compared
        return type(exc).__name__, str(exc)


def _made(cls: type, args: tuple, kwargs: dict) -> Any:
    try:
        return cls(*args, **copy.deepcopy(kwargs))
    except TypeError:
        return None


@pytest.mark.parametrize("shape", sorted(STD))
def test_a_lean_dataclass_behaves_as_the_standard_one(shape):
    s, calls = STD[shape]
    v, _ = LEAN[shape]
    assert "__init__" not in s.__dict__ or "__init__" in v.__dict__
    assert str(inspect.signature(s)) == str(inspect.signature(v))
    assert s.__doc__ == v.__doc__
    assert s.__match_args__ == v.__match_args__
    assert [(f.name, f.default, f.init, f.repr, f.compare, f.kw_only) for f in std.fields(s)] == \
        [(f.name, f.default, f.init, f.repr, f.compare, f.kw_only) for f in std.fields(v)]
    for key in ("init", "repr", "eq", "frozen"):
        assert getattr(s.__dataclass_params__, key) == getattr(v.__dataclass_params__, key)
    assert std.is_dataclass(v)
    assert (s.__hash__ is None) == (v.__hash__ is None)
    made = 0
    for args, kwargs in calls:
        a = _outcome(s, *args, **copy.deepcopy(kwargs))
        b = _outcome(v, *args, **copy.deepcopy(kwargs))
        assert a[0] == b[0], (args, kwargs, a, b)
        if a[0] != "ok":
            assert a[1] == b[1], (args, kwargs)
            continue
        made += 1
        x, y = a[1], b[1]
        assert repr(x) == repr(y)
        assert vars(x) == vars(y)
        assert std.asdict(x) == std.asdict(y)
        assert std.astuple(x) == std.astuple(y)
        assert _outcome(hash, x) == _outcome(hash, y)
        twin_s, twin_v = _made(s, args, kwargs), _made(v, args, kwargs)
        assert (x == twin_s) == (y == twin_v) and (x != twin_s) == (y != twin_v)
        assert (x == 1) == (y == 1) and (x == copy.copy(x)) == (y == copy.copy(y))
        for name in [f.name for f in std.fields(s)] + ["other"]:
            assert _outcome(setattr, copy.copy(x), name, 9) == _outcome(setattr, copy.copy(y), name, 9)
            assert _outcome(delattr, copy.copy(x), name) == _outcome(delattr, copy.copy(y), name)
        changes = {f.name: getattr(x, f.name) for f in std.fields(s) if f.init}
        assert repr(std.replace(x, **changes)) == repr(std.replace(y, **changes))
    assert made, "no call made an instance: the comparison would be empty"


def test_a_frozen_instance_equal_to_another_hashes_the_same_and_a_mutable_one_does_not_hash():
    frozen, _ = LEAN["Frozen"]
    plain, _ = LEAN["Plain"]
    assert frozen(1, (2,), d=5) == frozen(1, (2,), d=6)  # d is not compared
    assert hash(frozen(1, (2,), e=5)) == hash(frozen(1, (2,), e=6))  # e is not hashed
    with pytest.raises(TypeError, match="unhashable"):
        hash(plain(1))
    with pytest.raises(std.FrozenInstanceError):
        frozen(1).a = 2


def test_a_recursive_record_repr_stops():
    plain, _ = LEAN["Plain"]
    x = plain(1)
    x.c.append(x)
    assert repr(x) == "_shapes.<locals>.Plain(a=1, b='x', c=[...])"


def test_the_same_class_errors_as_the_standard_one():
    for dc in (std.dataclass, lean._dataclass):
        with pytest.raises(TypeError, match="non-default argument 'b' follows default argument"):
            @dc
            class Bad:
                a: int = 0
                b: int

        with pytest.raises(TypeError, match="Cannot overwrite attribute __setattr__"):
            @dc(frozen=True)
            class Own:
                a: int

                def __setattr__(self, name: str, value: Any) -> None:
                    pass


def test_a_record_derived_from_a_record_has_the_fields_of_both():
    for dc in (std.dataclass, lean._dataclass):
        @dc
        class Base:
            """Base."""

            a: int
            tags: list[str] = std.field(default_factory=list)

            def double(self) -> int:
                return 2 * self.a

        @dc(kw_only=True)
        class Derived(Base):
            """Derived."""

            kind: str
            extra: int | None = None

        d = Derived(1, kind="x")
        assert (d.a, d.tags, d.kind, d.extra, d.double()) == (1, [], "x", None, 2)
        assert repr(d).endswith("Derived(a=1, tags=[], kind='x', extra=None)")
        assert d == Derived(1, [], kind="x") and d != Base(1)
        assert str(inspect.signature(Derived)) == "(a: 'int', tags: 'list[str]' = <factory>, *, kind: 'str', " \
            "extra: 'int | None' = None) -> None"
        with pytest.raises(TypeError, match="missing 1 required keyword-only argument: 'kind'"):
            Derived(1)


def test_frozen_bases_other_options_and_initvars_go_to_the_standard_decorator():
    @lean._dataclass(order=True)
    class Ordered:
        a: int

    assert Ordered(1) < Ordered(2)


    @lean._dataclass(frozen=True)
    class FrozenBase:
        a: int

    @lean._dataclass(frozen=True)
    class FrozenDerived(FrozenBase):
        b: int = 0

    assert FrozenDerived(1) == FrozenDerived(1, 0) and FrozenDerived.__init__.__code__.co_filename == "<string>"

    @lean._dataclass
    class WithInit:
        a: int
        scale: std.InitVar[int] = 1

        def __post_init__(self, scale: int) -> None:
            self.a *= scale

    assert WithInit(2, 3).a == 6
    assert "__init__" in Ordered.__dict__ and Ordered.__init__.__code__.co_filename == "<string>"


def test_the_start_up_modules_make_their_records_without_compiling():
    """The records of the modules every command imports are made by the lean decorator (no
    compiled ``__init__``): the start-up cost this module exists to save."""
    from mlf_spec import findings, sniff
    from mlf_spec.cli import _batch
    from mlf_spec.mlf import check, layout, metadata, migrate, migrate_ir, migrate_registry
    from mlf_spec.tar import read, write

    records = [findings.Finding, findings.Report, sniff.Kind, _batch.Input, _batch.Outcome, check.Report,
               layout.Placement, metadata.Detection, migrate.Loss, migrate.Result, migrate_ir.StepSpec,
               migrate_ir.MetadataOp, migrate_registry.Context, read.TarEntry, write.HeaderInfo]
    compiled = [c.__qualname__ for c in records if c.__init__.__code__.co_filename == "<string>"]
    assert compiled == []
    assert sys.modules["mlf_spec._internal.lean_dataclass"].dataclass is lean._dataclass
