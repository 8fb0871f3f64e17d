"""The `migration` spec kind: mistakes are reported with file, line and field path; the
generated data and changelog pages follow the spec files."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

from specgen.load import load  # noqa: E402
from specgen.yamlload import SpecError  # noqa: E402


def _tree(tmp_path: Path, rel: str, edit) -> Path:  # noqa: ANN001
    spec = tmp_path / "spec"
    shutil.copytree(ROOT / "spec", spec)
    p = spec / rel
    if edit is None:
        p.unlink()
    else:
        new = edit(p.read_text())
        assert new != p.read_text(), "the edit did not apply"
        p.write_text(new)
    return spec


def _error(tmp_path: Path, rel: str, edit) -> SpecError:  # noqa: ANN001
    with pytest.raises(SpecError) as err:
        load(_tree(tmp_path, rel, edit))
    return err.value


CASES = [
    ("v1_v2.yaml", lambda s: s.replace("path: memory.functions, value", "path: memory.functons, value"),
     "has no key 'functons' in version 2"),
    ("v6_v7.yaml", lambda s: s.replace("entry: relay, to: relay_module", "entry: relay_txt, to: relay_module"),
     "unknown layout entry 'relay_txt'"),
    ("v4_v5.yaml", lambda s: s.replace("down: {op: rename, path: executors, to: runtimes}",
                                       "down: {op: rename, path: executors, to: runtime}"),
     "has no key 'runtime' in version 4"),
    ("v4_v5.yaml", lambda s: s.replace("down: {op: rename, path: executors, to: runtimes}",
                                       "down: {op: drop, path: executors, losses: [standalone_crt]}"),
     "drop is not an inverse of rename"),
    ("v1_v2.yaml", lambda s: s.replace("losses: [memory_functions]}\n    down: {op: drop",
                                       "losses: [memory_functionz]}\n    down: {op: drop"),
     "loss 'memory_functionz' is not declared"),
    ("v6_v7.yaml", lambda s: s.replace("losses:\n  - name: main_io", "losses:\n  - name: unused\n    doc: x.\n"
                                       "    down: y.\n  - name: main_io"),
     "no down operation incurs loss 'unused'"),
    ("v4_v5.yaml", lambda s: re.sub(r"  - id: executors\n.*?\n  - id: external", "  - id: external", s, flags=re.S),
     "full_model.executors is absent in version 4 and list[str] in version 5, but no up operation handles it"),
    ("v6_v7.yaml", lambda s: re.sub(r"  - id: graph\n.*?\n  - id: template_crt", "  - id: template_crt", s,
                                    flags=re.S),
     "entry 'graph_v5' (full-model) of version 6 is not in version 7, but no up operation moves or drops it"),
    ("v6_v7.yaml", lambda s: s.replace("down: {op: drop, entry: template_platform, losses: [templates]}",
                                       "down: {op: drop, entry: template_platform}"),
     "dropping files is a loss: declare `losses`"),
    ("v2_v3.yaml", lambda s: s.replace("name: v2_v3", "name: v2_v4"), "the name of the 2 -> 3 step is 'v2_v3'"),
    ("v3_v4.yaml", lambda s: s.replace("to: 4", "to: 5"), "a migration connects consecutive versions"),
    ("v3_v4.yaml", lambda s: s.replace("direction: down\n    style: operator", "direction: down"),
     "operator documents of version 4 have no form in version 3: declare a refusal"),
    ("v6_v7.yaml", lambda s: s.replace("derivation: main_outputs}", "derivation: main_outputz}"),
     "derive names a derivation (with a deriver) declared in the file"),
    ("v1_v2.yaml", lambda s: s.replace("to: memory.sids, omit_empty", "to: memory.sids, omitempty"),
     "unknown key 'omitempty'"),
    ("v2_v3.yaml", lambda s: s.replace("up: {op: move, entry: object_v1, to: object}",
                                       "up: {op: move, entry: object_v1, to: source}"),
     "object_v1 holds object_file, source holds c_source"),
    ("v5_v6.yaml", lambda s: s.replace("to: source_ext, set: {src_ext: c}}", "to: source_ext}"),
     "{src_ext} of source_ext has no value: give it in `set`"),
]


@pytest.mark.parametrize("rel, edit, message", CASES, ids=[c[2][:40] for c in CASES])
def test_spec_mistakes_are_reported_with_file_and_line(tmp_path, rel, edit, message):
    err = _error(tmp_path, f"migrations/{rel}", edit)
    assert message in str(err)
    assert err.file == f"spec/migrations/{rel}" and err.line is not None


def test_every_step_needs_a_file(tmp_path):
    err = _error(tmp_path, "migrations/v3_v4.yaml", None)
    assert "must cover every step; missing: v3_v4" in str(err)


def test_generated_data_and_pages_follow_the_spec():
    from mlf_spec.generated import mlf_migrations

    assert [s["name"] for s in mlf_migrations.STEPS] == ["v1_v2", "v2_v3", "v3_v4", "v4_v5", "v5_v6", "v6_v7"]
    assert "v5_v6.target_device_type" in mlf_migrations.LOSSES
    docs = ROOT / "generated" / "docs"
    index = (docs / "index.md").read_text()
    for s in mlf_migrations.STEPS:
        page = (docs / f"migrate_{s['name']}.md").read_text()
        assert f"(migrate_{s['name']}.md)" in index
        assert "## Upgrade: version" in page and "## Downgrade: version" in page
        for name in s["losses"]:
            assert f"`{s['name']}.{name}`" in page
    assert "(mlf_migrations.md)" in index
    overview = (docs / "mlf_migrations.md").read_text()
    assert "| [6 ↔ 7](migrate_v6_v7.md) | — | `v6_v7.main_io`, `v6_v7.templates` |" in overview
