"""Faults as users meet them, injected by a proxy in front of nginx (not mocks of the client):
retries with backoff on 429/5xx, timeouts, truncated responses, a shard replaced between the
HEAD and the GET, a 404 for one shard, a redirect to another host, an HTML page served where a
shard should be. A server at fault: one line naming the URL and what failed, exit 2; the cache
at fault: a finding; nothing written on failure."""

from __future__ import annotations

import io
import os
import shutil
import time
import uuid
from contextlib import redirect_stderr, redirect_stdout

import pytest

from mlf_spec.cli import main
from mlf_spec.remote import check as remote_check


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def _one_line(err: str, *words: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mlf-spec: error: "), err
    for w in words:
        assert w in lines[0], (w, err)


def test_429_and_503_are_retried_with_backoff(proxy):
    proxy.faults.add("/ours/params_shard_1.bin", 429, 429)  # the HEAD refused twice
    proxy.faults.add("/ours/tensor-cache.json", 503, method="GET")
    report, _ = remote_check.check(f"{proxy.url}/ours")
    assert report.conformant
    asked = [p for p in proxy.faults.requests() if p == "/ours/params_shard_1.bin"]
    assert len(asked) == 3  # HEAD (429), HEAD (429), then HEAD answered


def test_a_server_error_that_persists_is_one_line_naming_the_url(proxy):
    proxy.faults.add("/ours/params_shard_0.bin", 503, method="GET", times=10)
    start = time.monotonic()
    code, _, err = _cli("check", f"{proxy.url}/ours", "--verify", "--retries", "2")
    _one_line(err, f"{proxy.url}/ours/params_shard_0.bin", "HTTP 503", "after 3 tries")
    assert code == 2 and time.monotonic() - start < 10


def test_a_timeout_is_one_line(proxy):
    proxy.faults.slow = 2.0
    proxy.faults.add("/ours/params_shard_2.bin", "slow", times=2)  # the HEAD (and a retry if there were one)
    code, _, err = _cli("check", f"{proxy.url}/ours", "--timeout", "0.5", "--retries", "0")
    assert code == 2
    _one_line(err, "params_shard_2.bin", "timed out")


def test_a_truncated_response(proxy):
    proxy.faults.add("/ours/tensor-cache.json", "truncate", method="GET")  # once: the retry reads it whole
    assert remote_check.check(f"{proxy.url}/ours")[0].conformant
    proxy.faults.add("/ours/params_shard_1.bin", "truncate", method="GET", times=10)
    code, _, err = _cli("check", f"{proxy.url}/ours", "--verify", "--retries", "1")
    assert code == 2
    _one_line(err, "params_shard_1.bin", "truncated")


@pytest.fixture()
def own_copy(caches):
    """A copy of ``ours`` under the served root that a test may change."""
    name = f"copy-{uuid.uuid4().hex[:8]}"
    shutil.copytree(caches["ours"], caches["root"] / name)
    yield name, caches["root"] / name
    shutil.rmtree(caches["root"] / name)


def test_a_shard_replaced_between_head_and_get(proxy, own_copy):
    name, folder = own_copy
    shard = folder / "params_shard_0.bin"

    def replace() -> None:  # the same bytes, rewritten: a new mtime, so nginx gives a new ETag
        data = shard.read_bytes()
        shard.write_bytes(data)
        os.utime(shard, (time.time() + 100, time.time() + 100))

    proxy.faults.add(f"/{name}/params_shard_0.bin", replace, method="GET")
    code, _, err = _cli("check", f"{proxy.url}/{name}", "--verify")
    assert code == 2
    _one_line(err, f"{name}/params_shard_0.bin", "changed on the server while it was read")


def test_a_404_for_one_shard_is_the_cache_at_fault(proxy):
    proxy.faults.add("/ours/params_shard_1.bin", 404, times=2)  # the HEAD (a 404 is not retried)
    code, out, _ = _cli("check", f"{proxy.url}/ours")
    assert code == 1 and "shard.missing" in out


def test_a_redirect_to_another_host_is_followed(proxy, web):
    other = web.replace("127.0.0.1", "localhost")
    for method in ("HEAD", "GET"):
        proxy.faults.add("/ours/params_shard_0.bin", ("redirect", other), method=method)
    report, info = remote_check.check(f"{proxy.url}/ours", verify=True)
    assert report.conformant and info["verified"]
    proxy.faults.add("/ours/params_shard_0.bin", ("redirect", other + "/nowhere"), method="GET")
    code, _, err = _cli("check", f"{proxy.url}/ours", "--verify")
    assert code == 2
    _one_line(err, "params_shard_0.bin", "404")


def test_an_html_page_served_where_a_shard_should_be(proxy):
    proxy.faults.add("/ours/params_shard_1.bin", "html", times=3)
    code, out, _ = _cli("check", f"{proxy.url}/ours")
    assert code == 1 and "remote.served-html" in out and "shard.size" in out


def test_nothing_is_written_when_a_read_fails(proxy, tmp_path):
    proxy.faults.add("/ours/params_shard_2.bin", 500, method="GET", times=10)
    code, _, err = _cli("cache", "convert", f"{proxy.url}/ours", str(tmp_path / "out"), "--retries", "1")
    assert code == 2 and os.listdir(tmp_path) == []
    _one_line(err, "params_shard_2.bin", "HTTP 500")
    code, _, err = _cli("cache", "manifest", f"{proxy.url}/ours", "-o", str(tmp_path / "m.json"), "--retries", "1")
    assert code == 2 and os.listdir(tmp_path) == []


def test_an_html_page_served_for_the_index(proxy):
    proxy.faults.add("/ours/tensor-cache.json", "html", times=3)
    code, _, err = _cli("check", f"{proxy.url}/ours")
    assert code == 2
    _one_line(err, "tensor-cache.json", "HTML page, not a cache index")


def test_the_hub_retries_a_503_and_names_the_url_of_one_that_persists(hub):
    repo = hub.repos["mlc-ai/tiny-ours"]
    hub.faults.add(f"/mlc-ai/tiny-ours/resolve/{repo.commit}/tensor-cache.json", 503, method="GET")
    code, _, err = _cli("check", "hf://mlc-ai/tiny-ours", "--retries", "1")
    assert code == 0, err
    hub.faults.add(f"/mlc-ai/tiny-ours/resolve/{repo.commit}/tensor-cache.json", 503, method="GET", times=5)
    code, _, err = _cli("check", "hf://mlc-ai/tiny-ours", "--retries", "1")
    assert code == 2
    _one_line(err, "hf://mlc-ai/tiny-ours/tensor-cache.json", "HTTP 503")


def test_a_hub_timeout(hub):
    hub.faults.slow = 2.0
    hub.faults.add("/api/models/mlc-ai/tiny-ours", "slow", times=3)
    code, _, err = _cli("check", "hf://mlc-ai/tiny-ours", "--timeout", "0.5", "--retries", "0")
    assert code == 2
    _one_line(err, "hf://mlc-ai/tiny-ours", "timed out")


def test_verify_reads_each_shard_by_one_head_and_one_get(proxy, caches):
    report, info = remote_check.check(f"{proxy.url}/ours", verify=True)
    shards = sorted(f"/ours/{p.name}" for p in caches["ours"].glob("*.bin"))
    assert report.conformant and info["verified"]
    # the GET's ETag is the HEAD's: the file is the one first seen, no HEAD again after it
    assert sorted(p for p in proxy.faults.requests("HEAD") if p.endswith(".bin")) == shards
    assert sorted(p for p in proxy.faults.requests("GET") if p.endswith(".bin")) == shards
    assert info["requests"] == 2 + 2 * len(shards)  # the index: one HEAD, one GET


@pytest.mark.parametrize("fault", ["no-length", 405])
def test_a_head_without_a_size_asks_for_the_first_byte(proxy, fault):
    proxy.faults.add("/ours/params_shard_3.bin", fault, method="HEAD")
    report, _ = remote_check.check(f"{proxy.url}/ours")
    assert report.conformant  # the size came from the Content-Range of a GET of bytes 0-0
    assert proxy.faults.requests("GET").count("/ours/params_shard_3.bin") == 1


def test_a_server_that_ignores_range_still_gives_the_records_bytes(proxy, caches):
    from mlf_spec import cache

    proxy.faults.add("/ours/params_shard_8.bin", "ignore-range", method="GET", times=20)
    local = cache.open(caches["ours"])
    with cache.open(f"{proxy.url}/ours") as remote:
        names = [t.name for t in remote.index.shards[8].tensors]
        assert len(names) > 1  # records at offset 0 and past it
        for name in names:
            assert remote.array(name).tobytes() == local.array(name).tobytes(), name
    assert proxy.faults.requests("GET").count("/ours/params_shard_8.bin") == len(names)
