"""The migration engine's own structure (issue 21 item 5): the operation table matches the
spec language's list of operation kinds, the steps it runs are frozen dataclasses built from
the generated data, and its errors declare the fields they carry."""

from __future__ import annotations

import dataclasses

import pytest
from mlf_spec.generated import mlf_migrations

from mlf_spec.errors import Issue, LossRefusedError, MigrationError, MlfError, ValidationError
from mlf_spec.mlf import migrate, migrate_ir, migrate_metadata


def test_the_operation_table_covers_exactly_the_kinds_the_spec_declares():
    kinds = set(migrate_metadata.DOCUMENT_OPS) | set(migrate_metadata.RECORD_OPS)
    assert kinds == set(mlf_migrations.METADATA_OPS) == set(migrate_ir.METADATA_OPS)
    assert not set(migrate_metadata.DOCUMENT_OPS) & set(migrate_metadata.RECORD_OPS)
    used = {it[d]["op"] for s in mlf_migrations.STEPS for it in s["metadata"] for d in ("up", "down")}
    assert used <= kinds  # every kind the steps use has its function


@pytest.mark.parametrize("document, record, declared, words", [
    ({"wrap"}, {"rename"}, {"wrap", "rename", "split"}, "without a function: ['split']"),
    ({"wrap"}, {"rename", "twist"}, {"wrap", "rename"}, "not declared by the spec: ['twist']"),
    ({"wrap", "drop"}, {"drop"}, {"wrap", "drop"}, "in both tables: ['drop']"),
])
def test_a_table_that_departs_from_the_spec_is_refused(document, record, declared, words):
    with pytest.raises(RuntimeError, match=words.replace("[", r"\[").replace("]", r"\]")):
        migrate_metadata.check_tables(document, record, declared)
    migrate_metadata.check_tables(document - record, record, (document - record) | record)  # the repaired one passes


def test_the_runtime_steps_are_frozen_dataclasses_of_the_generated_data():
    assert set(migrate_ir.STEPS) == set(migrate.STEPS)
    for key, data in migrate.STEPS.items():
        step = migrate_ir.STEPS[key]
        assert (step.name, step.source, step.target) == (data["name"], data["from"], data["to"])
        assert list(step.losses) == list(data["losses"]) and list(step.refusals) == list(data["refusals"])
        assert [it.id for it in step.metadata] == [it["id"] for it in data["metadata"]]
        assert [it.id for it in step.files] == [it["id"] for it in data["files"]]
        for it, raw in zip(step.metadata, data["metadata"], strict=True):
            for d in ("up", "down"):
                op, want = getattr(it, d), raw[d]
                assert op.op == want["op"] and op.summary == want["summary"]
                assert op.path == tuple(want.get("path", ())) and op.losses == tuple(want.get("losses", ()))
                assert op.has_default == ("default" in want)
        for it, raw in zip(step.files, data["files"], strict=True):
            assert it.up.entry == raw["up"]["entry"] and dict(it.down.set) == raw["down"].get("set", {})
    step = migrate_ir.STEPS[(6, 7)]
    with pytest.raises(dataclasses.FrozenInstanceError):
        step.name = "x"  # type: ignore[misc]  # the point: a frozen dataclass refuses it
    with pytest.raises(TypeError):
        step.losses["x"] = step.losses[next(iter(step.losses))]  # type: ignore[index]  # read-only mapping


def test_errors_declare_their_fields():
    e = MigrationError("m")
    assert (e.refusal, e.source_version, e.style, e.kind) == (None, None, None, None)
    assert e.of_source(5, "full_model", "archive") is e and (e.source_version, e.style, e.kind) == (
        5, "full_model", "archive")
    r = LossRefusedError("m", losses=("v5_v6.x",), file="f")
    assert isinstance(r, MigrationError) and r.losses == ["v5_v6.x"] and r.file == "f" and r.refusal is None
    v = ValidationError("m", issues=[Issue("a", "bad")], field="a")
    assert v.issues == [Issue("a", "bad")] and ValidationError("m").issues == []
    assert isinstance(v, MlfError)


def test_a_refusal_names_itself():
    e = migrate._refusal(migrate_ir.STEPS[(6, 7)], "several_modules", "the document has 2 modules")
    assert e.refusal == "v6_v7.several_modules" and str(e).startswith("impossible: v6_v7.several_modules: ")
