"""The optional services the controller wires beside its pass, each from its settings block:
the notifier (``NOTIFY_URLS``, docs/adr/026), the quarantine's record
(``QUARANTINE_CONFIGMAP``, docs/adr/026) and the pinning webhook (``PINNING``,
docs/adr/028). Each is None when its setting leaves it off; ``autoroll.edge.wiring`` starts
and stops the ones that run threads with the controller."""

from __future__ import annotations

from collections.abc import Callable

from autoroll.config import Config
from autoroll.controller.notifier import Notifier
from autoroll.core.approval import DigestHolds
from autoroll.core.images import TagRef
from autoroll.core.model import Digest
from autoroll.core.ports import EventPort, NotifyPort, PresencePort, QuarantinePort, RegistryPort
from autoroll.core.quarantine import QuarantineBook, blocking
from autoroll.edge.pinning_service import PinningService
from autoroll.instruments import logs
from autoroll.instruments.metrics import Metrics
from autoroll.instruments.pinning_metrics import PinningMetrics
from autoroll.kube import KubeQuarantine
from autoroll.kube.webhook_config import KubeWebhookConfig
from autoroll.notify import AppriseNotifier


def nobody(_: object) -> None:
    """Where happenings go when nobody is to be told."""
    return None


def notifier_for(config: Config, metrics: Metrics, port: NotifyPort | None) -> Notifier | None:
    """The notifier thread, when there is anyone to tell (NOTIFY_URLS, or a port given)."""
    settings = config.notifications
    if port is None:
        if not settings.enabled:
            return None
        port = AppriseNotifier(settings.url_lines(), on_secret=logs.redact_also)
    return Notifier(
        port,
        metrics=metrics,
        happenings=settings.happenings,
        throttle_seconds=settings.throttle_seconds,
    )


def quarantine_record(config: Config) -> QuarantinePort | None:
    """The ConfigMap that keeps the quarantine (docs/adr/026), if one is named."""
    record = config.quarantine
    if record.configmap is None:
        return None
    return KubeQuarantine(namespace=record.namespace, name=record.configmap)


class QuarantineHolds:
    """The quarantine as one more hold on an approval (``DigestHolds``, docs/adr/028): a
    digest quarantined for its tag is never what new pods are pinned to. ``book`` is read
    at each call, so the pinning view follows the reconciler's copy of the record."""

    def __init__(self, book: Callable[[], QuarantineBook]) -> None:
        self._book = book

    def held(self, ref: TagRef, digest: Digest) -> str | None:
        entry = blocking(self._book(), ref, digest)
        if entry is None:
            return None
        return f"{digest.short} is quarantined for {entry.key}: {entry.reason.value}"


def pinning_service(
    config: Config,
    metrics: Metrics,
    *,
    registry: RegistryPort,
    events: EventPort | None,
    holds: DigestHolds,
) -> PinningService | None:
    """The pinning webhook (docs/adr/028), or None when ``PINNING`` is off."""
    settings = config.pinning
    if settings is None:
        return None
    return PinningService(
        settings,
        guardrails=config.guardrails,
        registries=config.registry_hosts,
        metrics=PinningMetrics(metrics.registry),
        presence=registry if isinstance(registry, PresencePort) else None,
        events=events,
        holds=holds,
        webhook_config=KubeWebhookConfig(
            settings.webhook_configuration, observe=metrics.kube_request
        )
        if settings.webhook_configuration
        else None,
    )
