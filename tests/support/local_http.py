"""Threaded HTTP servers on 127.0.0.1: the scaffolding every test double here shares.

The fake Kubernetes API (``fake_kube``) and the registry proxies (``fault_proxy``,
``faulty_proxy.FaultyProxy``) differ only in how they answer. Choosing the port, the serving
thread, recording what arrived, stopping (cutting open connections, as a dying server
does) and starting again on the same port live here once, as do the small pieces of
answering: a reply with a length, a cut connection, a request forwarded to a registry.

A subclass names the HTTP ``methods`` it serves (others get 501, as from any server
that does not know them) and implements ``handle``.
"""

from __future__ import annotations

import contextlib
import http.server
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any, ClassVar, Self

import requests

from tests.support.ports import OnLoopback, free_port

#: Seconds between the serving loop's shutdown checks: a stop takes at most about this.
POLL_SECONDS = 0.05
#: Seconds ``stop`` waits for the serving thread before calling it stuck.
JOIN_SECONDS = 10.0
#: Upstream answer headers a registry proxy passes back (the rest are hop-specific).
REGISTRY_HEADERS = frozenset({"content-type", "docker-content-digest", "www-authenticate"})

Request = http.server.BaseHTTPRequestHandler


@dataclass(frozen=True)
class Seen:
    """One request as it arrived, before any answer (or delay) of the server's."""

    method: str
    path: str  # as sent, query included
    auth_scheme: str  # "Basic", "Bearer", … or "" without an Authorization header
    at: float  # time.monotonic() on arrival


class LocalHttpServer(OnLoopback):
    """A ``ThreadingHTTPServer`` on ``127.0.0.1:port``; a context manager, and restartable.

    The port comes from ``free_port`` (below the ephemeral range) unless given, and is
    kept across ``stop``/``start``, so a restart is the same server coming back.
    """

    methods: ClassVar[tuple[str, ...]] = ("GET", "HEAD")

    def __init__(self, port: int | None = None) -> None:
        self.port = free_port() if port is None else port
        #: every request, in order of arrival (kept across restarts)
        self.seen: list[Seen] = []
        self._lock = threading.Lock()
        self._server: http.server.ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._connections: set[socket.socket] = set()

    def count(self, method: str = "") -> int:
        """Requests seen so far, of ``method`` ("" = any)."""
        with self._lock:
            return sum(1 for s in self.seen if not method or s.method == method)

    def handle(self, request: Request) -> None:
        """Answer one request (the subclass's whole behaviour)."""
        raise NotImplementedError

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> None:
        if self._server is not None:
            raise RuntimeError(f"{type(self).__name__} on {self.host} is already running")
        server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), _handler(self))
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": POLL_SECONDS}, daemon=True
        )
        self._thread.start()

    def stop(self, *, keep: socket.socket | None = None) -> None:
        """Stop listening and cut every open connection but ``keep``; a no-op when stopped.

        ``keep`` is the connection of a handler that stops the server and still has to
        finish its own answer (a fault "answer, then go down").
        """
        server, thread = self._server, self._thread
        if server is None:
            return
        server.shutdown()
        server.server_close()
        self._server = self._thread = None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=JOIN_SECONDS)
            if thread.is_alive():
                raise RuntimeError(f"{self.host}: serving thread still alive after stop")
        with self._lock:
            cut = [c for c in self._connections if c is not keep]
            self._connections.difference_update(cut)
        for connection in cut:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- called by the handler ------------------------------------------------------------------

    def _arrived(self, request: Request) -> None:
        auth = request.headers.get("Authorization", "")
        seen = Seen(request.command, request.path, auth.partition(" ")[0], time.monotonic())
        with self._lock:
            self.seen.append(seen)

    def _track(self, connection: socket.socket, *, open_: bool) -> None:
        with self._lock:
            if open_:
                self._connections.add(connection)
            else:
                self._connections.discard(connection)


def _handler(owner: LocalHttpServer) -> type[Request]:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as real clients and servers use

        def log_message(self, format: str, *args: Any) -> None:
            pass  # test output stays readable; tests look at ``seen`` instead

        def setup(self) -> None:
            super().setup()
            owner._track(self.connection, open_=True)

        def finish(self) -> None:
            owner._track(self.connection, open_=False)
            super().finish()

        def dispatch(self) -> None:
            owner._arrived(self)
            owner.handle(self)

    for method in owner.methods:
        setattr(Handler, f"do_{method}", Handler.dispatch)
    return Handler


# -- answering ------------------------------------------------------------------------------------


def reply(
    request: Request,
    status: int,
    headers: dict[str, str],
    body: bytes,
    *,
    length: int | None = None,
) -> None:
    """Answer with ``body`` (none to a HEAD); Content-Length is ``length`` or the body's."""
    request.send_response(status)
    for key, value in headers.items():
        request.send_header(key, value)
    request.send_header("Content-Length", str(len(body) if length is None else length))
    request.end_headers()
    if body and request.command != "HEAD":
        request.wfile.write(body)


def cut(request: Request) -> None:
    """Close the connection at once, whatever was (or was not) sent on it."""
    request.close_connection = True
    with contextlib.suppress(OSError):
        request.connection.shutdown(socket.SHUT_RDWR)


def forward(request: Request, url: str, *, authorization: str) -> requests.Response:
    """Send ``request``'s method to ``url`` with its Accept header and ``authorization``.

    Redirects are not followed: the proxy's client sees them, as it would the registry's.
    """
    return requests.request(
        request.command,
        url,
        headers={"Accept": request.headers.get("Accept", ""), "Authorization": authorization},
        timeout=10,
        allow_redirects=False,
    )


def registry_headers(answer: requests.Response) -> dict[str, str]:
    """The headers of ``answer`` a registry proxy passes back (``REGISTRY_HEADERS``)."""
    return {k: v for k, v in answer.headers.items() if k.lower() in REGISTRY_HEADERS}
