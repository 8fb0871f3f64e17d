"""Every figure of the conformance docs comes from a run or from the spec (tools/doc_figures.py):
the ones made from the vectors, the spec and results.json are current, the reference run's
counts match a fresh run, the timings are there; the committed HTML results page is the
rendering of the committed index."""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import compat_pages  # noqa: E402
import doc_figures  # noqa: E402

GUIDE = ROOT / "docs" / "conformance" / "guide.md"
PROTOCOL = ROOT / "docs" / "conformance" / "protocol.md"


def test_the_figures_from_the_vectors_the_spec_and_the_index_are_current(capsys):
    assert doc_figures.main(["--check"]) == 0, capsys.readouterr().err


def test_protocol_md_lists_every_scope_value_the_vectors_use():
    from mlf_spec.conformance.vectors import load_suite, scope_list

    table = doc_figures.figures(PROTOCOL)["scope-values"]
    for case in load_suite():
        for key, value in case.scope.items():
            row = next(line for line in table.splitlines() if line.startswith(f"| {case.format} | `{key}` |"))
            assert all(f"`{v}`" in row for v in scope_list(value)), (case.id, key, value)
    assert "`v0.26`" in table


def test_the_reference_run_in_the_guide_is_what_a_run_gives():
    summary, _ = doc_figures.reference_counts()
    block = doc_figures.figures(GUIDE)["install"]
    assert doc_figures.stable(f"# {summary}") in doc_figures.stable(block)
    assert "pip install mlf-spec " not in GUIDE.read_text().replace("`pip install mlf-spec` finds nothing", "")
    assert "python -m build" in block


def test_the_timings_are_figures_made_by_a_run():
    text = doc_figures.figures(PROTOCOL)["throughput"]
    assert re.search(r"answered \d+ cases per second this way and [\d.]+ cases per second one-shot", text)
    assert re.search(r"\d+ cases takes [\d.]+ seconds", text)
    for name in ("install", "js-example"):
        assert re.search(r"in [\d.]+ s\n", doc_figures.figures(GUIDE)[name]), name


def test_no_figure_is_left_empty():
    for path in (GUIDE, PROTOCOL):
        for name, body in doc_figures.figures(path).items():
            assert body.strip() and body.strip() != "```sh\n```", (path.name, name)


def test_the_committed_html_results_page_renders_the_committed_index():
    doc = compat_pages.read_index()
    assert {e["name"] for e in doc["implementations"]} == set(compat_pages.RUNS)
    assert compat_pages.HTML.read_text(encoding="utf-8") == compat_pages.html_text(doc)
