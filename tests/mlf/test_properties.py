"""Property tests of MLF metadata and archives: valid artifacts of every version and style
check clean and round-trip exactly; every named way to break one gives MlfError or the
named finding, never another exception."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from mlf_spec.generated.mlf_check_findings import FINDINGS

from mlf_spec import archive, check, metadata
from mlf_spec import strategies as ms
from mlf_spec.errors import MlfError, UnsafeArchiveError, ValidationError


def scaled(n: int) -> int:
    """``n`` examples under the dev profile, proportionally more under ci and fuzz."""
    return max(1, n * settings.default.max_examples // 100)


@pytest.mark.parametrize("version", metadata.VERSIONS)
def test_valid_archives_of_each_version_check_clean(version):
    @settings(max_examples=scaled(12))
    @given(ms.mlf_archives(version))
    def run(arc):
        v, style, data = arc
        report = check.check(data)
        assert report.findings == [], [f.to_dict() for f in report.findings]
        assert (report.version, report.style) == (v, style)
        with archive.open(data) as a:
            assert a.to_bytes() == data
            assert metadata.parse(a.read("metadata.json")).dumps() == a.read("metadata.json")
    run()


@settings(max_examples=scaled(40))
@given(ms.mlf_metadata())
def test_schema_valid_documents_validate_strictly(doc):
    version, style, value = doc
    md = metadata.from_document(value, version=version, style=style)
    assert metadata.parse(md.dumps()).to_data() == json.loads(md.dumps())


@settings(max_examples=scaled(60))
@given(ms.broken_mlf_metadata())
def test_broken_metadata_is_a_validation_error(broken):
    assert broken.expect == "error"
    with pytest.raises(ValidationError):
        metadata.parse(broken.data)


UNREADABLE = [k for k in ms.MLF_ARCHIVE_BROKEN_KINDS if k.split(":")[0] in ("not_a_tar", "truncated", "unsafe")]
FINDING = [k for k in ms.MLF_ARCHIVE_BROKEN_KINDS if k not in UNREADABLE]


@pytest.mark.parametrize("kind", UNREADABLE)
def test_unreadable_kinds_raise_mlf_error(kind):
    @settings(max_examples=scaled(6))
    @given(ms.broken_mlf_archives((kind,)))
    def run(arc):
        assert arc.expect == "error"
        with pytest.raises(UnsafeArchiveError if kind.startswith("unsafe:") else MlfError):
            archive.open(arc.data)
    run()


@pytest.mark.parametrize("kind", FINDING)
def test_finding_kinds_have_their_finding(kind):
    what, _, target = kind.partition(":")
    want = "layout.missing" if what == "missing_member" else target
    if target == "metadata":
        want = "metadata.missing"

    @settings(max_examples=scaled(4))
    @given(ms.broken_mlf_archives((kind,)))
    def run(arc):
        assert arc.expect == "finding"
        report = check.check(arc.data)
        assert want in report.codes(), [f.to_dict() for f in report.findings]
        if FINDINGS[want]["severity"] == "error":
            assert not report.conformant
    run()


def test_every_broken_finding_in_the_spec_has_a_recipe():
    from mlf_spec.mlf.strategies import RECIPES

    assert sorted(RECIPES) == sorted(code for code, f in FINDINGS.items() if f["broken"])


@settings(max_examples=scaled(40))
@given(ms.mlf_archives(), ms.mlf_metadata())
def test_any_valid_metadata_in_any_archive_gives_a_report(arc, doc):
    """Cross-checks never crash on documents that are valid but unrelated to the files."""
    from mlf_spec.mlf.inspection import inspect_document

    _, _, data = arc
    version, style, value = doc
    with archive.open(data) as a:
        a.replace("metadata.json", metadata.dumps(value, version, style))
        report = check.check_archive(a)
        assert report.version == version
        problems: list[str] = []
        inspect_document(a, problems)


@settings(max_examples=scaled(30))
@given(ms.mlf_archives(), ms.broken_mlf_metadata())
def test_any_readable_archive_is_inspected_and_judged(arc, broken):
    """Read-only commands take any well-formed container: whatever metadata.json holds
    (here broken in a named way), inspect shows the archive with its deviations and the TVM
    reader verdict is given, never an exception."""
    from mlf_spec.generated.mlf_inspect_output_models import InspectReport

    from mlf_spec.mlf import readers
    from mlf_spec.mlf.inspection import inspect_document

    _, _, data = arc
    text = broken.data
    with archive.open(data) as a:
        a.replace("metadata.json", text)
        doc = inspect_document(a, [])
        InspectReport.model_validate(doc)
        assert doc["deviations"] and len(doc["files"]) == len(a.members)
        v = readers.verdict(a, "0.12")
        assert v.verdict in ("loads", "misreads", "rejects") and len(v.readers) == 7
