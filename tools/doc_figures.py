"""The figures of the conformance docs (docs/conformance/guide.md, protocol.md, the README's count), made from runs
and from the spec, never typed by hand.

    python tools/doc_figures.py            # run what the figures come from and rewrite them
    python tools/doc_figures.py --check    # exit 1 if a figure that needs no timing is stale

A figure sits between ``<!-- figure NAME -->`` and ``<!-- /figure -->``. Counts come from runs
(the reference testee over the installed suite, the examples of the guide, apache-tvm's entry
of docs/conformance/results.json), tables from the vectors and the spec; timings from the run
that made the page. The tests compare every count with a fresh run (:func:`stable`) in the
tests that make those runs anyway (test_conformance_examples, test_doc_figures).
"""

from __future__ import annotations

import contextlib
import io
import re
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs" / "conformance"
EXAMPLES = ROOT / "examples" / "conformance"
_BLOCK = re.compile(r"(<!-- figure (?P<name>[a-z0-9-]+) -->)(?P<body>.*?)(<!-- /figure -->)", re.S)
_TIMING = re.compile(r"\b\d+(\.\d+)? (s|seconds|cases per second)\b")


def figures(path: Path) -> dict[str, str]:
    """The figures of a page by name."""
    return {m.group("name"): m.group("body") for m in _BLOCK.finditer(path.read_text(encoding="utf-8"))}


def stable(text: str) -> str:
    """A figure without its timings (what a fresh run must reproduce exactly)."""
    return _TIMING.sub("<time>", text)


def write(path: Path, values: dict[str, str]) -> list[str]:
    """Put ``values`` into the figures of ``path``; return the names that changed."""
    text = path.read_text(encoding="utf-8")
    changed = []

    def put(m: re.Match) -> str:
        name = m.group("name")
        if name not in values or values[name] == m.group("body"):
            return m.group(0)
        changed.append(name)
        return m.group(1) + values[name] + m.group(4)

    new = _BLOCK.sub(put, text)
    if new != text:
        path.write_text(new, encoding="utf-8")
    return changed


# ----------------------------------------------------------------------------- from the vectors and the spec


def suite_size() -> str:
    """Cases of the installed suite."""
    from mlf_spec.conformance.vectors import load_suite

    return str(len(load_suite()))


def scope_table() -> str:
    """Every scope key and value the vectors use, per format."""
    from mlf_spec.conformance.vectors import load_suite, scope_list

    values: dict[tuple[str, str], set[str]] = defaultdict(set)
    for c in load_suite():
        for key, value in c.scope.items():
            values[(c.format, key)].update(scope_list(value))

    def order(v: str) -> tuple:
        nums = re.findall(r"\d+", v)
        return (0, tuple(int(n) for n in nums)) if nums else (1, (v,))

    lines = ["", "| format | key | values the vectors use |", "|---|---|---|"]
    for (fmt, key), vals in sorted(values.items()):
        lines.append(f"| {fmt} | `{key}` | {', '.join(f'`{v}`' for v in sorted(vals, key=order))} |")
    return "\n".join(lines) + "\n"


def _rules_with_eras() -> list[tuple[str, str, str, str, str]]:
    """(spec file, struct, rule or field, since, until) of every element with a TVM version bound."""
    import yaml

    rows = []
    for path in sorted((ROOT / "spec" / "binary").glob("blob_*.yaml")) + [ROOT / "spec" / "binary" / "payloads.yaml"]:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        for struct in doc.get("structs", []):
            for kind in ("invariants", "fields"):
                for el in struct.get(kind) or []:
                    if isinstance(el, dict) and ("since" in el or "until" in el):
                        rows.append((path.stem, struct["name"], el["name"], str(el.get("since", "")),
                                     str(el.get("until", ""))))
    return rows


def era_table() -> str:
    """Per era rule of the blob grammars: whether it applies at each `era` value the vectors send."""
    from mlf_spec.conformance.vectors import load_suite

    def ver(v: str) -> tuple[int, ...]:
        return tuple(int(x) for x in v.split("."))

    sent: dict[str, set[str]] = defaultdict(set)
    for c in load_suite(formats=["blob"]):
        sent[c.options["layout"]].add(c.options["era"])
    newest = {"legacy": "0.21", "ffi": "0.27"}
    lines = ["", "| layout | rule or field | applies from | until | era values sent: applies | does not apply |",
             "|---|---|---|---|---|---|"]
    for file, struct, name, since, until in _rules_with_eras():
        layouts = ["legacy", "ffi"] if file == "payloads" else [file.split("_", 1)[1]]
        for layout in layouts:
            yes, no = [], []
            for era in sorted(sent[layout], key=lambda e: ver(newest[layout] if e == "latest" else e)):
                v = ver(newest[layout] if era == "latest" else era)
                (yes if (not since or v >= ver(since)) and (not until or v < ver(until)) else no).append(f"`{era}`")
            lines.append(f"| {layout} | `{struct}.{name}` | {since or '—'} | {until or '—'} | "
                         f"{', '.join(yes) or '—'} | {', '.join(no) or '—'} |")
    return "\n".join(lines) + "\n"


_CLAIM = re.compile(r'LengthError\(f"(\w+) claims \{_n\} elements \(\{_n \* (\d+)\}\+ bytes\)')
_DEF = re.compile(r"^def read_(\w+)\(")


def count_minimums() -> str:
    """The smallest size the reference counts per element when it checks a count against the
    bytes that remain, per grammar and record (read from the generated readers)."""
    rows: set[tuple[str, str, str, int]] = set()
    for path in sorted((ROOT / "generated").glob("*_fast.py")):
        record = ""
        for line in path.read_text(encoding="utf-8").splitlines():
            d = _DEF.match(line)
            if d:
                record = d.group(1)
            m = _CLAIM.search(line)
            if m:
                rows.add((path.stem[: -len("_fast")], record, m.group(1), int(m.group(2))))
    lines = ["", "| grammar | record | count of | bytes per element at least |", "|---|---|---|---|"]
    for grammar, record, field, size in sorted(rows):
        lines.append(f"| {grammar} | `{record}` | `{field}` | {size} |")
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- from runs


def reference_counts() -> tuple[str, float]:
    """The summary of the reference testee over the installed suite (in process): text, seconds."""
    from mlf_spec.conformance import adapters, report, runner, testee, vectors

    result = runner.run(testee.InProcess(adapters.load("mlf-spec")), vectors.load_suite(), progress=False)
    return report.summary_line(result.results, result.seconds), result.seconds


def install_block(summary: str) -> str:
    """The install block of the guide, ending with the reference run's summary line."""
    return ("\n```sh\n"
            "# from a checkout of mlf-spec (it is not published on PyPI):\n"
            "python3 -m venv .venv && .venv/bin/pip install .\n"
            "# or build a wheel once (python -m pip install build && python -m build) and install that anywhere:\n"
            "# .venv/bin/pip install dist/mlf_spec-*.whl\n"
            ".venv/bin/mlf-spec conformance run --adapter mlf-spec --quiet  # the reference passes everything\n"
            f"# {summary}\n```\n")


def python_example() -> str:
    """pytest's summary of examples/conformance/test_python_reader.py (timing left out)."""
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                           str(EXAMPLES / "test_python_reader.py")], capture_output=True, text=True, cwd=EXAMPLES)
    return python_example_summary(done.stdout)


def python_example_summary(stdout: str) -> str:
    """``189 passed, 1 xfailed`` from pytest's last line."""
    last = [x for x in stdout.strip().splitlines() if " passed" in x][-1]
    return re.sub(r"\s+in [\d.]+s.*$", "", last.strip("= ")).strip()


def python_block(summary: str) -> str:
    """The guide's block running the Python example."""
    return ("\n```sh\n.venv/bin/pip install pytest && .venv/bin/python -m pytest "
            f"examples/conformance/test_python_reader.py\n# {summary}\n```\n")


def js_example() -> str:
    """The summary line of the JavaScript example testee over the installed suite."""
    from mlf_spec.cli import main as cli

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        cli(["conformance", "run", "--testee", f"node {EXAMPLES / 'params_testee.js'}", "--known-failures",
             str(EXAMPLES / "params_testee.known-failures"), "--quiet"])
    return out.getvalue().strip().splitlines()[-1]


def js_block(summary: str) -> str:
    """The guide's block running the JavaScript example."""
    return ("\n```sh\n.venv/bin/mlf-spec conformance run --testee \"node examples/conformance/params_testee.js\" \\\n"
            f"    --known-failures examples/conformance/params_testee.known-failures\n# {summary}\n```\n")


def tvm_block() -> str:
    """The guide's block running apache-tvm, with the counts of its entry in results.json."""
    from mlf_spec.conformance import report, results

    doc = results.read_index((DOCS / "results.json").read_text(encoding="utf-8"), "docs/conformance/results.json")
    e = next(x for x in doc["implementations"] if x["name"] == "tvm")
    words = report.count_words(Counter(e["counts"]))
    return ("\n```sh\n.venv/bin/pip install apache-tvm\n"
            ".venv/bin/mlf-spec conformance run --adapter tvm -j 2 --memory-limit 4096\n"
            f"# {e['cases']} cases: {words} (docs/conformance/compat/tvm.md)\n```\n")


def throughput() -> str:
    """Cases per second of the reference testee, persistent (whole suite) and one-shot (20 cases)."""
    from mlf_spec.conformance import runner, testee, vectors

    cmd = [sys.executable, "-m", "mlf_spec", "conformance", "testee"]
    cases = vectors.load_suite()
    t0 = time.perf_counter()
    runner.run(testee.Persistent(cmd), cases, progress=False)
    persistent = len(cases) / (time.perf_counter() - t0)
    few = vectors.load_suite(ids=["params.valid.*"])[:20]
    t0 = time.perf_counter()
    runner.run(testee.OneShot(cmd), few, progress=False)
    one = len(few) / (time.perf_counter() - t0)
    return (f"mlf-spec's own testee answered {persistent:.0f} cases per second this way and {one:.1f} cases per "
            f"second one-shot (a Python process start each), measured by `python tools/doc_figures.py` on a busy "
            f"two-core machine: the whole suite of {len(cases)} cases takes {len(cases) / persistent:.1f} seconds "
            f"persistent instead of {len(cases) / one / 60:.0f} minutes one-shot")


def main(argv: list[str]) -> int:
    """Rewrite the figures (``--check``: only compare those without timings)."""
    sys.path.insert(0, str(ROOT))
    check = "--check" in argv
    guide, protocol = DOCS / "guide.md", DOCS / "protocol.md"
    fixed = {protocol: {"scope-values": scope_table(), "era-rules": era_table(), "count-minimums": count_minimums()},
             guide: {"suite-size": suite_size(), "tvm-run": tvm_block()}, ROOT / "README.md": {"suite-size": suite_size()}}
    if check:
        stale = [f"{p.name}: {n}" for p, vals in fixed.items() for n, v in vals.items() if figures(p).get(n) != v]
        for s in stale:
            print(f"stale figure {s}: run python tools/doc_figures.py", file=sys.stderr)
        return 1 if stale else 0
    summary, _ = reference_counts()
    fixed[guide].update({"install": install_block(summary), "python-example": python_block(python_example()),
                         "js-example": js_block(js_example())})
    fixed[protocol]["throughput"] = throughput()
    for path, vals in fixed.items():
        for name in write(path, vals):
            print(f"{path.relative_to(ROOT)}: {name}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))


__all__ = ["figures", "stable", "write"]
