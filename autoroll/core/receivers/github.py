"""GitHub's ``package`` event for a container image on ghcr.io (pure).

Documented in GitHub's webhook events reference ("package") and its schema in
github/rest-api-description; octokit/webhooks keeps example deliveries
(``payload-examples/api.github.com/package/``). A repository or organisation webhook
subscribed to "Packages" POSTs, signed with ``X-Hub-Signature-256``, an event named by the
``X-GitHub-Event`` header:

- ``package`` (and its older twin ``registry_package``, the same object under that key) with
  ``action`` ``published`` or ``updated``; ``package.package_type`` or
  ``package.registry.type`` is ``CONTAINER`` for ghcr.io (GitHub's own example says so only in
  the latter); the image is
  ``ghcr.io/<package.owner.login>/<package.name>`` (lowercase, as ghcr.io names it) and the
  tag ``package.package_version.container_metadata.tag.name``, empty for a version pushed
  by digest (a multi-arch image's platform manifests);
- ``ping`` when the hook is created.

Every other event, action or package type moves no tag.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from autoroll.core.pushed import Pushed
from autoroll.core.receivers import (
    BodyError,
    Reading,
    ignored,
    load,
    mapping,
    pushed,
    text,
    unreadable,
)

#: The header naming the event (``X-GitHub-Event``; readers get header names lowercased).
EVENT_HEADER: Final = "x-github-event"
GHCR: Final = "ghcr.io"
#: The events whose body is a package (the older name first appeared with the registry).
_PACKAGE_EVENTS: Final = ("package", "registry_package")
_ACTIONS: Final = ("published", "updated")


def read_github(body: bytes, headers: Mapping[str, str]) -> Reading:
    """A package event's tag on ghcr.io; other events, actions and types are ignored."""
    event = headers.get(EVENT_HEADER, "").strip().lower()
    if event == "ping":
        return ignored("a ping (the hook was created): nothing pushed")
    if event not in _PACKAGE_EVENTS:
        return ignored(f"a {event or 'nameless'} event is not a package event")
    try:
        document = mapping(load(body))
    except BodyError as exc:
        return unreadable(str(exc))
    action = text(document.get("action"))
    if action not in _ACTIONS:
        return ignored(f"a package {action or 'nameless'} action moves no tag")
    package = mapping(document.get(event))
    kinds = {
        (text(package.get("package_type")) or "").lower(),
        (text(mapping(package.get("registry")).get("type")) or "").lower(),
    }
    if "container" not in kinds:
        named = "/".join(sorted(k for k in kinds if k)) or "typeless"
        return ignored(f"a {named} package is not a container image on ghcr.io")
    owner = text(mapping(package.get("owner")).get("login"))
    name = text(package.get("name"))
    if owner is None or name is None:
        return unreadable("the package names no owner.login or name")
    version = mapping(package.get("package_version"))
    tag = text(mapping(mapping(version.get("container_metadata")).get("tag")).get("name"))
    repository = f"{owner}/{name}".lower()
    return pushed(
        [Pushed(GHCR, repository, tag)],
        otherwise=f"a version of {repository} pushed by digest moves no tag",
    )


__all__ = ["EVENT_HEADER", "GHCR", "read_github"]
