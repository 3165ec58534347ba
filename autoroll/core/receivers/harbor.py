"""Harbor's artifact push webhook (pure).

Documented in goharbor/website ``docs/working-with-projects/project-configuration/
configure-webhooks.md`` and Harbor's formatters (``src/pkg/notifier/formats/default.go``,
``cloudevents.go``). A webhook policy of type HTTP POSTs, with the policy's "auth header" as
``Authorization``:

- in the *Default* format, ``{"type": "PUSH_ARTIFACT", "event_data": {...}}``;
- in the *CloudEvents* format, an event of type ``harbor.artifact.pushed`` whose ``data`` is
  that same ``event_data`` (read by ``autoroll.core.receivers.cloudevents``).

``event_data.resources`` lists what was pushed, each with its ``tag`` (a digest when the
artifact was pushed by digest) and ``resource_url`` (``<harbor host>/<project>/<repo>:<tag>``,
the only place the host is named); ``event_data.repository.repo_full_name`` is the
repository. Every other event type (pulls, deletes, scans, quotas, replication) moves no tag.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from autoroll.core.model import is_digest
from autoroll.core.pushed import Pushed
from autoroll.core.receivers import Reading, ignored, mapping, pushed, reads_json, text, unreadable

#: Resources read from one event at most: Harbor lists the tags of one artifact.
MAX_RESOURCES = 64


def _host_of(resource_url: str | None) -> str | None:
    """``harbor.example.org`` of ``harbor.example.org/project/app:v1``; None if it has none."""
    if resource_url is None or "/" not in resource_url:
        return None
    return resource_url.split("/", 1)[0] or None


def event_data_pushes(data: Mapping[str, Any]) -> Reading:
    """A push event's ``event_data`` (or a CloudEvent's ``data``): its tag pushes."""
    repository = text(mapping(data.get("repository")).get("repo_full_name"))
    if repository is None:
        return unreadable("the event names no repository.repo_full_name")
    resources = data.get("resources")
    if not isinstance(resources, list):
        return unreadable("the event has no resources list")
    if len(resources) > MAX_RESOURCES:
        return unreadable(f"{len(resources)} resources (at most {MAX_RESOURCES} read)")
    found: list[Pushed] = []
    for resource in resources:
        item = mapping(resource)
        tag = text(item.get("tag"))
        host = _host_of(text(item.get("resource_url")))
        # Pushed by digest: Harbor then reports the digest as the "tag".
        found.append(Pushed(host, repository, None if tag is None or is_digest(tag) else tag))
    return pushed(found, otherwise=f"a push to {repository} by digest moves no tag")


@reads_json
def read_harbor(document: Any) -> Reading:
    """A Default-format delivery: a ``PUSH_ARTIFACT`` event's tags, other types ignored."""
    event = mapping(document)
    kind = text(event.get("type"))
    if kind is None:
        return unreadable("not a Harbor event (no type)")
    if kind.startswith("harbor."):
        return unreadable(
            f"a {kind} CloudEvent: this webhook's payload format is CloudEvents; choose Default,"
            " or point it at /webhook/cloudevents"
        )
    if kind != "PUSH_ARTIFACT":
        return ignored(f"a {kind} event moves no tag")
    return event_data_pushes(mapping(event.get("event_data")))


__all__ = ["MAX_RESOURCES", "event_data_pushes", "read_harbor"]
