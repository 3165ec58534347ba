"""Listening ports for local test servers, chosen outside the kernel's ephemeral range.

``bind(("127.0.0.1", 0))`` hands out a port from the ephemeral range, the same range the
kernel draws source ports from for outgoing connections. That is fine for a server bound
once, but a server that is stopped and started again on the same port (the registry that
"goes offline", the kube-apiserver that restarts) leaves its port unbound for a while,
and clients retrying during that window can take it: a retried ``connect`` to
``127.0.0.1:P`` may get source port ``P`` and connect to itself (TCP simultaneous open).
The restarted server then fails to bind with "address already in use". Ports below the
ephemeral range are never used as source ports, so that cannot happen there.

Under pytest-xdist each worker draws from a slice of its own (``gw0`` the first, ...), so
two workers' control planes, registries and controllers never pick the same port between
one's check and its bind. Within one process, a port handed out is not handed out again for
the next ``REMEMBERED`` calls: a caller that asks for two ports before binding either (a
controller's ``LISTEN_ADDR`` and ``PROBE_ADDR``) gets two different ones.
"""

from __future__ import annotations

import os
import random
import socket
from collections import deque
from collections.abc import Mapping
from pathlib import Path

#: The lowest port handed out; below it live well-known and registered services.
FLOOR = 20000
ATTEMPTS = 200
#: How many of this process's latest ports are never handed out again.
REMEMBERED = 512

_recent: deque[int] = deque(maxlen=REMEMBERED)


def ephemeral_range() -> tuple[int, int]:
    """The kernel's source-port range (Linux default 32768-60999)."""
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now and never used as a source port.

    Random within [FLOOR, start of the ephemeral range), checked by binding it, and none of
    this process's last ``REMEMBERED`` ports; the small race with another process binding
    the same port in between is acceptable in tests.
    """
    low, high = ephemeral_range()
    candidates = range(FLOOR, low) if low - FLOOR >= 1000 else range(high + 1, 65536)
    if len(candidates) < 1000:  # an unusual kernel setting: let the kernel choose
        return _bind_and_report(0)
    candidates = worker_slice(candidates)
    recent = set(_recent)
    fresh = [port for port in candidates if port not in recent]
    for port in random.sample(fresh, min(ATTEMPTS, len(fresh))):
        try:
            _recent.append(_bind_and_report(port))
        except OSError:
            continue
        return port
    raise RuntimeError(f"no free port on 127.0.0.1 in {candidates} after {ATTEMPTS} tries")


def worker_slice(candidates: range, env: Mapping[str, str] = os.environ) -> range:
    """This pytest-xdist worker's share of ``candidates`` (``PYTEST_XDIST_WORKER`` ``gw<i>``
    of ``PYTEST_XDIST_WORKER_COUNT``); all of them outside a distributed run."""
    worker = env.get("PYTEST_XDIST_WORKER", "")
    count = int(env.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    if not worker.startswith("gw") or not worker[2:].isdigit() or count <= 1:
        return candidates
    index = int(worker[2:]) % count
    size = len(candidates) // count
    return candidates[index * size : (index + 1) * size]


class OnLoopback:
    """``host`` and ``url`` of a test server on 127.0.0.1:``port`` (a mixin: the class has
    the ``port``; ``scheme`` may be a property, as for a registry served over TLS)."""

    port: int
    scheme = "http"

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.host}"


def _bind_and_report(port: int) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", port))
        bound: int = sock.getsockname()[1]
        return bound
