"""A registry proxy on 127.0.0.1 whose misbehaviour a test switches on and off.

``FaultProxy`` forwards ``/v2/`` requests (with the client's own Authorization) to a real
``docker-registry`` unless ``fault`` is set, in which case every matching request is
answered by the fault instead: an error status with headers (``Retry-After``), a delay, a
redirect, a connection cut mid-answer, or a forwarded answer whose
``Docker-Content-Digest`` is replaced. Each request is recorded (method, path, the
Authorization scheme and the time it arrived), so tests can count what reached the
registry and when.

``Listener`` is a bare recorder on another port: a redirect target that must never be
contacted (it answers 200 with a plausible digest, to make any contact visible).
"""

from __future__ import annotations

import contextlib
import http.server
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any, Literal

import requests

from tests.support.registry import RegistryServer

FaultKind = Literal["status", "delay", "redirect", "truncate-headers", "truncate-body", "digest"]


@dataclass(frozen=True)
class ProxyFault:
    """What the proxy does instead of (or to) a forwarded answer."""

    kind: FaultKind
    status: int = 0
    headers: tuple[tuple[str, str], ...] = ()
    seconds: float = 0.0  # delay
    location: str = ""  # redirect target
    digest: str = ""  # replacement Docker-Content-Digest
    method: str = ""  # only requests with this method ("" = any)
    raw: bytes = b"HTTP/1.1 200 OK\r\nDocker-Content-Digest: sha256:0123"  # truncate-headers


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    auth_scheme: str
    at: float  # time.monotonic() on arrival


class _Base:
    def __init__(self) -> None:
        self.seen: list[Seen] = []
        self._lock = threading.Lock()
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"http://{self.host}"

    def count(self, method: str = "") -> int:
        with self._lock:
            return sum(1 for s in self.seen if not method or s.method == method)

    def __enter__(self) -> _Base:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)

    def _record(self, handler: http.server.BaseHTTPRequestHandler) -> None:
        auth = handler.headers.get("Authorization", "")
        with self._lock:
            self.seen.append(
                Seen(handler.command, handler.path, auth.partition(" ")[0], time.monotonic())
            )

    def _respond(self, handler: http.server.BaseHTTPRequestHandler) -> None:
        raise NotImplementedError

    def _handler(self) -> type[http.server.BaseHTTPRequestHandler]:
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_HEAD(self) -> None:
                owner._record(self)
                owner._respond(self)

            do_GET = do_HEAD  # noqa: N815

        return Handler


class FaultProxy(_Base):
    """Forwards to ``upstream`` unless ``fault`` is set (and matches the method)."""

    def __init__(self, upstream: RegistryServer) -> None:
        self.upstream = upstream
        self.fault: ProxyFault | None = None
        super().__init__()

    def __enter__(self) -> FaultProxy:
        super().__enter__()
        return self

    def _respond(self, handler: http.server.BaseHTTPRequestHandler) -> None:
        fault = self.fault
        if fault is not None and fault.method and fault.method != handler.command:
            fault = None
        # A redirected request comes back marked, and is forwarded as it is.
        if fault is not None and "hop=" in handler.path and fault.kind == "redirect":
            fault = None
        if fault is None:
            self._forward(handler)
        elif fault.kind == "status":
            _reply(handler, fault.status, dict(fault.headers), b"{}")
        elif fault.kind == "delay":
            time.sleep(fault.seconds)
            self._forward(handler)
        elif fault.kind == "redirect":
            _reply(handler, fault.status or 307, {"Location": fault.location}, b"")
        elif fault.kind == "truncate-headers":
            # The start of an answer (``raw``), then the connection is gone.
            handler.wfile.write(fault.raw)
            handler.wfile.flush()
            _cut(handler)
        elif fault.kind == "truncate-body":
            status, headers, body = self._upstream(handler)
            handler.send_response(status)
            for key, value in headers.items():
                handler.send_header(key, value)
            handler.send_header("Content-Length", str(len(body)))
            handler.end_headers()
            if handler.command == "GET":
                handler.wfile.write(body[: len(body) // 2])
                handler.wfile.flush()
            _cut(handler)
        elif fault.kind == "digest":
            status, headers, body = self._upstream(handler)
            headers["Docker-Content-Digest"] = fault.digest
            _reply(handler, status, headers, body)

    def _upstream(
        self, handler: http.server.BaseHTTPRequestHandler
    ) -> tuple[int, dict[str, str], bytes]:
        path = handler.path.replace("?hop=1", "").replace("&hop=1", "")
        answer = requests.request(
            handler.command,
            f"{self.upstream.url}{path}",
            headers={
                "Accept": handler.headers.get("Accept", ""),
                "Authorization": handler.headers.get("Authorization", ""),
            },
            timeout=10,
            allow_redirects=False,
        )
        headers = {
            k: v
            for k, v in answer.headers.items()
            if k.lower() in {"content-type", "docker-content-digest", "www-authenticate"}
        }
        return answer.status_code, headers, answer.content

    def _forward(self, handler: http.server.BaseHTTPRequestHandler) -> None:
        status, headers, body = self._upstream(handler)
        _reply(handler, status, headers, body)


class Listener(_Base):
    """Records every request and answers 200 with a digest header (it must stay unasked)."""

    def __enter__(self) -> Listener:
        super().__enter__()
        return self

    def _respond(self, handler: http.server.BaseHTTPRequestHandler) -> None:
        _reply(handler, 200, {"Docker-Content-Digest": "sha256:" + "f" * 64}, b"")


def _reply(
    handler: http.server.BaseHTTPRequestHandler,
    status: int,
    headers: dict[str, str],
    body: bytes,
) -> None:
    handler.send_response(status)
    for key, value in headers.items():
        handler.send_header(key, value)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    if body and handler.command != "HEAD":
        handler.wfile.write(body)


def _cut(handler: http.server.BaseHTTPRequestHandler) -> None:
    handler.close_connection = True
    with contextlib.suppress(OSError):
        handler.connection.shutdown(socket.SHUT_RDWR)
