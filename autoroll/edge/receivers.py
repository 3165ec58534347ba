"""The registries' webhook receivers: ``POST /webhook/<source>`` (and ``/<token>``), beside
Forgejo's ``/webhook`` (docs/adr/025-webhook-receivers.md).

One route per source, so each is authenticated by its own secret and its own scheme, known
before a byte of the body is read (``autoroll.core.receivers.sources``). A request goes
through the same steps whatever its source:

1. the source must name a receiver (404) that is on, its secret set (404 saying which
   variable turns it on; counted ``disabled``);
2. it must present a credential: the signature or ``Authorization`` header, or the path
   token (else 403 ``missing-signature``). A token (header or path) is compared before the
   body is read: a wrong one is 403 ``bad-signature`` and costs nothing more;
3. the body is read within ``MAX_BODY_BYTES`` (else 413 ``too-large``); an HMAC signature is
   then checked against it (403 ``bad-signature``);
4. only then is the body read for meaning (``autoroll.core.receivers``): the tags it pushed
   to a registry autoroll reads become the scope of a pass (``autoroll.core.pushed.tags_of``)
   and the handler returns at once (202 ``targeted``); an event that moves no tag, or names
   only other registries, is 202 ``ignored``; a body that is not the documented shape is 400
   ``unreadable`` — except for the distribution family, which re-sends anything but a 2xx
   in order forever, so it gets 202 and the answer's text says why. The distribution family
   notifies a manifest pushed by tag before the registry has written the tag (measured on
   the real node: a pass started at once read the old digest), so its pushes are looked at
   ``SETTLE_SECONDS`` after the notification.

The digest is never taken from the body: the pass asks the registry. Secrets and path tokens
are never logged (the access log is off, and ``autoroll.instruments.logs`` redacts them).
CloudEvents' abuse-protection handshake (an ``OPTIONS`` with ``WebHook-Request-Origin``, as
Azure Event Grid sends before it delivers) is answered when that receiver is on.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Final

from flask import Flask, Response, request

from autoroll.core.pushed import elsewhere, tags_of
from autoroll.core.receivers import ReadingKind
from autoroll.core.receivers.auth import Auth, hmac_valid, presented, token_valid
from autoroll.core.receivers.sources import RECEIVERS, Receiver, Source
from autoroll.core.scope import Scope
from autoroll.core.webhook_body import MAX_BODY_BYTES
from autoroll.edge.bodies import answer, read_capped_body
from autoroll.instruments.metrics import Metrics

log = logging.getLogger(__name__)

#: Sources whose sender re-sends every delivery not answered 2xx, in order, forever; and
#: which notify a manifest pushed by tag as soon as the manifest is stored, while the tag
#: itself is written just after: a pass started at once can still read the old digest.
_DISTRIBUTION_FAMILY: Final = frozenset({Source.DISTRIBUTION, Source.GITLAB})
#: How long after its notification the distribution family's push is looked at: the tag is
#: written by then (milliseconds on a filesystem, a request on object storage).
SETTLE_SECONDS: Final = 1.0
#: The CloudEvents webhook handshake's headers (cloudevents/spec http-webhook.md, 4.1).
_ORIGIN: Final = "WebHook-Request-Origin"


@dataclass(frozen=True, slots=True)
class Receiving:
    """What the receivers need from the configuration: the secret of each receiver that is
    on, the registry hosts autoroll reads, and the host of a push whose body names none."""

    secrets: Mapping[Source, str] = field(default_factory=dict)
    hosts: tuple[str, ...] = ()
    default_host: str | None = None


def add_receivers(
    app: Flask,
    *,
    receiving: Receiving,
    nudge: Callable[[Scope], None],
    metrics: Metrics,
    later: Callable[[Scope, float], None] | None = None,
) -> None:
    """Register ``/webhook/<source>`` and ``/webhook/<source>/<token>`` on ``app``.

    ``later(scope, seconds)`` asks for a pass over ``scope`` that many seconds from now
    (``Nudge.nudge_in``, or ``HandOff.nudge_in`` with an election): the distribution family's
    pushes wait until the registry has written the tag (module docstring); without it they
    are nudged at once."""
    if any(not s for s in receiving.secrets.values()):
        # An empty key makes every signature forgeable; refuse rather than serve it.
        raise ValueError("a receiver's secret must not be empty")
    handler = _Handler(receiving, nudge, later, metrics)

    # OPTIONS by hand (no automatic answer): it is CloudEvents' handshake, nothing else.
    @app.route("/webhook/<source>", methods=["POST", "OPTIONS"], provide_automatic_options=False)
    def receive(source: str) -> Response:
        if request.method == "OPTIONS":
            return handler.handshake(source)
        return handler.handle(source, None)

    @app.post("/webhook/<source>/<token>")
    def receive_with_token(source: str, token: str) -> Response:
        return handler.handle(source, token)


class _Handler:
    """The steps of the module docstring, for every source."""

    def __init__(
        self,
        receiving: Receiving,
        nudge: Callable[[Scope], None],
        later: Callable[[Scope, float], None] | None,
        metrics: Metrics,
    ) -> None:
        self.receiving = receiving
        self.nudge = nudge
        self.later = later
        self.metrics = metrics

    def count(self, source: Source, outcome: str) -> None:
        self.metrics.webhook_requests.labels(source=str(source), outcome=outcome).inc()

    def receiver(self, name: str) -> Receiver | Response:
        """The receiver ``name`` names, or the 404 that says why there is none."""
        receiver = RECEIVERS.get(Source(name)) if name in RECEIVERS else None
        if receiver is None:
            known = ", ".join(sorted(RECEIVERS))
            return answer(404, f"no receiver named {name[:40]!r}; the receivers are {known}")
        if receiver.source not in self.receiving.secrets:
            self.count(receiver.source, "disabled")
            return answer(404, f"the {receiver.source} receiver is off: set {receiver.variable}")
        return receiver

    def handle(self, name: str, path_token: str | None) -> Response:
        receiver = self.receiver(name)
        if isinstance(receiver, Response):
            return receiver
        source, secret = receiver.source, self.receiving.secrets[receiver.source]
        if (receiver.auth is Auth.PATH) is (path_token is None):
            # A path token where the source takes a header, or none where it takes one.
            self.count(source, "not-found")
            return answer(404, f"{source} deliveries go to {receiver.route}")
        value = path_token if receiver.auth is Auth.PATH else request.headers.get(receiver.header)
        credential = presented(receiver.auth, value)
        if credential is None:
            self.count(source, "missing-signature")
            return answer(403, f"missing {receiver.header or 'token'}")
        if receiver.auth is not Auth.HMAC and not token_valid(secret, credential):
            # Refused on its headers alone: a wrong token costs no body read.
            self.count(source, "bad-signature")
            return answer(403, f"bad {receiver.header or 'token'}")
        body = read_capped_body()
        if body is None:
            self.count(source, "too-large")
            return answer(413, f"body larger than {MAX_BODY_BYTES} bytes")
        if receiver.auth is Auth.HMAC and not hmac_valid(secret.encode(), body, credential):
            self.count(source, "bad-signature")
            return answer(403, "bad signature")
        return self.act(receiver, body)

    def act(self, receiver: Receiver, body: bytes) -> Response:
        """Read an authenticated body and nudge a pass scoped to what it pushed."""
        source = receiver.source
        headers = {name.lower(): value for name, value in request.headers.items()}
        reading = receiver.read(body, headers)
        if reading.kind is ReadingKind.UNREADABLE:
            self.count(source, "unreadable")
            log.debug("%s webhook unreadable: %s", source, reading.detail)
            status = 202 if source in _DISTRIBUTION_FAMILY else 400
            return answer(status, f"unreadable, no pass: {reading.detail}")
        if reading.kind is ReadingKind.IGNORED:
            self.count(source, "ignored")
            return answer(202, f"no pass: {reading.detail}")
        hosts, default = self.receiving.hosts, self.receiving.default_host
        scope = tags_of(reading.pushes, hosts=hosts, default_host=default)
        if scope.tags is not None and not scope.tags:
            self.count(source, "ignored")
            others = elsewhere(reading.pushes, hosts=hosts, default_host=default)
            if not others:
                return answer(202, "no pass: no valid repository:tag among the pushes")
            named = ", ".join(sorted({str(p) for p in others}))
            read = ", ".join(hosts) or "none"
            return answer(202, f"no pass: {named} is on no registry autoroll reads ({read})")
        if source in _DISTRIBUTION_FAMILY and self.later is not None:
            self.later(scope, SETTLE_SECONDS)  # a pass now could read the old digest
        else:
            self.nudge(scope)
        self.count(source, "targeted")
        return answer(202, f"targeted pass requested for {scope}")

    def handshake(self, name: str) -> Response:
        """CloudEvents' webhook validation: allow the requesting origin to deliver."""
        receiver = self.receiver(name)
        if isinstance(receiver, Response):
            return receiver
        origin = request.headers.get(_ORIGIN, "").strip()
        if receiver.source is not Source.CLOUDEVENTS or not origin:
            return answer(405, "OPTIONS is the CloudEvents webhook handshake only")
        response = answer(200, "deliveries allowed")
        response.headers["WebHook-Allowed-Origin"] = origin[:255]
        return response


__all__ = ["Receiving", "add_receivers"]
