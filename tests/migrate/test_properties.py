"""Properties of migrations over the generated strategies of every version and style
(mlf_spec.strategies: schema-valid metadata documents and archives as TVM wrote them):

* a migrated document validates as the target version; a migrated archive checks
  conformant (refusals only where the spec declares one);
* ``down(up(x)) == x`` (and ``up(down(x)) == x``) wherever the plan declares no loss;
* ``up(down(x))`` recovers ``x`` except exactly the declared losses (and marked derivations);
* a chain of steps equals the direct plan.

Archives come from ``archive_specs`` (what ``mlf_spec.strategies.mlf_archives`` draws and
builds), so that a failing example is reported as the model that was exported rather than
as tar bytes.
"""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from mlf_spec import archive, metadata, migrate
from mlf_spec import strategies as ms
from mlf_spec.errors import MigrationError
from mlf_spec.mlf.migrate_metadata import diff as _diff
from mlf_spec.mlf.strategies import ArchiveSpec, archive_specs, build_archive


def scaled(n: int) -> int:
    """``n`` examples under the dev profile, proportionally more under ci and fuzz."""
    return max(1, n * settings.default.max_examples // 100)


def expected_refusal(version: int, style: str, doc: dict, to: int) -> str | None:
    if style == "operator" and to < 4:
        return "v3_v4.operator_style"
    if version == 7 and style == "full-model" and len(doc["modules"]) > 1 and to < 7:
        return "v6_v7.several_modules"
    return None


def migrated(source, to: int):
    """(plan, result) with every loss accepted, or None when the migration is refused."""
    try:
        p = migrate.plan(source, to)
    except MigrationError as exc:
        return exc
    return p, migrate.apply(p, p.loss_names())


def records(doc: dict, style: str) -> dict[str, dict]:
    """Module name -> its record without the version key."""
    mods = doc["modules"] if style == "full-model" and "modules" in doc else {doc["model_name"]: doc}
    return {k: {x: y for x, y in v.items() if x != "version"} for k, v in mods.items()}


def overlaps(path: tuple, spots: list[tuple]) -> bool:
    return any(path[:len(s)] == s or s[:len(path)] == path for s in spots)


def check_recovered(x: dict, back: dict, style: str, down: migrate.Plan, up: migrate.Plan) -> None:
    """``back`` (up(down(x))) differs from ``x`` exactly where a loss was declared (or a
    value was derived and marked), and every dropped loss shows."""
    spots: dict = {}
    for loss in down.losses + up.losses:
        if loss.part == "metadata":
            spots.setdefault(loss.module, []).append(loss.path)
    for d in up.derived:
        spots.setdefault(d.module, []).append(d.path)
    a, b = records(x, style), records(back, style)
    assert a.keys() == b.keys()
    diffs = {name: _diff(a[name], b[name]) for name in a}
    for name, paths in diffs.items():
        for path in paths:
            assert overlaps(path, spots.get(name, [])), (name, path, down.loss_names(), up.loss_names())
    for loss in down.losses:
        if loss.part == "metadata" and loss.kind == "dropped":
            assert overlaps(loss.path, diffs.get(loss.module, [])), loss


# ----------------------------------------------------------------- documents


@settings(max_examples=scaled(150))
@given(ms.mlf_metadata())
def test_documents_migrate_to_every_version_and_back(drawn):
    version, style, doc = drawn
    doc = json.loads(metadata.dumps(doc, version, style))
    for to in metadata.VERSIONS:
        out = migrated(doc, to)
        if isinstance(out, MigrationError):
            assert out.refusal == expected_refusal(version, style, doc, to), out
            continue
        assert expected_refusal(version, style, doc, to) is None
        p, r = out
        new = metadata.from_document(r.document, version=to, style=style)  # strict: the target's model
        assert new.dumps() == r.to_bytes()
        q, back = migrated(r.document, version)
        if not p.losses and (to > version or not q.derived):  # down(up(x)) == x where no loss is declared
            assert back.document == doc, (version, to)
            assert not [x for x in q.losses if x.kind == "dropped"]
        if to < version:
            check_recovered(doc, back.document, style, p, q)


@settings(max_examples=scaled(80))
@given(ms.mlf_metadata(), st.data())
def test_documents_chain_of_steps_equals_the_direct_plan(drawn, data):
    version, style, doc = drawn
    to = data.draw(st.sampled_from(metadata.VERSIONS), label="to")
    lo, hi = sorted((version, to))
    mid = data.draw(st.integers(lo, hi), label="via")
    direct = migrated(doc, to)
    if isinstance(direct, MigrationError):
        return
    first = migrated(doc, mid)
    second = migrated(first[1].document, to)
    assert second[1].document == direct[1].document
    assert first[0].losses + second[0].losses == direct[0].losses
    assert first[0].derived + second[0].derived == direct[0].derived
    assert [s.name for s in first[0].steps + second[0].steps] == [s.name for s in direct[0].steps]


# ----------------------------------------------------------------- archives


def members(data: bytes) -> dict:
    with archive.open(data) as a:
        return {m.path: (m.is_dir, m.read(), m.mode, m.uid, m.gid, m.uname, m.gname, m.mtime) for m in a.members}


def check_members_recovered(x: bytes, back: bytes, down: migrate.Plan) -> None:
    lost = {loss.where[2:] for loss in down.losses if loss.part == "files"}
    a, b = members(x), members(back)
    assert not set(b) - set(a), sorted(set(b) - set(a))
    for path in set(a) - set(b):
        assert path in lost or any(p.startswith(path + "/") for p in lost), path
    for path in set(a) & set(b):
        if path != "metadata.json":
            assert a[path] == b[path], path


@settings(max_examples=scaled(100))
@given(archive_specs())
def test_archives_migrate_to_every_version_and_back(spec: ArchiveSpec):
    version, style, data = spec.version, spec.style, build_archive(spec).to_bytes()
    doc = json.loads(archive.open(data).read("metadata.json"))
    for to in metadata.VERSIONS:
        if to == version:
            continue
        out = migrated(data, to)
        if isinstance(out, MigrationError):
            assert out.refusal == expected_refusal(version, style, doc, to), out
            continue
        p, r = out
        assert r.report.conformant and r.report.version == to
        assert r.report.codes() in ([], ["codegen.none"]), r.report.codes()
        if r.report.codes():
            assert "v4_v5.cpp_sources" in p.loss_names()
        down_or_up = r.to_bytes()
        q, back = migrated(down_or_up, version)
        if not p.losses and (to > version or not q.derived):
            assert back.to_bytes() == data, (version, to)  # byte for byte
        if to < version:
            check_members_recovered(data, back.to_bytes(), p)
            check_recovered(doc, back.document, style, p, q)
        p.close()
        q.close()


@settings(max_examples=scaled(50))
@given(archive_specs(), st.data())
def test_archives_chain_of_steps_equals_the_direct_plan(spec: ArchiveSpec, data):
    tar = build_archive(spec).to_bytes()
    to = data.draw(st.sampled_from(metadata.VERSIONS), label="to")
    lo, hi = sorted((spec.version, to))
    mid = data.draw(st.integers(lo, hi), label="via")
    direct = migrated(tar, to)
    if isinstance(direct, MigrationError):
        return
    first = migrated(tar, mid)
    second = migrated(first[1].to_bytes(), to)
    assert second[1].to_bytes() == direct[1].to_bytes()
    assert [x.name for x in first[0].losses + second[0].losses] == [x.name for x in direct[0].losses]
    assert first[0].derived + second[0].derived == direct[0].derived
