"""The pull-secret adapter (``SecretPort``): a pod's pull secrets and its ServiceAccount's.

Two GETs, never a list or a watch: a Secret by name (``secrets: get``) and a ServiceAccount
by name (``serviceaccounts: get``), granted by the chart only when a registry has
``pullSecrets`` on (docs/adr/024-pull-credentials.md). A Secret's ``data`` is decoded from
base64 here and handed on as bytes; it is never logged, and the error for a Secret that
cannot be read names it, never its content.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable
from typing import Any, Final

from autoroll.core.keyring import PullSecret
from autoroll.kube.errors import ClusterApiError, Grant, Operation
from autoroll.kube.transport import SMALL_CALL_TIMEOUT, KubeRest, LazyRest, connect, segment

GET_SECRET: Final = Operation(
    "get secret", "secrets: get", Grant.PULL_SECRETS, answers=frozenset({404})
)
GET_SERVICE_ACCOUNT: Final = Operation(
    "get serviceaccount", "serviceaccounts: get", Grant.PULL_SECRETS, answers=frozenset({404})
)


class KubeSecrets:
    """Reads pull secrets and ServiceAccounts; implements ``autoroll.core.ports.SecretPort``."""

    def __init__(
        self,
        *,
        api_client_factory: Callable[[], Any] = connect,
        rest: KubeRest | None = None,
        observe: Callable[[str], None] | None = None,
    ) -> None:
        self._api = LazyRest(api_client_factory, rest, observe=observe)
        self.requests = 0

    def pull_secret(self, namespace: str, name: str) -> PullSecret | None:
        path = f"/api/v1/namespaces/{segment(namespace)}/secrets/{segment(name)}"
        document = self._get(GET_SECRET, f"{namespace}/{name}", path)
        if document is None:
            return None
        meta = document.get("metadata") or {}
        data: dict[str, bytes] = {}
        for key, value in (document.get("data") or {}).items():
            try:
                data[str(key)] = base64.b64decode(str(value), validate=True)
            except (binascii.Error, ValueError):
                raise ClusterApiError(
                    f"get secret {namespace}/{name}: its data key {key!r} is not base64",
                    status=0,
                ) from None
        return PullSecret(
            namespace=namespace,
            name=name,
            type=str(document.get("type") or ""),
            data=data,
            uid=str(meta.get("uid") or ""),
            resource_version=str(meta.get("resourceVersion") or ""),
        )

    def service_account(self, namespace: str, name: str) -> tuple[str, ...] | None:
        path = f"/api/v1/namespaces/{segment(namespace)}/serviceaccounts/{segment(name)}"
        document = self._get(GET_SERVICE_ACCOUNT, f"{namespace}/{name}", path)
        if document is None:
            return None
        refs = document.get("imagePullSecrets") or ()
        return tuple(str(r["name"]) for r in refs if isinstance(r, dict) and r.get("name"))

    def _get(self, operation: Operation, target: str, path: str) -> dict[str, Any] | None:
        self.requests += 1
        answer = self._api().send(operation, target, "GET", path, timeout=SMALL_CALL_TIMEOUT)
        if not answer.ok:
            return None  # 404: it does not exist
        try:
            document = json.loads(answer.body)
        except ValueError:
            raise ClusterApiError(f"{operation.action} {target}: not JSON", status=0) from None
        if not isinstance(document, dict):
            raise ClusterApiError(f"{operation.action} {target}: not an object", status=0)
        return document


__all__ = ["GET_SECRET", "GET_SERVICE_ACCOUNT", "KubeSecrets"]
