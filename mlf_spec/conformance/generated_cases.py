"""Generated cases: draw inputs from the spec's strategies, ask the testee, compare with
mlf-spec's own reading, and shrink every disagreement to a minimal input saved as a vector.

    >>> from mlf_spec.conformance import generated_cases, testee
    >>> found = generated_cases.explore(testee.Persistent(["my-reader"]), 200, seed=1, save_dir="failures")
    >>> [r["id"] for r in found.results]          # one per kind of disagreement, shrunk
    # replay them: mlf-spec conformance run --testee my-reader --vectors failures

Hypothesis does the drawing and the shrinking. Each disagreement gets a signature (format,
role, what was drawn, and how the answers differ: accepted, rejected, the first differing
key, or the signal of a crash); each signature raises its own exception type, so hypothesis
tracks them as distinct failures and shrinks each one separately. The last input recorded
for a signature is the one hypothesis replays at the end: the minimal one. The saved case's
id is made from the signature (``gen.params.decode.broken.truncated.accepted``), so that a
known-failures file can name the divergences a testee is known to have.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st
from hypothesis.errors import HypothesisException

from mlf_spec._internal.pinned_draw import seed_only
from mlf_spec.errors import MlfError

from .judge import Answer, Outcome, judge
from .known_failures import KnownFailures
from .runner import out_of_scope, reads_of, skip_reason, unsupported_skip
from .suite.common import EXTENSIONS, READING_EXTENSION, outcome, slug
from .testee import Testee
from .vectors import CASE_SUFFIX, Case, case_of_document, format_name, format_support, save_case

_T = TypeVar("_T")


@dataclass
class Drawn:
    """One generated request: what it is, its options and scope, and its input."""

    format: str
    role: str
    label: str
    options: dict[str, str]
    scope: dict[str, str]
    data: bytes = b""
    reading: Any = None
    files: dict[str, bytes] | None = None  # a folder-shaped input (tensor-cache decode)

    def __repr__(self) -> str:  # what hypothesis prints for a falsifying example
        if self.files is not None:
            size = sum(len(b) for b in self.files.values())
            return f"Drawn({self.format} {self.role} {self.label} {self.options}, {len(self.files)} files, {size} bytes)"
        size = len(self.data) if self.role != "encode" else len(str(self.reading))
        return f"Drawn({self.format} {self.role} {self.label} {self.options}, {size} bytes)"


@dataclass
class Exploration:
    """What --generate found: one report record per disagreement, and counts."""

    results: list[dict[str, Any]] = field(default_factory=list)
    counts: Counter = field(default_factory=Counter)
    drawn: int = 0
    seconds: float = 0.0
    saved: list[Path] = field(default_factory=list)
    kinds: Counter = field(default_factory=Counter)

    def record(self, requested: int, seed_value: int, budget: float) -> dict[str, Any]:
        """The report's ``generated`` line (conformance_report)."""
        return {"type": "generated", "requested": requested, "drawn": self.drawn, "seed": seed_value,
                "budget": float(budget), "seconds": round(self.seconds, 3), "kinds": dict(sorted(self.kinds.items())),
                "disagreements": len(self.results)}


def _scope_values(info: dict[str, Any], fmt: str, key: str, known: list[str]) -> list[str]:
    support = next((f for f in info.get("formats", []) if f.get("format") == fmt), {})
    allowed = (support.get("scope") or {}).get(key)
    return [v for v in known if allowed is None or v in allowed]


def sources(info: dict[str, Any], formats: list[str] | None = None) -> st.SearchStrategy[Drawn]:
    """Requests drawn from the spec's strategies, valid and broken, within what the testee
    declared in its handshake."""
    from mlf_spec import strategies as ms
    from mlf_spec.params import dtypes as dt

    chosen = None if formats is None else {format_name(f) for f in formats}

    def wanted(fmt: str, role: str) -> bool:
        return (chosen is None or fmt in chosen) and out_of_scope(fmt, role, {}, info) is None

    out: list[st.SearchStrategy[Drawn]] = []
    dialects = [d for d in dt.DIALECTS if d.id in _scope_values(info, "params", "dialect", [x.id for x in dt.DIALECTS])]
    for d in dialects:
        opts, scope = {"dialect": d.id}, {"dialect": d.id}
        if wanted("params", "decode"):
            out.append(_params_sources(d, opts, scope))
        if wanted("params", "encode"):
            out.append(ms.param_dicts(d).map(lambda p, o=opts, s=scope, dd=d: _encode_params(p, dd, o, s)))
    if wanted("blob", "decode"):
        out.append(_blob_sources(info))
    if wanted("graph-json", "decode"):
        out.append(ms.graph_jsons().map(lambda t: Drawn("graph-json", "decode", "valid", {}, {}, t.encode())))
    if wanted("mlf-metadata", "decode") or wanted("mlf-metadata", "encode") or wanted("mlf-metadata", "migrate"):
        versions = [int(v) for v in _scope_values(info, "mlf-metadata", "version", [str(v) for v in range(1, 8)])]
        docs = ms.mlf_metadata().filter(lambda vsd: vsd[0] in versions)
        for role in ("decode", "encode"):
            if wanted("mlf-metadata", role):
                out.append(docs.map(lambda vsd, r=role: _metadata(vsd, r)))
        if wanted("mlf-metadata", "decode"):
            out.append(ms.broken_mlf_metadata().map(lambda b: Drawn(
                "mlf-metadata", "decode", f"broken.{b.kind}", {}, {"version": str(b.version)} if b.version else {},
                bytes(b.data))))
        if wanted("mlf-metadata", "migrate"):
            out.append(st.tuples(docs, st.sampled_from(versions)).map(lambda dv: _migration(*dv)))
    if wanted("tensor-cache", "decode") or wanted("tensor-cache", "encode"):
        out.append(_cache_sources(info, wanted))
    if wanted("mlf-archive", "decode"):
        out.append(ms.mlf_archives().map(lambda vsb: Drawn("mlf-archive", "decode", "valid", {},
                                                          {"version": str(vsb[0]), "style": vsb[1]}, vsb[2])))
        out.append(ms.broken_mlf_archives().map(lambda b: Drawn("mlf-archive", "decode", f"broken.{b.kind}", {}, {},
                                                                bytes(b.data))))
    if not out:
        return st.nothing()
    return st.one_of(out)


def _params_sources(d: Any, opts: dict[str, str], scope: dict[str, str]) -> st.SearchStrategy[Drawn]:
    """.params requests of dialect ``d``: valid files, broken ones (a sixth each) and files at
    the edges of the spec's rules (4 draws in 6, :func:`mlf_spec.params.edges.edge_params_bytes`)."""
    from mlf_spec.generated import params_strategies as pst
    from mlf_spec.params.edges import edge_params_bytes
    from mlf_spec.versions import label

    valid = pst.valid_params_file(d.since).map(lambda b: Drawn("params", "decode", "valid", opts, scope, b))
    broken = pst.broken_params_file(None, d.since).map(
        lambda kb: Drawn("params", "decode", f"broken.{kb[0]}", opts, scope, kb[1]))
    edges = edge_params_bytes(label(d.since)).map(lambda e: Drawn(
        "params", "decode", f"edge.{e.kind}" + (f".{e.where}" if e.where else ""), opts, scope, bytes(e.data)))
    parts = (valid, broken, edges, edges, edges, edges)
    return st.sampled_from(range(len(parts))).flatmap(lambda i: parts[i])


def _blob_sources(info: dict[str, Any]) -> st.SearchStrategy[Drawn]:
    """Blob requests: valid blobs per era, broken ones (a sixth each), and edges (4 draws in 6), their modules
    of the kinds whose payload grammar the handshake declares (``payloads``) in 4 of 5 draws, so
    that few draws end in an ``unsupported`` skip, and of any kind in the 5th."""
    from mlf_spec import strategies as ms
    from mlf_spec.blob.strategies import BLOB_ERAS, era_tuple

    from .suite.blob import era_text

    layouts = _scope_values(info, "blob", "layout", ["legacy", "ffi"])
    declared = (format_support(info, "blob") or {}).get("payloads")
    mix = st.integers(0, 9).map(lambda i: None if i in (4, 9) or declared is None else tuple(declared))

    def request(label: str, fmt: str, era: str, data: bytes) -> Drawn:
        o = {"layout": fmt, "era": era_text(era_tuple(era))}
        return Drawn("blob", "decode", label, o, dict(o), data)

    valid, broken, edges = [], [], []
    for fmt in layouts:
        eras = tuple(era for era in BLOB_ERAS[fmt]
                     if era_text(era_tuple(era)) in _scope_values(info, "blob", "era", [era_text(era_tuple(era))]))
        if not eras:
            continue
        valid.append(st.tuples(st.sampled_from(eras), mix).flatmap(
            lambda ek, f=fmt: ms.blob_bytes(f, ek[0], kinds=ek[1]).map(
                lambda b, f=f, e=ek[0]: request("valid", f, e, b))))
        edges.append(mix.flatmap(lambda k, f=fmt, es=eras: ms.edge_blob_bytes(f, k, es)).map(
            lambda e: request(f"edge.{e.kind}" + (f".{e.where}" if e.where else ""), e.format, e.era, bytes(e.data))))
    broken.append(mix.flatmap(lambda k: ms.broken_blob_bytes(module_kinds=k)).filter(
        lambda bb: bb.format in layouts).map(
        lambda bb: request(f"broken.{bb.kind}" + (f".{bb.where}" if bb.where else ""), bb.format, bb.era,
                           bytes(bb.data))))
    parts = [st.one_of(p) for p in (valid, edges, broken, edges, edges, edges) if p]  # edges: 4 draws in 6
    return st.sampled_from(range(len(parts))).flatmap(lambda i: parts[i]) if parts else st.nothing()


def _cache_sources(info: dict[str, Any], wanted: Any) -> st.SearchStrategy[Drawn]:
    """Tensor-cache requests in the index versions the handshake declares: valid caches as
    dump_tensor_cache writes them, broken ones (one rule broken, labelled by the finding
    code ``check`` reports, e.g. ``broken.tensor.out-of-shard``) and caches at the edges of the
    cache's rules (4 draws in 6, :func:`mlf_spec.cache.edges.edge_caches`), as folders; and encode
    requests (a valid cache's reading with data, its version and shard cap as options)."""
    from mlf_spec.cache import strategies as cs
    from mlf_spec.cache.edges import edge_caches

    versions = tuple(int(v) for v in _scope_values(info, "tensor-cache", "version", ["1", "2"]))
    if not versions:
        return st.nothing()
    parts: list[st.SearchStrategy[Drawn]] = []
    # small caches: a disagreement is shrunk through the testee (a forked load per step)
    small: dict[str, Any] = {"versions": versions, "max_tensors": 4, "max_dims": 2, "max_side": 4}
    if wanted("tensor-cache", "decode"):
        valid = cs.caches(**small).map(lambda c: Drawn(
            "tensor-cache", "decode", "valid", {}, {"version": str(c.version)}, files=c.files))
        broken = cs.broken_caches(versions=versions).map(lambda b: Drawn(
            "tensor-cache", "decode", f"broken.{b.kind}", {}, {"version": str(b.version)}, files=b.files))
        edges = edge_caches(versions=versions).map(lambda e: Drawn(
            "tensor-cache", "decode", f"edge.{e.kind}", {}, {"version": str(e.version)}, files=e.files))
        decode = (valid, broken, edges, edges, edges, edges)  # edges: 4 draws in 6
        parts.append(st.sampled_from(range(len(decode))).flatmap(lambda i: decode[i]))
    if wanted("tensor-cache", "encode"):
        parts.append(cs.caches(**small).map(_encode_cache))
    return st.one_of(parts)


def _encode_cache(c: Any) -> Drawn:
    from .suite.cache import reading_with_data

    options = {"version": str(c.version)} if c.version != 2 else {}
    if c.shard_cap_mb != 32:
        options["shard_cap_mb"] = repr(c.shard_cap_mb)
    return Drawn("tensor-cache", "encode", "valid", options, {"version": str(c.version)},
                 reading=reading_with_data("generated", c.files))


def expected_of(d: Drawn) -> dict[str, Any]:
    """mlf-spec's outcome for a drawn request (its canonical reading, or its rejection)."""
    if d.files is not None:
        from .suite.cache import folder_outcome

        return folder_outcome("generated", d.files)
    if d.format == "tensor-cache" and d.role == "encode":
        from .suite.cache import encode_outcome

        return encode_outcome(d.reading, d.options)
    return outcome(d.format, d.role, d.data, d.options, d.reading)


def _encode_params(p: dict[str, Any], d: Any, opts: dict[str, str], scope: dict[str, str]) -> Drawn:
    from mlf_spec.params import codec

    from .canonical import decode_params

    reading = decode_params(codec.dumps(p, dialect=d), opts, with_data=True)
    return Drawn("params", "encode", "valid", opts, scope, reading=reading)


def _metadata(vsd: tuple[int, str, dict], role: str) -> Drawn:
    from mlf_spec.mlf import metadata as md

    v, s, doc = vsd
    scope = {"version": str(v), "style": s}
    if role == "encode":
        return Drawn("mlf-metadata", "encode", "valid", {}, scope,
                     reading={"format": "mlf-metadata", "version": v, "style": s, "document": doc})
    return Drawn("mlf-metadata", "decode", "valid", {}, scope, md.from_document(doc, version=v, style=s).dumps())


def _migration(vsd: tuple[int, str, dict], to: int) -> Drawn:
    from mlf_spec.mlf import metadata as md

    v, s, doc = vsd
    return Drawn("mlf-metadata", "migrate", f"v{v}-to-v{to}", {"to": str(to)}, {"version": str(v), "style": s},
                 md.from_document(doc, version=v, style=s).dumps())


def case_of(d: Drawn, expected: dict[str, Any], case_id: str = "generated", where: Path | None = None) -> Case:
    """An in-memory case for a drawn request (a folder-shaped input held in memory)."""
    import dataclasses

    doc, data = _document(d, expected, case_id, f"generated: {d.label}")
    case = case_of_document(doc, (where or Path(".")) / f"{case_id}{CASE_SUFFIX}", data)
    return dataclasses.replace(case, files=dict(d.files)) if d.files is not None else case


def _document(d: Drawn, expected: dict[str, Any], case_id: str, description: str) -> tuple[dict[str, Any], bytes]:
    """The case document (conformance_vector) of a drawn request, and its input bytes."""
    import json

    from .canonical import sha256
    from .folders import folder_sha256

    data = d.data if d.role != "encode" else (json.dumps(d.reading, indent=1, ensure_ascii=False) + "\n").encode()
    if d.files is not None:  # a folder named as the case
        name, digest = case_id, folder_sha256(d.files)
    else:
        name, digest = case_id + (READING_EXTENSION if d.role == "encode" else EXTENSIONS[d.format]), sha256(data)
    doc = {"id": case_id, "format": d.format, "role": d.role, "input": name, "input_sha256": digest,
           "options": dict(d.options), "scope": dict(d.scope), "tvm": "generated", "features": {"generated": [d.label]},
           "description": description, "spec_ref": "generated/docs/index.md",
           "broken_kind": d.label[7:] if d.label.startswith("broken.") else None, "expected": expected}
    return doc, data


#: per format, the requests a round asks after its first disagreement of the format, per kind
#: found, before the round asks no more of them (its shrinking keeps the smallest input so far;
#: the next round draws afresh): a cache request is a folder copied and loaded, and a cache
#: shrunk to the end takes 50 requests or more
SHRINK_REQUESTS: dict[str, int] = {"tensor-cache": 25}
#: per format, the reading's keys that hold free-form JSON (the cache's metadata): a
#: difference below them is named by the key alone, not by the drawn keys inside it
FREE_FORM: dict[str, tuple[str, ...]] = {"tensor-cache": ("metadata",)}
#: the formats whose rejections are signed by the first words of the message as well: a
#: cache loader refuses valid folders for unrelated reasons (a dtype spelling, a 0-d array)
#: under one exception type, which would otherwise be one signature shrunk to one of them
MESSAGE_SIGNED = frozenset({"tensor-cache"})
#: quoted text and numbers in a message: drawn names and sizes, not part of a signature
_QUOTED = re.compile(r"""'[^']*'|"[^"]*"|`[^`]*`|[0-9]+""")


def _leading_words(message: str, start: int, n: int = 3) -> list[str]:
    """The first ``n`` words of ``message`` after ``start`` (quoted text and numbers left out),
    lower case; the words before ``start`` if nothing follows (``KeyError: 'metadata'``)."""
    words = re.findall(r"[a-z]+", _QUOTED.sub(" ", message[start:]).lower())
    if not words:
        words = re.findall(r"[a-z]+", message[start:].lower())
    return words[:n]


#: a list index or a map key in a difference's path ([3], ['a]b'], ["it's"]): not part of a signature
_INDEX = re.compile(r"""\[(?:'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|[^\]'"]*)\]""")


def signature(d: Drawn, answer: Answer, verdict: Any) -> str:
    """How a disagreement looks, in a few stable words."""
    if verdict.outcome == "error":
        how = f"{answer.error_kind}-{answer.signal}" if answer.signal else str(answer.error_kind)
    elif answer.status == "rejected":
        error = re.search(r"[A-Za-z]*Error\b", answer.message)
        how = "rejected" + (f"-{answer.error_class}" if answer.error_class else "") + (f"-{error.group(0)}" if error else "")
        if d.format in MESSAGE_SIGNED:
            how += "".join(f"-{w}" for w in _leading_words(answer.message, error.end() if error else 0))
    elif verdict.diff and verdict.diff[0].startswith("expected a rejection"):
        how = "accepted"
    elif verdict.diff:
        where, _, what = verdict.diff[0].partition(": ")
        where = next((k for k in FREE_FORM.get(d.format, ()) if where.startswith((k + ".", k + "["))), where)
        kind = ("length" if "elements expected" in what else "missing" if what.startswith("missing") else
                "unexpected" if what.startswith(("not expected", "unknown key")) else "value")
        how = "diff-" + _INDEX.sub("", where) + "-" + kind
    else:
        how = "fail"
    label = "valid" if d.role == "migrate" else d.label
    if d.format in MESSAGE_SIGNED and answer.status == "rejected" and verdict.message.startswith("rejected a valid input"):
        # a cache the reference reads (valid, or breaking a rule loaders need not enforce, e.g.
        # md5) refused: the message says why, whatever was drawn (one signature, not one per rule)
        label = "readable"
    return slug(f"gen.{d.format}.{d.role}.{label}.{how}")


def _cache_home() -> Path:
    """Where hypothesis keeps its caches (the Unicode tables) for the kit: mlf-spec's cache
    folder (``$XDG_CACHE_HOME/mlf-spec/hypothesis``), never the working directory."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "mlf-spec" / "hypothesis"


def outside_cwd(fn: Callable[..., _T]) -> Callable[..., _T]:
    """Run ``fn`` with hypothesis's storage outside the working directory: hypothesis writes
    ``./.hypothesis/`` (its Unicode tables, even with ``database=None``) unless told otherwise.
    A storage folder the user chose (``HYPOTHESIS_STORAGE_DIRECTORY``, or one set in the
    process) is kept."""
    from hypothesis import configuration

    @functools.wraps(fn)
    def wrapped(*args: Any, **kwargs: Any) -> _T:
        home = configuration.storage_directory(intent_to_write=False).home_directory
        chosen = os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY") or home != Path.cwd() / ".hypothesis"
        if chosen:
            return fn(*args, **kwargs)
        configuration.set_hypothesis_home_dir(_cache_home())
        try:
            return fn(*args, **kwargs)
        finally:
            configuration.set_hypothesis_home_dir(home)

    return wrapped


def _ask(testee: Testee, d: Drawn, info: dict[str, Any], strict_errors: bool,
         where: Path) -> tuple[dict[str, Any], Answer, Outcome] | None:
    """Ask the testee one drawn request: (the expected outcome, its answer, the judged
    outcome) when they disagree; None when it passes or the handshake puts it out of scope."""
    expected = expected_of(d)
    case = case_of(d, expected, where=where)
    if skip_reason(case, info) is not None:  # a rejection the testee does not claim to make
        return None
    if case.is_folder:  # a private copy of the folder (input_dir), or an empty output_dir
        answer = testee.ask(case)
    else:
        answer = testee.ask_raw(d.role, d.format, d.options, d.reading if d.role == "encode" else d.data)
    if unsupported_skip(case, answer, info) is not None:  # a payload grammar the handshake leaves out
        return None
    outcome = judge(case, answer, strict_errors=strict_errors, reads=reads_of(info, d.format))
    return None if outcome.outcome == "pass" else (expected, answer, outcome)


def _exploration(found: dict[str, tuple[Drawn, dict[str, Any], Answer, Outcome]], drawn: int, kinds: Counter,
                 save_dir: str | Path | None, seed_value: int, known: KnownFailures) -> Exploration:
    """What ``explore`` found: a record per kind of disagreement, by signature."""
    result = Exploration(drawn=drawn, kinds=kinds)
    for sig, (d, expected, _answer, verdict) in sorted(found.items()):
        result.results.append(_record(sig, d, expected, verdict, result, save_dir, seed_value, known))
    result.counts = Counter(r["outcome"] for r in result.results)
    return result


def _record(sig: str, d: Drawn, expected: dict[str, Any], verdict: Outcome, result: Exploration,
            save_dir: str | Path | None, seed_value: int, known: KnownFailures) -> dict[str, Any]:
    """The report record of one kind of disagreement (saved as a vector in ``save_dir``, the
    path kept on ``result``); a known failure's is an xfail."""
    rec: dict[str, Any] = {"type": "case", "id": sig, "format": d.format, "role": d.role,
                           "outcome": verdict.outcome, "seconds": 0.0, **verdict.details()}
    if save_dir is not None:
        path = save(d, expected, sig, Path(save_dir), seed_value, verdict.message)
        result.saved.append(path)
        rec["reproduce"] = f"mlf-spec conformance run --vectors {save_dir} --id {sig} ..."
    entry = known.match(sig)
    if entry is not None:
        rec["note"] = f"{rec['outcome']}: {rec['message']}"[:500]
        rec["outcome"], rec["message"] = "xfail", entry.reason
    return rec


@outside_cwd
def explore(testee: Testee, n: int, *, seed_value: int = 0, save_dir: str | Path | None = None,
            formats: list[str] | None = None, info: dict[str, Any] | None = None,
            known: KnownFailures | None = None, strict_errors: bool = False, quiet: bool = True,
            budget: float = 120.0, shrink: bool = True,
            progress: Callable[[int, int, int], None] | None = None) -> Exploration:
    """Draw ``n`` requests, ask ``testee`` and shrink each kind of disagreement; save each
    shrunk one as a vector in ``save_dir`` (replay with ``--vectors``). After ``budget``
    seconds the testee is no longer asked: drawing stops counting and shrinking keeps the
    smallest input found so far. With ``shrink=False`` each kind is reported as first drawn:
    the kinds met then depend on the seed and the testee's answers to the drawn requests only
    (a shrink path depends on every answer, a flaky one included). ``progress`` is called
    with (requests asked, ``n``, kinds of disagreement found) after each request."""
    known = known or KnownFailures()
    info = info if info is not None else testee.info()
    found: dict[str, tuple[Drawn, dict[str, Any], Answer, Outcome]] = {}
    errors: dict[str, type[Exception]] = {}
    drawn = 0
    kinds: Counter = Counter()
    t0 = time.perf_counter()
    tmp = Path(tempfile.gettempdir())
    strategy = sources(info, formats)
    shrinking: Counter = Counter()  # per format: the kinds of disagreement found in this round
    asked_after: Counter = Counter()  # per format: requests asked since its first one in this round

    def one_round(round_seed: int, examples: int, old: frozenset[str]) -> None:
        shrinking.clear()  # the next round draws afresh (and ignores the kinds found before)
        asked_after.clear()

        @seed(round_seed)
        @settings(max_examples=examples, database=None, deadline=None, report_multiple_bugs=True,
                  phases=[Phase.generate, Phase.shrink] if shrink else [Phase.generate], suppress_health_check=list(HealthCheck), print_blob=False)
        @given(strategy)
        def probe(d: Drawn) -> None:
            nonlocal drawn
            if time.perf_counter() > t0 + budget:
                return
            cap = SHRINK_REQUESTS.get(d.format)
            if cap is not None and shrinking[d.format] and asked_after[d.format] >= cap * shrinking[d.format]:
                return  # this format's disagreements are shrunk far enough: keep the smallest so far
            drawn += 1
            kinds[f"{d.format}.{d.role}.{d.label}"] += 1
            if progress is not None:
                progress(drawn, n, len(found))
            if shrinking[d.format]:
                asked_after[d.format] += 1
            judged = _ask(testee, d, info, strict_errors, tmp)
            if judged is None:
                return
            expected, answer, outcome = judged
            sig = signature(d, answer, outcome)
            if sig in old:  # found and shrunk in an earlier round: look for other kinds
                return
            if sig not in found:
                shrinking[d.format] += 1
            found[sig] = (d, expected, answer, outcome)  # the last one recorded is the final, minimal replay
            exc = errors.setdefault(sig, type("Disagreement_" + hashlib.sha1(sig.encode()).hexdigest()[:10],
                                              (AssertionError,), {}))
            raise exc(sig)

        try:
            probe()
        except Exception as exc:  # disagreements (one per signature), or a fault of the kit itself
            for e in getattr(exc, "exceptions", None) or [exc]:
                if not (type(e).__name__.startswith("Disagreement_") or isinstance(e, HypothesisException)):
                    raise

    # Hypothesis stops looking soon after a first failure; rounds that ignore what earlier
    # rounds found go on until n requests were drawn, a round finds nothing new, or time is up.
    with seed_only():  # the same cases for the same seed, whatever the process imported
        for r in range(64):
            before = set(found)
            one_round(seed_value * 1000 + r, max(1, n - drawn), frozenset(before))
            if drawn >= n or time.perf_counter() > t0 + budget or set(found) == before:
                break
    result = _exploration(found, drawn, kinds, save_dir, seed_value, known)
    result.seconds = time.perf_counter() - t0
    if not quiet:
        print(f"generated {drawn} cases (seed {seed_value}): {len(found)} kinds of disagreement", flush=True)
    return result


@outside_cwd
def drawn_cases(info: dict[str, Any], n: int, *, seed_value: int = 0, formats: list[str] | None = None,
                where: Path | None = None) -> list[Case]:
    """The first ``n`` requests that :func:`explore` draws with ``seed_value`` for a testee of
    handshake ``info``, as in-memory cases with the reference's expected reading (no testee is
    asked): the same generated cases for every reader, e.g. every mutant of one."""
    drawn: list[Drawn] = []

    @seed(seed_value * 1000)
    @settings(max_examples=n, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck), print_blob=False)
    @given(sources(info, formats))
    def collect(d: Drawn) -> None:
        drawn.append(d)

    with seed_only():
        collect()
    where = where or Path(tempfile.gettempdir())
    return [case_of(d, expected_of(d), slug(f"gen.{i}.{d.label}"), where) for i, d in enumerate(drawn[:n])]


def save(d: Drawn, expected: dict[str, Any], case_id: str, directory: Path, seed_value: int, message: str) -> Path:
    """Write a shrunk disagreement as a vector case in ``directory``."""
    doc, data = _document(d, expected, case_id,
                          f"generated (seed {seed_value}) and shrunk: {' '.join(message.split())[:200]}")
    try:
        if d.files is not None:
            return _save_folder_case(directory, doc, d.files)
        return save_case(directory, doc, data, doc["input"])
    except OSError as exc:
        raise MlfError(f"cannot save a generated case: {exc.strerror}", file=str(directory)) from None


def _save_folder_case(directory: Path, doc: dict[str, Any], files: dict[str, bytes]) -> Path:
    """Write a folder-shaped case: its input folder (made beside, then renamed in over an
    older one of the same id) and its case file."""
    import shutil

    from mlf_spec._io import atomic_write_bytes

    from .folders import write_files
    from .vectors import case_text

    directory.mkdir(parents=True, exist_ok=True)
    dest = directory / doc["input"]
    tmp = Path(tempfile.mkdtemp(prefix=f".{doc['input'][:40]}.", dir=directory))
    try:
        write_files(tmp, files)
        if dest.is_dir() and not dest.is_symlink():
            shutil.rmtree(dest)
        tmp.rename(dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    path = directory / f"{doc['id']}{CASE_SUFFIX}"
    atomic_write_bytes(path, case_text(doc).encode("utf-8"))
    return path


__all__ = ["Drawn", "Exploration", "case_of", "drawn_cases", "expected_of", "explore", "save", "signature", "sources"]
