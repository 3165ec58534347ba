"""The credentials a new pod of each workload would pull with, read as Kubernetes reads them.

For a registry with ``pullSecrets`` on, the pass reads what the kubelet will use for a
replacement pod (docs/adr/024-pull-credentials.md):

- the pod template's ``imagePullSecrets``, or, when it lists none, its ServiceAccount's
  (the ServiceAccount admission plugin copies those into a pod that has none:
  k8s.io/kubernetes v1.37.2 ``plugin/pkg/admission/serviceaccount/admission.go``);
- each Secret by name, once per pass (``get``; never listed); one that does not exist is
  skipped with a note, as the kubelet skips it (``getPullSecretsForPod``), and the note
  is said when the registry then refuses; one the kubelet would refuse (malformed JSON)
  makes every image of the workload on such a registry unknown, naming it, as it fails
  the kubelet's whole keyring (``MakeDockerKeyring``); one autoroll may not read (RBAC)
  makes them unknown too, naming the rule to grant.

Parsed Secrets are cached by UID and resourceVersion, so an unchanged Secret is parsed once
and its credentials keep their Bearer tokens (cached by a hash of the credential); a rotated
one is parsed again. Every password read is handed to the log redactor before any line
could carry it; the values never reach a log line, only the Secrets' names do.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from typing import TypeVar

from autoroll.core.images import TagRef
from autoroll.core.keyring import (
    Entry,
    Keyring,
    KeyringError,
    PullSecret,
    parse_pull_secret,
    pull_name,
)
from autoroll.core.lookups import Lookup
from autoroll.core.model import Unknown, WorkloadView
from autoroll.core.ports import SecretPort
from autoroll.core.selection import select_container

log = logging.getLogger(__name__)

#: The ServiceAccount a pod runs as when its template names none.
DEFAULT_SERVICE_ACCOUNT = "default"


@dataclass(frozen=True, slots=True)
class WorkloadKeyring:
    """A workload's keyring, what was skipped on the way (``notes``), or the ``failure``
    that makes its images on such registries unknown."""

    keyring: Keyring = field(default_factory=Keyring)
    notes: tuple[str, ...] = ()
    failure: Unknown | None = None


class PullCredentials:
    """Builds each workload's lookups with its pods' pull credentials (module docstring)."""

    def __init__(
        self,
        *,
        secrets: SecretPort,
        hosts: Collection[str],
        on_secret: Callable[[str], None] | None = None,
    ) -> None:
        """``hosts``: the registries whose images are asked with pull secrets."""
        self._secrets = secrets
        self._hosts = frozenset(hosts)
        self._on_secret = on_secret
        self._parsed: dict[tuple[str, str], tuple[tuple[str, str], list[Entry] | KeyringError]] = {}

    @property
    def hosts(self) -> frozenset[str]:
        return self._hosts

    def lookups(
        self,
        workloads: Iterable[WorkloadView],
        *,
        registries: Collection[str],
        pinning: bool = False,
    ) -> tuple[dict[str, dict[TagRef, Lookup | Unknown]], dict[str, tuple[str, ...]]]:
        """By workload key, each counted container's tag: its lookup, with the credentials
        that serve its image in the kubelet's order, or the Unknown that stops it; and, by
        workload key, what was skipped on the way (a missing Secret: ``explained``)."""
        secrets: dict[tuple[str, str], PullSecret | Unknown | None] = {}
        accounts: dict[tuple[str, str], tuple[str, ...] | Unknown | None] = {}
        asked: dict[str, dict[TagRef, Lookup | Unknown]] = {}
        notes: dict[str, tuple[str, ...]] = {}
        for workload in workloads:
            mine: dict[TagRef, Lookup | Unknown] = {}
            keyring: WorkloadKeyring | None = None
            for container in workload.containers:
                ref = select_container(container, registries=registries, pinning=pinning).ref
                if ref is None:
                    continue
                if ref.host not in self._hosts:
                    mine[ref] = Lookup(ref)  # the registry's own credentials only
                    continue
                if keyring is None:
                    keyring = self._keyring(workload, secrets, accounts)
                if keyring.failure is not None:
                    mine[ref] = keyring.failure
                    continue
                credentials = keyring.keyring.lookup(pull_name(container.image))
                mine[ref] = Lookup(ref, credentials)
                if not credentials and keyring.notes:
                    log.debug(
                        "%s: no pull secret serves %s (%s); asking without one",
                        workload.key,
                        ref,
                        "; ".join(keyring.notes),
                        extra={"event": "pull-secrets", "workload": workload.key},
                    )
            asked[workload.key] = mine
            if keyring is not None and keyring.notes:
                notes[workload.key] = keyring.notes
        # Parsed Secrets no workload of this pass referenced are forgotten (deleted ones too).
        self._parsed = {k: v for k, v in self._parsed.items() if k in secrets}
        return asked, notes

    # -- reading ----------------------------------------------------------------------------

    def _keyring(
        self,
        workload: WorkloadView,
        secrets: dict[tuple[str, str], PullSecret | Unknown | None],
        accounts: dict[tuple[str, str], tuple[str, ...] | Unknown | None],
    ) -> WorkloadKeyring:
        namespace = workload.namespace
        names, via = workload.pull_secrets, "imagePullSecret"
        notes: list[str] = []
        if not names:
            account = workload.service_account or DEFAULT_SERVICE_ACCOUNT
            found = _memo(accounts, (namespace, account), self._secrets.service_account)
            if isinstance(found, Unknown):
                return WorkloadKeyring(failure=found)
            if found is None:
                notes.append(f"ServiceAccount {namespace}/{account} not found")
                found = ()
            names, via = found, f"ServiceAccount {namespace}/{account}'s imagePullSecret"
        entries: list[list[Entry]] = []
        for name in names:
            source = f"{via} {namespace}/{name}"
            secret = _memo(secrets, (namespace, name), self._secrets.pull_secret)
            if isinstance(secret, Unknown):
                return WorkloadKeyring(failure=Unknown(secret.reason, f"{source}: {secret.detail}"))
            if secret is None:
                notes.append(f"{source} not found (the kubelet skips it too)")
                continue
            parsed = self._parse(secret, source)
            if isinstance(parsed, KeyringError):
                return WorkloadKeyring(
                    failure=Unknown(
                        "pull-secret-invalid",
                        f"{parsed}; the kubelet refuses every pull of such a pod too: fix or"
                        " remove that Secret",
                    )
                )
            entries.append(parsed)
        return WorkloadKeyring(Keyring.of(entries), tuple(notes))

    def _parse(self, secret: PullSecret, source: str) -> list[Entry] | KeyringError:
        """``secret`` parsed, cached by its UID and resourceVersion (and the source text)."""
        key = (secret.namespace, secret.name)
        version = (f"{secret.uid}/{secret.resource_version}", source)
        cached = self._parsed.get(key)
        if cached is not None and cached[0] == version and secret.resource_version:
            return cached[1]
        parsed: list[Entry] | KeyringError
        try:
            entries = parse_pull_secret(secret.type, secret.data, source=source)
        except KeyringError as exc:
            parsed = exc
        else:
            self._redact(entries)
            parsed = entries
        self._parsed[key] = (version, parsed)
        return parsed

    def _redact(self, entries: Iterable[Entry]) -> None:
        if self._on_secret is None:
            return
        for entry in entries:
            credential = entry.credential
            if credential.password:
                self._on_secret(credential.password)
                pair = f"{credential.username}:{credential.password}".encode()
                self._on_secret(base64.b64encode(pair).decode("ascii"))


_K = TypeVar("_K", bound=tuple[str, str])
_V = TypeVar("_V")


def _memo(memo: dict[_K, _V | Unknown], key: _K, read: Callable[[str, str], _V]) -> _V | Unknown:
    """``read(*key)`` once per pass; a failure is the Unknown saying it."""
    if key not in memo:
        try:
            memo[key] = read(*key)
        except Exception as exc:  # an API failure: this workload's images unknown, said
            memo[key] = Unknown("pull-secret-unreadable", str(exc))
    return memo[key]


def explained(value: Unknown, notes: Iterable[str]) -> Unknown:
    """``value`` with ``notes`` (the pull secrets that were skipped) added to its detail."""
    said = "; ".join(notes)
    return Unknown(value.reason, f"{value.detail}; {said}") if said else value


__all__ = ["PullCredentials", "WorkloadKeyring", "explained"]
