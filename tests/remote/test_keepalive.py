"""HTTP(S) connections are kept and reused (issue 29: not one TCP handshake per request, as curl
in a loop): counted where they are accepted, by the fault proxy in front of nginx. Servers that
end kept connections (``Connection: close``, a keep-alive timeout, a close without notice) give
the same result, with no failure and no retry (``retries=0``: a retry would be an error)."""

from __future__ import annotations

import io
import time
from contextlib import redirect_stderr, redirect_stdout

from mlf_spec.cli import main
from mlf_spec.remote import check as remote_check
from mlf_spec.remote.cache import _HEADS, open_remote
from mlf_spec.remote.stores import Options
from mlf_spec.remote.verify import JOBS, digests

#: the most requests in flight at once: the HEADs of the shards, or --verify's streams
_AT_ONCE = max(_HEADS, JOBS)


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def _shards(caches) -> list[str]:
    return sorted(f"/many/{p.name}" for p in caches["many"].glob("*.bin"))


def test_a_check_of_many_shards_opens_as_many_connections_as_requests_in_flight(proxy, caches):
    shards = _shards(caches)
    assert len(shards) >= 24
    report, info = remote_check.check(f"{proxy.url}/many", verify=True)
    assert report.conformant and info["verified"]
    assert info["requests"] == 2 + 2 * len(shards)  # the index's HEAD and GET, each shard's HEAD and GET
    assert len(proxy.faults.requests()) == info["requests"]
    # each request its own connection would be 2 + 2 * 32 = 66
    assert 1 <= proxy.server.accepted <= _AT_ONCE, proxy.server.accepted


def test_verify_streams_over_the_connections_the_heads_left(proxy, caches):
    with open_remote(f"{proxy.url}/many") as lazy:
        lazy.stats()
        after_heads = proxy.server.accepted
        assert after_heads <= _HEADS
        found = digests(lazy, jobs=JOBS)
        assert len(found) == len(_shards(caches))
        assert proxy.server.accepted == after_heads  # every GET on a kept connection
        assert lazy.store.connections.opened == after_heads  # the client's own count agrees


def test_a_server_that_closes_every_connection_is_read_as_before(proxy, caches):
    proxy.faults.keepalive = False  # "Connection: close" on every answer
    report, info = remote_check.check(f"{proxy.url}/many", verify=True, options=Options(retries=0))
    assert report.conformant and info["verified"]
    assert proxy.server.accepted == info["requests"] == 2 + 2 * len(_shards(caches))


def test_connections_the_server_closed_while_idle_are_replaced_without_a_retry(proxy, caches):
    proxy.faults.idle = 0.3  # a keep-alive timeout, as nginx's keepalive_timeout
    with open_remote(f"{proxy.url}/many", options=Options(retries=0)) as lazy:
        lazy.stats()
        kept = proxy.server.accepted
        time.sleep(1.0)  # every kept connection is closed by the server meanwhile
        found = digests(lazy, jobs=JOBS)
    assert len(found) == len(_shards(caches))
    assert proxy.server.accepted > kept  # new connections: the kept ones were found closed
    assert sorted(p for p in proxy.faults.requests("GET") if p.endswith(".bin")) == _shards(caches)


def test_a_connection_closed_after_an_answer_without_notice_is_replaced_without_a_retry(proxy, caches):
    for path in _shards(caches):  # each HEAD answered, then its connection closed: the next request on it fails
        proxy.faults.add(path, "drop", method="HEAD")
    code, out, err = _cli("check", f"{proxy.url}/many", "--verify", "--retries", "0")
    assert code == 0 and err == "", err
    assert "md5sum checked" in out, out
    assert sorted(p for p in proxy.faults.requests("GET") if p.endswith(".bin")) == _shards(caches)
    assert sorted(p for p in proxy.faults.requests("HEAD") if p.endswith(".bin")) == _shards(caches)


def test_redirects_to_another_host_keep_both_hosts_connections(proxy, web, caches):
    other = web.replace("127.0.0.1", "localhost")  # nginx: another host and port
    for path in _shards(caches):
        proxy.faults.add(path, ("redirect", other), method="GET")
    with open_remote(f"{proxy.url}/many", options=Options(retries=0)) as lazy:
        found = digests(lazy, jobs=JOBS)
        opened = lazy.store.connections.opened
    assert len(found) == len(_shards(caches))
    assert all(d.md5 == s.md5sum for d, s in zip((found[i] for i in sorted(found)), lazy.index.shards))
    # the 302s' bodies were read: the proxy's connections kept; nginx's too
    assert proxy.server.accepted <= _AT_ONCE
    assert proxy.server.accepted < opened <= 2 * _AT_ONCE


def test_redirects_are_followed_ten_times_at_most(proxy):
    shard = "/many/params_shard_3.bin"
    proxy.faults.add(shard, ("redirect", proxy.url), method="GET", times=10)  # to itself, ten times
    assert remote_check.check(f"{proxy.url}/many", verify=True, options=Options(retries=0))[0].conformant
    proxy.faults.add(shard, ("redirect", proxy.url), method="GET", times=11)
    code, _, err = _cli("check", f"{proxy.url}/many", "--verify", "--retries", "0")
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("mlf-spec: error: "), err
    assert shard in lines[0] and "redirected more than 10 times" in lines[0], err


def test_https_pays_a_tls_handshake_per_connection_not_per_request(web, caches, tmp_path, monkeypatch):
    from tests.support import remote_servers

    pem = remote_servers.self_signed(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(pem))  # the client trusts the test's certificate, as its CA
    with remote_servers.fault_proxy(web, tls=pem) as tls:
        assert tls.url.startswith("https://")
        report, info = remote_check.check(f"{tls.url}/many", verify=True, options=Options(retries=0))
        assert report.conformant and info["verified"]
        assert info["requests"] == 2 + 2 * len(_shards(caches)) == len(tls.faults.requests())
        assert 1 <= tls.server.accepted <= _AT_ONCE, tls.server.accepted


def test_a_redirect_to_an_invalid_url_is_one_line(proxy):
    # a Location the URL parser refuses ('http://[bad...', a port past 65535) gave "ValueError: Invalid IPv6 URL"
    shard = "/many/params_shard_3.bin"
    for base, why in (("http://[bad", "Invalid IPv6 URL"), ("http://127.0.0.1:65536", "Port out of range")):
        proxy.faults.add(shard, ("redirect", base), method="GET", times=1)
        code, _, err = _cli("check", f"{proxy.url}/many", "--verify", "--retries", "0")
        lines = err.strip().splitlines()
        assert code == 2 and len(lines) == 1 and "not a valid URL" in lines[0] and why in lines[0], err
