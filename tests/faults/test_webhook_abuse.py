"""Fault matrix, webhook abuse: the real ``autoroll serve`` (gunicorn) on 127.0.0.1.

The Kubernetes API is a closed port, so passes fail fast and are counted; what matters
here is the HTTP edge: forged webhooks start no pass, a huge body (and any unsigned one) is
refused before it is read, and clients that drip bytes cannot starve the probes, which have
a port and threads of their own (PROBE_ADDR).
"""

from __future__ import annotations

import secrets
import socket
import statistics
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import pytest
import requests

from tests.support.serve import Serve, drip
from tests.support.serve_without_cluster import serving_without_cluster

pytestmark = pytest.mark.integration

SECRET = "abuse-webhook-secret-0123456789abcdef"
TOKEN = "abuse-forgejo-token-0123456789"
ABUSE_REQUESTS = 10_000
ABUSE_CLIENTS = 8


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Serve]:
    with serving_without_cluster(
        tmp_path_factory.mktemp("abuse"), forgejo_host="127.0.0.1:9", token=TOKEN, secret=SECRET
    ) as serve:
        yield serve


class Prober:
    """GETs /healthz every 20 ms on a kept-alive connection and records each latency."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.latencies: list[float] = []
        self.failures = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with requests.Session() as session:
            while not self._stop.is_set():
                started = time.monotonic()
                try:
                    ok = session.get(f"{self.url}/healthz", timeout=5).status_code == 200
                except requests.RequestException:
                    ok = False
                self.latencies.append(time.monotonic() - started)
                self.failures += not ok
                self._stop.wait(0.02)

    def __enter__(self) -> Prober:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def p95(self) -> float:
        return statistics.quantiles(self.latencies, n=20)[-1]


def forge(count: int, url: str) -> Counter[int]:
    """``count`` webhooks with random (wrong) signatures on one kept-alive connection."""
    statuses: Counter[int] = Counter()
    body = b'{"action":"published","package":{"name":"app"}}'
    with requests.Session() as session:
        for _ in range(count):
            answer = session.post(
                f"{url}/webhook",
                data=body,
                headers={"X-Forgejo-Signature": secrets.token_hex(32)},
                timeout=10,
            )
            statuses[answer.status_code] += 1
    return statuses


@pytest.mark.timeout(150)
def test_10000_forged_webhooks_start_no_pass_and_healthz_stays_fast(server: Serve) -> None:
    ticks = server.ticks()
    rejected = server.metric("autoroll_webhook_requests_total", outcome="bad-signature")
    started = time.monotonic()
    with Prober(server.url) as prober, ThreadPoolExecutor(ABUSE_CLIENTS) as pool:
        share = ABUSE_REQUESTS // ABUSE_CLIENTS
        results = list(pool.map(forge, [share] * ABUSE_CLIENTS, [server.url] * ABUSE_CLIENTS))
    elapsed = time.monotonic() - started
    statuses = sum(results, Counter[int]())
    p95 = prober.p95()
    print(
        f"\n{ABUSE_REQUESTS} forged webhooks in {elapsed:.1f}s"
        f" ({ABUSE_REQUESTS / elapsed:.0f}/s); /healthz during it: {len(prober.latencies)}"
        f" probes, p95 {p95 * 1000:.1f} ms, max {max(prober.latencies) * 1000:.1f} ms"
    )
    assert statuses == Counter({403: ABUSE_REQUESTS})
    assert server.metric("autoroll_webhook_requests_total", outcome="bad-signature") == (
        rejected + ABUSE_REQUESTS
    )
    assert server.metric("autoroll_nudges_total") == 0
    time.sleep(0.5)  # a pass a forged webhook had started would be counted by now
    assert server.ticks() == ticks
    assert prober.failures == 0
    assert len(prober.latencies) >= 20
    assert p95 < 0.25, p95


def read_status_line(sock: socket.socket) -> bytes:
    data = b""
    while b"\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    return data.partition(b"\r\n")[0]


def test_a_huge_declared_body_gets_413_before_it_is_sent(server: Serve) -> None:
    declared = 100 * 1024 * 1024
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        started = time.monotonic()
        sock.sendall(
            b"POST /webhook HTTP/1.1\r\nHost: autoroll\r\n"
            b"X-Forgejo-Signature: " + b"0" * 64 + b"\r\n"
            b"Content-Length: " + str(declared).encode() + b"\r\n\r\n" + b"x" * 1024
        )
        status = read_status_line(sock)
        answered = time.monotonic() - started
        # The server gave up on the rest of the body: it closes the connection within its
        # bounded drain, although we never sent the other 99.99 MiB.
        sock.settimeout(10)
        closed_after = None
        try:
            while sock.recv(65536):
                pass
            closed_after = time.monotonic() - started
        except (TimeoutError, ConnectionResetError):
            closed_after = time.monotonic() - started
    print(f"\n413 after {answered * 1000:.1f} ms; connection closed after {closed_after:.1f}s")
    assert status.startswith(b"HTTP/1.1 413"), status
    assert answered < 1.0
    assert closed_after is not None and closed_after < 8.0
    assert requests.get(f"{server.url}/healthz", timeout=2).status_code == 200


def test_an_unsigned_request_gets_403_before_any_of_its_body_is_sent(server: Serve) -> None:
    """No signature header: refused on its headers alone. The client declares 1 MiB (under
    the cap) and sends none of it; an edge that read the body first would wait for it."""
    before = server.metric("autoroll_webhook_requests_total", outcome="missing-signature")
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        started = time.monotonic()
        sock.sendall(
            b"POST /webhook HTTP/1.1\r\nHost: autoroll\r\n"
            b"Content-Length: " + str(1024 * 1024).encode() + b"\r\n\r\n"
        )
        status = read_status_line(sock)
        answered = time.monotonic() - started
    print(f"\nunsigned: 403 after {answered * 1000:.1f} ms with no body sent")
    assert status.startswith(b"HTTP/1.1 403"), status
    assert answered < 1.0  # the request read deadline (10 s) never came into it
    after = server.metric("autoroll_webhook_requests_total", outcome="missing-signature")
    assert after == before + 1


DRIP_CLIENTS = 8


@contextmanager
def dripping(
    port: int, payloads: Sequence[tuple[bytes, bytes]], *, join_within: float
) -> Iterator[list[float]]:
    """One client per (prefix, payload) on ``port``: sends the prefix, then drips the
    payload a byte a second (``drip``). Entered 1.5 s after they start (every one holds a
    connection, or waits for a thread), left once each was cut off or ``join_within`` s
    passed; yields the seconds after which each was cut off, filled in as they are."""
    cut: list[float] = []
    threads = [
        threading.Thread(target=drip, args=(port, prefix, payload, cut), daemon=True)
        for prefix, payload in payloads
    ]
    for thread in threads:
        thread.start()
    time.sleep(1.5)
    yield cut
    for thread in threads:
        thread.join(join_within)


@pytest.mark.timeout(60)
def test_slow_drip_clients_do_not_block_other_requests(server: Serve) -> None:
    """Half drip their headers, half send headers at once and drip a 60-byte body."""
    body = b"{" + b" " * 58 + b"}"
    header_drip = b"POST /webhook HTTP/1.1\r\nHost: autoroll\r\nContent-Length: 2\r\n\r\n{}"
    body_prefix = (
        b"POST /webhook HTTP/1.1\r\nHost: autoroll\r\nX-Forgejo-Signature: "
        + b"0" * 64
        + b"\r\nContent-Length: "
        + str(len(body)).encode()
        + b"\r\n\r\n"
    )
    payloads = [
        (b"", header_drip) if index % 2 else (body_prefix, body) for index in range(DRIP_CLIENTS)
    ]
    with dripping(server.port, payloads, join_within=30) as cut, Prober(server.url) as prober:
        time.sleep(5)
    print(
        f"\n{DRIP_CLIENTS} drip clients: /healthz p95 {prober.p95() * 1000:.1f} ms,"
        f" max {max(prober.latencies) * 1000:.1f} ms; drippers cut after"
        f" {sorted(round(c, 1) for c in cut)} s"
    )
    assert prober.failures == 0
    assert max(prober.latencies) < 1.0
    # Every dripper was cut off by the request-read deadline; none got to drip for a minute.
    assert len(cut) == DRIP_CLIENTS
    assert max(cut) < 15.0


#: More drippers than the webhook port has request threads (server.REQUEST_THREADS = 16).
STARVING_CLIENTS = 24


@pytest.mark.timeout(90)
def test_probes_on_their_own_port_answer_while_drippers_hold_every_webhook_thread(
    server: Serve,
) -> None:
    """24 clients drip their headers a byte a second: every one of the webhook port's 16
    request threads is held (each up to the 10 s read deadline) and the rest wait. The
    kubelet asks PROBE_ADDR, whose listener and threads are the probes' own: no probe
    waits behind them, so no probe times out (3 s) and the pod is never restarted."""
    drip_request = b"POST /webhook HTTP/1.1\r\nHost: autoroll\r\nContent-Length: 2\r\n\r\n{}"
    payloads = [(b"", drip_request)] * STARVING_CLIENTS
    with (
        dripping(server.port, payloads, join_within=40) as cut,
        Prober(server.probe_url) as probes,
        Prober(server.url) as shared,
    ):
        time.sleep(6)
    print(
        f"\n{STARVING_CLIENTS} drippers: PROBE_ADDR /healthz max"
        f" {max(probes.latencies) * 1000:.1f} ms over {len(probes.latencies)} probes;"
        f" the webhook port's own /healthz max {max(shared.latencies) * 1000:.0f} ms"
    )
    assert probes.failures == 0
    assert max(probes.latencies) < 1.0
    assert len(probes.latencies) > 50
    # The starvation is real on the shared port: some request there waited for a thread.
    assert max(shared.latencies) > 1.0
    assert len(cut) == STARVING_CLIENTS


def test_the_abuse_left_no_traceback_and_no_flood_in_the_log(server: Serve) -> None:
    """Runs last in this module: 10,000 forged webhooks, a huge body and eight cut-off
    drippers must not cost a log line each (a flood is an outage of its own)."""
    lines = server.output().splitlines()
    assert len(lines) < 50, len(lines)
    assert not [line for line in lines if "Traceback" in line or "Socket error" in line]
