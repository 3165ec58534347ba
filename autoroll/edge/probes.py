"""The probes' own HTTP server: ``/livez``, ``/readyz`` and ``/healthz`` on ``PROBE_ADDR``.

Why a second server: the webhook port's request threads are shared by every client that can
reach the Service. Sixteen connections that drip a byte a second hold all of them (each for
up to ``http_worker.REQUEST_READ_SECONDS``), and a kubelet probe waiting behind them times
out (3 s): any pod could get the controller restarted. Here the probes have a listener and
threads of their own, in the worker process that owns the reconcile loop (so they read the
loop's health, as ``autoroll.edge.web``'s do); nothing but a probe is served, so nothing slow is.

Bounds, so this port cannot be starved the same way: each connection serves one request
and is cut ``PROBE_REQUEST_SECONDS`` after it was accepted, whatever it is doing, and at
most ``MAX_PROBE_CONNECTIONS`` are served at once (more are closed unanswered at once). The
answers are those of the webhook port's probes (``probe_answer``): 200 ``ok: <why>`` or
503 ``failing: <why>``; ``/healthz`` answers ``ok`` when healthy, as it always did.

Standard library only (``http.server``): a probe needs no framework, and a thread per
connection is what keeps one slow client from delaying the next.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any, Final

from autoroll.controller.loop_health import Health
from autoroll.edge.listener import Listener, ListenerServer

#: Seconds one probe connection may live, from accept to close: a probe is one packet in,
#: one out. Below the kubelet's default probe timeout, so a slow client never outlasts one.
PROBE_REQUEST_SECONDS: Final = 2.0
#: Probe connections served at once; the kubelet sends one per probe per period.
MAX_PROBE_CONNECTIONS: Final = 64
#: Seconds ``stop`` waits for the listener thread.
PROBE_STOP_SECONDS: Final = 2.0

log = logging.getLogger(__name__)

Check = Callable[[], Health]


def probe_answer(path: str, *, live: Check, ready: Check) -> tuple[int, str] | None:
    """The status and body for a probe ``path`` (None: not a probe). Pure but for the checks."""
    route = path.partition("?")[0]
    if route == "/livez":
        return _answer(live())
    if route == "/healthz":
        health = live()
        # The old probe's healthy answer ("ok") kept for what reads it; the check is /livez's.
        return (200, "ok") if health.ok else _answer(health)
    if route == "/readyz":
        return _answer(ready())
    return None


def _answer(health: Health) -> tuple[int, str]:
    if health.ok:
        return 200, f"ok: {health.detail}"
    return 503, f"failing: {health.detail}"


class _Handler(BaseHTTPRequestHandler):
    """One probe request per connection; everything else is 404 or 405."""

    server: _Server
    protocol_version = "HTTP/1.0"  # one request per connection: no keep-alive to hold
    timeout = PROBE_REQUEST_SECONDS  # each read and write; the whole connection is cut anyway

    def do_GET(self) -> None:
        found = probe_answer(self.path, live=self.server.live, ready=self.server.ready)
        status, text = found if found is not None else (404, "not found: only probes here")
        body = (text + "\n").encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_HEAD(self) -> None:
        self.do_GET()

    def log_message(self, format: str, *args: Any) -> None:
        # Probes every few seconds would drown the decision lines (as the access log would).
        log.debug("probe: " + format, *args)


class _Server(ListenerServer):
    def __init__(self, address: tuple[str, int], *, live: Check, ready: Check) -> None:
        self.live = live
        self.ready = ready
        self._cuts: dict[int, threading.Timer] = {}  # id(connection) -> its deadline
        self._cuts_lock = threading.Lock()
        super().__init__(address, _Handler, max_connections=MAX_PROBE_CONNECTIONS)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.slots.acquire(blocking=False):
            # Full: closed unanswered rather than queued behind the slow ones.
            super().shutdown_request(request)
            return
        # Cut the connection at its deadline whatever it is doing (a drip, a stalled read).
        cut = threading.Timer(PROBE_REQUEST_SECONDS, _hang_up, args=(request,))
        cut.daemon = True
        with self._cuts_lock:
            self._cuts[id(request)] = cut  # before the thread starts: it may end at once
        cut.start()
        try:
            super().process_request(request, client_address)
        except Exception:
            self.shutdown_request(request)
            raise

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client gone before its answer (a cut, a closed probe) is not worth a traceback.
        log.debug("probe connection from %s ended early", client_address, exc_info=True)

    def shutdown_request(self, request: Any) -> None:
        """The connection is done (answered, cut or failed): free its slot and its timer."""
        with self._cuts_lock:
            cut = self._cuts.pop(id(request), None)
        super().shutdown_request(request)
        if cut is not None:
            cut.cancel()
            self.slots.release()


def _hang_up(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):  # already closed is fine
        sock.shutdown(socket.SHUT_RDWR)


class ProbeServer(Listener):
    """The probes' listener and its thread. ``start`` binds (raising if it cannot, so a
    wrong ``PROBE_ADDR`` stops the worker at boot, not at the first probe)."""

    def __init__(self, host: str, port: int, *, live: Check, ready: Check) -> None:
        super().__init__(host, port, thread_name="autoroll-probes", what="the probe server")
        self._live = live
        self._ready = ready

    def _bind(self) -> _Server:
        return _Server(self._address, live=self._live, ready=self._ready)

    def start(self) -> None:
        super().start()
        log.info("serving /livez, /readyz and /healthz on %s:%d", self._address[0], self.port)

    def stop(self, timeout: float = PROBE_STOP_SECONDS) -> None:
        """Stop listening; connections in flight end within ``PROBE_REQUEST_SECONDS``."""
        super().stop(timeout)


__all__ = [
    "MAX_PROBE_CONNECTIONS",
    "PROBE_REQUEST_SECONDS",
    "ProbeServer",
    "probe_answer",
]
