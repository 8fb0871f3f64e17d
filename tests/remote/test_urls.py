"""What a remote source names."""

from __future__ import annotations

import pytest

from mlf_spec.errors import MlfError
from mlf_spec.remote.urls import is_remote, parse


def test_hub_forms():
    loc = parse("hf://mlc-ai/Llama-3-8B-q4f16_1-MLC")
    assert (loc.kind, loc.repo_id, loc.revision, loc.path, loc.repo_type) == ("hf", "mlc-ai/Llama-3-8B-q4f16_1-MLC",
                                                                              None, "", "model")
    loc = parse("hf://datasets/acme/w@refs%2Fpr%2F3/sub/dir/ndarray-cache.json")
    assert (loc.repo_type, loc.repo_id, loc.revision, loc.path, loc.names_index) == (
        "dataset", "acme/w", "refs/pr/3", "sub/dir/ndarray-cache.json", True)


@pytest.mark.parametrize("bad", ["hf://", "hf://onlyorg", "hf://org/repo@", "hf://org/repo/../x"])
def test_bad_hub_sources(bad):
    with pytest.raises(MlfError):
        parse(bad)


def test_urls_and_paths():
    assert is_remote("https://x/y") and is_remote("s3://b/k") and is_remote("memory://m")
    assert not is_remote("weights/") and not is_remote("C:\\weights") and not is_remote("file:///tmp/x")
    assert parse("https://cdn/x/tensor-cache.json").kind == "http" and parse("gs://b/x").kind == "fsspec"
