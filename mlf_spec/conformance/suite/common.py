"""What every part of the suite builder shares: a built vector (case document + input bytes),
the expected outcome computed by mlf-spec's own reading, ids and links into the docs."""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass, field
from typing import Any

from mlf_spec.errors import MlfError

from .. import canonical

#: input file extension per format (decode and migrate); encode inputs are readings
EXTENSIONS: dict[str, str] = {"params": ".params", "blob": ".bin", "graph-json": ".graph.json",
                              "mlf-metadata": ".metadata.json", "mlf-archive": ".tar"}
READING_EXTENSION = ".reading.json"


@dataclass
class Built:
    """One vector as the builder made it: its case document and its input bytes."""

    case: dict[str, Any]
    data: bytes
    files: dict[str, bytes] | None = None  # a folder-shaped input: relative path -> bytes

    @property
    def id(self) -> str:
        """The vector id."""
        return self.case["id"]

    @property
    def input_name(self) -> str:
        """The input file name (next to the case file)."""
        return self.case["input"]


@dataclass
class Collector:
    """Collects vectors, refusing a repeated id and any vector whose expected outcome is not
    what its builder meant (a broken input that reads, a valid one that does not)."""

    items: list[Built] = field(default_factory=list)
    ids: set[str] = field(default_factory=set)

    def add(self, vid: str, fmt: str, data: bytes, *, description: str, spec_ref: str, scope: dict[str, Any],
            tvm: str, features: dict[str, list[str]], options: dict[str, str] | None = None,
            role: str = "decode", broken_kind: str | None = None, expect: str | None = None,
            reading: dict[str, Any] | None = None) -> Built:
        """Add one vector; ``expect`` ("accept"/"reject") defaults to reject for a broken
        kind, accept otherwise. For ``encode``, ``reading`` is the input (with data) and the
        expected reading is mlf-spec's reading of what its own encoder writes."""
        vid = slug(vid)
        if vid in self.ids:
            raise AssertionError(f"vector id {vid!r} is built twice")
        opts = dict(options or {})
        want = expect or ("reject" if broken_kind is not None else "accept")
        expected = outcome(fmt, role, data, opts, reading)
        if expected["outcome"] != want:
            raise AssertionError(f"vector {vid}: meant to {want}, mlf-spec says {expected}")
        if role == "encode":
            assert reading is not None
            data = (json.dumps(reading, indent=1, ensure_ascii=False) + "\n").encode("utf-8")
            name = vid + READING_EXTENSION
        else:
            name = vid + EXTENSIONS[fmt]
        case = {"id": vid, "format": fmt, "role": role, "input": name, "input_sha256": canonical.sha256(data),
                "options": opts, "scope": dict(scope), "tvm": tvm,
                "features": {k: sorted(set(v)) for k, v in sorted(features.items()) if v},
                "description": description, "spec_ref": spec_ref, "broken_kind": broken_kind, "expected": expected}
        built = Built(case, data)
        self.items.append(built)
        self.ids.add(vid)
        return built


def outcome(fmt: str, role: str, data: bytes, options: dict[str, str],
            reading: dict[str, Any] | None = None) -> dict[str, Any]:
    """The expected outcome: mlf-spec's canonical reading, or its rejection class."""
    try:
        if role == "decode":
            got = canonical.decode(fmt, data, options)
        elif role == "migrate":
            got = canonical.migrate(fmt, data, options)
        else:
            assert reading is not None
            got = canonical.decode(fmt, canonical.encode(fmt, reading, options), options)
    except MlfError as exc:
        return {"outcome": "reject", "error_class": canonical.error_class(exc)}
    return {"outcome": "accept", "reading": _drop_data(got)}


def holding(fmt: str, role: str, data: bytes, options: dict[str, str], reading: dict[str, Any] | None, key: str,
            candidates: list[str]) -> list[str]:
    """The values of option ``key`` under which mlf-spec's outcome is the one the case's own
    option gives (a reading's top-level ``key`` naming the option aside): the case's own value
    first, then the ``candidates`` that hold, in their order. A vector's ``scope[key]``."""
    from ..vectors import echo

    own = options[key]
    want = outcome(fmt, role, data, options, reading)
    out = [own]
    for value in candidates:
        if value == own:
            continue
        opts = {**options, key: value}
        got = outcome(fmt, role, data, opts, echo(reading, key, own, value) if reading is not None else None)
        if "reading" in got:
            got = {**got, "reading": echo(got["reading"], key, value, own)}
        if got == want:
            out.append(value)
    return out


def _drop_data(reading: Any) -> Any:
    """A reading without the base64 ``data`` of tensors (the digests stand for it)."""
    if isinstance(reading, dict):
        return {k: _drop_data(v) for k, v in reading.items() if k != "data" or not isinstance(v, str)}
    if isinstance(reading, list):
        return [_drop_data(v) for v in reading]
    return reading


def unique(c: Collector, vid: str) -> str:
    """``vid``, or ``vid-2``, ``vid-3``... if its slug is taken (labels that differ only in case)."""
    out, n = vid, 1
    while slug(out) in c.ids:
        n += 1
        out = f"{vid}-{n}"
    return out


def slug(text: str) -> str:
    """An id made of lower-case letters, digits, '.', '_' and '-'."""
    out = re.sub(r"[^a-z0-9._-]+", "-", text.lower()).strip("-.")
    return out or "x"


def anchor(heading: str) -> str:
    """The anchor a Markdown renderer (GitHub's rule) gives a heading."""
    text = heading.strip().lstrip("#").strip().replace("`", "").lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def doc_ref(page: str, heading: str | None = None) -> str:
    """A link into generated/docs/: ``generated/docs/<page>.md#<anchor>``."""
    return f"generated/docs/{page}.md" + (f"#{anchor(heading)}" if heading else "")


def pattern_bytes(n: int, salt: int = 0) -> bytes:
    """``n`` deterministic bytes (a simple sequence, so that digests differ by content)."""
    return bytes((i * 37 + salt * 11 + 5) % 251 for i in range(n))


def b64(data: bytes) -> str:
    """Base64 text of ``data``."""
    return base64.b64encode(data).decode("ascii")


__all__ = ["Built", "Collector", "EXTENSIONS", "READING_EXTENSION", "anchor", "b64", "doc_ref", "holding", "outcome",
           "pattern_bytes", "slug", "unique"]
