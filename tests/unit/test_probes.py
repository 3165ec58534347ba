"""The probes' own listener: the same answers as the webhook port's, bounded per connection."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest
import requests

from autoroll.controller.loop_health import Health
from autoroll.edge.probes import (
    MAX_PROBE_CONNECTIONS,
    PROBE_REQUEST_SECONDS,
    ProbeServer,
    probe_answer,
)
from tests.support.ports import free_port
from tests.support.wait import wait_until

LIVE = Health(True, "last pass finished 3s ago (bound 460s)")
DEAD = Health(False, "no reconcile pass finished for 500s (bound 460s)")
READY = Health(True, "the reconcile thread is running")
STOPPING = Health(False, "shutting down")


@pytest.mark.parametrize(
    ("path", "live", "ready", "expected"),
    [
        ("/livez", LIVE, READY, (200, f"ok: {LIVE.detail}")),
        ("/livez", DEAD, READY, (503, f"failing: {DEAD.detail}")),
        ("/livez?verbose", LIVE, READY, (200, f"ok: {LIVE.detail}")),  # a query is ignored
        ("/healthz", LIVE, READY, (200, "ok")),  # the old probe's answer, kept
        ("/healthz", DEAD, READY, (503, f"failing: {DEAD.detail}")),
        ("/readyz", LIVE, READY, (200, f"ok: {READY.detail}")),
        ("/readyz", LIVE, STOPPING, (503, "failing: shutting down")),
        ("/webhook", LIVE, READY, None),  # only probes here
        ("/metrics", LIVE, READY, None),
    ],
)
def test_probe_answer(
    path: str, live: Health, ready: Health, expected: tuple[int, str] | None
) -> None:
    assert probe_answer(path, live=lambda: live, ready=lambda: ready) == expected


class Checks:
    def __init__(self) -> None:
        self.live = LIVE
        self.ready = READY


@pytest.fixture
def checks() -> Checks:
    return Checks()


@pytest.fixture
def server(checks: Checks) -> Iterator[ProbeServer]:
    probes = ProbeServer(
        "127.0.0.1", free_port(), live=lambda: checks.live, ready=lambda: checks.ready
    )
    probes.start()
    try:
        yield probes
    finally:
        probes.stop()


def url(server: ProbeServer, path: str) -> str:
    return f"http://127.0.0.1:{server.port}{path}"


def test_the_probes_answer_from_the_checks(server: ProbeServer, checks: Checks) -> None:
    assert requests.get(url(server, "/livez"), timeout=2).status_code == 200
    checks.live = DEAD
    answer = requests.get(url(server, "/livez"), timeout=2)
    assert (answer.status_code, answer.text) == (503, f"failing: {DEAD.detail}\n")
    assert requests.get(url(server, "/healthz"), timeout=2).status_code == 503
    assert requests.get(url(server, "/readyz"), timeout=2).status_code == 200
    assert requests.get(url(server, "/webhook"), timeout=2).status_code == 404
    assert requests.post(url(server, "/livez"), timeout=2).status_code == 501  # GET only


def test_a_client_that_never_finishes_its_request_is_cut_at_the_deadline(
    server: ProbeServer,
) -> None:
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        started = time.monotonic()
        sock.sendall(b"GET /livez HTTP/1.1\r\nHost: x\r\n")  # the headers never end
        while True:
            try:
                if not sock.recv(4096):
                    break
            except ConnectionResetError:
                break
        held = time.monotonic() - started
    assert PROBE_REQUEST_SECONDS - 0.5 <= held < PROBE_REQUEST_SECONDS + 2


def test_slow_clients_up_to_the_limit_never_delay_a_probe(server: ProbeServer) -> None:
    idle = [
        socket.create_connection(("127.0.0.1", server.port), timeout=5)
        for _ in range(MAX_PROBE_CONNECTIONS // 2)
    ]
    try:
        for sock in idle:
            sock.sendall(b"G")  # a request begun, never finished
        assert requests.get(url(server, "/livez"), timeout=10).status_code == 200
        # Answered while every slow client still holds its connection: the probe was not
        # queued behind them until their deadline cut them (PROBE_REQUEST_SECONDS).
        for sock in idle:
            sock.setblocking(False)
            with pytest.raises(BlockingIOError):
                sock.recv(1)  # nothing to read, and not closed
    finally:
        for sock in idle:
            sock.close()


def test_connections_past_the_limit_are_closed_and_the_slots_come_back(
    server: ProbeServer,
) -> None:
    held = [
        socket.create_connection(("127.0.0.1", server.port), timeout=5)
        for _ in range(MAX_PROBE_CONNECTIONS + 4)
    ]
    try:
        for sock in held:
            sock.sendall(b"G")
        # Past the limit: closed unanswered at once, never queued behind the slow ones.
        extra = held[-1]
        extra.settimeout(1)
        assert extra.recv(4096) == b""
    finally:
        for sock in held:
            sock.close()
    # Each slot is released when its connection ends: the probes answer again.
    wait_until(
        lambda: requests.get(url(server, "/livez"), timeout=2).status_code == 200,
        PROBE_REQUEST_SECONDS + 5,
        "a free slot",
    )


def test_a_port_in_use_fails_at_start(server: ProbeServer) -> None:
    other = ProbeServer("127.0.0.1", server.port, live=lambda: LIVE, ready=lambda: READY)
    with pytest.raises(OSError):
        other.start()
