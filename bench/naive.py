"""The naive baseline: per enrolled Deployment, one pod list and one registry request.

This is the loop many image watchers run: for each Deployment, list the pods its selector
matches, ask the registry about its image, decide. No request is shared between two
Deployments, so fifty Deployments on ``app:latest`` cost fifty HEADs and fifty pod lists.

It makes the *same decisions* as autoroll (it reads lists as the same plain JSON, converts
them with the same functions and calls the same pure ``decide``, with the same registry
client for one lookup at a time), so the two differ only in how they talk to the API server
and the registry. It never deletes: it lives in ``bench/`` only and exists to be measured
next to ``autoroll.controller.reconciler.Reconciler.tick``.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import UTC, datetime
from functools import partial
from typing import Any

from autoroll.core.decide import Decision, Sighting, decide
from autoroll.core.images import TagRef
from autoroll.core.model import Digest, ImageContent, Unknown, WorkloadKind
from autoroll.core.selection import refs_to_resolve
from autoroll.core.sightings import observe_targets
from autoroll.kube.lists import list_items
from autoroll.kube.pods import pod_from_json
from autoroll.kube.selectors import selector_query
from autoroll.kube.transport import LIVE_PODS_FIELD_SELECTOR, REQUEST_TIMEOUT, KubeRest
from autoroll.kube.workloads import deployment_from_json
from autoroll.registry import RegistryClient


class NaiveController:
    """One pass = 1 Deployment list, then per Deployment: 1 pod list + 1 HEAD per container."""

    def __init__(
        self,
        *,
        api_client: Any,
        registry: RegistryClient,
        registries: Collection[str],
        label_selector: str,
    ) -> None:
        self._rest = KubeRest(api_client)  # the same transport as autoroll's
        self._registry = registry
        self._registries = registries
        self._label_selector = label_selector
        self._sightings: dict[TagRef, Sighting] = {}

    def tick(self) -> list[Decision]:
        now = datetime.now(UTC)
        answer = self._rest.list_workloads(
            WorkloadKind.DEPLOYMENT, label_selector=self._label_selector, timeout=REQUEST_TIMEOUT
        )
        listed = list_items(answer)
        decisions = []
        for item in listed:
            deployment, selector = deployment_from_json(item)
            page = list_items(
                self._rest.list_pods(
                    deployment.namespace,
                    field_selector=LIVE_PODS_FIELD_SELECTOR,
                    label_selector=selector_query(selector),
                    timeout=REQUEST_TIMEOUT,
                )
            )
            pods = tuple(pod_from_json(p).view for p in page)
            refs = refs_to_resolve([deployment], registries=self._registries)
            # A fresh lookup per Deployment: nothing is shared with the previous one.
            resolved: dict[TagRef, Digest | Unknown] = dict(self._registry.resolve(refs))
            self._sightings.update(observe_targets(self._sightings, resolved, now=now))
            children: dict[Digest, frozenset[Digest] | Unknown] = {}
            contents: dict[Digest, ImageContent | Unknown] = {}
            run = partial(
                decide,
                workload=deployment,
                pods=pods,
                registries=self._registries,
                resolved=resolved,
                sightings=self._sightings,
                children=children,  # filled in place below; the next run sees them
                contents=contents,
            )
            decision = run()
            if decision.needs_children:
                children.update(self._registry.fetch_children(decision.needs_children))
                decision = run()
            if decision.needs_content:
                contents.update(self._registry.fetch_content(decision.needs_content))
                decision = run()
            decisions.append(decision)
        return decisions
