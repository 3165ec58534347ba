"""Docker Hub's and Quay's push webhooks: hosted registries that cannot sign (pure).

Neither sends a signature or a configurable header, so their route carries a secret token
in its path (``autoroll.edge.receivers``); the body is read only after that token matched.

Docker Hub (docker/docs ``content/manuals/docker-hub/repos/manage/webhooks.md``): one POST per
push with ``push_data.tag`` and ``repository.repo_name`` (``namespace/name``, the image
``docker.io/<repo_name>``). ``callback_url`` is a legacy field Docker no longer supports;
autoroll never calls it.

Quay (quay/quay ``notifications/notificationmethod.py``, ``WebhookMethod``, and
``notifications/__init__.py``, ``build_repository_event_data``): a repository notification of
method "Webhook POST" sends its event's data as the body. A "Push to Repository" event
(``repo_push``) carries ``updated_tags``, ``repository`` (``namespace/name``) and
``docker_url`` (``<quay host>/<namespace>/<name>``, the only place the host is named;
``updated_tags`` was once an object keyed by tag, which is read too). Build,
mirror and vulnerability events carry no ``updated_tags`` and move no tag.
"""

from __future__ import annotations

from typing import Any, Final

from autoroll.core.images import DEFAULT_HOST
from autoroll.core.pushed import Pushed
from autoroll.core.receivers import Reading, ignored, mapping, pushed, reads_json, text, unreadable

#: Quay's hosted registry, when an event names no ``docker_url``.
QUAY: Final = "quay.io"
#: Tags read from one Quay event at most.
MAX_UPDATED_TAGS: Final = 64


@reads_json
def read_dockerhub(document: Any) -> Reading:
    """A Docker Hub push: ``docker.io/<repo_name>:<tag>``."""
    push = mapping(document)
    repository = text(mapping(push.get("repository")).get("repo_name"))
    if repository is None:
        return unreadable("not a Docker Hub push (no repository.repo_name)")
    tag = text(mapping(push.get("push_data")).get("tag"))
    return pushed(
        [Pushed(DEFAULT_HOST, repository, tag)],
        otherwise=f"a push to {repository} names no tag",
    )


@reads_json
def read_quay(document: Any) -> Reading:
    """A Quay "Push to Repository" event: each of its ``updated_tags``."""
    event = mapping(document)
    repository = text(event.get("repository"))
    if repository is None:
        return unreadable("not a Quay repository event (no repository)")
    tags = event.get("updated_tags")
    if tags is None:
        return ignored(f"an event of {repository} without updated_tags is not a push")
    if isinstance(tags, dict):
        tags = list(tags)  # Quay's first payloads mapped each tag to its image id
    if not isinstance(tags, list) or len(tags) > MAX_UPDATED_TAGS:
        return unreadable(f"updated_tags is not a list of at most {MAX_UPDATED_TAGS} tags")
    docker_url = text(event.get("docker_url"))
    # quay.io itself, or the SERVER_HOSTNAME of a self-hosted Quay.
    host = docker_url.split("/", 1)[0] if docker_url and "/" in docker_url else QUAY
    return pushed(
        [Pushed(host, repository, text(tag)) for tag in tags],
        otherwise=f"a push to {repository} updated no tag",
    )


__all__ = ["MAX_UPDATED_TAGS", "QUAY", "read_dockerhub", "read_quay"]
