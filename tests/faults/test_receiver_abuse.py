"""Fault matrix, webhook abuse at the registries' receivers: the real ``autoroll serve``
(gunicorn) on 127.0.0.1, with five receivers on, each with its own secret (docs/adr/025).

The Kubernetes API is a closed port, so passes fail fast and are counted; what matters here is
the HTTP edge: forged signatures and tokens start no pass, a token in the wrong path is no
token, a huge body is refused before it is read, and a replayed authentic delivery costs what
the per-tag debounce allows. ``test_webhook_abuse.py`` holds Forgejo's ``/webhook`` rows.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import socket
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from tests.faults.test_webhook_abuse import Prober, read_status_line
from tests.support.receivers import fixture
from tests.support.serve import Serve
from tests.support.serve_without_cluster import serving_without_cluster
from tests.support.wait import wait_until

pytestmark = pytest.mark.integration

#: The registries' receivers this module turns on, each with its own secret.
RECEIVER_SECRETS = {
    "github": ("GITHUB_WEBHOOK_SECRET", "abuse-github-hmac-" + secrets.token_hex(8)),
    "generic": ("GENERIC_WEBHOOK_SECRET", "abuse-generic-hmac-" + secrets.token_hex(8)),
    "harbor": ("HARBOR_WEBHOOK_TOKEN", "abuse-harbor-" + secrets.token_hex(8)),
    "dockerhub": ("DOCKERHUB_WEBHOOK_TOKEN", "abuse-dockerhub-" + secrets.token_hex(8)),
    "quay": ("QUAY_WEBHOOK_TOKEN", "abuse-quay-" + secrets.token_hex(8)),
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Serve]:
    with serving_without_cluster(
        tmp_path_factory.mktemp("receiver-abuse"),
        forgejo_host="127.0.0.1:9",
        token="abuse-forgejo-token-0123456789",
        secret="abuse-webhook-secret-0123456789abcdef",
        extra_env=dict(RECEIVER_SECRETS.values()),
    ) as serve:
        yield serve


def receiver_secret(source: str) -> str:
    return RECEIVER_SECRETS[source][1]


def outcome(server: Serve, source: str, name: str) -> float:
    return server.metric("autoroll_webhook_requests_total", source=source, outcome=name)


def hub_signature(body: bytes, secret: str) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


FORGED_PER_RECEIVER = 500


def forge_receivers(url: str) -> Counter[int]:
    """Forged deliveries at every receiver: HMAC sources signed with another key, token
    sources with another token (in the header or the path)."""
    statuses: Counter[int] = Counter()
    body = b'{"image": "127.0.0.1:9/team/app:latest"}'
    wrong = "forged-" + secrets.token_hex(16)
    with requests.Session() as session:
        for _ in range(FORGED_PER_RECEIVER):
            for path, headers in (
                (
                    "github",
                    {
                        "X-GitHub-Event": "package",
                        "X-Hub-Signature-256": hub_signature(body, wrong),
                    },
                ),
                ("generic", {"X-Signature": hub_signature(body, wrong)}),
                ("harbor", {"Authorization": f"Bearer {wrong}"}),
                (f"dockerhub/{wrong}", {}),
                (f"quay/{wrong}", {}),
            ):
                answer = session.post(
                    f"{url}/webhook/{path}", data=body, headers=headers, timeout=10
                )
                statuses[answer.status_code] += 1
    return statuses


@pytest.mark.timeout(150)
def test_forged_signatures_and_tokens_at_every_receiver_start_no_pass(server: Serve) -> None:
    ticks = server.ticks()
    nudges = server.metric("autoroll_nudges_total")
    before = {s: outcome(server, s, "bad-signature") for s in RECEIVER_SECRETS}
    started = time.monotonic()
    with Prober(server.url) as prober, ThreadPoolExecutor(4) as pool:
        results = list(pool.map(forge_receivers, [server.url] * 4))
    elapsed = time.monotonic() - started
    statuses = sum(results, Counter[int]())
    total = 4 * FORGED_PER_RECEIVER * len(RECEIVER_SECRETS)
    print(
        f"\n{total} forged receiver deliveries in {elapsed:.1f}s; /healthz p95"
        f" {prober.p95() * 1000:.1f} ms"
    )
    assert statuses == Counter({403: total})
    for source in RECEIVER_SECRETS:
        assert outcome(server, source, "bad-signature") == before[source] + 4 * FORGED_PER_RECEIVER
    assert server.metric("autoroll_nudges_total") == nudges
    assert server.ticks() == ticks
    assert prober.failures == 0


@pytest.mark.parametrize(
    ("path", "status", "why"),
    [
        # Docker Hub's token at Quay's route: another receiver's secret is a wrong one.
        ("quay/{dockerhub}", 403, "bad token"),
        # A path token at a route that takes a header: that route has no token in its path.
        ("harbor/{harbor}", 404, "harbor deliveries go to /webhook/harbor"),
        # The token anywhere but its path segment: unsigned.
        (
            "dockerhub?token={dockerhub}",
            404,
            "dockerhub deliveries go to /webhook/dockerhub/<token>",
        ),
        ("dockerhub/{dockerhub}/extra", 404, ""),
        # A receiver that is off in this module.
        ("distribution", 404, "the distribution receiver is off: set DISTRIBUTION_WEBHOOK_TOKEN"),
    ],
)
def test_a_token_in_the_wrong_path_is_refused(
    server: Serve, path: str, status: int, why: str
) -> None:
    nudges = server.metric("autoroll_nudges_total")
    url = f"{server.url}/webhook/" + path.format(
        dockerhub=receiver_secret("dockerhub"), harbor=receiver_secret("harbor")
    )
    answer = requests.post(url, data=b'{"push_data": {"tag": "x"}}', timeout=5)
    assert answer.status_code == status
    assert why in answer.text
    assert server.metric("autoroll_nudges_total") == nudges


@pytest.mark.parametrize(
    ("path", "headers"),
    [
        ("generic", b"X-Signature: sha256=" + b"0" * 64 + b"\r\n"),
        ("dockerhub/{dockerhub}", b""),
        ("harbor", b"Authorization: Bearer {harbor}\r\n"),
    ],
)
def test_a_huge_body_at_a_receiver_gets_413_before_it_is_sent(
    server: Serve, path: str, headers: bytes
) -> None:
    tokens = {"dockerhub": receiver_secret("dockerhub"), "harbor": receiver_secret("harbor")}
    target = path.format(**tokens).encode()
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        started = time.monotonic()
        sock.sendall(
            b"POST /webhook/"
            + target
            + b" HTTP/1.1\r\nHost: autoroll\r\n"
            + headers.replace(b"{harbor}", tokens["harbor"].encode())
            + b"Content-Length: "
            + str(100 * 1024 * 1024).encode()
            + b"\r\n\r\n"
            + b"x" * 1024
        )
        status = read_status_line(sock)
        answered = time.monotonic() - started
    assert status.startswith(b"HTTP/1.1 413"), status
    assert answered < 1.0


REPLAYS = 300


@pytest.mark.timeout(60)
def test_a_replayed_delivery_costs_at_most_two_passes_and_deletes_nothing_by_itself(
    server: Serve,
) -> None:
    """A captured, validly signed delivery sent again and again: each is authentic, so each
    is answered 202; it only scopes a pass (the digest is the registry's, never the body's),
    and deliveries for one tag start at most one pass per TAG_PASS_INTERVAL_SECONDS (5 s):
    the leading edge and one trailing pass (autoroll.core.debounce)."""
    body = b'{"image": "127.0.0.1:9/team/replayed:latest"}'
    headers = {"X-Signature": hub_signature(body, receiver_secret("generic"))}
    ticks = server.ticks()
    statuses: Counter[int] = Counter()
    started = time.monotonic()
    with requests.Session() as session:
        for _ in range(REPLAYS):
            answer = session.post(
                f"{server.url}/webhook/generic", data=body, headers=headers, timeout=5
            )
            statuses[answer.status_code] += 1
    replayed_for = time.monotonic() - started
    assert statuses == Counter({202: REPLAYS})
    assert outcome(server, "generic", "targeted") >= REPLAYS
    # The trailing pass comes at the interval's end and takes every deferral with it.
    wait_until(lambda: server.ticks() >= ticks + 2, 20, "the leading and the trailing pass")
    passes = server.ticks() - ticks
    print(f"\n{REPLAYS} replays in {replayed_for:.1f}s: {passes:.0f} passes")
    # One pass per started 5 s interval of replaying, and the trailing one.
    assert passes <= 2 + int(replayed_for // 5)


def test_a_replayed_push_to_a_registry_autoroll_does_not_read_starts_nothing(server: Serve) -> None:
    body = fixture("dockerhub-docs-push.json")
    url = f"{server.url}/webhook/dockerhub/{receiver_secret('dockerhub')}"
    nudges = server.metric("autoroll_nudges_total")
    answers = [requests.post(url, data=body, timeout=5) for _ in range(20)]
    assert {a.status_code for a in answers} == {202}
    assert "is on no registry autoroll reads" in answers[0].text
    assert server.metric("autoroll_nudges_total") == nudges


def test_the_abuse_left_no_traceback_no_flood_and_no_secret_in_the_log(server: Serve) -> None:
    """Runs last in this module: thousands of forged deliveries, wrong paths, huge bodies and
    replays must not cost a log line each, and no receiver's secret is ever printed."""
    output = server.output()
    lines = output.splitlines()
    assert len(lines) < 50, len(lines)
    assert not [line for line in lines if "Traceback" in line or "Socket error" in line]
    for _, value in RECEIVER_SECRETS.values():
        assert value not in output
