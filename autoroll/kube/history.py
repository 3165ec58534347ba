"""The autoroll Events read back, for ``autoroll history`` (pure parsing, one list call).

An Event autoroll records (``autoroll.core.happenings``) carries ``reportingComponent:
aethnet.se/autoroll`` and its facts as annotations; one from before those annotations (a
``StalePodDeleted`` of an older release, say) is shown by its reason and message. Events
live as long as the API server keeps them (``--event-ttl``, one hour by default), so the
history reaches back that far.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from autoroll.core.happenings import FROM, HAPPENING, TAG, TO, TRIGGER, Recorded
from autoroll.kube.api_time import parse_time
from autoroll.kube.operations import LIST_EVENTS
from autoroll.kube.transport import REQUEST_TIMEOUT, KubeRest, LazyRest, connect, segment

#: The reporting component of every Event autoroll records.
COMPONENT: Final = "aethnet.se/autoroll"


def recorded(event: Mapping[str, Any]) -> Recorded | None:
    """One Event as a history row; None when autoroll did not record it."""
    if (
        event.get("reportingComponent") != COMPONENT
        and (event.get("source") or {}).get("component") != "autoroll"
    ):
        return None
    meta = event.get("metadata") or {}
    facts = meta.get("annotations") or {}
    involved = event.get("involvedObject") or {}
    kind = str(involved.get("kind", "")).lower()
    at = (
        parse_time(event.get("lastTimestamp"))
        or parse_time(event.get("eventTime"))
        or parse_time(event.get("firstTimestamp"))
        or parse_time(meta.get("creationTimestamp"))
    )
    return Recorded(
        at=at,
        workload=f"{involved.get('namespace', '')}/{kind}/{involved.get('name', '')}",
        kind=str(facts.get(HAPPENING) or event.get("reason") or ""),
        tag=str(facts.get(TAG, "")),
        before=str(facts.get(FROM, "")),
        after=str(facts.get(TO, "")),
        trigger=str(facts.get(TRIGGER, "")),
        message=str(event.get("message", "")),
        count=int(event.get("count") or 1),
    )


def read_history(
    *, namespace: str | None = None, api_client_factory: Callable[[], Any] = connect
) -> list[Recorded]:
    """Every autoroll Event in ``namespace`` (None: every namespace), oldest first."""
    rest: KubeRest = LazyRest(api_client_factory)()
    path = f"/api/v1/namespaces/{segment(namespace)}/events" if namespace else "/api/v1/events"
    rows: list[Recorded] = []
    query: list[tuple[str, str]] = [("limit", "500")]
    while True:
        answer = rest.send(
            LIST_EVENTS,
            namespace or "(all namespaces)",
            "GET",
            path,
            query=query,
            timeout=REQUEST_TIMEOUT,
        )
        page = answer.json()
        rows.extend(r for item in page.get("items") or [] if (r := recorded(item)) is not None)
        more = (page.get("metadata") or {}).get("continue")
        if not more:
            break
        query = [("limit", "500"), ("continue", str(more))]
    return sorted(rows, key=lambda r: (r.at is None, r.at, r.workload))


__all__ = ["COMPONENT", "read_history", "recorded"]
