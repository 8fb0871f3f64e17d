"""Structure-aware mutation: the protocol, combinators and the glue to libFuzzer.

A :class:`Mutator` parses an input with the format's own grammar, changes one thing (a
count, a length, a dtype code, a tag, a key, a member) and writes it back, so that a
coverage-guided fuzzer reaches the code behind the first checks instead of spending its
time on inputs that fail at the magic number. ``mutate`` returns None when the input
does not parse; the engine then falls back to byte mutations.

    from mlf_spec.fuzzing import mutators, mutate_spec
    m = mutate_spec.SpecMutator(params_ir.STRUCTS, [("params_file", None)])
    fn = mutators.custom_mutator(m, atheris.Mutate)   # atheris.Setup(..., custom_mutator=fn)
"""

from __future__ import annotations

import random
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, Protocol


class Mutator(Protocol):
    """Something that changes one structural element of an input."""

    def mutate(self, data: bytes, rng: random.Random) -> bytes | None:
        """A variant of ``data`` (None when ``data`` does not parse)."""


class ParseCache:
    """A small LRU cache of parse results keyed by the input bytes: libFuzzer mutates the
    same corpus entries again and again, and parsing costs more than mutating."""

    def __init__(self, parse: Callable[[bytes], Any], size: int = 64) -> None:
        self._parse = parse
        self._size = size
        self._items: OrderedDict[bytes, Any] = OrderedDict()

    def __call__(self, data: bytes) -> Any:
        try:
            self._items.move_to_end(data)
            return self._items[data]
        except KeyError:
            pass
        try:
            value = self._parse(data)
        except Exception:  # a mutator must never fail: an unparsable input has no structure
            value = None
        self._items[data] = value
        if len(self._items) > self._size:
            self._items.popitem(last=False)
        return value


def interesting_ints(old: int, bits: int, signed: bool, context: Sequence[int] = ()) -> list[int]:
    """Values that tend to break readers of a ``bits``-wide field holding ``old``:
    boundaries of the type, off-by-one neighbours, and sizes from the input (``context``)."""
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    cands = {0, 1, 2, 3, 4, 7, 8, 16, 63, 64, 255, 256, old - 1, old + 1, old * 2, old + 8, old - 8, old // 2,
             0x7F, 0x80, 0x7FFF, 0x8000, 0xFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, (1 << 62), (1 << 63) - 1,
             (1 << 63), (1 << 64) - 1, -1, -2, lo, hi, hi // 2}
    cands.update(context)
    cands.update(c + d for c in context for d in (-1, 1))
    return sorted(v for v in cands if lo <= v <= hi and v != old)


def pick_int(rng: random.Random, old: int, bits: int, signed: bool, context: Sequence[int] = ()) -> int:
    """One value from :func:`interesting_ints`, or sometimes any value of the type."""
    if rng.random() < 0.15:
        lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
        return rng.randint(lo, hi)
    return rng.choice(interesting_ints(old, bits, signed, context))


class FirstOf:
    """The first of several mutators whose ``accepts(data)`` is true (or that parses)."""

    def __init__(self, *choices: tuple[Callable[[bytes], bool] | None, Mutator]) -> None:
        self.choices = choices

    def mutate(self, data: bytes, rng: random.Random) -> bytes | None:
        """Mutate with the first mutator that accepts ``data``."""
        for accepts, m in self.choices:
            if accepts is None or accepts(data):
                out = m.mutate(data, rng)
                if out is not None:
                    return out
        return None


class Prefixed:
    """Inputs made of a header of ``head(data)`` bytes followed by a structured part:
    ``inner`` mutates the part, ``header`` (if given) the header; the header is kept."""

    def __init__(self, head: Callable[[bytes], int | None], inner: Callable[[bytes], Mutator | None],
                 header: Callable[[bytes, random.Random], bytes] | None = None) -> None:
        self.head, self.inner, self.header = head, inner, header

    def mutate(self, data: bytes, rng: random.Random) -> bytes | None:
        """Mutate the structured part (or, sometimes, the header)."""
        n = self.head(data)
        if n is None:
            return None
        prefix, rest = data[:n], data[n:]
        if self.header is not None and rng.random() < 0.2:
            return self.header(prefix, rng) + rest
        m = self.inner(prefix)
        if m is None:
            return None
        out = m.mutate(rest, rng)
        return None if out is None else prefix + out


def edit_list(items: list, rng: random.Random, grow: Callable[[], list]) -> None:
    """Edit a list of a parsed input in place: delete, duplicate or swap an element, empty
    it, or append what ``grow()`` gives (a list of zero or one element)."""
    import copy

    op = rng.randrange(5) if items else 4
    if op == 0:
        del items[rng.randrange(len(items))]
    elif op == 1:
        i = rng.randrange(len(items))
        items.insert(i, copy.deepcopy(items[i]))
    elif op == 2 and len(items) > 1:
        i, j = rng.randrange(len(items)), rng.randrange(len(items))
        items[i], items[j] = items[j], items[i]
    elif op == 3:
        items.clear()
    else:  # op 4, or a swap with one element
        items.extend(grow())


def byte_mutate(data: bytes, max_size: int, rng: random.Random) -> bytes:
    """A plain byte-level mutation (flip, set, insert, erase, duplicate a range), for use
    where libFuzzer's own mutator (``atheris.Mutate``) is not available."""
    b = bytearray(data)
    op = rng.randrange(5) if b else 2
    if op == 0:
        i = rng.randrange(len(b))
        b[i] ^= 1 << rng.randrange(8)
    elif op == 1:
        i = rng.randrange(len(b))
        b[i] = rng.choice((0, 1, 0x7F, 0x80, 0xFF, rng.randrange(256)))
    elif op == 2:
        i = rng.randrange(len(b) + 1)
        b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
    elif op == 3:
        i = rng.randrange(len(b))
        del b[i:i + rng.randint(1, 16)]
    else:
        i = rng.randrange(len(b))
        j = min(len(b), i + rng.randint(1, 64))
        k = rng.randrange(len(b) + 1)
        b[k:k] = b[i:j]
    return bytes(b[:max_size])


def custom_mutator(mutator: Mutator | None, fallback: Callable[[bytes, int], bytes] | None = None, *,
                   structural: float = 0.5) -> Callable[[bytes, int, int], bytes]:
    """A libFuzzer custom mutator ``(data, max_size, seed) -> bytes``: with probability
    ``structural`` a structure-aware mutation by ``mutator`` (followed now and then by a
    byte mutation), otherwise ``fallback`` (``atheris.Mutate``: libFuzzer's own byte
    mutations, which use the comparison operands it traced); :func:`byte_mutate` when
    no fallback is given. Deterministic for a given seed."""

    def mutate(data: bytes, max_size: int, seed: int) -> bytes:
        rng = random.Random(seed)
        if mutator is not None and data and rng.random() < structural:
            try:
                out = mutator.mutate(bytes(data), rng)
            except Exception:  # a mutator bug must not stop the campaign
                out = None
            if out is not None and 0 < len(out) <= max_size and out != data:
                if fallback is not None and rng.random() < 0.1:
                    return fallback(out, max_size)
                return out
        if fallback is not None:
            return fallback(data, max_size)
        return byte_mutate(bytes(data), max_size, rng)

    return mutate


__all__ = ["FirstOf", "Mutator", "ParseCache", "Prefixed", "byte_mutate", "custom_mutator", "edit_list", "interesting_ints",
           "pick_int"]
