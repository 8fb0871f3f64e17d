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
    "tvm-cpp": ["-j", "2", "--memory-limit", "4096"],
    "web-runtime": [],
    "hhb-tvm": ["-j", "2", "--memory-limit", "4096", "--generate", "100", "--seed", "7", "--generate-budget", "20"],
    "tvm-ffi": ["-j", "2", "--memory-limit", "4096", "--generate", "100", "--seed", "1", "--generate-budget", "30"],
    "netron": ["--timeout", "5", "--generate", "200", "--seed", "1", "--generate-budget", "20"],
    "mlonmcu": ["-j", "2", "--generate", "60", "--seed", "1", "--generate-budget", "30"],
    "kaitai-python": ["--generate", "200", "--seed", "1", "--generate-budget", "20"],
    "kaitai-js": ["--generate", "200", "--seed", "1", "--generate-budget", "20"],
}


def kaitai_environment() -> dict[str, str]:
    """The variables the kaitai adapters read: parsers compiled (debug mode) into the cache."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from specgen import kaitai_node

    from tests.support import kaitai as kaitai_support

    compiled, _ = kaitai_support.compiled(debug=True)
    return {"MLF_SPEC_KAITAI_PYTHON": str(compiled / "python"), "MLF_SPEC_KAITAI_JS": str(compiled / "javascript"),
            "MLF_SPEC_KAITAI_NODE_MODULES": str(kaitai_node.ensure_installed())}


def run(name: str, work: Path) -> tuple[int, list[dict[str, Any]], str]:
    """Run adapter ``name`` as CI does: (exit status, report records, page text)."""
    from mlf_spec.cli import main as cli
    from mlf_spec.conformance import compat
    from mlf_spec.conformance.report import read_report

    report = work / f"{name}.jsonl"
    status = cli(["conformance", "run", "--adapter", name, *RUNS[name], "--save-dir", str(work / f"{name}-generated"),
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
            (PAGES / f"{name}.md").write_text(text, encoding="utf-8")
            doc = results.with_entry(read_index(), results.entry(records))
            atomic_write_bytes(INDEX, results.index_text(doc).encode("utf-8"))
            atomic_write_bytes(HTML, html_text(doc).encode("utf-8"))
            print(f"{name}: exit {status}, wrote {PAGES / (name + '.md')}, its entry of {INDEX} and {HTML}",
                  file=sys.stderr)
            worst = max(worst, status)
    return worst


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
