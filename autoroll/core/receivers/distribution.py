"""The distribution registry's notifications: an envelope of events (pure).

Documented in distribution's ``docs/content/about/notifications.md`` (the fixtures in
``tests/unit/data/receivers/`` say where each came from): the registry POSTs
``{"events": [...]}`` to each configured endpoint, with the static headers of the endpoint's
configuration (``Authorization`` among them), for every manifest and blob push, pull and
delete. A tag push is an event with ``action: push`` whose ``target`` has a ``tag`` (a manifest
pushed by tag); its ``target.repository`` is the repository and ``request.host`` the host the
client pushed to. Everything else moves no tag: pulls (one per pull, autoroll's own HEADs
included), blob pushes, manifests pushed by digest (a multi-arch index's children), deletes.

GitLab's container registry is a fork of distribution and sends the same envelope
(``registry['notifications']`` in ``gitlab.rb``), and Azure Container Registry's
``ImagePushed`` CloudEvent carries one such event as its data (``event_push``).

The registry retries a delivery until it gets a 2xx or 3xx, in order, so an authenticated
delivery is always answered 2xx, whatever it holds: refusing a pull event would stall the
queue behind it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from autoroll.core.pushed import Pushed
from autoroll.core.receivers import (
    Reading,
    combine,
    ignored,
    mapping,
    pushed,
    reads_json,
    text,
    unreadable,
)

#: Events read from one envelope at most: the registry groups a handful; a longer list is
#: not a registry's.
MAX_EVENTS = 256


def event_push(event: Mapping[str, Any]) -> Reading:
    """One notification event: the tag it pushed, or why it moves none."""
    action = text(event.get("action"))
    if action != "push":
        return ignored(f"a {action or 'nameless'} event moves no tag")
    target = mapping(event.get("target"))
    repository = text(target.get("repository"))
    if repository is None:
        return unreadable("a push event names no target.repository")
    tag = text(target.get("tag"))
    if tag is None:
        return ignored(f"a push to {repository} by digest (a blob or a manifest) moves no tag")
    host = text(mapping(event.get("request")).get("host"))
    return pushed([Pushed(host, repository, tag)], otherwise="")


@reads_json
def read_envelope(document: Any) -> Reading:
    """A notification envelope: every tag push among its events."""
    events = mapping(document).get("events")
    if not isinstance(events, list):
        return unreadable("not a notification envelope (no events list)")
    if len(events) > MAX_EVENTS:
        return unreadable(f"{len(events)} events in one envelope (at most {MAX_EVENTS} read)")
    readings = [
        event_push(e) if isinstance(e, dict) else unreadable("an event is not an object")
        for e in events
    ]
    found = combine(readings)
    if not found.pushes and readings and all(r.detail == readings[0].detail for r in readings):
        return found
    if not found.pushes:
        return ignored(f"none of {len(events)} events pushes a tag ({found.detail})")
    return found


__all__ = ["MAX_EVENTS", "event_push", "read_envelope"]
