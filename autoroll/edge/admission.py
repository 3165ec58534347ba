"""The pinning webhook's HTTPS listener: pod CREATE reviews answered from memory alone.

``POST /pin`` takes an ``admission.k8s.io/v1`` AdmissionReview, reads the pod
(``autoroll.kube.admission_review``), asks ``autoroll.core.pinning.pin_pod`` with the
read-only ``ApprovedDigests`` view, and answers ``allowed`` with the JSONPatch, if any. No
registry call, no API call, no lock shared with a pass: the answer costs a dictionary lookup
per container, so it fits well inside the webhook's short ``timeoutSeconds``
(docs/adr/028). Whatever goes wrong answers ``allowed`` unchanged, and what does not arrive
in time is let in by ``failurePolicy: Ignore``: pinning never blocks a pod.

Standard library only, like the probes' listener (``autoroll.edge.probes``): a listener and
threads of its own in the worker process, so a pass (or a slow webhook client of the main
port) never delays an admission. Each connection gets the TLS context current when it was
accepted (``context``), so a rotated certificate is used from the next connection on; the
handshake runs on the connection's thread, never the accept loop. At most
``MAX_CONNECTIONS`` at once (the API server keeps a few alive); each read and write times
out after ``READ_SECONDS``.
"""

from __future__ import annotations

import json
import logging
import socket
import ssl
import time
from collections.abc import Callable, Collection
from http.server import BaseHTTPRequestHandler
from typing import Any, Final

from autoroll.core.boundedjson import loads
from autoroll.core.pinning import ApprovedDigests, WhyNot, pin_pod
from autoroll.edge.listener import Listener, ListenerServer
from autoroll.instruments.pinning_metrics import PinningMetrics
from autoroll.kube.admission_review import ReviewError, review_request, review_response

log = logging.getLogger(__name__)

PATH: Final = "/pin"
#: An AdmissionReview carries the pod (etcd holds objects up to 1.5 MiB) and its old copy.
MAX_BODY: Final = 4 * 1024 * 1024
#: Seconds each read or write of a connection may take (the webhook's timeout is shorter).
READ_SECONDS: Final = 10.0
MAX_CONNECTIONS: Final = 64


def answer_review(
    body: bytes, *, approvals: ApprovedDigests, registries: Collection[str]
) -> tuple[int, dict[str, Any] | None, str]:
    """The HTTP status, the AdmissionReview answer (None: no review to answer) and the
    result label for one request body. Never raises."""
    try:
        review = review_request(loads(body, max_bytes=MAX_BODY))
    except (ReviewError, ValueError) as exc:
        log.warning("pinning webhook: a request that is not an AdmissionReview: %s", exc)
        return 400, None, "bad-request"
    if review.pod is None:
        return 200, review_response(review.uid), "not-a-pod"
    try:
        result = pin_pod(review.pod, approvals=approvals, registries=registries)
    except Exception:
        # A bug must not cost a pod: let it in unchanged, and say so.
        log.exception(
            "pinning webhook: deciding pod %s/%s raised", review.pod.namespace, review.pod.name
        )
        return 200, review_response(review.uid), "error"
    if result.why is WhyNot.PINNED:
        log.info(
            "pinned pod of %s: %s",
            result.workload,
            ", ".join(f"{c.container}={c.image}" for c in result.containers if c.image),
            extra={"event": "pinned", "workload": result.workload},
        )
    return 200, review_response(review.uid, result.patch), str(result.why)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"  # the API server keeps connections alive
    timeout = READ_SECONDS

    def do_POST(self) -> None:
        started = time.perf_counter()
        if self.path.partition("?")[0] != PATH:
            self._send(404, {"error": f"not found: POST {PATH} only"})
            return
        length = int(self.headers.get("Content-Length") or 0)
        if not 0 < length <= MAX_BODY:
            self._send(413 if length else 411, {"error": "a body of at most 4 MiB is required"})
            return
        body = self.rfile.read(length)
        status, answer, result = answer_review(
            body, approvals=self.server.approvals, registries=self.server.registries
        )
        # Counted before the answer is written, so a reader of /metrics who has the answer
        # also sees it counted (the time is the decision's, not the socket's).
        metrics = self.server.metrics
        if metrics is not None:
            metrics.admissions.labels(result=result).inc()
            metrics.admission_seconds.observe(time.perf_counter() - started)
        self._send(status, answer if answer is not None else {"error": "not an AdmissionReview"})

    def _send(self, status: int, document: dict[str, Any]) -> None:
        data = json.dumps(document, separators=(",", ":")).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("pinning webhook: " + format, *args)


class _Server(ListenerServer):
    def __init__(
        self,
        address: tuple[str, int],
        *,
        context: Callable[[], ssl.SSLContext],
        approvals: ApprovedDigests,
        registries: Collection[str],
        metrics: PinningMetrics | None,
    ) -> None:
        self.context = context
        self.approvals = approvals
        self.registries = registries
        self.metrics = metrics
        super().__init__(address, _Handler, max_connections=MAX_CONNECTIONS)

    def get_request(self) -> tuple[Any, Any]:
        sock, address = super().get_request()
        sock.settimeout(READ_SECONDS)
        # The answer goes out as headers, then body: without this, Nagle holds the body
        # back until the client's delayed ACK of the headers, 40 ms on Linux.
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        # The handshake happens on the connection's own thread, at its first read.
        wrapped = self.context().wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return wrapped, address

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.slots.acquire(blocking=False):
            self.shutdown_request(request)  # full: closed rather than queued
            return
        try:
            super().process_request(request, client_address)
        except Exception:
            self.slots.release()
            self.shutdown_request(request)
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A failed handshake or a client gone early: not worth a traceback.
        log.debug("pinning webhook connection from %s ended early", client_address, exc_info=True)


class AdmissionServer(Listener):
    """The listener and its thread; ``start`` binds (raising if it cannot)."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        context: Callable[[], ssl.SSLContext],
        approvals: ApprovedDigests,
        registries: Collection[str],
        metrics: PinningMetrics | None = None,
    ) -> None:
        super().__init__(host, port, thread_name="autoroll-pinning", what="the pinning webhook")
        self._context = context
        self._approvals = approvals
        self._registries = frozenset(registries)
        self._metrics = metrics

    def _bind(self) -> _Server:
        return _Server(
            self._address,
            context=self._context,
            approvals=self._approvals,
            registries=self._registries,
            metrics=self._metrics,
        )

    def start(self) -> None:
        super().start()
        log.info("pinning webhook: serving POST %s on %s:%d", PATH, self._address[0], self.port)


__all__ = ["MAX_BODY", "PATH", "AdmissionServer", "answer_review"]
