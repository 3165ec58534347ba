"""The receivers: which sources autoroll reads webhooks from, and how each is authenticated.

One table (``RECEIVERS``) so the configuration (which variable holds each secret), the HTTP
edge (the route and the check) and the docs (README's table of receivers) cannot drift. The
Forgejo/Gitea receiver at ``/webhook`` predates it and keeps its own code
(``autoroll.edge.web``); it is a ``Source`` here only to label the metrics.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from autoroll.core.receivers import BodyReader
from autoroll.core.receivers.auth import Auth
from autoroll.core.receivers.cloudevents import read_cloudevents
from autoroll.core.receivers.distribution import read_envelope
from autoroll.core.receivers.generic import read_generic
from autoroll.core.receivers.github import read_github
from autoroll.core.receivers.harbor import read_harbor
from autoroll.core.receivers.hubs import read_dockerhub, read_quay


class Source(StrEnum):
    """Where a webhook comes from; the value is its route's last part and its metrics label."""

    FORGEJO = "forgejo"  # POST /webhook (Forgejo and Gitea package events)
    DISTRIBUTION = "distribution"
    GITLAB = "gitlab"
    HARBOR = "harbor"
    GITHUB = "github"
    DOCKERHUB = "dockerhub"
    QUAY = "quay"
    GENERIC = "generic"
    CLOUDEVENTS = "cloudevents"


@dataclass(frozen=True, slots=True)
class Receiver:
    """One source's receiver: its secret's variable, its scheme and where the credential is,
    the body's reader, and what its route is for (the docs' wording)."""

    source: Source
    variable: str
    auth: Auth
    header: str  # the header carrying the credential ("" for a path token)
    read: BodyReader
    sender: str

    @property
    def route(self) -> str:
        suffix = "/<token>" if self.auth is Auth.PATH else ""
        return f"/webhook/{self.source}{suffix}"


AUTHORIZATION: Final = "Authorization"

RECEIVERS: Final[Mapping[Source, Receiver]] = {
    r.source: r
    for r in (
        Receiver(
            Source.DISTRIBUTION,
            "DISTRIBUTION_WEBHOOK_TOKEN",
            Auth.HEADER,
            AUTHORIZATION,
            read_envelope,
            "the distribution registry (docker-registry, registry:2): notifications.endpoints",
        ),
        Receiver(
            Source.GITLAB,
            "GITLAB_WEBHOOK_TOKEN",
            Auth.HEADER,
            AUTHORIZATION,
            read_envelope,
            "GitLab's container registry (self-managed): registry['notifications']",
        ),
        Receiver(
            Source.HARBOR,
            "HARBOR_WEBHOOK_TOKEN",
            Auth.HEADER,
            AUTHORIZATION,
            read_harbor,
            "Harbor: a project webhook of type HTTP, payload format Default",
        ),
        Receiver(
            Source.GITHUB,
            "GITHUB_WEBHOOK_SECRET",
            Auth.HMAC,
            "X-Hub-Signature-256",
            read_github,
            "GitHub: a repository or organisation webhook on Packages (ghcr.io)",
        ),
        Receiver(
            Source.DOCKERHUB,
            "DOCKERHUB_WEBHOOK_TOKEN",
            Auth.PATH,
            "",
            read_dockerhub,
            "Docker Hub: a repository webhook",
        ),
        Receiver(
            Source.QUAY,
            "QUAY_WEBHOOK_TOKEN",
            Auth.PATH,
            "",
            read_quay,
            "Quay: a repository notification, Push to Repository, Webhook POST",
        ),
        Receiver(
            Source.GENERIC,
            "GENERIC_WEBHOOK_SECRET",
            Auth.HMAC,
            "X-Signature",
            read_generic,
            "your own sender (CI): autoroll's JSON format",
        ),
        Receiver(
            Source.CLOUDEVENTS,
            "CLOUDEVENTS_WEBHOOK_TOKEN",
            Auth.HEADER,
            AUTHORIZATION,
            read_cloudevents,
            "CloudEvents: Harbor (CloudEvents format), Azure Event Grid (ACR), your own",
        ),
    )
}

__all__ = ["AUTHORIZATION", "RECEIVERS", "Receiver", "Source"]
