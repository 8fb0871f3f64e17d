"""Run every shipped conformance adapter the way CI runs it and write its compatibility page.

    python tools/compat_pages.py                 # every adapter -> docs/conformance/compat/<name>.md
    python tools/compat_pages.py netron tvm-ffi  # some of them
    python tools/compat_pages.py --html-only     # docs/conformance/results.html from results.json

Each run also replaces the adapter's entry in docs/conformance/results.json (the JSON index of
every shipped adapter's latest results, :mod:`mlf_spec.conformance.results`) and rewrites
docs/conformance/results.html, the HTML page over all of them.

Each run is ``mlf-spec conformance run --adapter NAME`` over the whole vector suite plus a bounded
``--generate`` run (the parameters below), with the adapter's known failures; the page is
``mlf-spec conformance report`` of its JSON report. tests/conformance/test_adapters.py makes the
same runs and fails when a committed page no longer matches what a fresh run finds (outside
the generated-cases section, which depends on timing), and when the adapter's entry of the
index differs from the run's (:func:`stale`). The peers must be installed (the
``test`` extra has them) and Node.js on PATH; the Kaitai parsers are compiled on demand into
the cache of tools/kaitai (tests/support/kaitai.py).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PAGES = ROOT / "docs" / "conformance" / "compat"
INDEX = ROOT / "docs" / "conformance" / "results.json"
HTML = ROOT / "docs" / "conformance" / "results.html"
TITLE = "Conformance of the shipped adapters"
#: what an index entry may differ in from one machine to the next (versions are on the run line)
_VOLATILE = ("mlf_spec", "version")

#: adapter -> extra arguments of its run (the generated part is bounded in cases and seconds)
RUNS: dict[str, list[str]] = {
    "mlf-spec": ["--generate", "100", "--seed", "1", "--generate-budget", "20"],
    "tvm": ["-j", "2", "--memory-limit", "4096", "--generate", "100", "--seed", "7", "--generate-budget", "20"],
    "tvm-cpp": ["-j", "2", "--memory-limit", "4096", "--generate", "100", "--seed", "7", "--generate-budget", "20"],
    "web-runtime": ["--generate", "100", "--seed", "7", "--generate-budget", "20"],
    "hhb-tvm": ["-j", "2", "--memory-limit", "4096", "--generate", "100", "--seed", "7", "--generate-budget", "20"],
    "tvm-ffi": ["-j", "2", "--memory-limit", "4096", "--generate", "100", "--seed", "1", "--generate-budget", "30"],
    "netron": ["--timeout", "5", "--generate", "200", "--seed", "1", "--generate-budget", "20"],
    "mlonmcu": ["-j", "2", "--generate", "60", "--seed", "1", "--generate-budget", "30"],
    "kaitai-python": ["--generate", "200", "--seed", "1", "--generate-budget", "20"],
    "kaitai-js": ["--generate", "200", "--seed", "1", "--generate-budget", "20"],
}


#: the runs of the test suite (tests/test_conformance_{adapters,tvm,hhb}.py): a stratified sample
#: of the vectors (``--sample``: every rule and feature value on each side, every known
#: failure's case, every skip) and a generated part bounded by its count alone, with a time
#: budget that is only a guard against a hang, unshrunk (``--no-shrink``: a shrink path depends on
#: every answer of the peer, and TVM's heap corruption makes some flaky), so that what a test run
#: finds depends on neither the machine's speed or load nor a flaky answer met while shrinking
#: (the pages' runs above keep the whole suite and shrink)
SAMPLED_GENERATE: dict[str, int] = {
    "mlf-spec": 30, "tvm": 60, "hhb-tvm": 10, "tvm-ffi": 15, "netron": 60, "mlonmcu": 10, "kaitai-python": 60,
    "kaitai-js": 40,
}
#: the time guard of a sampled run's generated part (seconds; a run that reaches it fails its test)
SAMPLED_GUARD = 600.0


def sampled_args(name: str) -> list[str]:
    """The arguments of adapter ``name``'s sampled run: RUNS' own, with --sample and the
    generated part bounded by SAMPLED_GENERATE (the budget is SAMPLED_GUARD)."""
    args, out = RUNS[name], []
    skip = {"--generate", "--generate-budget"}
    i = 0
    while i < len(args):
        if args[i] in skip:
            i += 2
            continue
        out.append(args[i])
        i += 1
    if name in SAMPLED_GENERATE:
        out += ["--generate", str(SAMPLED_GENERATE[name]), "--generate-budget", str(SAMPLED_GUARD), "--no-shrink"]
    return [*out, "--sample"]


def kaitai_environment() -> dict[str, str]:
    """The variables the kaitai adapters read: parsers compiled (debug mode) into the cache."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from specgen import kaitai_node

    from tests.support import kaitai as kaitai_support

    compiled, _ = kaitai_support.compiled(debug=True)
    return {"MLF_SPEC_KAITAI_PYTHON": str(compiled / "python"), "MLF_SPEC_KAITAI_JS": str(compiled / "javascript"),
            "MLF_SPEC_KAITAI_NODE_MODULES": str(kaitai_node.ensure_installed())}


def run(name: str, work: Path, *, sample: bool = False, keep: tuple[str, ...] = ()) -> tuple[int, list[dict[str, Any]], str]:
    """Run adapter ``name`` as the pages are made: (exit status, report records, page text);
    with ``sample`` as the test suite runs it (:func:`sampled_args`, plus the case ids ``keep``)."""
    from mlf_spec.cli import main as cli
    from mlf_spec.conformance import compat
    from mlf_spec.conformance.report import read_report

    report = work / f"{name}.jsonl"
    args = sampled_args(name) + [a for k in keep for a in ("--sample-keep", k)] if sample else RUNS[name]
    status = cli(["conformance", "run", "--adapter", name, *args, "--save-dir", str(work / f"{name}-generated"),
                  "--report-json", str(report), "--quiet"])
    records = read_report(report)
    return status, records, compat.page(records)


def read_index() -> dict[str, Any]:
    """The committed index (an empty one if there is none yet)."""
    from mlf_spec.conformance import results

    if not INDEX.exists():
        return results.index([])
    return results.read_index(INDEX.read_text(encoding="utf-8"), str(INDEX.relative_to(ROOT)))


def html_text(doc: dict[str, Any]) -> str:
    """docs/conformance/results.html for an index."""
    from mlf_spec.conformance import html

    return html.page(doc["implementations"], TITLE)


def stale(name: str, records: list[dict[str, Any]], page: str) -> list[str]:
    """What of the committed results of adapter ``name`` a fresh run's records contradict: its
    compatibility page (outside the generated cases) and its entry in the index."""
    from mlf_spec.conformance import compat, results

    out = []
    committed = (PAGES / f"{name}.md").read_text(encoding="utf-8")
    if compat.stable_part(page) != compat.stable_part(committed):
        out.append(f"docs/conformance/compat/{name}.md")
    fresh = {k: v for k, v in results.entry(records).items() if k not in _VOLATILE}
    old = next((e for e in read_index()["implementations"] if e["name"] == name), None)
    if old is None or {k: v for k, v in old.items() if k not in _VOLATILE} != fresh:
        out.append(f"{INDEX.relative_to(ROOT)} (entry {name})")
    return out


def suite_digest() -> str:
    """The digest of the installed suite (what a page made from it names)."""
    from mlf_spec.conformance.vectors import load_suite
    from mlf_spec.conformance.vectors import suite_digest as digest

    return digest(load_suite())


def stale_pages(names: list[str] | None = None) -> list[str]:
    """The committed pages and index entries not made from the installed suite (cheap: no
    adapter runs; a page names the digest of its suite, :func:`compat.suite_of`)."""
    from mlf_spec.conformance import compat

    current = suite_digest()
    entries = {e["name"]: e for e in read_index()["implementations"]}
    out = []
    for name in names or list(RUNS):
        page = PAGES / f"{name}.md"
        if not page.exists() or compat.suite_of(page.read_text(encoding="utf-8")) != current:
            out.append(str(page.relative_to(ROOT)))
        if entries.get(name, {}).get("suite_sha256") != current:
            out.append(f"{INDEX.relative_to(ROOT)} (entry {name})")
    return out


def sample_contradicts(name: str, records: list[dict[str, Any]], page: str) -> list[str]:
    """What a sampled run's records contradict in the committed results of adapter ``name``:
    every case it ran must have the outcome, reason and note the committed entry gives it (a
    divergence there, else passed or skipped), with the same handshake and the same unused
    known-failure lines."""
    from mlf_spec.conformance import compat, results

    old = next((e for e in read_index()["implementations"] if e["name"] == name), None)
    if old is None:
        return [f"{INDEX.relative_to(ROOT)} has no entry {name}"]
    out = []
    fresh = results.entry(records)  # (whether the suite is the same: stale_pages)
    committed = {d["id"]: d for d in old["divergences"]}
    seen = {d["id"]: d for d in fresh["divergences"]}
    for r in records:
        if r["type"] != "case" or r["id"].startswith("gen."):
            continue
        if seen.get(r["id"]) != committed.get(r["id"]):
            out.append(f"{r['id']}: {seen.get(r['id'], r['outcome'])} here, {committed.get(r['id'], 'pass or skip')} "
                       "in the committed results")
    if fresh["unused_known"] != old.get("unused_known"):
        out.append(f"unused known-failure lines: {fresh['unused_known']} here, {old.get('unused_known')} committed")
    committed_page = (PAGES / f"{name}.md").read_text(encoding="utf-8")
    if compat.declared_part(page) != compat.declared_part(committed_page):
        out.append(f"the handshake differs from what docs/conformance/compat/{name}.md says it declares")
    return out


def _utf8(text: str) -> bytes:
    """UTF-8 of a page; a lone surrogate a testee's answer carried (a tensor name "\\ud800") is
    written as U+FFFD per maximal subpart, as the canonical readings write it."""
    return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace").encode("utf-8")


def main(argv: list[str]) -> int:
    """Write the pages of the adapters named (all by default)."""
    from mlf_spec._io import atomic_write_bytes
    from mlf_spec.conformance import results

    sys.path.insert(0, str(ROOT / "tools"))
    if argv == ["--html-only"]:
        atomic_write_bytes(HTML, html_text(read_index()).encode("utf-8"))
        return 0
    names = argv or list(RUNS)
    if any(n.startswith("kaitai") for n in names):
        os.environ.update(kaitai_environment())
    PAGES.mkdir(parents=True, exist_ok=True)
    worst = 0
    with tempfile.TemporaryDirectory(prefix="mlf-spec-compat-") as tmp:
        for name in names:
            status, records, text = run(name, Path(tmp))
            (PAGES / f"{name}.md").write_bytes(_utf8(text))
            doc = results.with_entry(read_index(), results.entry(records))
            atomic_write_bytes(INDEX, _utf8(results.index_text(doc)))
            atomic_write_bytes(HTML, _utf8(html_text(doc)))
            print(f"{name}: exit {status}, wrote {PAGES / (name + '.md')}, its entry of {INDEX} and {HTML}",
                  file=sys.stderr)
            worst = max(worst, status)
    return worst


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
