"""A registry proxy on 127.0.0.1 whose misbehaviour a test switches on and off.

``FaultProxy`` forwards ``/v2/`` requests (with the client's own Authorization) to a real
``docker-registry`` unless ``fault`` is set, in which case every matching request is
answered by the fault instead: an error status with headers (``Retry-After``), a delay, a
redirect, a connection cut mid-answer, or a forwarded answer whose
``Docker-Content-Digest`` is replaced. Each request is recorded (method, path, the
Authorization scheme and the time it arrived, in ``seen``), so tests can count what
reached the registry and when. The serving scaffolding is ``local_http.LocalHttpServer``.

``Listener`` is a bare recorder on another port: a redirect target that must never be
contacted (it answers 200 with a plausible digest, to make any contact visible).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Literal

from tests.support.local_http import (
    LocalHttpServer,
    Request,
    Seen,
    cut,
    forward,
    registry_headers,
    reply,
)
from tests.support.registry import RegistryServer

__all__ = ["FaultKind", "FaultProxy", "Listener", "ProxyFault", "Seen"]

FaultKind = Literal["status", "delay", "redirect", "truncate-headers", "truncate-body", "digest"]


@dataclass(frozen=True)
class ProxyFault:
    """What the proxy does instead of (or to) a forwarded answer."""

    kind: FaultKind
    status: int = 0
    headers: tuple[tuple[str, str], ...] = ()
    seconds: float = 0.0  # delay
    location: str = ""  # redirect target ("" = the same path, marked: a same-origin move)
    digest: str = ""  # replacement Docker-Content-Digest
    method: str = ""  # only requests with this method ("" = any)
    path: str = ""  # only requests whose path contains this ("" = any)
    raw: bytes = b"HTTP/1.1 200 OK\r\nDocker-Content-Digest: sha256:0123"  # truncate-headers


class FaultProxy(LocalHttpServer):
    """Forwards to ``upstream`` unless ``fault`` is set (and matches the method)."""

    def __init__(self, upstream: RegistryServer) -> None:
        super().__init__()
        self.upstream = upstream
        self.fault: ProxyFault | None = None

    def handle(self, handler: Request) -> None:
        fault = self.fault
        if fault is not None and fault.method and fault.method != handler.command:
            fault = None
        if fault is not None and fault.path and fault.path not in handler.path:
            fault = None
        # A redirected request comes back marked, and is forwarded as it is.
        if fault is not None and "hop=" in handler.path and fault.kind == "redirect":
            fault = None
        if fault is None:
            self._forward(handler)
        elif fault.kind == "status":
            reply(handler, fault.status, dict(fault.headers), b"{}")
        elif fault.kind == "delay":
            time.sleep(fault.seconds)
            self._forward(handler)
        elif fault.kind == "redirect":
            location = fault.location or f"{handler.path}?hop=1"
            reply(handler, fault.status or 307, {"Location": location}, b"")
        elif fault.kind == "truncate-headers":
            # The start of an answer (``raw``), then the connection is gone.
            handler.wfile.write(fault.raw)
            handler.wfile.flush()
            cut(handler)
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
            cut(handler)
        elif fault.kind == "digest":
            status, headers, body = self._upstream(handler)
            headers["Docker-Content-Digest"] = fault.digest
            reply(handler, status, headers, body)

    def _upstream(self, handler: Request) -> tuple[int, dict[str, str], bytes]:
        path = handler.path.replace("?hop=1", "").replace("&hop=1", "")
        authorization = handler.headers.get("Authorization", "")
        answer = forward(handler, f"{self.upstream.url}{path}", authorization=authorization)
        return answer.status_code, registry_headers(answer), answer.content

    def _forward(self, handler: Request) -> None:
        path = handler.path.replace("?hop=1", "").replace("&hop=1", "")
        authorization = handler.headers.get("Authorization", "")
        answer = forward(handler, f"{self.upstream.url}{path}", authorization=authorization)
        # A HEAD answers the size of what a GET would send: containerd resolves a tag by HEAD
        # and takes the manifest's size from it.
        size = answer.headers.get("Content-Length")
        length = int(size) if handler.command == "HEAD" and size and size.isdigit() else None
        reply(handler, answer.status_code, registry_headers(answer), answer.content, length=length)


class Listener(LocalHttpServer):
    """Records every request and answers 200 with a digest header (it must stay unasked)."""

    def handle(self, handler: Request) -> None:
        reply(handler, 200, {"Docker-Content-Digest": "sha256:" + "f" * 64}, b"")
