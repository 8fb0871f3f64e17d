"""What a Kaitai-generated parser read, as mlf-spec's value trees.

Two steps, so that parsers in any language can be compared the same way:

1. :func:`dump` (Python objects of ``kaitaistruct``) or :func:`from_json` (the JSON that
   tools/kaitai/dump.cjs writes for the JavaScript parsers) give a *neutral dump*: one dict per
   Kaitai object with its ``seq`` fields by .ksy id (plus the ``_raw_*`` bytes of fields parsed
   from a substream), lists, ints, floats, str and bytes.
2. :func:`value_tree` walks a neutral dump with the spec as data (``mlf_spec.generated.<spec>_ir``)
   and returns the same tree as :func:`mlf_spec._internal.spec_engine.trace`: a dict per struct by field
   name, ``None`` for an absent field, ``str``/``bytes`` for strings (by the field's encoding),
   lists for vectors, (key, value) pairs for maps. Only the mapping rules of the Kaitai back end
   are used (a ``vec`` is ``num_<x>`` + ``<x>``, a string is ``len_value`` + ``raw``/``value``,
   a 64-bit magic is read as 8 bytes, a string that selects a layout is decoded); no layout is
   restated.

:class:`PythonParsers` loads a directory of Kaitai-generated Python modules and reads a file
with them.
"""

from __future__ import annotations

import base64
import importlib
import inspect
import io
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import ERA_PARAM, roots, tvm_minor

#: JavaScript has no bytes type in JSON and no NaN/Infinity: dump.cjs writes them as these.
_BYTES_KEY = "$base64"
_FLOAT_KEY = "$float"


def _params_of(cls: type) -> frozenset[str]:
    names = []
    for name in inspect.signature(cls.__init__).parameters:  # type: ignore[misc]  # reading the signature of a generated class's __init__ through the class
        if name == "_io":
            break
        if name != "self":
            names.append(name)
    return frozenset(names)


_PARAMS: dict[type, frozenset[str]] = {}


def dump(obj: Any) -> Any:
    """The neutral dump of a ``kaitaistruct.KaitaiStruct`` (seq fields and ``_raw_*`` bytes;
    parameters, instances, ``_io``/``_parent``/``_root`` left out)."""
    from kaitaistruct import KaitaiStruct

    if isinstance(obj, KaitaiStruct):
        cls = type(obj)
        params = _PARAMS.get(cls)
        if params is None:
            params = _PARAMS[cls] = _params_of(cls)
        return {k: dump(v) for k, v in vars(obj).items()
                if (not k.startswith("_") or k.startswith("_raw_")) and k not in params}
    if isinstance(obj, list):
        return [dump(v) for v in obj]
    if isinstance(obj, (bytes, bytearray)):
        return bytes(obj)
    if isinstance(obj, bool):
        return obj
    if isinstance(obj, int):
        return int(obj)  # an IntEnum member is its code
    return obj


def from_json(x: Any) -> Any:
    """The neutral dump of what dump.cjs wrote (``{"$base64": ...}`` -> bytes, ``{"$float": "NaN"}`` -> float)."""
    if isinstance(x, dict):
        if len(x) == 1 and _BYTES_KEY in x:
            return base64.b64decode(x[_BYTES_KEY])
        if len(x) == 1 and _FLOAT_KEY in x:
            return float(x[_FLOAT_KEY])
        return {k: from_json(v) for k, v in x.items()}
    if isinstance(x, list):
        return [from_json(v) for v in x]
    return x


_RENAMED: dict[str, str] | None = None


def kaitai_id(name: str) -> str:
    """The .ksy id of a spec field (the back end renames ids that would break a target
    language, and records the spec name as ``-orig-id``)."""
    global _RENAMED
    if _RENAMED is None:
        import yaml

        from . import ksy_files

        renamed: dict[str, str] = {}

        def walk(x: Any) -> None:
            if isinstance(x, dict):
                if "-orig-id" in x and "id" in x:
                    renamed[x["-orig-id"]] = x["id"]
                for v in x.values():
                    walk(v)
            elif isinstance(x, list):
                for v in x:
                    walk(v)

        for data in ksy_files().values():
            walk(yaml.safe_load(data))
        _RENAMED = renamed
    return _RENAMED.get(name, name)


class ReadingError(ValueError):
    """A neutral dump does not have the shape the spec says (a bug of the parser or of the back end)."""


def _scalar(type_name: str, v: Any) -> Any:
    if isinstance(v, bytes):  # a 64-bit value read as bytes (contents / size 8)
        return int.from_bytes(v, "little", signed=type_name.startswith("i"))
    return v


def _text(v: Any, encoding: str | None) -> Any:
    if isinstance(v, str):  # a string that selects a layout, decoded by the parser
        return v if encoding else v.encode("utf-8")
    if not isinstance(v, dict):
        raise ReadingError(f"a string should be a length-prefixed object, got {type(v).__name__}")
    raw = v.get("raw", v.get("_raw_parts", v.get("value")))
    if not isinstance(raw, bytes):
        raise ReadingError("a string object without bytes")
    return raw.decode("utf-8", "surrogateescape") if encoding else raw


def _element(structs: dict, type_name: str, v: Any, encoding: str | None) -> Any:
    if type_name == "str":
        return _text(v, encoding)
    if type_name in structs:
        return value_tree(structs, type_name, v)
    return _scalar(type_name, v)


def value_tree(structs: dict, name: str, node: Any) -> dict:
    """The value tree of struct ``name`` (``structs`` is ``<spec>_ir.STRUCTS``) from a neutral dump."""
    if not isinstance(node, dict):
        raise ReadingError(f"{name}: expected an object, got {type(node).__name__}")
    ns: dict[str, Any] = {}
    for f in structs[name]["fields"]:
        n = f["name"]
        k = kaitai_id(n)
        if k not in node:
            ns[n] = None
            continue
        v = node[k]
        enc = f.get("encoding")
        kind = f["kind"]
        if kind == "switch":
            key = f["switch_on"](ns)
            t = f["switch"]["cases"].get(key, f["switch"].get("default"))
            if t is None:
                raise ReadingError(f"{name}.{n}: no case for {key!r}")
            ns[n] = _element(structs, t, v, enc)
        elif "count" in f:
            elem = f["struct"] if kind == "struct" else f["type"]
            ns[n] = [_element(structs, elem, x, enc) for x in v]
        elif kind == "scalar":
            ns[n] = _scalar(f["type"], v)
        elif kind == "str":
            ns[n] = _text(v, enc)
        elif kind == "bytes":
            ns[n] = v
        elif kind == "vec":
            ns[n] = [_element(structs, f["elem"], x, enc) for x in v]
        elif kind == "map":
            ns[n] = [(_element(structs, f["key"], e["key"], enc), _element(structs, f["value"], e["value"], enc))
                     for e in v]
        elif kind == "struct":
            ns[n] = value_tree(structs, f["struct"], v)
        else:
            raise ReadingError(f"{name}.{n}: unknown field kind {kind!r}")
    return ns


def same(a: Any, b: Any, path: str = "", count: list[int] | None = None, doubles: list[int] | None = None) -> list[str]:
    """Differences between two value trees (``path: a != b`` lines); ``count[0]`` is
    incremented once per leaf compared. Lists and tuples are alike; NaN equals NaN. With
    ``doubles``, an integer of ``a`` beyond 2^53 also equals the double nearest to it in ``b``
    (what a JavaScript parser reads from a u8) and is counted in ``doubles[0]``."""
    out: list[str] = []
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            out.append(f"{path or '.'}: keys {sorted(a)} != {sorted(b)}")
        for k in a:
            if k in b:
                out += same(a[k], b[k], f"{path}.{k}" if path else k, count, doubles)
        return out
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if len(a) != len(b):
            return [f"{path}: {len(a)} elements != {len(b)}"]
        for i, (x, y) in enumerate(zip(a, b)):
            out += same(x, y, f"{path}[{i}]", count, doubles)
        return out
    if count is not None:
        count[0] += 1
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return []
    if (doubles is not None and isinstance(a, int) and isinstance(b, float) and abs(a) > 2**53
            and float(a) == b):
        doubles[0] += 1
        return []
    if type(a) is not type(b) and not (isinstance(a, (int, float)) and isinstance(b, (int, float))
                                       and not isinstance(a, bool) and not isinstance(b, bool)):
        return [f"{path}: {a!r} ({type(a).__name__}) != {b!r} ({type(b).__name__})"]
    return [] if a == b else [f"{path}: {_short(a)} != {_short(b)}"]


def _short(v: Any) -> str:
    r = repr(v)
    return r if len(r) <= 80 else r[:77] + "..."


class PythonParsers:
    """The Kaitai-generated Python parsers in ``directory`` (compiled from the exported .ksy
    files; ``kaitaistruct`` >= 0.11 must be installed)."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self._classes: dict[str, Callable[..., Any]] = {}

    def root_class(self, spec: str) -> Any:
        """The generated class of a format's top-level type (e.g. ``TvmParams`` for ``params``)."""
        cls = self._classes.get(spec)
        if cls is None:
            kid = roots()[spec].ksy_id
            module = self._import(kid)
            cls = self._classes[spec] = getattr(module, "".join(p.capitalize() for p in kid.split("_")))
        return cls

    def _import(self, module: str) -> Any:
        d = str(self.directory)
        # The generated modules have fixed names (one per .ksy); parsers compiled elsewhere
        # (another mode, another spec) may already be imported under them in this process.
        here = self.directory.resolve()
        for stem in {p.stem for p in self.directory.glob("*.py")}:
            loaded = sys.modules.get(stem)
            where = getattr(loaded, "__file__", None)
            if loaded is not None and (where is None or Path(where).resolve().parent != here):
                del sys.modules[stem]
        sys.path.insert(0, d)
        try:
            return importlib.import_module(module)
        finally:
            sys.path.remove(d)

    def parse(self, spec: str, data: bytes, era: tuple[int, ...]) -> Any:
        """The generated parser's object for ``data`` (raises what the parser raises)."""
        from kaitaistruct import KaitaiStream

        cls = self.root_class(spec)
        stream = KaitaiStream(io.BytesIO(data))
        obj = cls(tvm_minor(era), stream) if ERA_PARAM in _params_of(cls) else cls(stream)
        if getattr(obj, "_debug", None) == {}:  # compiled in debug mode: reading is the caller's call
            obj._read()
        return obj

    def read(self, spec: str, data: bytes, era: tuple[int, ...]) -> dict:
        """The value tree of ``data`` as the generated parser reads it."""
        ir = importlib.import_module(f"mlf_spec.generated.{spec}_ir")
        return value_tree(ir.STRUCTS, roots()[spec].struct, dump(self.parse(spec, data, era)))
