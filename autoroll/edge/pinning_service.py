"""The pinning webhook as one piece the process starts and stops (``PINNING=true``).

It owns the admission view (``ApprovalBook``, filled by the pass through ``Approver``), the
certificates and their rotation, and the HTTPS listener. ``start`` never raises for want of
a certificate: the controller keeps rolling without the webhook (failurePolicy Ignore lets
every pod in meanwhile) and says so every ``RETRY_SECONDS`` until the certificate can be made
and published (the MutatingWebhookConfiguration missing, RBAC, the API down) or loaded
(cert-manager's Secret not there yet). A port that cannot be bound does raise: that is a
configuration error, said at boot like ``PROBE_ADDR``'s.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Collection
from datetime import timedelta
from typing import Final

from autoroll.config.pinning import Pinning, PinningTLS
from autoroll.controller.approvals import ApprovalBook, Approver
from autoroll.core.approval import NO_HOLDS, DigestHolds
from autoroll.core.policy import Guardrails
from autoroll.core.ports import EventPort, PresencePort
from autoroll.edge.admission import AdmissionServer
from autoroll.edge.webhook_pki import (
    CertificateRotator,
    Certificates,
    ControllerCertificates,
    FileCertificates,
    WebhookConfigPort,
)
from autoroll.instruments.pinning_metrics import PinningMetrics

log = logging.getLogger(__name__)

#: Seconds between attempts to get a first certificate.
RETRY_SECONDS: Final = 10.0
#: Seconds between certificate checks: rotation is due at two thirds of the lifetime (a
#: minute at least), and a mounted Secret is updated by the kubelet about once a minute.
CHECK_SECONDS: Final = 30.0


class PinningService:
    """The view, the certificates, their rotation and the listener (module docstring)."""

    def __init__(
        self,
        settings: Pinning,
        *,
        guardrails: Guardrails,
        registries: Collection[str],
        metrics: PinningMetrics,
        presence: PresencePort | None,
        events: EventPort | None,
        webhook_config: WebhookConfigPort | None,
        holds: DigestHolds = NO_HOLDS,
    ) -> None:
        """``holds``: more reasons to hold a digest than the guardrails' own (the
        quarantine: ``autoroll.edge.services.QuarantineHolds``)."""
        self.book = ApprovalBook()
        self.approver = Approver(
            book=self.book,
            guardrails=guardrails,
            registries=registries,
            presence=presence,
            events=events,
            metrics=metrics,
            holds=holds,
        )
        self.certificates: Certificates
        if settings.tls is PinningTLS.FILES:
            self.certificates = FileCertificates(
                settings.tls_dir, on_new=metrics.certificate_rotations.inc
            )
        else:
            if webhook_config is None:
                raise ValueError("PINNING_TLS=controller needs the webhook configuration's port")
            self.certificates = ControllerCertificates(
                dns_names=settings.dns_names,
                lifetime=timedelta(seconds=settings.cert_seconds),
                config=webhook_config,
                on_new=lambda _: metrics.certificate_rotations.inc(),
            )
        interval = min(CHECK_SECONDS, max(1.0, settings.cert_seconds / 20))
        self._rotator = CertificateRotator(self.certificates, interval=interval)
        self.server = AdmissionServer(
            settings.host,
            settings.port,
            context=self.certificates.context,
            approvals=self.book,
            registries=registries,
            metrics=metrics,
        )
        self._stop = threading.Event()
        self._starter = threading.Thread(
            target=self._first_certificate, name="autoroll-pinning-start", daemon=True
        )
        self._serving = threading.Event()

    @property
    def serving(self) -> bool:
        return self._serving.is_set()

    def start(self) -> None:
        """Try for a certificate now; if none yet, keep trying on a thread."""
        if self._try_certificate():
            self._serve()
        else:
            self._starter.start()

    def stop(self, timeout: float = 2.0) -> None:
        """Stop the certificate starter, the listener and the rotator, all within ``timeout``."""
        self._stop.set()
        deadline = time.monotonic() + timeout
        if self._starter.is_alive():
            self._starter.join(timeout)
        if self._serving.is_set():
            self.server.stop(max(0.05, deadline - time.monotonic()))
            self._rotator.stop(max(0.05, deadline - time.monotonic()))

    def _first_certificate(self) -> None:
        while not self._stop.wait(RETRY_SECONDS):
            if self._try_certificate():
                self._serve()
                return

    def _try_certificate(self) -> bool:
        try:
            self.certificates.start()
        except Exception as exc:
            log.error(
                "pinning webhook: no serving certificate yet (%s); new pods are admitted"
                " unpinned until there is one; trying again in %gs",
                exc,
                RETRY_SECONDS,
                extra={"event": "pinning-not-serving"},
            )
            return False
        return True

    def _serve(self) -> None:
        self.server.start()
        self._rotator.start()
        self._serving.set()


__all__ = ["PinningService"]
