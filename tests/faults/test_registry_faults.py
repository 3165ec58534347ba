"""Fault matrix, registry rows: a real docker-registry behind a proxy that misbehaves.

Each row: the lookup is unknown (never "changed"), so nothing is deleted; the worker and
``/healthz`` survive; once the proxy behaves, the next pass deletes ``web-1``.
"""

from __future__ import annotations

import time

import pytest

from autoroll.core.decide import Reason, Verdict
from autoroll.core.images import TagRef
from autoroll.core.model import Digest, Unknown
from autoroll.registry import Limits, RegistryClient
from tests.faults.rig import REGISTRY_LIMITS, Rig, proxied_client
from tests.support.fault_proxy import FaultProxy, Listener, ProxyFault
from tests.support.registry import RegistryServer

pytestmark = pytest.mark.integration


def only_answer(rig: Rig) -> Digest | Unknown:
    (answer,) = rig.last.resolved.values()
    return answer


def unknown_reason(rig: Rig) -> str:
    answer = only_answer(rig)
    assert isinstance(answer, Unknown), answer
    return answer.reason


def client_for(proxy: FaultProxy, registry: RegistryServer) -> RegistryClient:
    return proxied_client(proxy, registry.user, registry.password)


# -- 429 with Retry-After ------------------------------------------------------------------------


def test_a_429_retry_after_silences_that_registry_until_it_passes(
    rig: Rig, registry: RegistryServer
) -> None:
    rig.proxy.fault = ProxyFault("status", status=429, headers=(("Retry-After", "3"),))
    rig.start()
    asked_at = rig.proxy.seen[-1].at
    assert unknown_reason(rig) == "rate-limited"
    assert rig.api.deletes == []
    rig.assert_survived()

    # The registry is healthy again, but it asked for 3 s: passes inside them send nothing.
    rig.proxy.fault = None
    sent = rig.proxy.count()
    rig.run_pass()
    assert unknown_reason(rig) == "backoff"
    assert rig.proxy.count() == sent
    assert rig.api.deletes == []
    assert rig.sample("autoroll_registry_errors_total", reason="backoff") == 1

    # Another registry is unaffected meanwhile.
    with FaultProxy(registry) as other:
        ref = TagRef(other.host, rig.repository, "latest")
        assert client_for(other, registry).resolve([ref]) == {ref: Digest(rig.new)}

    # Once the time has passed, the next pass asks again and rolls.
    time.sleep(max(0.0, asked_at + 3.1 - time.monotonic()))
    rig.assert_recovers()
    assert all(seen.at >= asked_at + 3 for seen in rig.proxy.seen[sent:])


def test_a_retry_after_beyond_the_cap_is_cut_to_the_cap(rig: Rig, registry: RegistryServer) -> None:
    now = [0.0]
    client = proxied_client(
        rig.proxy,
        registry.user,
        registry.password,
        limits=Limits(max_backoff_seconds=300),
        clock=lambda: now[0],
    )
    ref = TagRef(rig.proxy.host, rig.repository, "latest")
    rig.proxy.fault = ProxyFault("status", status=429, headers=(("Retry-After", "86400"),))
    first = client.resolve([ref])[ref]
    assert isinstance(first, Unknown) and first.reason == "rate-limited"
    rig.proxy.fault = None
    now[0] = 299.0
    answer = client.resolve([ref])[ref]
    assert isinstance(answer, Unknown) and answer.reason == "backoff"
    now[0] = 301.0
    assert client.resolve([ref])[ref] == Digest(rig.new)


# -- 5xx, slow, truncated, odd digest ------------------------------------------------------------


@pytest.mark.parametrize("status", [500, 502, 503])
def test_a_5xx_is_unknown_and_the_next_pass_rolls(rig: Rig, status: int) -> None:
    rig.proxy.fault = ProxyFault("status", status=status)
    rig.start()
    assert unknown_reason(rig) == "http-5xx"
    assert rig.api.deletes == []
    rig.assert_survived()
    rig.assert_recovers()  # no Retry-After: no quiet period, the next pass asks at once


def test_a_registry_slower_than_the_read_timeout_is_unknown_within_the_timeout(rig: Rig) -> None:
    rig.proxy.fault = ProxyFault("delay", seconds=4.0)
    started = time.monotonic()
    rig.start()
    elapsed = time.monotonic() - started
    assert unknown_reason(rig) == "timeout"
    assert elapsed < REGISTRY_LIMITS.read_seconds + 1.5, elapsed
    assert rig.api.deletes == []
    rig.assert_survived()
    rig.assert_recovers()


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b"HTTP/1.1 2", "network"),  # cut in the status line
        (b"HTTP/1.1 200 OK\r\nContent-Ty", "missing-digest"),  # cut before the digest
        # cut inside the digest: the half value is malformed, never a digest
        (b"HTTP/1.1 200 OK\r\nDocker-Content-Digest: sha256:01234", "malformed-digest"),
    ],
    ids=["in-status-line", "before-digest", "inside-digest"],
)
def test_a_connection_cut_mid_answer_is_unknown(rig: Rig, raw: bytes, expected: str) -> None:
    rig.proxy.fault = ProxyFault("truncate-headers", raw=raw)
    rig.start()
    assert unknown_reason(rig) == expected
    assert rig.api.deletes == []
    rig.assert_survived()
    rig.assert_recovers()


def test_an_index_body_cut_short_leaves_the_children_unknown(index_rig: Rig) -> None:
    rig = index_rig
    rig.proxy.fault = ProxyFault("truncate-body", method="GET")
    rig.start()
    assert only_answer(rig) == Digest(rig.new)  # the HEAD was fine
    (verdict,) = rig.last.decisions[0].containers
    assert (verdict.verdict, verdict.reason) == (Verdict.SKIPPED, Reason.CHILDREN_UNKNOWN)
    assert rig.api.deletes == []
    rig.assert_survived()
    # A failed index is not cached: the next pass fetches it whole, and the pod's digest
    # (a child of the *old* index) is not among the new children.
    rig.assert_recovers()


@pytest.mark.parametrize(
    "fault",
    [ProxyFault("status", status=500), ProxyFault("truncate-body")],
    ids=["500", "body-cut-short"],
)
def test_a_failed_get_of_the_pods_manifest_leaves_its_content_unknown(
    rig: Rig, fault: ProxyFault
) -> None:
    """The pod runs ``old``: after the HEAD and the target's GETs, the pod's own manifest is
    fetched to compare image configs. That GET failing makes the pod unknown, never stale."""
    rig.proxy.fault = ProxyFault(fault.kind, status=fault.status, method="GET", path=rig.old)
    rig.start()
    assert only_answer(rig) == Digest(rig.new)
    (verdict,) = rig.last.decisions[0].containers
    assert (verdict.verdict, verdict.reason) == (Verdict.SKIPPED, Reason.CONTENT_UNKNOWN)
    assert rig.api.deletes == []
    rig.assert_survived()
    # Not cached: the next pass fetches it, finds the old config, and rolls.
    rig.assert_recovers()


@pytest.mark.parametrize(
    "header",
    ["sha512:" + "ab" * 64, "sha256:" + "A" * 64, "md5:" + "0" * 32, "sha256:" + "0" * 63],
    ids=["sha512", "sha256-uppercase", "md5", "sha256-short"],
)
def test_a_digest_header_of_another_algorithm_or_form_is_unknown(rig: Rig, header: str) -> None:
    rig.proxy.fault = ProxyFault("digest", digest=header)
    rig.start()
    assert unknown_reason(rig) == "malformed-digest"
    assert rig.api.deletes == []
    rig.assert_survived()
    rig.assert_recovers()


# -- redirects -----------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_a_redirect_on_the_registrys_own_origin_is_followed(rig: Rig, status: int) -> None:
    # Every request (the HEAD, then the GETs by digest) is sent to its own path, marked.
    rig.proxy.fault = ProxyFault("redirect", status=status)
    rig.start()
    assert only_answer(rig) == Digest(rig.new)
    assert rig.api.deleted == ["web-1"]
    hops = [s for s in rig.proxy.seen if "hop=1" in s.path]
    assert hops and all(s.auth_scheme == "Basic" for s in hops)
    rig.assert_survived()


def test_a_redirect_to_another_host_is_not_followed_and_gets_no_credentials(rig: Rig) -> None:
    with Listener() as elsewhere:
        # "localhost" is another origin than 127.0.0.1, even on the same machine.
        location = f"http://localhost:{elsewhere.port}/v2/anything/manifests/latest"
        rig.proxy.fault = ProxyFault("redirect", status=302, location=location)
        rig.start()
        assert unknown_reason(rig) == "redirect-refused"
        assert elsewhere.count() == 0
        assert rig.api.deletes == []
        rig.assert_survived()
        rig.assert_recovers()
        assert elsewhere.count() == 0
