"""The Event adapter (``EventPort``): records a core/v1 Event on a Deployment for each roll.

Only with EMIT_EVENTS=true; RBAC ``events: create`` in the ClusterRole's core API group.
The reason and the text people read are built with the roll (``autoroll.core.records.RollEvent``);
``autoroll.kube.lease_event_bodies.event_json`` turns them into the body, which goes through
``KubeRest`` like every other call.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from autoroll.core.records import RollEvent
from autoroll.kube.lease_event_bodies import event_json
from autoroll.kube.transport import SMALL_CALL_TIMEOUT, KubeRest, LazyRest, connect


class KubeEvents:
    """Creates core/v1 Events; implements ``autoroll.core.ports.EventPort``."""

    def __init__(
        self,
        *,
        instance: str,
        api_client_factory: Callable[[], Any] = connect,
        rest: KubeRest | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._instance = instance
        self._api = LazyRest(api_client_factory, rest)
        self._clock = clock

    def emit(self, event: RollEvent) -> None:
        body = event_json(event, now=self._clock(), instance=self._instance)
        self._api().create_event(event.namespace, body, timeout=SMALL_CALL_TIMEOUT)


__all__ = ["KubeEvents"]
