"""The pinning webhook's MutatingWebhookConfiguration: its caBundle, kept by the controller.

With ``PINNING_TLS=controller`` the controller makes its own CA and serving certificate
(``autoroll.edge.webhook_pki``) and must tell the API server which CA to trust: the
``caBundle`` of every webhook in the one configuration the chart names
(``PINNING_WEBHOOK_CONFIGURATION``). RBAC: ``get`` and ``patch`` on that one name
(``resourceNames``), only then. The patch is a strategic merge by webhook name, so nothing
but the caBundle is written, and a chart upgrade (which never sets it) keeps it.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any, Final

from autoroll.kube.errors import Operation
from autoroll.kube.transport import SMALL_CALL_TIMEOUT, KubeRest, LazyRest, connect

_PATH: Final = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/{name}"
_SMP: Final = "application/strategic-merge-patch+json"
GET_CONFIG: Final = Operation(
    "get mutatingwebhookconfiguration",
    "mutatingwebhookconfigurations: get (pinning.enabled, resourceNames: the webhook's)",
)
PATCH_CONFIG: Final = Operation(
    "patch mutatingwebhookconfiguration",
    "mutatingwebhookconfigurations: patch (pinning.enabled, resourceNames: the webhook's)",
)


class KubeWebhookConfig:
    """Reads and writes the caBundle of one MutatingWebhookConfiguration."""

    def __init__(
        self,
        name: str,
        *,
        api_client_factory: Callable[[], Any] = connect,
        rest: KubeRest | None = None,
        observe: Callable[[str], None] | None = None,
    ) -> None:
        self._name = name
        self._api = LazyRest(api_client_factory, rest, observe)

    def ca_bundle(self) -> bytes:
        """The first webhook's caBundle as PEM (empty when unset)."""
        answer = self._api().send(
            GET_CONFIG, self._name, "GET", _PATH.format(name=self._name), timeout=SMALL_CALL_TIMEOUT
        )
        webhooks = answer.json().get("webhooks") or []
        encoded = (webhooks[0].get("clientConfig") or {}).get("caBundle", "") if webhooks else ""
        return base64.b64decode(encoded) if encoded else b""

    def set_ca_bundle(self, pem: bytes) -> None:
        """Every webhook of the configuration trusts ``pem`` (one strategic-merge patch)."""
        answer = self._api().send(
            GET_CONFIG, self._name, "GET", _PATH.format(name=self._name), timeout=SMALL_CALL_TIMEOUT
        )
        names = [w.get("name") for w in answer.json().get("webhooks") or [] if w.get("name")]
        encoded = base64.b64encode(pem).decode("ascii")
        body = {"webhooks": [{"name": n, "clientConfig": {"caBundle": encoded}} for n in names]}
        self._api().send(
            PATCH_CONFIG,
            self._name,
            "PATCH",
            _PATH.format(name=self._name),
            body=body,
            content_type=_SMP,
            timeout=SMALL_CALL_TIMEOUT,
        )


__all__ = ["KubeWebhookConfig"]
