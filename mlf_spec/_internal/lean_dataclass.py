"""``@dataclass`` for the modules every command imports, without compiling code at import.

The standard decorator writes the source of ``__init__``, ``__repr__``, ``__eq__``,
``__hash__`` and (frozen) ``__setattr__`` / ``__delattr__`` and compiles each one when the
class is made: about 4 M instructions (~1 ms) per class, and the start-up path of
``mlf-spec upgrade`` makes 34 of them. Here a class costs about a tenth of that; ``upgrade``
went from 671 M to 593 M instructions (numpy's import: 397 M; callgrind).
Here the standard decorator still finds the fields (``field()``, defaults, factories,
``kw_only``, ClassVar), so :func:`dataclasses.fields`, :func:`~dataclasses.replace`,
:func:`~dataclasses.asdict` and :func:`~dataclasses.is_dataclass` work as usual; the methods
are closures over the field table instead of compiled source, with the same behaviour
(tests/project/test_lean_dataclass.py compares them with the standard ones).

Supported: ``frozen`` and ``kw_only``, and mutable dataclass bases. Anything else (``order``,
``slots``, ``unsafe_hash``, ``eq=False`` ...), a frozen class with dataclass bases or an
``InitVar`` goes to the standard decorator.
Type checkers see the standard decorator.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from dataclasses import MISSING, FrozenInstanceError, field
from typing import TYPE_CHECKING, Any, NoReturn

__all__ = ["dataclass", "field"]


class _Factory:
    """The default shown for a field with a ``default_factory`` (as the standard one does)."""

    def __repr__(self) -> str:
        return "<factory>"


_FACTORY = _Factory()


def _lean(cls: type, *, frozen: bool, kw_only: bool) -> type:
    """The class made a dataclass by the standard decorator (fields only), then given the
    lean methods: ``__init__``, ``__repr__``, ``__eq__``, ``__hash__`` as the standard table
    says, and for a frozen class ``__setattr__`` / ``__delattr__``."""
    import inspect

    own = cls.__dict__
    had_doc = bool(own.get("__doc__"))
    class_hash = own.get("__hash__", MISSING)
    explicit_hash = not (class_hash is MISSING or (class_hash is None and "__eq__" in own))
    if frozen and ("__setattr__" in own or "__delattr__" in own):
        name = "__setattr__" if "__setattr__" in own else "__delattr__"
        raise TypeError(f"Cannot overwrite attribute {name} in class {cls.__name__}")
    cls = dataclasses.dataclass(cls, init=False, repr=False, eq=False, kw_only=kw_only)
    params = getattr(cls, "__dataclass_params__")  # noqa: B009  # what the standard decorator reports
    params.init = params.repr = params.eq = True
    params.frozen = frozen

    fields = dataclasses.fields(cls)
    qualname = cls.__qualname__
    others, hash_method = _methods(cls, fields, frozen)
    methods = {"__init__": _init(cls, fields, frozen), **others}
    for name, fn in methods.items():
        if name in ("__setattr__", "__delattr__") or name not in cls.__dict__:
            fn.__qualname__ = f"{qualname}.{fn.__name__}"
            setattr(cls, name, fn)
    if not explicit_hash:  # the standard table for eq=True, unsafe_hash=False
        if frozen:
            hash_method.__qualname__ = f"{qualname}.__hash__"
        # frozen: a generated method; mutable and compared by value: unhashable (None), as the
        # standard decorator sets it
        _set_class_attribute(cls, "__hash__", hash_method if frozen else None)
    if not had_doc:
        try:
            cls.__doc__ = cls.__name__ + str(inspect.signature(cls)).replace(" -> None", "")
        except (TypeError, ValueError):
            cls.__doc__ = cls.__name__
    return cls


def _set_class_attribute(cls: type, name: str, value: object) -> None:
    """``cls.<name> = value`` for a slot type checkers type as a method (``__hash__``)."""
    setattr(cls, name, value)


def _init(cls: type, fields: tuple[dataclasses.Field[Any], ...], frozen: bool) -> Callable[..., None]:
    """The ``__init__`` of ``cls``: positional then keyword-only fields, defaults and factories,
    the standard TypeErrors for a wrong call, ``__post_init__``; with the standard signature."""
    import inspect

    init = [f for f in fields if f.init]
    positional: list[tuple[str, Any, Any]] = [(f.name, f.default, f.default_factory) for f in init if not f.kw_only]
    keyword: list[tuple[str, Any, Any]] = [(f.name, f.default, f.default_factory) for f in init if f.kw_only]
    seen_default = None
    for f in init:
        if f.kw_only:
            continue
        if f.default is not MISSING or f.default_factory is not MISSING:
            seen_default = f.name
        elif seen_default is not None:
            raise TypeError(f"non-default argument {f.name!r} follows default argument")
    later: list[tuple[str, Any]] = [(f.name, f.default_factory) for f in fields
                                    if not f.init and f.default_factory is not MISSING]
    npos = len(positional)
    qualname = cls.__qualname__
    assign = object.__setattr__ if frozen else setattr
    post_init = hasattr(cls, "__post_init__")

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        given = len(args)
        used = 0
        if given > npos:
            _call_error(qualname, positional, keyword, args, kwargs)
        for i, (name, default, factory) in enumerate(positional):
            if i < given:
                if name in kwargs:
                    _call_error(qualname, positional, keyword, args, kwargs)
                value = args[i]
            else:
                value = kwargs.get(name, MISSING)
                if value is not MISSING:
                    used += 1
                else:
                    if factory is not MISSING:
                        value = factory()
                    elif default is not MISSING:
                        value = default
                    else:
                        _call_error(qualname, positional, keyword, args, kwargs)
            assign(self, name, value)
        for name, default, factory in keyword:
            value = kwargs.get(name, MISSING)
            if value is not MISSING:
                used += 1
            else:
                if factory is not MISSING:
                    value = factory()
                elif default is not MISSING:
                    value = default
                else:
                    _call_error(qualname, positional, keyword, args, kwargs)
            assign(self, name, value)
        if used != len(kwargs):
            _call_error(qualname, positional, keyword, args, kwargs)
        for name, factory in later:
            assign(self, name, factory())
        if post_init:
            self.__post_init__()

    P = inspect.Parameter
    types = {f.name: f.type for f in fields}
    signature = [P("self", P.POSITIONAL_OR_KEYWORD)]
    for group, kind in ((positional, P.POSITIONAL_OR_KEYWORD), (keyword, P.KEYWORD_ONLY)):
        for name, default, factory in group:
            shown = _FACTORY if factory is not MISSING else P.empty if default is MISSING else default
            signature.append(P(name, kind, default=shown, annotation=types[name]))
    __init__.__dict__["__signature__"] = inspect.Signature(signature, return_annotation=None)  # inspect.signature reads it
    __init__.__annotations__ = {**{f.name: f.type for f in init}, "return": None}
    return __init__


def _methods(cls: type[Any], fields: tuple[dataclasses.Field[Any], ...],
             frozen: bool) -> tuple[dict[str, Callable[..., Any]], Callable[..., int]]:
    """(name -> method, ``__hash__``) of ``cls`` but ``__init__``: ``__repr__``, ``__eq__``,
    ``__replace__`` (3.13+) and, frozen, ``__setattr__`` / ``__delattr__``."""
    import reprlib

    names = frozenset(f.name for f in fields)
    shown_fields = tuple(f.name for f in fields if f.repr)
    compared = tuple(f.name for f in fields if f.compare)
    hashed = tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash))

    @reprlib.recursive_repr()
    def __repr__(self: Any) -> str:
        return (f"{self.__class__.__qualname__}("
                + ", ".join(f"{n}={getattr(self, n)!r}" for n in shown_fields) + ")")

    def __eq__(self: Any, other: object) -> bool:
        if other.__class__ is self.__class__:
            return tuple(getattr(self, n) for n in compared) == tuple(getattr(other, n) for n in compared)
        return NotImplemented

    def __hash__(self: Any) -> int:
        return hash(tuple(getattr(self, n) for n in hashed))

    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    methods: dict[str, Callable[..., Any]] = {"__repr__": __repr__, "__eq__": __eq__}
    if frozen:
        methods["__setattr__"] = __setattr__
        methods["__delattr__"] = __delattr__
    if sys.version_info >= (3, 13):
        def __replace__(self: Any, /, **changes: Any) -> Any:
            return dataclasses.replace(self, **changes)

        methods["__replace__"] = __replace__
    return methods, __hash__


def _call_error(qualname: str, positional: list, keyword: list, args: tuple, kwargs: dict) -> NoReturn:
    """Raise the TypeError the interpreter raises for this wrong call of the standard
    ``__init__`` (same wording and order of checks): a function of the same signature is
    compiled for it, only on this path."""
    optional = object()
    params = [f"{n}=_d" if d is not MISSING or f is not MISSING else n for n, d, f in positional]
    if keyword:
        params += ["*"] + [f"{n}=_d" if d is not MISSING or f is not MISSING else n for n, d, f in keyword]
    space: dict[str, Any] = {"_d": optional}
    exec(f"def __init__(self, {', '.join(params)}): pass", space)  # noqa: S102  # a signature, no input text
    fn = space["__init__"]
    fn.__qualname__ = f"{qualname}.__init__"
    fn(None, *args, **kwargs)
    raise AssertionError("a call the lean __init__ refused was accepted")  # pragma: no cover


def _standard_only(cls: type, frozen: bool) -> bool:
    """A frozen class among dataclass bases, or an ``InitVar``: left to the standard decorator."""
    for b in cls.__mro__[1:]:
        params = b.__dict__.get("__dataclass_params__")
        if params is not None and (frozen or params.frozen):
            return True
    return any(isinstance(t, dataclasses.InitVar) or (isinstance(t, str) and "InitVar" in t)
               for t in cls.__dict__.get("__annotations__", {}).values())


def _dataclass(cls: type | None = None, /, *, frozen: bool = False, kw_only: bool = False, **options: Any) -> Any:
    """``dataclasses.dataclass`` with ``frozen`` and ``kw_only``, its methods made without
    compiling source (see the module's docstring); other options go to the standard one."""

    def wrap(c: type) -> type:
        if options or _standard_only(c, frozen):
            return dataclasses.dataclass(c, frozen=frozen, kw_only=kw_only, **options)
        return _lean(c, frozen=frozen, kw_only=kw_only)

    return wrap if cls is None else wrap(cls)


if TYPE_CHECKING:
    from dataclasses import dataclass as dataclass
else:
    dataclass = _dataclass
