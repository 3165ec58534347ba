"""The configured registries wired to their adapters: one ``RegistryClient`` each, in one
``RegistryPool``, and the pods' pull credentials when any registry reads them.

Shared by ``autoroll serve`` (``server``) and ``autoroll plan`` (``cli``), so the plan asks
each registry exactly as the controller does.
"""

from __future__ import annotations

import base64
from collections.abc import Callable

from autoroll.config import Config
from autoroll.config.registries import RegistrySettings
from autoroll.controller.credentials import PullCredentials
from autoroll.core.ports import SecretPort
from autoroll.kube.secrets import KubeSecrets
from autoroll.registry import Limits, RegistryClient, RegistryObserver, registry_session
from autoroll.registry.pool import RegistryPool


def registry_pool(
    config: Config,
    *,
    observer: RegistryObserver | None = None,
    on_secret: Callable[[str], None] | None = None,
) -> RegistryPool:
    """One client per configured registry, with its limits, CA and own credentials."""
    return RegistryPool(
        {
            r.host: _client(config, r, observer=observer, on_secret=on_secret)
            for r in config.registries
        }
    )


def _client(
    config: Config,
    settings: RegistrySettings,
    *,
    observer: RegistryObserver | None,
    on_secret: Callable[[str], None] | None,
) -> RegistryClient:
    forgejo = settings.forgejo
    return RegistryClient(
        session=registry_session(settings.ca_file),
        base_url=settings.base_url,
        user=config.forgejo_user if forgejo else "",
        token=config.forgejo_token.reveal() if forgejo else "",
        keyring=settings.keyring,
        observer=observer,
        limits=Limits(
            lookup_concurrency=settings.concurrency,
            requests_per_pass=settings.requests_per_pass,
            max_backoff_seconds=float(settings.max_backoff_seconds),
        ),
        on_secret=on_secret,
        ca_file=settings.ca_file,
        realm_hosts=settings.realm_hosts,
    )


def pull_credentials(
    config: Config,
    *,
    secrets: SecretPort | None = None,
    on_secret: Callable[[str], None] | None = None,
) -> PullCredentials | None:
    """The pods' pull credentials for the registries with ``pullSecrets`` (None: none has)."""
    hosts = config.pull_secret_hosts
    if not hosts:
        return None
    return PullCredentials(secrets=secrets or KubeSecrets(), hosts=hosts, on_secret=on_secret)


def registry_secrets(config: Config) -> list[str]:
    """Every password of the registries' own Secrets and the forms a log line could carry
    them in, for the redactor (pull secrets are told to it as they are read)."""
    found: list[str] = []
    for settings in config.registries:
        for entry in settings.keyring.entries:
            credential = entry.credential
            if credential.password:
                pair = f"{credential.username}:{credential.password}".encode()
                found += [credential.password, base64.b64encode(pair).decode("ascii")]
    return found


__all__ = ["pull_credentials", "registry_pool", "registry_secrets"]
