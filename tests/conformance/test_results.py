"""Results people can show: the HTML page (tested in a real headless Chromium), the SVG badge,
the comparison of two runs and the JSON index; malformed reports are MlfErrors with the path."""

from __future__ import annotations

import json
import shlex
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from mlf_spec.cli import main as cli
from mlf_spec.conformance import html, report, results, runner, testee, vectors
from mlf_spec.conformance.adapters.mlf_spec import MlfSpecAdapter
from mlf_spec.conformance.known_failures import KnownFailures
from mlf_spec.errors import MlfError
from tests.support import browser as browser_support

ROOT = Path(__file__).resolve().parents[2]
BAD = [sys.executable, str(ROOT / "tests" / "support" / "conformance_testees" / "misbehaving.py")]
IDS = ["params.valid.w-and-b", "params.valid.0-d", "params.broken.truncated.at-0", "graph-json.valid.*"]


def _run(t, known: KnownFailures, path: Path) -> list[dict]:
    rep = report.JsonLines(path)
    runner.run(t, vectors.load_suite(ids=IDS), known=known, progress=False, report=rep)
    rep.close()
    return report.read_report(path)


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    d = tmp_path_factory.mktemp("reports")
    good = _run(testee.InProcess(MlfSpecAdapter()), KnownFailures(), d / "good.jsonl")
    kf = KnownFailures.parse("params.valid.0-d  flaky: the shape may be off by one\n", "kf.txt")
    bad = _run(testee.Persistent(BAD + ["serve-wrong"]), kf, d / "bad.jsonl")
    return d, good, bad


def test_an_entry_holds_the_counts_and_every_case_that_did_not_pass(reports):
    _, good, bad = reports
    g, b = results.entry(good), results.entry(bad)
    assert g["name"] == "mlf-spec" and g["passed"] == g["applicable"] == g["cases"] and not g["divergences"]
    assert b["name"] == "misbehaving-serve-wrong"
    assert b["counts"] == {"fail": 1, "flaky": 1, "pass": 1, "skip": b["cases"] - 3}
    assert (b["passed"], b["applicable"]) == (1, 3)
    assert [(d["id"], d["outcome"]) for d in b["divergences"]] == [("params.valid.0-d", "flaky"),
                                                                     ("params.valid.w-and-b", "fail")]
    assert "reproduce" not in b["divergences"][1]
    assert "serve" in results.entry(bad, reproduce=True)["divergences"][1]["reproduce"]


def test_the_badge_says_passed_over_applicable(reports):
    _, good, bad = reports
    for records, text, color in ((good, None, "#4c1"), (bad, "1/3 passed, 1 known failure", "#e05d44")):
        e = results.entry(records)
        svg = results.badge(e)
        root = ET.fromstring(svg)
        texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
        assert texts == ["conformance", text or f"{e['passed']}/{e['applicable']} passed"]
        assert color in svg


def test_compare_names_newly_failing_newly_passing_and_changed_reasons(tmp_path, capsys):
    def rec(cid, outcome, message=""):
        return {"type": "case", "id": cid, "format": "params", "role": "decode", "outcome": outcome, "seconds": 0.0,
                **({"message": message} if message else {})}

    run = {"type": "run", "mlf_spec": "0", "testee": "t", "testee_info": {}, "vectors": "installed",
           "started": "2026-01-01T00:00:00+00:00", "cases": 4, "mode": "one-shot"}
    old = [run, rec("a", "pass"), rec("b", "fail", "x: expected 1, got 2"), rec("c", "fail", "rejected"),
           rec("d", "xfail", "known")]
    new = [run, rec("a", "fail", "y: expected 3, got 4"), rec("b", "pass"), rec("c", "fail", "accepted"),
           rec("d", "xfail", "known"), rec("e", "error", "crashed")]
    diff = results.compare(old, new)
    assert [r["id"] for r in diff["newly_failing"]] == ["a", "e"]
    assert [r["id"] for r in diff["newly_passing"]] == ["b"]
    assert [(r["id"], r["old_reason"], r["reason"]) for r in diff["changed_reason"]] == [("c", "rejected", "accepted")]
    paths = []
    for name, records in (("old", old), ("new", new)):
        p = tmp_path / f"{name}.jsonl"
        p.write_text("".join(json.dumps(r) + "\n" for r in records))
        paths.append(str(p))
    assert cli(["conformance", "report", "--compare", *paths]) == 1
    out = capsys.readouterr().out
    assert "2 newly failing, 1 newly passing, 1 with another reason" in out and "NEWLY FAILING a" in out
    assert cli(["conformance", "report", "--compare", paths[1], paths[1]]) == 0


@pytest.mark.parametrize("content", ["", "not json\n", '{"type": "case"}\n', '{"type": "run"}\n'])
def test_a_malformed_report_is_an_mlferror_with_its_path(content, tmp_path, capsys):
    p = tmp_path / "broken.jsonl"
    p.write_text(content)
    with pytest.raises(MlfError) as err:
        report.read_report(p)
    assert err.value.file == str(p)
    for args in (["--html", str(tmp_path / "r.html"), str(p)], ["--compare", str(p), str(p)]):
        assert cli(["conformance", "report", *args]) == 2
        lines = capsys.readouterr().err.strip().splitlines()
        assert len(lines) == 1 and str(p) in lines[0] and "Traceback" not in lines[0]
    assert not (tmp_path / "r.html").exists()


def test_a_malformed_index_is_an_mlferror_with_its_path():
    for text in ("[]", "{", '{"format": "mlf-spec-conformance-index", "implementations": [{"name": "x"}]}'):
        with pytest.raises(MlfError) as err:
            results.read_index(text, "docs/conformance/index.json")
        assert err.value.file == "docs/conformance/index.json"


def test_a_malformed_vector_is_an_mlferror_with_its_path(tmp_path, capsys):
    (tmp_path / "x.case.json").write_text('{"id": "x"}')
    assert cli(["conformance", "run", "--adapter", "mlf-spec", "--vectors", str(tmp_path)]) == 2
    assert str(tmp_path / "x.case.json") in capsys.readouterr().err


def test_the_cli_writes_the_page_the_badge_and_the_index(reports, tmp_path):
    d, good, bad = reports
    out = tmp_path / "r.html"
    assert cli(["conformance", "report", str(d / "good.jsonl"), str(d / "bad.jsonl"), "--html", str(out),
                "--index", str(tmp_path / "i.json")]) == 0
    text = out.read_text(encoding="utf-8")
    assert "misbehaving-serve-wrong" in text and "conformance request" in text  # the reproducer is there
    doc = results.read_index((tmp_path / "i.json").read_text(), "i.json")
    assert [e["name"] for e in doc["implementations"]] == ["misbehaving-serve-wrong", "mlf-spec"]
    assert cli(["conformance", "report", str(d / "bad.jsonl"), "--badge", str(tmp_path / "b.svg")]) == 0
    assert "1/3 passed" in (tmp_path / "b.svg").read_text()
    assert cli(["conformance", "report", str(d / "bad.jsonl"), str(d / "good.jsonl"), "--badge",
                str(tmp_path / "c.svg")]) == 2


def test_the_html_page_in_a_real_headless_browser(reports, tmp_path):
    d, good, bad = reports
    hostile = json.loads(json.dumps(bad))
    for r in hostile:
        if r.get("id") == "params.valid.w-and-b":
            r["message"] = "<img src=x onerror=alert(1)> </script><b>bold</b>"
    page_file = tmp_path / "results.html"
    entries = [results.entry(good, reproduce=True), results.entry(hostile, reproduce=True)]
    good_col, bad_col = html._columns(entries)
    page_file.write_text(html.page(entries), encoding="utf-8")
    with browser_support.browser_page() as page:
        requests, errors, dialogs = [], [], []
        page.on("request", lambda r: requests.append(r.url))
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("dialog", lambda dlg: (dialogs.append(dlg.message), dlg.dismiss()))
        page.goto(page_file.as_uri())
        assert page.title() == "Conformance results"
        assert [u for u in requests if not u.startswith("file://")] == []  # self-contained
        assert not errors and not dialogs
        visible = 'details[data-row="failure"]:visible'
        assert page.locator(visible).count() == 2 and page.inner_text("#shown") == "2"
        cells = page.locator('#m-formats tr[data-format="params"] td')
        assert cells.all_inner_texts() == ["params", "3/3", "1/3"]
        # the hostile message is text, not markup
        assert page.locator("img").count() == 0 and page.locator("details b").count() == 0
        assert "<img src=x" in page.locator('details[data-row="failure"]:has-text("w-and-b")').text_content()
        # a failure opens to its diff and its reproducer
        failure = page.locator('details:has-text("params.valid.w-and-b")')
        failure.locator("summary").click()
        assert "tensors[0].shape" in failure.locator("pre.diff").inner_text()
        assert "conformance request" in failure.locator("pre.reproduce").inner_text()
        # filters: outcome, text, format, implementation
        page.select_option("#f-outcome", "flaky")
        assert page.locator(visible).count() == 1 and page.inner_text("#shown") == "1"
        page.select_option("#f-outcome", "")
        page.fill("#f-text", "w-and-b")
        assert page.locator(visible).count() == 1
        assert page.locator('#m-features tr[data-row="matrix"]:visible').count() == 0
        page.fill("#f-text", "")
        page.select_option("#f-format", "graph-json")
        assert page.locator(visible).count() == 0
        assert page.locator('#m-formats tr[data-row="matrix"]:visible').count() == 1
        page.select_option("#f-format", "")
        page.uncheck(f'input.impl[value="{bad_col}"]')
        assert page.locator(visible).count() == 0
        assert not page.locator(f'#m-formats th[data-impl="{bad_col}"]').is_visible()
        assert page.locator(f'#m-formats th[data-impl="{good_col}"]').is_visible()
        assert not page.locator(f'#summary tr[data-impl="{bad_col}"]').is_visible()
        assert not errors and not dialogs


def test_the_markdown_page_still_comes_from_the_same_report(reports, capsys):
    d, _, _ = reports
    assert cli(["conformance", "report", str(d / "bad.jsonl")]) == 0
    assert "# Compatibility: misbehaving-serve-wrong" in capsys.readouterr().out


def _synthetic(outcome: str, *, label: str = "", started: str = "2026-12-01T10:00:00+00:00", n: int = 59) -> list:
    """A run of one testee with ``n`` near-identical non-passing cases (numbers differ) and 10 passes."""
    run = {"type": "run", "mlf_spec": "0", "testee": "adapter:acme-params", "testee_info": {"version": "1.2"},
           "vectors": "installed", "started": started, "cases": n + 10, "mode": "persistent",
           **({"label": label} if label else {})}
    cases = [{"type": "case", "id": f"params.dtype.v0.26.float8.{i}-8", "format": "params", "role": "decode",
              "outcome": outcome, "seconds": 0.0, "message": f"tensors[0].dtype: expected code {i}, got {i + 1}"}
             for i in range(n)]
    cases += [{"type": "case", "id": f"params.valid.{i}", "format": "params", "role": "decode", "outcome": "pass",
               "seconds": 0.0} for i in range(10)]
    return [run, *cases]


def test_a_known_failure_that_now_fails_unexpectedly_is_newly_failing(tmp_path, capsys):
    # `report --compare known.jsonl fail.jsonl` where 59 cases went from known failure to failure printed
    # "0 newly failing ... 59 with another reason" and exited 0
    paths = []
    for name, outcome in (("known", "xfail"), ("fail", "fail")):
        p = tmp_path / f"{name}.jsonl"
        p.write_text("".join(json.dumps(r) + "\n" for r in _synthetic(outcome)))
        paths.append(str(p))
    diff = results.compare(report.read_report(paths[0]), report.read_report(paths[1]))
    assert len(diff["newly_failing"]) == 59 and diff["changed_reason"] == []
    assert cli(["conformance", "report", "--compare", *paths]) == 1
    assert capsys.readouterr().out.startswith(f"{paths[0]} -> {paths[1]}: 59 newly failing, 0 newly passing, "
                                              "0 with another reason")
    assert cli(["conformance", "report", "--compare", paths[1], paths[0]]) == 0  # failing -> known: not newly failing


def test_the_badge_and_the_summary_colour_by_unexpected_failures_only():
    # a run with 59 real failures and one with 59 known failures got the same yellow cell, and the badge was red for
    # the run whose every failure is known
    known_run, failing_run = results.entry(_synthetic("xfail")), results.entry(_synthetic("fail"))
    assert '#4c1' in results.badge(known_run) and "10/69 passed, 59 known failures" in results.badge(known_run)
    assert '#e05d44' in results.badge(failing_run)
    page = html.page([known_run, failing_run])
    cells = [line for line in page.splitlines() if line.startswith('<tr data-impl=')]
    assert 'class="cell all"' in cells[0] and 'class="cell none"' in cells[1]
    one = results.entry(_synthetic("xfail", n=1))
    assert "acme-params 1.2: 1 case</h3>" in html.page([one])
    assert "1 known failure" in results.badge(one) and "1 known failures" not in results.badge(one)


def test_two_runs_of_one_testee_are_labelled_and_near_identical_rows_grouped(tmp_path):
    a = results.entry(_synthetic("xfail", label="before", started="2026-12-01T10:00:00+00:00"))
    b = results.entry(_synthetic("fail", started="2026-12-01T11:30:00+00:00"))
    c = results.entry(_synthetic("fail", started="2026-12-01T12:00:00+00:00"))
    cols = html._columns([a, b, c])
    assert cols == ["acme-params 1.2 before", "acme-params 1.2 @ 2026-12-01 11:30:00", "acme-params 1.2 @ 2026-12-01 12:00:00"]
    text = html.page([a, b, c])
    assert text.count('<details data-row="failure"') == 3  # 3 x 59 cases: one group per run
    assert "59 cases like <code>params.dtype.v0.26.float8.0-8</code>" in text


def test_the_page_shows_what_failed_above_the_fold_in_a_real_browser(tmp_path):
    # the failures sat about 4,000 px down the page, below the matrices
    entries = [results.entry(_synthetic("xfail", label="known")), results.entry(_synthetic("fail", label="new"))]
    coverage = [{"format": "params", "feature": f"feature{i}", "value": f"v{j}", "passed": 5, "total": 5}
                for i in range(30) for j in range(5)]  # a long feature matrix, as a real run has
    for e in entries:
        e["coverage"] = coverage
    page_file = tmp_path / "results.html"
    page_file.write_text(html.page(entries), encoding="utf-8")
    with browser_support.browser_page() as page:
        page.set_viewport_size({"width": 1366, "height": 768})
        page.goto(page_file.as_uri())
        assert page.evaluate("document.documentElement.scrollHeight") > 3000  # the page is long
        first = page.locator('#unexpected ~ details[data-row="failure"]').first
        box = first.bounding_box()
        assert box is not None and box["y"] + box["height"] <= 768, box
        assert "59 cases like" in first.inner_text() and "failed" in first.inner_text().lower()
        link = page.locator('#summary a[href="#unexpected-1"]')
        assert link.inner_text() == "59"
        shot = tmp_path / "desktop.png"
        page.screenshot(path=str(shot))  # the first screen, as a user sees it
        assert shot.stat().st_size > 10_000
        # the summary's failing run is red, the all-known one green, in the pixels the browser drew
        colours = page.evaluate("""Array.from(document.querySelectorAll('#summary td.cell:nth-child(7)'))
            .map(td => getComputedStyle(td).backgroundColor)""")
        assert colours == ["rgb(223, 245, 216)", "rgb(248, 211, 204)"], colours


def test_conformance_run_keeps_its_label_on_the_run_line(tmp_path):
    out = tmp_path / "r.jsonl"
    assert cli(["conformance", "run", "--adapter", "mlf-spec", "--id", "params.valid.0-d", "--label", "nightly #42",
                "--quiet", "--report-json", str(out)]) == 0
    records = report.read_report(out)
    assert records[0]["label"] == "nightly #42"
    e = results.entry(records)
    assert e["label"] == "nightly #42" and html._columns([e])[0].endswith(" nightly #42")


def test_control_characters_from_a_testee_are_escaped_on_the_page():
    # the page wrote a testee's ESC, BEL and NUL raw (the Markdown page and the terminal show \uNNNN)
    records = _synthetic("fail", label="nightly\x00\x1b[0m", n=2)
    records[0]["testee"] = "adapter:<script>alert(1)</script>\x1b[31mred\x07"
    records[1]["message"] = "tensors[0].name: got '\x1b]8;;x\x07\u202e'"
    text = html.page([results.entry(records)])
    assert not [ch for ch in text if ch not in "\n\t" and (ord(ch) < 0x20 or 0x7f <= ord(ch) < 0xa0 or ch == "\u202e")]
    assert "&lt;script&gt;alert(1)&lt;/script&gt;\\u001b[31mred\\u0007" in text
    assert "nightly\\u0000\\u001b[0m" in text and "\\u001b]8;;x\\u0007\\u202e" in text
    assert text.count("<script") == 1  # the page's own


def _matrix_cells(page: str, matrix_id: str) -> list[tuple[str, str]]:
    """(class, passed/run) of every run's cell of one matrix of the page."""
    import re

    table = page.split(f'<table id="{matrix_id}">', 1)[1].split("</table>", 1)[0]
    return re.findall(r'<td data-impl="[^"]*" class="cell (\w+)"[^>]*>(\d+/\d+)</td>', table)


def test_the_feature_and_rule_rows_colour_by_unexpected_failures_only(tmp_path):
    # the Features and Rules tables coloured by passed/total: a run whose every failure is known showed red and
    # yellow rows while its badge and summary were green
    cmd = ["conformance", "run", "--testee", shlex.join(BAD + ["serve-wrong"]), "--id", "params.bound.*",
           "--id", "params.valid.*", "--quiet"]
    bare = tmp_path / "bare.jsonl"
    assert cli([*cmd, "--report-json", str(bare), "--report-html", str(tmp_path / "bare.html")]) == 1
    failed = [r["id"] for r in report.read_report(bare) if r.get("outcome") in ("fail", "error")]
    assert len(failed) > 10
    kf = tmp_path / "known.txt"
    kf.write_text("".join(f"{i}  the first shape is off by one\n" for i in failed), encoding="utf-8")
    page = tmp_path / "known.html"
    assert cli([*cmd, "--known-failures", str(kf), "--report-html", str(page)]) == 0
    assert not list(tmp_path.glob(".mlf-spec-run-*"))  # the scratch report is gone
    for name in ("known.html", "bare.html"):
        text = (tmp_path / name).read_text(encoding="utf-8")
        for matrix in ("m-features", "m-rules"):
            cells = _matrix_cells(text, matrix)
            classes = {c for c, _ in cells}
            assert cells and (classes == {"all"}) == (name == "known.html"), (name, matrix, sorted(classes))
            # the known run's green rows still say that not every case passed
            assert any(int(n.split("/")[0]) < int(n.split("/")[1]) for _, n in cells)
    # the summary record carries the count the colour comes from, per row
    rows = report.read_report(bare)[-1]["coverage"]
    assert sum(r["unexpected"] for r in rows if r["feature"] == "dialect") == len(failed)
    assert all(r["total"] - r["passed"] >= r["unexpected"] for r in rows)


def test_a_report_written_before_the_unexpected_count_is_coloured_by_passed_and_total():
    e = results.entry(_synthetic("xfail", n=3))
    e["coverage"] = [{"format": "params", "feature": "dialect", "value": "v0.26", "passed": 1, "total": 4}]
    assert _matrix_cells(html.page([e]), "m-features") == [("some", "1/4")]
    e["coverage"][0]["unexpected"] = 0
    assert _matrix_cells(html.page([e]), "m-features") == [("all", "1/4")]


def test_a_long_testee_name_keeps_the_page_within_a_desktop_screen(tmp_path):
    # a long testee name pushed the summary table past 1366 px; "1 groups of failures shown"
    records = _synthetic("fail", n=1)
    records[0]["testee"] = "adapter:" + "acme-params-reader-with-a-very-long-name" * 4
    records[0]["testee_info"]["version"] = "1.2.3+" + "g0123456789abcdef" * 4
    page_file = tmp_path / "results.html"
    page_file.write_text(html.page([results.entry(records), results.entry(_synthetic("xfail"))]), encoding="utf-8")
    with browser_support.browser_page() as page:
        page.set_viewport_size({"width": 1366, "height": 768})
        page.goto(page_file.as_uri())
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 1366, width
        assert page.locator("#filters span").first.inner_text() == "2 groups of failures shown"
        page.locator("input.impl").nth(1).uncheck()
        assert page.locator("#filters span").first.inner_text() == "1 group of failures shown"


def test_the_guide_results_block_runs(tmp_path, monkeypatch):
    # docs/conformance/guide.md section 7, command by command: the reports it names come from short runs of the
    # in-tree adapter (netron's and TVM's runs take minutes), every option and output as written
    import re

    guide = (ROOT / "docs" / "conformance" / "guide.md").read_text(encoding="utf-8")
    block = guide.split("## 7. Results to show", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(tmp_path)
    quick = ["--adapter", "mlf-spec", "--id", "params.valid.0-d", "--quiet"]
    for name in ("netron", "tvm", "before", "after"):
        assert cli(["conformance", "run", *quick, "--report-json", f"{name}.jsonl"]) == 0
    lines = [line.split("#", 1)[0].split() for line in block.splitlines() if line.strip()]
    assert len(lines) == 5
    for argv in lines:
        assert argv[0] == ".venv/bin/mlf-spec"
        argv = argv[1:]
        if argv[:2] == ["conformance", "run"]:
            argv = [a for a in argv if a not in ("--adapter", "netron")] + quick[2:] + ["--adapter", "mlf-spec"]
        assert cli(argv) == 0, argv
    for out in ("results.html", "conformance.svg", "results.json", "netron.html"):
        assert (tmp_path / out).stat().st_size > 0, out
    assert re.search(r"<td[^>]*>\d+/\d+</td>", (tmp_path / "netron.html").read_text(encoding="utf-8"))
